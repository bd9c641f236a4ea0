"""Metrics bench: Sociodrama App. D metrics of an offline 100-agent run, before and after.

Run from the repository root::

    .venv/bin/python bench/bench_metrics.py                  # before = HEAD
    .venv/bin/python bench/bench_metrics.py --before HEAD~3  # another git revision

"Before" is ``engine/metrics.py`` of a git revision loaded beside the working tree's engine,
"after" the working tree's. One offline run of a generated 100-agent scenario (bench_engine's)
is played once; both versions then compute the metrics of its last round (what the app does
after every round) and of every round (the CSV export), each timed as the median of
``--repeat`` calls, wall and CPU time. The values of the metrics both versions have are
compared. The bench never fails on a missed target: it prints figures beside the target.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench_engine import make_scenario  # noqa: E402

from engine import metrics as after  # noqa: E402
from engine.simulation import Simulation  # noqa: E402

AGENTS = 100
ROUNDS = 9
TARGET_S = 0.020  # metrics of the last round at 100 agents: a tenth of the 0.2 s round target


def load_before(revision: str, folder: Path) -> ModuleType:
    """engine/metrics.py at ``revision``, imported as engine.metrics_before."""
    source = subprocess.run(
        ["git", "show", f"{revision}:engine/metrics.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = folder / "metrics_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("engine.metrics_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="git revision measured as 'before'")
    parser.add_argument("--repeat", type=int, default=7, help="calls timed per figure")
    args = parser.parse_args()
    scenario = make_scenario(AGENTS, ROUNDS)
    sim = Simulation.new(scenario, seed=1)
    asyncio.run(sim.run())
    states = [r.state for r in sim.records]
    with tempfile.TemporaryDirectory() as tmp:
        before = load_before(args.before, Path(tmp))
    print(f"{AGENTS} agents, {len(states)} states (rounds 0-{ROUNDS}), median of {args.repeat}")
    print(f"{'':28}{'before':>18}{'after':>18}   target")
    for label, call, target in (
        ("last round (compute_metrics)", "compute_metrics", TARGET_S),
        ("every round (metrics_series)", "metrics_series", None),
    ):
        cells = []
        for module in (before, after):
            fn = functools.partial(getattr(module, call), scenario, states)
            wall, cpu = timed(fn, args.repeat)
            cells.append(f"{wall * 1e3:7.1f} ms (cpu {cpu * 1e3:5.1f})")
        goal = f"<= {target * 1e3:.0f} ms" if target else ""
        print(f"{label:28}{cells[0]:>18}{cells[1]:>18}   {goal}")
    old = [m.as_row() for m in before.metrics_series(scenario, states)]
    new = [m.as_row() for m in after.metrics_series(scenario, states)]
    differ = sorted(
        {k for o, n in zip(old, new, strict=True) for k in o.keys() & n.keys() if o[k] != n[k]}
    )
    verdict = "differ in " + ", ".join(differ) if differ else "identical"
    print(f"values of the metrics both have: {verdict}")


if __name__ == "__main__":
    main()
