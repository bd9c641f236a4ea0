"""Runs a real model played (Gemma 3 270M on llama-cpp-python, tests/fixtures/gemma_runs)
replay as they were played, although the checks of its replies have changed since: a reply
the record took is taken, one it let fall back falls back, and each model is asked in the
structured mode the run found, even when the probes that found it are not in the record."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from engine import SaveStore
from engine.round.replay import replay_run

GEMMA_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "gemma_runs"


@pytest.mark.parametrize(
    "run_id",
    [
        "tavern-20261206-071717-78b3",  # before the intent's mend and later checks
        "tavern-20261206-094733-db81",  # the same, two rounds
        "tavern-20261206-155903-87b1",  # round 1 failed after its probes, then played again
        # three rounds with re-asks held back (engine/llm/reasks.py), and a line mended to its
        # first part, which a check added after it (a scale's labels) refuses
        "iep-meeting-20261206-224453-bced",
    ],
)
def test_a_real_models_run_replays_as_it_was_played(tmp_path: Path, run_id: str) -> None:
    saves = tmp_path / "saves"
    shutil.copytree(GEMMA_RUNS / run_id, saves / run_id)
    store = SaveStore(saves)
    result = asyncio.run(replay_run(store, run_id, "replayed"))
    result.sim.close()
    assert result.rounds >= 1 and result.identical, result.diverged
    played, replayed = store.read_rounds(run_id), store.read_rounds("replayed")
    assert [r.actions for r in replayed] == [r.actions for r in played]
    meta = store.read_meta("replayed")
    assert meta.structured_modes == store.read_meta(run_id).structured_modes
