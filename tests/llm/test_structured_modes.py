"""Structured-output modes (LLMSettings.structured) over real HTTP to the local stub: what
each mode sends, how ``auto`` probes a server that refuses response formats (as
llama-cpp-python's server does, with HTTP 500), and that the outcome is recorded."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import pytest
from llm_stub import StubLLM, _schema_from_text
from pydantic import BaseModel, Field

from engine.core.exchanges import LLMCall, RoundUsage
from engine.llm.client import LLMClient
from engine.llm.settings import LLMSettings
from engine.llm.transport import ReplayTransport, TransportError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


class Verdict(BaseModel):
    score: int = Field(ge=0, le=10)
    label: Literal["yes", "no"]


DEFAULT = Verdict(score=0, label="yes")
MESSAGES = [
    {"role": "system", "content": "[socialsim:test]\nYou judge."},
    {"role": "user", "content": "Is the roof leaking?"},
]
SCHEMA = Verdict.model_json_schema()
INSTRUCTION = "Reply with one JSON object and nothing else."

#: The stub seed of this module's ``make_client`` fixture (tests/conftest.py).
STUB_SEED = 4
MakeClient = Callable[..., tuple[LLMClient, StubLLM]]


async def verdict(client: LLMClient, key: str = "k", model: str = "openai/stub") -> Verdict:
    return await client.structured(
        key=key,
        purpose="test",
        agent="Ann",
        model=model,
        messages=MESSAGES,
        schema=Verdict,
        default=DEFAULT,
    )


def system_of(body: dict[str, Any]) -> str:
    """The task's message, which the JSON instruction ends."""
    return body["messages"][-1]["content"]


# --------------------------------------------------------------------------- explicit modes


@pytest.mark.parametrize(
    ("mode", "response_format", "pasted", "recorded"),
    [
        (
            "schema",
            {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA}},
            False,
            "json_schema",
        ),
        ("json", {"type": "json_object"}, True, "json_object"),
        ("text", None, True, "json_instructions"),
    ],
)
async def test_each_mode_sends_exactly_its_request(
    make_client: MakeClient,
    mode: str,
    response_format: dict[str, Any] | None,
    pasted: bool,
    recorded: str,
) -> None:
    client, stub = make_client(structured=mode)
    assert client.modes() == {"openai/stub": mode}
    value = await verdict(client)
    assert value != DEFAULT
    (body,) = stub.requests
    assert body.get("response_format") == response_format
    assert body["max_tokens"] == 1024  # every reply is capped
    system = system_of(body)
    assert body["messages"][0] == MESSAGES[0]
    assert system.startswith(MESSAGES[-1]["content"] + "\n\n" + INSTRUCTION)
    # The schema is in the prompt exactly when the server is not given it.
    assert (_schema_from_text(system) == SCHEMA) == pasted
    assert ("JSON schema:" in system) == pasted
    (call,) = client.take_calls()
    assert (call.structured, call.outcome) == (recorded, "ok")


async def test_an_explicit_mode_the_server_refuses_stops_the_run(make_client: MakeClient) -> None:
    client, stub = make_client(
        {"rejects": {"json_schema"}, "server": "llama.cpp"}, structured="schema", retries=3
    )
    with pytest.raises(TransportError, match="use --structured auto") as caught:
        await verdict(client)
    assert caught.value.fatal and stub.calls == 1  # refused once, never retried
    (refused,) = client.take_calls()
    assert (refused.key, refused.structured, refused.outcome) == (
        "k:rejected",
        "json_schema",
        "error",
    )


async def test_per_model_overrides(make_client: MakeClient) -> None:
    client, stub = make_client(
        judge_model="openai/judge", structured="schema", structured_models={"openai/judge": "text"}
    )
    await verdict(client, "a")
    await verdict(client, "b", model="openai/judge")
    assert client.modes() == {"openai/stub": "schema", "openai/judge": "text"}
    assert [b.get("response_format", {}).get("type") for b in stub.requests] == [
        "json_schema",
        None,
    ]
    assert [c.structured for c in client.take_calls()] == ["json_schema", "json_instructions"]


# --------------------------------------------------------------------------- auto


async def test_auto_against_llama_cpp_settles_on_json_object_with_its_schema(
    make_client: MakeClient,
) -> None:
    """llama-cpp-python's server answers json_schema with HTTP 500 "Input should be 'text' or
    'json_object'": one refused probe, no retries, then json_object answers carrying the
    schema (which the server enforces with a grammar)."""
    client, stub = make_client({"rejects": {"json_schema"}, "server": "llama.cpp"}, retries=3)
    assert client.modes() == {"openai/stub": "auto"}
    values = await asyncio.gather(*(verdict(client, f"q{i}") for i in range(6)))
    assert client.modes() == {"openai/stub": "grammar"}
    assert all(v != DEFAULT for v in values)
    # Six exchanges in flight at once: only the probe met the refusal, and it was not retried.
    assert stub.fault_log.count("rejected") == 1 and stub.calls == 7
    formats = [b.get("response_format", {}).get("type") for b in stub.requests]
    assert formats == ["json_schema"] + ["json_object"] * 6
    for body in stub.requests[1:]:  # the server enforces the schema: it is not pasted too
        assert _schema_from_text(system_of(body)) is None
        # its bounded score as the steps a grammar can hold it to (engine/llm/grammar.py)
        score = {**SCHEMA["properties"]["score"], "enum": list(range(11))}
        grammar = {**SCHEMA, "properties": {**SCHEMA["properties"], "score": score}}
        assert body["response_format"]["schema"] == grammar
    calls = client.take_calls()
    (refused,) = [c for c in calls if c.outcome == "error"]
    assert refused.key.endswith(":rejected") and refused.structured == "json_schema"
    assert "Input should be 'text' or 'json_object'" in (refused.error or "")
    answers = [c for c in calls if c is not refused]
    assert {(c.structured, c.outcome) for c in answers} == {("json_object_schema", "ok")}
    usage = RoundUsage.of(calls, "per-edge")
    assert (usage.structured, usage.structured_fallbacks, usage.fallbacks) == (6, 0, 0)
    assert usage.retries == 0


async def test_auto_against_a_server_refusing_both_formats_ends_in_text(
    make_client: MakeClient,
) -> None:
    client, stub = make_client({"rejects": {"json_schema", "json_object"}})
    values = [await verdict(client, key) for key in ("a", "b", "c")]
    assert all(v != DEFAULT for v in values)
    assert client.modes() == {"openai/stub": "text"}
    formats = [b.get("response_format", {}).get("type") for b in stub.requests]
    assert formats == ["json_schema", "json_object", "json_object", None, None, None]
    assert stub.fault_log == ["rejected", "rejected", "rejected", None, None, None]
    calls = {c.key: c for c in client.take_calls()}
    assert calls["a:rejected"].structured == "json_schema"
    assert calls["a:rejected:json_object_schema"].structured == "json_object_schema"
    assert calls["a:rejected:json_object"].structured == "json_object"
    assert "Input should be 'text'" in (calls["a:rejected:json_object"].error or "")
    assert [calls[k].structured for k in "abc"] == ["json_instructions"] * 3
    assert [calls[k].outcome for k in "abc"] == ["ok"] * 3


async def test_a_plain_500_is_still_retried(make_client: MakeClient) -> None:
    """Only a 5xx that names the format is a refusal; others are transient as before."""
    client, stub = make_client(retries=1)
    stub.script(["500", None])
    assert await verdict(client) != DEFAULT
    (call,) = client.take_calls()
    assert (call.structured, call.attempts, call.outcome) == ("json_schema", 2, "ok")
    assert client.modes() == {"openai/stub": "schema"}


async def test_replay_repeats_the_probe_without_requests(make_client: MakeClient) -> None:
    client, stub = make_client({"rejects": {"json_schema", "json_object"}})
    live = [await verdict(client, key) for key in ("a", "b")]
    calls = client.take_calls()
    served = stub.calls
    replay = LLMClient(client.settings, ReplayTransport(calls))
    assert [await verdict(replay, key) for key in ("a", "b")] == live
    assert stub.calls == served and replay.modes() == {"openai/stub": "text"}

    def kept(cs: list[LLMCall]) -> list[tuple]:
        return [(c.key, c.structured, c.outcome, c.response, c.error) for c in cs]

    assert kept(replay.take_calls()) == kept(calls)


# --------------------------------------------------------------------------- old saves


def test_records_saved_before_the_modes_still_load() -> None:
    old = {
        "key": "r0001:decide:Ann",
        "purpose": "decide",
        "agent": "Ann",
        "model": "openai/stub",
        "messages": [],
        "structured": "json_instructions",
        "outcome": "ok",
    }
    assert LLMCall.model_validate(old).structured == "json_instructions"
    usage = RoundUsage.model_validate({"calls": 3, "fallbacks": 1, "judge_mode": "per-edge"})
    assert (usage.structured, usage.missing_edges, usage.fallback_share) == (0, 0, 0.0)
    settings = LLMSettings.model_validate({"model": "openai/stub", "judge_mode": "batched"})
    assert settings.structured == "auto" and settings.structured_models == {}
    assert not settings.tolerate_fallbacks and settings.api_key_env is None


# --------------------------------------------------------------------------- a whole round


async def test_a_round_on_llama_cpp_uses_json_object_with_its_schema_without_fallbacks(
    make_client: MakeClient,
) -> None:
    """The issue's case: before, every structured call was retried and fell back, and the run
    "completed" silently. Now one refused probe, then real answers; the mind says "grammar"."""
    from engine import Simulation, load_library

    _, stub = make_client({"rejects": {"json_schema"}, "server": "llama.cpp"})
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=2, judge_mode="batched")
    sim = Simulation.new(load_library("tavern"), mind=settings, rounds=1)
    assert sim.mind.structured_modes() == {"openai/stub": "auto"}
    try:
        (record,) = await sim.run()
    finally:
        await sim.aclose()
    assert sim.mind.structured_modes() == {"openai/stub": "grammar"}
    usage = record.usage
    assert usage is not None and usage.structured >= 10
    assert (usage.structured_fallbacks, usage.missing_edges, usage.retries) == (0, 0, 0)
    assert stub.fault_log.count("rejected") == 1
    answered = {c.structured for c in record.llm_calls if c.answers}
    assert answered == {"json_object_schema"}
