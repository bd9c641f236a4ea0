"""Offline judgements of U_S and the needs by rule, and what U_R (:mod:`.edges`) reads of an
agent's standing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...core.needs import NEED_MAX
from ...core.rules import ReadAct
from ...core.state import Mode, Stance
from ..base import AgentContext
from .event_effects import event_mood, event_needs
from .lens import TRUST_WEIGHT, PriorLens
from .params import (
    ADDRESSED_SUPPORT,
    ATTACKED_NEEDS,
    ATTACKING_NEEDS,
    BACKED_NEEDS,
    CONFIDED_SUPPORT,
    DIRECT_MOOD,
    FRIEND_AT,
    FRIEND_FEELING,
    MOOD_MEANING,
    MOOD_PULL,
    MOOD_REST,
    MOOD_STABILITY,
    MOOD_WELLBEING,
    OVERHEARD_ATTACK,
    OWN_ACT_MOOD,
    PUBLIC_SHAME,
    QUARREL_SAFETY,
    RECOVERY,
    SILENT_NEEDS,
    SPEAKING_NEEDS,
    TEMPER,
)

#: The need changes of each kind of act, as pairs (weighed by the credit a Trust prior gives
#: the speaker where it says so).
_SPEAKING = tuple(SPEAKING_NEEDS.items())
_ATTACKING = tuple(ATTACKING_NEEDS.items())
_ATTACKED = tuple(ATTACKED_NEEDS.items())
_BACKED = tuple(BACKED_NEEDS.items())
_SILENT = tuple(SILENT_NEEDS.items())

VERB: dict[Stance, str] = {"support": "backed", "oppose": "challenged", "neutral": "spoke with"}


@dataclass(frozen=True)
class Standing:
    """Where an agent stands in its scenario when it judges: the members of other factions,
    whether it is a broker (outside every faction of a factional scenario: it takes no side
    in others' quarrels), and the factual claims it has not yet heard (``news``)."""

    outgroup: frozenset[str] = frozenset()
    broker: bool = False
    news: tuple[str, ...] = ()


def need_deltas(
    ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens, mood: float | None = None
) -> dict[str, float]:
    """Need deltas from being attacked, supported, heard or silent, plus slow recovery;
    ``mood`` is :func:`emotion_delta` of the same arguments when the caller has it."""
    me = ctx.name
    needs = ctx.view.needs
    deltas = dict.fromkeys(needs, 0.0)
    for need, change in event_needs(ctx).items():  # what happens to (or around) the agent
        deltas[need] += change
    spoke, quarrels = False, 0.0  # quarrels: attacks among others, by credit given
    trusting = bool(lens.trust)
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        weight = lens.weight(speaker) if trusting else 1.0
        if speaker == me:
            spoke = True
            for need, change in _SPEAKING:
                deltas[need] += change
            if stance == "oppose":
                for need, change in _ATTACKING:
                    deltas[need] += change
        elif target != me:
            if stance == "oppose":
                quarrels += weight
        elif stance == "oppose":
            for need, change in _ATTACKED:
                deltas[need] += weight * change
        elif stance == "support":
            for need, change in _BACKED:
                deltas[need] += weight * change
        else:
            support = CONFIDED_SUPPORT if mode is Mode.PRIVATE else ADDRESSED_SUPPORT
            deltas["support_system"] += weight * support
    deltas["emotional_safety"] -= QUARREL_SAFETY * quarrels
    if not spoke:
        for need, change in _SILENT:
            deltas[need] += change
    if mood is None:
        mood = emotion_delta(ctx, observed, lens)
    deltas["emotional_wellbeing"] += MOOD_WELLBEING * mood
    deltas["emotional_stability"] += -MOOD_STABILITY * abs(mood)
    deltas["sense_of_meaning"] += MOOD_MEANING * mood
    resilience = needs["psychological_resilience"].current / NEED_MAX
    for need, value in needs.items():
        deltas[need] += RECOVERY * resilience * (value.expected - value.current)
    return {n: round(d, 4) for n, d in deltas.items() if d}  # seldom seen before: no table


def emotion_delta(ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens) -> float:
    """The rule behind U_S; the needs judge reuses it for affect-linked needs. A trusted
    peer's acts weigh more, a distrusted peer's less (Trust priors)."""
    me = ctx.name
    _, _, thin, responsive = TEMPER[ctx.persona.archetype]
    view = ctx.view
    favs, index = view.favs(), view.index
    delta = event_mood(ctx)
    trust, public = lens.trust, Mode.PUBLIC
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        if speaker == me:
            delta += -OWN_ACT_MOOD if stance == "oppose" else OWN_ACT_MOOD
            continue
        if target == me:
            if stance == "neutral":
                continue
            felt = DIRECT_MOOD * responsive if stance == "support" else -DIRECT_MOOD * thin
            if stance == "oppose" and mode is public:
                felt *= PUBLIC_SHAME
        elif target in index and favs[index[target]] >= FRIEND_AT:
            felt = FRIEND_FEELING[stance]
        elif stance == "oppose":
            felt = -OVERHEARD_ATTACK
        else:
            continue
        delta += felt * (1.0 + TRUST_WEIGHT * trust.get(speaker, 0)) if trust else felt
    delta += (MOOD_REST - view.emotion) * MOOD_PULL
    return round(delta, 4)
