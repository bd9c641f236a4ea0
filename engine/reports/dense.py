"""The relations table of a round: one row per edge, every edge every round (the tidy table an
analyst joins on), made from the state's columns and the round's changes as arrays.

A round of N agents has N(N-1) rows; at 100 agents and 100 rounds that is a million rows,
so the CSV text is built a column at a time on object arrays (numpy's loops concatenate
the cells) instead of a row at a time through :mod:`csv`; it is the text :mod:`csv` writes
for the same rows, byte for byte (each distinct text cell is quoted by :mod:`csv` itself).
No model is built per edge: a changed edge's cells come from the round's
:class:`~engine.core.changes.RoundChanges`.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..core.changes import STATUSES, RoundChanges
from ..core.columns import StateColumns

if TYPE_CHECKING:
    import numpy as np

#: The cells of an edge the round did not change: delta, override, importance, summary.
UNCHANGED = ("0.0", "", "", "")


def relation_rows(
    run_id: str,
    round_no: int,
    v: StateColumns,
    c: RoundChanges,
    safe: Callable[[str], str],
    changed_only: bool = False,
) -> Iterator[tuple]:
    """The rows of round ``round_no`` (state ``v`` after changes ``c``), cells as they are;
    ``safe`` applied to the text cells; only the edges the round changed if
    ``changed_only`` (round 0, the start, whole)."""
    changed_only = changed_only and round_no > 0
    n, names = len(v.names), [safe(name) for name in v.names]
    at = _changed_at(v, c).tolist()
    fav, codes = v.fav.ravel().tolist(), v.status.ravel().tolist()
    delta, importance = c.delta.tolist(), c.importance.tolist()
    overrides, summaries = c.overrides(), c.summaries()
    for i, source in enumerate(names):
        for j, target in enumerate(names):
            if j == i:
                continue
            e = i * n + j
            k, status = at[e], STATUSES[codes[e]]
            if k < 0 and changed_only:
                continue
            if k < 0:  # status is a StrEnum: csv writes its value
                yield run_id, round_no, source, target, fav[e], status, 0.0, "", "", ""
            else:
                tail = (delta[k], overrides[k] or "", importance[k], safe(summaries[k]))
                yield run_id, round_no, source, target, fav[e], status, *tail


def relation_lines(
    run_id: str,
    round_no: int,
    v: StateColumns,
    c: RoundChanges,
    cell: Callable[[str], str],
    changed_only: bool = False,
) -> str:
    """The CSV lines of :func:`relation_rows` (``cell``: a text cell as CSV writes it)."""
    import numpy as np

    n = len(v.names)
    if n < 2:
        return ""
    statuses = [s.value for s in STATUSES]
    # A number's text is made once per distinct value (a round repeats most of them).
    fav = _texts(v.fav.ravel())
    rows = (
        _pairs(tuple(v.names), cell)
        + fav
        + np.array([f",{s}" for s in statuses], object)[v.status.ravel()]
    )
    tail = np.full(n * n, ",{},{},{},{}".format(*UNCHANGED), object)
    at = _changed_at(v, c)
    changed = at >= 0
    k = at[changed]
    overrides = np.array([f",{s}," for s in statuses] + [",,"], object)[c.override[k]]
    summaries = np.array([f",{cell(s)}" for s in c.notes], object)[c.note[k]]
    tail[changed] = "," + _texts(c.delta[k]) + overrides + _texts(c.importance[k]) + summaries
    rows += tail
    rows = rows[changed if changed_only and round_no > 0 else ~np.eye(n, dtype=bool).ravel()]
    if not len(rows):
        return ""
    start = f"{cell(run_id)},{round_no},"
    return start + f"\n{start}".join(rows.tolist()) + "\n"


@functools.lru_cache(maxsize=4)
def _pairs(names: tuple[str, ...], cell: Callable[[str], str]) -> np.ndarray:
    """``source,target,`` of each cell of the N×N grid (row-major), as CSV writes them: the
    same every round of a run."""
    import numpy as np

    texts = np.array([cell(name) for name in names], object)
    return np.add.outer(texts + ",", texts + ",").ravel()


def csv_text(value: str) -> str:
    """``value`` as :mod:`csv` writes it in a cell (quoted where it must be)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    text = out.getvalue()
    return "" if text == '""' else text  # a lone empty cell is quoted; not among others


def _texts(values: np.ndarray) -> np.ndarray:
    """``values`` as the text :mod:`csv` writes for them (``repr`` of a float, ``str`` of an
    int), in an object array; each distinct value's text made once."""
    import numpy as np

    values = np.ascontiguousarray(values)
    # by bit pattern: -0.0 is written as such, not as 0.0
    keys = values.view(np.int64) if values.dtype == np.float64 else values
    _, first, at = np.unique(keys, return_index=True, return_inverse=True)
    return np.array(list(map(str, values[first].tolist())), object)[at.reshape(-1)]


def _changed_at(v: StateColumns, c: RoundChanges) -> np.ndarray:
    """For each cell of the state's N×N grid (row-major), the index of its edge among the
    changes (-1: unchanged)."""
    import numpy as np

    n = len(v.names)
    if c.names != v.names:  # the changes' agents in another order
        index = {name: k for k, name in enumerate(v.names)}
        at = np.array([index[name] for name in c.names], np.intp).reshape(len(c.names))
        source, target = at[c.source], at[c.target]
    else:
        source, target = c.source, c.target
    cells = np.full(n * n, -1, np.intp)
    cells[source * n + target] = np.arange(len(c))
    return cells
