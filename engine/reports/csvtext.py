"""CSV text made a column at a time: each column's cells as the text :mod:`csv` writes for
them, then every row's pieces joined in one pass (no row or cell goes through :mod:`csv`
one by one). The dense tables (engine/reports/dense.py) are written this way, byte for
byte what :mod:`csv` writes for their rows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def csv_text(value: str) -> str:
    """``value`` as :mod:`csv` writes it in a cell (quoted where it must be)."""
    if not _SPECIAL.intersection(value):  # nothing csv quotes for: the text as it is
        return value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    text = out.getvalue()
    return "" if text == '""' else text  # a lone empty cell is quoted; not among others


#: The characters a cell may hold that make :mod:`csv` quote it (some versions of Python
#: quote a line break in a cell whatever the line terminator).
_SPECIAL = frozenset(',"\r\n')


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


def number_texts(values: np.ndarray) -> np.ndarray:
    """``values`` as :mod:`csv` writes them (``repr`` of a float, ``str`` of an int), in
    an object array; each distinct value's text made once (by bit pattern: -0.0 is
    written as such, not as 0.0)."""
    import numpy as np

    values = np.ascontiguousarray(values)
    keys = values.view(np.int64) if values.dtype == np.float64 else values
    _, first, at = np.unique(keys, return_index=True, return_inverse=True)
    return np.array(list(map(str, values[first].tolist())), object)[at.reshape(-1)]


class FloatTexts:
    """:func:`number_texts` of float arrays, each distinct float's text made once for all
    the calls (a run's favorability repeats round after round): the texts made so far are
    kept by bit pattern, sorted, up to :data:`KEPT` of them."""

    KEPT = 1 << 20

    def __init__(self) -> None:
        import numpy as np

        self.keys = np.empty(0, np.int64)
        self.texts = np.empty(0, object)

    def __call__(self, values: np.ndarray) -> np.ndarray:
        import numpy as np

        values = np.ascontiguousarray(values)
        if values.dtype != np.float64:
            return number_texts(values)
        distinct, at = np.unique(values.view(np.int64), return_inverse=True)
        keys, kept = self.keys, self.texts
        where = np.searchsorted(keys, distinct)
        known = where < len(keys)
        known[known] = keys[where[known]] == distinct[known]
        texts = np.empty(len(distinct), object)
        texts[known] = kept[where[known]]
        new = ~known
        made = list(map(str, distinct[new].view(np.float64).tolist()))
        texts[new] = made
        if len(keys) + len(made) > self.KEPT:
            self.keys, self.texts = distinct, texts
        elif made:
            self.keys = np.insert(keys, where[new], distinct[new])
            self.texts = np.insert(kept, where[new], np.array(made, object))
        return texts[at.reshape(-1)]


def value_texts(values: Sequence[object]) -> list[str]:
    """Number cells as :mod:`csv` writes them: ``str`` of each (a float's is its ``repr``),
    ``""`` for None (never text, which :func:`csv_text` quotes)."""
    texts = list(map(str, values))
    if None in values:
        return ["" if v is None else text for v, text in zip(values, texts, strict=True)]
    return texts
