"""Offline utterances: the agent's talking points and evidence in its archetype's voice."""

from __future__ import annotations

import random

from ...core.scenario import Archetype
from ...core.state import ALL, Decision, Mode, Stance
from ..base import AgentContext

#: Chance that a speaker with unshared evidence (task facts) voices it rather than a
#: talking point: analysts pool information, dominant and agreeable agents echo the
#: common view (Sociodrama Sec. 1: information holders stay silent, dominant voices anchor).
SHARES_EVIDENCE = {
    Archetype.ANALYTICAL: 0.9,
    Archetype.BALANCED: 0.5,
    Archetype.RESERVED: 0.6,
    Archetype.AGREEABLE: 0.15,
    Archetype.DOMINANT: 0.1,
}


TEMPLATES: dict[Archetype, dict[Stance, str]] = {
    Archetype.DOMINANT: {
        "support": "{t} is right, and I'll back that all the way: {p}.",
        "oppose": "{t}, that is simply wrong. {P}, and everyone here knows it.",
        "neutral": "Let me be clear: {p}. We settle this now.",
    },
    Archetype.ANALYTICAL: {
        "support": "{t}'s point holds up. Look at it closely: {p}.",
        "oppose": "{t}, the facts don't support you. Consider this: {p}.",
        "neutral": "Let's look at what we actually know: {p}.",
    },
    Archetype.AGREEABLE: {
        "support": "I'm with {t} on this. And {p}, if that helps all of us.",
        "oppose": "{t}, I understand where you're coming from, but I can't agree. {P}.",
        "neutral": "Maybe we can find common ground here: {p}.",
    },
    Archetype.RESERVED: {
        "support": "...I agree with {t}. {P}.",
        "oppose": "I don't think that's fair, {t}. {P}.",
        "neutral": "If I may... {p}.",
    },
    Archetype.BALANCED: {
        "support": "{t} makes a fair point, and {p}.",
        "oppose": "{t}, I see it differently: {p}.",
        "neutral": "Here is where I stand: {p}.",
    },
}
CONFIDE = "Between you and me, {t}: {p}."


def utterance(ctx: AgentContext, decision: Decision, rng: random.Random, said: str) -> str:
    """What the agent says: a confidence in private, else a point in its archetype's voice,
    prefixed by a retort to whoever attacked it this round. ``said``: everything the agent
    itself said earlier, lower case, to avoid repeating a point."""
    target = decision.target if decision.target not in (None, ALL) else "everyone"
    if decision.mode is Mode.PRIVATE and decision.stance == "neutral":
        secrets = ctx.persona.private_info + ctx.persona.evidence
        point = _pick(rng, secrets, said) or _point(ctx, rng, said)
        text = CONFIDE.format(t=target, p=point.rstrip(". "))
    else:
        point = _point(ctx, rng, said).rstrip(". ")
        template = TEMPLATES[ctx.persona.archetype][decision.stance]
        text = template.format(t=target, p=point, P=point[:1].upper() + point[1:])
    me, addressed = ctx.name, decision.target
    jab = next(
        (
            a.speaker
            for a in reversed(ctx.heard)
            if a.target == me and a.stance == "oppose" and a.speaker != addressed
        ),
        None,
    )
    if jab and decision.mode is Mode.PUBLIC:
        text = f"({jab}, I heard that.) " + text
    return text


def plain(text: str) -> str:
    """A point as utterances are searched for it: lower case, no trailing stop."""
    return text.rstrip(". ").lower()


def _pick(rng: random.Random, points: list[str], said: str) -> str | None:
    fresh = [p for p in points if p.rstrip(". ").lower() not in said]
    pool = fresh or points
    return rng.choice(pool) if pool else None


def _point(ctx: AgentContext, rng: random.Random, said: str) -> str:
    """A talking point; evidence holders share unsaid evidence as their archetype allows."""
    persona = ctx.persona
    share = SHARES_EVIDENCE[persona.archetype]
    fresh = [e for e in persona.evidence if e.rstrip(". ").lower() not in said]
    if fresh and rng.random() < share:
        return rng.choice(fresh)
    return (
        _pick(rng, persona.talking_points, said)
        or persona.goal.rstrip(".")
        or f"as the {persona.role}, I have a stake in how this ends"
    )
