"""Saves of format 2 (tests/fixtures/saves_v2, written by the release before format 3) still
open: list, show, export (byte for byte as that release exported them), resume, branch and
replay. Every test works on a copy of the fixtures."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from conftest import CliResult

from engine import FORMAT_VERSION, SaveStore, Simulation
from engine.reports.tables import current_columns
from engine.round.replay import replay_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = ("plain", "plain-branch", "intervened", "measured", "measured-support", "llm-stub")


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    """A writable copy of the format-2 fixture saves."""
    return Path(shutil.copytree(FIXTURES / "saves_v2", tmp_path / "saves"))


def test_list_shows_every_v2_run_as_healthy(saves: Path) -> None:
    rows = {r.run_id: r for r in SaveStore(saves).list_runs()}
    assert sorted(rows) == sorted(RUNS)
    assert all(r.ok for r in rows.values()), [r.reason for r in rows.values() if not r.ok]
    assert (rows["plain"].rounds_done, rows["plain"].total_rounds) == (3, 3)
    assert (rows["intervened"].rounds_done, rows["intervened"].total_rounds) == (3, 4)
    assert rows["plain-branch"].parent is not None
    assert (rows["plain-branch"].parent.run_id, rows["plain-branch"].parent.round) == ("plain", 1)
    assert rows["measured-support"].rounds_done == 2


@pytest.mark.parametrize("run_id", RUNS)
def test_export_of_a_v2_run_is_what_the_old_release_wrote(
    run_cli, saves: Path, tmp_path: Path, run_id: str
) -> None:
    out = tmp_path / "out"
    result: CliResult = run_cli("export", run_id, "--out", str(out), "--saves", str(saves))
    assert result.code == 0, result.err
    golden = FIXTURES / "exports_v2" / run_id
    names = sorted(p.name for p in golden.iterdir())
    assert (out / "card.json").is_file()  # the run card came later (versions vary)
    later = {"card.json", "agents.csv"}  # agents.csv came with CSV schema 2
    assert sorted(p.name for p in out.iterdir() if p.name not in later) == names
    for name in names:
        got = (out / name).read_text()
        if name == "transcript.csv":  # actor and player were appended after format 2
            got = "".join(line.rsplit(",", 2)[0] + "\n" for line in got.splitlines())
        if name == "metrics.csv":  # the unit was appended with CSV schema 2
            got = "".join(line.rsplit(",", 1)[0] + "\n" for line in got.splitlines())
        if name == "llm_calls.csv":  # clamped, counted_by, sent_tokens, flaw, at_cap, left_out,
            # cached_tokens, endpoint came later
            got = "".join(line.rsplit(",", 8)[0] + "\n" for line in got.splitlines())
        if name == "usage.csv":  # clamped, degenerate, at_cap, left_out and the cache's three
            got = "".join(line.rsplit(",", 7)[0] + "\n" for line in got.splitlines())
        header, _, rows = (golden / name).read_text().partition("\n")
        # The old release wrote CSV schema 1: its names read as today's (round_no, ...).
        renamed = ",".join(current_columns(header.split(","), 1))
        assert got == f"{renamed}\n{rows}", name


def test_show_of_a_v2_run_reads_its_rounds(run_cli, saves: Path) -> None:
    result = run_cli("show", "intervened", "--saves", str(saves))
    assert result.code == 0, result.err
    assert "3/4" in result.out
    assert "The notary calls to say the will has a codicil." in result.out  # pending
    assert "after the fire @ round 2" in result.out
    early = run_cli("show", "intervened", "--round", "2", "--saves", str(saves))
    assert early.code == 0, early.err
    assert "Round 2/4" in early.out
    assert "I will not sell the Goose to anyone" in early.out  # the forced turn


def test_state_of_a_v2_run_matches_its_export(saves: Path) -> None:
    """The emotions read back are the ones the old release exported, round by round."""
    store = SaveStore(saves)
    with Simulation.resume("plain", store) as sim:
        got = [
            f"plain,{r.round},{name},{agent.emotion}"
            for r in sim.records
            for name, agent in r.state.agents.items()
        ]
    lines = (FIXTURES / "exports_v2" / "plain" / "emotions.csv").read_text().splitlines()
    assert got == [line.rsplit(",", 1)[0] for line in lines[1:]]


async def test_resume_a_v2_run_plays_on_in_format_3(saves: Path) -> None:
    """The format-2 files stay as they are; the new rounds are format 3; reopened, every
    round reads back as it was played, and a second resume of the same save plays the
    same rounds (the state read from format 2 is the one it saved)."""
    rounds = saves / "plain" / "rounds"
    old = {p.name: p.read_bytes() for p in rounds.iterdir()}
    twin = shutil.copytree(saves / "plain", saves / "twin")
    store = SaveStore(saves)
    played = []
    for run_id in ("plain", "twin"):
        sim = Simulation.resume(run_id, store)
        try:
            sim.extend(2)
            await sim.run()
            played.append(list(sim.records))
        finally:
            sim.close()
    assert played[0] == played[1]
    assert [r.round for r in played[0]] == [0, 1, 2, 3, 4, 5]
    assert {p.name: p.read_bytes() for p in rounds.iterdir() if p.name in old} == old
    assert sorted(p.name for p in rounds.iterdir() if p.name not in old) == [
        "000004.json.gz",
        "000005.json.gz",
    ]
    assert store.read_meta("plain").format_version == FORMAT_VERSION
    assert list(store.history("plain")) == played[0]
    assert store.history(twin.name).metrics_series() == store.history("plain").metrics_series()
    with Simulation.resume("plain", store) as reopened:
        assert reopened.round == 5
        assert reopened.state == played[0][-1].state


async def test_pending_intervention_of_a_v2_run_is_played_on_resume(saves: Path) -> None:
    store = SaveStore(saves)
    sim = Simulation.resume("intervened", store)
    try:
        assert [e.text for e in sim.pending.events] == [
            "The notary calls to say the will has a codicil."
        ]
        record = await sim.step()
    finally:
        sim.close()
    assert "The notary calls to say the will has a codicil." in [e.text for e in record.events]
    assert not SaveStore(saves).read_meta("intervened").pending.events


async def test_branch_of_a_v2_run_keeps_its_rounds_and_plays_on(saves: Path) -> None:
    store = SaveStore(saves)
    with Simulation.resume("intervened", store) as parent:
        parent_states = [r.state for r in parent.records]
        child = parent.branch(2, run_id="fork")
    try:
        assert child.round == 2
        assert [r.state for r in child.records] == parent_states[:3]
        await child.step()
        assert child.round == 3
    finally:
        child.close()
    shutil.rmtree(saves / "intervened")
    with Simulation.resume("fork", SaveStore(saves)) as reopened:
        assert [r.state for r in reopened.records][:3] == parent_states[:3]
        assert reopened.round == 3


def test_replay_of_a_v2_llm_run_is_identical(saves: Path) -> None:
    result = asyncio.run(replay_run(SaveStore(saves), "llm-stub", "llm-replayed"))
    result.sim.close()
    assert result.rounds == 2
    assert result.identical, result.diverged
