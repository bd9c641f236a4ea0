"""``list`` reads a run's row from head.json, kept beside run.json, without parsing run.json
(issue 38, point 5); a head that is missing, stale or damaged is not believed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import engine.saves.headfile
from engine import FORMAT_VERSION, SaveStore, Simulation
from engine.core.scenario import Scenario
from engine.saves.headfile import HEAD_FILE
from engine.saves.store import META_FILE


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths of the run.json files read whole from now on."""
    seen: list[Path] = []
    real = engine.saves.headfile.read_bytes

    def read_bytes(path: Path) -> bytes:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(engine.saves.headfile, "read_bytes", read_bytes)
    return seen


async def saved(store: SaveStore, scenario: Scenario, run_id: str, rounds: int = 2) -> None:
    with Simulation.new(scenario, seed=1, store=store, run_id=run_id, rounds=4) as sim:
        await sim.run(rounds)


def rows(store: SaveStore) -> dict:
    return {row.run_id: row for row in store.list_runs()}


async def test_a_row_is_read_from_the_head_without_parsing_run_json(
    store: SaveStore, mini: Scenario, reads: list[Path]
) -> None:
    await saved(store, mini, "r")
    meta = store.read_meta("r")
    store.write_meta(meta.model_copy(update={"name": "renamed"}))
    reads.clear()
    row = rows(store)["r"]
    assert reads == []  # run.json was not read, let alone parsed
    assert (row.ok, row.name, row.title, row.rounds_done, row.total_rounds) == (
        True,
        "renamed",
        mini.title,
        2,
        4,
    )
    assert row.metrics is not None
    assert os.path.getsize(store.run_dir("r") / HEAD_FILE) < 4096


async def test_a_run_without_a_head_lists_as_before(
    store: SaveStore, mini: Scenario, reads: list[Path]
) -> None:
    """A run saved before heads were kept is listed from its run.json."""
    await saved(store, mini, "r")
    kept = rows(store)["r"]
    (store.run_dir("r") / HEAD_FILE).unlink()
    reads.clear()
    assert rows(store)["r"] == kept
    assert reads == [store.run_dir("r") / META_FILE]


async def test_a_head_not_taken_from_run_json_as_it_is_is_not_believed(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.json edited in place, a head written for another run or copied along with the
    folder, a head whose write failed after run.json's: the row is read from run.json."""
    await saved(store, mini, "r")
    await saved(store, mini, "other")
    path = store.run_dir("r") / META_FILE
    path.write_text(path.read_text().replace('"name":""', '"name":"edited"', 1))
    assert rows(store)["r"].name == "edited"
    shutil.copyfile(store.run_dir("other") / HEAD_FILE, store.run_dir("r") / HEAD_FILE)
    assert rows(store)["r"].name == "edited"
    shutil.copytree(store.run_dir("other"), store.root / "copy", copy_function=shutil.copy2)
    assert rows(store)["copy"].ok and rows(store)["copy"].name == ""

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.saves.headfile, "atomic_write_bytes", full)
    meta = store.read_meta("other")
    store.write_meta(meta.model_copy(update={"name": "after a failed head"}))
    assert rows(store)["other"].name == "after a failed head"


@pytest.mark.parametrize("bad", ["garbage", "fifo", "symlink", "folder"])
async def test_a_damaged_head_is_not_believed(store: SaveStore, mini: Scenario, bad: str) -> None:
    await saved(store, mini, "r")
    kept = rows(store)["r"]
    head = store.run_dir("r") / HEAD_FILE
    head.unlink()
    if bad == "garbage":
        head.write_bytes(b'{"of": [1, 2, 3, 4], "head": {"format_version": "x"')
    elif bad == "fifo":
        os.mkfifo(head)
    elif bad == "symlink":
        head.symlink_to(store.run_dir("r") / META_FILE)
    else:
        head.mkdir()
    assert rows(store)["r"] == kept


async def test_a_head_of_a_newer_format_is_refused_like_its_run_json(
    store: SaveStore, mini: Scenario
) -> None:
    await saved(store, mini, "r")
    meta = store.read_meta("r")
    store.write_meta(meta.model_copy(update={"format_version": FORMAT_VERSION + 1}))
    row = rows(store)["r"]
    assert not row.ok and f"save format {FORMAT_VERSION + 1}" in row.reason
