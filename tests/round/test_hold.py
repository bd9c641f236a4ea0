"""Holding a run mid-round (the local stub): no new LLM call goes out while held, the calls
in flight finish, and the round goes on where it stood when released."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
from collections.abc import AsyncIterator

import pytest
from llm_stub import StubLLM

from engine import SaveStore, Simulation
from engine.core.scenario import Scenario
from engine.llm.settings import LLMSettings


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    import litellm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=4, latency=0.2) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


async def until(condition, what: str) -> None:
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


async def test_a_held_run_sends_no_new_call_and_goes_on_when_released(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="held") as sim:
        task = asyncio.create_task(sim.run(1))
        await until(lambda: stub.calls >= 3 and sim.progress.now().in_flight, "a call in flight")
        await asyncio.to_thread(sim.hold)  # from another thread, as the app's UI does
        assert sim.held and sim.progress.now().held
        await until(lambda: sim.progress.now().in_flight == 0, "the calls in flight done")
        sent = stub.calls
        await asyncio.sleep(1.0)
        assert stub.calls == sent  # nothing new went out
        assert not task.done() and sim.round == 0
        await asyncio.to_thread(sim.release)
        assert not sim.held
        await task
        assert sim.round == 1 and stub.calls > sent
        await sim.mind.aclose()
