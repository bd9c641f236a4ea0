"""Start-up bench: bare ``socialsim --help`` and a command's help (typer prints both), each
as wall and CPU time of a fresh process.

Run from the repository root::

    .venv/bin/python bench/bench_help.py            # 7 runs of each (after one warm-up)
    .venv/bin/python bench/bench_help.py --runs 15

Prints median, min and max over the runs beside the target (issue 23: bare ``--help`` at
most 0.3 s wall); the bench never fails on a missed target. The load averages before and
after are printed too: on a busy machine the figures grow.
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
TARGET_S = 0.3
BARE = "socialsim --help"
CASES = {
    BARE: ["--help"],
    "socialsim run --help": ["run", "--help"],
}


def command() -> list[str]:
    """The installed console script next to this Python, else ``python -m tui.cli``."""
    script = Path(sys.executable).with_name("socialsim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


#: The processes keep their bytecode here, as an installed package has it beside its
#: modules (even where PYTHONDONTWRITEBYTECODE is set: then every start compiled the CLI).
PYCACHE = Path(tempfile.gettempdir()) / "socialsim-bench-pycache"
UNSET = ("FORCE_COLOR", "TERMINAL_WIDTH", "PYTHONDONTWRITEBYTECODE")


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process running ``argv``."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per case (>= 5)")
    args = parser.parse_args()
    base = command()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':40} {'wall median [min, max]':>28} {'CPU median [min, max]':>28}  vs target")
    for label, extra in CASES.items():
        timed(base + extra)  # warm the file cache and the bytecode
        walls, cpus = zip(*(timed(base + extra) for _ in range(max(5, args.runs))), strict=True)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        verdict = f"{wall / TARGET_S:.2f}x of {TARGET_S:.2f} s" if label == BARE else ""
        print(
            f"{label:40} {wall:8.3f} s [{min(walls):.3f}, {max(walls):.3f}]"
            f" {cpu:8.3f} s [{min(cpus):.3f}, {max(cpus):.3f}]  {verdict}"
        )
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
