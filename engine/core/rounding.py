"""``round(x, digits)`` on arrays, bit for bit: the rules round every judged delta and every
movement, thousands a round, while ``round`` with digits converts each value through a
decimal string (about 1 us a call)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """``round(x, digits)`` of every value, bit for bit: scaled, rounded half to even and
    scaled back, which is what ``round`` gives unless the scaled value lies within its
    rounding error of a tie; those few (and non-finite values) are rounded by ``round``."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    shape, values = values.shape, values.ravel()
    scale = 10.0**digits
    scaled = values * scale
    out = np.rint(scaled)
    out /= scale
    # (in place where it can be: a round of a thousand agents rounds ~10^6 values)
    off = np.floor(scaled)
    np.subtract(scaled, off, out=off)
    off -= 0.5
    np.abs(off, out=off)  # how far from a tie
    size = np.abs(scaled)
    with np.errstate(invalid="ignore"):
        doubt = ~(size < 2.0**52)
        size *= 2.0**-50
        doubt |= off <= size
    for k in np.flatnonzero(doubt).tolist():
        out[k] = round(float(values[k]), digits)
    return out.reshape(shape)
