"""Issue 41: every dialog fits and is usable at 80×24: its title, its fields and its
buttons are on screen when it opens (the inject dialog's title, field and OK/Cancel were
scrolled off), the diff view's needs read whole, an agent's cut role ends in "…", and the
help grows on a large terminal. An SVG snapshot of each at 80×24 (update with
``--snapshot-update`` after an intended change, and look at the SVGs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cast import screen_text
from textual.pilot import Pilot
from textual.widgets import DataTable

from engine import SaveStore, Simulation, load_library, resolve_scenario
from tui.app import SocialsimApp
from tui.screens.diff import DiffScreen, RunPicker
from tui.session import Session

SMALL = (80, 24)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


def make_app(saves: Path, scenario: str = "tavern") -> SocialsimApp:
    """A run with a fixed id and seed beside a second one (for the diff picker)."""
    store = SaveStore(saves)
    with Simulation.new(resolve_scenario(scenario), seed=1, store=store, run_id="other-run"):
        pass
    sim = Simulation.new(resolve_scenario(scenario), seed=0, store=store, run_id="dialog-run")
    return SocialsimApp(Session(store, sim))


async def step_and_press(pilot: Pilot, *keys: str) -> None:
    await pilot.pause()
    await pilot.press("n")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    for key in keys:
        await pilot.press(key)
        await pilot.pause()
    await pilot.pause()


#: key -> what must be on screen when the dialog opens: its title, a field, its buttons.
DIALOGS = {
    "e": ["Inject an event into the next round", "event", "visible to", "OK", "Cancel"],
    "f": ["Force an action for the next round", "agent", "utterance", "OK", "Cancel"],
    "b": ["Branch the run", "Fork after which round?", "OK", "Cancel"],
    "s": ["Save a named snapshot", "OK", "Cancel"],
    "x": ["Export the run to CSV", "OK", "Cancel"],
    "w": ["Write the run's HTML report", "OK", "Cancel"],
    "F": ["Filter the matrix", "OK", "Cancel"],
    "slash": ["Agent name (Enter shows it, Esc cancels)", "Edmund"],
    "question_mark": ["Keys", "Step", "Run/Pause"],  # it scrolls to the rest
    "c": ["Diagnosis of dialog-run", "Apply", "Cancel"],
    "d": ["Compare dialog-run with", "other-run"],
}
#: Dialogs whose screen holds no path or clock, so an SVG snapshot is stable.
SNAPSHOTS = ["e", "f", "b", "s", "F", "slash", "question_mark", "c", "d"]


@pytest.mark.parametrize("key", list(DIALOGS))
async def test_every_dialog_opens_whole_at_80x24(saves: Path, key: str) -> None:
    app = make_app(saves)
    async with app.run_test(size=SMALL) as pilot:
        await step_and_press(pilot, key)
        text = "\n".join(screen_text(app))
        for shown in DIALOGS[key]:
            assert shown in text, f"{key}: {shown!r} is off screen"


@pytest.mark.parametrize("key", SNAPSHOTS)
def test_dialog_snapshot_at_80x24(snap_compare, saves: Path, key: str) -> None:
    async def opened(pilot: Pilot) -> None:
        await step_and_press(pilot, key)

    assert snap_compare(make_app(saves), terminal_size=SMALL, run_before=opened)


@pytest.fixture
def diff_saves(saves: Path) -> Path:
    """Bullying seed 1 and a supportive branch of it, which differs in the needs."""
    store = SaveStore(saves)
    with Simulation.new(load_library("bullying"), store=store, run_id="a", seed=1) as sim:
        asyncio.run(sim.run(3))
    store.branch("a", 1, "b", intervention="supportive-cooperative")
    with Simulation.resume("b", store) as sim:
        asyncio.run(sim.run(2))
    return saves


def diff_app(saves: Path) -> SocialsimApp:
    store = SaveStore(saves)
    return SocialsimApp(Session(store, Simulation.resume("a", store)))


async def open_diff(pilot: Pilot) -> None:
    await pilot.pause()
    await pilot.press("d")
    for _ in range(200):  # the runs are listed on a worker
        if isinstance(pilot.app.screen, RunPicker):
            break
        await pilot.pause(0.01)
    await pilot.press("enter")
    for _ in range(200):
        if isinstance(pilot.app.screen, DiffScreen):
            break
        await pilot.pause(0.01)
    await pilot.pause()
    await pilot.pause()


async def test_the_diff_views_needs_read_whole_at_80x24(diff_saves: Path) -> None:
    app = diff_app(diff_saves)
    async with app.run_test(size=SMALL) as pilot:
        await open_diff(pilot)
        agents = app.screen.query_one("#agents", DataTable)
        assert agents.virtual_size.width <= agents.size.width  # nothing runs off the side
        assert str(agents.get_row_at(0)[-1]) == "support -.70, psych safe -.60 (+7 more)"
        assert agents.row_count == 5


def test_the_diff_view_snapshot_at_80x24(snap_compare, diff_saves: Path) -> None:
    assert snap_compare(diff_app(diff_saves), terminal_size=SMALL, run_before=open_diff)


async def test_a_cut_role_ends_in_an_ellipsis(saves: Path) -> None:
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario("village-assembly"), seed=0, store=store)
    app = SocialsimApp(Session(store, sim))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        role = sim.scenario.agents[0].role
        line = next(line for line in screen_text(app) if role[:20] in line)
        assert "…" in line


async def test_the_help_grows_on_a_large_terminal(saves: Path) -> None:
    app = make_app(saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one("VerticalScroll")
        assert box.region.width > 76
