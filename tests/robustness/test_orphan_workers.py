"""SIGKILL a ``trial`` or ``sweep`` playing in worker processes: its workers, the resource
tracker they keep alive and the rate-limit manager exit with it, none is left under PID 1.

The small variant kills a two-worker trial once; ``-m slow`` adds a sweep and the shared
rate limit (its manager process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: How long a worker may take to notice its parent is gone (a generous bound, not a timing).
GRACE = 60.0


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill_when_spawned(saves: Path, want: int, *argv: str) -> set[int]:
    """Start ``socialsim *argv``, wait for ``want`` child processes (workers, tracker,
    manager), SIGKILL it; the children it had."""
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves)}
    code = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the children are not killed as a group with the test
    )
    children: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(children) < want:
            assert proc.poll() is None, "the command ended before its workers started"
            assert time.monotonic() < deadline, f"only {len(children)} child processes"
            time.sleep(0.2)
            children = _children(proc.pid)
        time.sleep(1.0)  # the workers are playing
        children = _children(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    return children


def _wait_gone(pids: set[int]) -> set[int]:
    deadline = time.monotonic() + GRACE
    left = {p for p in pids if _alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = {p for p in left if _alive(p)}
    for pid in left:  # never leave them behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    return left


TRIAL = ("trial", "bullying", "--fork-at", "2", "--rounds", "300", "--seeds", "1-40")
CASES = {
    "trial": (3, (*TRIAL, "--workers", "2")),
}
SLOW_CASES = {
    "trial-rate-limit": (4, (*TRIAL, "--workers", "2", "--calls-per-second", "50")),
    "sweep": (3, ("sweep", "govsim", "--runs", "40", "--workers", "2")),
}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    "case",
    [*CASES, *(pytest.param(c, marks=pytest.mark.slow) for c in SLOW_CASES)],
)
def test_a_killed_batch_leaves_no_process_behind(saves: Path, case: str) -> None:
    want, argv = {**CASES, **SLOW_CASES}[case]
    children = _kill_when_spawned(saves, want, *argv)
    assert len(children) >= want
    left = _wait_gone(children)
    assert not left, f"still running {GRACE:.0f} s after their parent was killed: {left}"
