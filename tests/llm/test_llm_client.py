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

from engine.llm.client import LLMClient, parse, with_schema
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
    value, was_repaired, problem = parse(text, Verdict)
    assert value == Verdict(score=3, label="yes")
    assert (was_repaired, problem) == (repaired, "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply was empty"),
        ("   \n", "the reply was empty"),
        ("[1, 2]", "the reply was not a JSON object"),
        ('{"score": 11, "label": "yes"}', "score: Input should be less than or equal to 10"),
        ('{"label": "yes"}', "score: Field required"),
        ('{"score": 1, "label": "no"}', "a 'no' needs a note"),
    ],
)
def test_parse_names_the_problem_and_never_raises(text: str, problem: str) -> None:
    value, repaired, found = parse(text, Verdict)
    assert value is None and not repaired
    assert problem in found


def test_with_schema_appends_readable_instructions_without_mutating() -> None:
    schema = Verdict.model_json_schema()
    before = json.dumps(MESSAGES)
    out = with_schema(MESSAGES, schema)
    assert json.dumps(MESSAGES) == before
    assert out[1:] == MESSAGES[1:] and out[0]["role"] == "system"
    assert out[0]["content"].startswith(MESSAGES[0]["content"])
    assert "Reply with one JSON object and nothing else." in out[0]["content"]
    assert _schema_from_text(out[0]["content"]) == schema  # what a server reads back
    # Given as response_format, the schema is not pasted: the instruction alone.
    (short, *_) = with_schema(MESSAGES, None)
    assert short["content"] == MESSAGES[0]["content"] + (
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
    assert stub.calls == 4


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
    assert call.outcome == "fallback" and "Timeout" in (call.error or "")


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
    client, stub = make_client({"reject_json_schema": True})
    assert client.modes() == {"openai/stub": "auto"}
    first = await verdict(client, "one")
    second = await verdict(client, "two")
    assert first != DEFAULT and second != DEFAULT and client.modes() == {"openai/stub": "json"}
    one, rejected, two = client.take_calls()  # by key
    assert rejected.key == "one:rejected" and rejected.outcome == "error"
    assert rejected.structured == "json_schema" and "json_schema" in (rejected.error or "")
    assert (one.structured, two.structured) == ("json_object", "json_object")
    assert stub.fault_log == ["rejected", None, None]
    formats = [b["response_format"]["type"] for b in stub.requests]
    assert formats == ["json_schema", "json_object", "json_object"]


async def test_a_format_is_dropped_only_for_servers_that_answer_prose(
    make_client: MakeClient,
) -> None:
    client, stub = make_client()
    # Valid JSON objects that break the schema or a cross-field rule: the server is fine.
    stub.script(["schema", None, "schema", None])
    await verdict(client, "a")
    await verdict(client, "b")
    assert client.modes() == {"openai/stub": "schema"}
    # Two replies in a row that are not JSON at all: the next format down, json_object...
    stub.script(["empty", None, "empty", None])
    await verdict(client, "c")
    await verdict(client, "d")
    assert client.modes() == {"openai/stub": "json"}
    await verdict(client, "e")
    assert stub.requests[-1]["response_format"] == {"type": "json_object"}
    # ... and after two more, instructions in the prompt only.
    stub.script(["empty", None, "empty", None])
    await verdict(client, "f")
    await verdict(client, "g")
    await verdict(client, "h")
    assert client.modes() == {"openai/stub": "text"}
    assert "response_format" not in stub.requests[-1]
    assert client.take_calls()[-1].structured == "json_instructions"


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
    assert stub.calls >= 5 and stub.connections == 1
    await asyncio.gather(*(verdict(client, f"w1-{k}") for k in range(12)))
    opened, calls = stub.connections, stub.calls
    await asyncio.gather(*(verdict(client, f"w2-{k}") for k in range(12)))
    assert stub.calls >= calls + 12 and stub.connections == opened <= 1 + 12


async def test_the_default_concurrency_lets_a_whole_update_wave_out(
    make_client: MakeClient,
) -> None:
    assert LLMSettings(model="openai/stub").max_concurrency >= 30 * (29 + 2)  # 30 agents
    client, stub = make_client({"latency": 0.5})
    await verdict(client, "probe")  # the format probe goes alone
    await asyncio.gather(*(verdict(client, f"wave-{k}") for k in range(40)))
    assert stub.peak_in_flight == 40
