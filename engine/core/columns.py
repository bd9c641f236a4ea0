"""A state as the engine holds it: every edge's values in numpy columns.

:class:`StateColumns` keeps the N(N-1) edges of one state as arrays indexed by (observer,
target): favorability, status (as codes of :data:`STATUSES`) and the memory ring (each
edge's entries as codes into the state's table of notes, their rounds and importance,
right-aligned in ``width`` slots, the empty slots in front). Per-agent values (emotion,
needs, theta) stay plain lists. One
:meth:`StateColumns.apply` rolls a state forward by a round's
:class:`~engine.core.changes.RoundChanges`; the pydantic
:class:`~engine.core.state.WorldState` is built, validated, only when the state leaves the
engine (:meth:`StateColumns.world`), and then only for the edges the round changed when the
state before it was built too. Columns are never changed in place once made.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING

from .changes import (
    CODE,
    STATUSES,
    RoundChanges,
    validated,
)
from .needs import Need
from .notes import EMPTY_NOTE, Notes
from .scenario import Status
from .state import AgentState, MemoryEntry, NeedState, Relation, WorldState

if TYPE_CHECKING:
    import numpy as np

#: The codes of rival and enemy.
HOSTILE_CODES = (CODE[Status.RIVAL], CODE[Status.ENEMY])


def hostile_codes(codes: np.ndarray) -> np.ndarray:
    """Where status ``codes`` are rival or enemy (two comparisons: cheaper than ``isin``)."""
    rival, enemy = HOSTILE_CODES
    return (codes == rival) | (codes == enemy)


def edge_items(memory: np.ndarray) -> np.ndarray:
    """``memory`` (``[i, j, slot]``, at least one slot) as one item an edge, flat: each
    edge's slots as one opaque item, which numpy takes and puts by a flat index several
    times faster than the rows of a 2-D array (one copy an item). A view of a C-contiguous
    ``memory`` (the rings :func:`_remember` makes), else of a copy."""
    import numpy as np

    n, width = memory.shape[0] * memory.shape[1], memory.shape[2]
    return memory.reshape(n, width).view(np.dtype((np.void, width * memory.itemsize)))[:, 0]


def row_counts(mask: np.ndarray) -> np.ndarray:
    """How many of each row's few values (under 256) ``mask`` (a 2-D bool array) holds: as
    a product with ones, several times faster than numpy's sum along so short an axis."""
    import numpy as np

    return (mask.view(np.uint8) @ np.ones(mask.shape[1], np.uint8)).astype(np.int64)


@dataclass(eq=False, slots=True)
class StateColumns:
    """One state: edges as columns, agents in the state's order."""

    round: int
    names: list[str]
    #: ``fav[i, j]``: how agent i regards agent j (0.0 on the diagonal).
    fav: np.ndarray
    #: ``status[i, j]``: the code of the edge's status.
    status: np.ndarray
    #: ``memory[i, j, k]``: the code among ``notes`` of the k-th slot of edge i -> j's
    #: memory (:data:`EMPTY_NOTE` when empty).
    notes: Notes
    memory: np.ndarray
    emotion: list[float]
    needs: list[dict[str, Need]]
    theta: list[float | None]
    #: The built state before this one and the edges and agents the round changed: what
    #: :meth:`world` builds anew (the rest is the earlier state's).
    _before: tuple[WorldState, np.ndarray, np.ndarray, set[int]] | None = None
    _world: WorldState | None = None
    _index: dict[str, int] | None = None
    _hostile: np.ndarray | None = None

    @property
    def index(self) -> dict[str, int]:
        """Each agent's position."""
        if self._index is None:
            self._index = {name: k for k, name in enumerate(self.names)}
        return self._index

    @property
    def built(self) -> WorldState | None:
        """The state's :class:`WorldState` if :meth:`world` built it already."""
        return self._world

    @property
    def width(self) -> int:
        """Memory slots an edge."""
        return int(self.memory.shape[2])

    def slots_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``[k, s]``: the code among :attr:`notes` of slot s of edge (rows[k], cols[k])
        (read through the flat index of the edges: one ``take`` of whole edges); ``[s]``
        for one edge."""
        import numpy as np

        n, memory = len(self.names), self.memory
        flat = np.asarray(rows * n + cols)  # (one edge's slots for one edge)
        if not self.width:
            return np.empty((*flat.shape, 0), memory.dtype)
        taken = edge_items(memory).take(flat.ravel())
        return taken.view(memory.dtype).reshape(*flat.shape, self.width)

    def rounds_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``[k, s]``: the round of slot s of edge (rows[k], cols[k]) (:data:`NO_ROUND`:
        empty)."""
        return self.notes.rounds.take(self.slots_at(rows, cols))

    def importance_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``[k, s]``: the importance of slot s of edge (rows[k], cols[k]) (0: empty)."""
        return self.notes.importance.take(self.slots_at(rows, cols))

    @classmethod
    def of(cls, state: WorldState, capacity: int = 0) -> StateColumns:
        """The columns of ``state``; memory slots for ``capacity`` entries an edge, or as
        many as its longest memory holds if more (slots are added as memories grow)."""
        import numpy as np

        names = list(state.agents)
        n = len(names)
        index = {name: k for k, name in enumerate(names)}
        longest = max(
            (len(r.memory) for a in state.agents.values() for r in a.relations.values()),
            default=0,
        )
        width = max(capacity, longest)
        fav = np.zeros((n, n))
        status = np.full((n, n), CODE[Status.NEUTRAL], np.int8)
        notes: list[MemoryEntry] = []
        memory = np.full((n, n, width), EMPTY_NOTE, np.int32)
        for i, agent in enumerate(state.agents.values()):
            for other, rel in agent.relations.items():
                j = index[other]
                fav[i, j] = rel.fav
                status[i, j] = CODE[rel.status]
                if rel.memory:
                    first = len(notes) + 1
                    memory[i, j, width - len(rel.memory) :] = range(first, first + len(rel.memory))
                    notes.extend(rel.memory)
        agents = list(state.agents.values())
        return cls(
            round=state.round,
            names=names,
            fav=fav,
            status=status,
            notes=Notes.of(notes),
            memory=memory,
            emotion=[a.emotion for a in agents],
            needs=[needs_of(a.needs) for a in agents],
            theta=[a.theta for a in agents],
            _world=state,
        )

    def apply(self, changes: RoundChanges, memory: bool = True) -> StateColumns:
        """The state after ``changes``' round, the round after this one; without memories
        unless ``memory`` (the rings left empty once an edge changes: for a reader of the
        other columns, which then builds no entry the round remembered)."""
        import numpy as np

        t = changes.round
        rows, cols = changes.source, changes.target
        fav, status = self.fav.copy(), self.status.copy()
        notes, rings = self.notes, self.memory
        if len(rows):
            fav[rows, cols] = changes.fav
            status[rows, cols] = changes.status
            notes, rings = _remember(self, changes) if memory else (Notes.of([]), rings[:, :, :0])
        index = self.index
        emotion = list(self.emotion)
        for c in changes.emotions:
            emotion[index[c.agent]] = c.emotion
        needs = list(self.needs)
        for name, moved in changes.needs.items():
            i = index[name]
            needs[i] = _moved(needs[i], moved)
        theta = list(self.theta)
        for name, value in changes.theta.items():
            theta[index[name]] = value
        touched = [c.agent for c in changes.emotions] + [*changes.needs, *changes.theta]
        agents = {index[name] for name in touched} | set(np.flatnonzero(np.bincount(rows)).tolist())
        return StateColumns(
            round=t,
            names=self.names,
            fav=fav,
            status=status,
            notes=notes,
            memory=rings,
            emotion=emotion,
            needs=needs,
            theta=theta,
            # the built state before, if any: columns never hold a chain of states
            _before=None if self._world is None else (self._world, rows, cols, agents),
            _index=self._index,
        )

    def _relations(self, rows: np.ndarray, cols: np.ndarray) -> list[Relation]:
        """Edges (rows[k], cols[k]) as validated :class:`Relation` models."""
        rows_of = zip(
            self.fav[rows, cols].tolist(),
            [STATUSES[c] for c in self.status[rows, cols].tolist()],
            [[e for e in slots if e is not None] for slots in self._entries_of(rows, cols)],
            strict=True,
        )
        data = [{"fav": f, "status": s, "memory": m} for f, s, m in rows_of]
        return validated(list[Relation], data)

    def _entries_of(self, rows: np.ndarray, cols: np.ndarray) -> list[list[MemoryEntry | None]]:
        """The memory slots of edges (rows[k], cols[k])."""
        result: list[list[MemoryEntry | None]] = self.notes.entries_at(
            self.memory[rows, cols]
        ).tolist()
        return result

    def world(self) -> WorldState:
        """The state as a validated :class:`WorldState` (built once; when the state before
        this one was built, only the changed edges and agents are built anew)."""
        import numpy as np

        if self._world is not None:
            return self._world
        before = self._before
        names = self.names
        if before is not None:
            old, rows, cols, agents = before
            relations = {i: dict(old.agents[names[i]].relations) for i in agents}
            made = self._relations(rows, cols)
            for i, j, relation in zip(rows.tolist(), cols.tolist(), made, strict=True):
                relations[i][names[j]] = relation
            built = dict(old.agents)
            for i in agents:
                built[names[i]] = self._agent(i, relations[i])
        else:
            n = len(names)
            every = np.flatnonzero(~np.eye(n, dtype=bool))
            each = iter(self._relations(every // n, every % n))
            built = {
                name: self._agent(i, {other: next(each) for j, other in enumerate(names) if j != i})
                for i, name in enumerate(names)
            }
        self._world = WorldState(round=self.round, agents=built)
        self._before = None  # what the earlier state held is no longer needed
        return self._world

    def agent_state(self, i: int) -> AgentState:
        """Agent ``i``'s state as a validated :class:`AgentState` (the built state's if
        :meth:`world` built it)."""
        import numpy as np

        if self._world is not None:
            return self._world.agents[self.names[i]]
        others = np.flatnonzero(np.arange(len(self.names)) != i)
        made = self._relations(np.full(len(others), i), others)
        names = self.names
        return self._agent(i, {names[j]: r for j, r in zip(others.tolist(), made, strict=True)})

    def _agent(self, i: int, relations: dict[str, Relation]) -> AgentState:
        return AgentState(
            emotion=self.emotion[i],
            needs=need_states(self.needs[i]),
            relations=relations,
            theta=self.theta[i],
        )

    def hostile(self) -> np.ndarray:
        """``hostile[i, j]``: whether i regards j as rival or enemy (worked out once: columns
        never change; read only)."""
        if self._hostile is None:
            self._hostile = hostile_codes(self.status)
        return self._hostile


@dataclass(eq=False, slots=True)
class AgentView:
    """One agent's row of a state's columns: what a mind reads of the agent's own state
    (its regard for each other agent, its emotion and needs), the validated
    :class:`AgentState` built only when asked."""

    columns: StateColumns
    row: int
    _favs: list[float] | None = None
    _codes: list[int] | None = None
    _state: AgentState | None = None

    @classmethod
    def of(cls, state: WorldState, name: str) -> AgentView:
        """Agent ``name``'s view of ``state``."""
        columns = StateColumns.of(state)
        return cls(columns, columns.index[name])

    @property
    def index(self) -> dict[str, int]:
        """Every agent's position in :meth:`favs` and :meth:`codes`."""
        return self.columns.index

    def favs(self) -> list[float]:
        """My favorability toward each agent, in the columns' order (0.0 toward myself)."""
        if self._favs is None:
            self._favs = self.columns.fav[self.row].tolist()
        return self._favs

    def codes(self) -> list[int]:
        """The status code (:data:`~engine.core.changes.STATUSES`) of each of my edges."""
        if self._codes is None:
            self._codes = self.columns.status[self.row].tolist()
        return self._codes

    def fav(self, other: str) -> float:
        return self.favs()[self.columns.index[other]]

    @property
    def emotion(self) -> float:
        return self.columns.emotion[self.row]

    @property
    def needs(self) -> dict[str, Need]:
        return self.columns.needs[self.row]

    def state(self) -> AgentState:
        """The agent's state as a validated :class:`AgentState` (built once)."""
        if self._state is None:
            self._state = self.columns.agent_state(self.row)
        return self._state


def _moved(needs: dict[str, Need], moved: dict[str, float]) -> dict[str, Need]:
    """``needs`` with the ``moved`` ones at their new current values (each :class:`Need`
    made as its own constructor makes it, ``tuple.__new__``, without a Python call each)."""
    now = dict(needs)
    expected = map(itemgetter(1), map(needs.__getitem__, moved))
    made = map(tuple.__new__, repeat(Need), zip(moved.values(), expected, strict=True))
    now.update(zip(moved, made, strict=True))
    return now


def needs_of(states: dict[str, NeedState]) -> dict[str, Need]:
    """Validated needs as the engine holds them."""
    return {name: Need(v.current, v.expected) for name, v in states.items()}


def need_states(needs: dict[str, Need]) -> dict[str, NeedState]:
    """Needs as validated models."""
    return {
        name: NeedState(current=current, expected=expected)
        for name, (current, expected) in needs.items()
    }


def _remember(before: StateColumns, changes: RoundChanges) -> tuple[Notes, np.ndarray]:
    """The notes and memory rings after ``changes``: each changed edge's entries less those
    it evicted, then the round's new entry unless it was evicted at once, right-aligned in
    the slots (one more slot for every edge when a memory outgrows them: a keyframe read
    from a save holds no more slots than its longest memory). The round's entries join
    the notes. Worked out :data:`CHUNK` edges at a time (small arrays, reused)."""
    import numpy as np

    rows, cols, t = changes.source, changes.target, changes.round
    said, importance, codes = changes.remembered()
    new = len(before.notes) + codes
    memory = before.memory.copy()
    n = len(before.names)
    for first in range(0, len(rows), CHUNK):
        part = slice(first, first + CHUNK)
        r, c = rows[part], cols[part]
        moved = _rings(
            before.slots_at(r, c),
            before.notes.rounds,
            changes.evicted[part],
            new[part],
            t,
            memory.shape[2],
        )
        if moved.shape[1] > memory.shape[2]:  # one more slot in front, for every edge
            memory = np.pad(memory, ((0, 0), (0, 0), (1, 0)), constant_values=EMPTY_NOTE)
        moved = moved.astype(memory.dtype, copy=False)[:, None, :]
        np.put(edge_items(memory), r * n + c, edge_items(moved))  # (memory: a fresh array)
    return before.notes.joined(said, t, importance).kept(memory)


#: Edges :func:`_remember` works out at a time.
CHUNK = 1 << 15


def _rings(
    slots: np.ndarray,
    rounds: np.ndarray,
    evicted: np.ndarray,
    new: np.ndarray,
    t: int,
    width: int,
) -> np.ndarray:
    """Edges' rings after round ``t``, right-aligned in ``width`` slots (at least as many
    as ``slots``, the rings before, whose notes are of ``rounds``), or in one more when a
    ring outgrows them: each less the entries of the rounds it ``evicted``, then its
    ``new`` entry unless that was evicted at once."""
    import numpy as np

    k, old = slots.shape
    front = width - old  # (empty slots in front of the rings before)
    # slot by slot: each row of these arrays a contiguous column of the edges
    ring = np.full((width + 1, k), EMPTY_NOTE, np.int32)  # each edge's slots, then its new
    ring[front:width] = slots.T
    ring[width] = new
    held = ring != EMPTY_NOTE
    gone = np.zeros((width + 1, k), bool)
    # the rounds evicted come first; the NO_ROUND after them (and an edge's that evicts
    # none) meets only empty slots, which go anyway
    of = rounds.take(ring[front:width])  # (the slots, in the ring's contiguous rows)
    if evicted.shape[1] == 1:  # one round at most an edge (the common case)
        gone[front:width] = of == evicted[:, 0]
        gone[width] = evicted[:, 0] == t
    else:
        gone[front:width] = (of[:, :, None] == evicted[None, :, :]).any(axis=2)
        gone[width] = (evicted == t).any(axis=1)
    keep = held & ~gone
    if k and int(keep.sum(axis=0).max()) > width:
        return _rings(slots, rounds, evicted, new, t, width + 1)
    # Empty slots lie in front, so a ring that drops one entry at most (or none) keeps its
    # order less one slot: the last it drops (a drop beyond the empty ones, or the last
    # empty one).
    last = np.zeros(k, np.int64)
    for s in range(width + 1):
        np.putmask(last, ~keep[s], s)
    moved = np.where(np.arange(width)[:, None] < last, ring[:width], ring[1:]).T.copy()
    more = np.flatnonzero((held & gone).sum(axis=0) > 1)
    if len(more):  # rings that drop more (an older save's): the kept, in order, right-aligned
        keeps, rings = keep[:, more].T, ring[:, more].T
        order = np.argsort(keeps, axis=1, kind="stable")[:, 1:]
        pick = np.arange(len(more))[:, None]
        kept = rings[pick, order]
        kept[~keeps[pick, order]] = EMPTY_NOTE
        moved[more] = kept
    return moved
