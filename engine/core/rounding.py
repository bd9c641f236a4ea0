"""``round(x, digits)`` on arrays, bit for bit: the rules round every judged delta and every
movement, thousands a round, while ``round`` with digits converts each value through a
decimal string (about 1 us a call)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Below this size every half-integer is a float, and so is every scaled value's distance
#: to its nearest whole number.
_EXACT = 2.0**52


def rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """``round(x, digits)`` of every value, bit for bit: scaled (``s = x * 10**digits``,
    rounded to the nearest float), rounded half to even and scaled back, which is what
    ``round`` gives unless ``s`` lands on a tie (a half-integer); those few, and values
    not finite or 2**52 or more scaled, are rounded by ``round``.

    Why only the ties: ``round`` rounds the exact ``x * 10**digits`` to a whole number m
    (half to even) and returns the float nearest m / 10**digits, which is what dividing m
    by 10**digits gives. Rounding to the nearest float never crosses a float, and every
    tie under 2**52 is one: an exact product off a tie leaves ``s`` on the same side of
    it, or on it. So unless ``s`` is a tie, ``s`` and the exact product have the same
    nearest whole number."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    shape, values = values.shape, values.ravel()
    scale = 10.0**digits
    scaled = values * scale
    out = np.rint(scaled)
    top = max(float(scaled.max()), -float(scaled.min())) if len(scaled) else 0.0
    with np.errstate(invalid="ignore"):  # (inf - inf)
        doubt = None if top < _EXACT else ~(np.abs(scaled) < _EXACT)
        dist = np.subtract(scaled, out, out=scaled)  # exact under 2**52
        np.abs(dist, out=dist)
        ties = ~(dist < 0.5)  # the half-integers (and NaN: values not finite)
    doubt = ties if doubt is None else doubt | ties
    out /= scale
    at = np.flatnonzero(doubt)
    if len(at):
        out[at] = [round(v, digits) for v in values[at].tolist()]
    return out.reshape(shape)
