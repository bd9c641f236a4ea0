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
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from .scenario import Status
from .state import EmotionChange, MemoryEntry, RelationChange

if TYPE_CHECKING:
    import numpy as np
#: Status codes: ``STATUSES[code]``.
STATUSES: tuple[Status, ...] = tuple(Status)
CODE = {status: k for k, status in enumerate(STATUSES)}


@dataclass(eq=False, slots=True)
class RoundChanges:
    """Round ``round``'s changes; edge ``k`` is ``names[source[k]] -> names[target[k]]``."""

    round: int
    names: list[str]
    source: np.ndarray
    target: np.ndarray
    #: The real movement of each edge's favorability (rounded to 6 places), and its new value.
    delta: list[float]
    fav: np.ndarray
    #: Status codes (:data:`~engine.core.columns.STATUSES`) after and before the round.
    status: np.ndarray
    previous: np.ndarray
    override: list[Status | None]
    #: The memory entry each edge added (its round is the round's).
    summary: list[str]
    importance: np.ndarray
    #: The rounds of the entries each edge evicted (the round's own if the new one went).
    evicted: list[list[int]]
    emotions: list[EmotionChange] = field(default_factory=list)
    #: Each agent's need deltas (the movement after clipping) and moved needs' new values.
    need_deltas: dict[str, dict[str, float]] = field(default_factory=dict)
    needs: dict[str, dict[str, float]] = field(default_factory=dict)
    theta: dict[str, float | None] = field(default_factory=dict)
    _remembered: tuple[np.ndarray, np.ndarray] | None = None
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
            delta=[],
            fav=np.zeros(0),
            status=np.zeros(0, np.int8),
            previous=np.zeros(0, np.int8),
            override=[],
            summary=[],
            importance=np.zeros(0, np.int64),
            evicted=[],
        )

    def __len__(self) -> int:
        return len(self.source)

    def remembered(self) -> tuple[np.ndarray, np.ndarray]:
        """The round's new memory entries: the distinct ones (an object array, one
        validated entry for all the edges that remember the same summary object with the
        same importance) and each edge's index among them."""
        import numpy as np

        if self._remembered is None:
            t, count = self.round, len(self.summary)
            summaries, importance = self.summary, self.importance.tolist()
            # one key per summary object and importance (1..10): its id, then 4 bits
            keys = np.fromiter(map(id, summaries), np.int64, count=count) * 16 + self.importance
            _, first, codes = np.unique(keys, return_index=True, return_inverse=True)
            data = [
                {"round": t, "summary": summaries[f], "importance": importance[f]}
                for f in first.tolist()
            ]
            made: list[MemoryEntry] = validated(list[MemoryEntry], data)
            self._remembered = (entry_array(made), codes.reshape(count))
        return self._remembered

    def relation_changes(self) -> list[RelationChange]:
        """The changed edges as validated :class:`RelationChange` models (built once)."""
        if self._relation_changes is None:
            self._relation_changes = self._relation_models()
        return self._relation_changes

    def _relation_models(self) -> list[RelationChange]:
        names = self.names
        rows = zip(
            self.source.tolist(),
            self.target.tolist(),
            self.delta,
            self.fav.tolist(),
            self.status.tolist(),
            self.previous.tolist(),
            self.override,
            self.summary,
            self.importance.tolist(),
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


def entry_array(items: Sequence[object]) -> np.ndarray:
    """``items`` as a one-dimensional object array (filled without numpy looking into each
    item for an array interface, which costs a pydantic model microseconds)."""
    import numpy as np

    return np.fromiter(items, dtype=object, count=len(items))


def status_codes(statuses: list[Status]) -> np.ndarray:
    """The codes of ``statuses``."""
    import numpy as np

    return np.array([CODE[s] for s in statuses], np.int8)
