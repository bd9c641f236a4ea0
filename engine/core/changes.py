"""What one round changed, as one value: the changed edges in columns, the memories added
and evicted, the moved needs, the emotions and new theta values.

The update step makes a :class:`RoundChanges` (:func:`engine.round.updates.round_changes`),
the round file stores it (:mod:`engine.saves.roundfile`), and
:meth:`~engine.core.columns.StateColumns.apply` is the one place it is applied: to play on,
to resume, to rebuild any round of a save, for the values tables show and for the
metrics. Its pydantic forms (:meth:`relation_changes`, the round file's columns) are built
only where they leave the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import TypeAdapter

from .scenario import Status
from .state import EmotionChange, MemoryEntry, RelationChange

if TYPE_CHECKING:
    import numpy as np
#: Status codes: ``STATUSES[code]``.
STATUSES: tuple[Status, ...] = tuple(Status)
CODE = {status: k for k, status in enumerate(STATUSES)}
#: The override code of an edge the judge left to the thresholds.
NO_OVERRIDE = -1
#: The round of an empty memory slot (and of no eviction).
NO_ROUND = -1


class MovedColumns(NamedTuple):
    """A round's moved needs as the round file's columns: each agent's (``agents``, the
    need dicts' order) number of moved needs (``counts``), their kinds (positions in
    ``NEEDS``), movements and new values."""

    agents: list[str]
    counts: np.ndarray
    kind: np.ndarray
    delta: np.ndarray
    current: np.ndarray


@dataclass(eq=False, slots=True)
class RoundChanges:
    """Round ``round``'s changes; edge ``k`` is ``names[source[k]] -> names[target[k]]``."""

    round: int
    names: list[str]
    source: np.ndarray
    target: np.ndarray
    #: The real movement of each edge's favorability (rounded to 6 places), and its new value.
    delta: np.ndarray
    fav: np.ndarray
    #: Status codes (:data:`STATUSES`) after and before the round, and the judge's override
    #: (:data:`NO_OVERRIDE`: none).
    status: np.ndarray
    previous: np.ndarray
    override: np.ndarray
    #: The memory entry each edge added (its round is the round's): its summary is
    #: ``notes[note[k]]``.
    notes: list[str]
    note: np.ndarray
    importance: np.ndarray
    #: ``[k, m]``: the rounds of the entries edge k evicted (the round's own if the new one
    #: went), :data:`NO_ROUND` after them; one column unless an older save's memory held
    #: more than its capacity.
    evicted: np.ndarray
    emotions: list[EmotionChange] = field(default_factory=list)
    #: Each agent's need deltas (the movement after clipping) and moved needs' new values.
    need_deltas: dict[str, dict[str, float]] = field(default_factory=dict)
    needs: dict[str, dict[str, float]] = field(default_factory=dict)
    theta: dict[str, float | None] = field(default_factory=dict)
    #: ``need_deltas`` and ``needs`` as columns, where the update step moved them at once.
    moved_columns: MovedColumns | None = None
    _remembered: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    _relation_changes: list[RelationChange] | None = None

    @classmethod
    def none(cls, round_no: int, names: list[str]) -> RoundChanges:
        """A round that changed nothing (an ablation round)."""
        import numpy as np

        return cls(
            round=round_no,
            names=names,
            source=np.zeros(0, np.intp),
            target=np.zeros(0, np.intp),
            delta=np.zeros(0),
            fav=np.zeros(0),
            status=np.zeros(0, np.int8),
            previous=np.zeros(0, np.int8),
            override=np.zeros(0, np.int8),
            notes=[],
            note=np.zeros(0, np.intp),
            importance=np.zeros(0, np.int64),
            evicted=evicted_array([]),
        )

    def __len__(self) -> int:
        return len(self.source)

    def summaries(self) -> list[str]:
        """Each edge's new memory summary."""
        notes = self.notes
        return [notes[c] for c in self.note.tolist()]

    def overrides(self) -> list[Status | None]:
        """Each edge's status override."""
        return overrides(self.override)

    def evictions(self) -> list[list[int]]:
        """Each edge's evicted rounds, as lists."""
        return [[r for r in row if r != NO_ROUND] for row in self.evicted.tolist()]

    def remembered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The round's new memory entries: the distinct ones (one for all the edges that
        remember the same note with the same importance) as their summaries (an object
        array) and importance, and each edge's index among them."""
        import numpy as np

        if self._remembered is None:
            notes = self.notes
            # one key per note and importance (1..10): the note's code, then 4 bits; the
            # distinct keys in order, marked in a table of every key (no sort)
            keys = self.note.astype(np.int64) * 16 + self.importance
            seen = np.zeros(len(notes) * 16, bool)
            seen[keys] = True
            distinct = np.flatnonzero(seen)
            codes = (np.cumsum(seen) - 1)[keys]
            said = entry_array(notes).take(distinct >> 4)
            self._remembered = (said, distinct & 15, codes.reshape(len(keys)))
        return self._remembered

    def relation_changes(self) -> list[RelationChange]:
        """The changed edges as validated :class:`RelationChange` models (built once)."""
        if self._relation_changes is None:
            self._relation_changes = self._relation_models()
        return self._relation_changes

    def moved(self, at_least: float) -> np.ndarray:
        """Which changed edges moved: their favorability by ``at_least`` or more, or their
        status (a bool an edge, in the order of :attr:`source`)."""
        return (abs(self.delta) >= at_least) | (self.status != self.previous)

    def flips(self, limit: int) -> list[RelationChange]:
        """The first ``limit`` changed edges whose status changed, as models (in the order
        of :meth:`relation_changes`; no model for the other edges)."""
        import numpy as np

        if self._relation_changes is not None:
            return [c for c in self._relation_changes if c.status != c.previous_status][:limit]
        return self._relation_models(np.flatnonzero(self.status != self.previous)[:limit])

    def _relation_models(self, edges: np.ndarray | None = None) -> list[RelationChange]:
        """The changed edges as models (only those at indices ``edges``, if given)."""
        names, notes = self.names, self.notes
        at = slice(None) if edges is None else edges
        rows = zip(
            self.source[at].tolist(),
            self.target[at].tolist(),
            self.delta[at].tolist(),
            self.fav[at].tolist(),
            self.status[at].tolist(),
            self.previous[at].tolist(),
            overrides(self.override[at]),
            [notes[c] for c in self.note[at].tolist()],
            self.importance[at].tolist(),
            strict=True,
        )
        data = [
            {
                "source": names[i],
                "target": names[j],
                "delta": delta,
                "fav": fav,
                "status": STATUSES[status],
                "previous_status": STATUSES[previous],
                "override": override,
                "summary": summary,
                "importance": importance,
            }
            for i, j, delta, fav, status, previous, override, summary, importance in rows
        ]
        return validated(list[RelationChange], data)


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def validated(kind: Any, data: object) -> Any:
    """``data`` validated as ``kind`` in one call (a list of thousands of models validates
    faster at once than model by model)."""
    return _adapter(kind).validate_python(data)


def memory_entries(
    rounds: Sequence[int], summaries: Sequence[str], importance: Sequence[int]
) -> list[MemoryEntry]:
    """The notes of ``rounds``, ``summaries`` and ``importance`` as validated
    :class:`MemoryEntry` models (validated in one call)."""
    rows = zip(rounds, summaries, importance, strict=True)
    data = [{"round": r, "summary": s, "importance": i} for r, s, i in rows]
    made: list[MemoryEntry] = validated(list[MemoryEntry], data)
    return made


def entry_array(items: Sequence[object]) -> np.ndarray:
    """``items`` as a one-dimensional object array (filled without numpy looking into each
    item for an array interface, which costs a pydantic model microseconds)."""
    import numpy as np

    return np.fromiter(items, dtype=object, count=len(items))


def status_codes(statuses: list[Status]) -> np.ndarray:
    """The codes of ``statuses``."""
    import numpy as np

    return np.array([CODE[s] for s in statuses], np.int8)


def override_codes(overrides: Sequence[Status | None]) -> np.ndarray:
    """The codes of ``overrides`` (:data:`NO_OVERRIDE` for None)."""
    import numpy as np

    return np.array([NO_OVERRIDE if o is None else CODE[o] for o in overrides], np.int8).reshape(
        len(overrides)
    )


def overrides(codes: np.ndarray) -> list[Status | None]:
    """The overrides of ``codes``."""
    return [None if c == NO_OVERRIDE else STATUSES[c] for c in codes.tolist()]


def evicted_array(evicted: Sequence[Sequence[int]]) -> np.ndarray:
    """``evicted``'s lists of rounds as rows, :data:`NO_ROUND` after them (one column at
    least)."""
    import numpy as np

    lengths = list(map(len, evicted))
    width = max(lengths, default=1) or 1
    rows = np.full((len(evicted), width), NO_ROUND, np.int64)
    if width == 1:  # an edge evicts one entry at most, but one of an older save's may evict more
        some = [k for k, length in enumerate(lengths) if length]
        rows[some, 0] = [evicted[k][0] for k in some]
        return rows
    for k, rounds in enumerate(evicted):
        rows[k, : len(rounds)] = rounds
    return rows


def note_table(summaries: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct ``summaries`` and each one's code among them."""
    import numpy as np

    table: dict[str, int] = {}
    codes = [table.setdefault(s, len(table)) for s in summaries]
    return list(table), np.array(codes, np.intp).reshape(len(codes))
