"""The offline model's parameters: archetype tables and the strengths of its mechanisms."""

from __future__ import annotations

from ...core.scenario import Archetype, Status
from ...core.state import Stance

BASE_URGENCY = {
    Archetype.DOMINANT: 7.0,
    Archetype.ANALYTICAL: 5.0,
    Archetype.BALANCED: 5.0,
    Archetype.AGREEABLE: 4.2,
    Archetype.RESERVED: 2.6,
}
SILENCE_BELOW = 3.5
#: (aggression, warmth, thin skin, responsiveness to support) per archetype.
TEMPER = {
    Archetype.DOMINANT: (1.6, 0.6, 0.7, 0.7),
    Archetype.ANALYTICAL: (0.8, 0.7, 0.9, 0.8),
    Archetype.BALANCED: (1.0, 1.0, 1.0, 1.0),
    Archetype.AGREEABLE: (0.4, 1.5, 1.2, 1.3),
    Archetype.RESERVED: (0.5, 0.8, 1.4, 0.9),
}
FRIEND_AT = 0.25
FOE_AT = -0.2
NEGATIVE = (Status.RIVAL, Status.ENEMY)
#: Readiness to reach out to a rival or enemy, by archetype (peacemakers first).
PEACE = {
    Archetype.AGREEABLE: 1.0,
    Archetype.BALANCED: 0.8,
    Archetype.ANALYTICAL: 0.5,
    Archetype.RESERVED: 0.4,
    Archetype.DOMINANT: 0.3,
}
#: Option weight of reaching out to a rival at full readiness, calm, no hostility seen.
REPAIR_PULL = 3.0
#: Favorability gained on top of the act when a relation is reconciled, and the level a
#: reconciled relation rises to when the round's clip allows (above the rival threshold).
RECONCILE = 0.15
PEACE_AT = -0.05
#: Support from a rival makes peace when it lifts the relation above this favorability.
PEACE_FROM = -0.3
#: Aggression scales with last round's share of attacks: CALM_AGGRESSION + ESCALATION x
#: share (half in a calm room, two and a half times in one where everyone attacks).
ESCALATION = 2.0
CALM_AGGRESSION = 0.5
#: Heider: favorability change per unit of credence in a peer's stance on a third agent.
HEIDER = 0.08
#: Favorability lost toward an attacker per unit of favorability toward the one attacked.
FRIEND_HURT = 0.15
#: Heider in decisions: weight of joining a friend's attack or backing whom it backed.
HEIDER_PULL = 1.2
#: A rival's grudge fades by this much a round the rival does not attack (times the
#: archetype's PEACE and the calm of the room); once above the rival threshold it is settled.
FORGIVE = 0.25
#: In-group favoritism (Krackhardt & Stern): toward another faction's members attacks are
#: likelier (1 + OUTGROUP)x and reaching out rarer (1 - OUTGROUP)x.
OUTGROUP = 0.4
#: Regard gained by whoever tells me a factual claim (a scenario's evidence) I did not know.
INFORM = 0.05
FLIP: dict[Stance, Stance] = {"support": "oppose", "oppose": "support", "neutral": "neutral"}
SIGN = {"support": 1, "oppose": -1, "neutral": 0}
