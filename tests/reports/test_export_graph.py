"""``export --graphml`` (one GraphML file per round, read back with networkx) and
``export --parquet`` (the tables as Parquet, read back with pyarrow)."""

from __future__ import annotations

import asyncio
import csv
import sys
from pathlib import Path

import networkx as nx
import pyarrow.parquet as pq
import pytest

from engine import SaveStore, Scenario, Simulation
from engine.core.priors import parse_prior, sign_index
from engine.core.scenario import parse_scenario
from engine.core.state import ForcedAction, Mode
from engine.errors import SocialsimError
from engine.reports.export import COLUMNS, export_run

ROUNDS = 3
ODD = 'A&B <"Q">'  # a name XML must escape


@pytest.fixture
def odd(mini_data: dict) -> Scenario:
    """The mini scenario with Cy renamed to a name full of XML's special characters."""
    rename = {"Cy": ODD}
    for agent in mini_data["agents"]:
        agent["name"] = rename.get(agent["name"], agent["name"])
    for rel in mini_data["relations"]:
        rel["from"], rel["to"] = (rename.get(rel[k], rel[k]) for k in ("from", "to"))
    mini_data["factions"]["members"] = ["Bob", ODD]
    return parse_scenario(mini_data, "odd")


@pytest.fixture
def run(store: SaveStore, odd: Scenario) -> str:
    """A three-round run with a signed trust prior and a forced formula-like utterance."""
    prior = parse_prior("trust:complete:+,-,+", odd.names)

    async def play() -> None:
        with Simulation.new(odd, seed=5, store=store, run_id="net", prior=prior) as sim:
            await sim.step()
            sim.force(
                ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="all", utterance="=SUM(1)")
            )
            await sim.run(ROUNDS - 1)

    asyncio.run(play())
    return "net"


def test_graphml_round_trips_through_networkx(run: str, store: SaveStore, tmp_path: Path):
    meta = store.read_meta(run)
    history = store.history(run, meta)
    paths = export_run(meta, history, tmp_path / "out", formats=["graphml"])
    folder = tmp_path / "out" / "graphml"
    assert paths[-1] == folder
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"round_{r:06d}.graphml" for r in range(ROUNDS + 1)]
    signs = sign_index(meta.prior)
    assert signs and any(s < 0 for row in signs.values() for s in row.values())
    for record, path in zip(history, files, strict=True):
        g = nx.read_graphml(path)
        assert g.is_directed()
        assert g.graph["round"] == record.round and g.graph["run_id"] == run
        assert g.graph["prior_relation"] == "trust"
        agents = record.state.agents
        assert set(g.nodes) == set(agents) and ODD in g
        for name, agent in agents.items():
            assert g.nodes[name]["emotion"] == agent.emotion
            assert g.nodes[name]["archetype"] == meta.scenario.agent(name).archetype.value
        assert g.number_of_edges() == sum(len(a.relations) for a in agents.values())
        for source, agent in agents.items():
            for target, rel in agent.relations.items():
                data = g.edges[source, target]
                assert data["fav"] == rel.fav  # exact: written with repr
                assert data["status"] == rel.status.value
                assert data.get("prior") == signs.get(source, {}).get(target)
    assert g.nodes["Ann"]["faction"] == "board"


def test_graph_favorability_changes_over_rounds(run: str, store: SaveStore, tmp_path: Path):
    meta = store.read_meta(run)
    export_run(meta, store.history(run, meta), tmp_path / "out", formats=["graphml"])
    first = nx.read_graphml(tmp_path / "out" / "graphml" / "round_000000.graphml")
    last = nx.read_graphml(tmp_path / "out" / "graphml" / f"round_{ROUNDS:06d}.graphml")
    favs = [(first.edges[e]["fav"], last.edges[e]["fav"]) for e in first.edges]
    assert any(a != b for a, b in favs)


def test_an_export_without_graphml_replaces_one_with_it(run: str, store: SaveStore, tmp_path):
    meta = store.read_meta(run)
    out = tmp_path / "out"
    export_run(meta, store.history(run, meta), out, formats=["graphml"])
    assert (out / "graphml").is_dir()
    export_run(meta, store.history(run, meta), out)
    assert not (out / "graphml").exists() and (out / "card.json").is_file()


def test_graphml_beside_other_files_replaces_the_earlier_folder(run, store: SaveStore, tmp_path):
    meta = store.read_meta(run)
    out = tmp_path / "out"
    export_run(meta, store.history(run, meta), out, formats=["graphml"])
    (out / "notes.txt").write_text("mine")
    (out / "graphml" / "round_000099.graphml").write_text("stale")
    export_run(meta, store.history(run, meta), out, formats=["graphml"])
    assert (out / "notes.txt").read_text() == "mine"
    assert len(list((out / "graphml").iterdir())) == ROUNDS + 1


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_parquet_tables_hold_the_csv_rows_typed(run: str, store: SaveStore, tmp_path: Path):
    meta = store.read_meta(run)
    measured = store.read_measurements(run)
    export_run(meta, store.history(run, meta), tmp_path / "csv", measured)
    paths = export_run(
        meta, store.history(run, meta), tmp_path / "pq", measured, formats=["parquet"]
    )
    assert [p.name for p in paths] == [*(f"{n}.parquet" for n in COLUMNS), "card.json"]
    for name, columns in COLUMNS.items():
        table = pq.read_table(tmp_path / "pq" / f"{name}.parquet")
        assert tuple(table.column_names) == columns
        rows = table.to_pylist()
        expected = _csv(tmp_path / "csv" / f"{name}.csv")
        assert len(rows) == len(expected), name
        for got, want in zip(rows, expected, strict=True):
            for column in columns:
                value, text = got[column], want[column]
                if value is None:
                    assert text == "", (name, column)
                elif isinstance(value, str):
                    # the CSV guards formula cells with an apostrophe; Parquet keeps the text
                    assert text in (value, "'" + value), (name, column)
                else:
                    assert value == type(value)(text), (name, column)
    relations = pq.read_table(tmp_path / "pq" / "relations.parquet").schema
    assert str(relations.field("round_no").type) == "int64"
    assert str(relations.field("fav").type) == "double"
    transcript = pq.read_table(tmp_path / "pq" / "transcript.parquet").to_pylist()
    assert "=SUM(1)" in {r["utterance"] for r in transcript}


def test_parquet_without_pyarrow_is_one_line_and_writes_nothing(
    run: str, store: SaveStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    meta = store.read_meta(run)
    with pytest.raises(SocialsimError, match=r"--parquet needs pyarrow, which is missing"):
        export_run(meta, store.history(run, meta), tmp_path / "out", formats=["parquet"])
    result = run_cli(
        "export", run, "--out", str(tmp_path / "cli"), "--parquet", "--saves", str(store.root)
    )
    assert result.code == 2
    assert result.err == (
        "socialsim: error: --parquet needs pyarrow, which is missing from this Python: the "
        "install is incomplete; reinstall socialsim (pip install -e . in its folder)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saves"]


def test_cli_export_graphml_prints_the_folder(run: str, store: SaveStore, tmp_path: Path, run_cli):
    out = tmp_path / "out"
    result = run_cli("export", run, "--out", str(out), "--graphml", "--saves", str(store.root))
    assert result.code == 0, result.err
    printed = result.out.split()
    assert printed[-2:] == [str(out / "card.json"), str(out / "graphml")]
    assert len(list((out / "graphml").glob("*.graphml"))) == ROUNDS + 1
