"""Saves of format 4 (tests/fixtures/saves_v4, written at 172b6fa: keyframes as state
models, relation changes as named columns) still open: list, export (byte for byte as
that release exported them, but for the columns appended since), every round's state,
resume and branch, which write format 5 beside the old files. Every test works on a copy of
the fixtures."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import CliResult

from engine import FORMAT_VERSION, SaveStore, Simulation, resolve_scenario
from engine.core.scenario import Scenario
from engine.core.state import RoundRecord
from engine.minds.spec import DYNAMICS_VERSION, Offline
from engine.round.replay import replay_run

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
    # flaw, at_cap, left_out, cached_tokens, endpoint; degenerate, at_cap, left_out and the
    # cache's three
    later = {"llm_calls.csv": 5, "usage.csv": 6}
    for name in names:
        got = (out / name).read_text()
        if name in later:
            got = "".join(line.rsplit(",", later[name])[0] + "\n" for line in got.splitlines())
        assert got == (golden / name).read_text(), name


async def test_every_state_of_a_v4_run_is_the_one_played(saves: Path) -> None:
    """Each round read back from format 4 is the round a fresh run of the same seed plays
    with the dynamics it was played with (version 1: saved before versions were recorded)."""
    store = SaveStore(saves)
    assert store.read_meta("plain").mind == Offline(dynamics=1)
    fresh = Simulation.new(resolve_scenario("tavern"), seed=1, rounds=12, mind=Offline(dynamics=1))
    await fresh.run()
    assert list(store.history("plain")) == list(fresh.records)
    assert list(store.history("plain-branch")) == list(fresh.records)


async def test_a_v4_run_plays_on_in_the_current_format(saves: Path) -> None:
    """Resumed, a format-4 run keeps its files and writes format 8 (its keyframe as
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
    assert store.read_meta("values").format_version == FORMAT_VERSION == 10
    assert list(store.history("values")) == played
    with Simulation.resume("values", store) as reopened:
        assert reopened.round == 21 and reopened.state == played[-1].state
    child = store.branch("values", at_round=15, new_id="child")
    assert child.parent is not None
    assert list(store.history("child")) == played[:16]


@pytest.mark.parametrize("run_id", RUNS)
async def test_a_v4_offline_run_replays_as_it_was_played(saves: Path, run_id: str) -> None:
    """Saved before the offline dynamics had versions, a run replays with version 1, round
    for round as it was played; the replay records the version it played."""
    store = SaveStore(saves)
    result = await replay_run(store, run_id, f"{run_id}-again")
    assert result.identical, result.diverged
    assert store.read_meta(f"{run_id}-again").dynamics == 1


async def test_a_resumed_v4_run_keeps_its_dynamics_and_a_new_run_records_the_newest(
    saves: Path,
) -> None:
    store = SaveStore(saves)
    with Simulation.resume("values", store) as sim:
        assert sim.mind.spec == Offline(dynamics=1)
    assert store.read_meta("values").dynamics == 1
    new = Simulation.new(resolve_scenario("tavern"), seed=1, rounds=2, store=store, run_id="new")
    new.close()
    assert store.read_meta("new").dynamics == DYNAMICS_VERSION > 1
    assert json.loads((saves / "new" / "run.json").read_text())["run"]["1"]["dynamics"] == 5
    assert DYNAMICS_VERSION == 5


async def test_a_run_played_with_dynamics_2_resumes_and_replays_with_dynamics_2(
    tmp_path: Path,
) -> None:
    """A run saved with version 2 of the offline dynamics plays on with version 2 after it
    was saved and resumed, round for round as one played through, and replays identically;
    the newest version plays the same seed differently."""
    store, bullying = SaveStore(tmp_path / "saves"), resolve_scenario("bullying")
    two = Offline(dynamics=2)
    await _saved_resumed_replayed(store, bullying, two, seed=3, rounds=14)
    through = Simulation.new(bullying, seed=3, rounds=14, mind=two)
    await through.run()
    assert list(store.history("two")) == list(through.records)
    assert store.read_meta("two-again").dynamics == 2
    newest = Simulation.new(bullying, seed=3, rounds=14)
    await newest.run()
    assert newest.records[-1].state != through.records[-1].state


async def test_a_version_4_run_keeps_its_words_saved_resumed_and_replayed(tmp_path: Path) -> None:
    """Tavern, seed 4: Greta confides her mortgage to Silas in round 1. Version 5 says it
    in the first person throughout; a run saved with version 4 keeps version 4's words."""
    store, tavern = SaveStore(tmp_path / "saves"), resolve_scenario("tavern")

    def confided(records: Iterable[RoundRecord]) -> str:
        return next(a.utterance for r in records for a in r.actions if "liable" in a.utterance)

    new = Simulation.new(tavern, seed=4, rounds=2)
    assert "mortgage on the building and am personally liable" in confided(await new.run())
    await _saved_resumed_replayed(store, tavern, Offline(dynamics=4), seed=4, rounds=2)
    said = confided(store.history("four"))
    assert "mortgage on the building and is personally liable" in said


async def _saved_resumed_replayed(
    store: SaveStore, scenario: Scenario, mind: Offline, *, seed: int, rounds: int
) -> None:
    """Play half of a run saved with ``mind``'s dynamics, resume it with them to its end,
    and replay it identically (runs "two", "four", ... by the version, and "-again")."""
    run_id = {2: "two", 4: "four"}[mind.dynamics]
    with Simulation.new(
        scenario, seed=seed, rounds=rounds, store=store, run_id=run_id, mind=mind
    ) as sim:
        await sim.run(rounds // 2)
    with Simulation.resume(run_id, store) as resumed:
        assert resumed.mind.spec == mind
        await resumed.run()
    result = await replay_run(store, run_id, f"{run_id}-again")
    assert result.identical, result.diverged
