"""A command as a whole process: its wall time, CPU and peak resident memory, from its own
``wait4`` usage.

The kernel's peak RSS of a process survives ``exec``: a child forked (or vforked) from a
parent holding 300 MB reports at least 300 MB whatever the command used. So the command is
started by a small launcher (a fresh interpreter, ~10 MB) that reports its child's usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_LAUNCHER = """
import json, os, subprocess, sys, time
with open(sys.argv[1], "wb") as err:
    t0 = time.perf_counter()
    child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
child.returncode = os.waitstatus_to_exitcode(status)
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps([wall, cpu, usage.ru_maxrss / 1024, child.returncode]))
"""


@dataclass(frozen=True)
class Usage:
    wall: float
    cpu: float  # user + system, seconds
    peak_mb: float
    code: int
    stderr: str


def run_whole(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = 3600
) -> Usage:
    """Run ``argv`` in ``cwd`` with ``env`` (its output discarded, the end of its stderr
    kept); the launcher is killed after ``timeout`` seconds."""
    err = cwd / f".whole-stderr-{id(argv)}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(err), *argv],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        text = err.read_bytes()[-4000:].decode(errors="replace")
    finally:
        err.unlink(missing_ok=True)
    wall, cpu, peak, code = json.loads(done.stdout.strip().splitlines()[-1])
    return Usage(wall, cpu, peak, code, text)
