"""A model whose re-asks come to nothing is not asked again (engine/llm/reasks.py)."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llm_stub import StubLLM
from pydantic import BaseModel, Field

from engine.core.exchanges import LLMCall, RoundUsage
from engine.core.quality import Flaw
from engine.core.tally import Tally
from engine.llm.client import LLMClient
from engine.llm.reasks import IN_VAIN, RETRY_EVERY, Reasks
from engine.llm.settings import LLMSettings
from engine.llm.transport import LiteLLMTransport, ReplayTransport, close_clients
from engine.minds.checks import SpeechCheck

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

MESSAGES = [
    {"role": "system", "content": "[socialsim:test] You are Ann, a tavern keeper."},
    {"role": "user", "content": "Say something to the room."},
]


def test_re_asks_stop_after_some_in_vain_and_come_back_now_and_then() -> None:
    reasks = Reasks()
    for _ in range(IN_VAIN):
        assert reasks.held_back("m", "speak") == ""
        reasks.went("m", "speak", taken=False)
    held = [reasks.held_back("m", "speak") for _ in range(2 * RETRY_EVERY)]
    asked = [k for k, why in enumerate(held, 1) if not why]
    assert asked == [RETRY_EVERY, 2 * RETRY_EVERY]  # every RETRY_EVERY-th asked all the same
    assert held[0] == f"not asked again, as its last {IN_VAIN} re-asks for speak came to nothing"
    assert reasks.held_back("m", "decide") == "" and reasks.held_back("n", "speak") == ""
    reasks.went("m", "speak", taken=True)  # one re-ask taken: the purpose's re-asks are back
    assert reasks.held_back("m", "speak") == ""


def _client(url: str) -> LLMClient:
    settings = LLMSettings.model_validate({"model": "openai/stub", "api_base": url})
    return LLMClient(settings, LiteLLMTransport(settings))


def _asked(ask: Callable[[int], Any], questions: int) -> list[Any]:
    async def go() -> list[Any]:
        try:
            return [await ask(k) for k in range(questions)]
        finally:
            await close_clients()

    return asyncio.run(go())


def copied(text: str) -> Flaw:
    """Every line is flawed (as Gemma's copied lines were, asked again or not)."""
    return Flaw("copy", "it copies another's line word for word")


def test_flawed_lines_whose_re_asks_came_to_nothing_fall_back_without_a_call() -> None:
    """Three lines asked again in vain: the next three fall back at once (one call each,
    recorded as degenerate and fallen back, saying why), the one after is asked again."""
    with StubLLM(seed=2) as stub:
        client = _client(stub.url)

        def ask(k: int) -> Any:
            return client.text(
                key=f"r{k}", purpose="speak", agent="Ann", model="openai/stub",
                messages=MESSAGES, check=copied,
            )  # fmt: skip

        said = _asked(ask, IN_VAIN + RETRY_EVERY)
        calls = client.take_calls()
        sent = stub.calls
    assert said == [""] * (IN_VAIN + RETRY_EVERY)
    keys = [c.key for c in calls]
    asked_again = [f"r{k}" for k in (*range(IN_VAIN), IN_VAIN + RETRY_EVERY - 1)]
    assert keys == [k + s for k in (f"r{n}" for n in range(7)) for s in ("", ":again")
                    if s == "" or k in asked_again]  # fmt: skip
    assert sent == len(keys) == 2 * len(asked_again) + (RETRY_EVERY - 1)
    held = [c for c in calls if c.key.removesuffix(":again") not in asked_again]
    assert [(c.outcome, c.flaw, c.degenerate, c.fell_back) for c in held] == [
        ("fallback", "copy", True, True)
    ] * (RETRY_EVERY - 1)
    assert held[0].error == (
        "it copies another's line word for word; not asked again, as its last 3 re-asks for "
        "speak came to nothing"
    )
    usage = RoundUsage.of(calls, "batched")  # every reply degenerate, every question lost
    assert (usage.degenerate, usage.reasks, usage.fallbacks) == (len(calls), len(asked_again), 7)
    tally = Tally()
    tally.add(calls)
    (row,) = tally.rows()
    assert (row.degenerate, row.kinds, row.questions, row.fallen_back) == (
        len(calls), {"copy": len(calls)}, 7, 7,
    )  # fmt: skip


class NotedStub(StubLLM):
    """Every reply gives a mood with a note (which :func:`noted` finds flawed)."""

    def answer(self, body: dict[str, Any]) -> str | None:
        return '{"delta": 0.1, "note": "one sentence"}'


class Mood(BaseModel):
    delta: float = Field(ge=-0.3, le=0.3)
    note: str = ""


def noted(value: Mood) -> Flaw | None:
    """A note is always the schema's description; the mood is kept without it."""
    if not value.note:
        return None
    mended = value.model_copy(update={"note": ""})
    return Flaw("description", "the note is the schema's", mended, "the note left out")


def test_a_held_back_reply_that_can_be_mended_is_taken_mended_and_replays_so() -> None:
    """After three re-asks in vain, a flawed reply with a mend is taken mended at once
    (repaired, its record saying so); a replay of the record asks again exactly where the
    run did (the replay serves only recorded exchanges) and gives the same values."""

    def asking(client: LLMClient) -> Callable[[int], Any]:
        def ask(k: int) -> Any:
            return client.structured(
                key=f"m{k}", purpose="judge", agent="Ann", model="openai/stub",
                messages=MESSAGES, schema=Mood, default=Mood(delta=0), check=noted,
            )  # fmt: skip

        return ask

    with NotedStub(seed=5) as stub:
        client = _client(stub.url)
        live = _asked(asking(client), IN_VAIN + 2)
        calls: list[LLMCall] = client.take_calls()
        sent = stub.calls
    assert sent == 2 * IN_VAIN + 2  # three asked again, two not
    held = [c for c in calls if c.key in (f"m{IN_VAIN}", f"m{IN_VAIN + 1}")]
    assert [(c.outcome, c.flaw) for c in held] == [("repaired", "description")] * 2
    assert "the note left out, not asked again" in (held[0].error or "")
    assert live == [Mood(delta=0.1)] * (IN_VAIN + 2)
    settings = LLMSettings.model_validate({"model": "openai/stub", "api_base": "http://x"})
    replay = LLMClient(settings, ReplayTransport(calls))
    again = _asked(asking(replay), IN_VAIN + 2)
    assert again == live
    assert [(c.key, c.outcome) for c in replay.take_calls()] == [(c.key, c.outcome) for c in calls]


class CutOffStub(StubLLM):
    """Every line runs out mid-sentence after two whole ones."""

    def answer(self, body: dict[str, Any]) -> str | None:
        return "We keep the bar open. We pay the brewer first. And then the"


def test_a_replay_mends_a_line_as_its_record_did_whatever_the_checks_have_become() -> None:
    """A line cut off, asked again and cut off again, was said as its whole sentences. A
    check added since (here: "brewer" is debris) finds another flaw first and fails the
    part kept too; the replay still says the line as the run did (SpeechCheck.as_recorded),
    where it used to fall silent and diverge."""

    def then(text: str) -> Flaw | None:
        return None if text.endswith(".") else Flaw("unfinished", "it stops mid-sentence")

    def now(text: str) -> Flaw | None:
        return Flaw("debris", "brewer") if "brewer" in text else then(text)

    def asking(client: LLMClient, check: Callable[[str], Flaw | None]) -> Callable[[int], Any]:
        def ask(k: int) -> Any:
            return client.text(
                key=f"s{k}", purpose="speak", agent="Ann", model="openai/stub",
                messages=MESSAGES, check=SpeechCheck(check),
            )  # fmt: skip

        return ask

    with CutOffStub(seed=1) as stub:
        client = _client(stub.url)
        (said,) = _asked(asking(client, then), 1)
        calls = client.take_calls()
    assert said == "We keep the bar open. We pay the brewer first."
    assert [(c.key, c.outcome) for c in calls] == [("s0", "degenerate"), ("s0:again", "repaired")]
    settings = LLMSettings.model_validate({"model": "openai/stub", "api_base": "http://x"})
    replay = LLMClient(settings, ReplayTransport(calls))
    assert _asked(asking(replay, now), 1) == [said]
    assert [c.outcome for c in replay.take_calls()] == ["degenerate", "repaired"]
    flaw = SpeechCheck(now)("We keep the bar open. We pay the brewer first. And then the")
    assert flaw is not None and flaw.mended is None  # (the checks as they are: no mend)


class Parrot(StubLLM):
    """A small model: shown a reply of its own, it says that reply again; else each reply is
    a new line (asked for JSON, in the JSON a grammar would hold it to)."""

    def answer(self, body: dict[str, Any]) -> str | None:
        own = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        line = own[-1] if own else f"Line {self.calls} of mine."
        return line if own or "response_format" not in body else f'{{"say": "{line}"}}'


class Said(BaseModel):
    say: str = ""


def _first_line(value: str | Said) -> Flaw | None:
    """The first line the parrot says is a copy; any other is speech."""
    said = value if isinstance(value, str) else value.say
    return copied(said) if said.startswith("Line 1 ") or '"Line 1 ' in said else None


@pytest.mark.parametrize("structured", [False, True], ids=["text", "json"])
def test_a_flawed_reply_is_asked_again_without_it_the_task_telling_its_flaw(
    structured: bool,
) -> None:
    """A re-ask after a flawed reply sends the conversation as it was, its task ending in
    the flaw's note, and not the reply: a model that repeats what it is shown says
    something new, and that is taken."""
    with Parrot(seed=1) as stub:
        client = _client(stub.url)

        def ask(k: int) -> Any:
            if structured:
                return client.structured(
                    key="s", purpose="speak", agent="Ann", model="openai/stub",
                    messages=MESSAGES, schema=Said, default=Said(), check=_first_line,
                )  # fmt: skip
            return client.text(
                key="s", purpose="speak", agent="Ann", model="openai/stub",
                messages=MESSAGES, check=_first_line,
            )  # fmt: skip

        (said,) = _asked(ask, 1)
        calls = client.take_calls()
        first, again = stub.requests[-2:]
    assert (said if isinstance(said, str) else said.say) == "Line 2 of mine."
    assert [(c.key, c.outcome) for c in calls] == [("s", "degenerate"), ("s:again", "ok")]
    assert [m["role"] for m in again["messages"]] == [m["role"] for m in first["messages"]]
    assert again["messages"][0] == first["messages"][0]  # the prefix a server caches
    task, asked = first["messages"][-1]["content"], again["messages"][-1]["content"]
    note = "A reply to this was not usable: it copies another's line word for word."
    assert asked.startswith(MESSAGES[-1]["content"]) and note in asked and note not in task


def test_a_re_ask_s_reply_saying_back_its_flaw_is_an_echo_but_not_its_own_quoted_words() -> None:
    """What a re-ask adds is its prompt too: a reply saying back the flaw's own words, in any
    of its texts, is an echo (Gemma 3 270M's Omar, told "the intent 'Michael' is only a name,
    not words", planned "Michael is only a name."). The words of the first reply that the
    note quotes are the model's own: saying them again is not telling the flaw back."""
    from engine.llm.parsing import told_back

    named = Flaw("wordless", "the intent 'Michael' is only a name, not words")
    assert told_back("Michael is only a name.", None) is None  # (a first reply)
    flaw = told_back(Said(say="Michael is only a name."), named)
    assert flaw is not None and flaw.kind == "echo" and "'is only a name'" in flaw.note
    assert told_back("Michael, you are not only a friend, you are family.", named) is None
    looped = Flaw("loop", "it begins over again ('i do this to my brother' …) instead of going on")
    assert told_back("I do this to my brother, and I mean it.", looped) is None
    said = told_back("I do it again, in new words of your own.", looped)
    assert said is not None and said.kind == "echo"
