"""LLM bench: round wall time against the critical path (k+2)·L, and the LLM client's own
CPU per call against the floor of plain httpx, on the local stub.

Run from the repository root::

    .venv/bin/python bench/bench_llm.py                  # 5 and 30 agents, both judge modes
    .venv/bin/python bench/bench_llm.py --quick          # fewer rounds and passes
    .venv/bin/python bench/bench_llm.py --latency 0.2    # stub latency L per request (s)
    .venv/bin/python bench/bench_llm.py --stub-thread    # stub in this process (shares the GIL)
    .venv/bin/python bench/bench_llm.py --profile        # plus cProfile of the event loop

A round makes three dependent waves of LLM calls: phase 1 (every agent decides at once,
one L), phase 2 (the k speakers one after another, k·L) and the update wave (U_S, U_R and
the needs judge of every agent at once, one L). With every request taking L seconds on
the server, no round can finish before (k+2)·L; the ratio wall / (k+2)·L is the engine's
and the transport's overhead on top of that (targets: batched <= 1.2, per-edge <= 1.35).
Structured replies the stub makes can fail the engine's cross-field checks (a silent
decision with a target, say); each such reply costs a re-ask, one more L on that call's
chain. The "adjusted" bound counts those re-ask chains and the waves a full semaphore
forces, so its ratio is the overhead alone.

The client section (``llm_floor``) sends the update wave of the last per-edge round three
times through the engine's client and three times with plain httpx (same bodies, same
concurrency, same stub), and prints the CPU per call of each and their ratio (target <= 2).

The stub runs in a child process and keeps connections open, as a real server does, so this
process's CPU time is the client's. The bench never fails on a missed target: it prints
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import math
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch at litellm import
os.environ.setdefault("LITELLM_LOG", "ERROR")

from bench_engine import make_scenario  # noqa: E402
from llm_floor import (  # noqa: E402
    ACOMPLETION,
    AIOHTTP,
    ENGINE,
    FLOOR,
    measure,
    ratios,
    same_payloads,
    spread,
    wave_of,
)
from llm_stub import StubLLM  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from engine.core.exchanges import LLMCall  # noqa: E402
from engine.core.scenario import Scenario, load_library  # noqa: E402
from engine.core.state import RoundRecord  # noqa: E402
from engine.llm.settings import MAX_CONCURRENCY, LLMSettings  # noqa: E402
from engine.round.events import (  # noqa: E402
    AgentDecided,
    AgentSpoke,
    RoundEnded,
    RoundStarted,
    SimEvent,
    StateUpdated,
)
from engine.round.simulation import Simulation  # noqa: E402

#: wall / (k+2)·L at L = 0.2 s, 30 agents, by judge mode.
RATIO_TARGETS = {"batched": 1.2, "per-edge": 1.35}
CPU_TARGET = 2.0  # the engine's client CPU per call / the plain httpx floor's
MODEL = "openai/stub"
MODES = ("per-edge", "batched")
JUDGE_PURPOSES = ("emotion", "relation", "relations", "needs")
LAG_INTERVAL = 0.005  # event-loop lag probe period (s)

console = Console(width=max(Console().width, 170))


# -- the stub ------------------------------------------------------------------------------


class StubHandle:
    """The stub in this process (threads, shares the GIL) or in a child process."""

    def __init__(self, latency: float, child: bool, keep_alive: bool) -> None:
        self.latency = latency
        self.child = child
        self.keep_alive = keep_alive
        self._stub: StubLLM | None = None
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> StubHandle:
        if not self.child:
            self._stub = StubLLM(
                latency=self.latency, chunk_latency=0.0, seed=1, keep_alive=self.keep_alive
            )
            self.url = self._stub.start()
            return self
        cmd = [
            sys.executable,
            str(ROOT / "tests" / "llm_stub.py"),
            *("--port", "0", "--latency", str(self.latency), "--seed", "1", "--quiet"),
            *(["--keep-alive"] if self.keep_alive else []),
        ]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        found = re.search(r"(http://\S+/v1)", line)
        if not found:
            self._proc.terminate()
            raise SystemExit(f"the stub child did not start: {line!r}")
        self.url = found.group(1)
        return self

    def cpu(self) -> float | None:
        """CPU seconds the child stub has used (Linux); None in this process."""
        if self._proc is None:
            return None
        try:
            with open(f"/proc/{self._proc.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        if self._stub is not None:
            self._stub.stop()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


# -- probes --------------------------------------------------------------------------------


class PhaseClock:
    """Engine events, time-stamped with perf_counter as they arrive (listener)."""

    def __init__(self) -> None:
        self.start = self.decided = self.updated = self.ended = 0.0
        self.spoke: list[float] = []

    def __call__(self, event: SimEvent) -> None:
        now = time.perf_counter()
        if isinstance(event, RoundStarted):
            self.start, self.decided, self.updated, self.ended = now, 0.0, 0.0, 0.0
            self.spoke = []
        elif isinstance(event, AgentDecided):
            self.decided = self.decided or now  # all are emitted after the phase-1 gather
        elif isinstance(event, AgentSpoke):
            self.spoke.append(now)
        elif isinstance(event, StateUpdated):
            self.updated = now
        elif isinstance(event, RoundEnded):
            self.ended = now


@dataclass
class Span:
    """One HTTP attempt (transport._once), and how long its call queued for the semaphore."""

    key: str
    start: float
    end: float
    queued: float


class Wire:
    """Wraps one transport instance (not the class) to see each HTTP attempt."""

    def __init__(self, transport: Any) -> None:
        self.inflight = 0
        self.peak = 0
        self.spans: list[Span] = []
        self._entered: dict[int, float] = {}
        complete, once = transport.complete, transport._once

        async def timed_complete(request: Any) -> Any:
            self._entered[id(request)] = time.perf_counter()
            try:
                return await complete(request)
            finally:
                self._entered.pop(id(request), None)

        async def timed_once(request: Any) -> Any:
            start = time.perf_counter()
            entered = self._entered.pop(id(request), start)  # only the first attempt queued
            self.inflight += 1
            self.peak = max(self.peak, self.inflight)
            try:
                return await once(request)
            finally:
                self.inflight -= 1
                self.spans.append(Span(request.key, start, time.perf_counter(), start - entered))

        transport.complete = timed_complete
        transport._once = timed_once

    def take(self) -> tuple[list[Span], int]:
        spans, peak = self.spans, self.peak
        self.spans, self.peak = [], self.inflight
        return spans, peak


class LagProbe:
    """Event-loop lag: how late a 5 ms sleep wakes up (CPU work blocking the loop)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(LAG_INTERVAL)
            self.lags.append(max(0.0, time.perf_counter() - t0 - LAG_INTERVAL))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def take(self) -> list[float]:
        lags, self.lags = self.lags, []
        return lags


# -- one configuration ---------------------------------------------------------------------


@dataclass
class RoundFig:
    round: int
    wall: float
    k: int  # speak calls (speakers) this round
    usage_calls: int
    retries: int
    reasks: int
    fallbacks: int
    errors: int
    phase1: float
    phase2: float
    update: float
    tail: float  # StateUpdated -> RoundEnded (take_calls, usage, gc.freeze)
    lead: float  # step() start -> RoundStarted
    wave_calls: int  # first attempts in the update wave
    depth1: int  # phase-1 chain length in L (decide re-asks, semaphore waves)
    depth_upd: int  # update chain length in L (re-asks, semaphore waves)
    spans: list[Span]
    peak: int
    lags: list[float]
    cpu_main: float
    cpu_proc: float
    cpu_stub: float | None  # the child stub's CPU time in the round

    def bound(self, latency: float) -> float:
        return (self.k + 2) * latency

    def adjusted(self, latency: float) -> float:
        return (self.depth1 + self.k + self.depth_upd) * latency


@dataclass
class ConfigRun:
    agents: int
    scenario: str
    mode: str
    warmup_wall: float
    rounds: list[RoundFig] = field(default_factory=list)
    profile: cProfile.Profile | None = None
    #: The exchanges of the last timed round.
    calls: list[LLMCall] = field(default_factory=list)


def round_fig(
    record: RoundRecord,
    wall: float,
    lead: float,
    clock: PhaseClock,
    spans: list[Span],
    peak: int,
    lags: list[float],
    cpu: tuple[float, float, float | None],
    cap: int,
) -> RoundFig:
    calls = record.llm_calls
    usage = record.usage
    k = sum(c.purpose == "speak" for c in calls)
    reasked = {c.purpose for c in calls if c.key.endswith(":reask")}
    judge_first = sum(
        c.purpose in JUDGE_PURPOSES and not c.key.endswith((":reask", ":rejected")) for c in calls
    )
    decide_first = sum(c.purpose == "decide" and c.key.count(":") == 2 for c in calls)
    depth1 = max(1 + ("decide" in reasked), math.ceil(decide_first / cap))
    waves = math.ceil(judge_first / cap) if judge_first else 0
    depth_upd = max(1 + any(p in reasked for p in JUDGE_PURPOSES), waves)
    end2 = clock.spoke[-1] if clock.spoke else clock.decided
    return RoundFig(
        round=record.round,
        wall=wall,
        k=k,
        usage_calls=usage.calls if usage else len(calls),
        retries=usage.retries if usage else 0,
        reasks=usage.reasks if usage else 0,
        fallbacks=usage.fallbacks if usage else 0,
        errors=usage.errors if usage else 0,
        phase1=clock.decided - clock.start,
        phase2=end2 - clock.decided,
        update=clock.updated - end2,
        tail=clock.ended - clock.updated,
        lead=lead,
        wave_calls=judge_first,
        depth1=depth1,
        depth_upd=depth_upd,
        spans=spans,
        peak=peak,
        lags=lags,
        cpu_main=cpu[0],
        cpu_proc=cpu[1],
        cpu_stub=cpu[2],
    )


async def run_config(
    scenario: Scenario,
    mode: str,
    stub: StubHandle,
    rounds: int,
    cap: int,
    profile: bool,
) -> ConfigRun:
    settings = LLMSettings(
        model=MODEL,
        api_base=stub.url,
        judge_mode=mode,  # type: ignore[arg-type]
        max_concurrency=cap,
        timeout=30,
    )
    total = 1 + rounds + (1 if profile else 0)
    sim = Simulation.new(
        scenario,
        seed=1,
        mind=settings,
        store=None,
        rounds=total,
    )
    wire = Wire(sim.mind.client.transport)  # type: ignore[attr-defined]
    clock = PhaseClock()
    sim.subscribe(clock)
    lag = LagProbe()
    run = ConfigRun(len(scenario.agents), scenario.id, mode, 0.0)
    try:
        t0 = time.perf_counter()
        await sim.step()  # warm-up: litellm import, client creation; not counted
        run.warmup_wall = time.perf_counter() - t0
        wire.take()
        lag.start()
        for _ in range(rounds):
            lag.take()
            cpu0, stub0 = (time.thread_time(), time.process_time()), stub.cpu()
            t0 = time.perf_counter()
            record = await sim.step()
            wall = time.perf_counter() - t0
            stub1 = stub.cpu()
            cpu = (
                time.thread_time() - cpu0[0],
                time.process_time() - cpu0[1],
                None if stub0 is None or stub1 is None else stub1 - stub0,
            )
            spans, peak = wire.take()
            fig = round_fig(
                record, wall, clock.start - t0, clock, spans, peak, lag.take(), cpu, cap
            )
            run.rounds.append(fig)
            run.calls = record.llm_calls
        if profile:
            await lag.stop()
            run.profile = cProfile.Profile()
            run.profile.enable()
            await sim.step()
            run.profile.disable()
    finally:
        await lag.stop()
        await sim.aclose()
    return run


# -- formatting ----------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def secs(seconds: float) -> str:
    return f"{seconds:.2f} s"


def in_l(seconds: float, latency: float) -> str:
    return f"{seconds / latency:.2f} L"


def cpu_cell(fig: RoundFig) -> str:
    stub = "" if fig.cpu_stub is None else f" / {secs(fig.cpu_stub)}"
    return secs(fig.cpu_proc) + stub


def stub_cell(figs: Sequence[RoundFig]) -> str:
    used = [f.cpu_stub for f in figs if f.cpu_stub is not None]
    return f"{spread(used)} s" if used else "-"


def ratio_cell(value: float, target: float) -> str:
    return f"{value:.2f} {verdict(value, target)}"


def verdict(value: float, target: float) -> str:
    return "[green]meets[/green]" if value <= target else "[red]MISSES[/red]"


def table(title: str, columns: Sequence[str]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold")
    for k, col in enumerate(columns):
        t.add_column(col, justify="left" if k < 2 else "right")
    return t


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def purpose_of(key: str) -> str:
    """``r0001:relation:A:B:reask`` -> ``relation``."""
    parts = key.split(":")
    return parts[1] if len(parts) > 1 else key


def package_of(path: str) -> str:
    """A coarse owner for a profiled frame: a site-package, the engine, or the stdlib."""
    parts = Path(path).parts
    if path == "~":
        return "(builtins)"
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if path.startswith(str(ROOT)):
        rel = Path(path).relative_to(ROOT).parts
        return "/".join(rel[:2]) if rel[0] == "engine" else rel[0]
    if "asyncio" in parts:
        return "asyncio"
    return f"stdlib:{Path(path).stem}"


def _idle(func: str) -> bool:
    return "poll' of 'select" in func or "select' of 'select" in func


def profile_tables(run: ConfigRun, limit: int = 14) -> list[Table]:
    """Own time by package (epoll waits apart) and the top entries by cumulative time."""
    assert run.profile is not None
    stats = pstats.Stats(run.profile)
    by_pkg: dict[str, float] = defaultdict(float)
    rows = []
    idle = busy = 0.0
    for (path, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        if _idle(func):
            idle += tottime
            continue
        busy += tottime
        by_pkg[package_of(path)] += tottime
        if "asyncio" in Path(path).parts or Path(path).name == Path(__file__).name:
            continue
        where = func if path == "~" else f"{package_of(path)}:{Path(path).name}:{line}({func})"
        rows.append((where, ncalls, tottime, cumtime))
    head = f"cProfile, {run.agents} agents {run.mode}, event-loop thread"
    t1 = table(f"{head}: busy time by package", ["package", "", "own time", "share of busy"])
    for pkg, own in sorted(by_pkg.items(), key=lambda kv: kv[1], reverse=True)[:limit]:
        t1.add_row(pkg, "", ms(own), f"{100 * own / busy:.0f}%")
    t1.add_row("busy total", "", ms(busy), "100%", end_section=True)
    t1.add_row("idle (epoll wait)", "", ms(idle), "")
    rows.sort(key=lambda r: r[3], reverse=True)
    t2 = table(f"{head}: top by cumulative time", ["function", "", "calls", "own", "cum"])
    for where, ncalls, tottime, cumtime in rows[:limit]:
        t2.add_row(where, "", str(ncalls), ms(tottime), ms(cumtime))
    return [t1, t2]


# -- main ----------------------------------------------------------------------------------


def scenarios(sizes: Sequence[int], rounds: int) -> list[Scenario]:
    return [load_library("tavern") if n == 5 else make_scenario(n, rounds + 2) for n in sizes]


def print_rounds(runs: list[ConfigRun], latency: float, cap: int) -> None:
    t = table(
        f"1. LLM round wall time vs the critical path (k+2)·L, L = {latency:g} s "
        f"(max_concurrency {cap}; warm-up round excluded)",
        [
            "agents",
            "judge mode",
            "round",
            "k",
            "LLM calls",
            "wall",
            "CPU",
            "(k+2)·L",
            "ratio (target)",
            "retries",
            "re-asks",
            "fallbacks",
            "errors",
            "adjusted bound",
            "wall / adj.",
        ],
    )
    for run in runs:
        for k, fig in enumerate(run.rounds):
            t.add_row(
                f"{run.agents} {run.scenario}",
                run.mode,
                str(fig.round),
                str(fig.k),
                str(fig.usage_calls),
                secs(fig.wall),
                cpu_cell(fig),
                secs(fig.bound(latency)),
                f"{ratio_cell(fig.wall / fig.bound(latency), RATIO_TARGETS[run.mode])} "
                f"(≤ {RATIO_TARGETS[run.mode]})",
                str(fig.retries),
                str(fig.reasks),
                str(fig.fallbacks),
                str(fig.errors),
                f"({fig.depth1}+{fig.k}+{fig.depth_upd})·L = {secs(fig.adjusted(latency))}",
                f"{fig.wall / fig.adjusted(latency):.2f}",
                end_section=k == len(run.rounds) - 1,
            )
    console.print(t)
    console.print(
        "   k = speak calls (phase-2 speakers); LLM calls = the round record's usage.calls; "
        "CPU = this process's CPU time in the round (all threads; the stub's too with "
        "--stub-thread) / the child stub's; "
        f"max_concurrency = {cap} (the LiteLLMTransport semaphore). Adjusted bound = "
        "(phase-1 chain + k + update chain)·L: a chain is 2 when a call in it was re-asked, "
        "and at least ceil(first calls of the wave / max_concurrency)."
    )
    warm = ", ".join(f"{r.agents} {r.mode} {secs(r.warmup_wall)}" for r in runs)
    console.print(f"   warm-up rounds (excluded): {warm}\n")


def print_phases(runs: list[ConfigRun], latency: float) -> None:
    t = table(
        "2. Where the time goes (mean per timed round; L-units = seconds / L)",
        [
            "agents",
            "judge mode",
            "phase 1",
            "phase 2 / speaker",
            "update wave",
            "update calls",
            "peak in flight (queued max)",
            "HTTP - L p50 / max",
            "loop lag max",
            "lag > 20 ms",
            "loop CPU / call",
            "CPU loop / process",
        ],
    )
    for run in runs:
        figs = run.rounds
        spans = [s for f in figs for s in f.spans]
        over = [s.end - s.start - latency for s in spans]
        lags = [x for f in figs for x in f.lags]
        p2 = [f.phase2 / f.k for f in figs if f.k]
        t.add_row(
            str(run.agents),
            run.mode,
            in_l(mean([f.phase1 for f in figs]), latency),
            in_l(mean(p2), latency) if p2 else "-",
            in_l(mean([f.update for f in figs]), latency),
            f"{mean([f.wave_calls for f in figs]):.0f}",
            f"{max(f.peak for f in figs)} ({ms(max((s.queued for s in spans), default=0.0))})",
            f"{1000 * pct(over, 0.5):.0f} / {ms(max(over, default=0.0))}",
            ms(max(lags, default=0.0)),
            ms(sum(x for x in lags if x > 0.02) / len(figs)),
            f"{1000 * sum(f.cpu_main for f in figs) / max(1, len(spans)):.1f} ms",
            f"{mean([f.cpu_main for f in figs]):.2f} / {secs(mean([f.cpu_proc for f in figs]))}",
        )
    console.print(t)
    console.print(
        "   phase 1 = RoundStarted -> first AgentDecided; phase 2 -> last AgentSpoke; update "
        "wave -> StateUpdated (listener timestamps). HTTP = each transport._once attempt "
        "(litellm + stub) minus L; queued = wait for the semaphore. loop lag = lateness of a "
        "5 ms asyncio.sleep probe ('lag > 20 ms' sums the long stalls per round). loop CPU = "
        "event-loop thread (time.thread_time), per HTTP attempt; process = all threads "
        "(includes the stub's handler threads when it runs in this process).\n"
    )


def print_excess(runs: list[ConfigRun], latency: float) -> None:
    t = table(
        "3. Wall time over (k+2)·L by cause (means per timed round; the ms columns add up)",
        [
            "agents",
            "judge mode",
            "wall / (k+2)·L",
            "over (k+2)·L",
            "extra chains (re-asks, semaphore)",
            "phase-1 overhead",
            "phase-2 overhead (per speaker)",
            "update overhead",
            "outside phases",
        ],
    )
    for run in runs:
        figs = run.rounds
        chains = [(f.depth1 + f.depth_upd - 2) * latency for f in figs]
        p1 = [f.phase1 - f.depth1 * latency for f in figs]
        p2 = [f.phase2 - f.k * latency for f in figs]
        per = [(f.phase2 - f.k * latency) / f.k for f in figs if f.k]
        up = [f.update - f.depth_upd * latency for f in figs]
        total = [f.wall - f.bound(latency) for f in figs]
        rest = [
            tot - c - a - b - u for tot, c, a, b, u in zip(total, chains, p1, p2, up, strict=True)
        ]
        ratio = mean([f.wall / f.bound(latency) for f in figs])
        t.add_row(
            str(run.agents),
            run.mode,
            ratio_cell(ratio, RATIO_TARGETS[run.mode]),
            ms(mean(total)),
            ms(mean(chains)),
            ms(mean(p1)),
            f"{ms(mean(p2))} ({ms(mean(per))})",
            ms(mean(up)),
            ms(mean(rest)),
        )
    console.print(t)
    console.print(
        "   extra chains = L per re-asked chain (phase 1, update) and per extra semaphore "
        "wave; overheads = phase time beyond its chain of L; outside phases = step() before "
        "RoundStarted and after StateUpdated (take_calls, usage, gc.freeze).\n"
    )


def print_purposes(runs: list[ConfigRun], latency: float) -> None:
    purposes = ("decide", "speak", "emotion", "relation", "relations", "needs")
    t = table(
        "4. HTTP attempt time minus L by purpose, p50 / max (ms), attempts",
        ["agents", "judge mode", *purposes],
    )
    for run in runs:
        by: dict[str, list[float]] = defaultdict(list)
        for fig in run.rounds:
            for s in fig.spans:
                by[purpose_of(s.key)].append(1000 * (s.end - s.start - latency))
        cells = [
            f"{pct(by[p], 0.5):.0f} / {max(by[p]):.0f} ({len(by[p])})" if by[p] else "-"
            for p in purposes
        ]
        t.add_row(str(run.agents), run.mode, *cells)
    console.print(t)
    console.print(
        "   phase-2 speak calls run alone (the sequential part); the others share the event "
        "loop with their whole wave, so their excess grows with the wave's size.\n"
    )


def print_client(
    results: dict[int, dict[str, list[Any]]], calls: int, identical: bool, latency: float
) -> float:
    """The client table, one block per concurrency cap; returns the engine's median ratio to
    the httpx floor at the first (the run's) cap."""
    t = table(
        f"5. Client CPU per LLM call: the update wave of the last per-edge round ({calls} "
        f"structured calls), stub in a child process at L = {latency:g} s; median (min-max) "
        "of the timed passes",
        ["max_concurrency", "sender", "CPU per call", "wall per pass", "÷ httpx", "÷ aiohttp"],
    )
    for cap, passes in results.items():
        for name in (ENGINE, FLOOR, AIOHTTP, ACOMPLETION):
            runs = passes[name]
            t.add_row(
                str(cap),
                name,
                f"{spread([p.cpu_per_call for p in runs], 1000)} ms",
                f"{spread([p.wall for p in runs])} s",
                spread(ratios(passes, name)),
                spread(ratios(passes, name, AIOHTTP)),
                end_section=name == ACOMPLETION,
            )
    console.print(t)
    same = "checked identical" if identical else "[red]NOT identical[/red]"
    console.print(
        "   engine = LLMClient.structured over LiteLLMTransport (openai/ model: litellm's "
        "provider layer, no acompletion); floors = plain httpx.AsyncClient / "
        f"aiohttp.ClientSession posting the same bodies ({same}) and reading the JSON, "
        "under the same semaphore; litellm.acompletion = the engine's "
        "client on a hosted_vllm/ model, the route of every other provider. CPU = this "
        "process's CPU time (all threads) per call; passes interleave the senders after one "
        "warm-up pass each. Target (issue 12): engine ÷ httpx <= 2 at the run's cap.\n"
    )
    first = next(iter(results.values()))
    return statistics.median(ratios(first, ENGINE))


def print_targets(runs: list[ConfigRun], latency: float, cpu_ratio: float | None) -> None:
    t = table(
        f"Targets (issue 12), L = {latency:g} s; median (min-max) of the timed rounds",
        ["figure", "", "measured", "wall per round", "CPU per round", "stub CPU", "target"],
    )
    for run in runs:
        ratio = [f.wall / f.bound(latency) for f in run.rounds]
        target = RATIO_TARGETS[run.mode]
        t.add_row(
            f"LLM round ÷ (k+2)·L, {run.agents} agents {run.mode}",
            "",
            spread(ratio),
            f"{spread([f.wall for f in run.rounds])} s",
            f"{spread([f.cpu_proc for f in run.rounds])} s",
            stub_cell(run.rounds),
            f"≤ {target} {verdict(statistics.median(ratio), target)}",
        )
    if cpu_ratio is not None:
        t.add_row(
            "client CPU per LLM call ÷ plain httpx floor",
            "",
            f"{cpu_ratio:.2f}",
            "",
            "",
            "",
            f"≤ {CPU_TARGET:g} {verdict(cpu_ratio, CPU_TARGET)}",
        )
    console.print(t)
    console.print(f"   load average at the end: {loadavg()}\n")


def loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def bench(args: argparse.Namespace) -> None:
    latency, cap = args.latency, args.concurrency
    rounds = args.rounds or (2 if args.quick else 3)
    sizes = [int(s) for s in args.sizes.split(",")]
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0]
    where = (
        "this process (handler threads sharing the GIL)" if args.stub_thread else "a child process"
    )
    keep = not args.close_connections
    runs: list[ConfigRun] = []
    with StubHandle(latency, not args.stub_thread, keep) as stub:
        console.print(
            f"[bold]socialsim LLM bench[/bold]  python {sys.version.split()[0]}, "
            f"{'quick' if args.quick else 'full'} run, {cpus} CPUs, load average {loadavg()}; "
            f"stub in {where}, {'keep-alive' if keep else 'one connection per request'}, "
            f"latency L = {latency:g} s, chunk latency 0; model {MODEL}; "
            f"[bold]max_concurrency = {cap}[/bold]; {rounds} timed round(s) per configuration "
            "after 1 warm-up round; unsaved runs"
        )
        if load > cpus / 2:
            console.print("[yellow]note:[/yellow] the machine is busy; expect noisy figures")
        console.print()
        for scenario in scenarios(sizes, rounds):
            for mode in MODES:
                profile = args.profile and len(scenario.agents) == max(sizes)
                # One event loop per configuration, as one CLI run has: litellm caches its
                # HTTP clients per loop, and LiteLLMTransport.aclose() closes the cached
                # clients without evicting them, so a second run on the same loop would
                # only get "client has been closed" errors.
                runs.append(asyncio.run(run_config(scenario, mode, stub, rounds, cap, profile)))
    print_rounds(runs, latency, cap)
    print_phases(runs, latency)
    print_excess(runs, latency)
    print_purposes(runs, latency)
    per_edge = [r for r in runs if r.mode == "per-edge"]
    cpu_ratio = None
    if per_edge:
        wave = wave_of(per_edge[-1].calls)
        identical = asyncio.run(same_payloads(wave, cap))
        results = {}
        with StubHandle(latency, True, keep) as fresh:
            for client_cap in dict.fromkeys([cap, *args.client_caps]):
                results[client_cap] = asyncio.run(measure(fresh.url, wave, client_cap, args.passes))
        cpu_ratio = print_client(results, len(wave), identical, latency)
    if args.profile:
        for run in runs:
            if run.profile is not None:
                for t in profile_tables(run):
                    console.print(t)
                console.print(
                    "   one extra round under cProfile (roughly doubles CPU time); coroutine "
                    "resumes count as calls; asyncio and bench frames are left out of the top "
                    "list\n"
                )
    print_targets([r for r in runs if r.agents == max(sizes)], latency, cpu_ratio)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 timed rounds instead of 3")
    parser.add_argument("--latency", type=float, default=0.2, help="stub latency L (s)")
    parser.add_argument("--rounds", type=int, default=0, help="timed rounds per configuration")
    parser.add_argument("--passes", type=int, default=3, help="timed passes per client sender")
    parser.add_argument(
        "--client-caps",
        type=lambda text: [int(c) for c in text.split(",") if c],
        default=[30],
        help="more concurrency caps for the client section (besides --concurrency)",
    )
    parser.add_argument("--sizes", default="5,30", help="agent counts (5 = tavern), e.g. 5,30")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=LLMSettings.model_fields["max_concurrency"].default,
        help=f"LLMSettings.max_concurrency (1-{MAX_CONCURRENCY}; default: the engine's)",
    )
    parser.add_argument(
        "--stub-thread", action="store_true", help="run the round stub in this process"
    )
    parser.add_argument(
        "--close-connections",
        action="store_true",
        help="the stub closes each connection after its reply (default: keep-alive)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one extra round at the largest size"
    )
    args = parser.parse_args(argv)
    if args.latency <= 0:
        parser.error("--latency must be positive")
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        parser.error(f"--concurrency must be 1-{MAX_CONCURRENCY} (LLMSettings.max_concurrency)")
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    bench(args)


if __name__ == "__main__":
    main()
