"""App responsiveness bench: the app driven headless (Textual ``run_test``), offline model.

    .venv/bin/python bench/bench_app.py             # 5 runs of each figure
    .venv/bin/python bench/bench_app.py --runs 3
    .venv/bin/python bench/bench_app.py --profile   # plus where a step's time goes
    .venv/bin/python bench/bench_app.py --start-only --runs 5   # the start-up figures alone

Figures, each as median [min, max] over the runs, process CPU time beside wall time:

* first frame: ``socialsim tui tavern`` (a new run) in a 100x30 pseudo-terminal, from
  starting the command until the terminal has received the frame with ``round 0/``;
* first paint: from starting a fresh ``python`` process (tavern, a new run, 100x30) until
  ``build_app``'s app, run headless, has mounted and painted the main screen; both beside
  ``socialsim --help``, each with Python's bytecode cache and as the environment has it;
* ``n`` until the header shows the next round, 30 agents (rounds 1-3 of each run);
* a key pressed while rounds are running (``r``) until the screen repaints with its effect;
  the rounds are played on the engine thread, so its CPU time is the app thread's alone.

The bench never fails on a missed target: it prints each figure beside its target and the
load average, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIRST_PAINT_TARGET_S = 1.0
STEP_TARGET_S = 0.3
KEY_TARGET_S = 0.100
SIZE = (100, 30)
NAMES = (
    "Abigail Bartholomew Cornelius Dorothea Ebenezer Florence Gideon Henrietta Ignatius "
    "Josephine Christopher Christina Leopold Maximilian Maxine Nathaniel Ophelia Percival "
    "Quentin Rosalind Sebastian Theodora Ulysses Valentina Wilhelmina Xavier Yolanda "
    "Zachariah Ann Bo"
).split()


def thirty_agents(rounds: int):
    """A town meeting of 30, the cast the app's layout tests use."""
    from engine.core.scenario import parse_scenario

    kinds = ("dominant", "balanced", "analytical", "agreeable", "reserved")
    agents = [
        {
            "name": name,
            "role": f"resident number {k + 1}",
            "archetype": kinds[k % 5],
            "talking_points": [f"point {k + 1} matters", "the square needs trees"],
        }
        for k, name in enumerate(NAMES)
    ]
    data = {
        "id": "meeting",
        "title": "Town meeting of 30",
        "rounds": rounds,
        "agents": agents,
        "events": [{"round": 1, "text": "The mayor opens the meeting."}],
    }
    return parse_scenario(data, "<bench: 30 agents>")


def cpu_s() -> float:
    """CPU time of this process so far (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- first paint (a child process) --------------------------------------------------------------


async def _paint_once(saves: Path) -> None:
    from tui.app import build_app

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        print(json.dumps({"cpu": cpu_s()}), flush=True)


def child_env(pycache: Path | None) -> dict[str, str]:
    """The environment of the processes timed: with ``pycache``, Python's compiled
    bytecode is written to and read from there (as an installed app reads its cache; a
    sandbox may set ``PYTHONDONTWRITEBYTECODE``, which makes every start compile the
    project's modules from source)."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def time_first_paint(saves: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) from starting a process until it has painted the main screen."""
    cmd = [sys.executable, __file__, "--first-paint-child", str(saves)]
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        wall = time.perf_counter() - t0
        child.wait()
    return wall, json.loads(line)["cpu"]


def _proc_cpu_s(pid: int) -> float:
    """CPU time (user + system) of a running process, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_command_frame(saves: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) of ``socialsim tui tavern`` in a pseudo-terminal of :data:`SIZE`, from
    starting it until the terminal has received the frame showing ``round 0/``; the app is
    then quit with ctrl+q."""
    import fcntl
    import pty
    import re
    import select
    import struct
    import termios

    script = Path(sys.executable).parent / "socialsim"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "tui.cli"]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    env = {**env, "SOCIALSIM_SAVES": str(saves), "TERM": "xterm-256color"}
    env.pop("SOCIALSIM_KEYMAP", None)
    escapes = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B]|.)")
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [*cmd, "tui", "tavern"], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=saves.parent
    )
    os.close(slave)
    seen = b""
    try:
        while b"round 0/" not in escapes.sub(b"", seen):
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                raise RuntimeError(f"no frame after 30 s: {seen[-400:]!r}")
            try:
                seen += os.read(master, 65536)
            except OSError:  # the command ended before its first frame
                raise RuntimeError(f"socialsim tui ended: {seen[-400:]!r}") from None
        wall, cpu = time.perf_counter() - t0, _proc_cpu_s(child.pid)
        os.write(master, b"\x11")  # ctrl+q
        deadline = time.monotonic() + 30
        while child.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    return wall, cpu


def time_help(env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) of ``socialsim --help``."""
    script = Path(sys.executable).parent / "socialsim"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "tui.cli"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--help"], cwd=ROOT, capture_output=True, check=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


# -- n until the header shows the next round -----------------------------------------------------


async def time_steps(saves: Path, rounds: int = 3) -> list[tuple[float, float]]:
    """(wall, CPU) of each of ``rounds`` presses of n, until the header shows the round."""
    from engine import SaveStore, Simulation
    from tui.app import SocialsimApp
    from tui.session import Session
    from tui.widgets.header import RunHeader

    store = SaveStore(saves)
    sim = Simulation.new(thirty_agents(9), store=store)
    app = SocialsimApp(Session(store, sim))
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        header = app.query_one(RunHeader)
        for r in range(1, rounds + 1):
            painted = asyncio.Event()
            display = app._display

            def spy(screen, renderable, r=r, display=display, painted=painted):
                display(screen, renderable)
                if renderable is not None and f"round {r}/" in header.render().plain:
                    painted.set()

            app._display = spy  # type: ignore[method-assign]
            t0, c0 = time.perf_counter(), time.process_time()
            await pilot.press("n")
            await painted.wait()
            times.append((time.perf_counter() - t0, time.process_time() - c0))
            app._display = display  # type: ignore[method-assign]
            await app.workers.wait_for_complete()
            await pilot.pause()
    return times


# -- a key during a running round ------------------------------------------------------------------


async def time_keys(saves: Path, presses: int = 8) -> list[tuple[float, float, float]]:
    """(wall, CPU, wait) from a key ([ or ]) pressed while the run plays until the screen
    is repainted showing the page it turned to; CPU: the app thread's (the engine thread
    plays the rounds beside it); wait: until its action ran (the app's loop busy)."""
    from textual import events

    from engine import SaveStore, Simulation
    from tui.app import SocialsimApp
    from tui.session import Session
    from tui.widgets.deck import AgentDeck

    store = SaveStore(saves)
    sim = Simulation.new(thirty_agents(200), store=store)
    app = SocialsimApp(Session(store, sim))
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        deck = app.query_one(AgentDeck)
        handled: list[float] = []
        turn = deck.turn

        def timed_turn(step: int) -> None:
            handled.append(time.perf_counter())
            turn(step)

        deck.turn = timed_turn  # type: ignore[method-assign]
        await pilot.press("r")
        while sim.round < 1:
            await asyncio.sleep(0.01)
        for k in range(presses):
            key, char = (
                ("right_square_bracket", "]") if k % 2 == 0 else ("left_square_bracket", "[")
            )
            before = deck.agent_index
            painted = asyncio.Event()
            display = app._display

            def spy(screen, renderable, before=before, display=display, painted=painted):
                display(screen, renderable)
                if renderable is not None and deck.agent_index != before:
                    painted.set()

            app._display = spy  # type: ignore[method-assign]
            t0, c0 = time.perf_counter(), time.thread_time()
            app.post_message(events.Key(key, char))
            await painted.wait()
            wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
            times.append((wall, cpu, handled[-1] - t0))
            app._display = display  # type: ignore[method-assign]
            assert app.main.running, "the run ended before the key: give it more rounds"
            await asyncio.sleep(0.137)  # land at different points of the rounds
        sim.request_pause()
        await app.workers.wait_for_complete()
    return times


# -- report ---------------------------------------------------------------------------------


def spread(values: Sequence[float]) -> str:
    """``median [min, max]`` in ms."""
    return (
        f"{statistics.median(values) * 1000:7.1f} ms "
        f"[{min(values) * 1000:.1f}, {max(values) * 1000:.1f}]"
    )


def report(name: str, samples: list[tuple[float, float]], target: float | None, on: str) -> None:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    line = f"{name:<34} wall {spread(walls)}   CPU {spread(cpus)}"
    if target is not None:
        worst = max(walls) if on == "max" else statistics.median(walls)
        mark = "meets" if worst <= target else "MISSES"
        line += f"   target {on} <= {target * 1000:.0f} ms: {mark}"
    print(line + f"   (n={len(samples)})")


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs (uptime)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile of the step figure")
    parser.add_argument(
        "--start-only", action="store_true", help="only the start-up figures (first paint)"
    )
    parser.add_argument("--first-paint-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_paint_child:
        asyncio.run(_paint_once(args.first_paint_child))
        return
    print(f"bench_app: {args.runs} runs, terminal {SIZE[0]}x{SIZE[1]}, offline model")
    print(load_line())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for cached in (True, False):
            env = child_env(root / "pycache" if cached else None)
            if cached:  # the cache written once, as by an app's first start after install
                time_command_frame(root / "warm", env)
            print("bytecode cached" if cached else "bytecode as the environment has it")
            frame, paint, helps = [], [], []
            for k in range(args.runs):  # interleaved: a load change hits each the same
                frame.append(time_command_frame(root / f"frame-{cached}-{k}", env))
                paint.append(time_first_paint(root / f"paint-{cached}-{k}", env))
                helps.append(time_help(env))
            report("  socialsim tui tavern, 1st frame", frame, FIRST_PAINT_TARGET_S, "median")
            report("  build_app headless, first paint", paint, FIRST_PAINT_TARGET_S, "median")
            report("  socialsim --help", helps, None, "")
        if args.start_only:
            print(load_line())
            return
        steps: list[tuple[float, float]] = []
        profiler = cProfile.Profile() if args.profile else None
        for k in range(args.runs):
            if profiler:
                profiler.enable()
            steps += asyncio.run(time_steps(root / f"steps-{k}"))
            if profiler:
                profiler.disable()
        report("n -> header, 30 agents", steps, STEP_TARGET_S, "median")
        keys: list[tuple[float, float, float]] = []
        for k in range(args.runs):
            keys += asyncio.run(time_keys(root / f"keys-{k}"))
        report("key while running -> repaint", [(w, c) for w, c, _ in keys], KEY_TARGET_S, "max")
        print("  (CPU: the app thread's; the rounds are played on the engine thread)")
        print(f"{'  of which until its action ran':<34} wall {spread([t for *_, t in keys])}")
    print(load_line())
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"tui/|engine/", 30)


if __name__ == "__main__":
    main()
