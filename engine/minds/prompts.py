"""Prompts following Sociodrama Sec. 3.3: context assembly, two-phase actions, U_S and U_R.

Each system message starts with a ``[socialsim:<purpose>]`` tag so a transcript of calls
(or a test stub) can tell the requests apart.
"""

from __future__ import annotations

from ..core.needs import NEED_CATEGORIES, need_label
from ..core.priors import render
from ..core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA
from ..core.scenario import Archetype
from ..core.state import ALL, Action, Decision, Mode, ScenarioEvent
from ..core.values import describe
from .base import AgentContext

ARCHETYPE_STYLE = {
    Archetype.BALANCED: "You weigh both sides, speak when you have something to add, and "
    "keep the discussion fair.",
    Archetype.DOMINANT: "You speak early and forcefully, steer the group toward your view, "
    "and push back hard when challenged.",
    Archetype.ANALYTICAL: "You reason from evidence, share facts and numbers, and question "
    "claims that are not supported.",
    Archetype.AGREEABLE: "You seek harmony, support others, and avoid open confrontation.",
    Archetype.RESERVED: "You speak rarely and briefly, mostly when directly concerned, and "
    "withdraw when you feel dismissed.",
}
Messages = list[dict[str, str]]
#: The largest need change a judge may state in a round (the needs schema's bound).
NEED_DELTA_CAP = 2.0
#: The ranges the prompts state are the output schemas' bounds, which are what the engine
#: applies (the rules clip emotion and favorability changes to these).
EMOTION_RANGE = f"between {-MAX_EMOTION_DELTA:g} and {MAX_EMOTION_DELTA:g}"
FAV_RANGE = f"between {-MAX_FAV_DELTA:g} and {MAX_FAV_DELTA:g}"
NEED_RANGE = f"{-NEED_DELTA_CAP:g} to {NEED_DELTA_CAP:g}"


def _persona(ctx: AgentContext) -> str:
    p = ctx.persona
    lines = [
        f"You are {p.name}, {p.role}.",
        f"Traits: {', '.join(p.traits) or 'not specified'}.",
        f"Style ({p.archetype.value}): {ARCHETYPE_STYLE[p.archetype]}",
    ]
    if p.boundary:
        lines.append(f"Boundary (never cross it): {p.boundary}")
    if p.goal:
        lines.append(f"Goal: {p.goal}")
    if p.private_info:
        lines.append("What only you know: " + " ".join(p.private_info))
    if p.talking_points:
        lines.append("Points you care about: " + "; ".join(p.talking_points))
    return "\n".join(lines)


def _state(ctx: AgentContext) -> str:
    lines = [
        f"Your emotional state S = {ctx.state.emotion:.2f} "
        "(0 = very negative, 0.5 = neutral, 1 = very positive)."
    ]
    lines.append("Your relationships (favorability from -1 to 1, status, recent memories):")
    for other, rel in ctx.state.relations.items():
        memory = "; ".join(m.summary for m in rel.memory[-3:] if m.summary) or "no memories yet"
        lines.append(f"- {other}: fav {rel.fav:+.2f}, {rel.status.value}. {memory}")
    if ctx.persona.kind == "value-driven":  # EduMirror: needs described in words (App. E.1)
        lines.append(f"Your social value orientation: {ctx.persona.svo}. Your needs now:")
        lines += [
            f"- {n.replace('_', ' ')}: {describe(v.current)} ({v.current:.1f} of "
            f"{v.expected:.1f} wanted)"
            for n, v in ctx.state.needs.items()
        ]
    return "\n".join(lines)


def _event(e: ScenarioEvent) -> str:
    return f"[event{' (private to you)' if e.private_to else ''}] {e.text}"


def _action(a: Action) -> str:
    if a.mode is Mode.SILENT:
        return f"{a.speaker} stayed silent."
    if a.mode is Mode.PRIVATE:
        return f"{a.speaker} (privately to {a.target}): {a.utterance}"
    to = "" if a.target in (None, ALL) else f" (to {a.target})"
    return f"{a.speaker}{to}: {a.utterance}"


def _history(ctx: AgentContext) -> str:
    lines = []
    for past in ctx.history:
        lines.append(f"Round {past.round}:")
        lines += [f"  {_event(e)}" for e in past.events]
        said = [a for a in past.actions if a.mode is not Mode.SILENT]
        said.sort(key=lambda a: (a.order is None, a.order or 0))  # in the order they were said
        lines += [f"  {_action(a)}" for a in said]
    return "\n".join(lines) or "Nothing has happened yet."


def _now(ctx: AgentContext) -> str:
    lines = [f"Round {ctx.round} of {ctx.rounds}."]
    lines += [_event(e) for e in ctx.events] or ["No new event this round."]
    if ctx.heard:
        lines.append("Said so far this round:")
        lines += [f"  {_action(a)}" for a in ctx.heard]
    return "\n".join(lines)


def _system(ctx: AgentContext, purpose: str) -> str:
    s = ctx.scenario
    text = f"[socialsim:{purpose}]\nScenario: {s.title}. {s.description}\n\n{_persona(ctx)}"
    # Relational priors Sec. 3.3: the relational block closes the agent's system prompt.
    block = render(ctx.prior, ctx.name) if ctx.prior is not None else None
    return f"{text}\n\n{block}" if block else text


def _context(ctx: AgentContext) -> str:
    return (
        f"{_state(ctx)}\n\nWhat you have seen:\n{_history(ctx)}\n\nNow:\n{_now(ctx)}\n\n"
        f"Others present: {', '.join(ctx.others)}."
    )


def ask(ctx: AgentContext, purpose: str, task: str) -> Messages:
    """An agent's system prompt and assembled context, followed by ``task``."""
    return [
        {"role": "system", "content": _system(ctx, purpose)},
        {"role": "user", "content": f"{_context(ctx)}\n\n{task}"},
    ]


def decide(ctx: AgentContext) -> Messages:
    """Phase 1: urgency, mode, target, stance and intent, before anyone speaks."""
    task = (
        "Phase 1: decide whether and how you will speak this round. Nobody has spoken yet.\n"
        "urgency: 0-10, how pressing it is for you to speak. mode: public (everyone hears), "
        "private (only the target hears) or silent. target: one agent's name, 'all' (public "
        "only), or null when silent. stance toward the target: support, oppose or neutral. "
        "intent: one sentence."
    )
    return ask(ctx, "decide", task)


def plan(ctx: AgentContext, n: int) -> Messages:
    """Value-driven planner (EduMirror App. E.2): candidates with imagined need changes."""
    task = (
        f"Plan your next move. Propose {n} different candidate actions for this round (one may "
        "be staying silent). For each give urgency 0-10, the action (mode and target), your "
        "stance toward the target, a one-sentence intent, and how each of your needs would "
        f"change ({NEED_RANGE}) if you did it and saw its likely consequence; omit unchanged "
        "needs."
    )
    return ask(ctx, "plan", task)


def speak(ctx: AgentContext, decision: Decision) -> Messages:
    """Phase 2: the utterance, in character, seeing the turns before it."""
    to = "everyone" if decision.target in (None, ALL) else decision.target
    task = (
        f"Phase 2: you decided to speak {decision.mode.value}ly to {to} "
        f"({decision.stance}); your intent: {decision.intent}\n"
        "Say it now in one to three sentences, in character. Reply with the spoken words "
        "only: no name prefix, no quotes, no stage directions."
    )
    return ask(ctx, "speak", task)


def _judge_system(purpose: str) -> str:
    return (
        f"[socialsim:{purpose}]\nYou are the impartial judge of a social simulation. "
        "You estimate how events change one character's inner state, conditioned on "
        "that character's traits. Be proportionate: most events move states a little."
    )


def _observed(observed: list[Action], events: list[ScenarioEvent]) -> str:
    lines = [_event(e) for e in events] + [_action(a) for a in observed]
    return "\n".join(lines) or "Nothing visible happened."


def emotion(ctx: AgentContext, observed: list[Action]) -> Messages:
    """U_S: a signed change of S from the agent's traits, S and visible events."""
    p = ctx.persona
    task = (
        f"Character: {p.name} ({p.archetype.value}; traits: {', '.join(p.traits) or '-'}).\n"
        f"Current emotional state S = {ctx.state.emotion:.2f} on [0, 1].\n"
        f"Events {p.name} saw this round:\n{_observed(observed, ctx.events)}\n\n"
        f"Return delta: the signed change of S, {EMOTION_RANGE}."
    )
    return [
        {"role": "system", "content": _judge_system("emotion")},
        {"role": "user", "content": task},
    ]


def _edge(ctx: AgentContext, other: str, acts: list[Action]) -> str:
    rel = ctx.state.relations[other]
    memory = (
        "\n".join(
            f"  round {m.round}: {m.summary} (importance {m.importance})"
            for m in rel.memory[-3:]
            if m.summary
        )
        or "  none"
    )
    return (
        f"Toward {other}: fav {rel.fav:+.2f}, status {rel.status.value}.\n"
        f"Three most recent memories:\n{memory}\n"
        f"Triggering events:\n" + "\n".join(f"  {_action(a)}" for a in acts)
    )


RELATION_RULES = (
    f"Return delta_fav {FAV_RANGE}; status only if the event is consequential "
    "enough to change the relationship by itself (a betrayal, an alliance, a reconciliation), "
    "else null; a one-sentence summary from the character's point of view; importance 1-10."
)


def relation(ctx: AgentContext, other: str, acts: list[Action]) -> Messages:
    """U_R for one edge (App. B): delta fav, optional status, summary, importance."""
    p = ctx.persona
    task = (
        f"Character: {p.name} ({p.archetype.value}; traits: {', '.join(p.traits) or '-'}).\n"
        f"{_edge(ctx, other, acts)}\n\n{RELATION_RULES}"
    )
    return [
        {"role": "system", "content": _judge_system("relation")},
        {"role": "user", "content": task},
    ]


def observer(
    ctx: AgentContext, observed: list[Action], triggers: dict[str, list[Action]]
) -> Messages:
    """Batched judge: one call per observer for U_S, U_R of every triggered edge, and needs."""
    p = ctx.persona
    parts = [
        f"Character: {p.name} ({p.archetype.value}; traits: {', '.join(p.traits) or '-'}).",
        f"Current emotional state S = {ctx.state.emotion:.2f} on [0, 1].",
        f"Events {p.name} saw this round:\n{_observed(observed, ctx.events)}",
        f"delta: the signed change of S, {EMOTION_RANGE}.",
    ]
    if triggers:
        edges = "\n\n".join(_edge(ctx, other, acts) for other, acts in triggers.items())
        parts.append(f"{edges}\n\n{_judgements(triggers)}")
    rows = [
        f"- {n} ({need_label(n)}): {v.current:.1f} of expected {v.expected:.1f}, "
        f"{describe(v.current)}"
        for n, v in ctx.state.needs.items()
    ]
    parts.append(
        "Psychological needs (0-10):\n" + "\n".join(rows) + "\nneeds: the signed "
        f"change ({NEED_RANGE}) of each need this round moved; omit the rest."
    )
    return [
        {"role": "system", "content": _judge_system("judge")},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _judgements(triggers: dict[str, list[Action]]) -> str:
    return f"judgements: exactly one for each of {', '.join(triggers)}: {RELATION_RULES}"


def missing_edges(ctx: AgentContext, triggers: dict[str, list[Action]]) -> Messages:
    """Batched judge's re-ask for the edges its reply left out."""
    p = ctx.persona
    edges = "\n\n".join(_edge(ctx, other, acts) for other, acts in triggers.items())
    task = (
        f"Character: {p.name} ({p.archetype.value}; traits: {', '.join(p.traits) or '-'}).\n"
        f"{edges}\n\n{_judgements(triggers)}"
    )
    return [
        {"role": "system", "content": _judge_system("judge")},
        {"role": "user", "content": task},
    ]


def needs(ctx: AgentContext, observed: list[Action]) -> Messages:
    """Need update: which of the 13 needs the round moved, and by how much."""
    p = ctx.persona
    rows = []
    for category, names in NEED_CATEGORIES.items():
        for n in names:
            v = ctx.state.needs[n]
            rows.append(
                f"- {n} ({category}, {need_label(n)}): {v.current:.1f} of expected "
                f"{v.expected:.1f}, {describe(v.current)}"
            )
    task = (
        f"Character: {p.name} ({p.archetype.value}).\nPsychological needs (0-10):\n"
        + "\n".join(rows)
        + f"\n\nEvents {p.name} saw this round:\n{_observed(observed, ctx.events)}\n\n"
        f"Return the signed change ({NEED_RANGE}) of each need this round moved; omit the rest."
    )
    return [
        {"role": "system", "content": _judge_system("needs")},
        {"role": "user", "content": task},
    ]
