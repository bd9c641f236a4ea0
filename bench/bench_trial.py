"""Trial bench (issue 16): ``socialsim trial bullying`` with 4 arms × 20 seeds, offline, in a
fresh saves folder each time, as wall and CPU time (the command and its worker processes).

Run from the repository root::

    .venv/bin/python bench/bench_trial.py            # 3 runs
    .venv/bin/python bench/bench_trial.py --runs 5 --workers 1

Prints median, min and max over the runs beside the target (at most 60 s wall on the 2-core
machine), the load averages before and after, and the last run's table; the bench never
fails on a missed target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 60.0
ARMS = "none,neglect,supportive-individual,supportive-cooperative"


def command() -> list[str]:
    """The installed console script next to this Python, else ``python -m tui.cli``."""
    script = Path(sys.executable).with_name("socialsim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system, the process and the workers it waited for) seconds of
    one process running ``argv``, and what it printed."""
    env = {**os.environ, "COLUMNS": "120"}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime, out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s [{min(values):.2f}, {max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs (>= 3)")
    parser.add_argument("--workers", type=int, default=None, help="--workers of the trial")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    walls, cpus, out = [], [], ""
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as saves:
            argv = [*command(), "trial", "bullying", "--fork-at", "4", "--arms", ARMS]
            argv += ["--seeds", "1-20", "--saves", saves, "--yes"]
            argv += ["--outcome", "survey.rses:Alice", "--outcome", "mean_emotion"]
            if args.workers:
                argv += ["--workers", str(args.workers)]
            wall, cpu, out = timed(argv)
        walls.append(wall)
        cpus.append(cpu)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    verdict = "met" if statistics.median(walls) <= TARGET_S else "MISSED"
    print(f"trial bullying, 4 arms x 20 seeds, {args.runs} runs:")
    print(f"  wall {spread(walls)}   CPU {spread(cpus)}")
    print(f"  target <= {TARGET_S:.0f} s wall: {verdict}")
    print(out)


if __name__ == "__main__":
    main()
