"""Following a slow run (engine/llm/progress.py): the round's calls done of expected, in flight
and the oldest's age, as the transport reports them to the stub (tests/llm_stub.py); the
CLI's per-phase lines when piped, and the app header's calls in flight."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine import Simulation, resolve_scenario
from engine.llm.progress import Calls, PhaseDone, exchange, finished, started
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients
from tui.app import build_app
from tui.widgets.header import RunHeader

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    with StubLLM(seed=3) as server:
        yield server


def settings(stub: StubLLM, **extra: object) -> LLMSettings:
    return LLMSettings.model_validate(
        {"model": "openai/stub", "api_base": stub.url, "retries": 0, **extra}
    )


def test_calls_are_counted_in_their_round_and_phase() -> None:
    calls = Calls()
    ended: list[PhaseDone] = []
    calls.on_phase(ended.append)
    started("r0001:decide:Ann")  # outside a round: nobody counts it
    calls.expect(3)
    with calls.round(1, None):
        calls.phase("decide")
        with exchange("r0001:decide:Ann"):
            started("r0001:decide:Bob")
            p = calls.now()
            assert (p.done, p.in_flight, p.expected) == (0, 2, 3)
            assert p.oldest_age() is not None and p.eta() is None  # nothing done yet
        finished("r0001:decide:Bob")
        finished("r0001:decide:Bob")  # an exchange ends once
        calls.phase("speak")
        for key in ("a", "b", "c"):
            started(key)
        assert calls.now().expected == 5  # never below the calls done and in flight
        for key in ("a", "b", "c"):
            finished(key)
    assert [(e.phase, e.calls) for e in ended] == [("decide", 2), ("speak", 3)]
    last = ended[-1].progress
    assert (last.round, last.done, last.in_flight, last.oldest_started) == (1, 5, 0, None)
    with calls.round(2, 5):  # the round before says what to expect
        assert calls.now().expected == 5 and calls.now().done == 0


def test_every_exchange_of_a_stub_round_is_counted(stub: StubLLM) -> None:
    scenario = resolve_scenario("tavern")
    ended: list[PhaseDone] = []

    async def play() -> Simulation:
        sim = Simulation.new(scenario, seed=0, mind=settings(stub), rounds=2)
        sim.progress.on_phase(ended.append)
        try:
            await sim.run()
        finally:
            await sim.aclose()
            await close_clients()
        return sim

    sim = asyncio.run(play())
    rounds = [[e for e in ended if e.progress.round == r] for r in (1, 2)]
    assert [e.phase for e in rounds[0]] == ["narrate", "decide", "speak", "judge"]
    first, second = (sum(e.calls for e in r) for r in rounds)
    assert first + second == stub.calls  # one exchange per request: no retries, no faults
    assert first == rounds[0][-1].progress.done
    assert rounds[0][-1].progress.expected is None  # no hint, no round before
    assert rounds[1][0].progress.expected == first  # the round before's calls
    speak = next(e for e in rounds[0] if e.phase == "speak")
    assert speak.calls == sum(c.purpose == "speak" for c in sim.records[1].llm_calls) > 0
    assert first == len(sim.records[1].llm_calls)
    assert sim.progress.now().in_flight == 0


def test_a_piped_run_prints_a_line_per_finished_phase(stub: StubLLM, tmp_path: Path) -> None:
    args = ["--model", "openai/stub", "--api-base", stub.url, "--saves", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "tavern", "--rounds", "2", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    line = re.compile(
        r"^round (\d)/2 (decide|speak|judge): (\d+) calls in [\d.]+ s "
        r"\(round: (\d+)( of ~(\d+))? calls\)$"
    )
    lines = done.stderr.splitlines()
    matches = [line.match(text) for text in lines]
    assert all(matches), lines  # every stderr line is a phase line, and only those
    rows = [m.groups() for m in matches if m]
    assert [(r[0], r[1]) for r in rows] == [
        (str(n), phase) for n in (1, 2) for phase in ("decide", "speak", "judge")
    ]
    round_one = int(rows[2][3])
    assert rows[0][4] is None and rows[3][5] == str(round_one)  # round 2 expects round 1's
    assert sum(int(r[2]) for r in rows) == stub.calls
    assert "round 2/2" not in done.stdout.split("\n\n")[0]  # the summaries stay on stdout

    quiet = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "tavern", "--rounds", "1", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert quiet.returncode == 0 and quiet.stderr == ""


async def test_the_header_shows_the_calls_in_flight_and_the_oldest_age(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=4, hang_seconds=2.5) as server:
        server.script(["timeout"])  # the round's first call waits 2.5 s
        app = build_app("tavern", saves=saves, mind=settings(server, timeout=10))
        async with app.run_test(size=(160, 40)) as pilot:
            header = app.query_one(RunHeader)
            assert "in flight" not in header.render().plain
            await pilot.press("n")
            seen = ""
            for _ in range(80):
                await pilot.pause(0.05)
                seen = header.render().plain.splitlines()[0]
                if re.search(r"oldest [12]\.\d s", seen):
                    break
            assert re.search(r"▶ running\s+│\s+round 0/\d+\s+│\s+1 call in flight, oldest", seen)
            assert header._ticks is not None  # redrawn every second meanwhile
            for _ in range(200):
                await pilot.pause(0.05)
                if app.sim.round == 1 and not header.running:
                    break
            assert app.sim.round == 1
            assert "in flight" not in header.render().plain and header._ticks is None
