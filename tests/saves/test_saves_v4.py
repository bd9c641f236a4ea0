"""Saves of format 4 (tests/fixtures/saves_v4, written at 172b6fa: keyframes as state
models, relation changes as named columns) still open: list, export (byte for byte as
that release exported them), every round's state, resume and branch, which write format
5 beside the old files. Every test works on a copy of the fixtures."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from conftest import CliResult

from engine import FORMAT_VERSION, SaveStore, Simulation, resolve_scenario

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = ("plain", "plain-branch", "values")


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    """A writable copy of the format-4 fixture saves."""
    return Path(shutil.copytree(FIXTURES / "saves_v4", tmp_path / "saves"))


def test_the_fixtures_are_format_4() -> None:
    doc = json.loads(
        gzip.decompress((FIXTURES / "saves_v4/plain/rounds/000010.json.gz").read_bytes())
    )
    assert "state" in doc["keyframe"] and "summary" in doc["relations"]


def test_list_shows_every_v4_run_as_healthy(saves: Path) -> None:
    rows = {r.run_id: r for r in SaveStore(saves).list_runs()}
    assert sorted(rows) == sorted(RUNS)
    assert all(r.ok for r in rows.values()), [r.reason for r in rows.values() if not r.ok]
    assert rows["plain"].rounds_done == rows["plain-branch"].rounds_done == 12


@pytest.mark.parametrize("run_id", RUNS)
def test_export_of_a_v4_run_is_what_the_old_release_wrote(
    run_cli, saves: Path, tmp_path: Path, run_id: str
) -> None:
    out = tmp_path / "out"
    result: CliResult = run_cli("export", run_id, "--out", str(out), "--saves", str(saves))
    assert result.code == 0, result.err
    golden = FIXTURES / "exports_v4" / run_id
    names = sorted(p.name for p in golden.iterdir() if p.name != "card.json")
    for name in names:
        assert (out / name).read_text() == (golden / name).read_text(), name


async def test_every_state_of_a_v4_run_is_the_one_played(saves: Path) -> None:
    """Each round read back from format 4 is the round a fresh run of the same seed plays."""
    store = SaveStore(saves)
    fresh = Simulation.new(resolve_scenario("tavern"), seed=1, rounds=12)
    await fresh.run()
    assert list(store.history("plain")) == list(fresh.records)
    assert list(store.history("plain-branch")) == list(fresh.records)


async def test_a_v4_run_plays_on_in_the_current_format(saves: Path) -> None:
    """Resumed, a format-4 run keeps its files and writes format 6 (its keyframe as
    packed columns); reopened, every round reads back as played."""
    rounds = saves / "values" / "rounds"
    old = {p.name: p.read_bytes() for p in rounds.iterdir()}
    store = SaveStore(saves)
    with Simulation.resume("values", store) as sim:
        sim.extend(10)
        await sim.run()
        played = list(sim.records)
    assert {p.name: p.read_bytes() for p in rounds.iterdir() if p.name in old} == old
    keyframe = json.loads(gzip.decompress((rounds / "000020.json.gz").read_bytes()))["keyframe"]
    assert "packed" in keyframe and keyframe.get("state") is None
    assert store.read_meta("values").format_version == FORMAT_VERSION == 6
    assert list(store.history("values")) == played
    with Simulation.resume("values", store) as reopened:
        assert reopened.round == 21 and reopened.state == played[-1].state
    child = store.branch("values", at_round=15, new_id="child")
    assert child.parent is not None
    assert list(store.history("child")) == played[:16]
