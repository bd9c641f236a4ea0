"""The diff view (``d``): a branch beside its parent, or beside a run chosen from the list.

Pilot tests drive the real app (:func:`tui.app.build_app`) on runs saved in a temporary
folder; the snapshots show the view at 80×24, 100×30 and 160×48.
"""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

import pytest
from cast import answered_while_held, hold_call, record_notifications
from rich.console import Console
from textual.widgets import DataTable, OptionList, Static

from engine import ForcedAction, Mode, SaveStore, Simulation, resolve_scenario
from engine.studies.diff import RunComparison
from tui.app import SocialsimApp, build_app
from tui.diff_text import edge_cell
from tui.screens.diff import DiffScreen, RunPicker
from tui.screens.main import MainScreen
from tui.session import Session

SIZE = (120, 40)
INSULT = "You twisted Bram's will, Nell, and everyone in this room knows it."


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    """Tavern runs: "parent" (rounds 0..4) and "branch" at round 1 in which Edmund insults
    Nell in round 2 (rounds 0..3)."""
    store = SaveStore(tmp_path / "saves")
    parent = Simulation.new(resolve_scenario("tavern"), seed=0, store=store, run_id="parent")
    asyncio.run(parent.run(4))
    branch = parent.branch(1, run_id="branch")
    branch.force(ForcedAction(agent="Edmund", mode=Mode.PUBLIC, target="Nell", utterance=INSULT))
    asyncio.run(branch.run(2))
    parent.close()
    branch.close()
    return store.root


def text_of(screen: DiffScreen, widget_id: str) -> str:
    """What a Static shows, as plain text."""
    console = Console(width=200, color_system=None, file=io.StringIO())
    console.print(screen.query_one(f"#{widget_id}", Static).content)
    return console.file.getvalue()


async def press(pilot, *keys: str) -> None:
    """Press keys, then wait for the reads they started (off the UI thread) to show."""
    for key in keys or (None,):
        if key is not None:
            await pilot.press(key)
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def open_diff(pilot) -> DiffScreen:
    await press(pilot, "d")  # the parent is found, then compared, on workers
    for _ in range(3):
        if isinstance(pilot.app.screen, DiffScreen):
            break
        await press(pilot)
    await press(pilot)  # the profile worker starts once the view is shown
    screen = pilot.app.screen
    assert isinstance(screen, DiffScreen)
    return screen


async def test_d_on_a_branch_compares_it_with_its_parent(saves: Path) -> None:
    app = build_app("branch", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_diff(pilot)
        assert (screen.comparison.run_a, screen.comparison.run_b) == ("parent", "branch")
        summary = text_of(screen, "summary")
        assert "B branched from A at round 1" in summary
        assert "first divergence: round 2" in summary
        assert "mean |Δ fav| R2..R3" in summary  # the profile, read by the worker
        assert screen.round == 2 and "Round 2" in text_of(screen, "round")
        expected = RunComparison(SaveStore(saves), "parent", "branch").round_diff(2)
        heatmap = screen.query_one("#heatmap", DataTable)
        row = heatmap.get_row("Nell")
        assert [str(cell) for cell in row[1:]] == [
            "—" if j == "Nell" else edge_cell(expected.edges[("Nell", j)]).plain
            for j in expected.agents
        ]
        assert expected.largest() is not None  # the insult moved someone's view
        # Both transcripts of the round, the insult only in B's and marked as a difference.
        talk_a, talk_b = text_of(screen, "talk-a-text"), text_of(screen, "talk-b-text")
        assert INSULT[:25] in talk_b and INSULT[:25] not in talk_a
        assert "≠" in talk_b
        agents = screen.query_one("#agents", DataTable)
        assert agents.row_count == 5
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


def count_meta_reads(monkeypatch) -> list[str]:
    """The run ids whose run.json is read (``SaveStore.read_meta``) from now on."""
    reads: list[str] = []
    real = SaveStore.read_meta

    def counted(self, run_id, *args, **kwargs):
        reads.append(run_id)
        return real(self, run_id, *args, **kwargs)

    monkeypatch.setattr(SaveStore, "read_meta", counted)
    return reads


async def test_d_reads_the_saves_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """Finding the run to compare with reads the saves (a listing takes seconds at hundreds
    of agents; the open run's file is not read again): a notice says so at once, a key
    pressed meanwhile is answered, then the view opens, with no notice left behind."""
    app = build_app("branch", saves=saves)
    reads = count_meta_reads(monkeypatch)
    release, threads = hold_call(monkeypatch, SaveStore, "exists_quietly")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert any(m.startswith("Finding the run to compare branch with") for _, m in notes)
        assert reads == []  # the open run's meta is held: its run.json is not read again
        await answered_while_held(pilot, release, "branch")
        await pilot.press("escape")  # the help
        for _ in range(4):  # the parent is found, then compared, on workers
            await press(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        assert (screen.comparison.run_a, screen.comparison.run_b) == ("parent", "branch")
        assert any(m.startswith("Comparing branch with parent") for _, m in notes)
        assert not app._notifications  # the notices are gone once the view is up
    assert threads and threads[0] is not threading.main_thread()


async def test_round_keys_and_the_cell_under_the_cursor(saves: Path) -> None:
    app = build_app("branch", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_diff(pilot)
        await press(pilot, "right_square_bracket")
        assert screen.round == 3 and "Round 3" in text_of(screen, "round")
        await press(pilot, "right_square_bracket")  # the branch has rounds 0..3: stays
        assert screen.round == 3
        await press(pilot, "left_square_bracket", "left_square_bracket", "left_square_bracket")
        assert screen.round == 0 and "before the runs part" in text_of(screen, "round")
        assert text_of(screen, "talk-a-text") == text_of(screen, "talk-b-text")
        assert "≠" not in text_of(screen, "talk-a-text")
        await press(pilot, "g")
        assert screen.round == 2 and "first divergence" in text_of(screen, "round")
        # The cursor on Nell → Edmund shows both values and the difference.
        heatmap = screen.query_one("#heatmap", DataTable)
        heatmap.focus()
        names = list(screen.comparison.agents)
        heatmap.move_cursor(row=names.index("Nell"), column=names.index("Edmund") + 1)
        await pilot.pause()
        cell = text_of(screen, "cell")
        edge = screen.diff.edges[("Nell", "Edmund")]
        assert cell.startswith("Nell → Edmund")
        assert f"A {edge.fav_a:+.3f}" in cell and f"B {edge.fav_b:+.3f}" in cell
        assert f"Δ {edge.delta:+.3f}" in cell


async def test_a_run_without_a_parent_picks_the_other_run(saves: Path) -> None:
    app = build_app("parent", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, RunPicker)
        options = picker.query_one(OptionList)
        assert [options.get_option_at_index(k).id for k in range(options.option_count)] == [
            "branch"
        ]
        await press(pilot, "enter")
        await press(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        assert (screen.comparison.run_a, screen.comparison.run_b) == ("branch", "parent")


async def test_picker_escape_and_a_lone_run(saves: Path, tmp_path: Path) -> None:
    app = build_app("parent", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
    lone = build_app("tavern", saves=tmp_path / "empty")
    async with lone.run_test(size=SIZE) as pilot:
        notes: list[str] = []
        original = lone.notify
        lone.notify = lambda message, *a, **k: (
            notes.append(str(message)) or original(message, *a, **k)
        )  # type: ignore[method-assign]
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(lone.screen, MainScreen)
        assert any("No other saved run" in n for n in notes)


async def test_o_compares_with_another_run(saves: Path) -> None:
    store = SaveStore(saves)
    twin = Simulation.new(resolve_scenario("tavern"), seed=0, store=store, run_id="twin")
    await twin.run(3)
    twin.close()
    app = build_app("branch", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_diff(pilot)
        await pilot.press("o")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, RunPicker)
        options = picker.query_one(OptionList)
        ids = [options.get_option_at_index(k).id for k in range(options.option_count)]
        assert sorted(ids) == ["parent", "twin"]
        options.highlighted = ids.index("twin")
        await press(pilot, "enter")
        await press(pilot)
        assert app.screen is screen
        assert (screen.comparison.run_a, screen.comparison.run_b) == ("twin", "branch")
        summary = text_of(screen, "summary")
        # twin replays the parent's seed: the same run as the branch until Edmund's insult.
        assert "independent runs" in summary and "first divergence: round 2" in summary


# -- snapshots ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), (160, 48)], ids=["80x24", "100x30", "160x48"]
)
def test_diff_view_snapshot(snap_compare, saves: Path, size: tuple[int, int]) -> None:
    store = SaveStore(saves)
    app = SocialsimApp(Session(store, Simulation.resume("branch", store)))

    async def open_view(pilot) -> None:
        await open_diff(pilot)

    assert snap_compare(app, terminal_size=size, run_before=open_view)
