"""An interrupted ``replay`` leaves no run: it is played in a staging folder and published
whole; Ctrl+C and SIGTERM say once where it stopped."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from engine import SaveStore, Simulation


@pytest.fixture
def run(socialsim, saves: Path) -> Path:
    assert socialsim("run", "tavern", "--rounds", "4", "--run-id", "t", "-q").code == 0
    return saves / "t"


@pytest.mark.parametrize(
    ("signum", "word", "code"),
    [(signal.SIGINT, "interrupted", 130), (signal.SIGTERM, "terminated", 143)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_replay_stopped_by_a_signal_leaves_no_run(
    run: Path, saves: Path, socialsim, monkeypatch, signum: int, word: str, code: int
) -> None:
    real_advance = Simulation.advance

    async def advance(self: Simulation) -> None:
        if self.round == 2:
            os.kill(os.getpid(), signum)
            await asyncio.sleep(5)
        await real_advance(self)

    monkeypatch.setattr(Simulation, "advance", advance)
    result = socialsim("replay", "t", "--run-id", "rp")
    assert result.code == code, result.err
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith(f"socialsim: {word}; replay of t stopped at round 2/4; ")
    assert "nothing of it was kept" in result.err
    assert [r.run_id for r in SaveStore(saves).list_runs()] == ["t"]
    assert sorted(p.name for p in saves.iterdir() if p.name != ".verified") == ["t"]


def test_a_finished_replay_is_published_and_resumes_as_a_run(run: Path, saves: Path, socialsim):
    result = socialsim("replay", "t", "--run-id", "rp")
    assert result.code == 0, result.err
    rows = {r.run_id: r for r in SaveStore(saves).list_runs()}
    assert rows["rp"].ok and rows["rp"].rounds_done == 4
    assert sorted(p.name for p in saves.iterdir() if p.name != ".verified") == ["rp", "t"]
