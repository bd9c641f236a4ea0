"""Every reply bounded: a hostile or broken server (tests/llm_stub.py's ``slow``,
``endless``, ``huge`` and ``deep`` faults) costs one failed exchange, recorded, counted and
said, never a run held for ever, a reply kept whole, or a traceback."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from collections.abc import Callable

import pytest
from llm_stub import DEEP, StubLLM
from pydantic import BaseModel, Field

from engine.llm.bounds import (
    CHARS_PER_TOKEN,
    EVENT_SLACK,
    MAX_COUNT,
    Meter,
    ReplyCut,
    count,
    too_deep,
)
from engine.llm.client import LLMClient
from engine.llm.parsing import MAX_REPLY_CHARS, parse

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

MakeClient = Callable[..., tuple[LLMClient, StubLLM]]
MESSAGES = [
    {"role": "system", "content": "You judge."},
    {"role": "user", "content": "Is the roof leaking?"},
]


class Verdict(BaseModel):
    score: int = Field(ge=0, le=10)


DEFAULT = Verdict(score=0)


# --------------------------------------------------------------------------- the bounds


def test_depth_is_checked_outside_strings_and_counts_unclosed_brackets() -> None:
    assert not too_deep('{"a": [1, {"b": 2}]}')
    assert not too_deep('{"a": "' + "[" * 1000 + '"}')  # brackets inside a string
    assert too_deep("[" * 33)  # never closed: still 33 deep
    assert not too_deep("[]" * 1000)  # many, but shallow
    assert too_deep('{"a":' * DEEP + "1" + "}" * DEEP)


@pytest.mark.parametrize(
    "nested",
    ['{"a":' * DEEP + "1" + "}" * DEEP, "[" * DEEP + "]" * DEEP],
    ids=["objects", "arrays"],
)
def test_parse_fails_a_reply_nested_thousands_deep_without_raising(nested: str) -> None:
    parsed = parse(nested, Verdict)
    assert parsed.value is None
    assert "deeper than 32 levels" in parsed.problem


def test_a_meter_cuts_past_max_tokens_events_and_characters() -> None:
    meter = Meter(16)
    for _ in range(16 + EVENT_SLACK):
        meter.event()
    with pytest.raises(ReplyCut, match="ran past max_tokens 16"):
        meter.event()
    meter = Meter(16)
    meter.text("x" * 16 * CHARS_PER_TOKEN)
    with pytest.raises(ReplyCut, match="characters"):
        meter.text("x")
    with pytest.raises(ReplyCut, match="bytes"):
        Meter(16).received(Meter(16).max_bytes + 1)


@pytest.mark.parametrize(
    ("sent", "kept"),
    [(12, 12), ("12", 12), (-5, 0), (10**40, 0), ("1e999", 0), (float("nan"), 0), ([1], 0)],
)
def test_a_servers_token_counts_are_taken_only_when_they_are_counts(sent, kept) -> None:
    assert count(sent) == kept
    assert count(MAX_COUNT) == MAX_COUNT


# --------------------------------------------------------------------------- live exchanges


def _said(client: LLMClient) -> str:
    return "\n".join(client.said)


async def test_an_endless_stream_is_cut_at_max_tokens(make_client: MakeClient) -> None:
    client, stub = make_client(retries=2)
    stub.script(["endless"])
    said = await client.text(
        key="s", purpose="speak", agent="Ann", model=client.settings.model,
        messages=MESSAGES, sink=lambda piece: None, max_tokens=16,
    )  # fmt: skip
    assert said == ""
    (call,) = client.take_calls()
    assert (call.outcome, call.response, call.attempts) == ("fallback", None, 1)
    assert call.error == (
        f"openai/stub: the reply ran past max_tokens 16 ({16 + EVENT_SLACK + 1} events "
        "streamed); cut"
    )
    assert stub.calls == 1  # not retried: the same request would run on again
    assert call.error in _said(client)  # said at once, with its figure


async def test_an_endless_reply_sent_whole_is_cut_at_the_call_timeout(
    make_client: MakeClient,
) -> None:
    client, stub = make_client(retries=2, call_timeout=0.5)
    stub.script(["endless"])
    said = await client.text(
        key="n", purpose="narrate", agent="game master", model=client.settings.model,
        messages=MESSAGES,
    )  # fmt: skip
    assert said == ""
    (call,) = client.take_calls()
    assert call.outcome == "fallback"
    assert call.error == "openai/stub: a call ran past --call-timeout 0.5 s; cut"
    assert call.error in _said(client)
    assert stub.calls == 1


@pytest.mark.parametrize("streamed", [True, False])
async def test_a_slow_reply_is_cut_at_the_call_timeout_though_bytes_keep_coming(
    make_client: MakeClient, streamed: bool
) -> None:
    """Each piece comes well within ``--timeout`` (2 s): only the call's wall clock ends it."""
    client, stub = make_client({"hang_seconds": 30}, call_timeout=0.5)
    stub.script(["slow"])
    said = await client.text(
        key="s", purpose="speak", agent="Ann", model=client.settings.model,
        messages=MESSAGES, sink=(lambda piece: None) if streamed else None,
    )  # fmt: skip
    assert said == ""
    (call,) = client.take_calls()
    assert call.error == "openai/stub: a call ran past --call-timeout 0.5 s; cut"


@pytest.mark.parametrize("streamed", [True, False])
async def test_a_huge_reply_is_cut_as_it_arrives(make_client: MakeClient, streamed: bool) -> None:
    client, stub = make_client()
    stub.script(["huge"])
    said = await client.text(
        key="s", purpose="speak", agent="Ann", model=client.settings.model,
        messages=MESSAGES, sink=(lambda piece: None) if streamed else None, max_tokens=120,
    )  # fmt: skip
    assert said == ""
    (call,) = client.take_calls()
    assert call.outcome == "fallback" and call.response is None
    assert call.error is not None and call.error.startswith("openai/stub: the reply ran past ")
    assert stub.faults_served["huge"] == 1 and stub.calls == 1


async def test_a_reply_nested_thousands_deep_is_a_counted_failure(
    make_client: MakeClient,
) -> None:
    client, stub = make_client(max_tokens=4096, structured="schema")  # 60,000 characters pass
    stub.script(["deep", "deep"])
    got = await client.structured(
        key="k", purpose="test", agent="Ann", model=client.settings.model,
        messages=MESSAGES, schema=Verdict, default=DEFAULT,
    )  # fmt: skip
    assert got == DEFAULT
    calls = client.take_calls()
    assert [c.outcome for c in calls] == ["reasked", "fallback"]
    assert all("deeper than 32 levels" in (c.error or "") for c in calls)
    assert all(len(c.response or "") <= MAX_REPLY_CHARS + 40 for c in calls)  # kept bounded


async def test_a_server_that_describes_itself_for_ever_says_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``GET /props`` (asked before a local server's first call) answered with a body that
    never ends, a few bytes at a time: the question is given up, not the run held."""
    import asyncio

    from engine.llm import server

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            while True:
                writer.write(b"4\r\n[[[[\r\n")
                await writer.drain()
                await asyncio.sleep(0.01)
        except ConnectionError:
            writer.close()

    listening = await asyncio.start_server(endless, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    monkeypatch.setattr(server, "DESCRIBE_SECONDS", 0.5)
    async with listening:
        info = await server.describe("openai/x", f"http://127.0.0.1:{port}/v1")
    assert info == server.ServerInfo()
