"""A state's table of memory entries (:class:`Notes`): the text, round and importance of
every note its edges' memory slots hold, by code.

A round's table is the one before it with the round's notes after them. The tables of
successive rounds share their columns (:class:`_Room`): each is a prefix of buffers with
room to spare, so a round appends its few hundred notes instead of copying the thousands
before them (the copy touched every note's string, long out of the cache, each round).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING

from .changes import NO_ROUND, entry_array, memory_entries

if TYPE_CHECKING:
    import numpy as np

    from .state import MemoryEntry

#: The note of an empty memory slot (its round is :data:`~.changes.NO_ROUND`).
EMPTY_NOTE = 0
#: The notes table drops the entries no slot holds once it holds twice its live ones and
#: this many more: it stays bounded however long a run, at one pass every few rounds.
COMPACT_AFTER = 4096
#: The least room a table's buffers are made with (they grow to twice what they hold).
LEAST_ROOM = 1024


@dataclass(eq=False, slots=True)
class Notes:
    """A state's table of memory entries: entry ``c`` says ``summaries[c]``, of round
    ``rounds[c]`` and importance ``importance[c]``; code :data:`EMPTY_NOTE` is an empty
    slot (None, :data:`NO_ROUND`, 0). ``live``: how many entries the table held when it
    last dropped those no slot held (or was made). An entry's validated
    :class:`MemoryEntry` is built when first read (:meth:`entries_at`) and kept with the
    table (a round remembers hundreds of notes that only a reader of memories needs as
    models); the columns never change."""

    summaries: np.ndarray
    rounds: np.ndarray
    importance: np.ndarray
    live: int
    #: The entries built so far (None where not) and which codes they are.
    _made: tuple[np.ndarray, np.ndarray] | None = None
    #: The buffers the columns are a prefix of, when they are (:meth:`joined`).
    _room: _Room | None = None

    @classmethod
    def of(cls, entries: Sequence[MemoryEntry]) -> Notes:
        """The table of ``entries`` (codes 1..), after the empty slot's."""
        import numpy as np

        count = len(entries) + 1
        return cls(
            entry_array([None, *(e.summary for e in entries)]),
            np.array([NO_ROUND, *(e.round for e in entries)], np.int32),
            np.array([0, *(e.importance for e in entries)], np.int8),
            count,
            (entry_array([None, *entries]), np.ones(count, bool)),
        )

    @classmethod
    def unbuilt(cls, summaries: list[str], rounds: np.ndarray, importance: np.ndarray) -> Notes:
        """The table of the entries saying ``summaries``, of ``rounds`` and ``importance``
        (codes 1..), none built yet."""
        import numpy as np

        return cls(
            entry_array([None, *summaries]),
            np.concatenate([[NO_ROUND], rounds]).astype(np.int32),
            np.concatenate([[0], importance]).astype(np.int8),
            len(summaries) + 1,
        )

    def __len__(self) -> int:
        return len(self.summaries)

    def entries_at(self, codes: np.ndarray) -> np.ndarray:
        """The entries at ``codes`` (an array of any shape; None at :data:`EMPTY_NOTE`),
        those not read before built now (validated in one call)."""
        import numpy as np

        if self._made is None:
            self._made = (np.full(len(self), None, object), np.arange(len(self)) == EMPTY_NOTE)
        made, built = self._made
        new = np.unique(codes[~built[codes]])
        if len(new):
            at = (self.rounds[new], self.summaries[new], self.importance[new])
            made[new] = entry_array(memory_entries(*(column.tolist() for column in at)))
            built[new] = True
        return made[codes]

    def joined(self, summaries: np.ndarray, round_no: int, importance: np.ndarray) -> Notes:
        """The table with round ``round_no``'s entries (saying ``summaries``, of
        ``importance``) after its own; the entries built so far go with it. Written after
        this table in the buffers it shares when no table was joined to it before and they
        have room, else into new buffers."""
        size, count = len(self), len(summaries)
        end = size + count
        room = self._room
        if room is None or not room.claim(size, end):
            room = _Room.holding(self, end)
        room.summaries[size:end] = summaries
        room.rounds[size:end] = round_no
        room.importance[size:end] = importance
        return room.table(end, self.live)

    def kept(self, memory: np.ndarray) -> tuple[Notes, np.ndarray]:
        """The table and ``memory`` coded into it; the entries no slot holds are dropped
        once they are most of the table (so it stays bounded however long a run)."""
        import numpy as np

        if len(self) <= 2 * self.live + COMPACT_AFTER:
            return self, memory
        held = np.zeros(len(self), bool)
        held[memory] = True
        held[EMPTY_NOTE] = True
        live = np.flatnonzero(held)
        table = Notes(
            self.summaries[live],
            self.rounds[live],
            self.importance[live],
            len(live),
            None if self._made is None else (self._made[0][live], self._made[1][live]),
        )
        return table, (np.cumsum(held, dtype=np.int32) - 1)[memory]


@dataclass(eq=False, slots=True)
class _Room:
    """Buffers of one length whose first ``filled`` entries the tables made on them share,
    each table a prefix (the codes of an entry are the same in all of them). Entries past
    ``filled`` are blank (None, 0, unbuilt): only a table that claims them writes there."""

    summaries: np.ndarray
    rounds: np.ndarray
    importance: np.ndarray
    entries: np.ndarray
    built: np.ndarray
    filled: int
    #: Held while a table claims the room after it (tables are joined on worker threads).
    _lock: Lock = field(default_factory=Lock)

    def claim(self, size: int, end: int) -> bool:
        """Whether the table of the first ``size`` entries may write entries up to ``end``
        (it ends where the entries written end, and they fit): then they are its."""
        with self._lock:
            if self.filled != size or len(self.summaries) < end:
                return False
            self.filled = end
            return True

    @classmethod
    def holding(cls, notes: Notes, end: int) -> _Room:
        """New buffers holding ``notes`` (its built entries too), the entries after it up to
        ``end`` claimed, with as much room again (:data:`LEAST_ROOM` at least)."""
        import numpy as np

        size, capacity = len(notes), max(2 * end, LEAST_ROOM)
        room = cls(
            np.full(capacity, None, object),
            np.zeros(capacity, np.int32),
            np.zeros(capacity, np.int8),
            np.full(capacity, None, object),
            np.zeros(capacity, bool),
            end,
        )
        room.summaries[:size] = notes.summaries
        room.rounds[:size] = notes.rounds
        room.importance[:size] = notes.importance
        if notes._made is None:
            room.built[EMPTY_NOTE] = True
        else:
            room.entries[:size], room.built[:size] = notes._made
        return room

    def table(self, size: int, live: int) -> Notes:
        """The table of the first ``size`` entries."""
        made = (self.entries[:size], self.built[:size])
        at = slice(size)
        return Notes(self.summaries[at], self.rounds[at], self.importance[at], live, made, self)
