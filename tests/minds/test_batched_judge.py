"""The batched judge checks its reply is complete: edges it left out (a repeated judgement
may have taken their place) are re-asked once, alone (key suffix ``:missing``, a schema
restricted to them); those still missing get no change and are counted
(RoundUsage.missing_edges). Against the local stub; records made before the re-ask existed
replay as they were played."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import json
from collections.abc import AsyncIterator
from dataclasses import replace

import litellm
import pytest
from llm_stub import StubLLM

from engine import Simulation, load_library
from engine.core.exchanges import LLMCall, RoundUsage
from engine.core.rules import relation_triggers
from engine.core.state import ALL, Action, Mode
from engine.llm.settings import LLMSettings
from engine.llm.transport import ReplayTransport
from engine.minds.base import AgentContext
from engine.minds.llm import LLMMind

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


async def test_left_out_edges_are_reasked_once(stub: StubLLM) -> None:
    ctx, triggers = observer(1)
    _, _, third, fourth = triggers
    m = mind(stub)
    stub.script(["incomplete", None])  # the reply judges first, second, first again
    judged = await m.judge_relations(ctx, triggers)
    assert list(judged) == list(triggers) and all(j.summary for j in judged.values())
    judge, missing = m.take_calls()
    assert (judge.key, judge.outcome) == (f"r0001:judge:{ctx.name}", "ok")
    assert (missing.key, missing.outcome) == (f"r0001:judge:{ctx.name}:missing", "ok")
    assert missing.purpose == "judge" and missing.missing == []
    # The re-ask names exactly the edges missing, in its schema and its prompt.
    assert enum_of(stub.requests[1]) == [third, fourth]
    prompt = stub.requests[1]["messages"][1]["content"]
    assert [f"Toward {o}:" in prompt for o in triggers] == [False, False, True, True]
    assert RoundUsage.of([judge, missing], "batched").missing_edges == 0
    await m.aclose()


async def test_edges_still_missing_get_no_change_and_are_counted(stub: StubLLM) -> None:
    ctx, triggers = observer(2)
    first, second, third, fourth = triggers
    m = mind(stub)
    # The reply judges first, second, first; the re-ask for third and fourth, third twice.
    stub.script(["incomplete", "incomplete"])
    judged = await m.judge_relations(ctx, triggers)
    emotion = await m.judge_emotion(ctx, ctx.heard)  # the same batched call, not another
    assert stub.calls == 2 and isinstance(emotion, float)
    assert all(judged[o].summary for o in (first, second, third))
    assert (judged[fourth].delta, judged[fourth].summary) == (0.0, "")
    calls = m.take_calls()
    assert calls[-1].key.endswith(":missing") and calls[-1].missing == [fourth]
    usage = RoundUsage.of(calls, "batched")
    assert (usage.structured, usage.structured_fallbacks, usage.missing_edges) == (2, 0, 1)
    assert usage.fallback_share == pytest.approx(1 / 3) and usage.warning and not usage.degraded
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


async def test_records_made_before_the_reask_replay_as_played() -> None:
    """An earlier run's reply: a judgement missing, one repeated, changes beyond the caps the
    schemas now state. It replays as played: the repeat's last judgement, no change for the
    missing edge (the re-ask it never made is a fallback), values clipped by the engine."""
    ctx, triggers = observer(1)
    first, second, third, fourth = triggers
    reply = {
        "delta": 0.8,
        "needs": {"self_worth": 5.0},
        "judgements": [
            {"target": first, "delta_fav": 0.1, "summary": "one"},
            {"target": second, "delta_fav": -0.6, "summary": "two"},
            {"target": third, "delta_fav": 0.2, "summary": "three"},
            {"target": first, "delta_fav": 0.3, "summary": "one, again"},
        ],
    }
    key = f"r0001:judge:{ctx.name}"
    recorded = LLMCall(
        key=key,
        purpose="judge",
        agent=ctx.name,
        model="openai/stub",
        messages=[],
        response=json.dumps(reply),
        structured="json_schema",
    )
    settings = LLMSettings(model="openai/stub", judge_mode="batched")
    m = LLMMind(settings, transport=ReplayTransport([recorded]))
    judged = await m.judge_relations(ctx, triggers)
    assert {o: j.summary for o, j in judged.items()} == {
        first: "one, again",
        second: "two",
        third: "three",
        fourth: "",
    }
    assert judged[second].delta == -0.6  # the rules clip it to -0.3 when applied
    assert await m.judge_emotion(ctx, ctx.heard) == 0.8
    assert await m.judge_needs(ctx, ctx.heard) == {"self_worth": 2.0}
    judge, missing = m.take_calls()
    assert (judge.key, judge.outcome) == (key, "ok")
    assert (missing.key, missing.outcome, missing.missing) == (
        f"{key}:missing",
        "fallback",
        [fourth],
    )
    await m.aclose()


class Rival(StubLLM):
    """Every judgement warms toward its agent and calls it a rival, asked again too
    (Gemma 3 270M judged Kayla's ally Brooke "rival" with +0.3, and she stood at +1.00)."""

    def answer(self, body: dict) -> str | None:
        schema = body["response_format"]["json_schema"]["schema"]
        targets = schema["$defs"]["EdgeOut"]["properties"]["target"]["enum"]
        edges = [
            {"target": t, "delta_fav": 0.3, "status": "rival", "summary": f"{t} was kind."}
            for t in targets
        ]
        return json.dumps({"delta": 0.1, "judgements": edges})


async def test_a_status_against_its_change_is_left_out_and_the_change_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ctx, triggers = observer(1)
    first = next(iter(triggers))
    with Rival(seed=6) as server:
        m = mind(server)
        judged = await m.judge_relations(ctx, triggers)
        await m.aclose()
    assert [(j.delta, j.status) for j in judged.values()] == [(0.3, None)] * len(triggers)
    assert all(j.summary.endswith("was kind.") for j in judged.values())
    flawed, taken = m.take_calls()
    assert (flawed.outcome, flawed.flaw, taken.outcome, taken.flaw) == (
        "degenerate",
        "contradicts",
        "repaired",
        "contradicts",
    )
    assert f"the judgement of {first}: its status rival goes against its change" in (
        taken.error or ""
    )
    assert "the status left out" in (taken.error or "")


def test_a_status_the_way_of_its_change_is_kept_and_both_flaws_are_mended() -> None:
    """A rival or an enemy made while cooling, an ally while warming, any status with no
    change, or neutral: kept. A flawed summary is found first, and mended as the records of
    earlier runs mended it (its status as it came); a single edge's judgement is read
    alike."""
    from engine.minds import checks
    from engine.minds.llm import RelationOut, _observer_schema

    check = checks.judgements(["Ann", "Bob"])
    out = _observer_schema(("Ann", "Bob"))

    def judged(*edges: tuple[str, float, str | None, str]) -> object:
        items = [dict(target=t, delta_fav=d, status=s, summary=m) for t, d, s, m in edges]
        return out.model_validate({"delta": 0.0, "judgements": items})

    sound = [("Ann", -0.2, "rival", "She lied."), ("Bob", 0.2, "ally", "He helped.")]
    assert check(judged(*sound)) is None
    assert (
        check(judged(("Ann", 0.0, "enemy", "Nothing new."), ("Bob", 0.3, "neutral", "Fine.")))
        is None
    )
    flaw = check(judged(("Ann", 0.2, "rival", '": 0, "'), ("Bob", -0.1, "ally", "He lied.")))
    assert flaw is not None and (flaw.kind, flaw.mending) == ("wordless", "the summary left out")
    kept = [(j.delta_fav, j.status, j.summary) for j in flaw.mended.judgements]
    assert kept == [(0.2, "rival", ""), (-0.1, "ally", "He lied.")]
    flaw = check(flaw.mended)  # (as a re-ask that comes back so is read)
    assert flaw is not None and (flaw.kind, flaw.mending) == ("contradicts", "the status left out")
    assert [j.status for j in flaw.mended.judgements] == [None, None]
    one = checks.relation(["Ann", "Bob"])(
        RelationOut(delta_fav=0.25, status="enemy", summary="Kind.")
    )
    assert one is not None and one.kind == "contradicts" and one.mended.status is None
    assert checks.relation(["Ann"])(RelationOut(delta_fav=-0.25, status="enemy")) is None
