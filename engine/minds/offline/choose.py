"""Offline decisions: the weighted candidate acts behind an agent's choice, where balance,
repair and escalation act on what it does."""

from __future__ import annotations

from ...scenario import Archetype
from ...state import ALL, Action, Mode, Stance
from ..base import AgentContext
from .lens import ATTITUDE_WARMTH, INFLUENCE_PULL, PriorLens
from .params import (
    CALM_AGGRESSION,
    ESCALATION,
    FLIP,
    FOE_AT,
    FRIEND_AT,
    HEIDER_PULL,
    NEGATIVE,
    OUTGROUP,
    PEACE,
    REPAIR_PULL,
    SIGN,
    TEMPER,
)

Option = tuple[float, Stance, str, Mode]


def candidates(
    ctx: AgentContext,
    lens: PriorLens,
    outgroup: frozenset[str],
    last: list[Action],
    attackers: set[str],
    broker: bool = False,
) -> list[Option]:
    """Weighted candidate actions: support friends, oppose foes, address the group, take
    sides in others' quarrels (balance), reach out to rivals (repair), follow or counter
    an influential peer's lead (Influence prior)."""
    me, arch = ctx.name, ctx.persona.archetype
    aggression, warmth, _, _ = TEMPER[arch]
    rels = ctx.state.relations
    spoken = [a for a in last if a.order and a.speaker != me]
    climate = _hostility(spoken)
    aggression *= CALM_AGGRESSION + ESCALATION * climate
    calm = min(1.0, 2.0 * ctx.state.emotion)
    peace = REPAIR_PULL * PEACE[arch] * calm * (1.0 - climate)
    supporters = {a.speaker for a in last if a.target == me and a.stance == "support"}
    hit = {a.target: a.speaker for a in last if a.stance == "oppose" and a.target != me}
    hit_friends = {
        who for victim, who in hit.items() if victim in rels and rels[victim].fav >= FRIEND_AT
    }
    # Heider: what my friends did to others last round is what I lean to do.
    sides: dict[str, float] = {}
    for a in spoken:
        friend = rels[a.speaker].fav
        if friend >= FRIEND_AT and a.target in rels and a.stance != "neutral":
            sides[a.target] = sides.get(a.target, 0.0) + friend * SIGN[a.stance]
    mediate: set[str] = set()
    if broker:  # a third party outside every faction takes no side and backs both parties
        quarrels = [a for a in spoken if a.stance == "oppose"]
        mediate = {a.speaker for a in quarrels} | {a.target for a in quarrels if a.target}
        mediate &= rels.keys()
        sides, hit_friends = {}, set()
    analytic = 1.6 if arch is Archetype.ANALYTICAL else 1.0
    options: list[tuple[float, Stance, str, Mode]] = [(analytic, "neutral", ALL, Mode.PUBLIC)]
    attitude, confides = lens.attitude, bool(ctx.persona.private_info or ctx.persona.evidence)
    mode = Mode.PRIVATE if arch is Archetype.RESERVED else Mode.PUBLIC
    # the agents some act or prior singles out: the rest take only the terms of their
    # favorability, status and faction (one test instead of seven, for most relations)
    singled = {*attackers, *hit_friends, *supporters, *hit, *mediate, *sides, *attitude}
    for other, rel in rels.items():
        fav = rel.fav
        hostile = (FOE_AT + 0.15 - fav) * 4.0 if fav < FOE_AT + 0.15 else 0.0
        friendly = (fav - 0.1) * 3.0 if fav > 0.1 else 0.0
        single = other in singled
        if single:
            if other in attackers:
                hostile += 2.0
            if other in hit_friends:
                hostile += 1.5
            if other in supporters:
                friendly += 1.5
            if other in hit and fav >= FRIEND_AT:
                friendly += 1.0
            if other in mediate:
                friendly += REPAIR_PULL * PEACE[arch] * calm
        bias = OUTGROUP if other in outgroup else 0.0
        if rel.status in NEGATIVE:
            friendly += peace * (1.0 - bias)  # reaching out to a rival: the seed of repair
        if single:  # lean (Heider), then warmth (Attitude prior): + friendly, - hostile
            if other in sides:
                pull = HEIDER_PULL * sides[other]
                if pull > 0:
                    friendly += pull
                elif pull < 0:
                    hostile -= pull
            if other in attitude:
                pull = ATTITUDE_WARMTH * attitude[other]
                if pull > 0:
                    friendly += pull
                elif pull < 0:
                    hostile -= pull
        if hostile > 0:
            options.append((hostile * aggression * (1.0 + bias), "oppose", other, mode))
        if friendly > 0:
            options.append((friendly * warmth, "support", other, Mode.PUBLIC))
            if confides and fav >= 0.4:
                options.append((0.5 * friendly, "neutral", other, Mode.PRIVATE))
    if lens.influence:
        options += _follow_options(me, spoken, lens.influence)
    return options


def _hostility(spoken: list[Action]) -> float:
    """The climate: the share of attacks among the spoken acts an agent saw last round (0
    when none); the judges count this round's the same way."""
    return [a.stance for a in spoken].count("oppose") / len(spoken) if spoken else 0.0


def _follow_options(
    me: str, spoken: list[Action], influence: dict[str, int]
) -> list[tuple[float, Stance, str, Mode]]:
    """Influence priors: options that follow (s = +1) or counter (s = -1) each influential
    peer's last act; a proposal to the group is backed or challenged in the peer's person."""
    options: list[tuple[float, Stance, str, Mode]] = []
    for a in spoken:
        s = influence.get(a.speaker, 0)
        if not s or a.target == me or a.target is None:
            continue
        stance: Stance
        if a.target == ALL or a.stance == "neutral":
            stance, target = ("support" if s > 0 else "oppose"), a.speaker
        else:
            stance, target = (a.stance if s > 0 else FLIP[a.stance]), a.target
        options.append((INFLUENCE_PULL, stance, target, Mode.PUBLIC))
    return options


def intent(stance: Stance, target: str, mode: Mode) -> str:
    """The decision's intent in words."""
    if target == ALL:
        return "press my case to the whole group"
    if mode is Mode.PRIVATE and stance == "neutral":
        return f"confide in {target} privately"
    how = "publicly" if mode is Mode.PUBLIC else "privately"
    return {
        "support": f"back {target} {how}",
        "oppose": f"challenge {target} {how}",
        "neutral": f"speak with {target} {how}",
    }[stance]
