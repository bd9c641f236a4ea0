"""``socialsim label``: new, sheet, import and report, in-process."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest

from engine import SaveStore, Simulation
from engine.core.scenario import parse_scenario
from engine.studies.labels.sheet import SHEET_COLUMNS


@pytest.fixture
async def saves(tmp_path: Path, mini_data: dict) -> Path:
    """A saves folder with two offline runs of the mini scenario (a formula in an event)."""
    mini_data["events"].insert(0, {"round": 1, "text": '=HYPERLINK("x") posted on the board'})
    scenario = parse_scenario(mini_data, "mini")
    store = SaveStore(tmp_path / "saves")
    for seed, run_id in ((1, "r1"), (2, "r2")):
        sim = Simulation.new(scenario, seed=seed, store=store, run_id=run_id, rounds=4)
        await sim.run()
        sim.close()
    return store.root


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def study_json(saves: Path) -> dict:
    return json.loads((saves / ".studies" / "st.json").read_text())


def make_study(run_cli, saves: Path, *extra: str) -> None:
    result = run_cli(
        "label",
        "new",
        "st",
        "--runs",
        "r1",
        "--runs",
        "r2",
        "--sample",
        "24",
        "--saves",
        str(saves),
        *extra,
    )
    assert result.code == 0, result.err
    assert "24 items from 2 runs" in result.out


def test_new_draws_a_study_and_refuses_to_overwrite_it(run_cli, saves: Path) -> None:
    make_study(run_cli, saves, "--seed", "3")
    first = study_json(saves)
    again = run_cli("label", "new", "st", "--runs", "r1", "--saves", str(saves))
    assert again.code == 2 and again.err.count("\n") == 1
    assert "study 'st' exists" in again.err
    assert study_json(saves) == first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--runs", "nope"), "no run 'nope'"),
        (("--runs", "r1", "--stratify", "colour"), "'colour'"),
        (("--runs", "r1", "--dead-zone", "emotion"), "KIND=NUMBER"),
        (("--runs", "r1", "--kinds", "mood"), "'mood'"),
    ],
)
def test_bad_new_requests_are_one_line(run_cli, saves: Path, args, message) -> None:
    result = run_cli("label", "new", "bad", *args, "--saves", str(saves))
    assert result.code == 2
    assert result.err.startswith("socialsim: error: ") and result.err.count("\n") == 1
    assert message in result.err
    assert not (saves / ".studies" / "bad.json").exists()


def test_the_sheet_shows_evidence_not_the_judge(run_cli, saves: Path, tmp_path: Path) -> None:
    make_study(run_cli, saves)
    out = tmp_path / "items.csv"
    assert run_cli("label", "sheet", "st", "--out", str(out), "--saves", str(saves)).code == 0
    rows = read_rows(out)
    assert tuple(rows[0]) == SHEET_COLUMNS and len(rows) == 24
    assert {r["label"] for r in rows} == {""}
    assert all(r["observer"] and r["role"] for r in rows)
    cells = [v for r in rows for v in r.values()]
    assert not any(c.startswith("=") for c in cells)
    assert any(c.startswith("'=HYPERLINK") for c in cells)


def fill(run_cli, saves: Path, tmp_path: Path, label=lambda item: item["judge"]) -> Path:
    out = tmp_path / "items.csv"
    run_cli("label", "sheet", "st", "--out", str(out), "--saves", str(saves))
    judged = {i["id"]: i for i in study_json(saves)["items"]}
    rows = read_rows(out)
    for row in rows:
        row["label"] = label(judged[row["item"]])
    write_rows(out, rows)
    return out


def test_import_round_trip_and_report(run_cli, saves: Path, tmp_path: Path) -> None:
    make_study(run_cli, saves)
    sheet = fill(run_cli, saves, tmp_path)
    for rater in ("ann", "bo", "cy"):
        result = run_cli(
            "label", "import", "st", "--rater", rater, str(sheet), "--saves", str(saves)
        )
        assert result.code == 0, result.err
        assert f"24 labels from {rater}" in result.out
    study = study_json(saves)
    assert study["labels"]["ann"] == {i["id"]: i["judge"] for i in study["items"]}
    out = tmp_path / "report"
    result = run_cli(
        "label", "report", "st", "--boots", "200", "--out", str(out), "--saves", str(saves)
    )
    assert result.code == 0, result.err
    assert "emotion: " in result.out and "relation: " in result.out
    assert len(re.findall(r"judge = majority \(2\+ agree\) +100\.0%", result.out)) == 2
    assert len(re.findall(r"Fleiss' kappa, judge added +1\.000", result.out)) == 2
    assert {p.name for p in out.iterdir()} == {
        "items.csv",
        "labels.csv",
        "report.csv",
        "confusion.csv",
    }
    assert len(read_rows(out / "labels.csv")) == 4 * 24
    report = read_rows(out / "report.csv")
    assert {(r["kind"], r["statistic"]) for r in report} == {
        (k, s)
        for k in ("emotion", "relation")
        for s in ("kappa_humans", "kappa_with_judge", "alpha", "agreement")
    }
    confusion = read_rows(out / "confusion.csv")
    assert sum(int(r["count"]) for r in confusion if r["judge"] != r["majority"]) == 0
    assert sum(int(r["count"]) for r in confusion) == 24


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda rows: rows[5].update(label="up"), "label 'up' is not one of"),
        (lambda rows: rows[7].update(item="i999"), "unknown item 'i999'"),
        (lambda rows: rows.append(dict(rows[0])), "labelled twice"),
    ],
)
def test_a_bad_sheet_imports_nothing(run_cli, saves: Path, tmp_path: Path, damage, message):
    make_study(run_cli, saves)
    sheet = fill(run_cli, saves, tmp_path)
    rows = read_rows(sheet)
    damage(rows)
    write_rows(sheet, rows)
    before = (saves / ".studies" / "st.json").read_bytes()
    result = run_cli("label", "import", "st", "--rater", "ann", str(sheet), "--saves", str(saves))
    assert result.code == 2
    assert result.err.startswith("socialsim: error: ") and result.err.count("\n") == 1
    assert message in result.err
    assert (saves / ".studies" / "st.json").read_bytes() == before


def _special_sheet(tmp_path: Path, kind: str) -> Path:
    """A sheet path that is not a regular file: a device, a named pipe, a folder."""
    if kind == "device":
        return Path("/dev/zero")
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize(
    ("kind", "what"),
    [("device", "a device"), ("fifo", "a named pipe"), ("folder", "a folder")],
)
def test_a_sheet_that_is_not_a_regular_file_is_refused_at_once(
    run_cli, saves: Path, tmp_path: Path, kind: str, what: str
) -> None:
    make_study(run_cli, saves)
    sheet = _special_sheet(tmp_path, kind)
    result = run_cli("label", "import", "st", "--rater", "ann", str(sheet), "--saves", str(saves))
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and f"{what} in place of a rating sheet" in result.err


def test_an_oversized_sheet_or_cell_is_one_line(
    run_cli, saves: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_study(run_cli, saves)
    sheet = fill(run_cli, saves, tmp_path)
    rows = read_rows(sheet)
    rows[3]["events"] = "x" * (200 * 1024)
    write_rows(sheet, rows)
    result = run_cli("label", "import", "st", "--rater", "ann", str(sheet), "--saves", str(saves))
    assert result.code == 2, result.err
    assert (
        result.err.count("\n") == 1
        and " line " in result.err
        and "a cell larger than 128 KiB" in result.err
    )
    monkeypatch.setattr("engine.studies.labels.sheet.MAX_SHEET_BYTES", 100 * 1024)
    result = run_cli("label", "import", "st", "--rater", "ann", str(sheet), "--saves", str(saves))
    assert result.code == 2 and "larger than" in result.err and "not a rating sheet" in result.err


def test_an_unknown_study_is_one_line(run_cli, saves: Path, tmp_path: Path) -> None:
    result = run_cli("label", "report", "nope", "--saves", str(saves))
    assert result.code == 2 and "no study 'nope'" in result.err


def test_rate_checks_the_rater_before_the_app_starts(run_cli, saves: Path) -> None:
    make_study(run_cli, saves)
    for rater, message in (("judge", "reserved"), ("../x", "plain name")):
        result = run_cli("label", "rate", "st", "--rater", rater, "--saves", str(saves))
        assert result.code == 2 and message in result.err and result.err.count("\n") == 1
