"""Which memory entry each judged edge evicts, for a whole agent's edges at once.

:func:`~engine.core.rules.remember` evicts the entry of lowest retention, importance + round
(less the shared ``now``), the oldest of a tie. Reading those two fields from every entry
of every judged edge was the costliest step of a round (five entries an edge, scattered
in memory); :class:`Retention` keeps them as one integer matrix instead, ``keys[i, j]``
the keys of the entries of edge i -> j in order, padded in front with :data:`EMPTY` up to
the capacity, and finds each edge's victim with numpy. It belongs to one state (the
engine never changes a state in place) and is handed on to the state the round makes.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

from ..core.state import MemoryEntry, WorldState

if TYPE_CHECKING:
    import numpy as np

#: The key of a slot no entry fills: never the lowest.
EMPTY = 1 << 62

_HELD: dict[int, tuple[weakref.ref[WorldState], Retention]] = {}


class Retention:
    """The retention keys of every edge's memory in one state (agents in its order)."""

    __slots__ = ("capacity", "index", "keys", "round")

    def __init__(self, state: WorldState, capacity: int) -> None:
        import numpy as np

        names = list(state.agents)
        self.round = state.round
        self.capacity = capacity
        self.index = {name: k for k, name in enumerate(names)}
        self.keys: np.ndarray = np.full((len(names), len(names), capacity), EMPTY, np.int64)
        for i, agent in enumerate(state.agents.values()):
            for other, rel in agent.relations.items():
                if rel.memory:
                    self.set(i, self.index[other], rel.memory)

    @classmethod
    def of(cls, state: WorldState, capacity: int) -> Retention:
        """The keys of ``state`` (taken over from the round that made it, else read from
        it). The caller owns them: they change as its agents' edges are updated."""
        key = id(state)
        held = _HELD.pop(key, None)
        if held is not None:
            ref, keys = held
            if ref() is state and keys.round == state.round and keys.capacity == capacity:
                return keys
        return cls(state, capacity)

    def hand_to(self, state: WorldState) -> None:
        """Keep these keys for ``state``, the state every edge's update made."""
        key = id(state)
        self.round = state.round
        _HELD[key] = (weakref.ref(state, lambda _: _HELD.pop(key, None)), self)

    def set(self, i: int, j: int, memory: Sequence[MemoryEntry]) -> None:
        """Set edge i -> j's keys from its memory (of a memory over the capacity, a state
        read from an older save, the last entries: its next update reads the entries)."""
        row, cap = self.keys[i, j], self.capacity
        row[:] = EMPTY
        if memory and cap:
            last = memory[-cap:]
            row[cap - len(last) :] = [e.importance + e.round for e in last]

    def evict(self, rows: Sequence[tuple[str, Sequence[str], Sequence[int]]]) -> list[list[int]]:
        """For each row (agent i, targets, added) add to each edge i -> ``targets[k]`` an
        entry of key ``added[k]``; for each row, the position of the entry each edge evicts
        (``capacity`` for the new one itself), or -1 for an edge that had room. The rows of
        a round go in one call (numpy's cost is per call). An edge with more entries than
        the capacity is the caller's to settle (:func:`~engine.core.rules.remember`, then
        :meth:`set`)."""
        import numpy as np

        cap, index = self.capacity, self.index
        sizes = [len(targets) for _, targets, _ in rows]
        sources = np.repeat(np.array([index[name] for name, _, _ in rows], np.intp), sizes)
        cols = np.array([index[t] for _, targets, _ in rows for t in targets], np.intp)
        k = len(cols)
        full = np.empty((k, cap + 1), np.int64)
        full[:, :cap] = self.keys[sources, cols]
        full[:, cap] = [key for _, _, added in rows for key in added]
        room = full[:, 0] == EMPTY
        # the first lowest key (argmin takes the first of a tie); an edge with room drops a
        # padding slot instead, so its entries move one place towards the front
        victim = np.where(room, 0, full.argmin(axis=1))
        keep = np.ones(full.shape, dtype=bool)
        keep[np.arange(k), victim] = False
        self.keys[sources, cols] = full[keep].reshape(k, cap)
        flat = np.where(room, -1, victim).tolist()
        return [flat[end - size : end] for size, end in zip(sizes, accumulate(sizes), strict=True)]
