"""A round as a screen draws it, read straight from the state's columns.

A screen shows a few agents' panes and the part of the matrix in view; building the whole
validated :class:`~engine.core.state.WorldState` (a :class:`~engine.core.state.Relation`
model an edge: 90,000 at 300 agents, a million at 1,000) to draw them costs seconds.
:class:`StateView` reads like a ``WorldState`` (``state.agents[i].relations[j].fav``), each
value taken from the columns when read; :class:`RoundView` is a round's log (no relation
change models), that view of the state after it and its changes as arrays. The protocols
say what a reader may rely on: a ``WorldState`` satisfies them too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from .changes import STATUSES, RoundChanges
from .columns import StateColumns, need_states
from .scenario import Status
from .state import MemoryEntry, NeedState, RoundLog


class EdgeLike(Protocol):
    """How one agent regards another: a :class:`~engine.core.state.Relation`, or a view."""

    @property
    def fav(self) -> float: ...

    @property
    def status(self) -> Status: ...


class AgentLike(Protocol):
    """One agent's state: an :class:`~engine.core.state.AgentState`, or a view."""

    @property
    def emotion(self) -> float: ...

    @property
    def theta(self) -> float | None: ...

    @property
    def needs(self) -> Mapping[str, NeedState]: ...

    @property
    def relations(self) -> Mapping[str, EdgeLike]: ...


class StateLike(Protocol):
    """A whole state: a :class:`~engine.core.state.WorldState`, or a :class:`StateView`."""

    @property
    def round(self) -> int: ...

    @property
    def agents(self) -> Mapping[str, AgentLike]: ...


class EdgeView:
    """Edge ``i -> j`` of a state's columns; its memory's entries built when read."""

    __slots__ = ("_columns", "_i", "_j", "fav", "status")

    def __init__(self, columns: StateColumns, i: int, j: int) -> None:
        self._columns, self._i, self._j = columns, i, j
        self.fav = float(columns.fav[i, j])
        self.status = STATUSES[int(columns.status[i, j])]

    @property
    def memory(self) -> list[MemoryEntry]:
        """The edge's memory entries, oldest first."""
        columns = self._columns
        slots = columns.notes.entries_at(columns.memory[self._i, self._j])
        return [e for e in slots if e is not None]


class RelationsView(Mapping[str, EdgeView]):
    """Agent ``row``'s relations to every other agent, by name."""

    def __init__(self, columns: StateColumns, row: int) -> None:
        self._columns, self._row = columns, row

    def __getitem__(self, name: str) -> EdgeView:
        j = self._columns.index[name]  # a KeyError for a name not in the cast
        if j == self._row:
            raise KeyError(name)
        return EdgeView(self._columns, self._row, j)

    def __iter__(self) -> Iterator[str]:
        me = self._columns.names[self._row]
        return (name for name in self._columns.names if name != me)

    def __len__(self) -> int:
        return len(self._columns.names) - 1


@dataclass(eq=False, slots=True)
class AgentRow:
    """Agent ``row`` of a state's columns, read like an :class:`~engine.core.state.AgentState`."""

    columns: StateColumns
    row: int
    _needs: dict[str, NeedState] | None = None

    @property
    def emotion(self) -> float:
        return self.columns.emotion[self.row]

    @property
    def theta(self) -> float | None:
        return self.columns.theta[self.row]

    @property
    def needs(self) -> dict[str, NeedState]:
        if self._needs is None:
            self._needs = need_states(self.columns.needs[self.row])
        return self._needs

    @property
    def relations(self) -> RelationsView:
        return RelationsView(self.columns, self.row)


class AgentsView(Mapping[str, AgentRow]):
    """Every agent's row of a state's columns, by name (each row made once, when read)."""

    def __init__(self, columns: StateColumns) -> None:
        self._columns = columns
        self._rows: dict[str, AgentRow] = {}

    def __getitem__(self, name: str) -> AgentRow:
        row = self._rows.get(name)
        if row is None:
            row = self._rows[name] = AgentRow(self._columns, self._columns.index[name])
        return row

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns.names)

    def __len__(self) -> int:
        return len(self._columns.names)


class StateView:
    """A state's columns read like a :class:`~engine.core.state.WorldState`: no model is
    built but for what is read."""

    __slots__ = ("agents", "columns")

    def __init__(self, columns: StateColumns) -> None:
        self.columns = columns
        self.agents = AgentsView(columns)

    @property
    def round(self) -> int:
        return self.columns.round


@dataclass(frozen=True, eq=False, slots=True)
class RoundView:
    """A round as a screen draws it: what happened (``log``, without its relation changes'
    models), the state after it and the round's changes as arrays."""

    log: RoundLog
    state: StateView
    changes: RoundChanges

    @classmethod
    def of(cls, log: RoundLog, after: StateColumns, changes: RoundChanges) -> RoundView:
        return cls(log, StateView(after), changes)

    @property
    def round(self) -> int:
        return self.log.round

    def moved(self, at_least: float) -> MovedEdges:
        """The (observer, target) edges whose favorability moved by ``at_least`` or more,
        or whose status changed, in the round."""
        return MovedEdges(self.changes, at_least)


class MovedEdges:
    """The edges a round moved, as a matrix of flags: ``(observer, target) in moved`` is
    two lookups, and no pair of names is made for the edges never asked about (a screen
    asks about the cells in view; tens of thousands move a round at 300 agents)."""

    __slots__ = ("_flags", "_index")

    def __init__(self, changes: RoundChanges, at_least: float) -> None:
        import numpy as np

        names = changes.names
        hit = changes.moved(at_least)
        self._flags = np.zeros((len(names), len(names)), bool)
        self._flags[changes.source[hit], changes.target[hit]] = True
        self._index = {name: k for k, name in enumerate(names)}

    def __contains__(self, edge: object) -> bool:
        if not isinstance(edge, tuple) or len(edge) != 2:
            return False
        i, j = (self._index.get(name) for name in edge)
        return i is not None and j is not None and bool(self._flags[i, j])
