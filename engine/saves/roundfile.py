"""Save format 3: a round file holds what the round changed, and now and then the state.

A round file is the round's log (events, actions, LLM exchanges, usage), the changes it
applied as absolute new values (each changed edge's favorability and status, the memory
entry it added and the entries it evicted; each moved need's current value; each agent's
emotion; new theta values) and the round's App. D metrics. Round 0, every
:data:`KEYFRAME_EVERY`-th round and a branch's fork round also hold the whole state (a
keyframe) with the repair counter the metrics go on from. A round's state is the nearest
keyframe at or before it with the later rounds' changes applied; applying stores the very
floats the simulation held, so the rebuilt state equals the played one exactly.

States are shared copy-on-write: applying a round copies the dicts it changes and builds
new objects only for changed edges, needs and agents; everything else is the previous
state's (states are never changed in place).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..core.exchanges import LLMCall, RoundUsage
from ..core.metrics import Metrics, RepairCounter
from ..core.scenario import Status
from ..core.state import (
    Action,
    AgentState,
    EmotionChange,
    MemoryEntry,
    NeedState,
    Relation,
    RelationChange,
    RoundLog,
    RoundRecord,
    ScenarioEvent,
    WorldState,
)
from ..core.unvalidated import trusted

#: A keyframe every this many rounds: rebuilding a round reads at most this many files
#: (see docs/formats.md, Keyframes, for the measured trade-off).
KEYFRAME_EVERY = 10

Fav = Annotated[float, Field(ge=-1.0, le=1.0)]
Importance = Annotated[int, Field(ge=1, le=10)]
NeedValue = Annotated[float, Field(ge=0.0, le=10.0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RelationColumns(_Model):
    """A round's relation changes column by column: the fields of
    :class:`~engine.core.state.RelationChange` plus ``evicted``, the rounds of the memory
    entries each change evicted (its own round if the new entry was dropped at once).
    Thousands of rows a round parse far faster as columns than as objects."""

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

    def changes(self) -> list[RelationChange]:
        """The rows as :class:`RelationChange` objects."""
        return [
            _relation_change(
                {
                    "source": source,
                    "target": target,
                    "delta": delta,
                    "fav": fav,
                    "status": status,
                    "previous_status": previous,
                    "override": override,
                    "summary": summary,
                    "importance": importance,
                },
            )
            for source, target, delta, fav, status, previous, override, summary, importance in zip(
                self.source,
                self.target,
                self.delta,
                self.fav,
                self.status,
                self.previous_status,
                self.override,
                self.summary,
                self.importance,
                strict=True,
            )
        ]


class RepairMarks(_Model):
    """The repair counter at a keyframe, by name: ``fell[i]`` the agents j whose edge
    i -> j deteriorated so far, ``never_friendly[i]`` those i regarded as rival or enemy
    at every state so far (agents without either are left out)."""

    fell: dict[str, list[str]] = {}
    never_friendly: dict[str, list[str]] = {}

    @classmethod
    def of(cls, counter: RepairCounter, names: list[str]) -> RepairMarks:
        everyone = (1 << len(names)) - 1
        never = [everyone & ~(1 << i) & ~m for i, m in enumerate(counter.was_friendly)]
        return cls(fell=_named(counter.fell, names), never_friendly=_named(never, names))

    def counter(self, names: list[str]) -> RepairCounter:
        """The counter these marks were taken from (agents in ``names`` order)."""
        everyone = (1 << len(names)) - 1
        never = _masks(self.never_friendly, names)
        friendly = [everyone & ~(1 << i) & ~m for i, m in enumerate(never)]
        return RepairCounter(len(names), _masks(self.fell, names), friendly)


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
    """The whole state after a round, and the repair counter then (None in a format-2
    round, whose run is counted from round 0)."""

    state: WorldState
    repair: RepairMarks | None = None


class RoundFile(_Model):
    """One round as saved: its log, the changes it applied, its metrics, and, in a
    keyframe round, the state after it."""

    round: int
    events: list[ScenarioEvent] = []
    actions: list[Action] = []
    emotion_changes: list[EmotionChange] = []
    relations: RelationColumns = RelationColumns()
    need_deltas: dict[str, dict[str, float]] = {}
    #: The current value of each need a round moved, per agent.
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
            relations=_columns(record.relation_changes, [[] for _ in record.relation_changes]),
            need_deltas=record.need_deltas,
            llm_calls=record.llm_calls,
            usage=record.usage,
            keyframe=Keyframe(state=record.state),
        )

    def log(self) -> RoundLog:
        """What happened in the round, without the state."""
        return _round_log(self._log_fields())

    def record(self, state: WorldState) -> RoundRecord:
        """The round's record with ``state``, the state after it."""
        return _round_record({**self._log_fields(), "state": state})

    def _log_fields(self) -> dict[str, object]:
        return {
            "round": self.round,
            "events": self.events,
            "actions": self.actions,
            "emotion_changes": self.emotion_changes,
            "relation_changes": self.relations.changes(),
            "need_deltas": self.need_deltas,
            "llm_calls": self.llm_calls,
            "usage": self.usage,
        }

    def apply(self, before: WorldState) -> WorldState:
        """The state after this round, given the state ``before`` it (a keyframe's own
        state needs none)."""
        if self.keyframe is not None:
            return self.keyframe.state
        t, cols = self.round, self.relations
        agents = dict(before.agents)
        relations: dict[str, dict[str, Relation]] = {}
        rows = zip(
            cols.source, cols.target, cols.fav, cols.status, cols.summary, cols.importance,
            cols.evicted, strict=True,
        )  # fmt: skip
        for source, target, fav, status, summary, importance, gone in rows:
            rels = relations.get(source)
            if rels is None:
                rels = relations[source] = dict(agents[source].relations)
            old = rels[target].memory
            memory = [e for e in old if e.round not in gone] if gone else [*old]
            if t not in gone:
                memory.append(
                    _memory_entry({"round": t, "summary": summary, "importance": importance})
                )
            rels[target] = _relation({"fav": fav, "status": status, "memory": memory})
        emotions = {c.agent: c.emotion for c in self.emotion_changes}
        for name in dict.fromkeys([*emotions, *relations, *self.needs, *self.theta]):
            old_agent = agents[name]
            needs = old_agent.needs
            if name in self.needs:
                needs = dict(needs)
                for need, current in self.needs[name].items():
                    expected = needs[need].expected
                    needs[need] = _need_state({"current": current, "expected": expected})
            agents[name] = _agent_state(
                {
                    "emotion": emotions.get(name, old_agent.emotion),
                    "needs": needs,
                    "relations": relations.get(name, old_agent.relations),
                    "theta": self.theta.get(name, old_agent.theta),
                },
            )
        return _world_state({"round": t, "agents": agents})


def round_file(
    before: WorldState,
    record: RoundRecord,
    metrics: Metrics,
    keyframe: RepairMarks | None = None,
) -> RoundFile:
    """The file of ``record`` (a round played from the state ``before``): its changes as
    absolute values, and the whole state too when ``keyframe`` (the repair marks after
    the round) is given."""
    after = record.state
    evicted = []
    for c in record.relation_changes:
        kept = {e.round for e in after.agents[c.source].relations[c.target].memory}
        old = before.agents[c.source].relations[c.target].memory
        gone = [e.round for e in old if e.round not in kept]
        evicted.append(gone if record.round in kept else [*gone, record.round])
    needs = {
        name: {need: after.agents[name].needs[need].current for need in moved}
        for name, moved in record.need_deltas.items()
        if moved
    }
    theta = {
        name: agent.theta
        for name, agent in after.agents.items()
        if agent.theta != before.agents[name].theta
    }
    return _round_file(
        {
            "round": record.round,
            "events": record.events,
            "actions": record.actions,
            "emotion_changes": record.emotion_changes,
            "relations": _columns(record.relation_changes, evicted),
            "need_deltas": record.need_deltas,
            "needs": needs,
            "theta": theta,
            "llm_calls": record.llm_calls,
            "usage": record.usage,
            "metrics": metrics,
            "keyframe": None
            if keyframe is None
            else _keyframe({"state": after, "repair": keyframe}),
            "run": None,
        },
    )


def _columns(changes: list[RelationChange], evicted: list[list[int]]) -> RelationColumns:
    return _relation_columns(
        {
            "source": [c.source for c in changes],
            "target": [c.target for c in changes],
            "delta": [c.delta for c in changes],
            "fav": [c.fav for c in changes],
            "status": [c.status for c in changes],
            "previous_status": [c.previous_status for c in changes],
            "override": [c.override for c in changes],
            "summary": [c.summary for c in changes],
            "importance": [c.importance for c in changes],
            "evicted": evicted,
        },
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


# Builders of models from values this module has (or the validated round file held).
_memory_entry = trusted(MemoryEntry)
_relation = trusted(Relation)
_need_state = trusted(NeedState)
_agent_state = trusted(AgentState)
_world_state = trusted(WorldState)
_relation_change = trusted(RelationChange)
_round_log = trusted(RoundLog)
_round_record = trusted(RoundRecord)
_relation_columns = trusted(RelationColumns)
_keyframe = trusted(Keyframe)
_round_file = trusted(RoundFile)
