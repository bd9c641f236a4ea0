"""The analysis API: a run's tables as DataFrames with the CSV export's columns and rows,
saves and trials as DataFrames, a clear error without pandas, and the worked example of
docs/reports.md executed."""

from __future__ import annotations

import asyncio
import builtins
import re
from pathlib import Path

import pandas as pd
import pytest

from engine import SaveStore, Simulation, SocialsimError, load_library
from engine.reports.analysis import open_run, open_saves, open_trial
from engine.reports.export import COLUMNS, export_run
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reports.md"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SaveStore:
    """A gossip run of 6 rounds branched at round 3, and a bullying trial (2 seeds × 3 arms)."""
    store = SaveStore(tmp_path_factory.mktemp("saves"))
    with Simulation.new(load_library("gossip"), store=store, run_id="g", rounds=6) as sim:
        asyncio.run(sim.run())
    store.branch("g", 3, "g2")
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=2, rounds=4, seeds=[1, 2], trial_id="tr",
        arms=named_arms("none,neglect,supportive-cooperative", scenario), resamples=500,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    return store


@pytest.mark.parametrize("table", list(COLUMNS))
def test_a_run_table_is_the_export_csv(store, tmp_path, table):
    meta = store.read_meta("g")
    export_run(meta, store.history("g", meta), tmp_path / "out", store.read_measurements("g"))
    exported = pd.read_csv(tmp_path / "out" / f"{table}.csv", keep_default_na=False, dtype=str)
    frame = getattr(open_run("g", store), table)
    assert list(frame.columns) == list(COLUMNS[table])
    assert len(frame) == len(exported)
    if len(frame):
        # the same cells (as text: the CSV writes floats with repr, a bool as 0/1 or True)
        ours = frame.astype(object).where(frame.notna(), "").astype(str)
        for column in ("run_id", *COLUMNS[table][1:4]):
            assert ours[column].tolist() == exported[column].tolist(), column


#: Every table's numeric columns (nullable ints, floats) and categorical ones.
KINDS = {
    "transcript": ({"round_no", "order", "forced"}, {"urgency"}, {"speaker", "speech_mode"}),
    "events": ({"round_no"}, set(), {"source"}),
    "emotions": ({"round_no"}, {"emotion", "delta"}, {"agent"}),
    "relations": ({"round_no", "importance"}, {"fav", "delta"}, {"source", "target", "status"}),
    "needs": ({"round_no"}, {"current", "expected", "gap"}, {"agent", "category", "need"}),
    "metrics": ({"round_no"}, {"value"}, {"metric", "unit"}),
    "llm_calls": ({"round_no", "attempts", "prompt_tokens"}, {"cost_usd"}, {"outcome"}),
    "usage": ({"round_no", "calls", "reasks"}, {"cost_usd"}, {"judge_mode"}),
    "surveys": ({"round_no"}, {"score", "angle"}, {"agent", "questionnaire"}),
    "ratings": (set(), {"score"}, {"agent", "criterion"}),
    "agents": (set(), set(), {"agent", "faction"}),
}


@pytest.mark.parametrize("table", list(COLUMNS))
def test_every_column_has_a_real_dtype(store, table):
    frame = getattr(open_run("g2", store), table)
    ints, floats, categories = KINDS[table]
    for column in frame.columns:
        kind = str(frame[column].dtype)
        if column in ints:
            assert kind == "Int64", (column, kind)
        elif column in floats:
            assert kind == "float64", (column, kind)
        elif column in categories:
            assert kind == "category", (column, kind)
        else:
            assert kind != "object", column
        if kind == "string" and frame[column].str.len().gt(0).any():  # words, not numbers
            cells = frame[column][frame[column].str.len() > 0]
            assert pd.to_numeric(cells, errors="coerce").isna().any(), column
        if kind != "string":  # blank cells are missing values, not ""
            assert not (frame[column].astype(object) == "").any(), column


def test_number_columns_compute_where_cells_are_blank(store):
    run = open_run("g2", store)
    assert run.relations["importance"].isna().any()  # unchanged edges have none
    assert run.relations["importance"].mean() >= 0
    assert run.transcript["order"].max() >= 1


def test_run_numbers_lineage_and_card(store):
    run = open_run("g2", store)
    assert run.relations["fav"].dtype.kind == "f"
    assert run.metrics["value"].dtype.kind == "f"
    assert run.relations["round_no"].max() == 3
    assert run.lineage.to_dict("records") == [{"run_id": "g", "round_no": 3}]
    assert run.card["run_id"] == "g2"
    names = load_library("gossip").names
    assert sorted(run.emotions["agent"].unique()) == sorted(names)


def test_saves_list_runs_and_trials(store):
    saves = open_saves(store.root)
    runs = saves.runs
    assert {"g", "g2", "tr-s1-prefix", "tr-s2-neglect"} <= set(runs["run_id"])
    assert runs.set_index("run_id").loc["g2", "parent"] == "g"
    assert saves.trials == ["tr"]


def test_trial_outcomes_summary_and_runs(store):
    trial = open_trial("tr", store)
    out = trial.outcomes
    assert list(out.columns) == ["trial", "scenario", "seed", "arm", "run_id", "round_no",
                                 "metric", "agent", "value"]  # fmt: skip
    assert str(out["round_no"].dtype) == "Int64" and out["value"].dtype.kind == "f"
    assert str(out["arm"].dtype) == "category"
    # joins a run's table on the same key, without a rename
    run = trial.run(1, "neglect")
    final = out[(out["run_id"] == run.run_id) & (out["metric"] == "mean_emotion")]
    joined = final.merge(run.metrics[run.metrics["metric"] == "mean_emotion"],
                         on=["run_id", "round_no"], suffixes=("", "_run"))  # fmt: skip
    assert len(joined) == len(final) > 0
    assert (joined["value"] - joined["value_run"]).abs().max() < 1e-9
    assert set(out["arm"]) == {"none", "neglect", "supportive-cooperative"}
    assert len(trial.runs) == 6
    summary = trial.summary()
    control = summary[summary["arm"] == "none"]
    assert control["diff"].isna().all() and summary["diff"].notna().any()
    assert trial.run(1, "neglect").run_id == "tr-s1-neglect"
    with pytest.raises(SocialsimError, match="no arm 'nope'"):
        trial.run(1, "nope")


def test_unknown_ids_are_one_clear_error(store):
    with pytest.raises(SocialsimError):
        open_run("nothing", store)
    with pytest.raises(SocialsimError):
        open_trial("nothing", store)


def test_without_pandas_the_broken_install_is_named(store, monkeypatch):
    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name.split(".")[0] == "pandas":
            raise ImportError(name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(SocialsimError, match=r"pandas, which is missing from this Python"):
        open_run("g", store)


def test_the_worked_example_of_the_docs_runs(store, tmp_path, capsys):
    text = DOCS.read_text()
    example = re.search(r"<!-- example: trial -->\n```python\n(.*?)```", text, re.S)
    assert example is not None
    out = tmp_path / "effect.html"
    exec(example.group(1), {"TRIAL": "tr", "SAVES": str(store.root), "OUT": str(out)})
    printed = capsys.readouterr().out
    assert re.fullmatch(r"supportive-cooperative vs none: [+-]\d\.\d{3} over 2 seeds\n", printed)
    assert out.stat().st_size > 1_000_000 and "final mean emotion" in out.read_text()
