"""The report keys: ``w`` on the main screen writes the current run's HTML report, ``w`` on
the trial screen the trial's (and its arm runs' beside it); each says where."""

from __future__ import annotations

from pathlib import Path

import pytest
from cast import record_notifications
from textual.widgets import Input

from engine import SaveStore, load_library
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial
from tui.app import build_app
from tui.screens.forms import TextForm
from tui.screens.trial import TrialScreen

SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap; the working folder is tmp_path."""


async def _submit(pilot, typed: str) -> Path:
    """Press w, type ``typed`` (or keep the default), Enter; the path the dialog offered."""
    await pilot.press("w")
    await pilot.pause()
    form = pilot.app.screen
    assert isinstance(form, TextForm)
    form.query_one("#value", Input).value = typed
    offered = Path(form.default)
    await pilot.press("enter")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # written on a worker thread
    await pilot.pause()
    return offered


async def test_w_writes_the_run_report_and_says_where(tmp_path: Path):
    app = build_app("tavern", saves=tmp_path / "saves")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        run_id = app.screen.sim.run_id
        offered = await _submit(pilot, "")
        assert offered == (tmp_path / "saves" / "exports" / f"{run_id}.html").absolute()  # as x
        html = offered.read_text()
        assert 'id="round-1"' in html and 'id="plotly-js"' in html
        assert ("information", f"Wrote the report to {offered}.") in notes
        # a path that cannot be written: a notice says why
        (tmp_path / "file").write_text("")
        await _submit(pilot, str(tmp_path / "file" / "x.html"))
        severity, said = notes[-1]
        assert severity == "error" and "cannot write" in said


async def test_w_on_the_trial_screen_writes_the_trial_report(tmp_path: Path):
    store = SaveStore(tmp_path / "saves")
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=1, rounds=2, seeds=[1, 2], trial_id="t",
        arms=named_arms("none,neglect", scenario), resamples=200,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    app = build_app("tavern", saves=store.root)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = TrialScreen(store, "t")
        app.push_screen(screen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        out = tmp_path / "trial.html"
        await _submit(pilot, str(out))
        assert app.screen is screen
    assert 'class="arm-report"' not in out.read_text()  # one file, no arm reports
    assert not (tmp_path / "trial.runs").exists()
    assert ("information", f"Wrote the report to {out}.") in notes
