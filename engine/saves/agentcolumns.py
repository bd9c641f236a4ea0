"""Save format 9's keyframe tables as columns: the notes and every agent's needs.

Format 6 to 8 stored a keyframe's table of notes as one JSON object an entry
(``{"round", "summary", "importance"}``) and each agent's needs as an object of objects
(``{"need": {"current", "expected"}}``). At 100 agents those were three quarters of a
keyframe's head, and making, serializing and validating them most of its cost. Now the
notes are a list of summaries beside two integer columns, and the needs one list of kinds
beside two float columns, agent after agent (packed columns, engine/saves/packed.py: blobs
in a binary round file). Both still read the older form. engine/saves/roundcheck.py checks
them before they are used.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ..core.changes import validated
from ..core.needs import Need
from ..core.state import MemoryEntry
from .packed import Decimals4, Ints

if TYPE_CHECKING:
    import numpy as np

    from ..core.columns import Notes


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
            summary=[e.summary for e in notes.entries[codes].tolist()],
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

    def entries(self) -> list[MemoryEntry]:
        """The notes as validated entries."""
        rows = zip(self.summary, self.round.tolist(), self.importance.tolist(), strict=True)
        data = [{"round": r, "summary": s, "importance": i} for s, r, i in rows]
        made: list[MemoryEntry] = validated(list[MemoryEntry], data)
        return made


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
