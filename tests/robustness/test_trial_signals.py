"""``trial`` under SIGTERM says it was terminated and how to resume it (exit 143), and a
trial played or resumed in one process is refused plainly in a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from filelock import FileLock

from engine import SaveStore
from engine.studies.experiments.trial import spec_path

TRIAL = ("trial", "bullying", "--fork-at", "2", "--rounds", "300", "--seeds", "1-40")


def test_sigterm_to_a_trial_says_terminated_and_how_to_resume(saves: Path) -> None:
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves)}
    code = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"
    argv = (*TRIAL, "--trial-id", "tt", "--workers", "2")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(saves.glob("tt-s*")):  # the workers are playing
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no run started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode()
    assert proc.returncode == 143, text
    assert "Traceback" not in text and "leaked semaphore" not in text, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("socialsim: terminated; "), text
    assert last.endswith("socialsim trial tt --resume plays the rest"), text


def test_a_trial_resumed_elsewhere_is_refused_plainly(socialsim, saves: Path) -> None:
    argv = ("trial", "tavern", "--arms", "none", "--inject", "Rain.@2", "--seeds", "1")
    argv += ("--fork-at", "1", "--rounds", "2")
    assert socialsim(*argv, "--trial-id", "tt", "--workers", "1").code == 0
    with FileLock(f"{spec_path(SaveStore(saves), 'tt')}.lock"):
        result = socialsim("trial", "tt", "--resume", "--workers", "1")
    assert result.code == 2, result.err
    assert result.err.strip().count("\n") == 0, result.err  # the bar's blank line aside
    assert "trial 'tt' is being played or resumed in another socialsim process" in result.err
    again = socialsim("trial", "tt", "--resume", "--workers", "1")
    assert again.code == 0, again.err
