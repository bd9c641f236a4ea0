"""CSV text made a column at a time: each column's cells as the text :mod:`csv` writes for
them, then every row's pieces joined in one pass (no row or cell goes through :mod:`csv`
one by one). The dense tables (engine/reports/dense.py) are written this way, byte for
byte what :mod:`csv` writes for their rows.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.textsafe import GUARDED, csv_cell

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


def text_cell(text: str) -> str:
    """``text`` as a CSV cell: guarded (:func:`~engine.core.textsafe.csv_cell`), then as
    :mod:`csv` writes it (:func:`csv_text`)."""
    return csv_text(csv_cell(text))


def cell_texts(texts: list[str]) -> list[str]:
    """:func:`text_cell` of each text. One search tells whether every text is left as it is
    by the guard (no control character or line break, no start a spreadsheet reads as a
    formula): then a text is its cell, in quotes (its own doubled) where it holds a comma
    or a quote."""
    joined = "\n".join(texts)  # (a text's own line break is one too many of them)
    if joined.count("\n") != max(len(texts) - 1, 0) or GUARDED.search(joined):
        return list(map(text_cell, texts))
    if not _QUOTED.search(joined):
        return texts
    return ['"' + t.replace('"', '""') + '"' if _QUOTED.search(t) else t for t in texts]


#: What :mod:`csv` quotes for in a text the guard leaves as it is.
_QUOTED = re.compile('[,"]')


def joined(pieces: Sequence[np.ndarray | list[str] | str], rows: int) -> str:
    """The text of ``rows`` rows, each its pieces one after another: a piece is a column
    (``rows`` texts, in an object array or a list) or one text for every row. The separators and
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
    if values.dtype.kind in "iu" and len(values) and 0 <= values.min() <= values.max() < 1024:
        return np.array(list(map(str, range(int(values.max()) + 1))), object)[values]
    keys = values.view(np.int64) if values.dtype == np.float64 else values
    _, first, at = np.unique(keys, return_index=True, return_inverse=True)
    return np.array(list(map(str, values[first].tolist())), object)[at.reshape(-1)]


class FloatTexts:
    """:func:`number_texts` of float arrays, each distinct float's text made once for all
    the calls (a run's favorability repeats round after round): the floats seen so far
    sorted by bit pattern (``keys``), each with the slot of its text among ``texts``
    (appended to, so a call moves no text), up to :data:`KEPT` texts."""

    KEPT = 1 << 20

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        import numpy as np

        self.keys = np.empty(0, np.int64)
        self.slots = np.empty(0, np.int64)
        self.texts = np.empty(1024, object)
        self.count = 0

    def __call__(self, values: np.ndarray) -> np.ndarray:
        import numpy as np

        values = np.ascontiguousarray(values)
        if values.dtype != np.float64:
            return number_texts(values)
        distinct, at = np.unique(values.view(np.int64), return_inverse=True)
        if self.count + len(distinct) > self.KEPT:
            self._reset()  # memory stays bounded
        keys, count = self.keys, self.count
        where = np.searchsorted(keys, distinct)
        known = where < len(keys)
        known[known] = keys[where[known]] == distinct[known]
        slot = np.empty(len(distinct), np.int64)
        slot[known] = self.slots[where[known]]
        new = ~known
        made = list(map(str, distinct[new].view(np.float64).tolist()))
        if made:
            self.count = count + len(made)
            slot[new] = np.arange(count, self.count)
            if self.count > len(self.texts):
                grown = np.empty(2 * self.count, object)
                grown[:count] = self.texts[:count]
                self.texts = grown
            self.texts[count : self.count] = made
            self.keys = np.insert(keys, where[new], distinct[new])
            self.slots = np.insert(self.slots, where[new], slot[new])
        return self.texts[slot][at.reshape(-1)]


def value_texts(values: Sequence[object]) -> list[str]:
    """Number cells as :mod:`csv` writes them: ``str`` of each (a float's is its ``repr``),
    ``""`` for None (never text, which :func:`csv_text` quotes)."""
    texts = list(map(str, values))
    if None in values:
        return ["" if v is None else text for v, text in zip(values, texts, strict=True)]
    return texts
