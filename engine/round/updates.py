"""Applying one round's judgements to an agent's state (Sociodrama Sec. 3.3 updates)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.rounding import ROUNDED_4, ROUNDED_6
from ..core.rules import (
    ALLY_AT,
    ENEMY_AT,
    MAX_FAV_DELTA,
    RIVAL_AT,
    apply_emotion,
    apply_need,
    remember,
)
from ..core.scenario import Status
from ..core.state import (
    AgentState,
    EmotionChange,
    MemoryEntry,
    NeedState,
    Relation,
    RelationChange,
)
from ..core.unvalidated import SET_DICT, SET_EXTRA, SET_FIELDS, SET_PRIVATE, fields_set, trusted
from ..minds.base import Edge
from .retention import Retention

_need = trusted(NeedState)
_agent = trusted(AgentState)
_emotion = trusted(EmotionChange)


@dataclass(frozen=True, slots=True)
class AgentUpdate:
    """An agent's new state and the changes that produced it."""

    state: AgentState
    emotion: EmotionChange
    relations: list[RelationChange]
    needs: dict[str, float]


@dataclass(frozen=True, slots=True)
class RelationUpdate:
    """An agent's outgoing relations after U_R, and the changes that made them."""

    relations: dict[str, Relation]
    changes: list[RelationChange]


def update_agent(
    name: str,
    old: AgentState,
    emotion_delta: float,
    relations: RelationUpdate,
    need_deltas: dict[str, float],
    theta: float | None = None,
) -> AgentUpdate:
    """Clip and apply U_S and need deltas, with the agent's U_R already applied
    (:func:`update_relations`).

    Deltas recorded are the real movement after clipping. ``old`` is left untouched. The
    new models are built from the clipped values without validating them again (every
    mind's deltas are finite floats).
    """
    _, emotion = apply_emotion(old.emotion, emotion_delta)
    needs = dict(old.needs)
    moved: dict[str, float] = {}
    for need, change in need_deltas.items():
        value = needs.get(need)
        if value is None:
            continue
        current = apply_need(value.current, change)
        if current != value.current:
            moved[need] = ROUNDED_4[current - value.current]
            needs[need] = _need({"current": current, "expected": value.expected})
    state = {
        "emotion": emotion,
        "needs": needs,
        "relations": relations.relations,
        "theta": old.theta if theta is None else theta,
    }
    return AgentUpdate(
        state=_agent(state),
        emotion=_emotion(
            {"agent": name, "delta": round(emotion - old.emotion, 6), "emotion": emotion},
        ),
        relations=relations.changes,
        needs=moved,
    )


def update_relations(
    name: str,
    old: AgentState,
    round_no: int,
    memory_size: int,
    judged: dict[str, Edge],
    retention: Retention | None = None,
    entries: dict[tuple[str, int], MemoryEntry] | None = None,
    victims: Sequence[int] | None = None,
) -> RelationUpdate:
    """Clip and apply U_R to each judged edge: :func:`~engine.core.rules.apply_fav`, then
    :func:`~engine.core.rules.next_status` and :func:`~engine.core.rules.remember`, written out (this
    is the round's hottest loop: once per judged edge). ``old`` is left untouched; the
    models are built without validating them again (every mind's judgements are
    validated). ``retention``, the memory keys of the state ``old`` is part of, finds the
    entries to evict (and is updated); without it each edge's memory is read. ``entries``,
    the round's memory entries by summary and importance, are shared by every edge that
    remembers the same (and added to). ``victims`` are what :meth:`Retention.evict` gave
    for these edges (the round's edges are evicted at once); without them they are found
    here.
    """
    before = old.relations
    relations = dict(before)
    # What trusted() builders do, inlined: a call per model costs a fifth of the edge.
    new = object.__new__
    set_dict, set_fields, set_extra, set_private = SET_DICT, SET_FIELDS, SET_EXTRA, SET_PRIVATE
    if entries is None:
        entries = {}
    memory_set, relation_set, change_set = (
        fields_set(MemoryEntry),
        fields_set(Relation),
        fields_set(RelationChange),
    )
    high, ally, enemy, rival = MAX_FAV_DELTA, Status.ALLY, Status.ENEMY, Status.RIVAL
    rounded6 = ROUNDED_6  # round(x, 6), remembered
    if retention is None:
        found: Sequence[int | None] = [None] * len(judged)
    else:
        me = retention.index[name]
        if victims is None:
            added = [edge[3] + round_no for edge in judged.values()]
            victims = retention.evict([(name, list(judged), added)])[0]
        found = victims
    changes: list[RelationChange] = []
    append = changes.append
    for (other, (delta, override, summary, importance)), victim in zip(
        judged.items(), found, strict=True
    ):
        rel = before[other]
        was, previous = rel.fav, rel.status
        fav = was + (-high if delta < -high else high if delta > high else delta)
        fav = -1.0 if fav < -1.0 else 1.0 if fav > 1.0 else fav
        if override is not None:
            status = override
        elif fav >= ALLY_AT:
            status = ally
        elif fav <= ENEMY_AT:
            status = enemy
        elif fav <= RIVAL_AT:
            status = rival
        else:
            status = previous
        entry = entries.get((summary, importance))
        if entry is None:
            entry = entries[summary, importance] = new(MemoryEntry)
            set_dict(entry, {"round": round_no, "summary": summary, "importance": importance})
            set_fields(entry, memory_set)
            set_extra(entry, None)
            set_private(entry, None)
        memory = rel.memory
        size = len(memory)
        if victim is not None and victim < 0 and size < memory_size:  # room: no eviction
            memory = [*memory, entry]
        elif victim is not None and victim >= 0 and size == memory_size:
            memory = [*memory]
            if victim < size:
                del memory[victim]
                memory.append(entry)
        else:  # no keys, or more entries than the capacity: read the entries
            memory = remember(memory, entry, memory_size)
            if retention is not None:
                retention.set(me, retention.index[other], memory)
        relation = relations[other] = new(Relation)
        set_dict(relation, {"fav": fav, "status": status, "memory": memory})
        set_fields(relation, relation_set)
        set_extra(relation, None)
        set_private(relation, None)
        moved = fav - was
        change = new(RelationChange)
        set_dict(
            change,
            {
                "source": name,
                "target": other,
                "delta": rounded6[moved] if moved else moved,  # most edges do not move
                "fav": fav,
                "status": status,
                "previous_status": previous,
                "override": override,
                "summary": summary,
                "importance": importance,
            },
        )
        set_fields(change, change_set)
        set_extra(change, None)
        set_private(change, None)
        append(change)
    return RelationUpdate(relations, changes)
