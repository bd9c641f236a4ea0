"""The trial screen, reached from the run browser (``o``, then ``t`` on a trial's run): its
arms with an outcome and paired differences, the runs of an arm, the diff view of two arms,
opening a run, and playing the runs a trial still misses with a progress line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from engine import SaveStore, load_library
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import TrialSpec, arm_done, plan, run_trial, save_spec
from tui.app import build_app
from tui.screens.diff import DiffScreen
from tui.screens.runs import RunBrowser
from tui.screens.trial import TrialScreen

SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


def cells(screen: TrialScreen, table: str) -> list[list[str]]:
    grid = screen.query_one(f"#{table}", DataTable)
    return [[str(c) for c in grid.get_row_at(k)] for k in range(grid.row_count)]


def text(screen: TrialScreen, widget: str) -> str:
    return str(screen.query_one(f"#{widget}", Static).content)


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def small_trial(store: SaveStore, scenario) -> TrialSpec:
    """Trial "p" of bullying, saved: two arms forked at round 1, one seed, 2 rounds."""
    spec = plan(
        store, scenario, "bullying", fork_at=1, rounds=2,
        arms=named_arms("none,neglect", scenario), seeds=[1], trial_id="p", resamples=100,
    )  # fmt: skip
    save_spec(store, spec)
    return spec


async def test_trial_screen_lists_arms_opens_runs_diffs_and_plays_the_missing(saves: Path):
    store = SaveStore(saves)
    scenario = load_library("bullying")
    spec = plan(
        store,
        scenario,
        "bullying",
        fork_at=3,
        rounds=5,
        arms=named_arms("none,neglect,supportive-cooperative", scenario),
        seeds=[1, 2, 3],
        trial_id="t",
        resamples=1000,
    )
    run_trial(spec, store, LocalExecutor(2))
    missing = spec.arm_id(3, spec.arms[1])
    store.delete(missing)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the runs are listed on a worker thread
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser)
        # the trial's runs are folded into one row, which Enter unfolds
        assert "trial:t" in browser.rows and not any(i.startswith("t-s") for i in browser.rows)
        browser.query_one(DataTable).move_cursor(row=list(browser.rows).index("trial:t"))
        await pilot.press("enter")
        await pilot.pause()
        ids = list(browser.rows)
        trial_runs = [i for i in ids if i.startswith("t-s")]
        assert ids.index(trial_runs[-1]) - ids.index(trial_runs[0]) == len(trial_runs) - 1
        browser.query_one(DataTable).move_cursor(row=ids.index(spec.arm_id(1, spec.arms[2])))
        await pilot.pause()
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrialScreen)
        assert "3 seeds × 3 arms, fork at round 3 of 5" in text(screen, "title")
        assert "2 seeds complete, 1 run missing" in text(screen, "title")
        assert "outcome survey.rses:Alice after round 5" in text(screen, "outcome")
        arms = cells(screen, "arms")
        assert [r[0] for r in arms] == ["none", "neglect", "supportive-cooperative"]
        assert [r[2] for r in arms] == ["3/3", "2/3", "3/3"]
        assert arms[0][4] == "" and arms[1][4].startswith("-") and arms[2][4].startswith("+")
        assert "[" in arms[1][3]  # a mean with its interval
        await pilot.press("]")
        await pilot.pause()
        assert "survey.rses:Alice" not in text(screen, "outcome")
        await pilot.press("[")
        await pilot.pause()

        # the runs of the highlighted arm; d compares one with the reference arm's run
        screen.query_one("#arms", DataTable).move_cursor(row=1)
        await pilot.pause()
        assert [r[2] for r in cells(screen, "runs")] == ["finished", "finished", "missing"]
        screen.query_one("#runs", DataTable).focus()
        await pilot.press("d")
        await settle(pilot)
        diff = app.screen
        assert isinstance(diff, DiffScreen)
        assert (diff.comparison.meta_a.run_id, diff.comparison.meta_b.run_id) == (
            spec.arm_id(1, spec.arms[0]),
            spec.arm_id(1, spec.arms[1]),
        )
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen

        # m: neglect becomes the reference of the differences
        await pilot.press("m")
        await pilot.pause()
        arms = cells(screen, "arms")
        assert arms[1][4] == "" and arms[0][4].startswith("+")

        # r plays the missing run, with a progress line
        await pilot.press("r")
        deadline = time.monotonic() + 60
        while "played" not in text(screen, "progress") and time.monotonic() < deadline:
            await pilot.pause(0.1)
        await settle(pilot)
        assert "played 1 runs; the trial is complete" in text(screen, "progress")
        assert arm_done(store, spec, 3, spec.arms[1])
        assert "3 seeds complete" in text(screen, "title")

        # Enter on a run opens it in the app
        runs = screen.query_one("#runs", DataTable)
        runs.focus()
        runs.move_cursor(row=2)
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert app.sim.run_id == missing


@pytest.mark.parametrize("how", ["close the screen", "exit the app"])
async def test_a_playing_trial_is_told_to_stop_when_its_screen_goes(
    saves: Path, monkeypatch, how: str
):
    import threading

    store = SaveStore(saves)
    scenario = load_library("bullying")
    spec = small_trial(store, scenario)
    seen: dict[str, bool] = {}
    started, ended = threading.Event(), threading.Event()

    def playing(spec, store, executor, progress, stop, begun):
        begun(2)
        started.set()
        seen["stopped"] = stop.wait(timeout=10)
        ended.set()

    monkeypatch.setattr("tui.screens.trial.run_trial", playing)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = TrialScreen(store, spec.trial_id)
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press("r")
        assert started.wait(timeout=10)
        if how == "close the screen":
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen is not screen
    assert ended.wait(timeout=15)
    assert seen == {"stopped": True}


async def test_a_run_is_opened_and_the_report_written_off_the_ui_thread(saves: Path, monkeypatch):
    """Opening a trial's run and writing its report take seconds at hundreds of agents: a
    notice says so at once, a key pressed meanwhile is answered, then the result lands."""
    import threading

    from cast import hold_call, record_notifications

    from engine import Simulation
    from engine.reports import html
    from tui.screens.forms import TextForm

    store = SaveStore(saves)
    scenario = load_library("bullying")
    spec = small_trial(store, scenario)
    other = Simulation.new(scenario, store=store, run_id="other")
    other.close()
    resume = Simulation.resume  # the trial's runs are not played: "other" stands in

    def resume_other(run_id, store, mind=None):
        return resume("other", store, mind)

    monkeypatch.setattr(Simulation, "resume", staticmethod(resume_other))
    monkeypatch.setattr(html, "write_trial_report", lambda *_: [saves / "p.html"])
    opening, opened_on = hold_call(monkeypatch, Simulation, "resume", static=True)
    writing, written_on = hold_call(monkeypatch, html, "write_trial_report")
    app = build_app("tavern", saves=saves)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen, opened = TrialScreen(store, spec.trial_id), []
        await app.push_screen(screen, opened.append)
        await settle(pilot)
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, TextForm)
        await pilot.press("enter")
        await pilot.pause()
        assert any(m.startswith("Writing the report of p") for _, m in notes)
        screen.query_one("#runs", DataTable).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert any(m.startswith("Opening p-") for _, m in notes)
        arms = screen.query_one("#arms", DataTable)
        arms.focus()
        await pilot.press("down")  # answered while both are under way
        await pilot.pause()
        assert arms.cursor_row == 1 and not opening.is_set() and not writing.is_set()
        writing.set()  # the report lands while the run is still being opened
        wrote = f"Wrote the report to {saves / 'p.html'}."
        for _ in range(500):
            if any(m == wrote for _, m in notes):
                break
            await pilot.pause(0.02)
        assert any(m == wrote for _, m in notes) and app.screen is screen
        opening.set()
        await settle(pilot)
        assert app.screen is not screen and [sim.run_id for sim in opened] == ["other"]
        opened[0].close()
    assert opened_on[0] is not threading.main_thread()
    assert written_on[0] is not threading.main_thread()
