"""Large casts at interactive speed (issue 40): each figure beside its target, on casts
generated from a seed (bench/casts.py), as whole processes.

    .venv/bin/python bench/bench_speed.py rounds            # saved vs unsaved round
    .venv/bin/python bench/bench_speed.py rounds --agents 100 300
    .venv/bin/python bench/bench_speed.py export report     # export 100x100, report 300x20
    .venv/bin/python bench/bench_speed.py app               # the app's first screen in tmux
    .venv/bin/python bench/bench_speed.py alternate --agents 100   # saved vs unsaved, one process

``rounds``: a saved round is ``socialsim run FILE -q`` of ``hi`` rounds minus one of ``lo``
rounds, over ``hi - lo`` (the start-up and the first rounds cancel); an unsaved round is the
same difference of a whole process playing the run unsaved (``Simulation.new(...).run()``),
measured beside it in the same run, so their ratio is the cost of saving. ``alternate``
plays a saved and an unsaved ``Simulation`` of the cast in one process, a round of each in
turn (which goes first alternating), and sums each one's CPU (``process_time``) over the
same rounds: a loaded machine slows both alike. ``export`` and
``report`` time ``socialsim export`` and ``socialsim report`` of a saved run; ``app`` starts
``socialsim tui RUN`` in a 160x48 tmux window and waits for its first full screen (the
status line names the last round and the screen stops changing). ``--root`` plays another
checkout (a worktree of the commit before). Each figure is the median [min, max] of
``--runs`` runs, CPU beside wall; ``uptime``'s load is printed before and after (2 cores
shared: say so).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from casts import write_cast  # noqa: E402
from whole import Usage, run_whole  # noqa: E402

#: (lo, hi) rounds of the difference, per cast size: both ends keyframe-aligned where cheap.
WINDOWS = {100: (10, 40), 300: (10, 30), 1000: (2, 12)}
#: Targets: saved / unsaved round; saved round (s) by size; app first screen (s) by size.
RATIO_TARGET = 1.2
SAVED_TARGET = {100: 0.015, 1000: 0.8}
APP_TARGET = {100: 1.5, 300: 3.0, 1000: 10.0}
EXPORT_TARGET, REPORT_TARGET, REPORT_MB = 2.0, 5.0, 8.0

_UNSAVED = """
import asyncio, sys
from pathlib import Path
from engine.core.scenario import load_scenario_file
from engine.round.simulation import Simulation
sc = load_scenario_file(Path(sys.argv[1]))
asyncio.run(Simulation.new(sc, seed=1, rounds=int(sys.argv[2])).run())
"""

_ALTERNATE = """
import asyncio, sys, tempfile, time
from pathlib import Path
from engine.core.scenario import load_scenario_file
from engine.round.simulation import Simulation
from engine.saves.store import SaveStore
sc = load_scenario_file(Path(sys.argv[1]))
lo, hi = int(sys.argv[2]), int(sys.argv[3])
saved = Simulation.new(sc, seed=1, store=SaveStore(tempfile.mkdtemp(dir=sys.argv[4])), rounds=hi)
unsaved = Simulation.new(sc, seed=1, rounds=hi)
cpu = {"saved": 0.0, "unsaved": 0.0}
async def main():
    for r in range(1, hi + 1):
        for kind, sim in (("saved", saved), ("unsaved", unsaved))[:: 1 if r % 2 else -1]:
            t0 = time.process_time()
            await sim.run(1)
            if r > lo:
                cpu[kind] += time.process_time() - t0
asyncio.run(main())
saved.close()
print(cpu["saved"] / (hi - lo), cpu["unsaved"] / (hi - lo))
"""

#: The checkout whose engine and app play (``--root``).
PLAY = [ROOT]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PLAY[0])}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui.cli", *args]


def _whole(argv: Sequence[str], cwd: Path) -> Usage:
    got = run_whole(argv, _env(), cwd)
    if got.code:
        raise SystemExit(f"{' '.join(argv)} failed: {got.stderr}")
    return got


def spread(values: Sequence[float], unit: str = "s", scale: float = 1.0) -> str:
    med = statistics.median(values) * scale
    lo, hi = min(values) * scale, max(values) * scale
    digits = 0 if med >= 100 else 1 if med >= 10 else 2 if med >= 1 else 3
    return f"{med:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}] {unit}"


def verdict(value: float, target: float) -> str:
    return f"target <= {target:g}: {'met' if value <= target else 'MISSED'} ({value / target:.2f}x)"


def _commit(root: Path) -> str:
    got = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    return got.stdout.strip() or "?"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _saved(file: Path, rounds: int, folder: Path) -> Usage:
    saves = Path(tempfile.mkdtemp(prefix="saves-", dir=folder))
    try:
        return _whole(
            _cli(
                "run",
                str(file),
                "-q",
                "--seed",
                "1",
                "--rounds",
                str(rounds),
                "--saves",
                str(saves),
            ),
            folder,
        )
    finally:
        shutil.rmtree(saves, ignore_errors=True)


def _unsaved(file: Path, rounds: int, folder: Path) -> Usage:
    return _whole([sys.executable, "-c", _UNSAVED, str(file), str(rounds)], folder)


def rounds_bench(args: argparse.Namespace, folder: Path) -> None:
    print("## A saved round beside an unsaved one (whole processes, CPU; wall in brackets)")
    for n in args.agents:
        lo, hi = WINDOWS.get(n, (10, 30))
        file = write_cast(folder / f"cast{n}.toml", n, args.seed, hi)
        per: dict[str, list[tuple[float, float]]] = {"saved": [], "unsaved": []}
        for _ in range(args.runs):
            for kind, play in (("saved", _saved), ("unsaved", _unsaved)):
                a, b = play(file, lo, folder), play(file, hi, folder)
                per[kind].append(((b.cpu - a.cpu) / (hi - lo), (b.wall - a.wall) / (hi - lo)))
        saved, unsaved = ([c for c, _ in per[k]] for k in ("saved", "unsaved"))
        ratios = [s / u for s, u in zip(saved, unsaved, strict=True)]
        pad = " " * 4
        print(f"{n} agents, rounds {lo}..{hi}, seed {args.seed}:")
        for kind, cpu in (("saved", saved), ("unsaved", unsaved)):
            wall = spread([w for _, w in per[kind]], "ms", 1e3)
            print(f"{pad}{kind} round: CPU {spread(cpu, 'ms', 1e3)} (wall {wall})")
        ratio = verdict(statistics.median(ratios), RATIO_TARGET)
        print(f"{pad}saved / unsaved (run by run): {spread(ratios, '')}, {ratio}")
        if n in SAVED_TARGET:
            print(f"{pad}saved round: {verdict(statistics.median(saved), SAVED_TARGET[n])}")


def alternate_bench(args: argparse.Namespace, folder: Path) -> None:
    print("## A saved round beside an unsaved one, alternating in one process (CPU)")
    for n in args.agents:
        lo, hi = WINDOWS.get(n, (10, 30))
        file = write_cast(folder / f"cast{n}.toml", n, args.seed, hi)
        saved, unsaved = [], []
        for _ in range(args.runs):
            argv = [sys.executable, "-c", _ALTERNATE, str(file), str(lo), str(hi), str(folder)]
            done = subprocess.run(argv, env=_env(), capture_output=True, text=True, check=True)
            s, u = map(float, done.stdout.split())
            saved.append(s)
            unsaved.append(u)
        ratios = [s / u for s, u in zip(saved, unsaved, strict=True)]
        print(f"{n} agents, rounds {lo}..{hi}, seed {args.seed}:")
        print(f"    saved round: CPU {spread(saved, 'ms', 1e3)}")
        print(f"    unsaved round: CPU {spread(unsaved, 'ms', 1e3)}")
        ratio = verdict(statistics.median(ratios), RATIO_TARGET)
        print(f"    saved / unsaved (run by run): {spread(ratios, '')}, {ratio}")
        if n in SAVED_TARGET:
            print(f"    saved round: {verdict(statistics.median(saved), SAVED_TARGET[n])}")


def _saved_run(n: int, rounds: int, args: argparse.Namespace, folder: Path) -> tuple[Path, str]:
    """A saved run of a generated cast (played once): its saves folder and id."""
    saves = folder / f"saves-{n}x{rounds}"
    if not saves.exists():
        file = write_cast(folder / f"cast{n}x{rounds}.toml", n, args.seed, rounds)
        _whole(_cli("run", str(file), "-q", "--saves", str(saves)), folder)
    (run,) = [d for d in saves.iterdir() if (d / "rounds").is_dir()]
    return saves, run.name


def _timed(
    label: str,
    make: Callable[[Path], list[str]],
    folder: Path,
    runs: int,
    target: float,
    size: Callable[[Path], float] | None = None,
) -> None:
    got, sizes = [], []
    for k in range(runs):
        out = folder / f"out-{label.replace(' ', '-')}-{k}"
        got.append(_whole(make(out), folder))
        if size is not None:
            sizes.append(size(out))
        shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
    cpu = [g.cpu for g in got]
    wall, peak = spread([g.wall for g in got]), spread([g.peak_mb for g in got], "MB")
    print(f"{label}: CPU {spread(cpu)} (wall {wall}, peak {peak})")
    print(f"    {verdict(statistics.median(cpu), target)}")
    if sizes:
        print(f"    size {spread(sizes, 'MB')}, {verdict(statistics.median(sizes), REPORT_MB)}")


def _mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def export_bench(args: argparse.Namespace, folder: Path) -> None:
    saves, run = _saved_run(100, 100, args, folder)
    _timed(
        "export 100 agents x 100 rounds (dense CSV)",
        lambda out: _cli("export", run, "--saves", str(saves), "--out", str(out)),
        folder,
        args.runs,
        EXPORT_TARGET,
    )


def report_bench(args: argparse.Namespace, folder: Path) -> None:
    saves, run = _saved_run(300, 20, args, folder)
    _timed(
        "report 300 agents x 20 rounds",
        lambda out: _cli("report", run, "--saves", str(saves), "--out", str(out)),
        folder,
        args.runs,
        REPORT_TARGET,
        size=_mb,
    )


def app_bench(args: argparse.Namespace, folder: Path) -> None:
    """The app's first full screen of a saved run, in tmux: CPU of the app's process until
    it quits (``q`` once the screen is full) and wall until its screen names the last round
    and stops changing."""
    for n in args.agents:
        rounds = 12 if n >= 1000 else 30
        saves, run = _saved_run(n, rounds, args, folder)
        cpu, wall = [], []
        for k in range(args.runs):
            session = f"i40bench{os.getpid()}{k}"
            done = folder / f"app-{n}-{k}.usage"
            done.unlink(missing_ok=True)  # an earlier run's
            cmd = (
                f"cd {PLAY[0]} && PYTHONPATH={PLAY[0]} {sys.executable} -c {_quote(_APP)} {done} "
                f"{sys.executable} -m tui.cli tui {run} --saves {saves}"
            )
            t0 = time.perf_counter()
            subprocess.run(
                ["tmux", "new", "-d", "-s", session, "-x", "160", "-y", "48", cmd], check=True
            )
            try:
                wall.append(_settled(session, f"round {rounds}/{rounds}", t0))
                subprocess.run(["tmux", "send-keys", "-t", session, "q"])
                while not done.exists() and time.perf_counter() - t0 < 900:
                    time.sleep(0.1)
                cpu.append(float(done.read_text()))
            finally:
                subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        target = verdict(statistics.median(cpu), APP_TARGET.get(n, 10))
        print(f"app first full screen, {n} agents x {rounds} rounds: CPU {spread(cpu)} until quit")
        print(f"    (wall to the screen {spread(wall)}), {target}")


def _settled(session: str, shown: str, t0: float, still: float = 1.0) -> float:
    """Seconds from ``t0`` until tmux ``session`` shows ``shown`` and its screen then stays
    the same for ``still`` seconds (the first full screen; the wait itself not counted)."""
    last, since = "", time.perf_counter()
    while time.perf_counter() - t0 < 900:
        screen = subprocess.run(
            ["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True
        ).stdout
        now = time.perf_counter()
        if screen != last or shown not in screen:
            last, since = screen, now
        elif now - since >= still:
            return since - t0
        time.sleep(0.05)
    raise SystemExit(f"the app never showed {shown!r}")


_APP = """
import os, subprocess, sys
status = subprocess.call(sys.argv[2:])
usage = os.times()
open(sys.argv[1], "w").write(str(usage.children_user + usage.children_system))
"""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", nargs="+", choices=("rounds", "alternate", "export", "report", "app")
    )
    parser.add_argument("--agents", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="a folder for the casts and saves (kept)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to play")
    args = parser.parse_args()
    PLAY[0] = args.root.resolve()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{PLAY[0]} at {_commit(PLAY[0])}; load before: {uptime()}")
    try:
        for what in args.what:
            {
                "rounds": rounds_bench,
                "alternate": alternate_bench,
                "export": export_bench,
                "report": report_bench,
                "app": app_bench,
            }[what](args, folder)
    finally:
        print(f"load after: {uptime()}")
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
