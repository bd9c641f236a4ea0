"""Prompts following Sociodrama Sec. 3.3: context assembly, two-phase actions, U_S and U_R.

Prompts carry no marker of their purpose: the model sees only the simulation (a call's
record names its purpose).

Prompts are ordered for a server's prefix cache (llama.cpp, vLLM and SGLang reuse the
computation of the longest prefix they have seen): what never changes within a run comes
first, then what grows in order, then what changes every call; each part renders
byte-stable. An agent's own calls (deciding, planning, speaking) share one head: the system
text (scenario, persona, who is present, the relational block closing it), then the history,
the agent's state and this round; only then the purpose's rules and the task. So an agent's
words repeat its decision's whole prompt of the round but for the turns said before them,
and its next round's calls repeat the history. The judge's calls about a character share
their system text (the judge, the scenario, the character), and each purpose's fixed rules
close it: a batched judge's prompt repeats the round before's up to what the round changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.needs import NEED_CATEGORIES, need_label
from ..core.priors import render
from ..core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA
from ..core.scenario import Archetype
from ..core.state import ALL, Action, Decision, MemoryEntry, Mode, ScenarioEvent
from ..core.values import describe
from ..llm.parsing import NEW_WORDS, NOT_USABLE
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


def _recent(memory: Sequence[MemoryEntry], count: int = 3) -> list[MemoryEntry]:
    """An edge's ``count`` latest memories that say something (a judgement that fell back
    leaves an entry without words: it does not hide the ones before it)."""
    return [m for m in memory if m.summary][-count:]


def _state(ctx: AgentContext, memories: bool = True) -> str:
    """The agent's state as its prompt tells it (``memories`` False: every relation's
    memories as the placeholder, the form alone)."""
    lines = [
        f"Your emotional state S = {ctx.state.emotion:.2f} "
        "(0 = very negative, 0.5 = neutral, 1 = very positive)."
    ]
    lines.append("Your relationships (favorability from -1 to 1, status, recent memories):")
    for other, rel in ctx.state.relations.items():
        said = memories and "; ".join(m.summary for m in _recent(rel.memory))
        memory = said or "no memories yet"
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


def system(ctx: AgentContext) -> str:
    """An agent's system text: the scenario, its persona, who else is there and the
    relational block."""
    s = ctx.scenario
    text = (
        f"Scenario: {s.title}. {s.description}\n\n{_persona(ctx)}\n"
        f"Others present: {', '.join(ctx.others)}."
    )
    # Relational priors Sec. 3.3: the relational block closes the agent's system prompt.
    block = render(ctx.prior, ctx.name) if ctx.prior is not None else None
    return f"{text}\n\n{block}" if block else text


def _context(ctx: AgentContext) -> str:
    return f"What you have seen:\n{_history(ctx)}\n\n{_state(ctx)}\n\nNow:\n{_now(ctx)}"


def ask(ctx: AgentContext, task: str, rules: str = "") -> Messages:
    """An agent's system prompt and assembled context, the same for each of its calls of a
    round (but for the turns said before it), followed by ``rules`` (the purpose's
    instructions, if any) and ``task`` (what this call asks)."""
    asked = f"{rules}\n\n{task}" if rules else task
    return [
        {"role": "system", "content": system(ctx)},
        {"role": "user", "content": f"{_context(ctx)}\n\n{asked}"},
    ]


DECIDE_RULES = (
    "Phase 1: decide whether and how you will speak this round, before anyone speaks.\n"
    "urgency: 0-10, how pressing it is for you to speak. mode: public (everyone hears), "
    "private (only the target hears) or silent. target: one agent's name, 'all' (public "
    "only), or null when silent. stance toward the target: support, oppose or neutral. "
    "intent: one sentence."
)


def decide(ctx: AgentContext) -> Messages:
    """Phase 1: urgency, mode, target, stance and intent, before anyone speaks."""
    return ask(ctx, "Decide now: nobody has spoken yet this round.", DECIDE_RULES)


def plan_rules(n: int) -> str:
    """The planner's instructions, for ``n`` candidates."""
    return (
        f"Plan your next move. Propose {n} different candidate actions for this round (one may "
        "be staying silent). For each give urgency 0-10, the action (mode and target), your "
        "stance toward the target, a one-sentence intent, and how each of your needs would "
        f"change ({NEED_RANGE}) if you did it and saw its likely consequence; omit unchanged "
        "needs."
    )


def plan(ctx: AgentContext, n: int) -> Messages:
    """Value-driven planner (EduMirror App. E.2): candidates with imagined need changes."""
    return ask(ctx, "Plan now.", plan_rules(n))


SPEAK_RULES = (
    "Phase 2: say what you decided to say, in one to three sentences, in character. "
    "Reply with the spoken words only: no name prefix, no quotes, no stage directions."
)


def _speak_task(
    ctx: AgentContext, decision: Decision, field: str | None, intent: str | None
) -> str:
    """The speech task; ``intent`` None (the decision gave none) leaves its label out, so no
    bare "your intent:" is left for a small model to fill."""
    to = "everyone" if decision.target in (None, ALL) else decision.target
    task = f"You decided to speak {decision.mode.value}ly to {to} ({decision.stance})"
    task += ".\nSay it now." if intent is None else f"; your intent: {intent}\nSay it now."
    if field:
        task += f"\n\n{field}: the words {ctx.name} says aloud now, in character."
    return task


def speak(ctx: AgentContext, decision: Decision, field: str | None = None) -> Messages:
    """Phase 2: the utterance, in character, seeing the turns before it; asked as the JSON
    ``field`` when given."""
    intent = decision.intent if decision.intent.strip() else None
    return ask(ctx, _speak_task(ctx, decision, field, intent), SPEAK_RULES)


def speak_instructions(ctx: AgentContext, decision: Decision, field: str | None = None) -> str:
    """The speech prompt's own words: its rules and task (without the agent's intent), the
    form of its state lines (not the memories in them, nor what was said or happened) and
    what a re-ask adds: an utterance repeating a long run of them echoes the prompt."""
    task, state = _speak_task(ctx, decision, field, ""), _state(ctx, False)
    return f"{SPEAK_RULES}\n{task}\n{state}\n{NOT_USABLE}.\n{NEW_WORDS}"


def _judge_system(ctx: AgentContext, rules: str) -> str:
    """The judge's system text about ``ctx``'s character: the same for every call of a
    purpose about that character, so a server's prefix cache can reuse it."""
    p, s = ctx.persona, ctx.scenario
    return (
        "You are the impartial judge of a social simulation. "
        "You estimate how events change one character's inner state, conditioned on "
        "that character's traits. Be proportionate: most events move states a little.\n"
        f"Scenario: {s.title}. {s.description}\n"
        f"Character: {p.name}, {p.role} ({p.archetype.value}; traits: "
        f"{', '.join(p.traits) or '-'}).\n\n{rules}"
    )


def _judged(ctx: AgentContext, rules: str, task: str) -> Messages:
    return [
        {"role": "system", "content": _judge_system(ctx, rules)},
        {"role": "user", "content": task},
    ]


def _observed(observed: list[Action], events: list[ScenarioEvent], numbered: bool = False) -> str:
    lines = [_event(e) for e in events] + [
        f"({k}) {_action(a)}" if numbered else _action(a) for k, a in enumerate(observed, 1)
    ]
    return "\n".join(lines) or "Nothing visible happened."


def emotion(ctx: AgentContext, observed: list[Action]) -> Messages:
    """U_S: a signed change of S from the agent's traits, S and visible events."""
    name = ctx.persona.name
    task = (
        f"Current emotional state S = {ctx.state.emotion:.2f} on [0, 1].\n"
        f"Events {name} saw this round:\n{_observed(observed, ctx.events)}"
    )
    rules = f"Return delta: the signed change of S, {EMOTION_RANGE}."
    return _judged(ctx, rules, task)


def _edge(
    ctx: AgentContext, other: str, acts: list[Action], seen: list[Action] | None = None
) -> str:
    """One edge's state and what triggered it; the triggers are named by their number in
    ``seen`` (the observed list the prompt already shows) when they are all in it."""
    rel = ctx.state.relations[other]
    memory = (
        "\n".join(
            f"  round {m.round}: {m.summary} (importance {m.importance})"
            for m in _recent(rel.memory)
        )
        or "  none"
    )
    if seen is not None and all(a in seen for a in acts):
        triggers = "Triggered by: " + ", ".join(f"({seen.index(a) + 1})" for a in acts)
    else:
        triggers = "Triggering events:\n" + "\n".join(f"  {_action(a)}" for a in acts)
    return (
        f"Toward {other}: fav {rel.fav:+.2f}, status {rel.status.value}.\n"
        f"Three most recent memories:\n{memory}\n{triggers}"
    )


RELATION_RULES = (
    f"Return delta_fav {FAV_RANGE}; status only if the event is consequential "
    "enough to change the relationship by itself (a betrayal, an alliance, a reconciliation), "
    "else null; a one-sentence summary from the character's point of view; importance 1-10."
)


def relation(ctx: AgentContext, other: str, acts: list[Action]) -> Messages:
    """U_R for one edge (App. B): delta fav, optional status, summary, importance."""
    return _judged(ctx, RELATION_RULES, _edge(ctx, other, acts))


def observer(
    ctx: AgentContext, observed: list[Action], triggers: dict[str, list[Action]]
) -> Messages:
    """Batched judge: one call per observer for U_S, U_R of every triggered edge, and needs."""
    parts = [
        f"Current emotional state S = {ctx.state.emotion:.2f} on [0, 1].",
        f"Events {ctx.persona.name} saw this round:\n{_observed(observed, ctx.events, True)}",
    ]
    if triggers:
        edges = "\n\n".join(_edge(ctx, other, acts, observed) for other, acts in triggers.items())
        parts.append(f"{edges}\n\n{_judgements(triggers)}")
    parts.append(_needs_now(ctx))
    return _judged(ctx, f"{OBSERVER_RULES}\n\n{_needs_wanted(ctx)}", "\n\n".join(parts))


OBSERVER_RULES = (
    f"delta: the signed change of S, {EMOTION_RANGE}.\n"
    f"judgements: one for each character named below, toward whom: {RELATION_RULES}\n"
    f"needs: the signed change ({NEED_RANGE}) of each need this round moved; omit the rest."
)


def _judgements(triggers: dict[str, list[Action]]) -> str:
    return f"judgements: exactly one for each of {', '.join(triggers)}."


def missing_edges(ctx: AgentContext, triggers: dict[str, list[Action]]) -> Messages:
    """Batched judge's re-ask for the edges its reply left out."""
    edges = "\n\n".join(_edge(ctx, other, acts) for other, acts in triggers.items())
    rules = f"{OBSERVER_RULES}\n\n{_needs_wanted(ctx)}"
    return _judged(ctx, rules, f"{edges}\n\n{_judgements(triggers)}")


def _needs_wanted(ctx: AgentContext) -> str:
    """The character's 13 needs and what it expects of each (0-10): fixed for a run."""
    rows = [
        f"- {n} ({category}, {need_label(n)}): expects {ctx.state.needs[n].expected:.1f}"
        for category, names in NEED_CATEGORIES.items()
        for n in names
    ]
    return "Psychological needs (0-10):\n" + "\n".join(rows)


def _needs_now(ctx: AgentContext) -> str:
    """Where each need stands now."""
    rows = [f"{n} {v.current:.1f} ({describe(v.current)})" for n, v in ctx.state.needs.items()]
    return "Needs now: " + "; ".join(rows) + "."


def needs(ctx: AgentContext, observed: list[Action]) -> Messages:
    """Need update: which of the 13 needs the round moved, and by how much."""
    task = (
        f"{_needs_now(ctx)}\n\n"
        f"Events {ctx.persona.name} saw this round:\n{_observed(observed, ctx.events)}"
    )
    rules = (
        f"{_needs_wanted(ctx)}\n\n"
        f"Return the signed change ({NEED_RANGE}) of each need this round moved; omit the rest."
    )
    return _judged(ctx, rules, task)
