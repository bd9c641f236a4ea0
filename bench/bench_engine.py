"""Engine performance bench: round time, autosave time, autosave growth, CLI start-up.

Run from the repository root::

    .venv/bin/python bench/bench_engine.py            # full run
    .venv/bin/python bench/bench_engine.py --quick    # fewer rounds, faster
    .venv/bin/python bench/bench_engine.py --profile  # plus cProfile hot spots (30, 100, 300)
    .venv/bin/python bench/bench_engine.py --whole    # plus whole-process memory (issue 24)
    .venv/bin/python bench/bench_engine.py --big      # plus 1,000 agents (minutes)

Every size is timed on two kinds of cast: the bench cast (:func:`make_scenario`, the same
every time) and casts generated from a seed (``--cast-seeds``, bench/casts.py: archetypes,
starting relations, factions and events drawn at random), printed side by side.

Round time is CPU (``time.process_time``) and wall (``time.perf_counter``) per round of
unsaved offline runs from round 7 on (the first 6, cheaper while the memories fill, are
played untimed), the median over each run's rounds, then median, min and max over the
runs (the same seed each run, so the spread is the machine's); the load averages are
printed before and after. Other figures are wall times in this one process (the CLI start-up
in child processes). The bench never fails on a missed target: it prints figures and their
ratio to the target (ratio > 1 means slower than the target).

``--whole`` plays generated casts as whole processes (``python -m tui.cli run FILE -q``,
saved), 3 times each, and reads each one's peak RSS and CPU from its ``wait4`` usage: 100
agents for 60 rounds, for 50 and for 500 (the ratio of the two peaks), and with ``--big``
1,000 agents for 20 rounds with the disk its rounds take.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from casts import POINTS, SECRETS, cast_data, write_cast  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from whole import run_whole  # noqa: E402

from engine.core.changes import RoundChanges  # noqa: E402
from engine.core.columns import StateColumns  # noqa: E402
from engine.core.metrics import Metrics, RepairCounter  # noqa: E402
from engine.core.played import PlayedRound  # noqa: E402
from engine.core.scenario import Archetype, Scenario, parse_scenario  # noqa: E402
from engine.round.simulation import Simulation  # noqa: E402
from engine.saves.atomic import atomic_write_bytes  # noqa: E402
from engine.saves.codec import encoded as file_bytes  # noqa: E402
from engine.saves.roundfile import KEYFRAME_EVERY, PackedMarks, RoundFile, round_file  # noqa: E402
from engine.saves.runfiles import RunFiles  # noqa: E402
from engine.saves.store import SaveStore  # noqa: E402

#: Offline round, CPU per round (issue 24).
ROUND_TARGETS_S = {100: 0.025, 300: 0.200, 1000: 2.0}
ROUND_SIZES = (5, 30, 100, 300)
BIG_SIZES = (1000,)
#: Whole processes (issue 24): peak RSS of 100 agents x 60 rounds, the ratio of the peaks
#: at 500 and 50 rounds (100 agents), peak RSS and disk per round of 1,000 agents x 20.
PEAK_TARGET_MB = 200.0
FLAT_ROUNDS, FLAT_TARGET = (50, 500), 1.1
BIG_RUN, BIG_PEAK_TARGET_MB, BIG_DISK_TARGET_MB = (1000, 20), 2048.0, 5.0
PROFILE_SIZES = (30, 100, 300)
AUTOSAVE_TARGET_S = 0.050  # writing a round's file at 30 agents
HELP_TARGET_S = 0.3  # `socialsim --help` wall time (issue 23)
#: Rounds played before the timed ones: a run's first rounds are its cheapest (its memories
#: fill until ``memory_size``, 5 in the generated casts), so rounds are timed from round 7.
WARMUP = 6
SIZES = (5, 30, 100)  # autosave
ARCHETYPES = (
    Archetype.BALANCED,
    Archetype.DOMINANT,
    Archetype.ANALYTICAL,
    Archetype.AGREEABLE,
    Archetype.RESERVED,
)

console = Console(width=max(Console().width, 120))


# -- scenario generation -------------------------------------------------------------------


def make_scenario(n_agents: int, rounds: int, seed: int = 7) -> Scenario:
    """A generated scenario: A001.., cycling archetypes, two factions, scripted events."""
    rng = random.Random(seed * 1000 + n_agents)
    names = [f"A{k:03d}" for k in range(1, n_agents + 1)]
    agents = []
    for k, name in enumerate(names):
        agent: dict = {
            "name": name,
            "role": f"member {k + 1}",
            "archetype": ARCHETYPES[k % len(ARCHETYPES)].value,
            "goal": f"Make sure faction {'red' if k % 2 == 0 else 'blue'} is heard.",
            "emotion": round(rng.uniform(0.25, 0.75), 2),
            "talking_points": rng.sample(POINTS, rng.randint(3, 6)),
        }
        if k % 4 == 0:
            agent["private_info"] = [rng.choice(SECRETS)]
        agents.append(agent)
    relations = [
        {"from": a, "to": b, "fav": round(rng.uniform(-0.8, 0.8), 2)}
        for a in names
        for b in names
        if a != b and rng.random() < 0.3
    ]
    factions = {"red": names[0::2], "blue": names[1::2]}
    events = []
    for r in range(1, rounds + 1, 3):
        if r % 2 == 1:
            who = rng.choice(names)
            events.append({"round": r, "text": f"News arrives that {who} spoke to the press."})
        else:
            few = rng.sample(names, min(3, n_agents))
            events.append(
                {"round": r, "text": "A leaked memo reaches a few members.", "private_to": few}
            )
    data = {
        "id": f"bench-{n_agents}",
        "title": f"Generated bench scenario, {n_agents} agents",
        "conflict": 3,
        "rounds": rounds,
        "memory_size": 5,
        "agents": agents,
        "relations": relations,
        "factions": factions,
        "events": events,
    }
    return parse_scenario(data, f"<generated {n_agents}>")


# -- measurement ---------------------------------------------------------------------------


class GCMeter:
    """Wall time spent in cyclic-GC pauses (gc.callbacks), read as a running total."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start

    def __enter__(self) -> GCMeter:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


GC = GCMeter()


@dataclass
class SizeRun:
    agents: int
    step_s: list[float]
    save_s: list[float]
    save_gc_s: list[float]
    save_bytes: list[int]
    last: PlayedRound  # the last round played
    metrics: Metrics  # the metrics after it


def encoded(played: PlayedRound, metrics: Metrics) -> RoundFile:
    """The round's file as the simulation writes it (a keyframe every KEYFRAME_EVERY rounds;
    the repair marks' content does not change the cost)."""
    names = played.after.names
    keep = played.round % KEYFRAME_EVERY == 0
    keyframe = PackedMarks.of(RepairCounter(len(names)), names) if keep else None
    return round_file(played, metrics, keyframe)


def timed_save(files: RunFiles, played: PlayedRound, metrics: Metrics) -> tuple[float, float]:
    """Wall time of encoding and writing the round's file (and index line), and the GC
    pauses inside it."""
    gc0 = GC.total
    t0 = time.perf_counter()
    files.write(encoded(played, metrics))
    return time.perf_counter() - t0, GC.total - gc0


async def run_size(n_agents: int, rounds: int, saves: Path, seed: int = 1) -> SizeRun:
    """Step an unsaved simulation; time each step and, separately, the write of its round."""
    scenario = make_scenario(n_agents, rounds)
    sim = Simulation.new(scenario, seed=seed, run_id=f"bench-{n_agents}-{rounds}")
    store = SaveStore(saves)
    first = sim.records[0]
    columns = StateColumns.of(first.state)
    none = PlayedRound(0, [], [], RoundChanges.none(0, columns.names), columns)
    store.create(sim.meta, encoded(none, sim.metrics()))
    files = store.files(sim.run_id)
    run = SizeRun(n_agents, [], [], [], [], none, sim.metrics())
    for _ in range(rounds):
        t0 = time.perf_counter()
        await sim.run(1)
        run.step_s.append(time.perf_counter() - t0)
        played = sim.played or none
        save, save_gc = timed_save(files, played, sim.metrics())
        run.save_s.append(save)
        run.save_gc_s.append(save_gc)
        run.save_bytes.append(files.existing_path(played.round).stat().st_size)
        run.last, run.metrics = played, sim.metrics()
    return run


@dataclass
class RoundTimes:
    """Per-round CPU and wall time of ``agents``-agent runs: each run's median round."""

    agents: int
    cpu: list[float]
    wall: list[float]
    gc_share: float
    cast: int | None = None


def cast_scenario(n_agents: int, rounds: int, cast: int | None) -> Scenario:
    """The bench cast (``cast`` None) or the cast generated from seed ``cast``."""
    if cast is None:
        return make_scenario(n_agents, rounds)
    return parse_scenario(cast_data(n_agents, cast, rounds), f"<cast {n_agents} seed {cast}>")


def cast_label(cast: int | None) -> str:
    return "bench" if cast is None else f"seed {cast}"


async def time_rounds(n_agents: int, rounds: int, runs: int, cast: int | None = None) -> RoundTimes:
    """``runs`` unsaved runs (seed 1) of :data:`WARMUP` rounds and ``rounds`` rounds more,
    each of those timed."""
    cpu, wall, gc_s, step_s = [], [], 0.0, 0.0
    scenario = cast_scenario(n_agents, WARMUP + rounds, cast)
    for run in range(runs):
        sim = Simulation.new(scenario, seed=1, run_id=f"rounds-{run}")
        await sim.run(WARMUP)
        cpus, walls = [], []
        for _ in range(rounds):
            gc0 = GC.total
            c0, w0 = time.process_time(), time.perf_counter()
            await sim.run(1)
            cpus.append(time.process_time() - c0)
            walls.append(time.perf_counter() - w0)
            gc_s += GC.total - gc0
        step_s += sum(walls)
        cpu.append(statistics.median(cpus))
        wall.append(statistics.median(walls))
        del sim
        gc.collect()
    return RoundTimes(n_agents, cpu, wall, gc_s / step_s if step_s else 0.0, cast)


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} (uptime)"


def help_command() -> tuple[list[str] | None, str]:
    """How to run `socialsim --help`, or None and the reason to skip."""
    spec = importlib.util.find_spec("tui")
    locations = list(spec.submodule_search_locations or []) if spec else []
    has_cli = any(
        (Path(p) / "cli.py").is_file() or (Path(p) / "cli" / "__init__.py").is_file()
        for p in locations
    )
    if not has_cli:
        return None, "skipped: tui.cli does not exist yet"
    script = Path(sys.executable).parent / "socialsim"
    if script.is_file():
        return [str(script), "--help"], f"{_short(str(script))} --help"
    return [sys.executable, "-m", "tui.cli", "--help"], "python -m tui.cli --help"


def time_help(runs: int) -> tuple[list[float], str, str | None]:
    cmd, label = help_command()
    if cmd is None:
        return [], label, None
    times, problem = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0 and problem is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            problem = f"exit code {done.returncode}: {tail[0]}"
    return times, label, problem


# -- formatting ----------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(value: float, target: float) -> str:
    ratio = value / target
    mark = "[green]meets[/green]" if ratio <= 1.0 else "[red]MISSES[/red]"
    return f"{ratio:.2f}x of {ms(target)} ({mark})"


def seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 1.0 else ms(value)


def spread(values: Sequence[float]) -> str:
    """Median (min-max), in the median's unit."""
    med = statistics.median(values)
    scale, unit, digits = (1.0, "s", 2) if med >= 1.0 else (1000.0, "ms", 1)
    low, high = (f"{v * scale:.{digits}f}" for v in (min(values), max(values)))
    return f"{med * scale:.{digits}f} ({low}-{high}) {unit}"


def ratio(value: float, target: float) -> str:
    mark = "[green]meets[/green]" if value <= target else "[red]MISSES[/red]"
    return f"{value / target:.2f}x ({mark})"


def share(part: Sequence[float], whole: Sequence[float]) -> str:
    return f"{100 * sum(part) / sum(whole):.0f}%" if sum(whole) else "-"


def table(title: str, columns: Sequence[str]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold")
    for k, col in enumerate(columns):
        t.add_column(col, justify="left" if k == 0 else "right")
    return t


# -- profiling -----------------------------------------------------------------------------


def _hidden(path: str, func: str) -> bool:
    """asyncio machinery and this bench's own frames, which only wrap the round."""
    return (
        "asyncio" in Path(path).parts
        or Path(path).resolve() == Path(__file__).resolve()
        or "_contextvars" in func
    )


def profile_rows(profiler: cProfile.Profile, key: int) -> list[tuple[str, int, float, float]]:
    """(function, calls, tottime, cumtime) sorted by column ``key`` (2 tottime, 3 cumtime)."""
    stats = pstats.Stats(profiler)
    rows = []
    for (path, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        if _hidden(path, func):
            continue
        where = func if path == "~" else f"{_short(path)}:{line}({func})"
        rows.append((where, ncalls, tottime, cumtime))
    rows.sort(key=lambda r: r[key], reverse=True)
    return rows


def _short(path: str) -> str:
    p = Path(path)
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        parts = p.parts
        if "site-packages" in parts:
            return "/".join(parts[parts.index("site-packages") + 1 :])
        return "/".join(parts[-2:])


def profile_table(title: str, profiler: cProfile.Profile, key: int, limit: int = 10) -> Table:
    t = table(title, ["function", "calls", "tottime", "cumtime"])
    for where, ncalls, tottime, cumtime in profile_rows(profiler, key)[:limit]:
        t.add_row(where, str(ncalls), ms(tottime), ms(cumtime))
    return t


async def profile_round(n_agents: int, warmup: int) -> cProfile.Profile:
    """cProfile one round after ``warmup`` rounds, the cyclic GC off during it (an offline
    step keeps it off anyway), so no pause is charged to whatever happened to allocate.
    The profiler's clock is CPU time: on a busy machine wall time charges other processes'
    turns to whatever function was running."""
    sim = Simulation.new(make_scenario(n_agents, warmup + 1), seed=1, run_id="profile")
    await sim.run(warmup)
    profiler = cProfile.Profile(time.process_time)
    gc.disable()
    try:
        profiler.enable()
        await sim.run(1)
        profiler.disable()
    finally:
        gc.enable()
    return profiler


def autosave_breakdown(
    played: PlayedRound, metrics: Metrics, saves: Path, repeat: int
) -> list[tuple[str, float]]:
    """Median cost of writing one round's file and of each of its stages."""
    files = RunFiles(saves / "breakdown")
    files.rounds.mkdir(parents=True, exist_ok=True)
    file = encoded(played, metrics)
    suffix, data = file_bytes(file)
    target = saves / "breakdown-probe" / f"probe{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    # a fresh round number each time, as autosave does
    copies = iter([file.model_copy(update={"round": k}) for k in range(1, repeat + 1)])

    def med(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return [
        ("encode + write total", med(lambda: files.write(encoded(played, metrics)))),
        ("  round_file (the round's changes)", med(lambda: encoded(played, metrics))),
        (
            f"  the file's bytes ({suffix}: JSON, columns, compression)",
            med(lambda: file_bytes(file)),
        ),
        (
            "  atomic_write_bytes (open+write+fsync+replace)",
            med(lambda: atomic_write_bytes(target, data)),
        ),
        (
            "  RunFiles.write of a built file (all but encoding)",
            med(lambda: files.write(next(copies))),
        ),
    ]


# -- whole processes -----------------------------------------------------------------------


def round_count(n_agents: int, rounds: int) -> int:
    """Rounds timed per run: fewer for the large casts."""
    if n_agents >= 1000:
        return 2
    return max(3, rounds // 2) if n_agents >= 300 else rounds


@dataclass
class Whole:
    """One ``socialsim run`` as a whole process."""

    wall: float
    cpu: float
    peak_mb: float
    disk_mb: float  # per round, rounds 1.. (round files and index lines)


def play_whole(file: Path, rounds: int, saves: Path) -> Whole:
    """``python -m tui.cli run FILE -q --rounds ROUNDS`` in a fresh process, saved."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "tui.cli", "run", str(file), "-q", "--rounds", str(rounds)]
    got = run_whole([*args, "--saves", str(saves)], env, ROOT)
    if got.code:
        raise SystemExit(f"{' '.join(args)} failed: {got.stderr}")
    (run,) = [d for d in saves.iterdir() if (d / "rounds").is_dir()]
    files = [p for p in (run / "rounds").glob("*.json.*") if int(p.name[:6]) >= 1]
    index = (run / "index.jsonl").read_bytes().splitlines(keepends=True)[1:]
    disk = (sum(p.stat().st_size for p in files) + sum(map(len, index))) / rounds / 1e6
    return Whole(got.wall, got.cpu, got.peak_mb, disk)


def whole_runs(n_agents: int, rounds: int, seed: int, saves: Path, runs: int = 3) -> list[Whole]:
    folder = Path(tempfile.mkdtemp(prefix=f"whole-{n_agents}-{rounds}-", dir=saves))
    file = write_cast(folder / "cast.toml", n_agents, seed, rounds)
    return [play_whole(file, rounds, folder / f"saves-{k}") for k in range(runs)]


def mb(values: Sequence[float], digits: int = 0) -> str:
    med = statistics.median(values)
    return f"{med:.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}] MB"


def whole_table(args: argparse.Namespace, saves: Path) -> Table:
    seed = args.cast_seeds[0]
    t = table(
        "5. Whole processes: socialsim run FILE -q of a generated cast, median \\[min, max] of 3",
        ["figure", "value", "CPU", "wall", "target", "vs target"],
    )

    def cpu_wall(runs: list[Whole]) -> tuple[str, str]:
        return spread([r.cpu for r in runs]), spread([r.wall for r in runs])

    peak = whole_runs(100, 60, seed, saves)
    t.add_row(
        "peak RSS, 100 agents x 60 rounds",
        mb([r.peak_mb for r in peak]),
        *cpu_wall(peak),
        f"<= {PEAK_TARGET_MB:.0f} MB",
        ratio(statistics.median(r.peak_mb for r in peak), PEAK_TARGET_MB),
    )
    short, long = (whole_runs(100, n, seed, saves) for n in FLAT_ROUNDS)
    for n, runs in zip(FLAT_ROUNDS, (short, long), strict=True):
        t.add_row(
            f"  peak RSS, 100 agents x {n} rounds",
            mb([r.peak_mb for r in runs]),
            *cpu_wall(runs),
            "",
            "",
        )
    flat = [b.peak_mb / a.peak_mb for a, b in zip(short, long, strict=True)]
    t.add_row(
        f"peak RSS at {FLAT_ROUNDS[1]} rounds / at {FLAT_ROUNDS[0]}, 100 agents (run by run)",
        f"{statistics.median(flat):.3f} [{min(flat):.3f}, {max(flat):.3f}]",
        "",
        "",
        f"<= {FLAT_TARGET}",
        ratio(statistics.median(flat), FLAT_TARGET),
    )
    if args.big:
        big = whole_runs(*BIG_RUN, seed, saves)
        t.add_row(
            f"peak RSS, {BIG_RUN[0]:,} agents x {BIG_RUN[1]} rounds",
            mb([r.peak_mb for r in big]),
            *cpu_wall(big),
            f"<= {BIG_PEAK_TARGET_MB / 1024:.0f} GB",
            ratio(statistics.median(r.peak_mb for r in big), BIG_PEAK_TARGET_MB),
        )
        t.add_row(
            f"disk per round, {BIG_RUN[0]:,} agents (rounds 1-{BIG_RUN[1]})",
            mb([r.disk_mb for r in big], 2),
            "",
            "",
            f"<= {BIG_DISK_TARGET_MB:.0f} MB",
            ratio(statistics.median(r.disk_mb for r in big), BIG_DISK_TARGET_MB),
        )
    return t


# -- main ----------------------------------------------------------------------------------


async def bench(args: argparse.Namespace, saves: Path) -> None:
    rounds = args.rounds or (4 if args.quick else 10)
    growth_rounds = args.growth_rounds or (30 if args.quick else 100)
    load = os.getloadavg()[0]
    cpus = os.cpu_count() or 1
    console.print(
        f"[bold]socialsim engine bench[/bold]  python {sys.version.split()[0]}, "
        f"{'quick' if args.quick else 'full'} run, {cpus} CPUs, {load_line()}, "
        f"saves in {saves}"
    )
    if load > cpus / 2:
        console.print("[yellow]note:[/yellow] the machine is busy; expect noisy figures")
    console.print()

    # 1. round time
    repeats = args.runs or 3
    console.print(f"before the rounds: {load_line()}")
    casts: list[int | None] = [None, *args.cast_seeds]
    sizes = ROUND_SIZES + (BIG_SIZES if args.big else ())
    timed = [
        await time_rounds(n, round_count(n, rounds), repeats, cast) for n in sizes for cast in casts
    ]
    t1 = table(
        f"1. Offline round (await sim.run(1), unsaved: no record built), rounds {WARMUP + 1} "
        f"on (memories full): each run's median round, median (min-max) over {repeats} runs",
        ["agents", "cast", "CPU", "wall", "GC share", "target (CPU)", "CPU / target"],
    )
    for times in timed:
        target = ROUND_TARGETS_S.get(times.agents)
        t1.add_row(
            str(times.agents),
            cast_label(times.cast),
            spread(times.cpu),
            spread(times.wall),
            f"{100 * times.gc_share:.0f}%",
            f"<= {seconds(target)}" if target else "",
            ratio(statistics.median(times.cpu), target) if target else "",
        )
    console.print(t1)
    console.print(
        f"   after the rounds: {load_line()}; casts: bench = make_scenario, seed N = "
        "bench/casts.py\n"
        "   GC share = time in cyclic-GC pauses (gc.callbacks) / round time\n"
    )

    runs: dict[int, SizeRun] = {}
    for n in SIZES:
        runs[n] = await run_size(n, rounds, saves)

    # 2. autosave time
    t2 = table(
        f"2. Autosave per round (encode and write the round's file; {rounds} rounds per size)",
        ["agents", "median", "mean", "max", "GC share", "file size", "vs target (30, median)"],
    )
    for n, run in runs.items():
        med = statistics.median(run.save_s)
        t2.add_row(
            str(n),
            ms(med),
            ms(statistics.fmean(run.save_s)),
            ms(max(run.save_s)),
            share(run.save_gc_s, run.save_s),
            f"{statistics.median(run.save_bytes) / 1024:.0f} KiB",
            verdict(med, AUTOSAVE_TARGET_S) if n == 30 else "",
        )
    console.print(t2)
    console.print()

    # 3. autosave growth
    growth = await run_size(30, growth_rounds, saves, seed=2)
    first, last = slice(0, 10), slice(growth_rounds - 10, growth_rounds)

    def med(values: list, part: slice) -> float:
        return statistics.median(values[part])

    early, late = med(growth.save_s, first), med(growth.save_s, last)
    early_kb, late_kb = med(growth.save_bytes, first) / 1024, med(growth.save_bytes, last) / 1024
    step_early, step_late = med(growth.step_s, first), med(growth.step_s, last)
    t3 = table(
        f"3. Autosave growth at 30 agents over {growth_rounds} rounds (target ratio ~1)",
        ["rounds", "write (median)", "file size (median)", "step (median)"],
    )
    t3.add_row("1-10", ms(early), f"{early_kb:.0f} KiB", ms(step_early))
    t3.add_row(
        f"{growth_rounds - 9}-{growth_rounds}", ms(late), f"{late_kb:.0f} KiB", ms(step_late)
    )
    t3.add_row(
        "ratio late/early",
        f"{late / early:.2f}x",
        f"{late_kb / early_kb:.2f}x",
        f"{step_late / step_early:.2f}x",
    )
    console.print(t3)
    console.print()

    # 4. CLI start-up
    help_runs = 3 if args.quick else 5
    times, label, problem = time_help(help_runs)
    t4 = table("4. `socialsim --help` wall time", ["command", "runs", "median", "max", "vs target"])
    if times:
        med = statistics.median(times)
        t4.add_row(label, str(len(times)), ms(med), ms(max(times)), verdict(med, HELP_TARGET_S))
    else:
        t4.add_row(label, "0", "-", "-", "-")
    console.print(t4)
    if problem:
        console.print(f"   [yellow]note:[/yellow] the command failed ({problem})")
    console.print()

    # 5. whole processes
    if args.whole:
        console.print(whole_table(args, saves))
        console.print(
            "   peak RSS and CPU (user + system) from each process's wait4 usage; "
            f"casts generated from seed {args.cast_seeds[0]}\n"
        )

    # 6. profile
    if args.profile:
        warmup = 3 if args.quick else 5
        for n in PROFILE_SIZES:
            prof = await profile_round(n, warmup)
            title = f"6. cProfile of one {n}-agent round (after {warmup} warm-up rounds, GC off)"
            console.print(profile_table(f"{title}: top 12 by own time", prof, key=2, limit=12))
            console.print(
                profile_table("   the same round: top 12 by cumulative time", prof, 3, 12)
            )
        console.print(
            "   times are CPU; asyncio and bench frames hidden; coroutine resumes count as calls; "
            "mind work in asyncio.gather tasks is outside step's cumtime; cProfile adds overhead.\n"
        )
        t5 = table("   autosave stages, one 30-agent round", ["stage", "median"])
        stages = autosave_breakdown(growth.last, growth.metrics, saves, 5 if args.quick else 15)
        for stage, secs in stages:
            t5.add_row(stage, ms(secs))
        console.print(t5)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, faster")
    parser.add_argument("--profile", action="store_true", help="print cProfile hot spots")
    parser.add_argument("--rounds", type=int, default=0, help="timed rounds per size")
    parser.add_argument("--runs", type=int, default=0, help="runs per size for round time (>=3)")
    parser.add_argument("--growth-rounds", type=int, default=0, help="rounds for table 3 (>=20)")
    parser.add_argument("--tmp-dir", type=Path, default=None, help="parent of the temp saves dir")
    parser.add_argument(
        "--cast-seeds",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[1],
        help="seeds of the generated casts (comma-separated; bench/casts.py)",
    )
    parser.add_argument("--whole", action="store_true", help="whole-process memory figures")
    parser.add_argument("--big", action="store_true", help="1,000 agents too (minutes)")
    args = parser.parse_args(argv)
    if args.growth_rounds and args.growth_rounds < 20:
        parser.error("--growth-rounds must be at least 20")
    if args.runs and args.runs < 3:
        parser.error("--runs must be at least 3")
    with (
        tempfile.TemporaryDirectory(prefix="socialsim-bench-", dir=args.tmp_dir) as tmp,
        GC,
    ):
        asyncio.run(bench(args, Path(tmp)))


if __name__ == "__main__":
    main()
