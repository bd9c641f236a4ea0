"""The Textual app driven through ``run_test()`` pilots.

Every test builds the app with :func:`tui.app.build_app` (the factory the CLI uses) on a
temporary saves folder and checks both the engine state and the save on disk.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import io
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cast import record_notifications
from llm_stub import StubLLM
from rich.console import Console
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Select, SelectionList, Static

from engine import Action, Decision, Mode, OfflineMind, SaveStore, SocialsimError
from engine.core.exchanges import main_failure
from engine.llm.settings import LLMSettings
from engine.round.events import AgentDecided, AgentSpoke, Notice, TokenStreamed
from engine.saves.runfiles import RunFiles
from engine.saves.runmeta import Lineage
from tui import cli
from tui.app import SocialsimApp, build_app
from tui.event_bridge import TOKEN_INTERVAL, EventBridge
from tui.messages import BURSTABLE, Burst, Decided, Judged, RoundStarted, Spoke, TokensArrived
from tui.messages import Notice as NoticeMessage
from tui.screens.forms import ForceForm, InjectForm, TextForm
from tui.screens.help import HelpScreen
from tui.screens.main import MainScreen, fork_point
from tui.screens.metrics import MetricsScreen
from tui.screens.runs import RunBrowser
from tui.widgets.deck import AgentDeck
from tui.widgets.feed import RoundFeed
from tui.widgets.header import RunHeader
from tui.widgets.run_view import RunView

ROOT = Path(__file__).resolve().parents[2]
SIZE = (100, 30)


# -- helpers ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """Every test here runs with no user keymap and no files outside tmp_path."""


@pytest.fixture
def long_tavern(tmp_path: Path) -> Path:
    """The tavern scenario with 200 rounds, for runs that are still going when we act."""
    text = (ROOT / "scenarios" / "tavern.toml").read_text(encoding="utf-8")
    assert "\nrounds = 9\n" in text
    path = tmp_path / "long-tavern.toml"
    path.write_text(text.replace("\nrounds = 9\n", "\nrounds = 200\n"), encoding="utf-8")
    return path


@pytest.fixture
def slow_mind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every offline decision take a little while, like a real model.

    Rounds then leave the event loop idle most of the time, so a run is still going when
    the next key arrives and pilot presses return quickly.
    """
    decide_all = OfflineMind.decide_all

    async def slow_decide_all(self, ctxs):
        await asyncio.sleep(0.1)
        return await decide_all(self, ctxs)

    monkeypatch.setattr(OfflineMind, "decide_all", slow_decide_all)


def write_crowd(path: Path, agents: int) -> Path:
    """A scenario of ``agents`` agents named A01, A02, ...; 3 rounds."""
    archetypes = ["dominant", "balanced", "analytical", "agreeable", "reserved"]
    lines = ['id = "crowd"', f'title = "Town meeting of {agents}"', "rounds = 3", ""]
    for k in range(1, agents + 1):
        lines += [
            "[[agents]]",
            f'name = "A{k:02d}"',
            f'role = "resident number {k}"',
            f'archetype = "{archetypes[k % 5]}"',
            f'talking_points = ["point {k} matters", "the square needs trees"]',
            "",
        ]
    lines += ["[[events]]", "round = 1", 'text = "The mayor opens the meeting."', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def crowd(tmp_path: Path) -> Path:
    """A 30-agent scenario (A01..A30), 3 rounds."""
    return write_crowd(tmp_path / "crowd.toml", 30)


def run_dir(app: SocialsimApp) -> Path:
    return app.session.store.run_dir(app.sim.run_id)


def saved_rounds(folder: Path) -> list[int]:
    """Round numbers stored in a run folder, each file checked to hold its own round."""
    files = RunFiles(folder)
    numbers = files.numbers()
    assert [files.read(n).round for n in numbers] == numbers
    return numbers


def run_folders(saves: Path) -> set[str]:
    return {p.name for p in saves.iterdir() if not p.name.startswith(".")}


def lock_is_free(store: SaveStore, run_id: str) -> bool:
    try:
        lock = store.lock(run_id)
    except SocialsimError:
        return False
    lock.release()
    return True


def transcript_lines(app: SocialsimApp) -> int:
    """Entries written to every agent pane's transcript."""
    return sum(len(p.transcript.entries) for p in app.query_one(AgentDeck).panes)


def pane_text(app: SocialsimApp, name: str) -> str:
    """The transcript of one agent's pane, one entry a line."""
    index = app.sim.scenario.names.index(name)
    transcript = app.query_one(AgentDeck).panes[index].transcript  # mounted or not
    return "\n".join(entry.plain for entry in transcript.entries)


def error_text(screen) -> str:
    return str(screen.query_one(".error", Label).content)


async def settle(pilot) -> None:
    """Wait for the engine worker, then for the screen to catch up."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def press_and_settle(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def type_text(pilot, text: str) -> None:
    await pilot.press(*("space" if c == " " else c for c in text))


# -- the CLI builds the app -----------------------------------------------------------------


def _captured_launch(
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    on_run: Callable[[], object] = lambda: None,
) -> SocialsimApp:
    """The app ``argv`` launches, not run (``on_run`` is called where it would be)."""
    captured: list[SocialsimApp] = []
    monkeypatch.setattr(
        SocialsimApp, "run", lambda self, *a, **k: (on_run(), captured.append(self))
    )
    monkeypatch.setattr(sys, "argv", argv)
    try:
        cli.main()
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert len(captured) == 1
    app = captured[0]
    app.sim.close()  # never mounted, so release the lock here
    return app


def test_cli_tui_uses_build_app(monkeypatch: pytest.MonkeyPatch, saves: Path) -> None:
    app = _captured_launch(monkeypatch, ["socialsim", "tui", "tavern", "--saves", str(saves)])
    assert isinstance(app, SocialsimApp)
    assert app.sim.scenario.id == "tavern"
    assert app.sim.meta.model == "offline"
    assert isinstance(app.sim.mind, OfflineMind)
    assert app.session.store.root == saves
    assert (saves / app.sim.run_id / "run.json").is_file()
    assert app.sim.round == 0


def test_bare_socialsim_opens_tavern(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env_saves = tmp_path / "env-saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(env_saves))
    app = _captured_launch(monkeypatch, ["socialsim"])
    assert isinstance(app, SocialsimApp)
    assert app.sim.scenario.id == "tavern"
    assert app.sim.meta.model == "offline"
    assert isinstance(app.sim.mind, OfflineMind)
    assert run_folders(env_saves) == {app.sim.run_id}


def test_a_launch_on_a_terminal_says_what_it_opens_until_the_app_draws(
    monkeypatch: pytest.MonkeyPatch, saves: Path
) -> None:
    """Opening a large cast takes seconds before the app can draw: meanwhile a spinner
    names what is opening and for how long, and it is erased before the app starts."""
    from tui.cli import progress

    out = io.StringIO()
    console = Console(force_terminal=True, file=out, width=120)
    monkeypatch.setattr(progress, "terminal", lambda: console)
    drawn: list[str] = []  # the terminal's text when the app is run
    argv = ["socialsim", "tui", "tavern", "--saves", str(saves)]
    app = _captured_launch(monkeypatch, argv, lambda: drawn.append(out.getvalue()))
    assert app.sim.scenario.id == "tavern"
    assert re.search(r"Opening tavern… \d+\.\d s", drawn[0]), drawn
    assert "\x1b[2K" in drawn[0].rsplit("Opening", 1)[1]  # the line erased after


def test_a_piped_launch_prints_nothing_while_opening(
    monkeypatch: pytest.MonkeyPatch, saves: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = _captured_launch(monkeypatch, ["socialsim", "tui", "tavern", "--saves", str(saves)])
    assert "Opening" not in capsys.readouterr().err
    assert app.sim.scenario.id == "tavern"


# -- stepping and running -----------------------------------------------------------------------


@pytest.mark.parametrize("key", ["n", "space"])
async def test_step_key_plays_one_round(saves: Path, key: str) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        assert app.sim.round == 0 and transcript_lines(app) == 0
        await press_and_settle(pilot, key)
        assert app.sim.round == 1
        assert saved_rounds(run_dir(app)) == [0, 1]
        assert transcript_lines(app) > 0
        await press_and_settle(pilot, key)
        assert app.sim.round == 2
        assert saved_rounds(run_dir(app)) == [0, 1, 2]


async def test_run_to_the_end_then_step_offers_to_go_on(saves: Path) -> None:
    from tui.screens.forms import GoOnForm

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "r")
        assert app.sim.finished and app.sim.round == 9
        assert saved_rounds(run_dir(app)) == list(range(10))
        await press_and_settle(pilot, "n")
        assert isinstance(app.screen, GoOnForm)  # extend or branch; Esc plays nothing
        await press_and_settle(pilot, "escape")
        assert app.sim.round == 9 and app.sim.total_rounds == 9
        assert not (run_dir(app) / "rounds" / "000010.json.gz").exists()


@pytest.mark.usefixtures("slow_mind")
async def test_run_then_pause_stops_at_a_round_boundary(saves: Path, long_tavern: Path) -> None:
    app = build_app(str(long_tavern), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        assert app.main.running
        await press_and_settle(pilot, "r")
        assert not app.main.running
        stopped = app.sim.round
        assert 0 < stopped < 200
        assert saved_rounds(run_dir(app)) == list(range(stopped + 1))
        assert SaveStore(saves).read_rounds(app.sim.run_id)[-1] == app.sim.records[-1]
        # Paused, not finished: stepping goes on from there.
        await press_and_settle(pilot, "n")
        assert app.sim.round == stopped + 1


@pytest.mark.usefixtures("slow_mind")
async def test_keys_work_while_the_engine_runs(saves: Path, long_tavern: Path) -> None:
    app = build_app(str(long_tavern), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.main.running
        app.main.action_run_pause()
        await settle(pilot)
        assert not app.main.running and app.sim.round < 200
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@pytest.mark.usefixtures("slow_mind")
async def test_quit_mid_run_finishes_the_round(saves: Path, long_tavern: Path) -> None:
    app = build_app(str(long_tavern), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        assert app.main.running
        await pilot.press("q")
        await app.workers.wait_for_complete()
    sim = app.sim
    assert 0 < sim.round < 200
    store = SaveStore(saves)
    assert saved_rounds(store.run_dir(sim.run_id)) == list(range(sim.round + 1))
    assert store.read_rounds(sim.run_id)[-1].state == sim.state
    assert lock_is_free(store, sim.run_id)


async def test_quit_then_reopen_resumes_the_run(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n", "n")
        await pilot.press("q")
        await pilot.pause()
    run_id = app.sim.run_id
    assert lock_is_free(SaveStore(saves), run_id)
    again = build_app(run_id, saves=saves)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.sim.run_id == run_id and again.sim.round == 2
        assert "R2 " in pane_text(again, "Edmund")  # the transcript is replayed
        await press_and_settle(pilot, "n")
        assert saved_rounds(run_dir(again)) == [0, 1, 2, 3]


# -- snapshot and branch forms -------------------------------------------------------------------


async def test_snapshot_form_names_the_round(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n")
        await pilot.press("s")
        assert isinstance(app.screen, TextForm)
        await type_text(pilot, "before vote")
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, TextForm)
        assert [(s.name, s.round) for s in app.sim.meta.snapshots] == [("before vote", 1)]
        on_disk = SaveStore(saves).read_meta(app.sim.run_id)
        assert [(s.name, s.round) for s in on_disk.snapshots] == [("before vote", 1)]


async def test_snapshot_form_rejects_an_empty_name(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        before = (run_dir(app) / "run.json").read_bytes()
        await pilot.press("s", "space", "enter")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TextForm)
        assert "empty" in error_text(form)
        assert app.sim.meta.snapshots == []
        assert (run_dir(app) / "run.json").read_bytes() == before
        await pilot.press("escape")
        assert not isinstance(app.screen, TextForm)


async def test_branch_form_switches_to_the_branch(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n", "n")
        parent = app.sim.run_id
        await pilot.press("b")
        form = app.screen
        assert isinstance(form, TextForm)
        assert form.query_one("#value", Input).value == ""  # Enter keeps the default
        assert form.query_one("#value", Input).placeholder.startswith("2 ")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert not isinstance(app.screen, TextForm)
        child = app.sim
        assert child.run_id != parent
        assert child.meta.parent == Lineage(run_id=parent, round=2)
        assert child.round == 2
        store = SaveStore(saves)
        assert store.read_meta(child.run_id).parent == Lineage(run_id=parent, round=2)
        assert saved_rounds(store.run_dir(child.run_id)) == [0, 1, 2]
        assert lock_is_free(store, parent)
        assert not lock_is_free(store, child.run_id)
        assert run_folders(saves) == {parent, child.run_id}
        # The deck was rebuilt for the branch and shows its replayed transcript.
        assert transcript_lines(app) > 0
        await press_and_settle(pilot, "n")
        assert app.sim.round == 3
        assert saved_rounds(store.run_dir(child.run_id)) == [0, 1, 2, 3]
        assert saved_rounds(store.run_dir(parent)) == [0, 1, 2]


@pytest.mark.parametrize("at", [3, 1])
async def test_a_branch_carries_the_transcripts_on_screen(
    saves: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """A branch of the run on screen holds its rounds up to the fork: their transcripts
    come from the screen, none is read from the save (seconds of a large cast's rounds,
    read while the user presses keys)."""
    from engine.saves.history import History

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n", "n", "n")
        names = app.sim.scenario.names
        shown = {name: pane_text(app, name) for name in names}
        read: list[int] = []
        real = History.logs

        def counted(self: History, start: int = 0, stop: int | None = None, relations=True):
            read.append(start)
            return real(self, start, stop, relations)

        monkeypatch.setattr(History, "logs", counted)
        await pilot.press("b")
        await type_text(pilot, str(at))
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.meta.parent is not None and app.sim.round == at
        assert read == []
        for name in names:
            kept = [line for line in shown[name].splitlines() if int(line[1]) <= at]
            assert pane_text(app, name).splitlines() == kept


@pytest.mark.parametrize(("text", "message"), [("7", "between 0 and 1"), ("two", "number")])
async def test_branch_form_rejects_bad_rounds(saves: Path, text: str, message: str) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n")
        run_id = app.sim.run_id
        await pilot.press("b")
        form = app.screen
        assert isinstance(form, TextForm)
        form.query_one("#value", Input).value = text
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is form
        assert message in error_text(form)
        assert app.sim.run_id == run_id
        assert run_folders(saves) == {run_id}


# -- force and inject forms ------------------------------------------------------------------------


async def _fill_force(pilot, agent: str, mode: str, target: str, utterance: str) -> ForceForm:
    await pilot.press("f")
    form = pilot.app.screen
    assert isinstance(form, ForceForm)
    form.query_one("#agent", Select).value = agent
    form.query_one("#mode", Select).value = mode
    form.query_one("#target", Select).value = target
    form.query_one("#utterance", Input).value = utterance
    form.query_one("#utterance", Input).focus()
    await pilot.press("enter")
    await pilot.pause()
    return form


async def test_force_form_queues_and_plays_the_action(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await _fill_force(pilot, "Greta", "private", "Nell", "I will sign if you do")
        assert not isinstance(app.screen, ForceForm)
        (forced,) = app.sim.pending.forced
        assert (forced.agent, forced.mode, forced.target) == ("Greta", Mode.PRIVATE, "Nell")
        assert forced.utterance == "I will sign if you do"
        on_disk = SaveStore(saves).read_meta(app.sim.run_id)
        assert on_disk.pending.forced == [forced]
        await press_and_settle(pilot, "n")
        record = app.sim.records[-1]
        (action,) = [a for a in record.actions if a.speaker == "Greta"]
        assert action.forced and action.mode is Mode.PRIVATE and action.target == "Nell"
        assert action.utterance == "I will sign if you do"
        assert app.sim.pending.forced == []
        saved = SaveStore(saves).read_round(app.sim.run_id, 1)
        assert [a for a in saved.actions if a.speaker == "Greta"] == [action]
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.forced == []


@pytest.mark.parametrize(
    ("mode", "target", "utterance", "message"),
    [
        # Private to everyone, or to oneself, is not offered (tests/tui/test_app_dialogs.py).
        ("public", "all", "", "needs an utterance"),
        ("private", "Nell", " ", "needs an utterance"),
    ],
)
async def test_force_form_rejects_bad_input(
    saves: Path, mode: str, target: str, utterance: str, message: str
) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        before = (run_dir(app) / "run.json").read_bytes()
        form = await _fill_force(pilot, "Edmund", mode, target, utterance)
        assert app.screen is form
        assert message in error_text(form)
        assert app.sim.pending.forced == []
        assert (run_dir(app) / "run.json").read_bytes() == before


async def test_force_form_silent_drops_the_target(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await _fill_force(pilot, "Edmund", "silent", "Nell", "")
        assert not isinstance(app.screen, ForceForm)
        (forced,) = app.sim.pending.forced
        assert (forced.agent, forced.mode, forced.target) == ("Edmund", Mode.SILENT, None)
        await press_and_settle(pilot, "n")
        (action,) = [a for a in app.sim.records[-1].actions if a.speaker == "Edmund"]
        assert action.forced and action.mode is Mode.SILENT and action.order is None


async def test_inject_form_private_event(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, InjectForm)
        await type_text(pilot, "Storm!")
        form.query_one("#text", Input).value += " The cellar floods."
        form.query_one("#private", SelectionList).select("Nell")
        form.query_one("#private", SelectionList).select("Callum")
        await pilot.pause()
        form.query_one("#text", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, InjectForm)
        (event,) = app.sim.pending.events
        assert event.text == "Storm! The cellar floods."
        assert sorted(event.private_to or []) == ["Callum", "Nell"]
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.events == [event]
        await press_and_settle(pilot, "n")
        injected = [e for e in app.sim.records[-1].events if e.source == "injected"]
        assert injected == [event]
        # Only the chosen agents' panes show the private event.
        assert "The cellar floods" in pane_text(app, "Nell")
        assert "The cellar floods" in pane_text(app, "Callum")
        assert "The cellar floods" not in pane_text(app, "Edmund")
        saved = SaveStore(saves).read_round(app.sim.run_id, 1)
        assert [e for e in saved.events if e.source == "injected"] == [event]
        assert app.sim.pending.events == []


async def test_inject_form_public_event(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, InjectForm)
        form.query_one("#text", Input).value = "The lights go out"
        await pilot.press("enter")
        await pilot.pause()
        (event,) = app.sim.pending.events
        assert event.private_to is None and event.source == "injected"
        await press_and_settle(pilot, "n")
        assert event in app.sim.records[-1].events


async def test_inject_form_rejects_empty_text(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        before = (run_dir(app) / "run.json").read_bytes()
        await pilot.press("e", "space", "enter")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, InjectForm)
        assert "empty" in error_text(form)
        assert app.sim.pending.events == []
        assert (run_dir(app) / "run.json").read_bytes() == before


# -- the run browser -----------------------------------------------------------------------------


@pytest.mark.usefixtures("slow_mind")
async def test_run_browser_refused_while_running(saves: Path, long_tavern: Path) -> None:
    app = build_app(str(long_tavern), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await pilot.press("r", "o")
        assert not isinstance(app.screen, RunBrowser)
        assert any("Pause" in msg for _, msg in notes)
        app.main.action_run_pause()
        await settle(pilot)


# -- plots, metrics, export, help -------------------------------------------------------------


async def test_metrics_screen(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n", "n")
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MetricsScreen)
        table = screen.query_one(DataTable)
        assert table.row_count == app.sim.round + 1 == 3
        assert [table.get_row_at(k)[0] for k in range(3)] == ["0", "1", "2"]
        await pilot.press("escape")
        assert not isinstance(app.screen, MetricsScreen)


def _help_text(screen: HelpScreen) -> str:
    console = Console(width=76, color_system=None, file=io.StringIO())
    for static in screen.query(Static):
        console.print(static.content)
    return console.file.getvalue()


async def test_help_lists_every_binding(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        keys = {k.strip() for ks, _ in screen.rows for k in ks.split(",")}
        assert {"n", "space", "r", "s", "b", "f", "e", "o", "p", "m", "x", "q", "?"} <= keys
        assert {"[", "]"} <= keys
        text = _help_text(screen)
        for label in ("Step", "Run/Pause", "Save", "Branch", "Force", "Event", "Open"):
            assert label in text
        for label in ("Plots", "Metrics", "Export", "Help", "Quit", "offline rule-based"):
            assert label in text
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)


async def test_help_is_kept_and_shown_again_from_the_top(saves: Path) -> None:
    """A second ``?`` shows the help built the first time (no compose: the help took
    ~50 ms of every press to render), scrolled back to its top."""
    from textual.containers import VerticalScroll

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        first = app.screen
        assert isinstance(first, HelpScreen)
        scroll = first.query_one(VerticalScroll)
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen is first and first.is_attached
        assert scroll.scroll_y == 0
        assert "Run/Pause" in _help_text(first)


# -- keymap ---------------------------------------------------------------------------------------


async def test_keymap_file_remaps_step(saves: Path, tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text('[keys]\nstep = "j"\n', encoding="utf-8")
    app = build_app("tavern", saves=saves, keymap_file=keys)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "j")
        assert app.sim.round == 1
        assert saved_rounds(run_dir(app)) == [0, 1]
        await press_and_settle(pilot, "n")
        assert app.sim.round == 1  # n no longer steps
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert ("j, space", "Step") in app.screen.rows


def test_keymap_with_unknown_binding_fails(saves: Path, tmp_path: Path) -> None:
    keys = tmp_path / "my-keys.toml"
    keys.write_text('[keys]\nfly = "j"\n', encoding="utf-8")
    with pytest.raises(SocialsimError, match=re.escape(str(keys))) as info:
        build_app("tavern", saves=saves, keymap_file=keys)
    assert "fly" in str(info.value)
    # No run is left behind (or locked) by a failed start.
    store = SaveStore(saves)
    assert all(lock_is_free(store, r.run_id) for r in store.list_runs())
    assert store.list_runs() == []


# -- terminal sizes and many agents ---------------------------------------------------------------


def _notice_shown(app: SocialsimApp) -> bool:
    notice = app.query_one("#too-small", Static)
    main = app.query_one("#main")
    return notice.region.height > 0 and main.region.height == 0


async def test_small_terminal_shows_the_notice(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        assert _notice_shown(app)
        assert "Enlarge the terminal" in str(app.query_one("#too-small", Static).content)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not _notice_shown(app)


async def test_notice_follows_resizes_under_a_dialog(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not _notice_shown(app)
        await pilot.press("question_mark")
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert _notice_shown(app)
        await pilot.press("question_mark")
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not _notice_shown(app)


@pytest.mark.parametrize(("size", "per_page"), [((80, 24), 1), ((160, 48), 1)])
async def test_thirty_agents(saves: Path, crowd: Path, size: tuple[int, int], per_page: int):
    app = build_app(str(crowd), saves=saves)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert not _notice_shown(app)
        deck = app.query_one(AgentDeck)
        first = deck.shown_agents()
        assert len(first) == per_page and first[0] == "A01"
        await pilot.press("right_square_bracket")
        await pilot.pause()
        second = deck.shown_agents()
        assert second != first and len(second) == per_page
        assert second[0] == f"A{per_page + 1:02d}"
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert deck.shown_agents() == first
        await press_and_settle(pilot, "n")
        assert app.sim.round == 1
        assert saved_rounds(run_dir(app)) == [0, 1]


async def test_v_hides_and_shows_the_need_bars(saves: Path) -> None:
    from tui.widgets.needs import NeedBars

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        bars = app.query(NeedBars)
        assert bars and all(b.display for b in bars if b.parent.display)
        await pilot.press("v")
        await pilot.pause()
        assert not any(b.display for b in app.query(NeedBars))
        await pilot.press("v")
        await pilot.pause()
        assert all(b.display for b in app.query(NeedBars))


def test_the_deck_keeps_textuals_visible() -> None:
    assert AgentDeck.visible is Widget.visible
    assert callable(AgentDeck.shown_agents)


async def test_the_main_view_is_a_screen_of_its_own(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.main is app.screen
        assert app.query_one(AgentDeck).visible is True
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.main.query_one(RunView).sim is app.sim


# -- engine events as messages ----------------------------------------------------------------


class _Run:
    """Stands in for a Simulation: one listener, fed by hand."""

    def subscribe(self, listener):
        self.listener = listener
        return lambda: None


def _token(text: str) -> TokenStreamed:
    return TokenStreamed(run_id="r", round=1, agent="Ann", text=text)


def _bridge() -> tuple[_Run, list[Message]]:
    run, posted = _Run(), []
    EventBridge(run, posted.append)  # type: ignore[arg-type]
    return run, posted


async def test_a_token_burst_becomes_one_message() -> None:
    run, posted = _bridge()
    words = [f"w{k} " for k in range(10_000)]
    for word in words:
        run.listener(_token(word))
    assert posted == []  # nothing until the interval has passed
    await asyncio.sleep(TOKEN_INTERVAL * 3)
    (message,) = posted
    assert isinstance(message, TokensArrived)
    assert (message.agent, message.text) == ("Ann", "".join(words))


async def test_a_fast_stream_posts_at_most_one_message_per_interval() -> None:
    run, posted = _bridge()
    words = [f"w{k} " for k in range(10_000)]
    start = time.monotonic()
    for k, word in enumerate(words):
        run.listener(_token(word))
        if k % 50 == 0:
            await asyncio.sleep(0.001)  # a fast model: tokens keep coming over ~0.2 s
    action = Action(speaker="Ann", urgency=5, mode=Mode.PUBLIC, utterance="".join(words))
    run.listener(AgentSpoke(run_id="r", round=1, action=action))  # buffered tokens go first
    elapsed = time.monotonic() - start
    tokens = [m for m in posted if isinstance(m, TokensArrived)]
    assert 2 <= len(tokens) <= elapsed / TOKEN_INTERVAL + 2
    assert "".join(m.text for m in tokens) == "".join(words)
    assert isinstance(posted[-1], Spoke) and posted[-1].action == action
    await asyncio.sleep(TOKEN_INTERVAL * 2)
    assert isinstance(posted[-1], Spoke)  # no stray flush after the turn


async def test_a_burst_from_the_engine_thread_arrives_in_order_with_one_wake_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, posted, threads = _Run(), [], set()

    def post(message: Message) -> None:
        threads.add(threading.get_ident())
        posted.append(message.message if isinstance(message, NoticeMessage) else message)

    EventBridge(run, post)  # type: ignore[arg-type]
    loop, wakes = asyncio.get_running_loop(), []
    threadsafe = loop.call_soon_threadsafe

    def counted(callback, *args):  # the loop's wake-ups from another thread
        wakes.append(callback)
        return threadsafe(callback, *args)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)

    def emit(*texts: str) -> None:  # on an engine thread, while the app's loop is held
        engine = threading.Thread(
            target=lambda: [run.listener(Notice(run_id="r", round=1, message=t)) for t in texts]
        )
        engine.start()
        engine.join()

    emit(*(f"n{k}" for k in range(500)))
    await asyncio.sleep(0.01)
    emit("last")
    await asyncio.sleep(0.01)
    assert posted == [f"n{k}" for k in range(500)] + ["last"]
    assert threads == {threading.get_ident()}  # posted on the app's thread only
    assert len(wakes) == 2  # one a burst, not one an event


async def test_a_burst_of_turns_is_one_message_in_order_split_by_the_others() -> None:
    """Decisions and words handed over together go as one Burst (not one message through
    the pumps each); a message of another kind goes between them in its place."""
    run, posted = _Run(), []
    EventBridge(run, posted.append)  # type: ignore[arg-type]
    decision = Decision(urgency=5, mode=Mode.PUBLIC, stance="support")
    said = [Action(speaker=n, urgency=5, mode=Mode.PUBLIC, utterance=f"{n} here.") for n in "AB"]
    events = [
        *(AgentDecided(run_id="r", round=1, agent=n, decision=decision) for n in "AB"),
        *(AgentSpoke(run_id="r", round=1, action=a) for a in said),
        Notice(run_id="r", round=1, message="mind the cap"),
        AgentDecided(run_id="r", round=2, agent="C", decision=decision),
    ]
    engine = threading.Thread(target=lambda: [run.listener(e) for e in events])
    engine.start()
    engine.join()
    await asyncio.sleep(0.01)
    burst, notice, last = posted
    assert isinstance(burst, Burst) and not burst.bubble
    assert [type(m) for m in burst.items] == [Decided, Decided, Spoke, Spoke]
    assert [m.agent for m in burst.items[:2]] == ["A", "B"]
    assert [m.action for m in burst.items[2:]] == said
    assert isinstance(notice, NoticeMessage) and notice.bubble  # the screen reads it
    assert isinstance(last, Decided) and last.agent == "C"  # alone: as itself


async def test_a_burst_shows_as_its_messages_would(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        view, feed = app.query_one(RunView), app.query_one(RoundFeed)
        feed.expanded = True
        decision = Decision(urgency=7, mode=Mode.PUBLIC, target="Nell", stance="oppose")
        said = Action(
            speaker="Nell", urgency=6, mode=Mode.PUBLIC, utterance="Not a chance.", order=1
        )
        items = [
            RoundStarted(1, []),
            Decided(1, "Edmund", decision, False),
            TokensArrived("Nell", "Not a "),
            Spoke(1, said),
            Judged(1, 3, 5),
        ]
        assert {type(m) for m in items} == set(BURSTABLE) == set(RunView.BURST_HANDLERS)
        view.post_message(Burst(items))
        await pilot.pause()
        shown = feed.render().plain
        assert "Round 1 under way…" in shown
        assert "R1 judged: 3 moods, 5 ties changed" in shown
        assert "Edmund decides ▶ →Nell, oppose, urgency 7" in shown
        assert "Nell ▶ →all “Not a chance.”" in shown  # the words arrived, then the turn
        assert "… Not a" not in shown
        assert "Not a chance." in pane_text(app, "Nell")


async def test_events_handed_over_during_a_drain_wait_for_the_loop_to_turn() -> None:
    run, order = _Run(), []
    loop = asyncio.get_running_loop()

    def hand(*texts: str) -> None:  # from an engine thread
        engine = threading.Thread(
            target=lambda: [run.listener(Notice(run_id="r", round=1, message=t)) for t in texts]
        )
        engine.start()
        engine.join()

    def post(message: Message) -> None:
        text = message.message if isinstance(message, NoticeMessage) else ""
        order.append(text)
        if text == "a":  # the engine goes on while the app delivers
            loop.call_soon(order.append, "a key")
            hand("b")

    EventBridge(run, post)  # type: ignore[arg-type]
    hand("a")
    await asyncio.sleep(0.01)
    assert order == ["a", "a key", "b"]  # the loop turned between the two


def _notices(*texts: str) -> list[Notice]:
    return [Notice(run_id="r", round=1, message=t) for t in texts]


_DECIDED = [
    AgentDecided(run_id="r", round=1, agent=n, decision=Decision(urgency=5, mode=Mode.PUBLIC))
    for n in "AB"
]


@pytest.mark.parametrize(
    ("events", "fails"),
    [
        (_notices("a", "boom", "b"), lambda m: getattr(m, "message", "") == "boom"),
        ([*_notices("a"), *_DECIDED, *_notices("b")], lambda m: isinstance(m, Burst)),
    ],
    ids=["a message", "a burst"],
)
async def test_a_message_that_fails_on_the_app_thread_holds_back_none_after_it(
    events: list, fails
) -> None:
    run, posted = _Run(), []

    def post(message: Message) -> None:
        if fails(message):
            raise RuntimeError("a widget failed")
        posted.append(message.message if isinstance(message, NoticeMessage) else message)

    EventBridge(run, post)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    failures = []
    loop.set_exception_handler(lambda _loop, context: failures.append(context["exception"]))
    try:
        engine = threading.Thread(target=lambda: [run.listener(e) for e in events])
        engine.start()
        engine.join()
        await asyncio.sleep(0.01)
    finally:
        loop.set_exception_handler(None)
    assert posted == ["a", "b"]
    assert [str(e) for e in failures] == ["a widget failed"]


async def test_streamed_tokens_show_live_until_the_turn_ends(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(RunView)
        view.post_message(TokensArrived("Nell", "Evening, "))
        view.post_message(TokensArrived("Nell", "all."))
        await pilot.pause()
        pane = app.query_one(AgentDeck).panes[1]  # not mounted: its page is not shown
        assert pane.spec.name == "Nell" and pane.transcript.live is not None
        assert pane.transcript.live.plain == "… Evening, all."
        await press_and_settle(pilot, "n")
        assert all(p.transcript.live is None for p in app.query_one(AgentDeck).panes)
        assert "Evening, all." not in pane_text(app, "Nell")


async def test_words_that_were_not_speech_leave_the_feed_when_the_turn_ends(saves: Path) -> None:
    """A turn that ends silent after its words streamed (the mind rejected them: empty,
    copied, echoed) says so in the feed at once instead of holding the words."""
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        view, feed = app.query_one(RunView), app.query_one(RoundFeed)
        feed.expanded = True  # every line of the round shown
        view.post_message(TokensArrived("Nell", "Scenario: ECHOED."))
        await pilot.pause()
        assert "ECHOED" in feed.render().plain  # arriving words show while they arrive
        nell = Action(speaker="Nell", urgency=6, mode=Mode.SILENT, intent="(no utterance: silent)")
        view.post_message(Spoke(1, nell))
        await pilot.pause()
        shown = feed.render().plain
        assert "ECHOED" not in shown and "Nell said nothing usable: silent" in shown
        assert app.query_one(AgentDeck).panes[1].transcript.live is None


async def test_a_round_whose_first_speakers_words_are_rejected_writes_its_silence_once(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speak, rejected = OfflineMind.speak, []

    async def echoes_first(self: OfflineMind, ctx, decision, sink) -> str:
        if rejected and ctx.name != rejected[0]:
            return await speak(self, ctx, decision, sink)
        rejected.append(ctx.name)
        sink("Scenario: ECHOED. Traits: stubborn.")  # streamed, then not speech
        return ""

    monkeypatch.setattr(OfflineMind, "speak", echoes_first)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        feed = app.query_one(RoundFeed)
        feed.expanded = True
        await press_and_settle(pilot, "n")
        name = rejected[0]
        (action,) = [a for a in app.sim.history[1].actions if a.speaker == name]
        assert (action.mode, action.order) == (Mode.SILENT, None)
        assert f"R1 {name} said nothing usable: silent" in feed.render().plain
        assert "ECHOED" not in feed.render().plain and "ECHOED" not in pane_text(app, name)
        assert pane_text(app, name).count("R1 · silent") == 1


async def test_palette_commands_run_the_main_screens_actions(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        commands = {c.title.split(":")[0]: c for c in app.get_system_commands(app.screen)}
        assert {"Step", "Run/Pause", "Branch", "Open", "Recast", "Help", "Quit"} <= set(commands)
        await commands["Step"].callback()
        await settle(pilot)
        assert app.sim.round == 1
        await commands["Help"].callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


def test_fork_point_reads_a_round_and_an_intervention() -> None:
    assert fork_point(" 3 ", 5, []) == (3, None)
    assert fork_point("2 curfew", 5, ["curfew"]) == (2, "curfew")
    with pytest.raises(ValueError, match="Unknown intervention 'x'; known: curfew"):
        fork_point("2 x", 5, ["curfew"])
    with pytest.raises(ValueError, match="between 0 and 5"):
        fork_point("6", 5, [])


# -- LLM runs on the local stub: structured modes, fallback warnings, degraded stops -------


@pytest.fixture
def stub_mind(monkeypatch: pytest.MonkeyPatch):
    """``stub_mind(**stub_kwargs) -> LLMSettings``: an LLM mind on a fresh local stub (one
    call at a time, no retries), stopped afterwards."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    stubs: list[StubLLM] = []

    def make(**stub_kwargs) -> LLMSettings:
        stub = StubLLM(seed=4, **stub_kwargs)
        stub.start()
        stubs.append(stub)
        return LLMSettings(
            model="openai/stub", api_base=stub.url, timeout=5, retries=0, max_concurrency=1
        )

    yield make
    for stub in stubs:
        stub.stop()


def strip_of(app: SocialsimApp) -> Static:
    return app.query_one("#warning", Static)


async def test_offline_runs_show_no_warning_strip_and_no_mode(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "n")
        assert not strip_of(app).display
        header = app.query_one(RunHeader).render().plain
        assert "offline rule-based" in header and "·" not in header


async def test_fallbacks_over_a_tenth_show_the_warning_strip(
    saves: Path, stub_mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app("tavern", saves=saves, mind=stub_mind(faults={"500": 0.3}))
    async with app.run_test(size=SIZE) as pilot:
        assert not strip_of(app).display
        await press_and_settle(pilot, "n")
        record = app.sim.records[-1]
        usage = record.usage
        assert record.round == 1 and usage is not None
        assert usage.warning and not usage.degraded
        strip = strip_of(app)
        assert strip.display and not strip.has_class("stopped")
        # Monochrome: the strip says it in words.
        assert app.no_color
        text = str(strip.content)
        model, error, count = main_failure(record.llm_calls)
        assert text == (
            f"⚠ R1: {usage.fallback_share:.0%} of structured answers fell back "
            f"({usage.structured_fallbacks}/{usage.structured}) · openai/stub: {error} ({count}x)"
        )
        assert model == "openai/stub" and "InternalServerError" in error
        # The header names the structured mode auto settled on, as the save does.
        assert app.sim.meta.structured_modes == {"openai/stub": "schema"}
        assert SaveStore(saves).read_meta(app.sim.run_id).structured_modes == {
            "openai/stub": "schema"
        }
        header = app.query_one(RunHeader).render().plain.splitlines()[1]
        assert header.startswith("LLM openai/stub · schema ")


async def test_a_degraded_stop_leaves_a_lasting_notice(saves: Path, stub_mind) -> None:
    app = build_app("tavern", saves=saves, mind=stub_mind(faults={"500": 1.0}))
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await press_and_settle(pilot, "n")
        assert app.sim.round == 1 and saved_rounds(run_dir(app)) == [0, 1]
        strip = strip_of(app)
        text = str(strip.content)
        assert strip.display and strip.has_class("stopped")
        assert text.startswith("⛔ RUN STOPPED  round 1: 100% of the structured answers fell back")
        assert "the round is saved" in text
        assert text.endswith(f"socialsim resume {app.sim.run_id} --tolerate-fallbacks")
        assert notes == []  # a notice, not a toast that vanishes
        # It outlives other screens, and goes when the next round starts.
        await pilot.press("question_mark")
        await pilot.press("escape")
        await pilot.pause()
        assert strip_of(app).display and strip_of(app).has_class("stopped")
        await press_and_settle(pilot, "n")
        assert app.sim.round == 2
        assert str(strip_of(app).content).startswith("⛔ RUN STOPPED  round 2: ")


async def test_a_failed_round_takes_back_its_lines_and_says_which_round_failed(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round that fails after its agents spoke (its model server gone while judging) no
    longer leaves the feed saying it is under way, nor its turns in the transcripts (played
    again, they were written twice): the view is back at the last saved round, and the strip
    says which round failed and how to play it again until the next round starts."""
    judge, failures = OfflineMind.judge_round, [SocialsimError("openai/m: cannot reach x")]

    def failing_once(self, *args, **kwargs):
        if failures:
            raise failures.pop()
        return judge(self, *args, **kwargs)

    def written() -> dict[str, list[str]]:
        panes = app.query_one(AgentDeck).panes
        return {p.spec.name: [e.plain for e in p.transcript.entries] for p in panes}

    monkeypatch.setattr(OfflineMind, "judge_round", failing_once)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        before = written()
        await press_and_settle(pilot, "n")
        assert app.sim.round == 0 and not failures
        assert written() == before  # the failed round's turns taken back
        assert "under way" not in app.query_one(RoundFeed).render().plain
        strip = strip_of(app)
        assert strip.display and strip.has_class("stopped")
        assert str(strip.content) == (
            "⛔ ROUND 1 FAILED  openai/m: cannot reach x. The run stays at round 0 as saved; "
            "n plays round 1 again."
        )
        assert notes == [("error", "openai/m: cannot reach x")]  # and a toast
        await press_and_settle(pilot, "n")
        assert app.sim.round == 1 and not strip_of(app).display
        after = written()  # each turn of round 1 written once
        spoke = [a.speaker for a in app.sim.history.view().log.actions if a.order]
        assert spoke and all(any(x.startswith("R1 ") for x in after[name]) for name in spoke)
        assert all(len(lines) == len(set(lines)) for lines in after.values()), after
