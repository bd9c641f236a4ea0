"""Save format 5's columns: a keyframe's state and a round's relation changes, coded.

A state of N agents has N(N-1) edges, and at a thousand agents most of them change every
round, so both are stored column by column, the way the engine holds them
(:class:`~engine.core.columns.StateColumns`):

- favorability as a list of floats (JSON keeps each float exactly);
- statuses as a string of digits, one an edge (codes of
  :data:`~engine.core.changes.STATUSES`);
- memory entries as *notes*: each agent's distinct entries remembered about them
  (``notes[target]``, in the order of round, summary and importance), and every memory
  slot as the index of its entry among its target's notes (-1: empty). Most observers
  remember the same few things about an agent, so the codes are small and repeat.

:class:`StateFrame` is a keyframe's whole state (its memory codes target-major: target,
observer, slot); :class:`EdgeColumns` is a round's changed edges. Both are validated when
read, and engine/saves/roundcheck.py checks them against the run's cast before use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..core.changes import (
    STATUSES,
    RoundChanges,
    entry_array,
    evicted_array,
    memory_entries,
    override_codes,
)
from ..core.columns import StateColumns, need_states, needs_of
from ..core.needs import Need
from ..core.notes import EMPTY_NOTE, Notes
from ..core.scenario import Status
from ..core.state import MemoryEntry, NeedState
from .agentcolumns import NeedColumns, NoteColumns
from .packed import Decimals4, Decimals6, Ints

if TYPE_CHECKING:
    import numpy as np

Fav = Annotated[float, Field(ge=-1.0, le=1.0)]
Emotion = Annotated[float, Field(ge=0.0, le=1.0)]
#: Status codes, one digit an edge.
Codes = Annotated[str, Field(pattern=f"^[0-{len(STATUSES) - 1}]*$")]
#: A memory slot's note (-1: empty).
Slot = Annotated[int, Field(ge=-1)]
_ZERO = ord("0")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class StateFrame(_Model):
    """The whole state after round ``round``: agent ``names[i]``'s regard for
    ``names[j]`` is ``fav[i * N + j]`` and ``status[i * N + j]`` (the diagonal 0.0 and
    neutral); slot k of edge i -> j's memory (``width`` slots, the empty ones in front) is
    ``notes[names[j]][memory[(j * N + i) * width + k]]``."""

    round: int
    names: list[str]
    fav: list[Fav]
    status: Codes
    width: Annotated[int, Field(ge=0)]
    notes: dict[str, list[MemoryEntry]]
    memory: list[Slot]
    emotion: list[Emotion]
    needs: list[dict[str, NeedState]]
    theta: list[float | None]

    @classmethod
    def of(cls, state: StateColumns) -> StateFrame:
        """The frame of ``state``."""
        import numpy as np

        n, width = len(state.names), state.width
        # target-major: a target's codes, observer after observer, lie side by side
        memory = state.memory.transpose(1, 0, 2).ravel()
        targets = np.repeat(np.arange(n), n * width)
        filled = memory != EMPTY_NOTE
        table = state.notes.entries_at(np.arange(len(state.notes)))
        codes, notes = note_codes(table, memory, targets, filled, state.names)
        return cls(
            round=state.round,
            names=state.names,
            fav=state.fav.ravel().tolist(),
            status=digits(state.status.ravel()),
            width=width,
            notes=notes,
            memory=codes.tolist(),
            emotion=state.emotion,
            needs=[need_states(needs) for needs in state.needs],
            theta=state.theta,
        )

    def columns(self) -> StateColumns:
        """The state as columns (checked first: see engine/saves/roundcheck.py)."""
        import numpy as np

        n, width = len(self.names), self.width
        table, offsets = _table(self.notes, self.names)
        codes = np.array(self.memory, np.int64).reshape(n, n, width).transpose(1, 0, 2)
        memory = np.where(codes >= 0, codes + offsets[None, :, None], EMPTY_NOTE)
        return StateColumns(
            round=self.round,
            names=self.names,
            fav=np.array(self.fav, float).reshape(n, n),
            status=status_array(self.status).reshape(n, n),
            notes=Notes.of(table),
            memory=memory.astype(np.int32),
            emotion=self.emotion,
            needs=[needs_of(needs) for needs in self.needs],
            theta=self.theta,
        )


class EdgeColumns(_Model):
    """A round's relation changes column by column: the fields of
    :class:`~engine.core.state.RelationChange` (statuses as digits), the entry each edge
    remembered as ``notes[target][memory[k]]``, and ``evicted``, the rounds of the entries
    each change evicted (its own round if the new entry was dropped at once)."""

    source: list[str] = []
    target: list[str] = []
    delta: list[float] = []
    fav: list[Fav] = []
    status: Codes = ""
    previous_status: Codes = ""
    override: list[Status | None] = []
    notes: dict[str, list[MemoryEntry]] = {}
    memory: list[Annotated[int, Field(ge=0)]] = []
    evicted: list[list[int]] = []

    @classmethod
    def of_changes(cls, changes: RoundChanges) -> EdgeColumns:
        """The relation part of ``changes``, validated as the file holds it."""
        import numpy as np

        names = changes.names
        said, importance, remembered = changes.remembered()
        filled = np.ones(len(remembered), bool)
        made = memory_entries([changes.round] * len(said), said.tolist(), importance.tolist())
        codes, notes = note_codes(entry_array(made), remembered, changes.target, filled, names)
        return cls(
            source=[names[i] for i in changes.source.tolist()],
            target=[names[j] for j in changes.target.tolist()],
            delta=changes.delta.tolist(),
            fav=changes.fav.tolist(),
            status=digits(changes.status),
            previous_status=digits(changes.previous),
            override=changes.overrides(),
            notes=notes,
            memory=codes.tolist(),
            evicted=changes.evictions(),
        )

    def of(self, round_no: int, names: list[str]) -> RoundChanges:
        """The rows as the relation part of round ``round_no``'s :class:`RoundChanges`
        (agents ``names``)."""
        import numpy as np

        index = {name: k for k, name in enumerate(names)}
        count = len(self.source)
        target = np.fromiter(map(index.__getitem__, self.target), np.intp, count=count)
        table, offsets = _table(self.notes, names)  # the round's notes, target after target
        codes = np.array(self.memory, np.int64).reshape(count) + offsets[target] - 1
        summaries = [e.summary for e in table]
        importance = np.array([e.importance for e in table], np.int64)
        return RoundChanges(
            round=round_no,
            names=names,
            source=np.fromiter(map(index.__getitem__, self.source), np.intp, count=count),
            target=target,
            delta=np.array(self.delta, dtype=float).reshape(count),
            fav=np.array(self.fav, dtype=float).reshape(count),
            status=status_array(self.status),
            previous=status_array(self.previous_status),
            override=override_codes(self.override),
            notes=summaries,
            note=codes.astype(np.intp),
            importance=importance[codes].reshape(count),
            evicted=evicted_array(self.evicted),
            _remembered=(entry_array(summaries), importance, codes),
        )


class PackedState(_Model):
    """The whole state after round ``round`` as packed columns (format 6): agent
    ``names[i]``'s regard for ``names[j]`` is ``fav[i * N + j]`` and ``status[i * N + j]``
    (the diagonal 0.0 and neutral); slot k of edge i -> j's memory (``width`` slots, the
    empty ones in front) is ``notes[memory[(i * N + j) * width + k] - 1]`` (0: empty), the
    state's table of notes cut to the entries some slot holds."""

    round: int
    names: list[str]
    fav: Decimals4
    status: Codes
    width: Annotated[int, Field(ge=0)]
    #: The notes as columns since format 9 (an object an entry before).
    notes: NoteColumns | list[MemoryEntry]
    memory: Ints
    emotion: list[Emotion]
    #: The needs as columns since format 9 (an object an agent before).
    needs: NeedColumns | list[dict[str, NeedState]]
    theta: list[float | None]

    @classmethod
    def of(cls, state: StateColumns) -> PackedState:
        """The packed columns of ``state``."""
        import numpy as np

        held = np.zeros(len(state.notes), bool)
        held[state.memory] = True
        held[EMPTY_NOTE] = True
        live = np.flatnonzero(held)
        codes = (np.cumsum(held, dtype=np.int32) - 1)[state.memory]
        return cls(
            round=state.round,
            names=state.names,
            fav=state.fav.ravel(),
            status=digits(state.status.ravel()),
            width=state.width,
            notes=NoteColumns.of(state.notes, live[1:]),
            memory=codes.ravel(),
            emotion=state.emotion,
            needs=_needs(state),
            theta=state.theta,
        )

    def columns(self, memory: bool = True) -> StateColumns:
        """The state as columns (checked first: see engine/saves/roundcheck.py); its memory
        rings empty unless ``memory``."""
        import numpy as np

        n = len(self.names)
        width = self.width if memory else 0
        return StateColumns(
            round=self.round,
            names=self.names,
            fav=self.fav.reshape(n, n),
            status=status_array(self.status).reshape(n, n),
            notes=self._notes() if memory else Notes.of([]),
            memory=self.memory.astype(np.int32).reshape(n, n, self.width)[:, :, :width],
            emotion=self.emotion,
            needs=self.agent_needs(),
            theta=self.theta,
        )

    def _notes(self) -> Notes:
        notes = self.notes
        if isinstance(notes, NoteColumns):
            return Notes.unbuilt(notes.summary, notes.round, notes.importance)
        return Notes.of(notes)

    def agent_needs(self) -> list[dict[str, Need]]:
        """Each agent's needs as the engine holds them."""
        if isinstance(self.needs, NeedColumns):
            return self.needs.needs()
        return [needs_of(needs) for needs in self.needs]


def _needs(state: StateColumns) -> NeedColumns | list[dict[str, NeedState]]:
    """The agents' needs as columns, or as an object an agent where they cannot be."""
    columns = NeedColumns.of(state.needs)
    return [need_states(n) for n in state.needs] if columns is None else columns


class PackedEdges(_Model):
    """A round's relation changes as packed columns (format 6), the arrays of
    :class:`~engine.core.changes.RoundChanges` as they are: edge k is ``names[source[k]] ->
    names[target[k]]``, its new memory entry (of the round) says ``notes[note[k]]`` with
    ``importance[k]``, and row k of ``evicted`` (``len(evicted) // len(source)`` rounds,
    -1 after them) the rounds of the entries it evicted."""

    names: list[str]
    source: Ints
    target: Ints
    delta: Decimals6
    fav: Decimals4
    status: Codes
    previous_status: Codes
    override: Ints
    notes: list[str]
    note: Ints
    importance: Ints
    evicted: Ints

    @classmethod
    def of_changes(cls, changes: RoundChanges) -> PackedEdges:
        """The relation part of ``changes``."""
        return cls(
            names=changes.names,
            source=changes.source,
            target=changes.target,
            delta=changes.delta,
            fav=changes.fav,
            status=digits(changes.status),
            previous_status=digits(changes.previous),
            override=changes.override,
            notes=changes.notes,
            note=changes.note,
            importance=changes.importance,
            evicted=changes.evicted.ravel(),
        )

    def of(self, round_no: int, names: list[str]) -> RoundChanges:
        """The rows as the relation part of round ``round_no``'s :class:`RoundChanges`
        (agents ``names``; checked first: see engine/saves/roundcheck.py)."""
        import numpy as np

        count = len(self.source)
        source, target = self.source, self.target
        if self.names != names:  # the file's agents in another order
            index = {name: k for k, name in enumerate(names)}
            at = np.array([index[name] for name in self.names], np.intp).reshape(len(self.names))
            source, target = at[source], at[target]
        return RoundChanges(
            round=round_no,
            names=names,
            source=source.astype(np.intp),
            target=target.astype(np.intp),
            delta=self.delta,
            fav=self.fav,
            status=status_array(self.status),
            previous=status_array(self.previous_status),
            override=self.override.astype(np.int8),
            notes=self.notes,
            note=self.note.astype(np.intp),
            importance=self.importance,
            evicted=self.evicted.reshape(count, -1) if count else evicted_array([]),
        )


def note_codes(
    table: np.ndarray, slots: np.ndarray, targets: np.ndarray, filled: np.ndarray, names: list[str]
) -> tuple[np.ndarray, dict[str, list[MemoryEntry]]]:
    """Each slot's code among its target's notes (-1 where not ``filled``), and the notes:
    the distinct entries (by round, summary and importance) about each agent, in that
    order; slot k holds entry ``table[slots[k]]`` about agent ``targets[k]``."""
    import numpy as np

    codes = np.full(len(slots), -1, np.int64)
    held = slots[filled]
    if not len(held):
        return codes, {}
    # the entries the slots hold, then one rank per distinct entry (a few per target)
    used, of_slot = np.unique(held, return_inverse=True)
    objects = table[used].tolist()
    keys = [(e.round, e.summary, e.importance) for e in objects]
    distinct = sorted(set(keys))
    rank_of = {key: r for r, key in enumerate(distinct)}
    ranks = np.array([rank_of[key] for key in keys], np.int64)[of_slot]
    by = {rank_of[key]: e for key, e in zip(keys, objects, strict=True)}
    count = len(distinct)
    keyed, local = np.unique(targets[filled] * count + ranks, return_inverse=True)
    owner = keyed // count
    starts = np.searchsorted(owner, np.arange(len(names)))
    codes[filled] = local - starts[targets[filled]]
    notes: dict[str, list[MemoryEntry]] = {}
    for j, rank in zip(owner.tolist(), (keyed % count).tolist(), strict=True):
        notes.setdefault(names[j], []).append(by[rank])
    return codes, notes


def _table(
    notes: dict[str, list[MemoryEntry]], names: list[str]
) -> tuple[list[MemoryEntry], np.ndarray]:
    """Every note in ``names`` order of their targets, and the code (from 1: after the
    empty slot's) where each target's notes start."""
    import numpy as np

    lists = [notes.get(name, []) for name in names]
    offsets = np.cumsum([1, *map(len, lists)])[:-1]
    return [e for notes_of in lists for e in notes_of], offsets


def digits(codes: np.ndarray) -> str:
    """Status codes as a string of digits."""
    import numpy as np

    return (codes.astype(np.uint8) + _ZERO).tobytes().decode("ascii")


def status_array(text: str) -> np.ndarray:
    """The status codes a string of digits holds."""
    import numpy as np

    return (np.frombuffer(text.encode("ascii"), np.uint8) - _ZERO).astype(np.int8)
