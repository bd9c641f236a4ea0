"""CSV text made a column at a time: each column's cells as the text :mod:`csv` writes for
them, then every row's pieces joined in one pass (no row or cell goes through :mod:`csv`
one by one). The dense tables (engine/reports/dense.py) are written this way, byte for
byte what :mod:`csv` writes for their rows.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def csv_text(value: str) -> str:
    """``value`` as :mod:`csv` writes it in a cell (quoted where it must be)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    text = out.getvalue()
    return "" if text == '""' else text  # a lone empty cell is quoted; not among others


def joined(pieces: Sequence[np.ndarray | str], rows: int) -> str:
    """The text of ``rows`` rows, each its pieces one after another: a piece is a column
    (an object array of ``rows`` texts) or one text for every row. The separators and
    line ends are pieces too."""
    import numpy as np

    if not rows:
        return ""
    grid = np.empty((rows, len(pieces)), object)
    for k, piece in enumerate(pieces):
        grid[:, k] = piece
    return "".join(grid.ravel().tolist())


def number_texts(values: np.ndarray, places: int | None = None) -> np.ndarray:
    """``values`` as :mod:`csv` writes them (``repr`` of a float, ``str`` of an int), in
    an object array. ``places``: the floats are mostly decimals of that many places in
    -1..1 (favorability), whose texts come from a table made once; the rest, and every
    value without ``places``, get each distinct value's text made once."""
    import numpy as np

    values = np.ascontiguousarray(values)
    if places is None or values.dtype != np.float64 or not len(values):
        return _distinct_texts(values)
    scale = 10**places
    codes = np.rint(values * scale).astype(np.int64)
    np.clip(codes, -scale, scale, out=codes)
    # exact: the very float the code stands for, bit for bit (-0.0 is not 0.0)
    exact = np.divide(codes, float(scale)).view(np.int64) == values.view(np.int64)
    texts = _decimal_table(places)[codes + scale]
    if not exact.all():
        texts[~exact] = _distinct_texts(values[~exact])
    return texts


def value_texts(values: Sequence[object]) -> list[str]:
    """Number cells as :mod:`csv` writes them: ``repr`` of a float, ``""`` for None,
    ``str`` of the rest (never text, which :func:`csv_text` quotes)."""
    if all(type(v) is float for v in values):
        return list(map(float.__repr__, values))  # type: ignore[arg-type]
    return ["" if v is None else repr(v) if isinstance(v, float) else str(v) for v in values]


@functools.cache
def _decimal_table(places: int) -> np.ndarray:
    """The text of ``k / 10**places`` at ``k + 10**places``, for k in ±10**places."""
    import numpy as np

    scale = 10**places
    return np.array([str(k / scale) for k in range(-scale, scale + 1)], object)


def _distinct_texts(values: np.ndarray) -> np.ndarray:
    """``values``' texts, each distinct value's made once (by bit pattern: -0.0 is written
    as such, not as 0.0)."""
    import numpy as np

    keys = values.view(np.int64) if values.dtype == np.float64 else values
    _, first, at = np.unique(keys, return_index=True, return_inverse=True)
    return np.array(list(map(str, values[first].tolist())), object)[at.reshape(-1)]
