"""``math.fsum`` of an array, bit for bit, without a Python float per value.

Each value is cut into 30-bit pieces on one grid (scaled so the largest value's leading
bit is the grid's 30th: scaling by a power of two, cutting off the whole part toward zero
and keeping the rest are all exact). A level's pieces are whole numbers under 2**30, so
numpy sums up to 2**22 of them exactly; the levels join as one integer, and one rounding
of it scaled back gives the correctly rounded sum, which is what ``fsum`` returns.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Bits a piece.
PIECE = 30
#: Values summed on the grid at most (a level's sum stays below 2**53).
MOST = 1 << (52 - PIECE)


def exact_sum(values: np.ndarray) -> float:
    """The correctly rounded sum of ``values`` (what ``math.fsum`` gives)."""
    import numpy as np

    x = np.asarray(values, dtype=float).ravel()
    if not len(x):
        return 0.0
    biggest = max(float(x.max()), -float(x.min()))  # (NaN when any is)
    if not math.isfinite(biggest) or len(x) > MOST:
        return math.fsum(x.tolist())
    if biggest == 0.0:
        return 0.0
    top = math.frexp(biggest)[1]  # biggest < 2**top
    if top > PIECE:  # scaling down could lose bits
        return math.fsum(x.tolist())
    scale = PIECE - top  # (a float power of two up to 2**1023: exact, as nothing underflows)
    y = x * 2.0**scale if scale < 1024 else np.ldexp(x, scale)
    whole = np.empty_like(y)  # (each level in place: no fresh array a level)
    total, levels = 0, 0
    while True:
        np.trunc(y, out=whole)
        total = (total << PIECE) + int(np.sum(whole))
        levels += 1
        y -= whole
        if not y.any():
            break
        y *= 2.0**PIECE  # (exact: the rest is under 1)
    return _divided(total, PIECE * levels - top)


def _divided(total: int, shift: int) -> float:
    """``total / 2**shift`` correctly rounded: ``total`` rounded to a float (as Python rounds
    an int, half to even) and scaled exactly, unless the float is too large or the result
    subnormal (then rounded once, as a fraction)."""
    if total.bit_length() <= 1000:
        value = math.ldexp(float(total), -shift)
        if abs(value) >= sys.float_info.min or not total:
            return value
    return float(Fraction(total, 1 << shift))
