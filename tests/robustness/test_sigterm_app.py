"""SIGTERM while the app runs: every finished round stays saved, the terminal is restored,
one line says what is saved, and the exit code is 143."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine import SaveStore
from tui.app import TERMINATED, build_app

ROOT = Path(__file__).resolve().parents[2]


async def test_sigterm_quits_the_app_with_143_and_keeps_the_rounds(
    saves: Path, hermetic_app: None
) -> None:
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:  # without the app's handler the signal lands here, not in pytest's death
        app = build_app("tavern", saves=saves)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("n")
            for _ in range(200):
                await pilot.pause(0.05)
                if app.sim.round == 1 and not app.main.running:
                    break
            assert app.sim.round == 1
            os.kill(os.getpid(), signal.SIGTERM)
            await pilot.pause(0.2)
        assert not received
        assert app.return_code == TERMINATED
    finally:
        signal.signal(signal.SIGTERM, previous)
    store = SaveStore(saves)
    (row,) = store.list_runs()
    assert row.ok and row.rounds_done == 1
    store.lock(row.run_id).release()  # the app let go of the run


def _read(fd: int, until: bytes, deadline: float) -> bytes:
    out = b""
    while time.monotonic() < deadline and until not in out:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other side closed (EIO)
                break
            if not chunk:
                break
            out += chunk
    return out


def test_sigterm_to_the_app_process_restores_the_terminal(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = {
        **os.environ,
        "SOCIALSIM_SAVES": str(tmp_path / "saves"),
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
        "LINES": "30",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "tui", "tavern"],
        cwd=ROOT,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    try:
        shown = _read(master, b"Quit", time.monotonic() + 90)
        assert b"Quit" in shown, shown[-2000:]
        proc.send_signal(signal.SIGTERM)
        rest = _read(master, b"nothing saved", time.monotonic() + 60)
        assert proc.wait(timeout=60) == TERMINATED
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert b"\x1b[?1049l" in rest  # the alternate screen left: the terminal is restored
    tail = rest[rest.rindex(b"\x1b[?1049l") :].decode(errors="replace")
    text = re.sub(r"\x1b\[[?0-9;]*[A-Za-z]", "", tail).replace("\r", "")  # the restoring codes
    lines = [line for line in text.split("\n") if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("socialsim: terminated; run tavern-"), lines
    # Terminated before a round was played: the run is not kept, and it says so.
    assert "no round played, nothing saved" in lines[0] and "Traceback" not in tail
    assert not [p for p in (tmp_path / "saves").iterdir() if not p.name.startswith(".")]
