"""``round(x, digits)`` for the rules' values: remembered for a value at a time (the same few
thousand values come back edge after edge, while ``round`` with digits converts through a
decimal string, about 1 us a call), and on arrays (:func:`rounded`), bit for bit the same."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Values remembered before a table starts over.
LIMIT = 1 << 16


class Rounded(dict[float, float]):
    """``table[x] == round(x, digits)``, bit for bit (zeros are never stored: 0.0 and -0.0
    are one key, but round keeps the sign; a zero rounds to itself, so a caller with many
    passes them by: ``table[x] if x else x``)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        super().__init__()
        self.digits = digits

    def __missing__(self, x: float) -> float:
        value = round(x, self.digits)
        if x:
            if len(self) >= LIMIT:
                self.clear()
            self[x] = value
        return value


#: Shared tables: the values are a pure function of the key.
ROUNDED_4 = Rounded(4)
ROUNDED_6 = Rounded(6)


def rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """``round(x, digits)`` of every value, bit for bit: scaled, rounded half to even and
    scaled back, which is what ``round`` gives unless the scaled value lies within its
    rounding error of a tie; those few (and non-finite values) are rounded by ``round``."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    shape, values = values.shape, values.ravel()
    scale = 10.0**digits
    scaled = values * scale
    out = np.rint(scaled) / scale
    with np.errstate(invalid="ignore"):
        tie = np.abs(scaled - np.floor(scaled) - 0.5) <= np.abs(scaled) * 2.0**-50
        doubt = tie | ~(np.abs(scaled) < 2.0**52)
    for k in np.flatnonzero(doubt).tolist():
        out[k] = round(float(values[k]), digits)
    return out.reshape(shape)
