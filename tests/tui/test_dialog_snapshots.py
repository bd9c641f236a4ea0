"""SVG snapshots of the dialogs and screens added with playing an agent, the spend check
and trials: the phase-1 and phase-2 turn forms (80×24, 100×30, 160×48), the spend
confirmation and the trial screen (80×24, 160×48).

Everything shown is fixed: run ids and trial ids are set, seeds are fixed, the mind is
offline (the spend dialog's LLM is never called), and no clock or tmp path is rendered.
Update with ``pytest tests/tui/test_dialog_snapshots.py --snapshot-update`` after an intended
change, and look at the SVGs.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input

from engine import SaveStore, Simulation, load_library
from engine.llm.settings import LLMSettings
from engine.minds.spec import OFFLINE, MindSpec
from engine.studies.estimate import estimate_run
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial
from tui.app import SocialsimApp, opened_scenario
from tui.screens.play import DecideForm, SpeakForm
from tui.screens.spend import SpendScreen
from tui.screens.trial import TrialScreen
from tui.session import Session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

SMALL, MEDIUM, LARGE = (80, 24), (100, 30), (160, 48)
TWO_SIZES = pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
THREE_SIZES = pytest.mark.parametrize(
    "size", [SMALL, MEDIUM, LARGE], ids=["80x24", "100x30", "160x48"]
)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user keymap, no files outside tmp_path; a key for the (never called) LLM."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def make_app(
    saves: Path,
    target: str,
    run_id: str,
    mind: MindSpec = OFFLINE,
    players: dict[str, str] | None = None,
) -> SocialsimApp:
    """The app :func:`tui.app.build_app` makes, with a fixed run id and seed 0."""
    store = SaveStore(saves)
    scenario, ref = opened_scenario(target)
    sim = Simulation.new(scenario, seed=0, mind=mind, store=store, scenario_ref=ref, run_id=run_id)
    if players:
        sim.play(players)
    return SocialsimApp(Session(store, sim))


async def until(pilot: Pilot, kind: type, tries: int = 400) -> None:
    """Run the app until its screen is a ``kind`` (a bounded number of loop turns)."""
    for _ in range(tries):
        if isinstance(pilot.app.screen, kind):
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError(f"no {kind.__name__}; the screen is {pilot.app.screen!r}")


# -- playing an agent -----------------------------------------------------------------------


def play_app(saves: Path) -> SocialsimApp:
    return make_app(saves, "bullying", "snapshot-play", players={"Helen": "Ms. Lee"})


async def open_decide(pilot: Pilot) -> None:
    await pilot.pause()
    await pilot.press("n")
    await until(pilot, DecideForm)
    pilot.app.screen.query_one("#intent", Input).value = "stop the exclusion"
    await pilot.pause()


async def open_speak(pilot: Pilot) -> None:
    await open_decide(pilot)
    pilot.app.screen.query_one("#urgency", Input).value = "8"
    await pilot.press("enter")
    await until(pilot, SpeakForm)
    pilot.app.screen.query_one("#utterance", Input).value = "Nobody is left out in this class."
    await pilot.pause()


@THREE_SIZES
def test_decide_form_snapshot(snap_compare, saves: Path, size: tuple[int, int]) -> None:
    async def check(pilot: Pilot) -> None:
        await open_decide(pilot)
        form = pilot.app.screen
        assert isinstance(form, DecideForm) and form.turn.agent == "Helen"

    assert snap_compare(play_app(saves), terminal_size=size, run_before=check)


@THREE_SIZES
def test_speak_form_snapshot(snap_compare, saves: Path, size: tuple[int, int]) -> None:
    async def check(pilot: Pilot) -> None:
        await open_speak(pilot)
        form = pilot.app.screen
        assert isinstance(form, SpeakForm) and form.turn.decision is not None
        assert form.turn.decision.intent == "stop the exclusion"

    assert snap_compare(play_app(saves), terminal_size=size, run_before=check)


# -- the spend check ------------------------------------------------------------------------


@TWO_SIZES
def test_spend_dialog_snapshot(snap_compare, saves: Path, size: tuple[int, int]) -> None:
    spec = LLMSettings(model="openai/stub", api_base="http://127.0.0.1:9/v1")  # never called
    app = make_app(saves, "tavern", "snapshot-spend", mind=spec)
    app.spend = (estimate_run(load_library("tavern"), spec), "500calls")

    async def settle(pilot: Pilot) -> None:
        await until(pilot, SpendScreen)

    assert snap_compare(app, terminal_size=size, run_before=settle)
    assert app.sim.round == 0


# -- the trial screen -----------------------------------------------------------------------


class Host(App[None]):
    """A bare app showing one screen."""

    def __init__(self, screen: TrialScreen) -> None:
        super().__init__()
        self.shown = screen

    def on_mount(self) -> None:
        self.push_screen(self.shown)


@pytest.fixture(scope="module")
def trial_saves(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trial ``t``: bullying, two arms, two seeds, fork at 1 of 2; one run missing."""
    saves = tmp_path_factory.mktemp("trial") / "saves"
    store = SaveStore(saves)
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=1, rounds=2,
        arms=named_arms("none,neglect", scenario), seeds=[1, 2], trial_id="t", resamples=200,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    store.delete(spec.arm_id(2, spec.arms[1]))
    return saves


@TWO_SIZES
def test_trial_screen_snapshot(snap_compare, trial_saves: Path, size: tuple[int, int]) -> None:
    screen = TrialScreen(SaveStore(trial_saves), "t")

    async def settle(pilot: Pilot) -> None:
        for _ in range(400):  # the screen loads the trial in a thread
            if screen.summaries:
                break
            await pilot.pause(0.01)
        # A DataTable sizes its columns to new rows when idle but may keep a header drawn
        # before (Textual 8.2); a resize redraws every line, as it would in a terminal.
        await pilot.pause()
        await pilot.resize_terminal(size[0] + 1, size[1])
        await pilot.resize_terminal(*size)
        for _ in range(3):
            await pilot.pause()
        assert screen.missing == 1

    assert snap_compare(Host(screen), terminal_size=size, run_before=settle)
