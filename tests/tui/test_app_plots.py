"""The plots screen (``p``): every kind, the legend beside the charts, compare mode on shared
whole-round axes, redrawn at each size, series read once per round; snapshots. The metrics
screen (``m``): from the run's index, no round read. Both follow a run as its rounds end."""

from __future__ import annotations

import asyncio
import re
from itertools import pairwise
from pathlib import Path

import pytest
from cast import THIRTY, write_cast
from textual.widgets import DataTable, Select

from engine import History, SaveStore, Simulation, resolve_scenario
from engine.core.needs import NEEDS, need_label
from engine.saves.runfiles import RunFiles
from tui.app import SocialsimApp, build_app
from tui.screens.metrics import _cell
from tui.screens.plots import Chart, Legend, PlotsScreen, integer_ticks
from tui.series import RunSeries
from tui.session import Session

SIZES = [(80, 24), (100, 30), (160, 48)]
SIZE_IDS = ["80x24", "100x30", "160x48"]


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def steps(pilot, n: int) -> None:
    for _ in range(n):
        await pilot.press("n")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def open_plots(pilot) -> PlotsScreen:
    await pilot.press("p")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # the rounds are read on a worker thread
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, PlotsScreen)
    return screen


async def choose(pilot, screen: PlotsScreen, **values: str) -> None:
    for widget_id, value in values.items():
        screen.query_one(f"#{widget_id}", Select).value = value
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()  # a compared run is read on a worker thread
    await pilot.pause()


def legend_labels(screen: PlotsScreen) -> list[str]:
    legend = screen.query_one(Legend)
    return [str(legend.get_option_at_index(k).value) for k in range(legend.option_count)]


def chart_lines(chart: Chart) -> list[str]:
    return chart.render().plain.splitlines()


def x_axis(chart: Chart) -> list[str]:
    """The tick labels under the chart's frame."""
    lines = chart_lines(chart)
    frame = next(k for k, line in enumerate(lines) if "└" in line)
    return lines[frame + 1].split()


def test_integer_ticks() -> None:
    assert integer_ticks(4, 60) == [0, 1, 2, 3, 4]
    ticks = integer_ticks(100, 30)
    assert ticks[0] == 0 and len(ticks) <= 10 and all(isinstance(t, int) for t in ticks)
    assert len({b - a for a, b in pairwise(ticks)}) == 1


async def test_every_kind_with_the_legend_beside_the_chart(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await steps(pilot, 3)
        screen = await open_plots(pilot)
        left, right = screen.query_one("#left", Chart), screen.query_one("#right", Chart)
        legend = screen.query_one(Legend)
        assert not right.display
        assert legend_labels(screen) == app.sim.scenario.names
        assert len(left.lines) == 5 and app.sim.run_id in "".join(chart_lines(left)[:1])
        # The legend is beside the data, never over it.
        assert not left.region.overlaps(legend.region) and legend.region.width > 0
        assert x_axis(left) == ["0", "1", "2", "3"]
        await choose(screen=screen, pilot=pilot, kind="needs")
        assert legend_labels(screen) == [need_label(n) for n in NEEDS]
        assert len(left.lines) == 13
        await choose(screen=screen, pilot=pilot, need="self_worth")
        assert legend_labels(screen) == ["self worth"]
        await choose(screen=screen, pilot=pilot, kind="edge", agent="Edmund", other="Nell")
        assert legend_labels(screen) == ["Edmund → Nell", "Nell → Edmund"]
        edge = [app.sim.records[r].state.agents["Edmund"].relations["Nell"].fav for r in range(4)]
        assert list(left.lines[0][1]) == edge
        await choose(screen=screen, pilot=pilot, other="Edmund")
        assert left.lines == [] and "choose two different agents" in chart_lines(left)[0]
        await choose(screen=screen, pilot=pilot, kind="fav")
        assert legend_labels(screen) == ["mean favorability"]
        assert list(left.lines[0][1]) == [app.sim.metrics(r).mean_fav for r in range(4)]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PlotsScreen)


async def test_legend_ticks_choose_the_series(saves: Path, tmp_path: Path) -> None:
    app = build_app(str(write_cast(tmp_path / "thirty.toml", THIRTY)), saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await steps(pilot, 1)
        screen = await open_plots(pilot)
        left = screen.query_one("#left", Chart)
        assert legend_labels(screen) == list(THIRTY) and len(left.lines) == 30
        legend = screen.query_one(Legend)
        legend.focus()
        await pilot.press("space")  # untick Abigail
        await pilot.pause()
        assert len(left.lines) == 29 and "Abigail" not in legend.selected
        await pilot.press("a")  # not all ticked: tick all
        await pilot.pause()
        assert len(left.lines) == 30
        await pilot.press("a")  # all ticked: none
        await pilot.pause()
        assert left.lines == []


async def test_compare_shares_whole_round_axes(saves: Path) -> None:
    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await steps(pilot, 4)
        branch = store.branch(app.sim.run_id, 1).run_id
        screen = await open_plots(pilot)
        await choose(screen=screen, pilot=pilot, kind="needs", compare=branch)
        left, right = screen.query_one("#left", Chart), screen.query_one("#right", Chart)
        assert right.display and left.region.y == right.region.y  # side by side at 160
        assert left.last == right.last == 4  # the branch stops at 1; both axes run to 4
        assert x_axis(left) == x_axis(right) == ["0", "1", "2", "3", "4"]
        assert all(re.fullmatch(r"\d+", t) for t in x_axis(left))
        assert len(right.lines[0][0]) == 2  # the branch's own rounds: 0 and 1
        assert branch in chart_lines(right)[0] and app.sim.run_id in chart_lines(left)[0]
        await pilot.resize_terminal(80, 24)  # narrow: one above the other, same axes
        await pilot.pause()
        await pilot.pause()
        assert right.region.y > left.region.y and left.region.height >= 8
        assert x_axis(left) == x_axis(right)
        assert left.size.width == max(len(line) for line in chart_lines(left))


async def test_charts_follow_the_terminal_size(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await steps(pilot, 2)
        screen = await open_plots(pilot)
        left = screen.query_one("#left", Chart)
        small = (left.size.width, left.size.height)
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert left.size.width > small[0] and left.size.height > small[1]
        lines = chart_lines(left)
        assert len(lines) == left.size.height and max(map(len, lines)) == left.size.width


async def test_series_are_read_once_per_round(saves: Path, monkeypatch) -> None:
    read: list[int] = []
    extend = RunSeries.extend

    def counting(self, records):
        n = extend(self, records)
        read.append(n)
        return n

    monkeypatch.setattr(RunSeries, "extend", counting)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await steps(pilot, 3)
        screen = await open_plots(pilot)
        assert read[0] == 4 and set(read[1:]) <= {0}  # rounds 0-3 once; redraws read nothing
        await choose(screen=screen, pilot=pilot, kind="needs")
        assert set(read[1:]) <= {0}
        await pilot.press("escape")
        await steps(pilot, 1)
        read.clear()
        await open_plots(pilot)
        assert read[0] == 1  # only the new round


async def test_series_of_a_long_saved_run_rebuild_no_state(saves: Path, monkeypatch) -> None:
    """300 rounds reopened (only the last few in memory): the plots read the index and the
    rolled-forward values, never a state; the numbers are the states' own."""
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario("tavern"), seed=3, rounds=300, store=store)
    await sim.run()
    run_id = sim.run_id
    sim.close()
    rebuilt: list[str] = []
    for method in ("records", "states"):
        original = getattr(History, method)

        def counting(self, *args, _original=original, _method=method, **kwargs):
            rebuilt.append(_method)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(History, method, counting)
    app = build_app(run_id, saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = await open_plots(pilot)
        await choose(screen=screen, pilot=pilot, kind="fav")
        left = screen.query_one("#left", Chart)
        assert left.last == 300 and rebuilt == []
        [(xs, mean)] = [(xs, ys) for xs, ys, *_ in left.lines]
        await choose(screen=screen, pilot=pilot, kind="edge", agent="Nell", other="Silas")
        [(_, there), (_, back)] = [(xs, ys) for xs, ys, *_ in left.lines]
        assert rebuilt == []
    monkeypatch.undo()
    states = list(store.history(run_id).states())
    assert list(xs) == list(range(301))
    assert list(mean) == [app.sim.metrics(n).mean_fav for n in range(301)]
    assert list(there) == [s.agents["Nell"].relations["Silas"].fav for s in states]
    assert list(back) == [s.agents["Silas"].relations["Nell"].fav for s in states]


async def test_no_color_legend_has_markers(saves: Path, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await steps(pilot, 1)
        screen = await open_plots(pilot)
        legend = screen.query_one(Legend)
        prompts = [str(legend.get_option_at_index(k).prompt) for k in range(5)]
        markers = [p.split()[0] for p in prompts]
        drawn = [marker for *_, marker in screen.query_one("#left", Chart).lines]
        assert drawn == markers and len(set(markers)) == 5  # one marker per agent, not colour


# -- the metrics screen ---------------------------------------------------------------------------


def test_metric_cells_never_read_minus_zero() -> None:
    assert _cell(-0.001) == "0.00" and _cell(-0.25) == "-0.25" and _cell(None) == "–"


async def test_metrics_screen_reads_no_round(saves: Path, monkeypatch) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await steps(pilot, 6)
    run_id = app.sim.run_id
    reads: list[int] = []
    read = RunFiles.read

    def counting(self, n, *args, **kwargs):
        reads.append(n)
        return read(self, n, *args, **kwargs)

    monkeypatch.setattr(RunFiles, "read", counting)
    app = build_app(run_id, saves=saves)  # reopened: only its last rounds are in memory
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reads.clear()
        await pilot.press("m")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 7 and reads == []  # the metrics come from the index
        first = [str(c) for c in table.get_row_at(0)]
        assert first[:2] == ["0", _cell(app.sim.metrics(0).mean_fav)]


# -- snapshots ------------------------------------------------------------------------------------


def snapshot_app(saves: Path, scenario: str | Path) -> SocialsimApp:
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario(str(scenario)), seed=0, store=store, run_id="plots-run")
    return SocialsimApp(Session(store, sim))


@pytest.mark.parametrize("agents", [5, 30])
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_plots_snapshot(snap_compare, tmp_path: Path, size: tuple[int, int], agents: int) -> None:
    """Emotion per agent after three rounds, compared with a branch at round 1."""
    scenario = "tavern" if agents == 5 else write_cast(tmp_path / "thirty.toml", THIRTY)
    app = snapshot_app(tmp_path / "saves", scenario)

    async def play(pilot) -> None:
        await steps(pilot, 3)
        app.session.store.branch("plots-run", 1, new_id="plots-branch")
        screen = await open_plots(pilot)
        await choose(screen=screen, pilot=pilot, compare="plots-branch")

    assert snap_compare(app, terminal_size=size, run_before=play)


async def test_the_plots_and_metrics_follow_a_run_as_rounds_end(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await steps(pilot, 1)
        screen = await open_plots(pilot)
        left = screen.query_one("#left", Chart)
        assert left.last == 1 and x_axis(left)[-1] == "1"
        app.main.action_step()  # a round ends while the plots are open
        await app.workers.wait_for_complete()
        await until(lambda: left.last == 2)
        assert len(left.lines[0][0]) == 3 and x_axis(left)[-1] == "2"
        await pilot.press("escape")
        await pilot.press("m")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 3 and table.cursor_row == 2
        app.main.action_step()
        await app.workers.wait_for_complete()
        await until(lambda: table.row_count == 4)
        assert table.get_row_at(3)[0] == "3" and table.cursor_row == 3  # the cursor follows
        assert table.get_row_at(3)[1] == _cell(app.sim.metrics(3).mean_fav)


async def until(condition, seconds: float = 10.0) -> None:
    """Wait (polling) until ``condition()`` holds; fail after ``seconds``."""
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the condition never held")


async def test_the_rounds_are_read_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """Reading a run's rounds takes seconds at hundreds of agents: the chart says so at
    once and the keys are answered meanwhile (Esc goes back before the read ends)."""
    import threading

    from cast import hold_call

    from tui.screens import plots

    release, threads = hold_call(monkeypatch, plots, "series_read")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlotsScreen)
        assert "reading the rounds" in chart_lines(screen.query_one("#left", Chart))[0]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PlotsScreen) and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
    assert threads and threads[0] is not threading.main_thread()


async def test_a_compared_run_is_read_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """Choosing a run to compare reads its rounds on a worker thread: its chart says so at
    once, the keys are answered meanwhile, then it is drawn."""
    import threading

    from cast import hold_call

    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await steps(pilot, 2)
        branch = store.branch(app.sim.run_id, 1).run_id
        screen = await open_plots(pilot)
        release, threads = hold_call(monkeypatch, SaveStore, "history")
        screen.query_one("#compare", Select).value = branch
        await pilot.pause()
        left, right = screen.query_one("#left", Chart), screen.query_one("#right", Chart)
        assert right.display and "reading the rounds" in chart_lines(right)[0]
        assert len(left.lines) == 5
        screen.query_one(Legend).focus()
        await pilot.press("a")  # answered meanwhile: every series unticked
        await pilot.pause()
        assert left.lines == [] and not release.is_set()
        await pilot.press("a")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert branch in chart_lines(right)[0] and len(right.lines) == 5
        assert len(right.lines[0][0]) == 2  # the branch's rounds 0 and 1
    assert threads and threads[0] is not threading.main_thread()


async def test_the_runs_to_compare_are_listed_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """The compare selector's runs are listed on a worker thread (every saved run's head
    and index): the screen opens at once saying so, keys answered meanwhile, then the
    selector offers the runs of this scenario."""
    import threading

    from cast import hold_call

    store = SaveStore(saves)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await steps(pilot, 2)
        branch = store.branch(app.sim.run_id, 1).run_id
        release, threads = hold_call(monkeypatch, SaveStore, "list_runs")
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlotsScreen)
        compare = screen.query_one("#compare", Select)
        assert compare.prompt == "compare: listing the saved runs…" and not release.is_set()
        screen.query_one(Legend).focus()
        await pilot.press("a")  # answered meanwhile: every series unticked
        await pilot.pause()
        assert screen.query_one("#left", Chart).lines == [] and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert compare.prompt == "compare with run…"
        assert [value for _, value in compare._options if isinstance(value, str)] == [branch]
    assert threads and threads[0] is not threading.main_thread()
