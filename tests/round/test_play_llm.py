"""A person plays an agent of an LLM run (the local stub): the model is never asked for that
agent's turns but judges it like the others, and the replay answers both from the record."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from collections.abc import AsyncIterator

import pytest
from llm_stub import StubLLM

from engine import SaveStore, Simulation
from engine.core.scenario import Scenario
from engine.llm.settings import LLMSettings
from engine.minds.human import Turn
from engine.round.replay import replay_run


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    import litellm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=4) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


def person(turn: Turn) -> None:
    if turn.phase == "decide":
        turn.decide(10, "public", "Bob", "ask Bob for the bank statement")
    else:
        turn.say(f"Bob, show us the statement (round {turn.ctx.round}).")


async def test_an_llm_run_with_a_person_replays_identically(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="llm-played") as sim:
        sim.play({"Ann": "Dana"})
        sim.seat(person)
        await sim.run(2)
        await sim.mind.aclose()
    calls = [c for r in store.history("llm-played").logs(1) for c in r.llm_calls]
    asked = {(c.agent, c.purpose) for c in calls}
    assert ("Bob", "decide") in asked and ("Cy", "speak") in asked
    assert not {("Ann", "decide"), ("Ann", "speak")} & asked  # the person's turns
    assert ("Ann", "emotion") in asked  # judged like the others
    heard = [c for c in calls if c.agent == "Bob" and c.purpose == "speak"]
    assert any("show us the statement" in str(c.messages) for c in heard)

    requests = stub.calls
    result = await replay_run(store, "llm-played", "llm-played-replay")
    result.sim.close()
    assert result.identical, result.diverged
    assert stub.calls == requests  # nobody asked: neither the model nor the person
    ann = [a for r in result.sim.records[1:] for a in r.actions if a.speaker == "Ann"]
    assert [(a.actor, a.player) for a in ann] == [("human", "Dana")] * 2
