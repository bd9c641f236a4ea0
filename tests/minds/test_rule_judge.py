"""The offline mind's direct judges (:class:`~engine.minds.base.RuleJudge`) play the same
rounds as its judges behind the async Mind interface."""

from __future__ import annotations

from typing import Any

import pytest

from engine import OfflineMind, Simulation, load_library
from engine.core.priors import parse_prior
from engine.minds.base import RuleJudge


class AsyncJudges:
    """An offline mind seen only through the async Mind interface (no ``judge_round``)."""

    def __init__(self, mind: OfflineMind) -> None:
        self._mind = mind

    def __getattr__(self, name: str) -> Any:
        if name == "judge_round":
            raise AttributeError(name)
        return getattr(self._mind, name)


async def _rounds(scenario: str, seed: int, mind: Any, prior: str | None) -> list[str]:
    cast = load_library(scenario)
    lens = parse_prior(prior, cast.names[:4]) if prior else None
    sim = Simulation.new(cast, seed=seed, mind=mind, prior=lens)
    return [(await sim.step()).model_dump_json() for _ in range(4)]


@pytest.mark.parametrize(
    ("scenario", "seed", "prior"),
    [
        ("tavern", 1, None),
        ("village-assembly", 2, None),
        ("hospital", 3, None),
        ("village-assembly", 4, "trust:complete:+,-,-,+,+,-"),  # credit weighs acts
    ],
)
async def test_direct_judges_play_the_rounds_the_async_ones_do(scenario, seed, prior):
    """The direct judges read each agent's acts out of the round's (private ones heard by
    their parties only); the async ones, agent by agent."""
    assert isinstance(OfflineMind(seed), RuleJudge)
    assert not isinstance(AsyncJudges(OfflineMind(seed)), RuleJudge)
    direct = await _rounds(scenario, seed, OfflineMind(seed), prior)
    gathered = await _rounds(scenario, seed, AsyncJudges(OfflineMind(seed)), prior)
    assert direct == gathered
    assert any('"relation_changes":[{' in r for r in direct)  # edges were judged
