"""The batched judge checks its reply is complete: edges it left out or judged twice are
re-asked once, alone (key suffix ``:missing``, a schema restricted to them); those still
missing get no change and are counted (RoundUsage.missing_edges). Against the local stub."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from collections.abc import AsyncIterator
from dataclasses import replace

import litellm
import pytest
from llm_stub import StubLLM

from engine import Simulation, load_library
from engine.llm.settings import LLMSettings
from engine.minds.base import AgentContext
from engine.minds.llm import LLMMind
from engine.records import RoundUsage
from engine.rules import relation_triggers
from engine.state import ALL, Action, Mode

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=6) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


def observer(round_no: int) -> tuple[AgentContext, dict[str, list[Action]]]:
    """The tavern's first agent, having heard each of the four others speak publicly."""
    scenario = load_library("tavern")
    me, *others = scenario.names
    heard = [
        Action(
            speaker=o, urgency=5, mode=Mode.PUBLIC, target=ALL, utterance=f"{o} speaks.", order=i
        )
        for i, o in enumerate(others, 1)
    ]
    ctx = Simulation.new(scenario).contexts(round_no, [])[me]
    return replace(ctx, heard=heard), relation_triggers(me, heard, scenario.names)


def mind(stub: StubLLM) -> LLMMind:
    return LLMMind(LLMSettings(model="openai/stub", api_base=stub.url, judge_mode="batched"))


def enum_of(body: dict) -> list[str]:
    defs = body["response_format"]["json_schema"]["schema"]["$defs"]
    return defs["EdgeOut"]["properties"]["target"]["enum"]


async def test_a_complete_reply_is_one_call(stub: StubLLM) -> None:
    ctx, triggers = observer(1)
    m = mind(stub)
    judged = await m.judge_relations(ctx, triggers)
    assert list(judged) == list(triggers) and all(j.summary for j in judged.values())
    (call,) = m.take_calls()
    assert call.key == f"r0001:judge:{ctx.name}" and call.missing == []
    schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["judgements"]["minItems"] == len(triggers) == 4
    assert "judgements" in schema["required"]
    await m.aclose()


async def test_left_out_and_repeated_edges_are_reasked_once(stub: StubLLM) -> None:
    ctx, triggers = observer(1)
    first, _, third, fourth = triggers
    m = mind(stub)
    stub.script(["incomplete", None])  # the reply judges first, second, first: 3 missing
    judged = await m.judge_relations(ctx, triggers)
    assert list(judged) == list(triggers) and all(j.summary for j in judged.values())
    judge, missing = m.take_calls()
    assert (judge.key, judge.outcome) == (f"r0001:judge:{ctx.name}", "ok")
    assert (missing.key, missing.outcome) == (f"r0001:judge:{ctx.name}:missing", "ok")
    assert missing.purpose == "judge" and missing.missing == []
    # The re-ask names exactly the edges missing (the repeated one included), schema and prompt.
    assert enum_of(stub.requests[1]) == [first, third, fourth]
    prompt = stub.requests[1]["messages"][1]["content"]
    assert [f"Toward {o}:" in prompt for o in triggers] == [True, False, True, True]
    assert RoundUsage.of([judge, missing], "batched").missing_edges == 0
    await m.aclose()


async def test_edges_still_missing_get_no_change_and_are_counted(stub: StubLLM) -> None:
    ctx, triggers = observer(2)
    first, second, third, fourth = triggers
    m = mind(stub)
    stub.script(["incomplete", "incomplete"])
    judged = await m.judge_relations(ctx, triggers)
    emotion = await m.judge_emotion(ctx, ctx.heard)  # the same batched call, not another
    assert stub.calls == 2 and isinstance(emotion, float)
    assert judged[second].summary  # judged once in the first reply
    for other in (first, third, fourth):
        assert (judged[other].delta, judged[other].summary) == (0.0, "")
    calls = m.take_calls()
    assert calls[-1].key.endswith(":missing") and calls[-1].missing == [first, third, fourth]
    usage = RoundUsage.of(calls, "batched")
    assert (usage.structured, usage.structured_fallbacks, usage.missing_edges) == (2, 0, 3)
    assert usage.fallback_share == pytest.approx(3 / 5) and usage.degraded
    await m.aclose()


async def test_a_reply_that_fell_back_whole_is_not_reasked(stub: StubLLM) -> None:
    ctx, triggers = observer(3)
    m = LLMMind(
        LLMSettings(model="openai/stub", api_base=stub.url, judge_mode="batched", retries=0)
    )
    stub.script(["500"])
    judged = await m.judge_relations(ctx, triggers)
    assert all(j.delta == 0.0 for j in judged.values()) and stub.calls == 1
    (call,) = m.take_calls()
    assert call.outcome == "fallback" and call.missing == []
    await m.aclose()
