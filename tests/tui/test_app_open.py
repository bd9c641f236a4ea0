"""Opening a saved run in the app (issue 40): the first screen is drawn from the last
round's columns (no state model built), and the transcripts are filled afterwards on a
worker thread, newest round first, while the keys are answered."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from engine import SaveStore, Simulation, resolve_scenario
from engine.saves.history import History
from tui.app import build_app
from tui.screens.metrics import MetricsScreen
from tui.widgets.deck import AgentDeck
from tui.widgets.transcript import Transcript

SIZE = (100, 30)
ROUNDS = 4


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap and no files outside tmp_path."""


@pytest.fixture
def saved_run(saves: Path) -> str:
    """A tavern run of :data:`ROUNDS` rounds, saved and closed."""
    import asyncio

    sim = Simulation.new(resolve_scenario("tavern"), seed=1, store=SaveStore(saves), rounds=8)
    asyncio.run(sim.run(ROUNDS))
    sim.close()
    return sim.run_id


def first_pane(app) -> list[str]:
    """The entries of the first agent's transcript (the pane on screen), one a line."""
    return [entry.plain for entry in app.query_one(AgentDeck).panes[0].transcript.entries]


def first_of(lines: list[str], round_no: int) -> int:
    return next(k for k, line in enumerate(lines) if line.startswith(f"R{round_no} "))


async def test_the_first_screen_comes_before_the_older_transcripts(
    saves: Path, saved_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, readers = threading.Event(), []
    real = History.logs

    def held_logs(self, start=0, stop=None, relations=True):
        if threading.current_thread() is not threading.main_thread() and start < ROUNDS:
            readers.append(threading.current_thread())
            release.wait(10)  # the rounds before the newest wait until the test lets them
        return real(self, start, stop, relations)

    monkeypatch.setattr(History, "logs", held_logs)
    app = build_app(saved_run, saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):
            await pilot.pause()
            if readers:
                break
        lines = first_pane(app)
        assert any(line.startswith(f"R{ROUNDS} ") for line in lines)  # the newest round
        assert not any(line.startswith("R1 ") for line in lines)  # the older not yet
        assert app.sim.history.columns().built is None  # drawn without a state model
        await pilot.press("m")  # a key while the history is being read: answered
        await pilot.pause()
        assert isinstance(app.screen, MetricsScreen) and not release.is_set()
        await pilot.press("escape")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = first_pane(app)
        assert first_of(lines, 1) < first_of(lines, ROUNDS - 1) < first_of(lines, ROUNDS)
    assert readers and readers[0] is not threading.main_thread()


async def test_a_reopened_run_shows_its_transcripts_in_order(saves: Path) -> None:
    """Filled newest first, the transcripts read oldest first, as if played on screen."""
    played = build_app("tavern", saves=saves)
    async with played.run_test(size=SIZE) as pilot:
        for _ in range(ROUNDS):
            await pilot.press("n")
            while played.main.running:
                await pilot.pause()
        await pilot.pause()
        live = first_pane(played)
    again = build_app(played.sim.run_id, saves=saves)
    async with again.run_test(size=SIZE) as pilot:
        await again.workers.wait_for_complete()
        await pilot.pause()
        assert first_pane(again) == live


class OneTranscript(App[None]):
    """A transcript alone."""

    def compose(self) -> ComposeResult:
        yield Transcript()


async def test_older_lines_put_above_keep_the_reader_where_they_are() -> None:
    """A reader scrolled back stays on the lines they read while older ones arrive above;
    a reader at the bottom stays at the bottom."""
    app = OneTranscript()
    async with app.run_test(size=(40, 10)) as pilot:
        transcript = app.query_one(Transcript)
        for k in range(30):
            transcript.write(Text(f"new {k}"))
        await pilot.pause()
        bottom = transcript.visible_lines()
        transcript.write_older([Text(f"old {k}") for k in range(5)])
        await pilot.pause()
        assert transcript.visible_lines() == bottom  # still the newest lines
        transcript.page(-1)
        await pilot.pause()
        reading = transcript.visible_lines()
        assert reading != bottom
        transcript.write_older([Text(f"older {k}") for k in range(5)])
        await pilot.pause()
        assert transcript.visible_lines() == reading
        assert [e.plain for e in transcript.entries[:6]] == [
            *(f"older {k}" for k in range(5)),
            "old 0",
        ]


async def test_lines_taken_back_are_the_last_written_though_older_ones_came_above() -> None:
    """A failed round takes back what it wrote at the bottom, whatever older history
    arrived above meanwhile; the lines drawn are what is left."""
    app = OneTranscript()
    async with app.run_test(size=(40, 10)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.write(Text("R1 kept"))
        mark = transcript.written
        transcript.write(Text("R2 said"))
        transcript.set_live(Text("R2 deciding"))
        transcript.write_older([Text("R0 older")])  # the history arriving meanwhile
        transcript.write(Text("R2 said too"))
        await pilot.pause()
        transcript.take_back(transcript.written - mark)
        await pilot.pause()
        assert [e.plain for e in transcript.entries] == ["R0 older", "R1 kept"]
        assert transcript.live is None and transcript.line_count == 2
        assert [line.strip() for line in transcript.visible_lines() if line.strip()] == [
            "R0 older",
            "R1 kept",
        ]
