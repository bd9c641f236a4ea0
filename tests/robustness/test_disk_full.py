"""A full disk (ENOSPC) at each write step of a round: the save keeps its last finished
round, byte for byte as it was, with one clear line and exit code 2; nothing half-written."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import SaveStore
from engine.saves.headfile import kept_head
from engine.saves.store import META_FILE

ERROR = "socialsim: error: "
#: The calls every durable write goes through (a round file, its index line, run.json).
STEPS = ("fsync", "replace")


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path (the lock file aside)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def failing(real: Callable, at: int, calls: list[int]) -> Callable:
    """``real``, raising ENOSPC on its ``at``-th call (counting in ``calls``)."""

    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == at:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    return call


def write_steps(socialsim, monkeypatch, argv: list[str], step: str) -> int:
    """How many times ``os.<step>`` is called by ``socialsim *argv`` (which must succeed)."""
    calls = [0]
    with monkeypatch.context() as patch:
        patch.setattr(os, step, failing(getattr(os, step), 0, calls))
        assert socialsim(*argv).code == 0
    return calls[0]


@pytest.fixture
def run(socialsim, saves: Path) -> Path:
    """An offline run ``r`` that has played 3 rounds."""
    assert socialsim("run", "tavern", "--rounds", "3", "--run-id", "r", "-q").code == 0
    return saves / "r"


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("extend", [True, False], ids=["extending", "within-total"])
def test_a_full_disk_at_any_write_step_leaves_the_last_finished_round(
    socialsim, run: Path, saves: Path, tmp_path: Path, monkeypatch, step: str, extend: bool
):
    """``resume --rounds 1`` of a finished run (its total grows with the round) or of a run
    with rounds left, failing at each call of ``os.fsync`` / ``os.replace`` in turn (a
    failure writing run.json's kept head leaves no head for it, and the round saved)."""
    store = SaveStore(saves)
    if not extend:
        store.write_meta(store.read_meta("r").model_copy(update={"total_rounds": 5}))
    total = store.read_meta("r").total_rounds
    argv = ["resume", "r", "--rounds", "1", "-q"]
    before = contents(run)
    spare = tmp_path / "spare"
    shutil.copytree(run, spare)
    steps = write_steps(socialsim, monkeypatch, argv, step)
    assert steps >= (2 if step == "fsync" else 1)  # the round file, its index line, run.json
    for at in range(1, steps + 1):
        shutil.rmtree(run)
        shutil.copytree(spare, run)
        calls = [0]
        with monkeypatch.context() as patch:
            patch.setattr(os, step, failing(getattr(os, step), at, calls))
            result = socialsim(*argv)
        if result.code == 0:  # the call was the kept head's: a cache, run.json is the truth
            assert kept_head(run / META_FILE) is None, f"os.{step} call {at}: no failure"
            (row,) = store.list_runs()
            assert row.ok and row.rounds_done == 4 and row.total_rounds == max(total, 4)
            continue
        assert result.code == 2, (at, result)
        assert result.err.startswith(ERROR) and result.err.count("\n") == 1, result.err
        assert "No space left on device" in result.err
        assert contents(run) == before, f"os.{step} call {at}: the save changed"
        assert store.read_meta("r").total_rounds == total
        (row,) = store.list_runs()
        assert row.ok and row.rounds_done == 3, row
        assert not list(saves.rglob("*.tmp"))
        assert [p.name for p in saves.glob(".*")] in ([], [".verified"])  # verdicts (a cache)
    shutil.rmtree(run)
    shutil.copytree(spare, run)
    assert socialsim(*argv).code == 0  # room on the disk again: the round plays
    assert store.list_runs()[0].rounds_done == 4
    assert store.read_meta("r").total_rounds == max(total, 4)
