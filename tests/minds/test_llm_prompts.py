"""What the LLM prompts say: earlier rounds in the order they were spoken, no blank memory
summaries, and every range stated in words equal to the output schema's bounds (which are
what the engine applies)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from engine import OfflineMind, Simulation, load_library
from engine.core.columns import AgentView
from engine.core.needs import NEEDS
from engine.core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA, relation_triggers
from engine.core.state import ALL, Action, MemoryEntry, Mode
from engine.llm.settings import LLMSettings
from engine.minds import prompts
from engine.minds.base import AgentContext, PastRound
from engine.minds.llm import (
    EmotionOut,
    LLMMind,
    NeedsOut,
    RelationOut,
    _decision_schema,
    _observer_schema,
    _plan_schema,
)


def context() -> AgentContext:
    return Simulation.new(load_library("tavern")).contexts(2, [])[load_library("tavern").names[0]]


def said(speaker: str, order: int | None, text: str) -> Action:
    return Action(
        speaker=speaker, urgency=5, mode=Mode.PUBLIC, target=ALL, utterance=text, order=order
    )


def test_earlier_rounds_are_told_in_the_order_they_were_spoken() -> None:
    ctx = context()
    a, b, c = ctx.others[:3]
    # A round record lists actions in scenario order; c spoke first, a last, b kept silent.
    actions = [
        said(a, 3, "third"),
        Action(speaker=b, urgency=0, mode=Mode.SILENT),
        said(c, 1, "first"),
        said(ctx.name, 2, "second"),
    ]
    ctx = replace(ctx, history=[PastRound(round=1, events=[], actions=actions)])
    user = prompts.decide(ctx)[1]["content"]
    told = re.findall(r"^  \S+: (first|second|third)$", user, flags=re.MULTILINE)
    assert told == ["first", "second", "third"]
    assert f"{b} stayed silent" not in user


def test_empty_memory_summaries_are_left_out() -> None:
    """A judgement that fell back leaves an entry without words: the prompts leave it out,
    and it does not hide an older memory that has words."""
    ctx = context()
    a, b = ctx.others[:2]
    relations = dict(ctx.state.relations)
    relations[a] = relations[a].model_copy(
        update={"memory": [MemoryEntry(round=1, summary="", importance=2)]}
    )
    relations[b] = relations[b].model_copy(
        update={
            "memory": [
                MemoryEntry(round=1, summary="", importance=2),
                MemoryEntry(round=1, summary="She paid the debt.", importance=5),
                *(MemoryEntry(round=r, summary="", importance=2) for r in (2, 3, 4)),
            ]
        }
    )
    world = ctx.view.columns.world()
    agent = ctx.state.model_copy(update={"relations": relations})
    world = world.model_copy(update={"agents": {**world.agents, ctx.name: agent}})
    ctx = replace(ctx, view=AgentView.of(world, ctx.name))
    user = prompts.decide(ctx)[1]["content"]
    assert re.search(rf"^- {a}: fav \S+, \w+\. no memories yet$", user, flags=re.MULTILINE)
    assert re.search(rf"- {b}: .*\. She paid the debt\.$", user, flags=re.MULTILINE)
    assert "; ;" not in user and ". ;" not in user
    heard = [said(a, 1, "Hello."), said(b, 2, "Hi.")]
    triggers = relation_triggers(ctx.name, heard, ctx.scenario.names)
    judge = prompts.observer(replace(ctx, heard=heard), heard, triggers)[1]["content"]
    assert re.search(rf"Toward {a}: .*\nThree most recent memories:\n  none\n", judge)
    assert "  round 1: She paid the debt. (importance 5)" in judge
    assert ":  (importance" not in judge


def bounds(schema: dict[str, Any]) -> tuple[float, float]:
    """(minimum, maximum) of a number field, through an optional null."""
    for option in [schema, *schema.get("anyOf", [])]:
        if "minimum" in option:
            return option["minimum"], option["maximum"]
    raise AssertionError(schema)


def stated(text: str, what: str) -> tuple[float, float]:
    """The range stated for ``what``: 'between LO and HI' or '(LO to HI)'."""
    number = r"(-?\d+(?:\.\d+)?)"
    found = re.search(rf"{what}.*?(?:between {number} and {number}|\({number} to {number}\))", text)
    assert found, (what, text)
    low, high = (g for g in found.groups() if g is not None)
    return float(low), float(high)


def test_stated_ranges_match_the_schemas_and_the_rules() -> None:
    ctx = context()
    heard = [said(o, i, "Hello.") for i, o in enumerate(ctx.others, 1)]
    triggers = relation_triggers(ctx.name, heard, ctx.scenario.names)
    emotion = bounds(EmotionOut.model_json_schema()["properties"]["delta"])
    fav = bounds(RelationOut.model_json_schema()["properties"]["delta_fav"])
    need = bounds(NeedsOut.model_json_schema()["properties"][NEEDS[0]])
    assert emotion == (-MAX_EMOTION_DELTA, MAX_EMOTION_DELTA)
    assert fav == (-MAX_FAV_DELTA, MAX_FAV_DELTA)
    assert need == (-prompts.NEED_DELTA_CAP, prompts.NEED_DELTA_CAP)

    def whole(messages: list[dict[str, str]]) -> str:  # the rules are in the system text
        return "\n".join(m["content"] for m in messages)

    assert stated(whole(prompts.emotion(ctx, heard)), "delta") == emotion
    other = ctx.others[0]
    assert stated(whole(prompts.relation(ctx, other, heard[:1])), "delta_fav") == fav
    assert stated(whole(prompts.needs(ctx, heard)), "signed change") == need
    assert stated(whole(prompts.plan(ctx, 3)), "change") == need

    batched = whole(prompts.observer(replace(ctx, heard=heard), heard, triggers))
    observer = _observer_schema(tuple(triggers)).model_json_schema()
    assert stated(batched, "delta:") == bounds(observer["properties"]["delta"]) == emotion
    assert stated(batched, "delta_fav") == fav
    assert stated(batched, "needs: the signed change") == need
    plan = _plan_schema(tuple(ctx.others)).model_json_schema()["$defs"]["NeedsOut"]
    assert bounds(plan["properties"][NEEDS[0]]) == need


@pytest.mark.parametrize(
    ("mind", "modes"),
    [
        (lambda: OfflineMind(0), {}),
        (lambda: LLMMind(LLMSettings(model="openai/a", api_base="http://127.0.0.1:9/v1")), None),
    ],
)
def test_minds_report_their_structured_modes(mind: Any, modes: dict | None) -> None:
    expected = {"openai/a": "auto"} if modes is None else modes
    assert mind().structured_modes() == expected


def test_an_utterance_reciting_the_prompts_state_lines_echoes_it() -> None:
    """Gemma 3 270M on a real server spoke its prompt's state lines back, reworded around
    them ("Your emotional state S = 0.48 (0 = neutral, ...)"): an echo. Lines about what
    happened, or the agent's memories, are the story: repeating them is speech."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    other = ctx.others[0]
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    recited = (
        f"Your emotional state S = {ctx.state.emotion:.2f} "
        f"(0 = neutral, 0 = very negative, 1 = very positive). Your relationship with your "
        f"boss: - {other}: fav {ctx.state.relations[other].fav:+.2f}, neutral."
    )
    flaw = check(recited)
    assert flaw is not None and flaw.kind == "echo"
    flaw = check(f"What you have seen: None yet. {recited}")  # (opened by its context's label)
    assert flaw is not None and flaw.kind == "debris"
    assert check("The will reads badly for all of us, and I say we keep the bar open.") is None
    assert check(f"{other}, I have no memories yet of you being fair to me.") is None


def test_an_utterance_reciting_the_scenario_is_an_echo() -> None:
    """Gemma 3 270M on llama-server spoke its system text as its words ("Scenario: Tavern
    inheritance dispute. Bram Holloway ran The Crooked Lantern, …"): an echo. A phrase of
    the scenario in a character's own sentence is speech."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    recital = f"Listen. {ctx.scenario.description}"  # its label gone: debris otherwise
    flaw = check(recital)
    assert flaw is not None and flaw.kind == "echo" and "recites its prompt" in flaw.note
    phrase = " ".join(ctx.scenario.description.split()[:8])
    assert check(f"As everyone knows, {phrase}, and I will not pretend otherwise.") is None


def test_an_utterance_reciting_an_event_it_was_told_is_an_echo() -> None:
    """Gemma 3 270M's Grace (class-election, round 2) spoke the round's rules as her words
    ("…10:35, classroom. Rules here: every student in 7C casts one secret ballot at the end
    of the last round; …"): the events of the round and of the rounds the agent remembers
    are recited like its system text. A phrase of one in its own sentence is speech."""
    from engine.core.state import Decision, ScenarioEvent
    from engine.minds.checks import speech

    told = ScenarioEvent(
        text="Silas reads the will in the closed taproom: the building goes to "
        "Edmund and Nell in equal shares, and Greta may live upstairs for life."
    )
    earlier = ScenarioEvent(
        text="The brewer calls in the tavern's debt of four hundred pounds "
        "before the end of the month, in writing, to all the heirs."
    )
    ctx = replace(context(), events=[told], history=[PastRound(1, [earlier], [])])
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    for event in (told, earlier):
        flaw = check(f"Listen. {event.text}")
        assert flaw is not None and flaw.kind == "echo" and "recites its prompt" in flaw.note
    assert check("The will reads that the building goes to Edmund and Nell, and I say no.") is None


def test_an_utterance_saying_back_what_a_re_ask_adds_echoes_it() -> None:
    """Gemma 3 270M's Silas (tavern), asked again, said "I do this to my brother, in
    character. Reply with new words of your own", and it was taken: what a re-ask adds to
    the task is the prompt's too. Speech that happens to share a word or two is not."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    flaw = check("I do this to my brother, in character. Reply with new words of your own")
    assert flaw is not None and flaw.kind == "echo" and "new words of your own" in flaw.note
    flaw = check("Listen. A reply to this was not usable, so we vote again.")
    assert flaw is not None and flaw.kind == "echo"
    assert check("I want new words in the will, not the old ones.") is None


def test_an_utterance_telling_back_its_json_field_s_description_echoes_it() -> None:
    """Gemma 3 270M's Elena, asked for "say: the words Elena says aloud now, in
    character.", said "She says the words I said, in my own way."; asked for plain text,
    whose prompt describes no field, the same words are a line."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    line = "She says the words I said, in my own way."
    flaw = speech(ctx, decision, "say")(line)
    assert flaw is not None and flaw.kind == "echo" and "'says the words'" in flaw.note
    assert speech(ctx, decision)(line) is None


def test_a_cut_off_line_is_mended_only_to_sentences_that_pass_every_check() -> None:
    """A line cut off after whole sentences is mended to them, unless they recite the
    prompt: the mend is checked as the line is, recital included."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    said = "We keep the bar open and we pay the brewer first. Then we talk about the rooms,"
    flaw = check(said)
    assert flaw is not None and flaw.kind == "unfinished"
    assert flaw.mended == "We keep the bar open and we pay the brewer first."
    recital = f"Listen. {ctx.scenario.description.rstrip('.')}. And then we see,"
    flaw = check(recital)
    assert flaw is not None and flaw.kind == "unfinished" and flaw.mended is None


def test_an_utterance_that_greets_its_own_speaker_is_degenerate() -> None:
    """Gemma 3 270M's Callum greeted himself ("Hello, Callum!"): the check of speech
    knows the speaker, and the others present by name."""
    from engine.core.state import Decision
    from engine.minds.checks import speech

    ctx = context()
    other = ctx.others[0]
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="")
    check = speech(ctx, decision)
    flaw = check(f"Hello, {ctx.name}! The will says the tavern stays in the family.")
    assert flaw is not None and flaw.kind == "self" and ctx.name in flaw.note
    assert check(f"Hello, {other}! The will says the tavern stays in the family.") is None
    flaw = check("My name is Lili, and I am new in this town.")
    assert flaw is not None and flaw.kind == "self" and "names you as another" in flaw.note
    assert check(f"My name is {ctx.name}, and the tavern is my family's.") is None
    # a line of another's name alone (Gemma's Nadia said "Leo") is not words
    flaw = check(f"{other}.")
    assert flaw is not None and flaw.kind == "wordless" and "only a name" in flaw.note


def _whole(messages: list[dict[str, str]]) -> str:
    return "".join(f"<{m['role']}>\n{m['content']}\n" for m in messages)


def test_an_agents_calls_of_a_round_share_their_whole_context_and_end_in_their_rules() -> None:
    """A server's prefix cache reuses the longest prefix it holds: an agent's words repeat
    its decision's prompt of the round up to the turns said before them, and its plan shares
    that context too; the rules and task come last, after the relational block closed the
    system prompt."""
    from engine.core.state import Decision
    from engine.llm.prefix import common_prefix

    ctx = context()
    other = ctx.others[0]
    ctx = replace(ctx, history=[PastRound(round=1, events=[], actions=[said(other, 1, "Hi.")])])
    decide = _whole(prompts.decide(ctx))
    heard = replace(ctx, heard=[said(ctx.others[1], 1, "Drinks are on me.")])
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target=ALL, stance="neutral", intent="x")
    speak = _whole(prompts.speak(heard, decision))
    context_end = decide.index("No new event this round.") + len("No new event this round.")
    assert common_prefix(decide, speak) >= context_end  # system, history, state, this round
    assert common_prefix(decide, _whole(prompts.plan(ctx, 3))) >= context_end
    task = "Decide now: nobody has spoken yet this round."
    assert decide.endswith(f"{prompts.DECIDE_RULES}\n\n{task}\n")
    assert prompts.SPEAK_RULES in speak[speak.index("Said so far this round:") :]
    assert prompts.DECIDE_RULES not in prompts.decide(ctx)[0]["content"]


async def test_in_a_played_round_an_agents_words_repeat_its_decisions_prompt() -> None:
    """Through a server (its decision structured, its words free text): the words' prompt
    repeats the decision's whole prompt up to the decision's rules, the JSON instruction
    included nowhere before them."""
    from llm_stub import StubLLM

    from engine import resolve_scenario
    from engine.llm.prefix import common_prefix, prompt_text
    from engine.llm.transport import close_clients

    with StubLLM(seed=3) as stub:
        llm = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5, retries=1)
        sim = Simulation.new(resolve_scenario("tavern"), seed=1, mind=llm)
        try:
            records = [await sim.step(), await sim.step()]
        finally:
            await close_clients()
    checked = 0
    for record in records:
        calls = {c.key: c for c in record.llm_calls}
        for key, words in calls.items():
            decided = calls.get(key.replace(":speak:", ":decide:"))
            if words.purpose != "speak" or decided is None:
                continue
            decision = prompt_text(decided)
            shared = common_prefix(decision, prompt_text(words))
            assert shared >= decision.index(f"\n\n{prompts.DECIDE_RULES}")
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("intent", ["", "  "])
def test_a_decision_without_an_intent_leaves_no_bare_intent_label(intent: str) -> None:
    """Gemma 3 270M often decides without an intent: the speech task then says what was
    decided and ends there, with no "your intent:" left open for the model to fill."""
    from engine.core.state import Decision

    ctx = context()
    to = ctx.others[0]
    bare = Decision(urgency=5, mode=Mode.PRIVATE, target=to, stance="oppose", intent=intent)
    task = _whole(prompts.speak(ctx, bare))
    assert f"You decided to speak privately to {to} (oppose).\nSay it now." in task
    assert "your intent" not in task
    meant = bare.model_copy(update={"intent": "make them listen"})
    task = _whole(prompts.speak(ctx, meant))
    assert f"to {to} (oppose); your intent: make them listen\nSay it now." in task


@pytest.mark.parametrize(
    ("mode", "intent", "flawed"),
    [
        ("private", "stay silent", True),  # Gemma 3 270M's Marco, urgency 10 (gossip)
        ("public", "I will remain quiet and listen.", True),
        ("private", "ask her to stay quiet about the wallet", False),  # speech about silence
        ("silent", "stay silent", False),  # what it does
    ],
)
def test_a_decision_to_speak_meaning_to_keep_silent_is_taken_as_silence(
    mode: str, intent: str, flawed: bool
) -> None:
    """A decision that speaks with an intent that is, all of it, keeping silent contradicts
    itself: it is taken as silence (asked again first), as its intent says."""
    from engine.minds.checks import decision

    ctx = context()
    other = ctx.others[0]
    action = {"mode": mode} if mode == "silent" else {"mode": mode, "target": other}
    schema = _decision_schema(tuple(ctx.others))
    out = schema.model_validate({"urgency": 10, "action": action, "intent": intent})
    flaw = decision(ctx.scenario.names)(out)
    if not flawed:
        assert flaw is None
        return
    assert flaw is not None and flaw.kind == "contradicts" and "keeps silent" in flaw.note
    assert flaw.mending == "kept silent, as its intent says"
    mended = flaw.mended
    assert (mended.intent, mended.action.mode, mended.action.target) == (intent, "silent", None)
    assert type(mended) is schema and decision(ctx.scenario.names)(mended) is None


def test_a_plans_flawed_intents_are_left_out_not_the_plan() -> None:
    """Gemma 3 270M's planners wrote ":{" as an intent, and the whole plan fell back: the
    plan is mended to its candidates without the flawed intents, the others kept."""
    from engine.minds.checks import plan

    ctx = context()
    schema = _plan_schema(tuple(ctx.others))
    other = ctx.others[0]
    out = schema.model_validate(
        {
            "candidates": [
                {"urgency": 4, "action": {"mode": "public", "target": "all"}, "intent": ":{"},
                {
                    "urgency": 6,
                    "action": {"mode": "private", "target": other},
                    "intent": "win her over before the vote",
                },
            ]
        }
    )
    flaw = plan(2, ctx.scenario.names)(out)
    assert flaw is not None and flaw.kind == "wordless" and flaw.mending == "the intent left out"
    mended = flaw.mended
    assert [c.intent for c in mended.candidates] == ["", "win her over before the vote"]
    assert [c.urgency for c in mended.candidates] == [4, 6]
    assert plan(2, ctx.scenario.names)(mended) is None


def test_a_plans_candidate_that_speaks_meaning_to_keep_silent_is_silent() -> None:
    """Gemma 3 270M's planners offered candidates that speak privately with the intent
    "stay silent" (19 of 284 plans in 67 saved runs), and one chosen spoke: such a candidate
    is mended to silence, the others as they were."""
    from engine.minds.checks import plan

    ctx = context()
    schema = _plan_schema(tuple(ctx.others))
    other = ctx.others[0]
    aside = {"mode": "private", "target": other}
    out = schema.model_validate(
        {
            "candidates": [
                {"urgency": 6, "action": aside, "intent": "win her over before the vote"},
                {"urgency": 9, "action": aside, "intent": "stay silent"},
                {"urgency": 2, "action": {"mode": "silent"}, "intent": "stay quiet"},
            ]
        }
    )
    flaw = plan(3, ctx.scenario.names)(out)
    assert flaw is not None and flaw.kind == "contradicts"
    said = "candidate 2: its intent 'stay silent' keeps silent, but it speaks (private)"
    assert flaw.note == said
    mended = flaw.mended
    assert [(c.action.mode, c.action.target) for c in mended.candidates] == [
        ("private", other),
        ("silent", None),
        ("silent", None),
    ]
    assert [(c.urgency, c.intent) for c in mended.candidates] == [
        (c.urgency, c.intent) for c in out.candidates
    ]
    assert type(mended) is schema and plan(3, ctx.scenario.names)(mended) is None
