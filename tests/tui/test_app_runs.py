"""The run browser (``o``): newest first, one row per run with scenario, rounds, mind,
parent and creation time in full, the open run marked; open, branch and delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cast import THIRTY, screen_text, write_cast
from textual.widgets import DataTable, Input, Label

from engine import SaveStore, SocialsimError
from engine.saves.runmeta import Lineage
from tui.app import SocialsimApp, build_app
from tui.listing import newest_first
from tui.screens.forms import ConfirmForm, TextForm
from tui.screens.runs import OPEN_MARK, RunBrowser, local_time
from tui.widgets.deck import AgentDeck

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def saved_rounds(store: SaveStore, run_id: str) -> list[int]:
    return store.round_numbers(run_id)


def lock_is_free(store: SaveStore, run_id: str) -> bool:
    try:
        lock = store.lock(run_id)
    except SocialsimError:
        return False
    lock.release()
    return True


def set_created(store: SaveStore, run_id: str, created: str) -> None:
    """Pretend a run was made at ``created`` (UTC, ISO)."""
    meta = store.read_meta(run_id)
    store.write_meta(meta.model_copy(update={"created": created}))


def table_rows(browser: RunBrowser) -> list[list[str]]:
    table = browser.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(k)] for k in range(table.row_count)]


def message(browser: RunBrowser) -> str:
    return str(browser.query_one("#message", Label).content)


async def open_browser(pilot) -> RunBrowser:
    await pilot.press("o")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # the runs are listed on a worker thread
    await pilot.pause()
    browser = pilot.app.screen
    assert isinstance(browser, RunBrowser)
    return browser


async def choose(pilot, browser: RunBrowser, run_id: str, key: str) -> None:
    browser.query_one(DataTable).move_cursor(row=list(browser.rows).index(run_id))
    await pilot.pause()
    await pilot.press(key)
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # a run is opened on a worker thread
    await pilot.pause()


def test_newest_first_broken_last(store: SaveStore) -> None:
    from engine import RunListing

    rows = [
        RunListing(run_id="b", created="2026-01-02T00:00:00+00:00"),
        RunListing(run_id="zz-broken", ok=False, reason="corrupt"),
        RunListing(run_id="a", created="2026-01-03T00:00:00+00:00"),
        RunListing(run_id="c", created="2026-01-01T00:00:00+00:00"),
    ]
    assert [r.run_id for r in newest_first(rows)] == ["a", "b", "c", "zz-broken"]
    assert local_time("not a time") == "not a time"


async def test_browser_sorted_by_time_with_columns_and_the_open_run_marked(
    saves: Path, tmp_path: Path
) -> None:
    store = SaveStore(saves)
    crowd = build_app(str(write_cast(tmp_path / "thirty.toml", THIRTY)), saves=saves)
    crowd_id = crowd.sim.run_id
    crowd.sim.close()
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n")
        await settle(pilot)
        first = app.sim.run_id
        branch = store.branch(first, 1).run_id
        # Alphabetically: meeting-..., tavern-... (first), tavern-... (branch, later id).
        set_created(store, first, "2026-03-01T09:00:00+00:00")
        set_created(store, branch, "2026-03-02T09:00:00+00:00")
        set_created(store, crowd_id, "2026-03-03T09:00:00+00:00")
        browser = await open_browser(pilot)
        assert list(browser.rows) == [crowd_id, branch, first]  # newest first
        rows = table_rows(browser)
        header = [str(c.label) for c in browser.query_one(DataTable).ordered_columns]
        assert header == [
            "",
            "run",
            "rounds",
            "parent",
            "scenario",
            "mind",
            "created",
            "name",
            "snapshots",
        ]
        assert rows[0][:6] == ["", crowd_id, "0/3", "—", "meeting", "offline"]
        # The parent without the scenario and date it shares with the branch's own id.
        shared = "-".join(first.split("-")[2:])
        assert rows[1][:6] == ["", branch, "1/9", f"…{shared}@1", "tavern", "offline"]
        assert rows[2][:6] == [OPEN_MARK, first, "2/9", "—", "tavern", "offline"]
        assert rows[2][6] == local_time("2026-03-01T09:00:00+00:00")
        # The cursor starts on the open run; the line under the table names it in full.
        assert browser.query_one(DataTable).cursor_row == 2
        detail = str(browser.query_one("#detail", Label).content)
        assert detail.startswith(f"{first}: Tavern inheritance dispute, round 2 of 9")
        assert detail.endswith("(open now)")
        await pilot.press("up")
        detail = str(browser.query_one("#detail", Label).content)
        assert f"branch of {first} after round 1" in detail
        # At 80 columns the full ids are on screen, and where the saves are.
        screen = "\n".join(screen_text(app))
        assert first in screen and branch in screen
        assert str(saves.resolve())[:40] in screen.replace("\n", "")


async def test_run_browser_open_and_delete(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n")
        await settle(pilot)
        first = app.sim.run_id
        other = store.branch(first, 1).run_id
        spare = store.branch(first, 0).run_id
        browser = await open_browser(pilot)
        assert set(browser.rows) == {first, other, spare}

        # Deleting the open run is refused inline.
        await choose(pilot, browser, first, "d")
        assert app.screen is browser and "open" in message(browser)
        assert store.exists(first)

        # Deleting another run asks first; y deletes it.
        await choose(pilot, browser, spare, "d")
        assert isinstance(app.screen, ConfirmForm)
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is browser
        assert not store.run_dir(spare).exists()
        assert spare not in browser.rows and len(table_rows(browser)) == 2

        # Enter opens (resumes) another run.
        await choose(pilot, browser, other, "enter")
        await pilot.pause()
        assert not isinstance(app.screen, RunBrowser)
        assert app.sim.run_id == other and app.sim.round == 1
        assert lock_is_free(store, first)
        assert not lock_is_free(store, other)
        await pilot.press("n")
        await settle(pilot)
        assert saved_rounds(store, other) == [0, 1, 2]


async def test_run_browser_confirm_no_keeps_the_run(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        other = store.branch(app.sim.run_id, 0).run_id
        browser = await open_browser(pilot)
        await choose(pilot, browser, other, "d")
        assert isinstance(app.screen, ConfirmForm)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is browser
        assert store.exists(other)
        assert app.sim.round == 0


async def test_run_browser_broken_save(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    broken = saves / "broken-run"
    (broken / "rounds").mkdir(parents=True)
    (broken / "run.json").write_text("{ this is not json", encoding="utf-8")
    async with app.run_test(size=SIZE) as pilot:
        browser = await open_browser(pilot)
        row = browser.rows["broken-run"]
        assert not row.ok and "corrupt" in row.reason
        assert list(browser.rows)[-1] == "broken-run"  # broken entries last
        assert table_rows(browser)[-1][1] == "broken-run"
        await choose(pilot, browser, "broken-run", "enter")
        assert app.screen is browser
        assert "Cannot open broken-run" in message(browser)
        await choose(pilot, browser, "broken-run", "b")
        assert app.screen is browser and "readable" in message(browser)
        await pilot.press("escape")
        assert not isinstance(app.screen, RunBrowser)
        assert app.sim.round == 0


async def test_run_browser_branches(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n")
        await settle(pilot)
        run_id = app.sim.run_id
        browser = await open_browser(pilot)
        await choose(pilot, browser, run_id, "b")
        form = app.screen
        assert isinstance(form, TextForm)
        form.query_one("#value", Input).value = "x"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is form and "number" in str(form.query_one(".error", Label).content)
        form.query_one("#value", Input).value = "1"
        await pilot.press("enter")
        await app.workers.wait_for_complete()  # the branch is made on a worker thread
        await pilot.pause()
        assert app.screen is browser
        (child,) = {p.name for p in saves.iterdir()} - {run_id, ".verified"}
        assert store.read_meta(child).parent == Lineage(run_id=run_id, round=1)
        assert saved_rounds(store, child) == [0, 1]
        assert browser.rows[child].parent == Lineage(run_id=run_id, round=1)
        assert browser.query_one(DataTable).cursor_row == list(browser.rows).index(child)
        assert app.sim.run_id == run_id  # the browser's branch does not switch runs


async def test_run_browser_opens_a_run_of_another_scenario(saves: Path, tmp_path: Path) -> None:
    store = SaveStore(saves)
    other = build_app(str(write_cast(tmp_path / "twelve.toml", THIRTY[:12])), saves=saves)
    other_id = other.sim.run_id
    other.sim.close()
    app: SocialsimApp = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        browser = await open_browser(pilot)
        await choose(pilot, browser, other_id, "enter")
        await pilot.pause()
        assert app.sim.run_id == other_id and app.sim.scenario.id == "meeting"
        deck = app.query_one(AgentDeck)
        assert [p.spec.name for p in deck.panes] == list(THIRTY[:12])
        await pilot.press("n")
        await settle(pilot)
        assert app.sim.round == 1
        assert saved_rounds(store, other_id) == [0, 1]
        assert json.loads((store.run_dir(other_id) / "run.json").read_text())  # still readable


async def test_run_browser_deletes_a_damaged_run_saying_so_and_never_another_folder(
    saves: Path,
) -> None:
    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        damaged = store.branch(app.sim.run_id, 0).run_id
        (saves / damaged / "run.json").write_text("{ torn")
        (saves / "notes").mkdir()
        (saves / "notes" / "thesis.txt").write_text("x")
        browser = await open_browser(pilot)
        await choose(pilot, browser, "notes", "d")
        assert app.screen is browser and "not a socialsim run" in message(browser)
        assert (saves / "notes" / "thesis.txt").read_text() == "x"
        await choose(pilot, browser, damaged, "d")
        assert isinstance(app.screen, ConfirmForm)
        title = str(app.screen.query_one(".title").render())
        assert f"Delete damaged run {damaged}?" in title and "run.json (6 bytes)" in title
        await pilot.press("y")
        await pilot.pause()
        assert not (saves / damaged).exists()


async def test_run_browser_shows_a_hostile_file_name_escaped(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        (saves / "\x1b]0;PWNED\x07[bold]x").write_text("")
        browser = await open_browser(pilot)
        cells = [c for row in table_rows(browser) for c in row]
        assert "\\x1b]0;PWNED\\x07[bold]x" in cells
        assert not any("\x1b" in c or "\x07" in c for c in cells)
        await choose(pilot, browser, "\x1b]0;PWNED\x07[bold]x", "d")
        assert "is not a plain name" in message(browser) and "\x1b" not in message(browser)


async def test_a_run_is_opened_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """Resuming a run takes seconds at hundreds of agents: the browser says so at once and
    the keys are answered meanwhile; closed before the run is read, it opens nothing (and
    leaves the run unlocked)."""
    import threading

    from engine import Simulation

    store = SaveStore(saves)
    release, threads = threading.Event(), []
    resume = Simulation.resume

    def held(run_id, store, mind=None):
        threads.append(threading.current_thread())
        release.wait(10)
        return resume(run_id, store, mind)

    monkeypatch.setattr(Simulation, "resume", staticmethod(held))
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        first = app.sim.run_id
        other = store.branch(first, 0).run_id
        browser = await open_browser(pilot)
        browser.query_one(DataTable).move_cursor(row=list(browser.rows).index(other))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert message(browser) == f"Opening {other}…"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunBrowser) and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.run_id == first
    assert threads and threads[0] is not threading.main_thread()
    assert lock_is_free(store, other)


async def test_a_run_is_branched_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """The browser's branch rebuilds the fork round (seconds at hundreds of agents): it says
    so at once and the keys are answered meanwhile; closed meanwhile, the branch is still
    made (and listed next time)."""
    import threading

    from cast import hold_call

    store = SaveStore(saves)
    release, threads = hold_call(monkeypatch, SaveStore, "branch")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(pilot)
        run_id = app.sim.run_id
        browser = await open_browser(pilot)
        await choose(pilot, browser, run_id, "b")
        app.screen.query_one("#value", Input).value = "1"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is browser and message(browser) == f"Branching {run_id} at round 1…"
        await pilot.press("escape")  # answered meanwhile: the browser closes
        await pilot.pause()
        assert not isinstance(app.screen, RunBrowser) and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        (child,) = {r.run_id for r in store.list_runs()} - {run_id}
        assert store.read_meta(child).parent == Lineage(run_id=run_id, round=1)
        assert app.sim.run_id == run_id
    assert threads and threads[0] is not threading.main_thread()


async def test_the_runs_are_listed_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """A cold listing of large runs takes most of a second: the browser opens at once saying
    it reads them, the keys are answered meanwhile, then the table is filled."""
    import threading

    from cast import hold_call

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        release, threads = hold_call(monkeypatch, SaveStore, "list_runs")
        await pilot.press("o")
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser) and browser.rows == {}
        assert message(browser) == "Reading the saved runs…"
        await pilot.press("b")  # answered meanwhile: no run to branch yet
        await pilot.pause()
        assert message(browser) == "Choose a readable run to branch." and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert list(browser.rows) == [app.sim.run_id] and message(browser) == ""
    assert threads and threads[0] is not threading.main_thread()


async def test_a_closed_browser_stops_its_listing(saves: Path, monkeypatch) -> None:
    """Checking the rounds of runs not found sound before takes seconds at hundreds of
    agents, on a worker that shares the interpreter with the screen: closing the browser
    stops it at the next round file."""
    import asyncio
    import shutil

    from cast import hold_call, played_run

    from engine import load_library
    from engine.saves.runfiles import RunFiles
    from engine.saves.verified import DIR

    await played_run(SaveStore(saves), load_library("tavern"), "other", 3)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        shutil.rmtree(saves / DIR, ignore_errors=True)  # no verdicts: every round is read
        release, threads = hold_call(monkeypatch, RunFiles, "_load")
        await pilot.press("o")
        for _ in range(100):  # until the listing reads its first round file
            await asyncio.sleep(0.02)
            if threads:
                break
        assert isinstance(app.screen, RunBrowser) and len(threads) == 1
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunBrowser)
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(threads) == 1  # no round file read after the browser closed
