"""The LLM value-driven planner: candidates from the model, selection by the agent's SVO."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
import random
import re
from typing import Any

import pytest
from llm_stub import StubLLM, generate_from_schema

from engine import Simulation, resolve_scenario
from engine.core.state import RoundRecord
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients


@pytest.fixture
def stub():
    with StubLLM(seed=3) as server:
        yield server


async def _first_round(stub: StubLLM) -> RoundRecord:
    """class-election's first round (its agents all value-driven) against ``stub``."""
    llm = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5, retries=1)
    sim = Simulation.new(resolve_scenario("class-election"), seed=1, mind=llm)
    try:
        return await sim.step()
    finally:
        await close_clients()


async def test_value_driven_agents_plan_with_candidates_and_carry_theta(stub: StubLLM):
    scenario = resolve_scenario("class-election")
    assert all(a.kind == "value-driven" for a in scenario.agents)
    record = await _first_round(stub)
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


class SilentCandidate(StubLLM):
    """The first planner's every candidate speaks privately meaning to "stay silent", asked
    again too (Gemma 3 270M's Jade and Leo did); the other planners' plans the stub's own."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        name = re.search(r"You are (\w+),", str(messages[0].get("content")))
        if name is None or name.group(1) != self.planner or "Plan now." not in str(messages):
            return None
        form = body.get("response_format") or {}
        schema = form.get("json_schema", {}).get("schema") or form.get("schema")
        plan = generate_from_schema(schema, random.Random(0))
        aside = {"mode": "private", "target": self.to}
        for candidate in plan["candidates"]:
            candidate.update(action=aside, intent="stay silent")
        return json.dumps(plan)


async def test_a_planner_speaking_only_to_stay_silent_keeps_silent():
    """Every candidate of a plan speaks meaning to stay silent, and so does the plan asked
    again: the agent keeps silent, as its intent says, and is asked for no words."""
    scenario = resolve_scenario("class-election")
    planner, to = scenario.names[0], scenario.names[1]
    with SilentCandidate(seed=3) as stub:
        stub.planner, stub.to = planner, to
        record = await _first_round(stub)
    act = next(a for a in record.actions if a.speaker == planner)
    assert (act.mode, act.target, act.intent, act.utterance) == ("silent", None, "stay silent", "")
    mine = [c for c in record.llm_calls if c.agent == planner]
    assert not [c for c in mine if c.purpose == "speak"]
    asked = [c for c in mine if c.purpose == "plan"]
    assert [c.outcome for c in asked] == ["degenerate", "repaired"]
    assert asked[-1].flaw == "contradicts"
    assert "candidate 1: its intent 'stay silent' keeps silent, but it speaks (private)" in (
        asked[0].error or ""
    )


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
