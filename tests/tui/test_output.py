"""``--format`` and tables that are never cut: piped, the sweep and trial tables of issue 25
print whole names and intervals; in a narrow terminal cells wrap at spaces or the table is
stacked, never cut with …; csv, tsv, json and markdown hold the same cells."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from rich.console import Console
from rich.table import Table

from engine import SaveStore, load_library
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial
from tui.cli.output import as_text, print_whole, rows_of

INTERVAL = r"\[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]"


@pytest.fixture(scope="module")
def trial_saves(tmp_path_factory: pytest.TempPathFactory) -> SaveStore:
    store = SaveStore(tmp_path_factory.mktemp("saves"))
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=2, rounds=4, seeds=[1, 2, 3], trial_id="tr",
        arms=named_arms("none,neglect,supportive-cooperative", scenario), resamples=500,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    return store


def test_the_piped_sweep_prints_every_interval_whole(run_cli):
    args = ["--relations", "attitude", "--topologies", "complete", "--lambdas", "0,1"]
    result = run_cli("sweep", "debate", *args, "--runs", "2", "--resamples", "500")
    assert result.code == 0
    assert "…" not in result.out
    rows = [line for line in result.out.splitlines() if "λ=1 −" in line]
    assert len(rows) == 8  # two contrasts × four metrics, each on one line
    assert all(re.search(INTERVAL, row) and "offline" in row for row in rows)
    assert any(len(line) > 80 for line in result.out.splitlines())


def test_the_piped_trial_prints_arms_and_intervals_whole(trial_saves, run_cli):
    result = run_cli("trial", "tr", "--resume", "--saves", str(trial_saves.root))
    assert result.code == 0 and "…" not in result.out
    rows = [line for line in result.out.splitlines() if "supportive-cooperative" in line]
    assert rows and all(re.search(r"\[[^\]]+\].*\[[^\]]+\]", row) for row in rows)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "markdown"])
def test_every_format_holds_the_trial_cells(trial_saves, run_cli, fmt):
    result = run_cli("trial", "tr", "--resume", "--saves", str(trial_saves.root), "--format", fmt)
    assert result.code == 0
    if fmt == "json":
        rows = json.loads(result.out)
        header = list(rows[0])
    elif fmt == "markdown":
        lines = result.out.splitlines()
        assert lines[1].startswith("|---")
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
                for line in lines[2:]]  # fmt: skip
    else:
        reader = csv.DictReader(io.StringIO(result.out), delimiter="\t" if fmt == "tsv" else ",")
        rows, header = list(reader), list(reader.fieldnames or [])
    neglect = [r for r in rows if r["outcome"] == "mean_fav" and r["arm"] == "neglect"]
    assert len(neglect) == 1
    if fmt == "markdown":  # for people: as the table shows it
        assert header == ["outcome", "arm", "mean [95% CI]", "Δ vs none [95% CI]"]
        assert re.fullmatch(r"\S+ \[\S+, \S+\]", neglect[0]["mean [95% CI]"])
    else:  # for a machine: plain numbers, an interval's ends in columns of their own
        assert header == ["outcome", "arm", "mean", "mean_low", "mean_high", "diff",
                          "diff_low", "diff_high"]  # fmt: skip
        row = neglect[0]
        low, mean, high = (float(row[k]) for k in ("mean_low", "mean", "mean_high"))
        assert low <= mean <= high
        if fmt == "json":
            assert isinstance(row["mean"], float) and isinstance(row["diff_low"], float)
    assert "seeds" in result.err  # the headline, on stderr


@pytest.mark.parametrize(
    "command",
    [
        ("list",),
        ("scenarios",),
        ("tasks",),
        ("card", "tr-s1-none"),
        ("show", "tr-s1-none"),
        ("diff", "tr-s1-none", "tr-s1-neglect"),
    ],
)
def test_other_commands_print_json(trial_saves, run_cli, command):
    result = run_cli(*command, "--format", "json", "--saves", str(trial_saves.root))
    if command[0] in ("scenarios", "tasks"):
        result = run_cli(*command, "--format", "json")
    assert result.code == 0, result.err
    value = json.loads(result.out)
    assert value


def test_a_debate_episode_prints_its_intervals_as_csv(run_cli):
    result = run_cli("run", "debate", "--format", "csv")
    assert result.code == 0
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert [r["metric"] for r in rows] == ["acc", "cr", "ccr", "wcf"]
    assert list(rows[0]) == ["metric", "estimate", "ci_low", "ci_high", "dropped"]
    for r in rows:
        if r["ci_low"]:
            assert 0 <= float(r["ci_low"]) <= float(r["estimate"]) <= float(r["ci_high"]) <= 1
        assert int(r["dropped"]) >= 0
    refused = run_cli("run", "bullying", "--format", "csv")
    assert refused.code == 2 and "only a debate episode" in refused.err


def test_machine_formats_carry_plain_numbers(run_cli):
    """Issue 41: estimate's csv has 32756 and 0.0056, not "32,756" and "$0.0056"; a sweep's
    json has numbers, not strings."""
    result = run_cli("estimate", "tavern", "--model", "gpt-4o-mini", "--format", "csv")
    assert result.code == 0, result.err
    rows = {r[""]: r for r in csv.DictReader(io.StringIO(result.out))}
    assert re.fullmatch(r"\d+", rows["prompt tokens"]["expected"])
    assert re.fullmatch(r"\d+\.\d+", rows["cost"]["expected"])
    shown = run_cli("estimate", "tavern", "--model", "gpt-4o-mini")
    assert re.search(r"\d,\d{3}", shown.out) and "$" in shown.out  # people still read commas
    args = ["--relations", "attitude", "--topologies", "complete", "--lambdas", "0,1"]
    sweep = run_cli(
        "sweep", "debate", *args, "--runs", "1", "--resamples", "200", "--format", "json"
    )
    value = json.loads(sweep.out)
    mean = value["means"][0]
    assert isinstance(mean["agents"], int) and isinstance(mean["n"], int)
    assert all(isinstance(mean[k], float) for k in ("CR", "ACC", "CCR", "WCF"))
    contrast = value["contrasts"][0]
    assert isinstance(contrast["Δ"], float) and isinstance(contrast["ci_low"], float)


def test_a_bad_format_is_one_line(run_cli):
    result = run_cli("scenarios", "--format", "xml")
    assert result.code == 2
    assert result.err.strip() == (
        "socialsim: error: scenarios: --format 'xml': choose from table, csv, tsv, json, "
        "markdown (see socialsim scenarios --help)"
    )


def _wide_table() -> Table:
    table = Table(title="arms")
    for name in ("outcome", "arm", "mean [95% CI]", "Δ vs none [95% CI]"):
        table.add_column(name, no_wrap=name == "arm")
    table.add_row("survey.rses:Alice", "supportive-cooperative", "17.3 [15.0, 20.0]",
                  "+4.00 [+3.00, +5.00]")  # fmt: skip
    table.add_row("mean_fav", "neglect", "0.260 [0.172, 0.315]", "-0.000493 [-0.00148, +0.00]")
    return table


def _words(table: Table) -> set[str]:
    cells = rows_of(table, machine=False).rows
    return {w for row in cells for cell in row for w in str(cell).split()}


@pytest.mark.parametrize("width", [120, 70, 50, 30])
def test_a_terminal_table_never_cuts_a_word(width):
    table = _wide_table()
    console = Console(width=width, force_terminal=True, color_system=None, record=True)
    print_whole(console, table)
    text = console.export_text()
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines())
    printed = set(re.split(r"[\s│┃┏┓┗┛━─┡┩╇┳┻╋┼├┤└┘┌┐╭╮╰╯]+", text))
    missing = {w for w in _words(table) if w not in printed}
    if width <= 30:  # stacked: each cell on its own line
        assert "arm: supportive-cooperative" in " ".join(text.split())
    assert not missing, missing


def test_a_piped_table_is_as_wide_as_it_needs():
    console = Console(width=80, file=io.StringIO(), color_system=None)
    assert not console.is_terminal
    print_whole(console, _wide_table())
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert any("-0.000493 [-0.00148, +0.00]" in line for line in out.splitlines())


def test_tsv_cells_keep_their_tabs_out():
    found = rows_of(_wide_table())
    found.rows[0][0] = "a\tb"
    text = as_text([found], "tsv")
    assert text.splitlines()[1].split("\t")[0] == "a b"


def test_show_and_diff_of_thirty_agents_piped_cut_nothing(thirty, tmp_path, run_cli):
    saves = ("--saves", str(tmp_path / "saves"))
    assert run_cli("run", str(thirty), "--rounds", "2", "--run-id", "a", "-q", *saves).code == 0
    assert run_cli("branch", "a", "--at", "1", "--run-id", "b", *saves).code == 0
    for command in (("show", "a"), ("diff", "a", "b", "--round", "1")):
        result = run_cli(*command, *saves)
        assert result.code == 0 and "…" not in result.out, command
