"""A run's memory is flat in its rounds (issue 24): ``socialsim run`` of a generated cast
(bench/casts.py) for 20 and for 80 rounds, each in a fresh process, peaks at about the same
resident memory, because a saved run holds :data:`~engine.round.simulation.HELD_ROUNDS`
rounds and reads older ones back from its save.

Peak RSS comes from ``os.wait4``, the kernel's figure for that one child (spawned, not
forked: bench/whole.py). A held round of this 50-agent cast is about 2 MB (its state: 2,450
relations with their memories), so a run that kept its rounds would peak some 120 MB higher
at 80 rounds than at 20 (more than twice the figure); a flat one differs by the allocator's
noise and the index's lines (under 1 MB). The bound 1.1 leaves room for that noise and fails
on a leak of 0.2 MB a round.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from casts import write_cast
from whole import run_whole

ROOT = Path(__file__).resolve().parents[2]
#: Largest peak RSS at 80 rounds over that at 20 (see the module's docstring).
FLAT = 1.1


def peak_rss_mb(args: list[str], cwd: Path) -> float:
    """Peak resident memory (MB) of ``python -m tui.cli ARGS`` in a fresh process (killed
    after 5 minutes)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = run_whole([sys.executable, "-m", "tui.cli", *args], env, cwd, timeout=300)
    assert got.code == 0, got.stderr
    return got.peak_mb


def test_peak_memory_is_flat_from_20_to_80_rounds(tmp_path: Path) -> None:
    cast = write_cast(tmp_path / "cast.toml", 50, seed=3, rounds=80)
    peaks = {}
    for rounds in (20, 80):
        saves = tmp_path / f"saves-{rounds}"
        args = ["run", str(cast), "-q", "--rounds", str(rounds), "--saves", str(saves)]
        peaks[rounds] = peak_rss_mb(args, tmp_path)
        (run,) = [d for d in saves.iterdir() if (d / "rounds").is_dir()]
        assert len(os.listdir(run / "rounds")) == rounds + 1  # binary or JSON
    assert peaks[80] <= FLAT * peaks[20], peaks
