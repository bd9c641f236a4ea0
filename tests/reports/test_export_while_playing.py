"""Exporting a run that is still playing: the app refuses while a round is in flight (pause
first), and the export itself takes the round count once, so rounds added meanwhile are
left for the next export instead of tearing the tables apart. engine/reports/export.py, x."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest
from cast import hold_rounds, record_notifications

from engine import SaveStore, Simulation, resolve_scenario
from engine.reports.export import export_run
from engine.saves.history import History
from tui.app import build_app
from tui.screens.forms import TextForm

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap; the working folder is tmp_path."""


def test_rounds_added_while_exporting_are_left_for_the_next_export(
    saves: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = Simulation.new(resolve_scenario("tavern"), store=SaveStore(saves), rounds=6)
    asyncio.run(sim.run(2))
    series = History.metrics_series

    def a_round_lands_first(history: History) -> list:
        asyncio.run(sim.step())  # the engine thread finishes a round mid-export
        return series(history)

    monkeypatch.setattr(History, "metrics_series", a_round_lands_first)
    export_run(sim.meta, sim.records, tmp_path / "out")
    sim.close()
    with (tmp_path / "out" / "metrics.csv").open(newline="", encoding="utf-8") as handle:
        rounds = {row["round"] for row in csv.DictReader(handle)}
    assert rounds == {"0", "1", "2"} and sim.round == 3


async def test_export_waits_until_the_run_is_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = hold_rounds(monkeypatch)
    app = build_app("tavern", saves=tmp_path / "saves")
    seen = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert app.main.running
        await pilot.press("x")
        await pilot.pause()
        assert app.screen is app.main and not isinstance(app.screen, TextForm)
        assert ("warning", "Pause the run before exporting.") in seen
        gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("x")  # once the round is in, the export dialog opens
        await pilot.pause()
        assert isinstance(app.screen, TextForm)
