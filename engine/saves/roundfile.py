"""Save format 5: a round file holds what the round changed, and now and then the state.

A round file is the round's log (events, actions, LLM exchanges, usage), the changes it
applied as absolute new values (each changed edge's favorability and status, the memory
entry it added and the entries it evicted; each moved need's current value; each agent's
emotion; new theta values) and the round's App. D metrics. Round 0, every
:data:`KEYFRAME_EVERY`-th round and a branch's fork round also hold the whole state (a
keyframe) with the repair counter the metrics go on from. A round's state is the nearest
keyframe at or before it with the later rounds' changes applied; applying stores the very
floats the simulation held, so the rebuilt state equals the played one exactly.

The changes are :class:`~engine.core.changes.RoundChanges` as the file stores them
(:meth:`RoundFile.changes` reads them back); :meth:`RoundFile.apply` applies them with
:meth:`~engine.core.columns.StateColumns.apply`, the one place a round's changes are applied.
Since format 5 the relation changes and the keyframe's state are coded columns
(engine/saves/columnar.py), in a large round of format 8 stored as raw bytes beside the
JSON of the rest (engine/saves/binround.py); the objects of formats 2 to 4
(:class:`RelationColumns`, a keyframe's :class:`~engine.core.state.WorldState`) are still
read.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.changes import (
    RoundChanges,
    evicted_array,
    note_table,
    override_codes,
    status_codes,
)
from ..core.columns import StateColumns
from ..core.exchanges import LLMCall, RoundUsage
from ..core.metrics import Metrics, RepairCounter
from ..core.played import PlayedRound
from ..core.scenario import Status
from ..core.state import (
    Action,
    EmotionChange,
    RelationChange,
    RoundLog,
    RoundRecord,
    ScenarioEvent,
    WorldState,
)
from .agentcolumns import MovedNeeds
from .columnar import EdgeColumns, PackedEdges, PackedState, StateFrame

#: A keyframe every this many rounds: rebuilding a round reads at most this many files
#: (see docs/formats.md, Keyframes, for the measured trade-off).
KEYFRAME_EVERY = 10

Fav = Annotated[float, Field(ge=-1.0, le=1.0)]
Importance = Annotated[int, Field(ge=1, le=10)]
NeedValue = Annotated[float, Field(ge=0.0, le=10.0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RelationColumns(_Model):
    """A round's relation changes as formats 3 and 4 stored them: the fields of
    :class:`~engine.core.state.RelationChange` plus ``evicted``, the rounds of the memory
    entries each change evicted (its own round if the new entry was dropped at once)."""

    source: list[str] = []
    target: list[str] = []
    delta: list[float] = []
    fav: list[Fav] = []
    status: list[Status] = []
    previous_status: list[Status] = []
    override: list[Status | None] = []
    summary: list[str] = []
    importance: list[Importance] = []
    evicted: list[list[int]] = []

    def of(self, round_no: int, names: list[str]) -> RoundChanges:
        """The rows as the relation part of round ``round_no``'s :class:`RoundChanges`
        (agents ``names``)."""
        import numpy as np

        index = {name: k for k, name in enumerate(names)}
        count = len(self.source)
        notes, note = note_table(self.summary)
        return RoundChanges(
            round=round_no,
            names=names,
            source=np.fromiter(map(index.__getitem__, self.source), np.intp, count=count),
            target=np.fromiter(map(index.__getitem__, self.target), np.intp, count=count),
            delta=np.array(self.delta, dtype=float).reshape(count),
            fav=np.array(self.fav, dtype=float).reshape(count),
            status=status_codes(self.status),
            previous=status_codes(self.previous_status),
            override=override_codes(self.override),
            notes=notes,
            note=note,
            importance=np.array(self.importance, dtype=np.int64).reshape(count),
            evicted=evicted_array(self.evicted),
        )


class RepairMarks(_Model):
    """The repair counter at a keyframe by name, as formats 3 to 6 stored it: ``fell[i]``
    the agents j whose edge i -> j deteriorated so far, ``never_friendly[i]`` those i
    regarded as rival or enemy at every state so far (agents without either are left out)."""

    fell: dict[str, list[str]] = {}
    never_friendly: dict[str, list[str]] = {}

    def counter(self, names: list[str]) -> RepairCounter:
        """The counter these marks were taken from (agents in ``names`` order)."""
        everyone = (1 << len(names)) - 1
        never = _masks(self.never_friendly, names)
        friendly = [everyone & ~(1 << i) & ~m for i, m in enumerate(never)]
        return RepairCounter(len(names), _masks(self.fell, names), friendly)


class PackedMarks(_Model):
    """The repair counter at a keyframe as bit rows (format 7): agent ``names[i]``'s masks
    over ``names`` (bit j: agent j), each ``ceil(N / 8)`` little-endian bytes, the rows one
    after another in base64; ``fell`` and ``never_friendly`` as in :class:`RepairMarks`,
    which names each agent of each mask (N² names in JSON at a keyframe)."""

    names: list[str]
    fell: str
    never_friendly: str

    @model_validator(mode="after")
    def _whole_rows(self) -> PackedMarks:
        for rows in (self.fell, self.never_friendly):
            _rows_of(rows, len(self.names))
        return self

    @classmethod
    def of(cls, counter: RepairCounter, names: list[str]) -> PackedMarks:
        everyone = (1 << len(names)) - 1
        never = [everyone & ~(1 << i) & ~m for i, m in enumerate(counter.was_friendly)]
        width = (len(names) + 7) // 8
        return cls(
            names=names, fell=_packed(counter.fell, width), never_friendly=_packed(never, width)
        )

    def counter(self, names: list[str]) -> RepairCounter:
        """The counter these marks were taken from (agents in ``names`` order)."""
        n = len(self.names)
        fell, never = _rows_of(self.fell, n), _rows_of(self.never_friendly, n)
        if names != self.names:  # another order of the cast: by name
            named = RepairMarks(
                fell=_named(fell, self.names), never_friendly=_named(never, self.names)
            )
            return named.counter(names)
        everyone = (1 << n) - 1
        friendly = [everyone & ~(1 << i) & ~m for i, m in enumerate(never)]
        return RepairCounter(n, fell, friendly)


def _packed(masks: list[int], width: int) -> str:
    return base64.b64encode(b"".join(m.to_bytes(width, "little") for m in masks)).decode("ascii")


def _rows_of(text: str, n: int) -> list[int]:
    """The ``n`` masks of bit rows ``text`` (bits beyond the cast dropped)."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("repair marks that are not base64") from None
    width = (n + 7) // 8
    if len(data) != n * width:
        raise ValueError(f"repair marks of {len(data)} bytes, not {n} rows of {width}")
    everyone = (1 << n) - 1
    return [
        int.from_bytes(data[k : k + width], "little") & everyone for k in range(0, len(data), width)
    ]


def _named(masks: list[int], names: list[str]) -> dict[str, list[str]]:
    return {
        names[i]: [names[j] for j in range(len(names)) if mask >> j & 1]
        for i, mask in enumerate(masks)
        if mask
    }


def _masks(named: dict[str, list[str]], names: list[str]) -> list[int]:
    index = {name: k for k, name in enumerate(names)}
    masks = [0] * len(names)
    for source, targets in named.items():
        masks[index[source]] = sum(1 << index[t] for t in targets)
    return masks


class Keyframe(_Model):
    """The whole state after a round, as packed columns (``packed``, format 6), coded
    columns (``frame``, format 5) or the state model formats 2 to 4 stored (``state``), and
    the repair counter then (as bit rows since format 7; None in a format-2 round, whose run
    is counted from round 0)."""

    packed: PackedState | None = None
    frame: StateFrame | None = None
    state: WorldState | None = None
    repair: PackedMarks | RepairMarks | None = None

    @model_validator(mode="after")
    def _one_state(self) -> Keyframe:
        if sum(s is not None for s in (self.packed, self.frame, self.state)) != 1:
            raise ValueError("a keyframe holds its state once: packed, as a frame or as a state")
        return self

    @classmethod
    def of(cls, state: StateColumns, repair: PackedMarks) -> Keyframe:
        """The keyframe of ``state`` with the repair counter's marks then."""
        return cls(packed=PackedState.of(state), repair=repair)

    def columns(self, memory: bool = True) -> StateColumns:
        """The state as columns (packed ones without memories unless ``memory``)."""
        if self.packed is not None:
            return self.packed.columns(memory)
        if self.frame is not None:
            return self.frame.columns()
        assert self.state is not None
        return StateColumns.of(self.state)


class RoundFile(_Model):
    """One round as saved: its log, the changes it applied, its metrics, and, in a
    keyframe round, the state after it."""

    round: int
    events: list[ScenarioEvent] = []
    actions: list[Action] = []
    emotion_changes: list[EmotionChange] = []
    #: The relation changes: ``packed`` since format 6, ``edges`` in format 5, ``relations``
    #: before.
    packed: PackedEdges | None = None
    edges: EdgeColumns | None = None
    relations: RelationColumns | None = None
    #: The needs the round moved, as columns (since format 10; None: in ``need_deltas``
    #: and ``needs``).
    moved: MovedNeeds | None = None
    #: Each agent's need movements and the new value of each need it moved (before format
    #: 10, or changes :meth:`MovedNeeds.of` does not take).
    need_deltas: dict[str, dict[str, float]] = {}
    needs: dict[str, dict[str, NeedValue]] = {}
    #: New theta values (value-driven agents), per agent.
    theta: dict[str, float | None] = {}
    llm_calls: list[LLMCall] = []
    usage: RoundUsage | None = None
    metrics: Metrics | None = None
    keyframe: Keyframe | None = None
    #: The id of the run that wrote the file (None: written before save format 4).
    run: str | None = None

    @classmethod
    def legacy(cls, record: RoundRecord) -> RoundFile:
        """A format-2 round (a full record): a keyframe without repair marks or metrics."""
        return cls(
            round=record.round,
            events=record.events,
            actions=record.actions,
            emotion_changes=record.emotion_changes,
            relations=RelationColumns(
                source=[c.source for c in record.relation_changes],
                target=[c.target for c in record.relation_changes],
                delta=[c.delta for c in record.relation_changes],
                fav=[c.fav for c in record.relation_changes],
                status=[c.status for c in record.relation_changes],
                previous_status=[c.previous_status for c in record.relation_changes],
                override=[c.override for c in record.relation_changes],
                summary=[c.summary for c in record.relation_changes],
                importance=[c.importance for c in record.relation_changes],
                evicted=[[] for _ in record.relation_changes],
            ),
            need_deltas=record.need_deltas,
            llm_calls=record.llm_calls,
            usage=record.usage,
            keyframe=Keyframe(state=record.state),
        )

    def log(self, relations: bool = True) -> RoundLog:
        """What happened in the round, without the state; without its relation changes
        too unless ``relations`` (:meth:`changes` has them as arrays, no model an edge)."""
        return RoundLog(**self._log_fields(relations))

    def record(self, state: WorldState) -> RoundRecord:
        """The round's record with ``state``, the state after it."""
        return RoundRecord(**self._log_fields(), state=state)

    @property
    def columns(self) -> PackedEdges | EdgeColumns | RelationColumns:
        """The relation changes, in the form the file holds them."""
        return self.packed or self.edges or self.relations or EdgeColumns()

    def _log_fields(self, relations: bool = True) -> dict[str, Any]:
        return {
            "round": self.round,
            "events": self.events,
            "actions": self.actions,
            "emotion_changes": self.emotion_changes,
            "relation_changes": self._relation_changes() if relations else [],
            "need_deltas": self.need_tables()[0],
            "llm_calls": self.llm_calls,
            "usage": self.usage,
        }

    def need_tables(self) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        """Each agent's need movements, and the new value of each need it moved."""
        if self.moved is None:
            return self.need_deltas, self.needs
        return self.moved.tables()

    def _relation_changes(self) -> list[RelationChange]:
        # the records' changes are read as RoundChanges are: any order of the agents will do
        columns = self.columns
        if isinstance(columns, PackedEdges):
            names = columns.names
        else:
            names = list(dict.fromkeys([*columns.source, *columns.target]))
        return columns.of(self.round, names).relation_changes()

    def changes(self, names: list[str]) -> RoundChanges:
        """What the round changed, among agents ``names``."""
        changes = self.columns.of(self.round, names)
        changes.emotions.extend(self.emotion_changes)
        need_deltas, needs = self.need_tables()
        changes.need_deltas.update(need_deltas)
        changes.needs.update(needs)
        changes.theta.update(self.theta)
        return changes

    def apply(self, before: StateColumns | None, memory: bool = True) -> StateColumns:
        """The state after this round, given the state ``before`` it (None: this round is
        a keyframe, whose own state it holds); ``memory``: see
        :meth:`~engine.core.columns.StateColumns.apply`."""
        if self.keyframe is not None:
            return self.keyframe.columns(memory)
        if before is None:
            raise ValueError(
                f"round {self.round} holds no keyframe: its state needs the one before"
            )
        return before.apply(self.changes(before.names), memory)


def round_file(
    played: PlayedRound, metrics: Metrics, keyframe: PackedMarks | None = None
) -> RoundFile:
    """The file of the round ``played``, and the whole state after it too when ``keyframe``
    (the repair marks after the round) is given."""
    changes = played.changes
    whole = None if keyframe is None else Keyframe.of(played.after, keyframe)
    moved = MovedNeeds.of(changes.need_deltas, changes.needs, changes.moved_columns)
    return RoundFile(
        round=played.round,
        events=played.events,
        actions=played.actions,
        emotion_changes=changes.emotions,
        packed=PackedEdges.of_changes(changes),
        moved=moved,
        need_deltas=changes.need_deltas if moved is None else {},
        needs=changes.needs if moved is None else {},
        theta=changes.theta,
        llm_calls=played.llm_calls,
        usage=played.usage,
        metrics=metrics,
        keyframe=whole,
    )


class RoundSummary(_Model):
    """What a run keeps of every round without reading it: its metrics and LLM usage."""

    round: int
    metrics: Metrics
    usage: RoundUsage | None = None


class IndexEntry(RoundSummary):
    """One line of a run's index: a round's summary and its file's size and CRC-32 (to
    flag damage without reading it), and whether it holds a keyframe. On disk a line ends
    in ``"check"``, the CRC-32 of the line before it (engine/saves/runfiles.py; lines written
    before save format 4 have none)."""

    size: Annotated[int, Field(ge=0)]
    crc: Annotated[int, Field(ge=0, lt=1 << 32)]
    keyframe: bool
