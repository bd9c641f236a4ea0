"""The app asks before a new LLM run whose estimate is above ``--confirm-above`` plays:
the dialog (pilot), its answers, and the threshold option."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from pathlib import Path

import pytest
import typer
from llm_stub import StubLLM
from textual.widgets import Static

from engine import Scenario
from engine.llm.settings import LLMSettings
from engine.llm.throughput import duration
from engine.minds.spec import OFFLINE
from engine.studies.estimate import estimate_run
from tui.app import build_app
from tui.cli.estimate import over_threshold, parse_threshold
from tui.screens.main import MainScreen
from tui.screens.spend import SpendScreen, spend_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def stub() -> StubLLM:
    with StubLLM(seed=1) as server:
        yield server


def _app(stub: StubLLM, saves: Path, spend: bool):
    spec = LLMSettings(model="openai/stub", api_base=stub.url)
    from engine import resolve_scenario

    estimate = estimate_run(resolve_scenario("tavern"), spec) if spend else None
    return build_app(
        "tavern", mind=spec, saves=saves, spend=(estimate, "500calls") if estimate else None
    )


async def test_the_dialog_shows_the_estimate_and_esc_quits_without_a_call(stub, saves):
    app = _app(stub, saves, spend=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SpendScreen)
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        for words in ("Start this LLM run?", "LLM calls", "tokens", "unknown price (openai/stub)"):
            assert words in text, words
        assert "Asked before the run (--confirm-above 500calls)" in text
        await pilot.press("n")  # no key of the main screen gets through
        await pilot.pause()
        assert app.return_code is None and isinstance(app.screen, SpendScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.return_code == 0  # the app is quitting
    assert stub.calls == 0 and app.sim.round == 0


async def test_enter_starts_the_run(stub, saves):
    app = _app(stub, saves, spend=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert app.return_code is None
    assert stub.calls == 0  # nothing is asked until a round is played


async def test_below_the_threshold_no_dialog(stub, saves):
    app = _app(stub, saves, spend=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


def test_thresholds_parse():
    assert parse_threshold("1.00") == (1.0, None, None)
    assert parse_threshold("$2.5") == (2.5, None, None)
    assert parse_threshold("500calls") == (None, 500.0, None)
    assert parse_threshold("500 calls") == (None, 500.0, None)
    assert parse_threshold("never") == (None, None, None)
    assert parse_threshold("90s") == (None, None, 90.0)
    assert parse_threshold("10m") == parse_threshold("10 min") == (None, None, 600.0)
    assert parse_threshold("1.5h") == (None, None, 5400.0)
    for bad in ("", "cheap", "-1", "nan", "$calls", "$5m", "-3s", "m"):
        with pytest.raises(typer.Exit):
            parse_threshold(bad)


def test_over_threshold(mini: Scenario, saves: Path):
    spec = LLMSettings(model="gpt-4o-mini")
    found = over_threshold(mini, spec, "0", saves)
    assert found is not None and found.cost_usd is not None and found.cost_usd.expected > 0
    assert over_threshold(mini, spec, "1000", saves) is None
    assert over_threshold(mini, spec, "1calls", saves) is not None
    assert over_threshold(mini, spec, "100000calls", saves) is None
    assert over_threshold(mini, spec, "never", saves) is None
    assert over_threshold(mini, OFFLINE, "0", saves) is None
    # against an --api-base the time is measured and shown whatever the price (here the
    # server is down: the dialog says why no time was measured)
    unpriced = LLMSettings(model="openai/stub", api_base="http://127.0.0.1:9/v1")
    down = over_threshold(mini, unpriced, "1000", saves)
    assert down is not None and down.wall_s is None and down.unmeasured
    assert over_threshold(mini, unpriced, "never", saves) is None


def test_a_time_threshold_asks_above_the_time_measured_at_the_server(mini: Scenario, saves):
    with StubLLM(seed=1, latency=0.05) as server:
        spec = LLMSettings(model="openai/stub", api_base=server.url)
        found = over_threshold(mini, spec, "0s", saves)
        assert found is not None and found.wall_s is not None and found.wall_s.expected > 0
        assert over_threshold(mini, spec, "100h", saves) is None
        shown = "\n".join(spend_lines(found, "0s"))
        per_round = found.wall_s.expected / found.rounds
        assert f"a round    ~{duration(per_round)}" in shown and "the run    ~" in shown
        assert "Timed at the run's server" in shown


def test_tui_confirm_above_reaches_the_app(run_cli, monkeypatch: pytest.MonkeyPatch, saves):
    from tui.app import SocialsimApp

    seen: list[object] = []
    monkeypatch.setattr(SocialsimApp, "run", lambda self: seen.append(self.spend))
    for threshold in ("0", "never", "1000"):
        args = ("tui", "tavern", "--model", "gpt-4o-mini", "--saves", str(saves))
        result = run_cli(*args, "--confirm-above", threshold)
        assert result.code == 0, result.err
    estimate, threshold = seen[0]  # type: ignore[misc]
    assert threshold == "0" and estimate.cost_usd.expected > 0
    assert seen[1:] == [None, None]
    bad = run_cli("tui", "tavern", "--model", "gpt-4o-mini", "--confirm-above", "cheap")
    assert bad.code == 2 and "--confirm-above 'cheap'" in bad.err and bad.err.count("\n") == 1


def test_an_llm_launch_reads_its_scenario_once(run_cli, monkeypatch: pytest.MonkeyPatch, saves):
    """The LLM's launch reads the scenario for its agents' models and estimate, and the app
    is built from that reading (a 1,000-agent cast's file takes seconds to read)."""
    from tui import app
    from tui.app import SocialsimApp

    reads: list[str] = []
    opened = app.opened_scenario
    monkeypatch.setattr(app, "opened_scenario", lambda t: (reads.append(t), opened(t))[1])
    built: list[str] = []
    monkeypatch.setattr(SocialsimApp, "run", lambda self: built.append(self.sim.scenario.id))
    args = ("tui", "tavern", "--model", "gpt-4o-mini", "--saves", str(saves))
    result = run_cli(*args, "--confirm-above", "never")
    assert result.code == 0, result.err
    assert reads == ["tavern"] and built == ["tavern"]
