"""History bench (issue 12): disk per round, resident memory, export, show, branch and list,
each beside its target.

Run from the repository root::

    .venv/bin/python bench/bench_history.py                 # 3 repeats of every figure
    .venv/bin/python bench/bench_history.py --quick         # 1 repeat, memory over 100 rounds
    .venv/bin/python bench/bench_history.py --rev c88e0de   # the same with another revision
    .venv/bin/python bench/bench_history.py --only show,list,export   # the history reads
    .venv/bin/python bench/bench_history.py --cast 1        # on casts generated from seed 1

Every figure is measured in a fresh child process: wall time with ``time.perf_counter``,
CPU (user + system) from ``getrusage``, resident memory from ``/proc/self/status`` (VmRSS
now, VmHWM the peak). ``show``, ``list`` and ``export`` are also timed as whole commands
(``python -m tui.cli ...``: interpreter start and imports included; CPU and peak RSS from
the child's own ``wait4`` usage), with their bytecode cached as an installed package has
it (under ``--cache``, even where PYTHONDONTWRITEBYTECODE is set). The runs that are
read (1,000 rounds x 10 agents for export and show, 210 rounds x 30 agents for branch, 500
runs for list) are built once per engine version into ``--cache`` and reused; the memory
run (100 agents) is played afresh each repeat and its first 100 rounds give the disk
figure. ``--rev`` runs everything with a git worktree of that revision (an older format
cannot play 500 rounds at 100 agents in memory: use ``--memory-rounds``). The bench never
fails on a missed target: it prints the figures and their ratio to the target. ``--cast
SEED`` plays every run with casts generated from SEED (bench/casts.py: archetypes, starting
relations, factions and events drawn at random) instead of bench_engine's bench cast.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DISK_TARGET_MB = 0.5  # per round at 100 agents, averaged over 100 rounds
RSS_TARGET_MB = 300.0  # at 100 agents after 500 rounds, flat
EXPORT_TARGET_S, EXPORT_RSS_TARGET_MB = 2.0, 150.0  # 1,000 rounds x 10 agents
SHOW_TARGET_S = 0.5
BRANCH_TARGET_S = 1.0  # at round 200, 30 agents
LIST_TARGET_S = 0.5  # 500 runs

EXPORT_RUN = (10, 1000)  # agents, rounds
BRANCH_RUN = (30, 210)
BRANCH_AT = (200, 205)
LIST_RUNS = 500
LIST_TEMPLATE = (5, 10)


# -- child side: one measurement, printed as a JSON line -------------------------------------


def _status(field: str) -> float:
    """A /proc/self/status memory field (VmRSS, VmHWM) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Clock:
    def __enter__(self) -> _Clock:
        self.wall0, self.cpu0 = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall0, _cpu() - self.cpu0


#: The environment variable that hands ``--cast`` to the children.
CAST_ENV = "SOCIALSIM_BENCH_CAST"


def _scenario(agents: int, rounds: int):  # -> engine.core.scenario.Scenario
    """bench_engine's bench cast or (``--cast``) a generated one, from the tree measured
    (the child's cwd)."""
    sys.path.insert(0, str(Path.cwd() / "bench"))
    seed = os.environ.get(CAST_ENV)
    if seed:
        from casts import cast_data

        from engine.core.scenario import parse_scenario

        return parse_scenario(cast_data(agents, int(seed), rounds), f"<cast seed {seed}>")
    from bench_engine import make_scenario

    return make_scenario(agents, rounds)


def child_play(saves: str, run_id: str, agents: int, rounds: int, marks: list[int]) -> dict:
    """Play a saved run; RSS and CPU at each mark."""
    import asyncio
    import gc

    from engine import SaveStore, Simulation

    async def play() -> dict:
        sim = Simulation.new(
            _scenario(agents, rounds), seed=1, store=SaveStore(saves), run_id=run_id
        )
        at: dict[str, dict] = {}
        with _Clock() as clock:
            for n in range(1, rounds + 1):
                await sim.step()
                if n in marks:
                    gc.collect()
                    at[str(n)] = {"rss_mb": _status("VmRSS"), "cpu_s": _cpu() - clock.cpu0}
        sim.close()
        return {"marks": at, "wall": clock.wall, "cpu": clock.cpu}

    return asyncio.run(play())


def child_export(saves: str, run_id: str, out: str) -> dict:
    from engine import SaveStore
    from engine.reports.export import export_run

    store = SaveStore(saves)
    base = _status("VmRSS")
    with _Clock() as clock:
        meta = store.read_meta(run_id)
        export_run(meta, store.read_rounds(run_id), Path(out), store.read_measurements(run_id))
    return {"wall": clock.wall, "cpu": clock.cpu, "peak_mb": _status("VmHWM"), "base_mb": base}


def child_cli(*argv: str) -> dict:
    """A command's own cost: run once in-process (its imports), then timed a second time."""
    import contextlib
    import io

    from tui import cli

    def once() -> None:
        sys.argv = ["socialsim", *argv]
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                cli.main()
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise

    once()
    with _Clock() as clock:
        once()
    return {"wall": clock.wall, "cpu": clock.cpu}


def child_branch(saves: str, run_id: str, at: int) -> dict:
    from engine import SaveStore

    store = SaveStore(saves)
    with _Clock() as clock:
        child = store.branch(run_id, at, new_id=f"bench-branch-{at}")
    store.delete(child.run_id)
    return {"wall": clock.wall, "cpu": clock.cpu}


def child_list(saves: str) -> dict:
    from engine import SaveStore

    with _Clock() as clock:
        rows = SaveStore(saves).list_runs()
    return {"wall": clock.wall, "cpu": clock.cpu, "ok": sum(r.ok for r in rows)}


def child_reread(saves: str, run_id: str, rounds: list[int]) -> dict:
    """Read single rounds of a saved run (state included), each from a fresh store: the
    cost of rebuilding a round from its keyframe."""
    from engine import SaveStore

    got = {}
    for n in rounds:
        with _Clock() as clock:
            SaveStore(saves).read_round(run_id, n)
        got[str(n)] = {"wall": clock.wall, "cpu": clock.cpu}
    return got


def child_build(saves: str, run_id: str, agents: int, rounds: int) -> dict:
    return child_play(saves, run_id, agents, rounds, [])


def child_copies(saves: str, template: str, count: int) -> dict:
    """``count`` copies of a run (the list bench's saves folder)."""
    source = Path(saves) / template
    for k in range(count - 1):
        shutil.copytree(source, Path(saves) / f"{template}-{k:03d}")
    return {}


CHILDREN = {
    "play": child_play,
    "export": child_export,
    "cli": child_cli,
    "branch": child_branch,
    "list": child_list,
    "reread": child_reread,
    "build": child_build,
    "copies": child_copies,
}


def child_main(argv: list[str]) -> None:
    task, raw = argv[0], json.loads(argv[1])
    print(json.dumps(CHILDREN[task](*raw)))


# -- parent side -----------------------------------------------------------------------------


class Runner:
    """Runs children with the engine of one revision (this tree, or a worktree)."""

    def __init__(self, tree: Path, pycache: Path, cast: int | None = None) -> None:
        self.tree = tree
        self.cast = cast
        self.env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(pycache)}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.pop(CAST_ENV, None)
        if cast is not None:
            self.env[CAST_ENV] = str(cast)

    def child(self, task: str, *args: object) -> dict:
        out = self._run(
            [str(ROOT / "bench" / "bench_history.py"), "--child", task, json.dumps(args)]
        )
        return json.loads(out[0].strip().splitlines()[-1])

    def command(self, *argv: str) -> tuple[float, float, float]:
        """(wall, CPU, peak RSS in MB) of ``python -m tui.cli ARGV`` as a whole process."""
        _, wall, cpu, peak = self._run(["-m", "tui.cli", *argv])
        return wall, cpu, peak

    def _run(self, args: list[str]) -> tuple[str, float, float, float]:
        """The child's stdout, wall time, CPU and peak RSS (MB, from its own usage)."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, *args], cwd=self.tree, env=self.env, stdout=out, stderr=err
            )
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            if proc.returncode:
                raise SystemExit(
                    f"child {args[:3]} failed ({proc.returncode}):\n{err.read()[-2000:].decode()}"
                )
            cpu = usage.ru_utime + usage.ru_stime
            return out.read().decode(), wall, cpu, usage.ru_maxrss / 1024


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def engine_key(tree: Path) -> str:
    """What the cached runs depend on: the engine's sources."""
    digest = hashlib.sha1()
    for path in sorted((tree / "engine").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cached(runner: Runner, cache: Path) -> Path:
    """The saves folder of the read benchmarks for this engine, built if missing."""
    cast = "" if runner.cast is None else f"-cast{runner.cast}"
    folder = cache / f"{engine_key(runner.tree)}{cast}"
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    saves, lists = folder / "saves", folder / "list"
    print(f"building the runs into {folder} (once per engine version) ...", flush=True)
    runner.child("build", str(saves), "export", *EXPORT_RUN)
    runner.child("build", str(saves), "branch", *BRANCH_RUN)
    runner.child("build", str(lists), "list", *LIST_TEMPLATE)
    runner.child("copies", str(lists), "list", LIST_RUNS)
    done.touch()
    return folder


def disk_per_round(run: Path, rounds: int) -> float:
    """Bytes a round costs on disk (its file and its index line), averaged over rounds
    1..``rounds``, in MB."""
    total = 0
    for path in (run / "rounds").iterdir():
        name = path.name
        if name[:6].isdigit() and 1 <= int(name[:6]) <= rounds:
            total += path.stat().st_size
    index = run / "index.jsonl"
    if index.exists():
        lines = index.read_bytes().splitlines(keepends=True)
        total += sum(len(line) for line in lines[1 : rounds + 1])
    return total / rounds / 1e6


def file_sizes(run: Path, rounds: int) -> dict[str, float]:
    """Median size (MB) of the round files of rounds 1..``rounds`` that are multiples of
    10 (format 3: keyframes) and of the others."""
    kinds: dict[str, list[int]] = {"keyframe": [], "changes": []}
    for path in (run / "rounds").iterdir():
        n = int(path.name[:6]) if path.name[:6].isdigit() else 0
        if 1 <= n <= rounds:
            kinds["keyframe" if n % 10 == 0 else "changes"].append(path.stat().st_size)
    return {k: statistics.median(v) / 1e6 for k, v in kinds.items() if v}


def spread(values: list[float], unit: str = "s", digits: int = 3) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f} {unit}"
    return f"{med:.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}] {unit}"


def verdict(value: float, target: float) -> str:
    ratio = value / target
    return f"{ratio:.2f}x ({'meets' if ratio <= 1 else 'MISSES'})"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child_main(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measurements of each figure")
    parser.add_argument("--quick", action="store_true", help="1 repeat, memory over 100 rounds")
    parser.add_argument("--memory-rounds", type=int, default=500, help="rounds of the RSS run")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "socialsim-bench-history"
    )
    parser.add_argument("--rev", help="measure this git revision instead (a worktree)")
    parser.add_argument("--cast", type=int, help="play casts generated from this seed")
    parser.add_argument(
        "--only",
        type=lambda text: text.split(","),
        default=list(SECTIONS),
        help=f"comma-separated figures to measure, of {','.join(SECTIONS)} (default: all)",
    )
    args = parser.parse_args(argv)
    if unknown := set(args.only) - set(SECTIONS):
        parser.error(f"--only: unknown figures {', '.join(sorted(unknown))}")
    repeat = 1 if args.quick else args.repeat
    memory_rounds = 100 if args.quick else args.memory_rounds

    tree, worktree = ROOT, None
    if args.rev:
        worktree = Path(tempfile.mkdtemp(prefix="socialsim-rev-"))
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), args.rev],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        tree = worktree
    runner = Runner(tree, args.cache / "pycache", args.cast)
    try:
        report(runner, args, repeat, memory_rounds)
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False
            )


def report(runner: Runner, args: argparse.Namespace, repeat: int, memory_rounds: int) -> None:
    cast = "" if args.cast is None else f", casts of seed {args.cast}"
    label = (args.rev or "this tree") + cast
    print(f"socialsim history bench: {label}, {repeat} repeat(s), python {sys.version.split()[0]}")
    print(f"before: {uptime()}", flush=True)
    folder = cached(runner, args.cache)
    rows: list[Row] = []
    for name in args.only:
        rows += SECTIONS[name](runner, folder, args.cache, repeat, memory_rounds)
    width = max(len(r[0]) for r in rows)
    print(f"\n{'figure':<{width}}  {'wall (median [min, max])':<32}  {'CPU':<30}  vs target")
    for name, wall, cpu, target in rows:
        print(f"{name:<{width}}  {wall:<32}  {cpu:<30}  {target}")
    print(f"\nafter: {uptime()}")


Row = tuple[str, str, str, str]


def memory_rows(runner: Runner, folder: Path, cache: Path, repeat: int, rounds: int) -> list[Row]:
    """Disk per round and resident memory: a 100-agent run played afresh each repeat."""
    marks = sorted({max(1, rounds // 5), rounds // 2, rounds})
    disk_rounds = min(100, rounds)
    disks: list[float] = []
    rss: dict[int, list[float]] = {m: [] for m in marks}
    plays: list[float] = []
    play_cpu: list[float] = []
    reread = [disk_rounds - disk_rounds % 10, disk_rounds - disk_rounds % 10 - 1]
    rereads: dict[int, list[float]] = {n: [] for n in reread}
    sizes: dict[str, list[float]] = {"keyframe": [], "changes": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            got = runner.child("play", tmp, "mem", 100, rounds, marks)
            disks.append(disk_per_round(Path(tmp) / "mem", disk_rounds))
            for n, t in runner.child("reread", tmp, "mem", reread).items():
                rereads[int(n)].append(t["cpu"])
            for kind, size in file_sizes(Path(tmp) / "mem", disk_rounds).items():
                sizes[kind].append(size)
        for m in marks:
            rss[m].append(got["marks"][str(m)]["rss_mb"])
        plays.append(got["wall"] / rounds)
        play_cpu.append(got["cpu"] / rounds)
    rows = [
        (
            f"disk per round, 100 agents, rounds 1-{disk_rounds}",
            spread(disks, "MB"),
            "",
            verdict(statistics.median(disks), DISK_TARGET_MB),
        )
    ]
    for m in marks:
        target = verdict(statistics.median(rss[m]), RSS_TARGET_MB) if m == marks[-1] else ""
        rows.append((f"RSS after {m} rounds, 100 agents", spread(rss[m], "MB", 0), "", target))
    rows.append(
        ("  (a saved round at 100 agents: wall / CPU)", spread(plays), spread(play_cpu), "")
    )
    for kind, values in sizes.items():
        if values:
            rows.append((f"  median {kind} file, 100 agents", spread(values, "MB"), "", ""))
    for n, values in rereads.items():
        rows.append((f"  read round {n} alone (state included), CPU", "", spread(values), ""))
    return rows


def export_rows(runner: Runner, folder: Path, cache: Path, repeat: int, _: int) -> list[Row]:
    """Export of 1,000 rounds x 10 agents, in process and as a whole command."""
    saves = folder / "saves"
    walls: list[float] = []
    cpus: list[float] = []
    peaks: list[float] = []
    bases: list[float] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            got = runner.child("export", str(saves), "export", tmp)
        walls.append(got["wall"])
        cpus.append(got["cpu"])
        peaks.append(got["peak_mb"])
        bases.append(got["base_mb"])
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        out = str(Path(tmp) / "csv")
        argv = ("export", "export", "--out", out, "--saves", str(saves))
        runner.command(*argv)  # its bytecode cached, an earlier export in place
        whole = [runner.command(*argv) for _ in range(repeat)]
    return [
        (
            "export 1,000 rounds x 10 agents (in process)",
            spread(walls),
            spread(cpus),
            verdict(statistics.median(walls), EXPORT_TARGET_S),
        ),
        (
            "  peak RSS of the export process",
            spread(peaks, "MB", 0),
            f"after imports {statistics.median(bases):.0f} MB",
            verdict(statistics.median(peaks), EXPORT_RSS_TARGET_MB),
        ),
        _whole("socialsim export (whole command)", whole, EXPORT_TARGET_S),
        (
            "  peak RSS of socialsim export",
            spread([p for _, _, p in whole], "MB", 0),
            "",
            verdict(statistics.median(p for _, _, p in whole), EXPORT_RSS_TARGET_MB),
        ),
    ]


def show_rows(runner: Runner, folder: Path, cache: Path, repeat: int, _: int) -> list[Row]:
    """``show`` of the 1,000-round run (its last round, and a round rebuilt from a
    keyframe), in process and as a whole command."""
    saves = folder / "saves"
    rows = []
    for what, argv in (
        ("show", ["show", "export"]),
        ("show --round 995", ["show", "export", "--round", "995"]),
    ):
        inner = [runner.child("cli", *argv, "--saves", str(saves)) for _ in range(repeat)]
        runner.command(*argv, "--saves", str(saves))  # its bytecode cached
        whole = [runner.command(*argv, "--saves", str(saves)) for _ in range(repeat)]
        rows.append(
            (
                f"{what} on it (in process, imports done)",
                spread([g["wall"] for g in inner]),
                spread([g["cpu"] for g in inner]),
                verdict(statistics.median(g["wall"] for g in inner), SHOW_TARGET_S),
            )
        )
        rows.append(_whole(f"socialsim {what} (whole command)", whole, SHOW_TARGET_S))
    return rows


def branch_rows(runner: Runner, folder: Path, cache: Path, repeat: int, _: int) -> list[Row]:
    """Branching the 210-round run of 30 agents."""
    rows = []
    for at in BRANCH_AT:
        got = [runner.child("branch", str(folder / "saves"), "branch", at) for _ in range(repeat)]
        rows.append(
            (
                f"branch at round {at}, 30 agents",
                spread([g["wall"] for g in got]),
                spread([g["cpu"] for g in got]),
                verdict(statistics.median(g["wall"] for g in got), BRANCH_TARGET_S),
            )
        )
    return rows


def list_rows(runner: Runner, folder: Path, cache: Path, repeat: int, _: int) -> list[Row]:
    """``list`` of 500 runs, in process and as a whole command."""
    lists = str(folder / "list")
    got = [runner.child("list", lists) for _ in range(repeat)]
    runner.command("list", "--saves", lists)  # its bytecode cached
    whole = [runner.command("list", "--saves", lists) for _ in range(repeat)]
    return [
        (
            f"list, {LIST_RUNS} runs (in process)",
            spread([g["wall"] for g in got]),
            spread([g["cpu"] for g in got]),
            verdict(statistics.median(g["wall"] for g in got), LIST_TARGET_S),
        ),
        _whole("socialsim list (whole command)", whole, LIST_TARGET_S),
    ]


def _whole(name: str, runs: list[tuple[float, float, float]], target: float) -> Row:
    walls = [w for w, _, _ in runs]
    return (
        f"  {name}",
        spread(walls),
        spread([c for _, c, _ in runs]),
        verdict(statistics.median(walls), target),
    )


SECTIONS = {
    "memory": memory_rows,
    "export": export_rows,
    "show": show_rows,
    "branch": branch_rows,
    "list": list_rows,
}


if __name__ == "__main__":
    main()
