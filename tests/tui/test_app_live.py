"""An LLM round live in the app, through the stub with slow calls: the feed shows what
agents whose panes are not on screen say, the header the phase and the calls done out of
expected, and ``r`` / ``q`` act between calls (pause, quit) instead of at the round's end."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine.llm.settings import LLMSettings
from tui.app import build_app
from tui.widgets.agent_pane import AgentPane
from tui.widgets.feed import RoundFeed
from tui.widgets.header import RunHeader

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

#: Seconds a stub call takes (the issue's slow server).
CALL = 1.0


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    with StubLLM(seed=1, latency=CALL) as server:
        yield server


def _mind(stub: StubLLM) -> LLMSettings:
    return LLMSettings(model="openai/stub", api_base=stub.url, retries=0, timeout=30)


async def until(pilot, condition: Callable[[], bool], seconds: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds (fail after ``seconds``)."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the condition never held")


def _header(app) -> str:
    return app.query_one(RunHeader).render().plain.splitlines()[0]


async def test_an_unseen_agents_words_reach_the_feed_during_the_round(stub, saves: Path):
    app = build_app("tavern", saves=saves, mind=_mind(stub))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        shown = {p.spec.name for p in app.query(AgentPane) if p.display and p.region.width}
        feed = app.query_one(RoundFeed)
        await pilot.press("n")
        # the header: the round under way, its phase, calls done of those its plan expects
        await until(pilot, lambda: "deciding" in _header(app))
        assert re.search(r"round 1/9 +│ +deciding( ·)? \d+/~\d+", _header(app)), _header(app)
        unseen = [n for n in app.sim.scenario.names if n not in shown]

        def said_unseen() -> bool:
            return any(f"R1 {n} " in line.plain and "“" in line.plain for line in feed.round_log
                       for n in unseen)  # fmt: skip

        await until(pilot, said_unseen)
        assert app.sim.round == 0 and app.main.running  # mid-round: nothing saved yet
        assert re.search(r"speaking( ·)? \d+/~\d+", _header(app)), _header(app)
        # folded, the feed shows the latest lines: the words just said
        assert "“" in feed.render().plain
        await pilot.press("q", "q")


async def test_r_pauses_between_calls_and_goes_on(stub, saves: Path):
    app = build_app("tavern", saves=saves, mind=_mind(stub))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: app.sim.progress.now().done >= 2)
        await pilot.press("r")
        assert app.sim.held
        await until(pilot, lambda: "paused mid-round" in _header(app))
        asked = stub.calls
        kept = app.sim.journaled
        assert kept == app.sim.progress.now().done >= 2  # every answer in the journal
        assert f"paused mid-round ({kept} exchanges kept)" in _header(app)
        await pilot.pause(3 * CALL)
        assert stub.calls == asked and app.sim.round == 0  # no new call while paused
        await pilot.press("r")
        assert not app.sim.held
        await until(pilot, lambda: stub.calls > asked)
        await until(pilot, lambda: app.sim.round == 1)  # the round goes on to its end
        await until(pilot, lambda: not app.main.running)


async def test_q_mid_round_quits_once_the_calls_in_flight_are_answered(stub, saves: Path):
    app = build_app("tavern", saves=saves, mind=_mind(stub))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: app.sim.progress.now().done >= 2)
        await pilot.press("q")
        # no new call from the first press: held while calls are in flight, or (none in
        # flight at the press) the round already stopped, its hold released with it
        assert app.sim.held or not app.main.running
        await until(pilot, lambda: app.return_code is not None)
    answered = app.sim.progress.now().done
    assert app.kept == answered >= 2 and stub.calls == answered
    assert app.sim.round == 0
    # the next open asks only what the round had not been answered
    reopened = build_app(app.sim.run_id, saves=saves)
    async with reopened.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: reopened.sim.round == 1)
        played = reopened.sim.records[-1].usage
    assert played is not None
    assert stub.calls == played.calls > answered  # none asked twice


def test_the_quit_line_says_how_many_exchanges_are_kept(
    saves: Path, run_cli, monkeypatch: pytest.MonkeyPatch
):
    from tui.app import SocialsimApp

    def quit_mid_round(self: SocialsimApp) -> None:
        self.kept = 7

    monkeypatch.setattr(SocialsimApp, "run", quit_mid_round)
    args = ("--model", "openai/stub", "--api-base", "http://127.0.0.1:9/v1")
    result = run_cli("tui", "tavern", "--saves", str(saves), *args, "--confirm-above", "never")
    assert result.code == 0, result.err
    assert "round 1 stopped mid-round, its 7 answered exchanges kept in its journal" in (
        " ".join(result.out.split())
    )


def test_run_confirm_above_a_time_asks_before_any_round(
    saves: Path, run_cli, monkeypatch: pytest.MonkeyPatch
):
    with StubLLM(seed=1, latency=0.05) as server:
        args = ("--model", "openai/stub", "--api-base", server.url, "--saves", str(saves))
        monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
        result = run_cli("run", "tavern", "--rounds", "1", *args, "--confirm-above", "1s")
        probed = server.calls
    assert result.code == 2, result.err
    assert "cancelled before any round" in result.err and "per round" in result.err
    assert probed and not any(saves.glob("tavern-*"))  # the probe only: no round, no run
