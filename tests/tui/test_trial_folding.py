"""Issue 41: a trial's runs do not flood the run list. ``list`` shows a trial as one row
with its count (``--all`` or ``--trial ID`` lists its runs); the app's run browser folds
them into one row that Enter unfolds."""

from __future__ import annotations

import csv
import io

import pytest
from textual.widgets import DataTable

from engine import SaveStore, Simulation, load_library
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial
from tui.app import build_app
from tui.screens.runs import RunBrowser
from tui.screens.trial import TrialScreen

TRIAL_RUNS = 6  # 2 seeds × (a prefix and 2 arms)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SaveStore:
    """A bullying trial (2 seeds × 2 arms) beside one plain run."""
    store = SaveStore(tmp_path_factory.mktemp("saves"))
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=2, rounds=3, seeds=[1, 2], trial_id="tr",
        arms=named_arms("none,neglect", scenario), resamples=200,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    with Simulation.new(load_library("tavern"), store=store, run_id="plain", rounds=1):
        pass
    return store


def _rows(out: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(out)))


def test_list_folds_a_trial_into_one_row_with_its_count(store, run_cli):
    result = run_cli("list", "--saves", str(store.root), "--format", "csv")
    assert result.code == 0, result.err
    rows = _rows(result.out)
    assert sorted(r["run"] for r in rows) == ["plain", "tr"]
    trial = next(r for r in rows if r["run"] == "tr")
    assert trial["round"] == f"{TRIAL_RUNS} runs"
    assert "2 arms × 2 seeds" in trial["name / snapshots / problem"]
    assert "list --trial tr" in trial["name / snapshots / problem"]


def test_all_and_trial_list_the_trials_runs(store, run_cli):
    every = _rows(run_cli("list", "--saves", str(store.root), "--all", "--format", "csv").out)
    assert len(every) == TRIAL_RUNS + 1
    only = run_cli("list", "--saves", str(store.root), "--trial", "tr", "--format", "csv")
    runs = [r["run"] for r in _rows(only.out)]
    assert len(runs) == TRIAL_RUNS and all(r.startswith("tr-s") for r in runs)
    unknown = run_cli("list", "--saves", str(store.root), "--trial", "nope")
    assert unknown.code == 2
    assert unknown.err == ("socialsim: error: --trial 'nope': no runs of that trial; trials: tr\n")


async def test_the_browser_folds_a_trial_and_enter_unfolds_it(store):
    app = build_app("plain", saves=store.root)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the runs are listed on a worker thread
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser)
        assert set(browser.rows) == {"trial:tr", "plain"}
        table = browser.query_one(DataTable)
        table.move_cursor(row=list(browser.rows).index("trial:tr"))
        await pilot.press("enter")
        await pilot.pause()
        assert len(browser.rows) == 2 + TRIAL_RUNS and app.screen is browser
        arm = "tr-s1-neglect"
        assert arm in browser.rows
        cells = [str(c) for c in table.get_row(arm)]
        assert cells[1] == f"  {arm}"  # indented under its trial
        table.move_cursor(row=list(browser.rows).index("trial:tr"))
        await pilot.press("enter")
        await pilot.pause()
        assert set(browser.rows) == {"trial:tr", "plain"}
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, TrialScreen)


async def test_the_open_runs_trial_starts_unfolded(store):
    app = build_app("tr-s2-none", saves=store.root)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the runs are listed on a worker thread
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser)
        assert "tr-s2-none" in browser.rows
        row = browser.query_one(DataTable).cursor_row
        assert list(browser.rows)[row] == "tr-s2-none"


async def test_the_trial_screen_says_it_is_reading_until_its_table_is_filled(store, monkeypatch):
    """Issue 41: the summary's table was empty for seconds with no sign of loading."""
    shown: list[str] = []
    monkeypatch.setattr(TrialScreen, "load", lambda self: shown.append("load"))
    app = build_app("plain", saves=store.root)
    async with app.run_test(size=(120, 30)) as pilot:
        app.push_screen(TrialScreen(store, "tr"))
        await pilot.pause()
        screen = app.screen
        assert shown == ["load"]
        title = str(screen.query_one("#title").render())
        assert "reading its 6 runs" in title
        assert screen.query_one("#arms").loading
