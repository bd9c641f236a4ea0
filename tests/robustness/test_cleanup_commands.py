"""Every command that opens a run removes what killed writers left, scoped to that run:
the saves folder's staging and half-deleted folders, and the ``.tmp`` files of the run it
opens (another run's are left for ``list``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def dead_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def debris(socialsim, saves: Path) -> dict[str, Path]:
    """Runs ``good`` (4 rounds) and ``other`` with the leftovers of killed writers."""
    for run_id in ("good", "other"):
        argv = ("run", "tavern", "--rounds", "4", "--run-id", run_id, "-q")
        assert socialsim(*argv).code == 0
    pid = dead_pid()
    found = {
        "staging": saves / f".good-branch.{pid}.k2j4h6",
        "deleting": saves / ".deleting-gone-ab12",
        "temp": saves / "good" / "rounds" / ".000005.json.gz.x8y9.tmp",
        "meta temp": saves / "good" / ".run.json.a1b2.tmp",
        "other's temp": saves / "other" / "rounds" / ".000005.json.gz.q7w8.tmp",
    }
    for name, path in found.items():
        if "temp" in name:
            path.write_bytes(b"half a round")
        else:
            path.mkdir()
            (path / "run.json").write_text("{}")
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["resume", "good", "--rounds", "1", "-q"],
        ["show", "good"],
        ["branch", "good", "--at", "2", "--run-id", "kid"],
        ["export", "good", "--out", "OUT"],
    ],
    ids=lambda a: a[0],
)
def test_a_command_on_a_run_removes_its_leftovers(socialsim, debris, tmp_path: Path, argv):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    result = socialsim(*argv)
    assert result.code == 0, result
    for name in ("staging", "deleting", "temp", "meta temp"):
        assert not debris[name].exists(), name
        assert f"removed the leftover of an interrupted write: {debris[name]}" in result.err
    assert debris["other's temp"].exists()  # not the run this command opened
    assert str(debris["other's temp"]) not in result.err


def test_run_removes_the_saves_folders_leftovers_and_reads_no_other_run(socialsim, debris):
    result = socialsim("run", "tavern", "--rounds", "1", "-q")
    assert result.code == 0, result
    assert not debris["staging"].exists() and not debris["deleting"].exists()
    assert debris["temp"].exists() and debris["other's temp"].exists()


def test_leftovers_of_a_run_in_use_are_kept(socialsim, debris, saves: Path):
    from engine import SaveStore

    lock = SaveStore(saves).lock("good")  # another process has the run open
    try:
        result = socialsim("show", "good")
    finally:
        lock.release()
    assert result.code == 0
    assert debris["temp"].exists() and debris["meta temp"].exists()
    assert not debris["staging"].exists()
