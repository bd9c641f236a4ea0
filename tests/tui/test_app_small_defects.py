"""The smaller defects of issue 26, each seen in use: the run browser's status line, its
stale messages, End and the parent column at 80×24, `d` offering runs of the same scenario
(others behind a choice, with a warning), no run left by a launch that played nothing, and
a task's score in the header with its scale."""

from __future__ import annotations

from pathlib import Path

import pytest
from cast import screen_text
from textual.widgets import DataTable, Label, OptionList

from engine import SaveStore, Simulation, resolve_scenario
from engine.saves.runmeta import TaskOutcome
from tui.app import build_app
from tui.screens.diff import OTHERS, DiffScreen, RunPicker
from tui.screens.forms import ConfirmForm
from tui.screens.runs import RunBrowser
from tui.widgets.header import header_text, task_score


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def message(browser: RunBrowser) -> str:
    return str(browser.query_one("#message", Label).content)


async def browser_with_runs(pilot, store: SaveStore) -> tuple[RunBrowser, list[str]]:
    """A played round, three branches of the open run; the browser open."""
    await pilot.press("n")
    await settle(pilot)
    first = pilot.app.sim.run_id
    ids = [first, *(store.branch(first, 1).run_id for _ in range(3))]
    await pilot.press("o")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # the runs are listed on a worker thread
    await pilot.pause()
    browser = pilot.app.screen
    assert isinstance(browser, RunBrowser)
    return browser, ids


async def test_browser_status_line_after_a_delete_and_a_stale_refusal(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        browser, ids = await browser_with_runs(pilot, store)
        table = browser.query_one(DataTable)
        doomed = ids[1]
        table.move_cursor(row=list(browser.rows).index(doomed))
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmForm)
        await pilot.press("y")
        await pilot.pause()
        assert message(browser) == f"Deleted {doomed}."
        line = next(ln for ln in screen_text(app) if "Deleted" in ln)
        assert line.strip() == f"Deleted {doomed}."  # nothing of the screen beneath
        here = list(browser.rows).index(app.sim.run_id)
        table.move_cursor(row=here)
        await pilot.press("d")  # the open run: refused inline
        await pilot.pause()
        assert "open" in message(browser)
        await pilot.press("up" if here else "down")  # the refusal was about the row before
        await pilot.pause()
        assert message(browser) == ""


async def test_browser_end_goes_down_and_the_parent_shows_at_80x24(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        browser, ids = await browser_with_runs(pilot, store)
        table = browser.query_one(DataTable)
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == table.row_count - 1 and table.scroll_x == 0
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0
        shown = "\n".join(screen_text(app))
        fork = ids[0].split("-")[-2:]  # the parent without the scenario and date it shares
        assert f"…{'-'.join(fork)}@1" in shown


async def test_d_offers_the_same_scenario_and_others_behind_a_choice(saves: Path) -> None:
    store = SaveStore(saves)
    other = Simulation.new(resolve_scenario("demolition"), seed=0, store=store, run_id="demo")
    other.close()
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        sibling = Simulation.new(resolve_scenario("village-assembly"), store=store, run_id="v2")
        sibling.close()
        await pilot.press("d")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, RunPicker)
        options = picker.query_one(OptionList)
        ids = [options.get_option_at_index(k).id for k in range(options.option_count)]
        assert ids == ["v2", OTHERS]  # demolition only behind the last choice
        options.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is picker
        ids = [options.get_option_at_index(k).id for k in range(options.option_count)]
        assert ids == ["demo"]
        assert "matched by id" in " ".join(str(s.content) for s in picker.query("Static"))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause()
        diff = app.screen
        assert isinstance(diff, DiffScreen)
        summary = "\n".join(screen_text(app))
        assert "two scenarios (demolition, village-assembly)" in summary
        assert "matched by id" in summary


async def test_a_launch_that_plays_nothing_leaves_no_run(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert store.exists(app.sim.run_id)  # held (locked) while the app is open
    assert app.discarded and store.list_runs() == []
    played = build_app("tavern", saves=saves)
    async with played.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
    named = build_app("tavern", saves=saves)
    async with named.run_test(size=(80, 24)) as pilot:
        named.sim.snapshot("before anything")
        await pilot.pause()
    kept = {r.run_id for r in store.list_runs()}
    assert kept == {played.sim.run_id, named.sim.run_id}
    assert not played.discarded and not named.discarded


async def test_the_header_shows_a_scored_task_on_its_scale(saves: Path) -> None:
    app = build_app("task:lost-at-sea", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "score" not in screen_text(app)[0]
        app.sim.meta.outcome = TaskOutcome(task="lost-at-sea", casting=[], utility=-6.0)
        app.main.query_one("#main").refresh_view()
        await pilot.pause()
        assert "score -6 (0 best, -" in screen_text(app)[0]


def test_a_task_score_in_the_header_with_its_scale(store: SaveStore) -> None:
    top = TaskOutcome(task="student-council", casting=[], utility=1.0)
    assert task_score(top) == "score 1/1 (top choice right)"
    ranked = TaskOutcome(task="lost-at-sea", casting=[], utility=-4.0)
    assert task_score(ranked).startswith("score -4 (0 best, -")
    deal = TaskOutcome(task="solar-negotiation", casting=[], utility=0.0)
    assert task_score(deal) == "score 0/1 (no Pareto-optimal deal)"
    sim = Simulation.new(resolve_scenario("tavern"), store=store)
    try:
        assert "score" not in header_text(sim, False).plain
        sim.meta.outcome = ranked
        assert task_score(ranked) in header_text(sim, False).plain
    finally:
        sim.close()
