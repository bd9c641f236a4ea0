"""The offline mind's direct judges (:class:`~engine.minds.base.RuleJudge`) play the same
rounds as its judges behind the async Mind interface."""

from __future__ import annotations

from typing import Any

import pytest

from engine import OfflineMind, Simulation, load_library
from engine.minds.base import RuleJudge


class AsyncJudges:
    """An offline mind seen only through the async Mind interface (no ``judge_round``)."""

    def __init__(self, mind: OfflineMind) -> None:
        self._mind = mind

    def __getattr__(self, name: str) -> Any:
        if name == "judge_round":
            raise AttributeError(name)
        return getattr(self._mind, name)


async def _rounds(scenario: str, seed: int, mind: Any) -> list[str]:
    sim = Simulation.new(load_library(scenario), seed=seed, mind=mind)
    return [(await sim.step()).model_dump_json() for _ in range(4)]


@pytest.mark.parametrize(
    ("scenario", "seed"), [("tavern", 1), ("village-assembly", 2), ("hospital", 3)]
)
async def test_direct_judges_play_the_rounds_the_async_ones_do(scenario, seed):
    assert isinstance(OfflineMind(seed), RuleJudge)
    assert not isinstance(AsyncJudges(OfflineMind(seed)), RuleJudge)
    direct = await _rounds(scenario, seed, OfflineMind(seed))
    gathered = await _rounds(scenario, seed, AsyncJudges(OfflineMind(seed)))
    assert direct == gathered
    assert any('"relation_changes":[{' in r for r in direct)  # edges were judged
