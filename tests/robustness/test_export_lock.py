"""Exports to one folder are locked: while one runs, another to the same folder fails in one
line (exit 2) and writes nothing, so two never mix and the export that exits 0 is the one
whose files remain. A folder name near the 255-byte limit still exports (the hidden names
beside it are cut).

The race is tried ``TRIES`` times by default, ``SLOW_TRIES`` with ``-m slow``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.reports.export import COLUMNS
from engine.reports.staging import INCOMPLETE, locked

TRIES = 2
SLOW_TRIES = 30
ERROR = "socialsim: error: "


@pytest.fixture
def two_runs(socialsim, saves: Path) -> Path:
    """Runs ``A`` and ``B`` (different seeds), 30 rounds each."""
    for run_id, seed in (("A", "1"), ("B", "2")):
        args = ("run", "tavern", "--rounds", "30", "--seed", seed, "--run-id", run_id, "-q")
        assert socialsim(*args).code == 0
    return saves


def _run_ids(out: Path) -> set[str]:
    """The runs the tables in ``out`` hold rows of."""
    found = set()
    for name in COLUMNS:
        with (out / f"{name}.csv").open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        found |= {row["run_id"] for row in rows}
    return found


def test_an_export_to_a_folder_being_exported_to_fails_and_writes_nothing(
    socialsim, two_runs: Path, tmp_path: Path
):
    out = tmp_path / "csv"
    assert socialsim("export", "A", "--out", str(out)).code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with locked(out):  # another export holds the folder
        result = socialsim("export", "B", "--out", str(out))
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.err
    assert "another export to this folder is under way" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert socialsim("export", "B", "--out", str(out)).code == 0  # free again
    assert _run_ids(out) == {"B"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["csv", "saves"]  # no lock file left


def _start(saves: Path, run_id: str, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves)}
    code = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, "export", run_id, "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    "tries", [TRIES, pytest.param(SLOW_TRIES, marks=pytest.mark.slow)], ids=["small", "full"]
)
def test_two_exports_at_once_never_mix(two_runs: Path, tmp_path: Path, tries: int):
    for k in range(tries):
        out = tmp_path / f"race{k}"
        procs = {run_id: _start(two_runs, run_id, out) for run_id in ("A", "B")}
        codes, errors = {}, {}
        for run_id, proc in procs.items():
            _, err = proc.communicate(timeout=300)
            codes[run_id], errors[run_id] = proc.returncode, err.decode()
        won = {r for r, code in codes.items() if code == 0}
        assert won and set(codes.values()) <= {0, 2}, (codes, errors)
        for run_id in set(codes) - won:
            lines = errors[run_id].strip().splitlines()
            assert len(lines) == 1 and "under way" in lines[0], errors[run_id]
        held = _run_ids(out)
        assert len(held) == 1 and held <= won, (k, held, codes)  # one set, of a winner
        assert not (out / INCOMPLETE).exists()


def test_a_folder_name_of_240_characters_exports(socialsim, two_runs: Path, tmp_path: Path):
    out = tmp_path / ("x" * 240)
    for run_id in ("A", "B"):  # the second replaces the first (an "old" folder beside it)
        result = socialsim("export", run_id, "--out", str(out))
        assert result.code == 0, result.err
    assert _run_ids(out) == {"B"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saves", out.name]
    unicode_out = tmp_path / ("é" * 120)  # 240 bytes
    assert socialsim("export", "A", "--out", str(unicode_out)).code == 0
