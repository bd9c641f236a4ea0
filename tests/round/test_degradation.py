"""Degradation is loud: after a round in which more than half of the structured answers fell
back, the simulation saves the round and raises DegradedRunError (one line: model, server,
most common error) unless the settings tolerate fallbacks. Played against the local stub."""

from __future__ import annotations

import os
import re

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import litellm
import pytest
from llm_stub import StubLLM

import engine
from engine import SaveStore, Simulation, load_library
from engine.core.exchanges import FLAWS, LLMCall, RoundUsage, main_failure
from engine.errors import DegradedRunError, SocialsimError
from engine.llm.settings import LLMSettings
from engine.round.replay import replay_run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

Play = Callable[..., Simulation]


@pytest.fixture
async def play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Play]:
    """New saved runs of the tavern (5 agents) against fresh stubs; all closed afterwards."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    stubs: list[StubLLM] = []
    sims: list[Simulation] = []

    def make(stub_kwargs: dict[str, Any], **settings: Any) -> Simulation:
        stub = StubLLM(seed=3, **stub_kwargs)
        stub.start()
        stubs.append(stub)
        llm = LLMSettings(model="openai/stub", api_base=stub.url, timeout=2, retries=0, **settings)
        sim = Simulation.new(
            load_library("tavern"), mind=llm, store=SaveStore(tmp_path / "saves"), rounds=2
        )
        sims.append(sim)
        return sim

    yield make
    for sim in sims:
        await sim.aclose()
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    for stub in stubs:
        stub.stop()


async def test_a_round_of_500s_is_saved_then_stops_the_run(play: Play) -> None:
    sim = play({"faults": {"500": 1.0}})
    with pytest.raises(DegradedRunError) as caught:
        await sim.run()
    assert isinstance(caught.value, SocialsimError)
    message = str(caught.value)
    api_base = sim.meta.llm.api_base if sim.meta.llm else ""
    assert "\n" not in message and message.startswith("round 1: 100% of the structured answers")
    assert f"(openai/stub at {api_base}; most common error, " in message
    assert "most common error, 15x: InternalServerError after 1 attempts);" in message
    assert "--tolerate-fallbacks" in message
    # The round is saved and the run stays there.
    assert sim.round == 1
    saved = sim.store.read_rounds(sim.run_id) if sim.store else []
    assert [r.round for r in saved] == [0, 1]
    usage = saved[1].usage
    assert usage is not None and usage.structured > 5
    assert usage.structured_fallbacks == usage.structured and usage.fallback_share == 1.0
    assert usage.warning and usage.degraded


async def test_tolerated_fallbacks_play_on(play: Play) -> None:
    sim = play({"faults": {"500": 1.0}}, tolerate_fallbacks=True)
    done = await sim.run()
    assert [r.round for r in done] == [1, 2]
    assert all(r.usage and r.usage.degraded for r in done)


async def test_a_degraded_run_replays_as_it_was(play: Play) -> None:
    sim = play({"faults": {"500": 0.6}})
    with pytest.raises(DegradedRunError):
        await sim.run()
    store = sim.store
    assert store is not None
    result = await replay_run(store, sim.run_id)
    try:
        assert result.identical and result.rounds == sim.round
    finally:
        await result.sim.aclose()


async def test_a_healthy_run_is_not_stopped(play: Play) -> None:
    sim = play({"faults": {"schema": 0.2}})
    done = await sim.run()
    assert [r.round for r in done] == [1, 2]
    for r in done:
        assert r.usage is not None and not r.usage.degraded
        assert r.usage.structured_fallbacks < r.usage.structured / 2


# --------------------------------------------------------------------------- the measure


def call(key: str, outcome: str, structured: str = "json_schema", **extra: Any) -> LLMCall:
    return LLMCall(
        key=key,
        purpose="judge",
        agent="Ann",
        model="openai/m",
        messages=[],
        outcome=outcome,
        structured=structured,
        **extra,
    )


def test_the_share_counts_settled_answers_and_missing_edges() -> None:
    calls = [
        call("a", "reasked", error="delta: too big"),
        call("a:reask", "fallback", error="delta: too big"),  # one answer, fell back
        call("b", "ok"),
        call("b:rejected", "error", error="refused"),  # not an answer
        call("c", "repaired"),
        call("s", "fallback", structured="text", error="empty reply"),  # free text
        call("d:missing", "ok", missing=["Bo", "Cy"]),
    ]
    usage = RoundUsage.of(calls, "batched")
    assert (usage.structured, usage.structured_fallbacks, usage.missing_edges) == (4, 1, 2)
    assert usage.fallbacks == 2  # every fallback, free text included, as before
    assert usage.fallback_share == pytest.approx(3 / 6)
    assert usage.warning and not usage.degraded  # more than 10%; not more than half
    assert main_failure(calls) == ("openai/m", "the batched judge left out triggered edges", 2)


@pytest.mark.parametrize(
    ("fallbacks", "warning", "degraded"),
    [(0, False, False), (1, False, False), (2, True, False), (5, True, False), (6, True, True)],
)
def test_thresholds(fallbacks: int, warning: bool, degraded: bool) -> None:
    usage = RoundUsage(structured=10, structured_fallbacks=fallbacks)
    assert (usage.warning, usage.degraded) == (warning, degraded)
    assert RoundUsage().fallback_share == 0.0  # an offline round


def test_the_most_common_failure_names_a_degenerate_replys_flaw_in_words() -> None:
    calls = [
        call("a", "degenerate", flaw="scale"),
        call("a:again", "degenerate", flaw="scale"),  # asked again in vain: fell back
        call("b", "degenerate", flaw="wordless"),
        call("b:again", "ok"),
    ]
    failure = ("openai/m", "degenerate (scale: changes far off their scale)", 1)
    assert main_failure(calls) == failure
    raised = {  # every kind a check gives a flaw has its words
        kind
        for path in (Path(engine.__file__).parent).rglob("*.py")
        for kind in re.findall(r'Flaw\(\s*"(\w+)"', path.read_text())
    }
    assert raised == set(FLAWS)
