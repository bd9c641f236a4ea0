"""Metrics bench: Sociodrama App. D metrics of an offline 100-agent run, before and after.

Run from the repository root::

    .venv/bin/python bench/bench_metrics.py                  # before = HEAD
    .venv/bin/python bench/bench_metrics.py --before HEAD~3  # another git revision

"Before" is ``engine/core/metrics.py`` of a git revision loaded beside the working tree's engine,
"after" the working tree's. One offline run of a generated 100-agent scenario (bench_engine's)
is played once; each repeat gives both versions fresh (shallow) copies of its states, which
no call has read before, and times, wall and CPU, what the app does (the metrics after every
round, each call given the rounds so far; per round) and what the CSV export does (every
round's metrics at once); figures are medians over ``--repeat``. The values of the metrics
both versions have are compared. The bench never fails on a missed target: it prints
figures beside it.
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

from engine.core import metrics as after  # noqa: E402
from engine.core.scenario import Scenario  # noqa: E402
from engine.core.state import WorldState  # noqa: E402
from engine.round.simulation import Simulation  # noqa: E402

AGENTS = 100
ROUNDS = 9
TARGET_S = 0.020  # the app's metrics after a 100-agent round: a tenth of the 0.2 s round


def load_before(revision: str, folder: Path) -> ModuleType:
    """engine/core/metrics.py at ``revision``, imported as engine.metrics_before."""
    source = subprocess.run(
        ["git", "show", f"{revision}:engine/core/metrics.py"],
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


def timed(
    fn: Callable[[list[WorldState]], object], states: list[WorldState], repeat: int
) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` calls, each on fresh copies of ``states``."""
    walls, cpus = [], []
    for _ in range(repeat):
        fresh = [s.model_copy() for s in states]  # new objects: none read before
        w, c = time.perf_counter(), time.process_time()
        fn(fresh)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def after_every_round(module: ModuleType, scenario: Scenario, states: list[WorldState]) -> None:
    for k in range(1, len(states) + 1):
        module.compute_metrics(scenario, states[:k])


def whole_run(module: ModuleType, scenario: Scenario, states: list[WorldState]) -> None:
    module.metrics_series(scenario, states)


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
    print(f"{'':34}{'before':>24}{'after':>24}   target")
    for label, run, per, target in (
        ("app: after a round (per round)", after_every_round, len(states), TARGET_S),
        ("export: every round at once", whole_run, 1, None),
    ):
        cells = []
        for module in (before, after):
            wall, cpu = timed(functools.partial(run, module, scenario), states, args.repeat)
            cells.append(f"{wall / per * 1e3:7.1f} ms (cpu {cpu / per * 1e3:5.1f})")
        goal = f"<= {target * 1e3:.0f} ms" if target else ""
        print(f"{label:34}{cells[0]:>24}{cells[1]:>24}   {goal}")
    old = [m.as_row() for m in before.metrics_series(scenario, states)]
    new = [m.as_row() for m in after.metrics_series(scenario, states)]
    differ = sorted(
        {k for o, n in zip(old, new, strict=True) for k in o.keys() & n.keys() if o[k] != n[k]}
    )
    verdict = "differ in " + ", ".join(differ) if differ else "identical"
    print(f"values of the metrics both have: {verdict}")


if __name__ == "__main__":
    main()
