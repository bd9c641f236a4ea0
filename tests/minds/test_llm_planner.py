"""The LLM value-driven planner: candidates from the model, selection by the agent's SVO."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
from llm_stub import StubLLM

from engine import Simulation, resolve_scenario
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients


@pytest.fixture
def stub():
    with StubLLM(seed=3) as server:
        yield server


async def test_value_driven_agents_plan_with_candidates_and_carry_theta(stub: StubLLM):
    scenario = resolve_scenario("class-election")
    assert all(a.kind == "value-driven" for a in scenario.agents)
    llm = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5, retries=1)
    sim = Simulation.new(scenario, seed=1, mind=llm)
    try:
        record = await sim.step()
    finally:
        await close_clients()
    plans = [c for c in record.llm_calls if c.purpose == "plan"]
    assert {c.agent for c in plans if not c.key.endswith(":reask")} == set(scenario.names)
    assert not [c for c in record.llm_calls if c.purpose == "decide"]
    system = plans[0].messages[0]["content"] + plans[0].messages[1]["content"]
    assert "social value orientation" in system and "wanted)" in system  # needs in words
    chosen = {a.speaker: a for a in record.actions}
    for name, agent in record.state.agents.items():
        if any(c.agent == name and c.outcome in ("ok", "repaired") for c in plans):
            assert agent.theta is not None and 0.0 <= agent.theta <= 90.0
            assert chosen[name].theta == agent.theta


async def test_llm_game_master_tells_the_scene(stub: StubLLM, mini_data: dict):
    from engine.core.scenario import parse_scenario

    mini_data.update(
        narrator="llm",
        schedule=[{"time": "08:00", "location": "hall"}, {"time": "08:20", "location": "roof"}],
        rules=["no shouting"],
    )
    scenario = parse_scenario(mini_data, "mini")
    llm = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5, retries=1)
    sim = Simulation.new(scenario, seed=1, mind=llm)
    try:
        record = await sim.step()
    finally:
        await close_clients()
    narration = [e for e in record.events if e.source == "narrator"]
    told = [c for c in record.llm_calls if c.purpose == "narrate"]
    assert len(narration) == 1 and len(told) == 1
    assert "08:00, hall." in told[0].messages[1]["content"]  # the scripted scene it tells
    assert narration[0].text == told[0].response.strip()
