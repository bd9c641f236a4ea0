"""The dense tables of a round: the relations table, one row per edge, every edge every round
(the tidy table an analyst joins on), made from the state's columns and the round's changes
as arrays; the emotions and needs tables, a row per agent and per agent's need.

A round of N agents has N(N-1) relation rows; at 100 agents and 100 rounds that is a
million rows, so the CSV text is built a column at a time (engine/reports/csvtext.py)
instead of a row at a time through :mod:`csv`; it is the text :mod:`csv` writes for the
same rows, byte for byte (each distinct text cell is quoted by :mod:`csv` itself). No model
is built per edge: a changed edge's cells come from the round's
:class:`~engine.core.changes.RoundChanges`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..core.changes import STATUSES, RoundChanges
from ..core.columns import StateColumns
from ..core.needs import CATEGORY_OF
from ..core.state import RoundLog
from .csvtext import cell_texts, csv_text, joined, number_texts, value_texts

if TYPE_CHECKING:
    import numpy as np


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
    floats: Callable[[np.ndarray], np.ndarray] = number_texts,
) -> str:
    """The CSV lines of :func:`relation_rows` (``cell``: a text cell as CSV writes it;
    ``floats``: the texts of the favorabilities and deltas, a
    :class:`~.csvtext.FloatTexts` kept over a run)."""
    import numpy as np

    keep, at, changed, k = _rows(v, c, changed_only and round_no > 0)
    statuses = [s.value for s in STATUSES]
    # an unchanged edge's delta, override, importance and summary, then a changed one's
    tail = np.empty((len(at), 4), object)
    tail[:] = ("0.0", ",,", "", ",")
    tail[changed, 0] = floats(c.delta[k])
    tail[changed, 1] = np.array([f",{s}," for s in statuses] + [",,"], object)[c.override[k]]
    tail[changed, 2] = number_texts(c.importance[k])
    notes = cell_texts(c.notes)
    tail[changed, 3] = np.array([f",{s}" for s in notes], object)[c.note[k]]
    pieces = (
        f"{cell(run_id)},{round_no},",
        _pairs(tuple(v.names), cell)[keep],
        floats(v.fav.ravel()[keep]),
        np.array([f",{s}," for s in statuses], object)[v.status.ravel()[keep]],
        *tail.T,
        "\n",
    )
    return joined(pieces, len(at))


def relation_columns(
    run_id: str, round_no: int, v: StateColumns, c: RoundChanges, changed_only: bool = False
) -> list[np.ndarray]:
    """The columns of :func:`relation_rows` with their cells as they are (as Parquet gets
    them): numbers as arrays, text and a missing importance (None) in object arrays."""
    import numpy as np

    n = len(v.names)
    keep, at, changed, k = _rows(v, c, changed_only and round_no > 0)
    rows, cells = len(at), np.flatnonzero(keep)
    names = np.array(v.names, object)
    statuses = [s.value for s in STATUSES]
    delta = np.zeros(rows)
    delta[changed] = c.delta[k]
    override, importance, summary = (np.full(rows, empty, object) for empty in ("", None, ""))
    override[changed] = np.array([*statuses, ""], object)[c.override[k]]
    importance[changed] = c.importance[k].tolist()
    summary[changed] = np.array(c.notes, object)[c.note[k]]
    return [
        np.full(rows, run_id, object),
        np.full(rows, round_no, np.int64),
        names[cells // n],
        names[cells % n],
        v.fav.ravel()[keep],
        np.array(statuses, object)[v.status.ravel()[keep]],
        delta,
        override,
        importance,
        summary,
    ]


def emotion_lines(run_id: str, r: RoundLog, v: StateColumns, cell: Callable[[str], str]) -> str:
    """The CSV lines of the emotions table's rows of round ``r`` (state ``v`` after it)."""
    deltas = {c.agent: c.delta for c in r.emotion_changes}
    pieces = (
        f"{cell(run_id)},{r.round},",
        _cells(tuple(v.names), cell),
        value_texts(v.emotion),
        ",",
        value_texts([deltas.get(name, 0.0) for name in v.names]),
        "\n",
    )
    return joined(pieces, len(v.names))


def need_lines(run_id: str, round_no: int, v: StateColumns, cell: Callable[[str], str]) -> str:
    """The CSV lines of the needs table's rows of round ``round_no`` (state ``v``): each
    agent's needs, current, expected and gap (max(expected - current, 0))."""
    heads = _need_heads(tuple(v.names), tuple(tuple(needs) for needs in v.needs), cell)
    values = [value for needs in v.needs for value in needs.values()]
    pieces = (
        f"{cell(run_id)},{round_no},",
        heads,
        value_texts([current for current, _ in values]),
        ",",
        value_texts([expected for _, expected in values]),
        ",",
        value_texts([max(0.0, expected - current) for current, expected in values]),
        "\n",
    )
    return joined(pieces, len(values))


@functools.lru_cache(maxsize=4)
def _cells(names: tuple[str, ...], cell: Callable[[str], str]) -> np.ndarray:
    """``name,`` of each agent, as CSV writes it."""
    import numpy as np

    return np.array([f"{cell(name)}," for name in names], object)


@functools.lru_cache(maxsize=4)
def _need_heads(
    names: tuple[str, ...], needs: tuple[tuple[str, ...], ...], cell: Callable[[str], str]
) -> np.ndarray:
    """``agent,category,need,`` of each agent's needs (``needs[i]``: agent i's), as CSV
    writes them: the same every round of a run."""
    import numpy as np

    return np.array(
        [
            f"{cell(name)},{csv_text(CATEGORY_OF.get(need, ''))},{csv_text(need)},"
            for name, held in zip(names, needs, strict=True)
            for need in held
        ],
        object,
    )


@functools.lru_cache(maxsize=4)
def _pairs(names: tuple[str, ...], cell: Callable[[str], str]) -> np.ndarray:
    """``source,target,`` of each cell of the N×N grid (row-major), as CSV writes them: the
    same every round of a run."""
    import numpy as np

    texts = np.array([cell(name) for name in names], object)
    return np.add.outer(texts + ",", texts + ",").ravel()


def _rows(
    v: StateColumns, c: RoundChanges, changed_only: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The table's rows of the state's N×N grid (row-major): which cells are rows (every
    edge, or those changed if ``changed_only``), each row's index among the changes (-1:
    unchanged), which rows changed, and their indices among the changes."""
    import numpy as np

    at = _changed_at(v, c)
    keep = at >= 0 if changed_only else ~np.eye(len(v.names), dtype=bool).ravel()
    at = at[keep]
    changed = at >= 0
    return keep, at, changed, at[changed]


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
