"""Following a slow run (engine/llm/progress.py): the round's calls done of expected, in flight
and the oldest's age, as the transport reports them to the stub (tests/llm_stub.py); the
reports a worker relays of the runs it plays (engine/studies/experiments/relay.py); the
CLI's bars on a terminal and per-phase lines when piped, and the app header's calls in
flight."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import io
import queue
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine import Simulation, resolve_scenario
from engine.llm.progress import (
    Calls,
    PhaseDone,
    Progress,
    exchange,
    sent,
    watch_new,
)
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients
from engine.studies.experiments import relay
from engine.studies.experiments.relay import Report
from tui.app import build_app
from tui.cli import progress as cli_progress
from tui.cli.batch import progress_bar
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
    with exchange("r0001:decide:Ann"):  # outside a round: nobody counts it
        sent()
    with calls.round(1, None):
        assert calls.now().expected is None  # no round before, no plan yet
        calls.phase("decide", 3)  # the round's plan: this phase and the later ones
        with exchange("r0001:decide:Ann"):
            assert calls.now().in_flight == 0  # not sent yet (held, or queued for a slot)
            sent()
            sent()  # a retry: the same call
            with exchange("r0001:decide:Bob"):
                sent()
                p = calls.now()
                assert (p.done, p.in_flight, p.expected) == (0, 2, 3)
                assert p.oldest_age() is not None and p.eta() is None  # nothing done yet
        calls.phase("speak")
        with exchange("a"), exchange("b"), exchange("c"):
            for _ in range(3):
                sent()
            assert calls.now().in_flight == 1  # each task's own exchange is the one sent
    assert [(e.phase, e.calls) for e in ended] == [("decide", 2), ("speak", 3)]
    last = ended[-1].progress
    assert (last.round, last.done, last.in_flight, last.oldest_started) == (1, 5, 0, None)
    with calls.round(2, 5):  # the round before says what to expect, until the plan does
        assert calls.now().expected == 5 and calls.now().done == 0
        assert calls.last_round() == {"decide": 2, "speak": 3}
        calls.phase("decide", 4)
        with exchange("x"):
            pass  # served from the journal: done, never in flight
        assert (calls.now().done, calls.now().in_flight) == (1, 0)
        calls.phase("speak", 2)  # the plan as known now: after the 1 call done, 2 more
        assert calls.now().expected == 3


async def test_an_exchange_cancelled_before_it_was_sent_never_happened() -> None:
    calls = Calls()
    with calls.round(1, None):
        calls.gate.hold()

        async def held() -> None:
            with exchange("a"):
                await calls.gate.passage()
                sent()

        task = asyncio.create_task(held())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (calls.now().done, calls.now().in_flight) == (0, 0)

        async def answered_late() -> None:
            with exchange("b"):
                sent()
                await asyncio.sleep(3600)

        task = asyncio.create_task(answered_late())
        await asyncio.sleep(0)
        assert calls.now().in_flight == 1
        task.cancel()  # abandoned once sent (quit now): it ends, and counts
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (calls.now().done, calls.now().in_flight) == (1, 0)


def test_a_tracker_made_in_a_watched_block_reports_every_change() -> None:
    made: list[Calls] = []
    Calls()  # before the block: nobody hears of it
    with watch_new(made.append):
        calls = Calls()
    assert made == [calls]
    seen: list[Progress] = []
    stop = calls.on_change(seen.append)
    with calls.round(1, 2):
        calls.phase("decide")
        with exchange("a"):
            sent()
    stop()
    with calls.round(2, 1):
        pass
    # round begun, phase begun, started, finished, the round's last phase ended
    assert [(p.round, p.phase, p.done, p.in_flight) for p in seen] == [
        (1, "", 0, 0),
        (1, "decide", 0, 0),
        (1, "decide", 0, 1),
        (1, "decide", 1, 0),
        (1, "", 1, 0),
    ]


def test_a_report_moves_its_times_to_the_receivers_clock() -> None:
    p = Progress(round=2, phase="judge", done=4, expected=8, in_flight=1,
                 oldest_started=95.0, round_started=90.0)  # fmt: skip
    done = PhaseDone("decide", 4, 3.0, p)
    moved = Report("r", 3, p, done, sent=100.0).local(now=1000.0)
    assert moved.progress is not None and moved.phase is not None
    assert (moved.progress.round_started, moved.progress.oldest_started) == (990.0, 995.0)
    assert moved.phase.progress == moved.progress and moved.sent == 1000.0
    assert moved.progress.oldest_age(1001.0) == 6.0  # the age it had when sent, and since
    assert Report("r", 3, None, sent=5.0).local(now=9.0).progress is None


def test_a_followed_run_relays_its_rounds_under_its_name(
    stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink: queue.Queue[Report] = queue.Queue()
    with relay.follow("offstage", 2):  # no sink installed: nothing is sent
        Calls()
    monkeypatch.setattr(relay, "_SINK", sink)

    async def play() -> None:
        sim = Simulation.new(resolve_scenario("tavern"), seed=0, mind=settings(stub), rounds=2)
        try:
            await sim.run()
        finally:
            await sim.aclose()
            await close_clients()

    with relay.follow("tavern-a", 2):
        asyncio.run(play())
    reports: list[Report] = []
    relay.drain(sink, reports.append)
    assert {(r.run, r.rounds) for r in reports} == {("tavern-a", 2)}
    assert reports[-1].progress is None  # the job's end
    ended = [r.phase for r in reports if r.phase is not None]
    assert [(e.progress.round, e.phase) for e in ended] == [
        (n, phase) for n in (1, 2) for phase in ("narrate", "decide", "speak", "judge")
    ]
    assert sum(e.calls for e in ended) == stub.calls > 0
    busiest = max(r.progress.in_flight for r in reports if r.progress is not None)
    assert busiest >= 1


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
    # the round's own plan: who decides, who speaks, which edges are judged, each known from
    # its phase on; the phases not known yet as in the round before (the first: a bound)
    assert [r[-1].progress.expected for r in rounds] == [first, second]  # judged: exact
    decide, speak = rounds[0][1], rounds[0][2]
    assert decide.progress.expected == 5 + 5 + 2 * 5  # 5 decide, all may speak, no edge yet
    assert speak.progress.expected == 5 + speak.calls + 2 * 5
    assert rounds[1][0].progress.expected == first  # the phases to come: as in round 1
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
    # the round's own plan: round 1 decided by 5 (each may speak, 2 judge calls each); its
    # judging known exactly; round 2 expects round 1's calls of the phases not known yet
    assert rows[0][5] == str(5 + 5 + 2 * 5) and rows[2][5] == str(round_one)
    assert rows[3][5] == str(round_one)
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
            # the round under way, its phase, calls done of expected, in flight, time left
            assert re.search(
                r"▶ running\s+│\s+round 1/\d+\s+│\s+deciding · \d/~\d+ calls · 1 call in flight, "
                r"oldest [12]\.\d s · time left unknown",
                seen,
            ), seen
            assert header._ticks is not None  # redrawn every second meanwhile
            for _ in range(200):
                await pilot.pause(0.05)
                if app.sim.round == 1 and not header.running:
                    break
            assert app.sim.round == 1
            assert "in flight" not in header.render().plain and header._ticks is None


def _plain(console_file: io.StringIO) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console_file.getvalue())


def test_a_batch_bar_on_a_terminal_shows_a_row_per_run_in_flight(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rich.console import Console

    out = io.StringIO()
    console = Console(force_terminal=True, file=out, width=200)
    now = time.monotonic()
    first = Progress(round=1, phase="decide", done=3, expected=12, in_flight=2,
                     oldest_started=now - 60, round_started=now - 30)  # fmt: skip
    arm = Progress(round=4, phase="judge", done=10, expected=20, in_flight=0,
                   oldest_started=None, round_started=now - 10)  # fmt: skip
    with progress_bar("trial t", 3, llm=True, console=console) as bar:
        assert bar.calls is not None
        bar.calls(Report("t-s1-prefix", 2, first, sent=now))
        bar.calls(Report("t-s1-none", 5, arm, PhaseDone("speak", 4, 2.0, arm), sent=now))
        bar.progress.refresh()
        shown = _plain(out)
        bar.calls(Report("t-s1-prefix", 2, None, sent=now))  # its job ended
        out.seek(0)
        out.truncate()
        bar.progress.refresh()
        after = _plain(out)
    assert "trial t" in shown and "0/3" in shown
    # the round expects its plan's calls; the ETA goes at the round's pace so far
    assert re.search(
        r"t-s1-prefix round 1/2 decide · 3/~12 calls · 2 in flight, oldest 6\d s · ETA 1\.\d min",
        shown,
    ), shown
    assert re.search(r"t-s1-none round 4/5 judge · 10/~20 calls · ETA \d+(\.\d)? s", shown), shown
    assert "t-s1-prefix" not in after and "t-s1-none round 4/5" in after
    assert capsys.readouterr().err == ""  # on a terminal: no phase lines


def test_a_piped_batch_prints_each_runs_finished_phases(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    console = Console(force_terminal=False, file=io.StringIO())
    p = Progress(round=2, phase="judge", done=7, expected=9, round_started=time.monotonic())
    with progress_bar("sweep debate", 2, llm=True, console=console) as bar:
        assert bar.calls is not None
        bar.calls(Report("cell a", None, p, PhaseDone("speak", 3, 1.5, p)))
        bar.calls(Report("cell a", None, p, PhaseDone("narrate", 0, 0.0, p)))  # no call
        bar.calls(Report("cell a", None, p))
    assert capsys.readouterr().err.splitlines() == [
        "cell a round 2 speak: 3 calls in 1.5 s (round: 7 of ~9 calls)"
    ]
    with progress_bar("offline", 2, console=console) as bar:
        assert bar.calls is None  # an offline batch relays nothing


def test_a_run_on_a_terminal_shows_its_rounds_calls_bar(
    stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    out = io.StringIO()
    console = Console(force_terminal=True, file=out, width=200)
    monkeypatch.setattr(cli_progress, "terminal", lambda: console)
    scenario = resolve_scenario("tavern")

    async def play() -> Simulation:
        sim = Simulation.new(scenario, seed=0, mind=settings(stub), rounds=1)
        try:
            with cli_progress.calls_shown(sim):
                await sim.run()
        finally:
            await sim.aclose()
            await close_clients()
        return sim

    sim = asyncio.run(play())
    shown = _plain(out)
    done = len(sim.records[1].llm_calls)
    # the first frame is before the round; the last holds the round's calls, all done, of
    # those the estimate expected (no round before the first says)
    assert re.search(r"^━+ round 0/1 · 0 calls · ETA unknown", shown), shown
    assert re.search(rf"round 1/1 · {done}/~\d+ calls · ETA 0\.0 s", shown), shown


def test_each_decision_is_told_as_its_reply_arrives(stub: StubLLM) -> None:
    """An LLM round's AgentDecided for an agent comes when its own reply is in, while other
    decisions are still being asked (not all at the end of phase 1)."""
    from engine.round.events import AgentDecided

    done: list[int] = []

    async def play() -> None:
        sim = Simulation.new(resolve_scenario("tavern"), seed=0, mind=settings(stub, timeout=10))
        sim.subscribe(
            lambda e: done.append(sim.progress.now().done) if isinstance(e, AgentDecided) else None
        )
        try:
            await sim.step()
        finally:
            await sim.aclose()
            await close_clients()

    asyncio.run(play())
    assert done == [1, 2, 3, 4, 5]  # the calls done when each decision was told
