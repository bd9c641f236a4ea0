"""Save format 9's keyframe tables as columns: the notes and every agent's needs; format
10's need changes of a round as columns.

Format 6 to 8 stored a keyframe's table of notes as one JSON object an entry
(``{"round", "summary", "importance"}``) and each agent's needs as an object of objects
(``{"need": {"current", "expected"}}``). At 100 agents those were three quarters of a
keyframe's head, and making, serializing and validating them most of its cost. Now the
notes are a list of summaries beside two integer columns, and the needs one list of kinds
beside two float columns, agent after agent (packed columns, engine/saves/packed.py: blobs
in a binary round file). Both still read the older form. engine/saves/roundcheck.py checks
them before they are used.

Up to format 9 a round file held the needs a round moved as two objects of objects (each
agent's movements, each moved need's new value): at 100 agents half of a round's head, and
a tenth of what saving adds to a round. Since format 10 they are :class:`MovedNeeds`.
"""

from __future__ import annotations

from itertools import accumulate, chain, repeat
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ..core.needs import NEED_AT, NEEDS, Need
from .packed import Decimals4, Ints

if TYPE_CHECKING:
    import numpy as np

    from ..core.changes import MovedColumns
    from ..core.notes import Notes


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class NoteColumns(_Model):
    """A table of notes: note k says ``summary[k]``, of round ``round[k]`` and importance
    ``importance[k]``."""

    summary: list[str]
    round: Ints
    importance: Ints

    @classmethod
    def of(cls, notes: Notes, codes: np.ndarray) -> NoteColumns:
        """The notes of ``notes`` at ``codes``, in that order."""
        return cls(
            summary=notes.summaries[codes].tolist(),
            round=notes.rounds[codes],
            importance=notes.importance[codes],
        )

    def problem(self) -> str | None:
        """What is wrong with the table (None: nothing)."""
        if not len(self.summary) == len(self.round) == len(self.importance):
            return "notes whose columns differ in length"
        if len(self.importance) and not 1 <= self.importance.min() <= self.importance.max() <= 10:
            return "a note whose importance is outside 1..10"
        return None

    def __len__(self) -> int:
        return len(self.summary)


class NeedColumns(_Model):
    """Every agent's needs: agent i's need ``kinds[k]`` is ``current[i * K + k]`` of an
    expected ``expected[i * K + k]`` (K kinds, the agents in the state's order)."""

    kinds: list[str]
    current: Decimals4
    expected: Decimals4

    @classmethod
    def of(cls, needs: list[dict[str, Need]]) -> NeedColumns | None:
        """The columns of the agents' ``needs``; None unless every agent has the same
        kinds in the same order (the form before format 9 holds any)."""
        import numpy as np

        kinds = list(needs[0]) if needs else []
        if any(len(n) != len(kinds) or list(n) != kinds for n in needs):
            return None
        size = len(kinds) * len(needs)
        values = chain.from_iterable(chain.from_iterable(n.values() for n in needs))
        both = np.fromiter(values, np.float64, count=2 * size).reshape(size, 2)
        return cls(kinds=kinds, current=both[:, 0].copy(), expected=both[:, 1].copy())

    def problem(self) -> str | None:
        """What is wrong with the columns (None: nothing)."""
        size, kinds = len(self.current), self.kinds
        if len(set(kinds)) != len(kinds):
            return "needs whose kinds repeat"
        if len(self.expected) != size or (size % len(kinds) if kinds else size):
            return "needs whose columns do not fit their kinds"
        for column in (self.current, self.expected):
            if not ((column >= 0.0) & (column <= 10.0)).all():  # (NaN fails too)
                return "a need's value outside 0..10"
        return None

    def __len__(self) -> int:
        """How many agents' needs the columns hold."""
        return len(self.current) // len(self.kinds) if self.kinds else 0

    def needs(self) -> list[dict[str, Need]]:
        """Each agent's needs as the engine holds them."""
        kinds, k = self.kinds, len(self.kinds)
        pairs = zip(self.current.tolist(), self.expected.tolist(), strict=True)
        made = list(map(tuple.__new__, repeat(Need), pairs))
        return [dict(zip(kinds, made[i : i + k], strict=True)) for i in range(0, len(made), k)]


class MovedNeeds(_Model):
    """The needs a round moved: agent ``agents[i]`` moved ``count[i]`` needs, the next ones
    of ``kind`` (indices into ``kinds``), each by ``delta`` to the new value ``current``.
    Every agent of the round has a row (a count of 0: none moved)."""

    agents: list[str]
    kinds: list[str]
    count: Ints
    kind: Ints
    delta: Decimals4
    current: Decimals4
    _tables: tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]] | None = None

    @classmethod
    def of(
        cls,
        deltas: dict[str, dict[str, float]],
        needs: dict[str, dict[str, float]],
        columns: MovedColumns | None = None,
    ) -> MovedNeeds | None:
        """The columns of a round's need ``deltas`` and new values (``needs``); None unless
        ``needs`` holds a new value of each need moved and of no other (as the engine's
        changes always do: the form before format 10 holds any). ``columns``: the same
        as the update step made them, taken as they are when they are of the deltas'
        agents, in their order (else the dicts are read)."""
        import numpy as np

        if columns is not None and columns.agents == list(deltas):
            return cls(
                agents=columns.agents,
                kinds=list(NEEDS),
                count=columns.counts,
                kind=columns.kind,
                delta=columns.delta,
                current=columns.current,
            )
        movers = [name for name, changed in deltas.items() if changed]
        try:  # the new values in the deltas' order (every mover's, and no more: counted)
            current = [needs[name][need] for name in movers for need in deltas[name]]
        except KeyError:
            return None
        if len(needs) != len(movers) or sum(map(len, needs.values())) != len(current):
            return None
        try:
            kinds = np.fromiter(map(NEED_AT.__getitem__, chain(*deltas.values())), np.int64)
        except KeyError:  # a need that is not one of the rules'
            return None
        return cls(
            agents=list(deltas),
            kinds=list(NEEDS),
            count=np.fromiter(map(len, deltas.values()), np.int64, len(deltas)),
            kind=kinds,
            delta=np.fromiter(chain(*map(dict.values, deltas.values())), np.float64),
            current=np.array(current, np.float64),
        )

    def problem(self) -> str | None:
        """What is wrong with the columns (None: nothing)."""
        import numpy as np

        size = len(self.kind)
        if len(set(self.kinds)) != len(self.kinds) or len(set(self.agents)) != len(self.agents):
            return "need changes whose agents or kinds repeat"
        if len(self.count) != len(self.agents) or (len(self.count) and self.count.min() < 0):
            return "need changes whose counts do not fit their agents"
        if int(self.count.sum()) != size or len(self.delta) != size or len(self.current) != size:
            return "need changes whose columns differ in length"
        if size and not 0 <= self.kind.min() <= self.kind.max() < len(self.kinds):
            return "a need change whose kind is not among its kinds"
        if not ((self.current >= 0.0) & (self.current <= 10.0)).all():  # (NaN fails too)
            return "a moved need's value outside 0..10"
        if not np.isfinite(self.delta).all():
            return "a need change is not a number"
        return None

    def tables(self) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        """The need deltas and new values, as the round's changes hold them (each moved
        need in both, in the same order; made once)."""
        if self._tables is None:
            kinds = list(map(self.kinds.__getitem__, self.kind.tolist()))
            deltas, current = self.delta.tolist(), self.current.tolist()
            counts = self.count.tolist()
            ends = list(accumulate(counts))
            rows = [
                (name, end - count, end)
                for name, count, end in zip(self.agents, counts, ends, strict=True)
            ]
            moved = {name: dict(zip(kinds[a:b], deltas[a:b], strict=True)) for name, a, b in rows}
            now = {
                name: dict(zip(kinds[a:b], current[a:b], strict=True))
                for name, a, b in rows
                if b > a
            }
            self._tables = moved, now
        return self._tables
