"""LLMClient: parsing and repair of replies, and exchanges through LiteLLMTransport over
real HTTP to the local stub (tests/llm_stub.py): re-asks, fallbacks, retries, refused
json_schema, streaming, caps, and replays from the record. Nothing of ours is patched."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Literal

import pytest
from llm_stub import StubLLM, _schema_from_text
from pydantic import BaseModel, Field, model_validator

from engine.core.exchanges import Outcome
from engine.llm.client import LLMClient
from engine.llm.grammar import grammar_schema
from engine.llm.parsing import parse, with_schema
from engine.llm.settings import LLMSettings
from engine.llm.transport import LiteLLMTransport, ReplayTransport, TransportError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


class Verdict(BaseModel):
    score: int = Field(ge=0, le=10)
    label: Literal["yes", "no"]
    note: str | None = None

    @model_validator(mode="after")
    def _note_for_no(self) -> Verdict:  # a rule no JSON schema expresses
        if self.label == "no" and self.note is None:
            raise ValueError("a 'no' needs a note")
        return self


DEFAULT = Verdict(score=0, label="yes")
MESSAGES = [
    {"role": "system", "content": "[socialsim:test]\nYou judge."},
    {"role": "user", "content": "Is the roof leaking?"},
]


# --------------------------------------------------------------------------- parse


@pytest.mark.parametrize(
    ("text", "repaired"),
    [
        ('{"score": 3, "label": "yes"}', False),
        ('```json\n{"score": 3, "label": "yes"}\n```', False),
        ('{"score": 3, "label": "yes",}', True),
        ("{'score': 3, 'label': 'yes'}", True),
        ('Sure! {"score": 3, "label": "yes"} Hope that helps.', True),
        ('{"score": 3, "label": "yes"', True),
    ],
)
def test_parse_accepts_and_repairs(text: str, repaired: bool) -> None:
    parsed = parse(text, Verdict)
    assert parsed.value == Verdict(score=3, label="yes")
    assert (parsed.repaired, parsed.problem, parsed.clamped) == (repaired, "", ())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply was empty"),
        ("   \n", "the reply was empty"),
        ("[1, 2]", "the reply was not a JSON object"),
        ('{"score": 11, "label": "maybe"}', "label: Input should be 'yes' or 'no'"),
        ('{"label": "yes"}', "score: Field required"),
        ('{"score": "high", "label": "yes"}', "score: Input should be a valid integer"),
        ('{"score": 1, "label": "no"}', "a 'no' needs a note"),
    ],
)
def test_parse_names_the_problem_and_never_raises(text: str, problem: str) -> None:
    parsed = parse(text, Verdict)
    assert parsed.value is None and not parsed.repaired
    assert problem in parsed.problem


class Said(BaseModel):
    say: str


#: Gemma 3 270M's Nell on llama-cpp-python, asked again (a grammar server, round 2): line
#: breaks inside the string. json-repair read it as three keys and the line as its first 67
#: characters, which passed every check; read whole, it begins over again.
NELL = (
    '{ "say": "Seniors: I\'m going to tell you one thing that I have decided'
    " to say, in character. Reply with the JSON object that matches the sch"
    "ema. tidligere\nに対応user\nThat reply was not usable: it stops mid-sentenc"
    "e, on ',': say the whole sentence. Reply again with only the JSON obje"
    "ct that matches the schema. staan\nに対応user\nThat response was not usable"
    ": it stopped mid-sentence, on ',': say the whole sentence. Reply again"
    " with only the JSON object that matches the schema. staan\nに対応user\nThat"
    '" } '
)


def test_parse_reads_a_string_with_line_breaks_whole() -> None:
    parsed = parse(NELL, Said)
    assert parsed.repaired and parsed.value is not None and parsed.read == "lenient"
    said = parsed.value.say
    assert said.startswith("Seniors: I'm going") and said.endswith(
        "Reply again with only the JSON object that matches the schema. staan\nに対応user\nThat"
    )
    assert "\nに対応user\n" in said  # what the speech check then finds (not a fragment)


@pytest.mark.parametrize(
    ("read", "said"),
    [("", "Seniors: I'm going to tell you one thing that I have decided to say"), ("lenient", "")],
)
async def test_a_replay_reads_a_reply_as_its_record_did(read: str, said: str) -> None:
    """A record made before the lenient reading took json-repair's reading of Nell's line
    (its first 67 characters); a replay takes it so, and a newer record's reading whole."""
    from engine.core.exchanges import LLMCall

    recorded = LLMCall(
        key="nell", purpose="speak", agent="Nell", model="openai/stub", messages=MESSAGES,
        response=NELL, outcome="repaired", read=read,
    )  # fmt: skip
    replay = LLMClient(LLMSettings(model="openai/stub"), ReplayTransport([recorded]))
    value = await replay.structured(
        key="nell", purpose="speak", agent="Nell", model="openai/stub", messages=MESSAGES,
        schema=Said, default=Said(say=""),
    )  # fmt: skip
    assert value.say == (said or parse(NELL, Said).value.say)
    assert [c.read for c in replay.take_calls()] == [read]


def test_a_reply_json_repair_reads_as_stray_keys_is_not_valid() -> None:
    broken = '{ "say": "Not usable: it stops mid-sentence, on \',\': say the whole sentence.'
    parsed = parse(broken, Said)
    assert (
        parsed.value is None and parsed.problem == "the reply's JSON is broken (read as keys: ',')"
    )


class Change(BaseModel):
    """A signed change, bounded to +-0.3 as the judges' are."""

    delta: float = Field(ge=-0.3, le=0.3)


@pytest.mark.parametrize(
    ("text", "value", "far"),
    [
        ('{"delta": 0.5}', Change(delta=0.3), ()),
        ('{"delta": -2.9}', Change(delta=-0.3), ()),
        ('{"delta": 3.0}', Change(delta=0.3), ()),
        ('{"delta": 3.1}', Change(delta=0.3), ("delta was 3.1, far off its scale (-0.3 to 0.3)",)),
        (
            '{"delta": -45871,}',
            Change(delta=-0.3),
            ("delta was -45871, far off its scale (-0.3 to 0.3)",),
        ),
    ],
)
def test_parse_clamps_values_beyond_the_schemas_bounds(
    text: str, value: Change, far: tuple[str, ...]
) -> None:
    """A reply in the schema's shape whose value breaks a bound is clamped; a signed change
    more than ten times its cap is named as off its scale (the client asks again); an enum
    outside the enum or a missing field still fails (above)."""
    parsed = parse(text, Change)
    assert parsed.value == value and parsed.clamped == ("delta",) and not parsed.problem
    assert parsed.far == far


@pytest.mark.parametrize("score", [11, 365, 20534])
def test_a_level_off_its_scale_is_read_as_its_bound(score: int) -> None:
    """A level (0 to 10) off its scale says "as much as can be": clamped, never re-asked."""
    parsed = parse(f'{{"score": {score}, "label": "yes"}}', Verdict)
    assert parsed.value == Verdict(score=10, label="yes") and parsed.far == ()


def test_with_schema_appends_readable_instructions_without_mutating() -> None:
    schema = Verdict.model_json_schema()
    before = json.dumps(MESSAGES)
    out = with_schema(MESSAGES, schema)
    assert json.dumps(MESSAGES) == before
    # The system text is untouched: the instruction ends the task's message, so what
    # precedes it is what a free-text call of the same agent sends.
    assert out[:-1] == MESSAGES[:-1] and out[-1]["role"] == MESSAGES[-1]["role"]
    assert out[-1]["content"].startswith(MESSAGES[-1]["content"])
    assert "Reply with one JSON object and nothing else." in out[-1]["content"]
    assert _schema_from_text(out[-1]["content"]) == schema  # what a server reads back
    # Given as response_format, the schema is not pasted: the instruction alone.
    (*_, short) = with_schema(MESSAGES, None)
    assert short["content"] == MESSAGES[-1]["content"] + (
        "\n\nReply with one JSON object and nothing else."
    )


# --------------------------------------------------------------------------- live exchanges

#: The stub seed of this module's ``make_client`` fixture (tests/conftest.py).
STUB_SEED = 2
MakeClient = Callable[..., tuple[LLMClient, StubLLM]]


async def verdict(client: LLMClient, key: str = "k") -> Verdict:
    return await client.structured(
        key=key,
        purpose="test",
        agent="Ann",
        model=client.settings.model,
        messages=MESSAGES,
        schema=Verdict,
        default=DEFAULT,
    )


async def test_structured_ok_sends_the_schema_and_records_the_exchange(
    make_client: MakeClient,
) -> None:
    client, stub = make_client()
    value = await verdict(client)
    assert isinstance(value, Verdict)
    body = stub.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Verdict"
    assert body["messages"] == with_schema(MESSAGES, None)  # the schema is in response_format
    (call,) = client.take_calls()
    assert (call.key, call.outcome, call.structured, call.attempts) == ("k", "ok", "json_schema", 1)
    assert Verdict.model_validate_json(call.response or "") == value
    assert call.prompt_tokens > 0 and call.completion_tokens > 0 and call.latency_s > 0
    assert client.take_calls() == []


async def test_invalid_reply_is_reasked_once_then_falls_back(make_client: MakeClient) -> None:
    client, stub = make_client()
    await verdict(client, "probe")  # the format is settled: a bad reply is the model's
    client.take_calls()
    stub.script(["schema", None])
    fixed = await verdict(client, "a")
    stub.script(["schema", "schema"])
    fallback = await verdict(client, "b")
    calls = {c.key: c for c in client.take_calls()}
    assert list(calls) == ["a", "a:reask", "b", "b:reask"]
    assert fixed != DEFAULT and fallback == DEFAULT
    assert [c.outcome for c in calls.values()] == ["reasked", "ok", "reasked", "fallback"]
    reask = calls["a:reask"].messages
    assert reask[:-2] == calls["a"].messages
    assert reask[-2] == {"role": "assistant", "content": calls["a"].response}
    assert reask[-1]["content"].startswith("That reply was not valid: ")
    assert calls["a"].error and calls["a"].error in reask[-1]["content"]
    assert stub.calls == 5


async def test_malformed_reply_is_repaired_or_reasked(make_client: MakeClient) -> None:
    client, stub = make_client()
    stub.script(["malformed"] * 4)
    for i in range(4):
        stub.script([None])  # a re-ask, if any, gets a good answer
        await verdict(client, f"m{i}")
    calls = client.take_calls()
    firsts = [c for c in calls if not c.key.endswith(":reask")]
    assert {c.outcome for c in firsts} <= {"repaired", "reasked"}
    for c in firsts:
        with pytest.raises(ValueError):
            json.loads(c.response or "")
        if c.outcome == "reasked":
            assert any(r.key == f"{c.key}:reask" and r.outcome == "ok" for r in calls)


async def test_transient_errors_are_retried_then_fall_back(make_client: MakeClient) -> None:
    client, stub = make_client(retries=1)
    stub.script(["500", None])
    ok = await verdict(client, "retried")
    stub.script(["429", "500"])
    lost = await verdict(client, "lost")
    failed, retried = client.take_calls()  # by key: lost, retried
    assert ok != DEFAULT and lost == DEFAULT
    assert (retried.outcome, retried.attempts) == ("ok", 2)
    assert (failed.outcome, failed.attempts, failed.response) == ("fallback", 2, None)
    assert "InternalServerError after 2 attempts" in (failed.error or "")
    assert stub.calls == 4


async def test_timeout_falls_back_quickly(make_client: MakeClient) -> None:
    client, stub = make_client({"hang_seconds": 5}, timeout=0.3, retries=0)
    stub.script(["timeout"])
    assert await verdict(client) == DEFAULT
    (call,) = client.take_calls()
    assert call.outcome == "fallback" and "timed out after 1 attempts (0.3 s each)" in (
        call.error or ""
    )


async def test_unreachable_or_wrong_endpoint_is_fatal(make_client: MakeClient) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client, _ = make_client(api_base=f"http://127.0.0.1:{port}/v1", retries=0)
    with pytest.raises(TransportError, match="cannot reach") as caught:
        await verdict(client)
    assert caught.value.fatal

    _, stub = make_client()
    wrong = LLMSettings(model="openai/stub", api_base=stub.url.removesuffix("/v1") + "/nope/v1")
    client = LLMClient(wrong, LiteLLMTransport(wrong))
    with pytest.raises(TransportError) as caught:  # 404: retrying would not help
        await verdict(client)
    assert caught.value.fatal and client.take_calls() == []


async def test_streamed_text_and_empty_reply(make_client: MakeClient) -> None:
    client, stub = make_client()
    pieces: list[str] = []
    text = await client.text(
        key="s",
        purpose="speak",
        agent="Ann",
        model="openai/stub",
        messages=MESSAGES,
        sink=pieces.append,
    )
    stub.script(["empty"])
    empty = await client.text(
        key="e",
        purpose="speak",
        agent="Ann",
        model="openai/stub",
        messages=MESSAGES,
        sink=pieces.append,
    )
    silent, said = client.take_calls()  # by key: e, s
    assert len(pieces) >= 8 and "".join(pieces) == text and text.endswith(".")
    assert stub.requests[0]["stream"] is True and "response_format" not in stub.requests[0]
    assert (said.outcome, said.structured, said.response) == ("ok", "text", text)
    assert empty == "" and (silent.outcome, silent.error) == ("fallback", "empty reply")


async def test_refused_json_schema_is_recorded_then_json_object(
    make_client: MakeClient,
) -> None:
    """A server that refuses json_schema (an OpenAI-style 400) and ignores a schema sent
    inside json_object: the probe steps past both, each recorded, to json_object with the
    schema in the prompt."""
    client, stub = make_client({"reject_json_schema": True})
    assert client.modes() == {"openai/stub": "auto"}
    first = await verdict(client, "one")
    second = await verdict(client, "two")
    assert first != DEFAULT and second != DEFAULT and client.modes() == {"openai/stub": "json"}
    one, rejected, ignored, two = client.take_calls()  # by key
    assert rejected.key == "one:rejected" and rejected.outcome == "error"
    assert rejected.structured == "json_schema" and "json_schema" in (rejected.error or "")
    assert ignored.key == "one:rejected:json_object_schema" and ignored.outcome == "error"
    assert "accepted but not enforced" in (ignored.error or "")
    assert (one.structured, two.structured) == ("json_object", "json_object")
    formats = [b["response_format"] for b in stub.requests]
    assert [f["type"] for f in formats] == [
        "json_schema",
        "json_object",
        "json_object",
        "json_object",
    ]
    assert "schema" in formats[1] and "schema" not in formats[2]


async def test_a_format_steps_down_only_for_replies_out_of_shape(
    make_client: MakeClient,
) -> None:
    client, stub = make_client()
    await verdict(client, "probe")  # in the schema's shape: the server enforces json_schema
    # Empty replies, and a rule no JSON schema states, say nothing of the server's format.
    stub.script(["empty", "empty", "empty", "empty"])
    await verdict(client, "a")
    await verdict(client, "b")
    assert client.modes() == {"openai/stub": "schema"}
    # Two replies in a row out of the schema's shape: the next format down, each time.
    for mode, sent in (
        ("grammar", {"type": "json_object", "schema": grammar_schema(Verdict.model_json_schema())}),
        ("json", {"type": "json_object"}),
    ):
        stub.script(["schema", None, "schema", None])
        await verdict(client, f"{mode}-1")
        await verdict(client, f"{mode}-2")
        assert client.modes() == {"openai/stub": mode}
        await verdict(client, f"{mode}-3")
        assert stub.requests[-1]["response_format"] == sent
    stub.script(["schema", None, "schema", None])
    await verdict(client, "text-1")
    await verdict(client, "text-2")
    await verdict(client, "text-3")
    assert client.modes() == {"openai/stub": "text"}
    assert "response_format" not in stub.requests[-1]
    assert client.take_calls()[-1].structured == "json_instructions"


async def test_the_probe_passes_a_format_the_server_accepts_and_ignores(
    make_client: MakeClient,
) -> None:
    """A probe reply out of the schema's shape in a response format is that format's
    refusal (recorded, and replayed so): the next format is tried at once."""
    client, stub = make_client({"json_object_schema": True})
    stub.script(["schema", None])
    assert await verdict(client, "k") != DEFAULT
    assert client.modes() == {"openai/stub": "grammar"}
    answered, ignored = client.take_calls()  # by key: "k", "k:rejected"
    assert (answered.key, answered.outcome) == ("k", "ok")
    assert answered.structured == "json_object_schema"
    assert (ignored.key, ignored.outcome) == ("k:rejected", "error")
    assert "accepted but not enforced" in (ignored.error or "")


async def test_caps_count_recorded_and_new_calls(make_client: MakeClient) -> None:
    client, _ = make_client(max_calls=3)
    assert client.stop_reason() is None
    await verdict(client, "a")
    await verdict(client, "b")
    assert client.stop_reason() is None
    client.count_recorded(client.take_calls()[:1])  # one exchange from an earlier session
    reason = client.stop_reason()
    assert reason == "stopped: 3 LLM calls reached --max-calls 3"


async def test_replay_serves_the_record_without_requests(make_client: MakeClient) -> None:
    client, stub = make_client(retries=1)
    stub.script(["schema", None, "500", "500", "malformed"])
    live = [await verdict(client, k) for k in ("a", "b", "c")]
    calls = client.take_calls()
    served = stub.calls

    replay = LLMClient(client.settings, ReplayTransport(calls))
    again = [await verdict(replay, k) for k in ("a", "b", "c")]
    assert again == live and stub.calls == served

    def kept(cs: list) -> list[tuple]:
        return [(c.key, c.outcome, c.response, c.attempts, c.error) for c in cs]

    assert kept(replay.take_calls()) == kept(calls)
    with pytest.raises(TransportError, match="diverged") as caught:
        await verdict(replay, "never-recorded")
    assert caught.value.fatal


async def test_a_run_recorded_before_the_scale_reask_replays_as_it_was_played() -> None:
    """A record made before replies off their scale were asked again holds no re-ask: its
    reply is taken clamped, as then; a degenerate reply without its re-ask falls back."""
    from engine.core.exchanges import LLMCall

    def call(key: str, response: str, outcome: Outcome = "ok") -> LLMCall:
        return LLMCall(
            key=key, purpose="test", agent="Ann", model="openai/stub", messages=MESSAGES,
            response=response, structured="text", clamped=["delta"], outcome=outcome,
        )  # fmt: skip

    settings = LLMSettings(model="openai/stub", structured="text")

    async def change(client: LLMClient) -> Change:
        return await client.structured(
            key="far", purpose="test", agent="Ann", model="openai/stub", messages=MESSAGES,
            schema=Change, default=Change(delta=0),
        )  # fmt: skip

    old = [call("far", '{"delta": 109.8}')]
    replay = LLMClient(settings, ReplayTransport(old))
    assert await change(replay) == Change(delta=0.3)
    (taken,) = replay.take_calls()  # recorded as then: no re-ask, no fallback
    assert (taken.key, taken.outcome, taken.clamped, taken.flaw) == ("far", "ok", ["delta"], "")
    newer = [call("far", '{"delta": 109.8}', "degenerate"), call("far:again", '{"delta": -0.1}')]
    replay = LLMClient(settings, ReplayTransport(newer))
    assert await change(replay) == Change(delta=-0.1)
    first, _ = replay.take_calls()
    assert first.error == "delta was 109.8, far off its scale (-0.3 to 0.3)"


async def test_a_reply_with_several_values_off_their_scales_names_the_first() -> None:
    class Pair(BaseModel):
        a: float = Field(ge=-1, le=1)
        b: float = Field(ge=-1, le=1)
        c: float = Field(ge=-1, le=1)

    from engine.core.exchanges import LLMCall

    answers = {"p": '{"a": 45871, "b": 2, "c": -12}', "p:again": '{"a": 0.5, "b": 0, "c": 0}'}
    record = [
        LLMCall(
            key=k, purpose="t", agent="A", model="openai/stub", messages=MESSAGES, response=r,
            outcome="ok" if k.endswith(":again") else "degenerate",
        )
        for k, r in answers.items()
    ]  # fmt: skip
    client = LLMClient(LLMSettings(model="openai/stub", structured="text"), ReplayTransport(record))
    value = await client.structured(
        key="p", purpose="t", agent="A", model="openai/stub", messages=MESSAGES, schema=Pair,
        default=Pair(a=0, b=0, c=0),
    )  # fmt: skip
    assert value == Pair(a=0.5, b=0, c=0)
    first, _ = client.take_calls()
    assert first.error == "a was 45871, far off its scale (-1 to 1) (and 1 more)"  # b: clamped


# --------------------------------------------------------------------------- litellm's cost


async def test_litellm_runs_without_callbacks_or_debug_logging(make_client: MakeClient) -> None:
    import logging

    import litellm

    from engine.llm.transport import CALLBACK_LISTS, LOGGERS

    litellm.success_callback = [lambda *args, **kwargs: None]  # registered before the run
    logging.getLogger("LiteLLM").setLevel(logging.DEBUG)
    client, stub = make_client()
    assert await verdict(client) != DEFAULT and stub.calls == 1
    assert all(getattr(litellm, name) == [] for name in CALLBACK_LISTS)
    assert all(logging.getLogger(name).getEffectiveLevel() >= logging.ERROR for name in LOGGERS)


async def exchanges(client: LLMClient, stub: StubLLM) -> None:
    """One of each kind of exchange, faults included."""
    await verdict(client, "a")
    stub.script(["schema", None])
    await verdict(client, "b")
    await client.text(
        key="s", purpose="speak", agent="Ann", model=client.settings.model, messages=MESSAGES,
        sink=lambda piece: None,
    )  # fmt: skip
    stub.script(["500", None])
    await verdict(client, "c")
    stub.script(["429", "500"])
    await verdict(client, "d")


@pytest.mark.parametrize("stub_kwargs", [{}, {"reject_json_schema": True}])
async def test_the_openai_route_sends_and_records_what_acompletion_does(
    make_client: MakeClient, stub_kwargs: dict
) -> None:
    """``openai/`` models take litellm's provider layer directly; ``hosted_vllm/`` ones (the
    same OpenAI-compatible server to litellm) go through ``litellm.acompletion``. Same
    requests, same replies, same records and errors."""
    seen = []
    for model in ("openai/stub", "hosted_vllm/stub"):
        client, stub = make_client(stub_kwargs, model=model, retries=1)
        routed = getattr(client.transport, "_routes")  # noqa: B009 (private, read here only)
        assert list(routed) == ([model] if model.startswith("openai/") else [])
        await exchanges(client, stub)
        calls = [c.model_dump(exclude={"latency_s", "model"}) for c in client.take_calls()]
        for call in calls:  # errors name the model, and litellm's messages the provider
            error = (call["error"] or "").replace(model, "M")
            call["error"] = error.replace("Hosted_vllmException", "OpenAIException")
        seen.append((calls, stub.requests, stub.fault_log))
    route, acompletion = seen
    assert route == acompletion
    calls = {c["key"]: c for c in route[0]}
    assert {"ok", "reasked", "fallback"} <= {c["outcome"] for c in calls.values()}
    assert (calls["c"]["outcome"], calls["c"]["attempts"]) == ("ok", 2)
    assert calls["d"]["error"] == "M: InternalServerError after 2 attempts"


async def test_one_http_client_serves_every_call(make_client: MakeClient) -> None:
    """A server that keeps connections open sees one for calls made one after another, and
    no new ones when a second wave of calls follows the first."""
    client, stub = make_client({"keep_alive": True, "latency": 0.05})
    for key in "abcde":
        await verdict(client, key)
    # One connection for the calls, one for asking the server its slots (before the first).
    assert stub.calls >= 5 and stub.connections == 2
    await asyncio.gather(*(verdict(client, f"w1-{k}") for k in range(12)))
    opened, calls = stub.connections, stub.calls
    await asyncio.gather(*(verdict(client, f"w2-{k}") for k in range(12)))
    # The in-flight limit adapts upward, so the second wave may open a few more.
    assert stub.calls >= calls + 12 and opened <= stub.connections <= 2 + 12


async def test_a_local_server_starts_small_and_the_limit_grows_while_latency_holds(
    make_client: MakeClient,
) -> None:
    """An api_base server starts at one call in flight (or its slots); with latency that
    holds (the stub answers every call in the same time) the limit grows toward the
    ceiling, never past it."""
    assert LLMSettings(model="openai/stub").max_concurrency >= 30 * (29 + 2)  # 30 agents
    client, stub = make_client({"latency": 0.3}, max_concurrency=6)
    await verdict(client, "probe")  # the format probe goes alone
    await asyncio.gather(*(verdict(client, f"wave-{k}") for k in range(60)))
    assert 2 <= stub.peak_in_flight <= 6


def test_a_judgement_whose_every_signed_change_sits_at_its_cap_is_at_the_caps() -> None:
    from engine.llm.clamp import at_caps
    from engine.minds.llm import EmotionOut, NeedsOut, RelationOut

    relation = RelationOut.model_json_schema()
    assert at_caps({"delta_fav": -0.3, "importance": 4}, relation)
    assert at_caps({"delta_fav": 0.9, "importance": 4}, relation)  # tolerated, applied as 0.3
    assert not at_caps({"delta_fav": 0.2, "importance": 10}, relation)
    assert not at_caps({"delta": 0.0}, EmotionOut.model_json_schema())
    needs = NeedsOut.model_json_schema()
    assert at_caps({"self_worth": 2.0, "sense_of_control": -2.0, "support_system": None}, needs)
    assert not at_caps({"self_worth": 2.0, "sense_of_control": 1.5}, needs)
    assert not at_caps({}, needs)  # nothing moved: nothing at a cap
