"""How the offline model responds to a round's events, by their meaning
(:func:`engine.core.meaning.meaning_of`): the mood and needs of those they touch, regard for whoever
they implicate and what the touched talk about next."""

from __future__ import annotations

from ...core.meaning import EventMeaning, meaning_of
from ...core.scenario import Scenario
from ...core.state import ScenarioEvent
from ..base import AgentContext, Edge
from .params import (
    BLAME,
    BLAMED,
    BYSTANDER,
    DIFFUSE,
    EVENT_MOOD,
    NEWS,
    SALIENT,
    TONE_EMOTION,
    TONE_NEEDS,
    VALENCE_NEEDS,
)
from .per_scenario import per_scenario
from .voice import inside, voiced


def _meanings(ctx: AgentContext, events: list[ScenarioEvent]) -> list[EventMeaning]:
    names = _names(ctx.scenario)
    return [meaning_of(e, names) for e in events]


@per_scenario
def _names(scenario: Scenario) -> tuple[str, ...]:
    """The scenario's agent names (every agent reads them for each event it sees, a round's
    events several times)."""
    return tuple(scenario.names)


def _share(event: ScenarioEvent, m: EventMeaning, me: str) -> float:
    """How much of an untoned event's weight reaches the agent."""
    if me in m.touches or (not m.touches and event.source == "injected"):
        return 1.0
    return DIFFUSE


def event_mood(ctx: AgentContext) -> float:
    """U_S from the round's events the agent sees: a toned event by its tone, another by its
    valence, in full for an agent it is about and a share (:data:`BYSTANDER`,
    :data:`DIFFUSE`) for the rest (:func:`_share`)."""
    me, delta = ctx.name, 0.0
    for event, m in zip(ctx.events, _meanings(ctx, ctx.events), strict=True):
        if event.tone != "neutral":
            delta += TONE_EMOTION[event.tone] * (1.0 if me in m.touches else BYSTANDER)
        else:
            delta += EVENT_MOOD * m.valence * _share(event, m, me)
    return delta


def event_needs(ctx: AgentContext) -> dict[str, float]:
    """Need deltas from the round's events: a toned event's pattern (bystanders feel only a
    supportive or hostile climate), an untoned one's valence."""
    me, deltas = ctx.name, dict.fromkeys(ctx.view.needs, 0.0)
    for event, m in zip(ctx.events, _meanings(ctx, ctx.events), strict=True):
        if event.tone != "neutral":
            climate = event.tone in ("supportive", "hostile")
            weight = 1.0 if me in m.touches else BYSTANDER if climate else 0.0
            changes = TONE_NEEDS[event.tone]
        else:
            weight = m.valence * _share(event, m, me)
            changes = VALENCE_NEEDS
        for need, change in changes.items():
            if need in deltas:
                deltas[need] += weight * change
    return {n: d for n, d in deltas.items() if d}


def event_edges(ctx: AgentContext) -> dict[str, Edge]:
    """U_R toward whoever the round's events implicate: blame for bad news, credit for good,
    remembered with the event."""
    me = ctx.name
    edges: dict[str, Edge] = {}
    for event, m in zip(ctx.events, _meanings(ctx, ctx.events), strict=True):
        for other in m.implicates:
            if other == me or other not in ctx.view.index or not m.valence:
                continue
            delta = BLAME * m.valence * (1.0 if m.touched(me) else 0.5)
            how = "is to blame for" if m.valence < 0 else "deserves credit for"
            note = f"Round {ctx.round}: {other} {how} this: {event.text.rstrip('.')[:80]}."
            old = edges.get(other)
            delta += old[0] if old else 0.0
            edges[other] = (round(delta, 4), None, note, 6 if m.valence < 0 else 5)
    return edges


def topic(ctx: AgentContext, said: str) -> str | None:
    """What the agent says about this or last round's most salient injected event that
    touches it and that it has not yet spoken of, in its own voice; ``None`` when there is
    none (the scenario's own events are its agents' setting, not news)."""
    events = [e for e in ctx.events if e.source == "injected"]
    if ctx.history and ctx.history[-1].round == ctx.round - 1:
        events += [e for e in ctx.history[-1].events if e.source == "injected"]
    if not events:
        return None
    me = ctx.name
    best: tuple[float, str, EventMeaning] | None = None
    for event, m in zip(events, _meanings(ctx, events), strict=True):
        text = voiced(event.text, me).rstrip(". ")
        size = abs(m.valence)
        fresh = text.lower() not in said
        if m.touched(me) and size >= SALIENT and fresh and (best is None or size > best[0]):
            best = (size, text, m)
    if best is None:
        return None
    _, text, m = best
    lowered = inside(text)
    culprit = next((x for x in m.implicates if x != me), None)
    if culprit and m.valence < 0:
        return BLAMED.format(e=lowered, x=culprit)
    return NEWS[1 if m.valence > 0 else -1][ctx.round % 2].format(e=lowered)
