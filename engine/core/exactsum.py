"""``math.fsum`` of an array, bit for bit, without a Python float per value.

Each value is cut into 30-bit pieces on one grid (scaled so the largest value's leading
bit is the grid's 30th: scaling by a power of two, cutting off the whole part toward zero
and keeping the rest are all exact). A level's pieces are whole numbers under 2**30, so
numpy sums up to 2**22 of them exactly; the levels join as one integer, and one division
gives the correctly rounded sum, which is what ``fsum`` returns.
"""

from __future__ import annotations

import math
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
    y = np.ldexp(x, PIECE - top)
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
    return float(Fraction(total, 1 << (PIECE * levels - top)))
