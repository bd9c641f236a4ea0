"""``show`` and ``diff`` print matrices that fit the terminal and never cut a cell: pages of
whole columns in faction order, ``--agent``, ``--faction``, ``--long`` (issue 26); ``list``
newest first with snapshot names."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from engine import ForcedAction, Mode, SaveStore, Simulation, resolve_scenario

VILLAGE = "village-assembly"
CELL = re.compile(r"[+-]\d\.\d\d[+·~x]")


@pytest.fixture
def village(tmp_path: Path) -> tuple[Path, SaveStore]:
    """Run ``va`` (3 rounds of the village) and ``vb``, branched after round 1 with Agnes
    attacking Walter in round 2 (so the two differ), in a saves folder."""
    store = SaveStore(tmp_path / "saves")

    async def play() -> None:
        with Simulation.new(resolve_scenario(VILLAGE), store=store, run_id="va", rounds=3) as sim:
            await sim.run()
        store.branch("va", 1, new_id="vb")
        with Simulation.resume("vb", store) as sim:
            sim.force(
                ForcedAction(
                    agent="Agnes", mode=Mode.PUBLIC, target="Walter", utterance="You sold us out!"
                )
            )
            await sim.run()

    asyncio.run(play())
    return tmp_path / "saves", store


def matrix_part(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("favorability"))
    return lines[start:]


@pytest.mark.parametrize("columns", [80, 160])
def test_show_pages_every_cell_whole_within_the_width(run_cli, village, monkeypatch, columns):
    saves, store = village
    monkeypatch.setenv("COLUMNS", str(columns))
    result = run_cli("show", "va", "--saves", str(saves))
    assert result.code == 0, result.err
    part = matrix_part(result.out)
    assert all(len(line) <= columns for line in part)
    pages = [ln for ln in part if ln.startswith("favorability (row → column)")]
    assert len(pages) > 1 and f"(page {len(pages)}/{len(pages)})" in pages[-1]
    state = store.history("va")[-1].state
    # Every directed edge is printed once, whole, with its status glyph.
    cells = [
        c
        for ln in part
        if ln[:3] in ("VF ", "TF ", "PC ", "VT ", "NE ", "CE ", "NO ")
        for c in CELL.findall(ln)
    ]
    assert len(cells) == 32 * 31
    rel = state.agents["Agnes"].relations["Walter"]
    first_row = next(ln for ln in part if ln.startswith("VF Agnes"))
    assert f"{rel.fav:+.2f}" in first_row
    assert "Agn…" not in result.out and "+0…" not in result.out


def test_show_one_agent_one_faction_and_the_long_format(run_cli, village, monkeypatch):
    saves, store = village
    monkeypatch.setenv("COLUMNS", "80")
    state = store.history("va")[-1].state
    agent = run_cli("show", "va", "--saves", str(saves), "--agent", "Walter")
    assert agent.code == 0
    rows = {ln.split()[1]: ln.split()[2:] for ln in matrix_part(agent.out)[2:] if ln[:3] == "VF "}
    out, into = state.agents["Walter"].relations["Agnes"], state.agents["Agnes"].relations["Walter"]
    assert rows["Agnes"][0].startswith(f"{out.fav:+.2f}") and rows["Agnes"][1].startswith(
        f"{into.fav:+.2f}"
    )
    faction = run_cli("show", "va", "--saves", str(saves), "--faction", "PC")
    assert "faction parish council, columns 1-4 of 4" in faction.out
    long = run_cli("show", "va", "--saves", str(saves), "--long", "--faction", "chapel elders")
    edges = [
        ln.split()
        for ln in matrix_part(long.out)[2:]
        if ln.split()[:1] in (["Ezra"], ["Mabel"], ["Percy"])
    ]
    assert len(edges) == 6  # 3 members, both ways
    ezra = state.agents["Ezra"].relations["Mabel"]
    assert ["Ezra", "Mabel", f"{ezra.fav:+.4f}", ezra.status.value] in edges


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--agent", "Nobody"], "--agent Nobody: no such agent"),
        (["--faction", "bakers"], "--faction bakers: no such faction"),
        (["--agent", "Agnes", "--faction", "PC"], "give one of them"),
    ],
)
def test_bad_matrix_options_are_one_line_and_exit_2(run_cli, village, args, words):
    saves, _ = village
    for command in (["show", "va"], ["diff", "va", "vb"]):
        result = run_cli(*command, "--saves", str(saves), *args)
        assert result.code == 2 and words in result.err and len(result.err.splitlines()) == 1


@pytest.mark.parametrize("columns", [80, 160])
def test_diff_fits_and_narrows_down(run_cli, village, monkeypatch, columns):
    saves, store = village
    monkeypatch.setenv("COLUMNS", str(columns))
    full = run_cli("diff", "va", "vb", "--saves", str(saves))
    assert full.code == 0, full.err
    heat = [ln for ln in full.out.splitlines() if ln.startswith("Δ fav = B − A (row")]
    assert heat and all(len(ln) <= columns for ln in full.out.splitlines() if ln[:3] == "VF ")
    one = run_cli("diff", "va", "vb", "--saves", str(saves), "--agent", "Walter")
    lines = [
        ln.split() for ln in one.out.splitlines() if ln.startswith("Agnes  ") and "Walter" in ln
    ]
    a = store.history("va")[2].state.agents["Agnes"].relations["Walter"]
    b = store.history("vb")[2].state.agents["Agnes"].relations["Walter"]
    assert any(row[:4] == ["Agnes", "Walter", f"{a.fav:+.3f}", f"{b.fav:+.3f}"] for row in lines)
    long = run_cli("diff", "va", "vb", "--saves", str(saves), "--long", "--faction", "VF")
    assert (
        len(
            [
                ln
                for ln in long.out.splitlines()
                if re.match(r"(Agnes|Walter|Bethan|Huw|Ivy|Reuben|Tomasz) ", ln)
            ]
        )
        >= 42
    )


def test_list_is_newest_first_with_snapshot_names(run_cli, village):
    saves, store = village
    for run_id, created in (
        ("va", "2026-01-01T00:00:00+00:00"),
        ("vb", "2026-01-02T00:00:00+00:00"),
    ):
        meta = store.read_meta(run_id)
        store.write_meta(meta.model_copy(update={"created": created}))
    with Simulation.resume("va", store) as sim:
        sim.snapshot("before the vote")
    result = run_cli("list", "--saves", str(saves))
    rows = [ln.split()[0] for ln in result.out.splitlines()[1:]]
    assert rows == ["vb", "va"]
    assert "snapshots before the vote@3" in result.out.splitlines()[2]
