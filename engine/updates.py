"""Applying one round's judgements to an agent's state (Sociodrama Sec. 3.3 updates)."""

from __future__ import annotations

from dataclasses import dataclass

from .minds.base import RelationJudgement
from .rules import apply_emotion, apply_fav, apply_need, next_status, remember
from .state import (
    AgentState,
    EmotionChange,
    MemoryEntry,
    NeedState,
    Relation,
    RelationChange,
)
from .trusted import trusted

_memory = trusted(MemoryEntry)
_relation = trusted(Relation)
_change = trusted(RelationChange)
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


def update_agent(
    name: str,
    old: AgentState,
    round_no: int,
    memory_size: int,
    emotion_delta: float,
    judged: dict[str, RelationJudgement],
    need_deltas: dict[str, float],
    theta: float | None = None,
) -> AgentUpdate:
    """Clip and apply U_S, U_R (with App. B status and memory eviction) and need deltas.

    Deltas recorded are the real movement after clipping. ``old`` is left untouched. The
    new models are built from the clipped values without validating them again (every
    mind's deltas are finite floats and its judgements validated).
    """
    _, emotion = apply_emotion(old.emotion, emotion_delta)
    before = old.relations
    relations = dict(before)
    changes: list[RelationChange] = []
    memory_, relation_, change_ = _memory, _relation, _change  # locals: this is per edge
    for other, j in judged.items():
        rel = before[other]
        was, override, summary, importance = rel.fav, j.status, j.summary, j.importance
        _, fav = apply_fav(was, j.delta)
        status = next_status(fav, rel.status, override)
        entry = memory_({"round": round_no, "summary": summary, "importance": importance})
        memory = remember(rel.memory, entry, memory_size)
        relations[other] = relation_({"fav": fav, "status": status, "memory": memory})
        changes.append(
            change_(
                {
                    "source": name,
                    "target": other,
                    "delta": round(fav - was, 6),
                    "fav": fav,
                    "status": status,
                    "previous_status": rel.status,
                    "override": override,
                    "summary": summary,
                    "importance": importance,
                },
            )
        )
    needs = dict(old.needs)
    moved: dict[str, float] = {}
    for need, change in need_deltas.items():
        value = needs.get(need)
        if value is None:
            continue
        current = apply_need(value.current, change)
        if current != value.current:
            moved[need] = round(current - value.current, 4)
            needs[need] = _need({"current": current, "expected": value.expected})
    state = {
        "emotion": emotion,
        "needs": needs,
        "relations": relations,
        "theta": old.theta if theta is None else theta,
    }
    return AgentUpdate(
        state=_agent(state),
        emotion=_emotion(
            {"agent": name, "delta": round(emotion - old.emotion, 6), "emotion": emotion},
        ),
        relations=changes,
        needs=moved,
    )
