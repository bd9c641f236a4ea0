"""What socialsim does against local servers (issues 22 and 28), through the stub's
local-server modes: a dropped system message, a stream without usage, the context window
and slots a server says it has, values out of a schema's bounds, Ollama's own chat API, and
faults that must never read as "cannot reach"."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import json
from collections.abc import Coroutine, Iterator
from typing import Any, Literal, TypeVar

import pytest
from llm_stub import StubLLM
from pydantic import BaseModel, Field

from engine import resolve_scenario
from engine.errors import SocialsimError
from engine.llm.client import DROPPED_SUFFIX, LLMClient
from engine.llm.server import OLLAMA_DEFAULT_CTX, describe
from engine.llm.settings import LLMSettings
from engine.llm.transport import LiteLLMTransport, TransportError, close_clients
from engine.studies.fits import check_window

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


class Verdict(BaseModel):
    score: int = Field(ge=0, le=10)
    label: Literal["yes", "no"]


DEFAULT = Verdict(score=0, label="yes")
T = TypeVar("T")
MESSAGES = [
    {
        "role": "system",
        "content": "[socialsim:test]\nYou judge a leaking roof in a tavern by the harbour. "
        "Weigh the cost of repairs against the landlord's duty to the regulars, the season, "
        "the weather and the state of the beams, and answer as a careful surveyor would.",
    },
    {"role": "user", "content": "Is the roof leaking?"},
]


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    with StubLLM(seed=4) as running:
        yield running


def client_for(url: str, **extra: object) -> LLMClient:
    settings = LLMSettings.model_validate({"model": "openai/stub", "api_base": url, **extra})
    return LLMClient(settings, LiteLLMTransport(settings))


def played(coro: Coroutine[Any, Any, T]) -> T:
    """``coro`` run to its end, litellm's shared HTTP clients closed after it."""

    async def go() -> T:
        try:
            return await coro
        finally:
            await close_clients()

    return asyncio.run(go())


def verdict(client: LLMClient, key: str = "k", model: str = "openai/stub") -> Any:
    """The structured exchange every test asks (a coroutine)."""
    return client.structured(
        key=key,
        purpose="test",
        agent="Ann",
        model=model,
        messages=MESSAGES,
        schema=Verdict,
        default=DEFAULT,
    )


def ask(client: LLMClient, key: str = "k") -> Verdict:
    return played(verdict(client, key))


def test_a_dropped_system_message_is_said_and_merged_into_the_first_user_turn() -> None:
    with StubLLM(seed=4, drop_system=True) as stub:
        client = client_for(stub.url)
        said: list[str] = []
        client.notices = said.append
        value = ask(client)
        assert value != DEFAULT
        assert client.system_roles() == {"openai/stub": "merge"}
        assert len(said) == 1 and "dropping the system message" in said[0]
        kept, dropped = (c for c in client.take_calls() if c.purpose == "test")  # by key
        assert dropped.key == "k" + DROPPED_SUFFIX and dropped.outcome == "error"
        assert kept.key == "k" and kept.outcome == "ok"
        # Asked again with the system text at the head of the first user turn.
        last = stub.requests[-1]["messages"]
        assert [m["role"] for m in last] == ["user"]
        assert last[0]["content"].startswith("[socialsim:test]")
        assert kept.prompt_tokens >= 0.6 * kept.sent_tokens  # it all arrived this time


def test_keep_never_merges_and_merge_always_does(stub: StubLLM) -> None:
    keep = client_for(stub.url, system_role="keep")
    ask(keep)
    assert stub.requests[-1]["messages"][0]["role"] == "system"
    merge = client_for(stub.url, system_role="merge")
    ask(merge)
    assert [m["role"] for m in stub.requests[-1]["messages"]] == ["user"]


def test_a_later_prompt_the_server_cut_is_flagged_not_merged() -> None:
    with StubLLM(seed=4) as stub:
        client = client_for(stub.url)
        said: list[str] = []
        client.notices = said.append
        ask(client, "first")  # all arrived: the role is settled as keep
    with StubLLM(seed=4, drop_system=True) as cutting:
        client.settings = client.settings.model_copy(update={"api_base": cutting.url})
        client.transport = LiteLLMTransport(client.settings)
        ask(client, "second")
    assert client.system_roles() == {"openai/stub": "keep"}
    assert len(said) == 1 and "the prompt was cut" in said[0]


def test_a_stream_without_usage_is_counted_by_socialsim() -> None:
    with StubLLM(seed=4, stream_usage=False) as stub:
        client = client_for(stub.url)

        text = played(
            client.text(
                key="s",
                purpose="speak",
                agent="Ann",
                model="openai/stub",
                messages=MESSAGES,
                sink=lambda piece: None,
            )
        )
        (call,) = client.take_calls()
    assert text and call.counted_by == "socialsim"
    assert call.prompt_tokens == call.sent_tokens > 0 and call.completion_tokens > 0


def test_values_out_of_bounds_are_clamped_and_counted(stub: StubLLM) -> None:
    client = client_for(stub.url)
    ask(client, "probe")
    client.take_calls()
    stub.script(["range"])
    value = ask(client)
    (call,) = client.take_calls()
    assert value.score in (0, 10) and call.outcome == "ok" and call.clamped == ["score"]


class Mood(BaseModel):
    """A signed change, bounded to +-0.3 as the judges' are."""

    delta: float = Field(ge=-0.3, le=0.3)
    label: Literal["yes", "no"]


def test_a_change_off_its_scale_is_asked_again_then_falls_back(stub: StubLLM) -> None:
    """A signed change far off its scale is a misread scale, not an overshoot: the reply is
    asked again, naming the scale, and a second one off it falls back instead of being taken
    as a change of the full cap; an overshoot is clamped."""
    client = client_for(stub.url)
    calm = Mood(delta=0, label="yes")

    def mood(key: str) -> Mood:
        return played(
            client.structured(
                key=key, purpose="test", agent="Ann", model="openai/stub", messages=MESSAGES,
                schema=Mood, default=calm,
            )
        )  # fmt: skip

    mood("probe")
    client.take_calls()
    stub.script(["scale", None])
    value = mood("k")
    first, second = client.take_calls()
    assert (first.key, first.outcome, first.flaw) == ("k", "degenerate", "scale")
    assert first.error == "delta was 109.8, far off its scale (-0.3 to 0.3)"
    assert first.error in stub.requests[-1]["messages"][-1]["content"]  # said in the re-ask
    assert (second.key, second.outcome) == ("k:again", "ok") and abs(value.delta) <= 0.3
    stub.script(["scale", "scale"])
    assert mood("twice") == calm
    assert [(c.outcome, c.flaw) for c in client.take_calls()] == [("degenerate", "scale")] * 2
    stub.script(["range"])
    assert mood("over").delta == 0.3  # 1.2: an overshoot, clamped
    (over,) = client.take_calls()
    assert (over.outcome, over.clamped, over.flaw) == ("ok", ["delta"], "")


def test_a_grammar_server_is_sent_the_steps_it_holds_a_change_to() -> None:
    """llama-cpp-python's grammar ignores a number's bounds but holds a reply to an enum: in
    ``grammar`` mode the change is sent as its steps, so a reply that would have been off
    its scale is on one of them, counted at once, and not asked again."""
    with StubLLM(seed=4, rejects={"json_schema"}, server="llama.cpp") as stub:
        client = client_for(stub.url)
        calm = Mood(delta=0, label="yes")
        ask = client.structured(
            key="probe", purpose="test", agent="Ann", model="openai/stub", messages=MESSAGES,
            schema=Mood, default=calm,
        )  # fmt: skip
        played(ask)
        assert client.modes() == {"openai/stub": "grammar"}
        client.take_calls()
        stub.script(["scale"])
        value = played(
            client.structured(
                key="k", purpose="test", agent="Ann", model="openai/stub", messages=MESSAGES,
                schema=Mood, default=calm,
            )
        )  # fmt: skip
        (call,) = client.take_calls()
        sent = stub.requests[-1]["response_format"]["schema"]["properties"]["delta"]
    assert sent["enum"] == [round(k * 0.05 - 0.3, 2) or 0 for k in range(13)]
    assert value.delta in sent["enum"]
    assert (call.key, call.outcome, call.flaw, call.clamped) == ("k", "ok", "", [])


def test_what_servers_say_of_their_window_and_slots() -> None:
    async def ask_all() -> list:
        found = []
        for server, model in (
            ("llama.cpp", "openai/m"),
            ("vllm", "openai/stub"),
            ("openai", "openai/m"),
        ):
            with StubLLM(server=server, n_ctx=3000, slots=3) as stub:
                found.append(await describe(model, stub.url))
        with StubLLM(server="ollama", n_ctx=3000) as stub:
            found.append(await describe("ollama_chat/stub", stub.url.removesuffix("/v1")))
        return found

    llama, vllm, plain, ollama = asyncio.run(ask_all())
    assert (llama.window, llama.slots, llama.kind) == (3000, 3, "llama.cpp")
    assert (vllm.window, vllm.kind) == (3000, "vLLM")
    assert plain.window is None and plain.slots is None  # says nothing: nothing checked
    assert ollama.kind == "Ollama" and ollama.window == min(3000, OLLAMA_DEFAULT_CTX)


def test_a_prompt_the_window_cannot_hold_stops_the_run_before_anything_is_written() -> None:
    tavern = resolve_scenario("tavern")
    with StubLLM(server="llama.cpp", n_ctx=1500) as stub:
        spec = LLMSettings(model="openai/stub", api_base=stub.url)
        with pytest.raises(SocialsimError) as err:
            check_window(tavern, spec, 2)
        calls = stub.calls
    line = str(err.value)
    assert "context window holds 1500" in line and "--ctx-size" in line
    assert calls == 0  # nothing was played
    with StubLLM(server="llama.cpp", n_ctx=32768) as roomy:
        found = check_window(tavern, LLMSettings(model="openai/stub", api_base=roomy.url), 2)
    assert found["openai/stub"].window == 32768


def test_a_server_with_slots_is_started_at_them() -> None:
    with StubLLM(server="llama.cpp", slots=3, latency=0.2) as stub:
        client = client_for(stub.url)

        async def wave() -> list[Verdict]:
            return await asyncio.gather(*(verdict(client, f"k{i}") for i in range(4)))

        played(wave())
        # The probe alone, then three at once (one at a time from the start would peak at 2).
        assert stub.peak_in_flight == 3


def test_structured_replies_stream_after_the_first_so_a_slow_reply_is_not_a_timeout() -> None:
    # Each streamed chunk comes 0.15 s after the last, a reply takes longer than the 0.5 s
    # timeout: streamed, the clock counts from the last byte, so nothing times out.
    with StubLLM(seed=4, chunk_latency=0.15, keep_alive=True) as stub:
        client = client_for(stub.url, timeout=0.5, retries=0)
        values = [ask(client, f"k{i}") for i in range(3)]
        streamed = [bool(body.get("stream")) for body in stub.requests[-3:]]
    assert DEFAULT not in values
    assert streamed == [False, True, True]  # the first shows what the server reads
    assert all(c.outcome == "ok" and c.attempts == 1 for c in client.take_calls())


def test_a_server_that_cuts_streams_for_the_next_request_gets_one_call_at_a_time() -> None:
    with StubLLM(seed=4, slots=1, interrupts=True, generate_rate=100) as stub:
        client = client_for(stub.url, retries=4)
        limit = client.transport.limit  # type: ignore[attr-defined]

        async def waves() -> list[Verdict]:
            first = [await verdict(client, f"a{i}") for i in range(3)]  # slow start: 1, 2, 3
            return first + list(await asyncio.gather(*(verdict(client, f"b{i}") for i in range(6))))

        values = played(waves())
    assert DEFAULT not in values
    assert stub.cut >= 1  # a call sent beside another was cut short, and asked again
    assert (limit.ceiling, int(limit.limit)) == (1, 1)
    assert stub.cut <= 3  # only calls in flight when the first was cut: one at a time since


def test_a_grammar_server_is_asked_for_utterances_as_json() -> None:
    """Against llama-cpp-python (json_schema refused, a schema in json_object enforced) the
    utterance is asked as a JSON string the grammar holds: a small model asked for free text
    repeats its prompt."""
    from engine import Simulation

    with StubLLM(server="llama.cpp", rejects={"json_schema"}, seed=4) as stub:
        settings = LLMSettings(model="openai/stub", api_base=stub.url, judge_mode="batched")
        sim = Simulation.new(resolve_scenario("tavern"), seed=1, mind=settings, rounds=1)
        (record,) = played(sim.run(1))
        played(sim.aclose())
    speaks = {c.agent: c for c in record.llm_calls if c.purpose == "speak"}
    said = {a.speaker: a.utterance for a in record.actions if a.utterance}
    assert speaks and said.keys() == speaks.keys()
    for agent, call in speaks.items():
        assert call.structured == "json_object_schema" and call.outcome == "ok"
        assert said[agent] == json.loads(call.response or "")["say"]
        ask = f"say: the words {agent} says aloud now, in character."
        assert call.messages[-1]["content"].endswith(
            f"{ask}\n\nReply with one JSON object and nothing else."
        )


def test_ollama_models_get_their_schema_as_format() -> None:
    with StubLLM(server="ollama", seed=4) as stub:
        settings = LLMSettings(
            model="ollama_chat/stub", api_base=stub.url.removesuffix("/v1"), structured="schema"
        )
        client = LLMClient(settings, LiteLLMTransport(settings))

        value = played(verdict(client, "o", model="ollama_chat/stub"))
        body = stub.requests[-1]
    assert value != DEFAULT
    assert isinstance(body.get("format"), dict) and body["format"]["properties"].keys() == {
        "score",
        "label",
    }


def test_a_timeout_is_never_cannot_reach(stub: StubLLM) -> None:
    client = client_for(stub.url, timeout=0.3, retries=1)
    stub.hang_seconds = 3
    stub.script(["timeout", "timeout"])
    assert ask(client) == DEFAULT
    (call,) = client.take_calls()
    assert "timed out after 2 attempts (0.3 s each)" in (call.error or "")
    assert "cannot reach" not in (call.error or "")
    (line,) = client.slow_lines()
    assert line.startswith(f"openai/stub at {stub.url}: 1 of 1 calls timed out after 2 attempts")
    assert "raise --timeout or lower --max-concurrency" in line


def test_a_refused_connection_is_cannot_reach() -> None:
    client = client_for("http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(TransportError) as err:
        ask(client)
    assert "cannot reach http://127.0.0.1:9/v1" in str(err.value) and err.value.fatal


def test_a_stream_cut_with_no_other_call_in_flight_says_another_client_may_be_taking_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two clients on one llama-cpp-python server cut each other's streams, each sending one
    call at a time (the app beside a run, 2026-12-07: every decision of a round fell back):
    the failure says so. A cut while another of its own calls was in flight does not."""
    from engine.llm.openai_route import StreamCut

    async def cut(request: object) -> object:
        raise StreamCut("the server ended the stream before the reply finished")

    with StubLLM(seed=4) as stub:
        for beside, said in ((0, True), (1, False)):
            client = client_for(stub.url, retries=1, max_concurrency=4)
            transport = client.transport
            monkeypatch.setattr(transport, "_timed", cut)
            limit = transport.limit  # type: ignore[attr-defined]
            limit.limit, limit.in_flight = 4.0, beside  # (one of its own in flight, or none)
            assert ask(client) == DEFAULT
            (call,) = client.take_calls()
            assert call.outcome == "fallback" and call.error is not None
            assert "ended the stream before the reply finished" in call.error
            assert "after 2 attempts" in call.error
            assert ("another client of this server" in call.error) is said
