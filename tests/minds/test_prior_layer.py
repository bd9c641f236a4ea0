"""A relational prior is a fixed prompt layer (Relational priors Sec. 3): an LLM run against
the local stub sends every agent the very same block, from the one template, in every
round's system prompt, while the relations the prompt states start from the scenario and
evolve apart from it."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import re
from collections import defaultdict
from collections.abc import AsyncIterator

import litellm
import pytest
from llm_stub import StubLLM

from engine import Simulation
from engine.core.priors import parse_prior, render
from engine.core.scenario import Scenario
from engine.llm.settings import LLMSettings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

ROUND = re.compile(r"^Round (\d+) of \d+\.$", re.MULTILINE)


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=11) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


def _agent(system: str) -> str:
    return re.search(r"^You are (\w+),", system, re.MULTILINE).group(1)  # type: ignore[union-attr]


async def test_the_block_is_the_same_every_round(stub: StubLLM, mini: Scenario) -> None:
    prior = parse_prior("trust:complete:+,-,+", mini.names)  # Ann-Bob +, Ann-Cy -, Bob-Cy +
    settings = LLMSettings(model="openai/stub", api_base=stub.url, tolerate_fallbacks=True)
    sim = Simulation.new(mini, seed=2, mind=settings, prior=prior)
    start = sim.state
    assert start.agents["Ann"].relations["Cy"].fav == 0.0  # distrust is no starting enmity
    await sim.run(3)
    await sim.aclose()
    seen: dict[str, set[int]] = defaultdict(set)
    for body in stub.requests:
        system, user = (m["content"] for m in body["messages"][:2])
        if not system.startswith("Scenario:"):  # a judge's prompt, not an agent's
            continue
        agent = _agent(system)
        block = render(prior, agent)
        assert block is not None
        assert f"\n\n{block}\n" in f"{system}\n", system  # whole, as the template made it
        assert system.count("Relations between the agents") == 1
        seen[agent] |= {int(n) for n in ROUND.findall(user)}
        if "Round 1 of" in user:  # the relations stated are the scenario's, not the prior's
            for other, rel in start.agents[agent].relations.items():
                assert f"- {other}: fav {rel.fav:+.2f}, {rel.status.value}." in user
    assert seen == {name: {1, 2, 3} for name in mini.names}
