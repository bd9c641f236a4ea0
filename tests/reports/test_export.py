"""Tidy CSV export (engine.reports.export), checked against the saved run it came from."""

from __future__ import annotations

import asyncio
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine import (
    ForcedAction,
    Mode,
    RoundRecord,
    RunMeta,
    SaveError,
    SaveStore,
    Scenario,
    Simulation,
    Status,
)
from engine.core.metrics import METRIC_UNITS
from engine.core.needs import CATEGORY_OF, NEEDS
from engine.reports.card import CSV_SCHEMA
from engine.reports.export import COLUMNS, export_run
from engine.reports.tables import current_columns
from tui import cli

ROUNDS = 3
SECRET = "sk-test-secret"
METRICS = {"mean_fav", "mean_emotion", "reciprocity", "ei_index", "balance", "repair"}
TRICKY = 'Bob says "no", firmly;\nthen, after a pause: [laughs] ünïcödé'


@pytest.fixture
def saved(store: SaveStore, mini: Scenario) -> tuple[RunMeta, list[RoundRecord]]:
    """A finished three-round run of the mini scenario with one forced action and one
    injected event in round 2, as read back from its save."""

    async def play() -> None:
        with Simulation.new(mini, seed=7, store=store, run_id="exp", rounds=ROUNDS) as sim:
            await sim.step()
            sim.force(ForcedAction(agent="Bob", mode=Mode.PRIVATE, target="Cy", utterance=TRICKY))
            sim.inject("A storm cuts the power.", private_to=["Ann", "Cy"])
            await sim.run()

    asyncio.run(play())
    return store.read_meta("exp"), store.read_rounds("exp")


@pytest.fixture
def tables(saved, tmp_path: Path) -> dict[str, list[dict[str, str]]]:
    """The exported CSVs, loaded back with the csv module."""
    meta, records = saved
    paths = export_run(meta, records, tmp_path / "out")
    assert [p.name for p in paths] == [*(f"{name}.csv" for name in COLUMNS), "card.json"]
    return {p.stem: read_csv(p) for p in paths if p.suffix == ".csv"}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        assert tuple(reader.fieldnames or ()) == COLUMNS[path.stem]
    return rows


def optional(text: str, kind: type = float) -> float | int | None:
    """An empty cell is a missing value."""
    return None if text == "" else kind(text)


def test_headers_are_the_documented_columns(tables):
    assert set(tables) == set(COLUMNS)
    for name, rows in tables.items():
        # the offline model makes no calls; this run has no surveys or ratings
        assert rows or name in {"llm_calls", "usage", "surveys", "ratings"}
        for row in rows:
            assert row["run_id"] == "exp"
            assert None not in row  # no row longer than the header
            assert None not in row.values()  # no row shorter than the header


def test_relations_has_every_directed_edge_every_round(saved, tables):
    _, records = saved
    rows = tables["relations"]
    n = 3
    per_round = Counter(int(r["round_no"]) for r in rows)
    assert per_round == dict.fromkeys(range(ROUNDS + 1), n * (n - 1))
    for record in records:
        mine = [r for r in rows if int(r["round_no"]) == record.round]
        assert len({(r["source"], r["target"]) for r in mine}) == n * (n - 1)
        changes = {(c.source, c.target): c for c in record.relation_changes}
        for r in mine:
            assert r["source"] != r["target"]
            rel = record.state.agents[r["source"]].relations[r["target"]]
            assert float(r["fav"]) == rel.fav
            assert -1.0 <= float(r["fav"]) <= 1.0
            assert Status(r["status"]) is rel.status
            change = changes.get((r["source"], r["target"]))
            if change is None:
                assert float(r["delta"]) == 0.0
                assert r["importance"] == r["summary"] == r["override"] == ""
            else:
                assert float(r["delta"]) == change.delta
                assert int(r["importance"]) == change.importance
                assert r["summary"] == change.summary
                assert optional(r["override"], Status) == change.override
    assert all(r["delta"] == "0.0" for r in rows if r["round_no"] == "0")


def test_needs_has_thirteen_rows_per_agent_per_round(saved, tables):
    _, records = saved
    rows = tables["needs"]
    per_agent_round = Counter((int(r["round_no"]), r["agent"]) for r in rows)
    assert set(per_agent_round.values()) == {13}
    assert len(per_agent_round) == 3 * (ROUNDS + 1)
    for r in rows:
        assert r["need"] in NEEDS
        assert r["category"] == CATEGORY_OF[r["need"]]
        current, expected, gap = float(r["current"]), float(r["expected"]), float(r["gap"])
        assert 0.0 <= current <= 10.0 and 0.0 <= expected <= 10.0
        assert gap == max(0.0, expected - current)
        state = records[int(r["round_no"])].state.agents[r["agent"]].needs[r["need"]]
        assert (current, expected) == (state.current, state.expected)


def test_emotions_has_one_row_per_agent_per_round(saved, tables):
    _, records = saved
    rows = tables["emotions"]
    assert len(rows) == 3 * (ROUNDS + 1)
    for r in rows:
        record = records[int(r["round_no"])]
        assert float(r["emotion"]) == record.state.agents[r["agent"]].emotion
        deltas = {c.agent: c.delta for c in record.emotion_changes}
        assert float(r["delta"]) == deltas.get(r["agent"], 0.0)


def test_transcript_rows_match_the_saved_actions(saved, tables):
    _, records = saved
    rows = tables["transcript"]
    assert {int(r["round_no"]) for r in rows} == set(range(1, ROUNDS + 1))
    for record in records[1:]:
        mine = [r for r in rows if int(r["round_no"]) == record.round]
        assert len(mine) == len(record.actions) == 3
        # Speakers in speaking order, then the silent agents (empty order).
        orders = [optional(r["order"], int) for r in mine]
        spoken = [o for o in orders if o is not None]
        assert spoken == list(range(1, len(spoken) + 1))
        assert orders == spoken + [None] * (len(orders) - len(spoken))
        by_speaker = {a.speaker: a for a in record.actions}
        for r in mine:
            a = by_speaker[r["speaker"]]
            assert optional(r["order"], int) == a.order
            assert Mode(r["speech_mode"]) is a.mode
            assert r["target"] == (a.target or "")
            assert r["stance"] == a.stance
            assert float(r["urgency"]) == a.urgency
            assert r["intent"] == a.intent
            assert r["utterance"] == a.utterance
            assert int(r["forced"]) == int(a.forced)
    forced = [r for r in rows if r["forced"] == "1"]
    assert len(forced) == 1
    assert (forced[0]["round_no"], forced[0]["speaker"], forced[0]["speech_mode"]) == (
        "2",
        "Bob",
        "private",
    )
    assert forced[0]["target"] == "Cy"
    # Quotes, commas, semicolons, newlines and non-ASCII survive the round trip.
    assert forced[0]["utterance"] == TRICKY


def test_events_keep_source_and_visibility(tables):
    rows = [(r["round_no"], r["source"], r["private_to"], r["text"]) for r in tables["events"]]
    assert rows == [
        ("1", "scripted", "", "The hall roof leaks again."),
        ("2", "scripted", "Bob", "Bob receives the bank statement."),
        ("2", "injected", "Ann;Cy", "A storm cuts the power."),
    ]


def test_metrics_are_named_per_round(tables):
    rows = tables["metrics"]
    for k in range(ROUNDS + 1):
        mine = {r["metric"]: optional(r["value"]) for r in rows if int(r["round_no"]) == k}
        assert set(mine) == METRICS
        assert isinstance(mine["mean_fav"], float) and -1.0 <= mine["mean_fav"] <= 1.0
        assert isinstance(mine["mean_emotion"], float) and 0.0 <= mine["mean_emotion"] <= 1.0
    assert len(rows) == len(METRICS) * (ROUNDS + 1)


def test_every_metric_row_carries_its_unit(tables):
    units = {r["metric"]: r["unit"] for r in tables["metrics"]}
    assert units == METRIC_UNITS
    assert units["balance"].startswith("percent") and units["mean_fav"] == "fav (-1..1)"


def test_agents_table_joins_faction_archetype_model_and_player(tables):
    rows = [tuple(r.values()) for r in tables["agents"]]
    assert rows == [
        ("exp", "Ann", "chair", "dominant", "board", "offline", ""),
        ("exp", "Bob", "treasurer", "reserved", "members", "offline", ""),
        ("exp", "Cy", "member", "agreeable", "members", "offline", ""),
    ]


def test_no_column_shadows_a_pandas_method():
    pandas = pytest.importorskip("pandas")
    taken = set(dir(pandas.DataFrame)) | set(dir(pandas.Series))
    assert {c for cols in COLUMNS.values() for c in cols} & taken == set()


def test_old_column_names_read_by_the_cards_schema_version(saved, tmp_path: Path):
    meta, records = saved
    export_run(meta, records, tmp_path / "out")
    card = json.loads((tmp_path / "out" / "card.json").read_text(encoding="utf-8"))
    assert card["csv_schema"] == CSV_SCHEMA == 2
    old = ["run_id", "round", "order", "speaker", "mode", "target"]
    assert current_columns(old, 1) == [
        "run_id",
        "round_no",
        "order",
        "speaker",
        "speech_mode",
        "target",
    ]
    assert current_columns(COLUMNS["transcript"], card["csv_schema"]) == list(COLUMNS["transcript"])


def test_the_card_records_each_interventions_mode_target_and_audience(saved, tmp_path: Path):
    meta, records = saved
    export_run(meta, records, tmp_path / "out")
    card = json.loads((tmp_path / "out" / "card.json").read_text(encoding="utf-8"))
    seen = [
        (i["kind"], i["agent"], i["mode"], i["target"], i["audience"])
        for i in card["interventions"]
    ]
    assert seen == [
        ("forced", "Bob", "private", "Cy", ["Bob", "Cy"]),
        ("injected", "", "private", "", ["Ann", "Cy"]),
    ]


def test_export_is_repeatable(saved, tmp_path: Path):
    meta, records = saved
    first = export_run(meta, records, tmp_path / "a")
    second = export_run(meta, records, tmp_path / "a")
    third = export_run(meta, records, tmp_path / "b")
    assert first == second
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in third]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in first)


def test_export_into_a_file_is_a_save_error(saved, tmp_path: Path):
    meta, records = saved
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SaveError, match=r"--out .*file: cannot create folder"):
        export_run(meta, records, blocker)


def test_cli_export_writes_tidy_csvs_without_secrets(
    saved, store: SaveStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "cli"
    monkeypatch.setattr(
        sys, "argv", ["socialsim", "export", "exp", "--out", str(out), "--saves", str(store.root)]
    )
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code in (0, None)
    printed = capsys.readouterr()
    assert printed.err == ""
    assert printed.out.split() == [
        *(str(out / f"{n}.csv") for n in COLUMNS),
        str(out / "card.json"),
    ]
    meta, records = saved
    expected = export_run(meta, records, tmp_path / "api")
    for path in expected:
        text = (out / path.name).read_bytes()
        assert text == path.read_bytes()
        assert SECRET.encode() not in text


def test_llm_tables_count_structured_answers_fallbacks_and_missing_edges(saved, tmp_path: Path):
    from engine.core.exchanges import LLMCall, RoundUsage

    def call(key: str, outcome: str, structured: str, **extra) -> LLMCall:
        return LLMCall(
            key=key,
            purpose="judge",
            agent="Ann",
            model="openai/m",
            messages=[],
            structured=structured,
            outcome=outcome,
            **extra,
        )

    calls = [
        call("r1:judge:Ann", "ok", "json_object", missing=["Bob", "Cy"]),
        call("r1:judge:Bob", "fallback", "json_schema", error="openai/m: no valid reply"),
        call("r1:speak:Cy", "ok", "text"),
    ]
    meta, records = saved
    played = records[1].model_copy(
        update={"llm_calls": calls, "usage": RoundUsage.of(calls, "batched")}
    )
    out = tmp_path / "llm"
    export_run(meta, [records[0], played, *records[2:]], out)
    rows = read_csv(out / "llm_calls.csv")
    assert [(r["key"], r["structured"], r["outcome"], r["missing"]) for r in rows] == [
        ("r1:judge:Ann", "json_object", "ok", "Bob;Cy"),
        ("r1:judge:Bob", "json_schema", "fallback", ""),
        ("r1:speak:Cy", "text", "ok", ""),
    ]
    (usage,) = read_csv(out / "usage.csv")
    assert usage["round_no"] == "1" and usage["judge_mode"] == "batched"
    counts = ("calls", "fallbacks", "structured", "structured_fallbacks", "missing_edges")
    assert [int(usage[c]) for c in counts] == [3, 1, 2, 1, 2]


def test_the_docs_list_every_column_of_every_file():
    formats = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
    section = formats.read_text(encoding="utf-8").split("\n## CSV export\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = {}
    for line in section.splitlines():
        if match := re.fullmatch(r"\| `(\w+)\.csv` \| (.+) \|", line):
            # A column may carry a note in parentheses: "source (scripted/injected)".
            columns = re.sub(r" \([^)]*\)", "", match.group(2))
            listed[match.group(1)] = tuple(c.strip() for c in columns.split(","))
    assert listed == COLUMNS


async def test_the_relations_csv_is_the_text_csv_writes_for_its_rows(mini: Scenario) -> None:
    """The relations table is written a column at a time; its text is what :mod:`csv`
    writes for the same rows, formula guard and quoting included, changed edges and
    unchanged ones alike."""
    import copy
    import dataclasses
    import functools
    import io

    from engine.core.textsafe import csv_cell, csv_row
    from engine.reports.csvtext import csv_text
    from engine.reports.dense import relation_lines, relation_rows

    sim = Simulation.new(mini, seed=3, rounds=2)
    await sim.run()
    played = sim.played
    assert played is not None and 0 < len(played.changes) < 6
    tricky = ["=cmd()", 'say "no", firmly', "plain", "-1", "tab\there"]
    notes = [tricky[k % len(tricky)] for k in range(len(played.changes.notes))]
    changes = dataclasses.replace(played.changes, notes=notes)
    fav = played.after.fav.copy()  # a number's text is made once: -0.0 is not 0.0
    fav[0, 1], fav[1, 0], fav[0, 2] = -0.0, 0.0, fav[1, 2]
    after = copy.copy(played.after)
    after.fav = fav
    out = io.StringIO()
    rows = relation_rows("run,1", 2, after, changes, functools.cache(csv_cell))
    csv.writer(out, lineterminator="\n").writerows(map(csv_row, rows))
    cell = functools.cache(lambda text: csv_text(csv_cell(text)))
    assert relation_lines("run,1", 2, after, changes, cell) == out.getvalue()
    assert ",-0.0," in out.getvalue()
    assert out.getvalue().count("\n") == 6


def test_changed_only_relations_rebuild_the_dense_table_with_the_documented_line(
    store: SaveStore, saved, tmp_path: Path
) -> None:
    """``--changed-only`` writes round 0 whole and then only the changed edges; the pandas
    expression of docs/formats.md rebuilds the dense table's favorability and status."""
    pd = pytest.importorskip("pandas")
    meta, _ = saved
    history = store.history("exp", meta)
    export_run(meta, history, tmp_path / "dense")
    export_run(meta, history, tmp_path / "changed", changed_only=True)
    dense = pd.read_csv(tmp_path / "dense" / "relations.csv")
    rel = pd.read_csv(tmp_path / "changed" / "relations.csv")
    assert len(rel) < len(dense) and (rel.round_no == 0).sum() == (dense.round_no == 0).sum()
    assert rel[rel.round_no > 0].importance.notna().all()  # each a changed edge
    doc = (Path(__file__).parents[2] / "docs" / "formats.md").read_text()
    line = re.search(r"```python\n(full = .*?)\n```", doc, re.S)
    assert line is not None
    scope = {"pd": pd, "rel": rel}
    exec(line[1], scope)  # the documented line, as a reader would run it
    full = scope["full"].sort_values(["round_no", "source", "target"], ignore_index=True)
    want = dense.sort_values(["round_no", "source", "target"], ignore_index=True)
    cols = ["round_no", "source", "target", "fav", "status"]
    pd.testing.assert_frame_equal(full[cols], want[cols], check_dtype=False)
