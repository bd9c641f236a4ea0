"""Large casts at interactive speed (issue 40): each figure beside its target, on casts
generated from a seed (bench/casts.py), as whole processes.

    .venv/bin/python bench/bench_speed.py rounds            # saved vs unsaved round
    .venv/bin/python bench/bench_speed.py rounds --agents 100 300
    .venv/bin/python bench/bench_speed.py export report     # export 100x100, report 300x20
    .venv/bin/python bench/bench_speed.py app               # the app's first screen in tmux
    .venv/bin/python bench/bench_speed.py step keys --agents 300  # n, each key's response
    .venv/bin/python bench/bench_speed.py alternate --agents 100   # saved vs unsaved, one process

``rounds``: a saved round is ``socialsim run FILE -q`` of ``hi`` rounds minus one of ``lo``
rounds, over ``hi - lo`` (the start-up and the first rounds cancel); an unsaved round is the
same difference of a whole process playing the run unsaved (``Simulation.new(...).run()``),
measured beside it in the same run, so their ratio is the cost of saving; a printed round
is the saved one without ``-q`` (each round's transcript printed, to a pipe). ``alternate``
plays a saved and an unsaved ``Simulation`` of the cast in one process, a round of each in
turn (which goes first alternating), and sums each one's CPU (``process_time``) over the
same rounds: a loaded machine slows both alike. ``export`` and
``report`` time ``socialsim export`` and ``socialsim report`` of a saved run; ``app`` starts
``socialsim tui RUN`` in a 160x48 tmux window and waits for its first full screen (the
status line names the last round and the screen stops changing); ``step`` presses ``n`` in
the app on a new run and sets its CPU a round beside the saved round of ``socialsim run``;
``keys`` times each key's first visible response in tmux (``--cycles K``: every key K times
in one app, a long session whose heap grows). ``--root`` plays another
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
#: The ``rounds`` bench's windows where they differ: at 100 agents the issue's own
#: (120 - 30) / 90 (a difference of whole processes over 30 rounds swung 0.8-1.9x).
ROUND_WINDOWS = {**WINDOWS, 100: (30, 120)}
#: Targets: saved / unsaved round; saved round (s) by size; app first screen (s) by size.
RATIO_TARGET = 1.2
SAVED_TARGET = {100: 0.015, 1000: 0.8}
APP_TARGET = {100: 1.5, 300: 3.0, 1000: 10.0}
EXPORT_TARGET, REPORT_TARGET, REPORT_MB = 2.0, 5.0, 8.0
#: The app's n beyond the round (s) by size, a key's first visible response (ms); rounds stepped.
STEP_TARGET, KEY_TARGET_MS = {300: 0.3}, 100.0
STEP_ROUNDS = {100: 12, 300: 8, 1000: 4}
#: Seconds after the app starts by which its warm-up imports are done (tui/warm.py).
WARMED = 4.0

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


def _compiled(root: Path) -> None:
    """Byte-compile the checkout's packages first, so that no timed process compiles a
    module: under ``PYTHONDONTWRITEBYTECODE`` a checkout without ``__pycache__`` (a fresh
    worktree) compiled every module it imported in every process, ~0.6 G instructions an
    export, which made a base look slower than it is."""
    import compileall

    for package in ("engine", "tui"):
        compileall.compile_dir(root / package, quiet=1)


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


#: A fixed workload of the kinds a round does (gathers and sums over a million floats,
#: dict and string work), whose CPU says how fast this host is now: the same tree's figures
#: on one host moved by half again between hours as this did.
_HOST = """
import numpy as np
rng = np.random.default_rng(1)
values, at = rng.random(1 << 20), rng.integers(0, 1 << 20, 1 << 20)
for _ in range(40):
    values.take(at).sum()
counts = {}
for k in range(10**6):
    key = str(k % 5000)
    counts[key] = counts.get(key, 0) + k
"""


def host_speed(folder: Path) -> str:
    """The CPU of :data:`_HOST` as a whole process, median of 3."""
    cpu = [_whole([sys.executable, "-c", _HOST], folder).cpu for _ in range(3)]
    return f"host reference (a fixed workload, whole process): CPU {spread(cpu)}"


def _saved(file: Path, rounds: int, folder: Path, quiet: bool = True) -> Usage:
    saves = Path(tempfile.mkdtemp(prefix="saves-", dir=folder))
    args = ["run", str(file), "--seed", "1", "--rounds", str(rounds), "--saves", str(saves)]
    try:
        return _whole(_cli(*args, *["-q"] * quiet), folder)
    finally:
        shutil.rmtree(saves, ignore_errors=True)


def _printed(file: Path, rounds: int, folder: Path) -> Usage:
    return _saved(file, rounds, folder, quiet=False)


def _unsaved(file: Path, rounds: int, folder: Path) -> Usage:
    return _whole([sys.executable, "-c", _UNSAVED, str(file), str(rounds)], folder)


def rounds_bench(args: argparse.Namespace, folder: Path) -> None:
    print("## A saved round beside an unsaved one (whole processes, CPU; wall in brackets)")
    for n in args.agents:
        lo, hi = ROUND_WINDOWS.get(n, (10, 30))
        file = write_cast(folder / f"cast{n}.toml", n, args.seed, hi)
        per: dict[str, list[tuple[float, float]]] = {"saved": [], "unsaved": [], "printed": []}
        for _ in range(args.runs):
            for kind, play in (("saved", _saved), ("unsaved", _unsaved), ("printed", _printed)):
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
        printed = [c for c, _ in per["printed"]]
        wall = spread([w for _, w in per["printed"]], "ms", 1e3)
        print(f"{pad}printed round (no -q, piped): CPU {spread(printed, 'ms', 1e3)} (wall {wall})")
        over = [p - s for p, s in zip(printed, saved, strict=True)]
        print(f"{pad}    printing beyond the saved round: {spread(over, 'ms', 1e3)} (no target)")


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
    """A saved run of a generated cast (played once): its saves folder and id (the run
    there that is no branch: ``keys`` branches it, and ``--keep`` keeps the branches)."""
    from engine.saves.store import SaveStore

    saves = folder / f"saves-{n}x{rounds}"
    if not saves.exists():
        file = write_cast(folder / f"cast{n}x{rounds}.toml", n, args.seed, rounds)
        _whole(_cli("run", str(file), "-q", "--saves", str(saves)), folder)
    (run,) = [r.run_id for r in SaveStore(saves).list_runs() if r.parent is None]
    return saves, run


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
            t0 = _tmux_new(session, cmd)
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


def _tmux_app(session: str, argv: str, pid_file: Path) -> int:
    """Start the app (``socialsim`` arguments ``argv``) in a 160x48 tmux window: the pid of
    its process."""
    pid_file.unlink(missing_ok=True)
    cmd = (
        f"cd {PLAY[0]} && PYTHONPATH={PLAY[0]} {sys.executable} -c {_quote(_PID)} {pid_file} "
        f"{sys.executable} -m tui.cli {argv}"
    )
    _tmux_new(session, cmd)
    while not pid_file.exists() or not pid_file.read_text():
        time.sleep(0.02)
    return int(pid_file.read_text())


def _tmux_new(session: str, cmd: str) -> float:
    """Start a 160x48 tmux session running ``cmd``, tried again a few times (one started as
    the last session's server exits can fail); the ``perf_counter`` of the start that took."""
    new = ["tmux", "new", "-d", "-s", session, "-x", "160", "-y", "48", cmd]
    for _ in range(4):
        started = time.perf_counter()
        if subprocess.run(new, capture_output=True).returncode == 0:
            return started
        time.sleep(0.5)
    started = time.perf_counter()
    subprocess.run(new, check=True)
    return started


def _cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) a live process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _capture(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True
    ).stdout


def _until(session: str, text: str, present: bool = True, timeout: float = 600) -> None:
    t0 = time.perf_counter()
    while (text in _capture(session)) != present:
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"the app never {'showed' if present else 'cleared'} {text!r}")
        time.sleep(0.02)


def _response(session: str, keys: Sequence[str], shown: str) -> float:
    """Seconds from sending ``keys`` until the screen shows ``shown`` (absent before), as
    tmux captures it (polled back to back: a capture takes a few ms)."""
    _until(session, shown, present=False)
    t0 = time.perf_counter()
    subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)
    while shown not in _capture(session):
        if time.perf_counter() - t0 > 600:
            raise SystemExit(f"the app never showed {shown!r}")
    return time.perf_counter() - t0


def step_bench(args: argparse.Namespace, folder: Path) -> None:
    """``n`` in the app beyond the round's own CPU: the app (tmux 160x48) plays a new run of
    a generated cast with ``n`` pressed for rounds 2..hi (each pressed once the round before
    is on screen and the screen has settled), its process's CPU over them per round, beside
    ``socialsim run`` of the same cast and seed, hi rounds minus 1 round over hi - 1."""
    print("## The app's n beyond the round's own CPU (tmux 160x48; CPU, wall in brackets)")
    for n in args.agents:
        hi = STEP_ROUNDS.get(n, 8)
        file = write_cast(folder / f"step{n}.toml", n, args.seed, hi)
        app, cli, beyond, walls = [], [], [], []
        for k in range(args.runs):
            session, saves = f"i40step{os.getpid()}{k}", folder / f"step-saves-{n}-{k}"
            pid = _tmux_app(session, f"tui {file} --seed 1 --saves {saves}", folder / "pid")
            try:
                t0 = time.perf_counter()
                # "paused": the round is over (n while one runs is refused)
                _settled(session, f"paused  │  round 0/{hi}", t0, still=0.3)
                subprocess.run(["tmux", "send-keys", "-t", session, "n"], check=True)
                _settled(session, f"paused  │  round 1/{hi}", t0, still=0.3)
                # the modules the keys open are imported 2 s after the first screen
                # (tui/warm.py): once, not a round's cost
                time.sleep(max(0.0, t0 + WARMED - time.perf_counter()))
                before, t1 = _cpu(pid), time.perf_counter()
                for r in range(2, hi + 1):
                    subprocess.run(["tmux", "send-keys", "-t", session, "n"], check=True)
                    _settled(
                        session,
                        f"{'finished' if r == hi else 'paused'}  │  round {r}/{hi}",
                        t0,
                        still=0.3,
                    )
                app.append((_cpu(pid) - before) / (hi - 1))
                walls.append((time.perf_counter() - t1) / (hi - 1))
                subprocess.run(["tmux", "send-keys", "-t", session, "q"])
            finally:
                subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
                shutil.rmtree(saves, ignore_errors=True)
            cli.append((_saved(file, hi, folder).cpu - _saved(file, 1, folder).cpu) / (hi - 1))
            beyond.append(app[-1] - cli[-1])
        print(
            f"app n, {n} agents (rounds 2..{hi}): CPU {spread(app)} a round "
            f"(wall {spread(walls)}, with 0.3 s settling)"
        )
        print(f"    saved round in socialsim run beside it: CPU {spread(cli)}")
        met = (
            verdict(statistics.median(beyond), STEP_TARGET[n])
            if n in STEP_TARGET
            else "no target (the issue's is at 300 agents)"
        )
        print(f"    beyond the round: {spread(beyond)}, {met}")


#: Not a first response: the recast's diagnosis, from ``c`` until its dialog (no target).
DIAGNOSIS = "recast's diagnosis (c until its dialog)"
#: What each key's first visible response is: (what, keys, text that appears).
KEYS = (
    ("? at rest (the floor: a dialog, tmux and the capture)", ("?",), "close a dialog or screen"),
    ("recast (c)", ("c",), "Diagnosing"),
    (DIAGNOSIS, ("c",), "Apply: rerun"),
    ("open (o)", ("o",), "Saved runs in"),
    ("branch (b)", ("b",), "Branch the run"),
    ("branch's Enter", ("Enter",), "Branching"),
    ("? while it branches", ("?",), "close a dialog or screen"),
    ("export (x)", ("x",), "Export the run"),
    ("export's Enter", ("Enter",), "Exporting"),
    ("? while it exports", ("?",), "close a dialog or screen"),
)


def keys_bench(args: argparse.Namespace, folder: Path) -> None:
    """Each key's first visible response in the app (tmux 160x48) on a saved run of a
    generated cast: seconds from tmux's send-keys until the capture shows the dialog or the
    notice the key brings (recast, open, branch, export, and ``?`` while a branch or an
    export is made off the UI thread)."""
    print("## Each key's first visible response (tmux 160x48, wall)")
    for n in args.agents:
        rounds = 12 if n >= 1000 else 30
        saves, run = _saved_run(n, rounds, args, folder)
        got: dict[str, list[float]] = {what: [] for what, _, _ in KEYS}
        for k in range(args.runs):
            session = f"i40keys{os.getpid()}{k}"
            _tmux_app(session, f"tui {run} --saves {saves}", folder / "pid")
            try:
                _settled(session, f"round {rounds}/{rounds}", time.perf_counter(), still=0.5)
                for _ in range(args.cycles):
                    for what, keys, shown in KEYS:
                        got[what].append(_response(session, keys, shown))
                        _close(session, what)
            finally:
                subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        for what, seconds in got.items():
            median = statistics.median(seconds)
            print(
                f"{what}, {n} agents x {rounds} rounds, {len(seconds)} presses: "
                f"{spread(seconds, 'ms', 1000)}"
            )
            if what != DIAGNOSIS:
                print(f"    {verdict(median * 1000, KEY_TARGET_MS)}")


def _close(session: str, what: str) -> None:
    """Back to the run's screen after ``what`` (its dialog closed, its work done)."""

    def send(*keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)

    if what in ("recast (c)", DIAGNOSIS):
        _until(session, "Apply: rerun")
        send("Escape")
        _until(session, "Apply: rerun", present=False)
    elif what == "open (o)":
        send("Escape")
        _until(session, "Saved runs in", present=False)
    elif what.startswith("? at rest"):
        send("Escape")
        _until(session, "close a dialog or screen", present=False)
    elif what.startswith("?"):
        send("Escape")
        _until(session, "close a dialog or screen", present=False)
        _until(session, "Branched at round" if "branch" in what else "Exported")
        _settled(session, "round", time.perf_counter(), still=0.5)


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


_PID = """
import subprocess, sys
child = subprocess.Popen(sys.argv[2:])
open(sys.argv[1], "w").write(str(child.pid))
sys.exit(child.wait())
"""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what",
        nargs="+",
        choices=("rounds", "alternate", "export", "report", "app", "step", "keys"),
    )
    parser.add_argument("--agents", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=1, help="keys: every key this often an app")
    parser.add_argument("--keep", type=Path, help="a folder for the casts and saves (kept)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to play")
    args = parser.parse_args()
    PLAY[0] = args.root.resolve()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    _compiled(PLAY[0])
    print(f"{PLAY[0]} at {_commit(PLAY[0])}; load before: {uptime()}")
    print(host_speed(folder))
    try:
        for what in args.what:
            {
                "rounds": rounds_bench,
                "alternate": alternate_bench,
                "export": export_bench,
                "report": report_bench,
                "app": app_bench,
                "step": step_bench,
                "keys": keys_bench,
            }[what](args, folder)
    finally:
        print(f"load after: {uptime()}")
        print(host_speed(folder))
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
