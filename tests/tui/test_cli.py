"""The ``socialsim`` command line, driven through its real entry point ``tui.cli.main``.

Most tests call ``main()`` in-process with a patched ``sys.argv``; a few run
``python -m tui.cli`` in a subprocess to check exit codes and stderr end to end.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import csv
import gzip
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CliResult
from llm_stub import StubLLM
from rich.cells import cell_len

from engine import (
    FORMAT_VERSION,
    ForcedAction,
    Mode,
    SaveStore,
    ScenarioError,
    Simulation,
    library_ids,
    load_library,
)
from engine.core.exchanges import RoundUsage
from engine.reports.export import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-secret"
ERROR = "socialsim: error: "


Result = CliResult


def _toml(value: object) -> str:
    """A TOML value for plain data (JSON strings and numbers are valid TOML)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def write_scenario(path: Path, data: dict) -> Path:
    """Write scenario data as a TOML file."""
    path.write_text("".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in data.items()))
    return path


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder`` with its content (None for folders), the verdicts on
    round files aside (a cache beside the runs)."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
        if ".verified" not in p.relative_to(folder).parts
    }


def round_files(run_dir: Path) -> dict[str, dict]:
    """The parsed round files of a run folder, by file name."""
    files = sorted((run_dir / "rounds").glob("*.json.gz"))
    return {p.name: json.loads(gzip.decompress(p.read_bytes())) for p in files}


def played(run_dir: Path) -> dict[str, dict]:
    """:func:`round_files` without the id of the run that wrote each (the rest is what
    was played)."""
    files = round_files(run_dir)
    assert {f["run"] for f in files.values()} == {run_dir.name}
    return {name: {k: v for k, v in f.items() if k != "run"} for name, f in files.items()}


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide, colourless output so rich does not wrap or style what the tests read."""
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The saves folder, selected through ``$SOCIALSIM_SAVES`` (not created yet)."""
    folder = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(folder))
    return folder


@pytest.fixture
def socialsim(run_cli, saves: Path):
    """Call the console-script entry point in-process: ``socialsim(*args) -> Result``."""
    return run_cli


@pytest.fixture
def lib_id() -> str:
    """A library scenario to run (the library is still being written by colleagues)."""
    for sid in ("tavern", "hospital"):
        if sid in library_ids():
            return sid
    pytest.skip("neither tavern nor hospital is in the scenario library")


@pytest.fixture
def scenario_file(tmp_path: Path, mini_data: dict) -> Path:
    """The three-agent mini scenario as a TOML file."""
    return write_scenario(tmp_path / "mini.toml", mini_data)


@pytest.fixture
def finished(socialsim, scenario_file: Path, saves: Path) -> str:
    """A finished two-round run ``base`` of the mini scenario."""
    result = socialsim(
        "run", str(scenario_file), "--rounds", "2", "--seed", "4", "--run-id", "base", "-q"
    )
    assert result.code == 0, result.err
    return "base"


def assert_one_error(result: Result, *fragments: str) -> None:
    """Exit code 2 and exactly one stderr line ``socialsim: error: ...`` naming the fragments."""
    assert result.code == 2, (result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(ERROR), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert "Traceback" not in result.out + result.err


# -- run ---------------------------------------------------------------------------------


def test_run_prints_a_summary_per_round_and_saves_the_run(socialsim, saves: Path, lib_id: str):
    result = socialsim("run", lib_id, "--rounds", "2", "--seed", "3", "--run-id", "r1")
    assert result.code == 0, result.err
    assert result.err == ""
    out = result.out
    assert "offline rule-based model" in out
    assert "seed 3" in out and "run r1" in out
    assert out.index("Round 1/2") < out.index("Round 2/2")
    assert out.count("Fav ") >= 3 and "recip" in out and "balance" in out
    assert "r1: round 2/2 saved in" in out
    run_dir = saves / "r1"
    assert (run_dir / "run.json").is_file()
    assert sorted(round_files(run_dir)) == ["000000.json.gz", "000001.json.gz", "000002.json.gz"]
    shown = socialsim("show", "r1")
    assert shown.code == 0, shown.err
    assert f"{load_library(lib_id).title} [{lib_id}]" in shown.out
    # Every speaker of round 1 has a numbered line under the round 1 header.
    round1 = out[out.index("Round 1/2") : out.index("Round 2/2")]
    spoken = [
        a for a in round_files(run_dir)["000001.json.gz"]["actions"] if a["order"] is not None
    ]
    assert spoken
    names = load_library(lib_id).names
    for a in spoken:
        assert a["speaker"] in names
        assert re.search(rf"^\s*{a['order']}\s+{re.escape(a['speaker'])}", round1, re.M), round1


def test_run_prints_each_rounds_status_changes_without_the_state_as_models(
    socialsim, saves: Path, lib_id: str, monkeypatch: pytest.MonkeyPatch
):
    """A round's summary reads its changes' arrays: no state, no model an edge (at 100
    agents building them cost more than the round)."""
    from engine.core.columns import StateColumns

    def refused(self: StateColumns) -> None:
        raise AssertionError("a round was printed from the state built as models")

    with monkeypatch.context() as patched:
        patched.setattr(StateColumns, "world", refused)
        result = socialsim("run", lib_id, "--rounds", "8", "--seed", "3", "--run-id", "f")
    assert result.code == 0, result.err
    history = SaveStore(saves).history("f")
    printed = 0
    for n in range(1, 9):
        section = result.out[result.out.index(f"Round {n}/8") :]
        section = section[: section.index("Fav ")]
        flips = [c for c in history[n].relation_changes if c.status != c.previous_status]
        for c in flips[:6]:
            line = f"{c.source}→{c.target}: {c.previous_status.value} → {c.status.value}"
            assert f"{line} (fav {c.fav:+.2f})" in section, section
            printed += 1
        assert section.count(" (fav ") == min(len(flips), 6)
    assert printed  # the seed's rounds change some statuses


@pytest.mark.parametrize("columns", [20, 44, 80])
def test_run_prints_every_round_within_the_terminal_width(
    socialsim, tmp_path: Path, mini_data: dict, monkeypatch: pytest.MonkeyPatch, columns: int
):
    """The rounds are printed uncropped (their lines are made to fit): no line is wider
    than the terminal, with unbreakable words, wide characters and a silent list."""
    long = "x" * 90
    mini_data["agents"][0]["talking_points"] = [f"the word {long} must be cut", "会议今晚投票"]
    mini_data["agents"][2]["talking_points"] = ["日本語の言葉 " * 12]
    mini_data["events"][0]["text"] = f"The roof of {long} leaks again, 屋顶 漏水."
    path = write_scenario(tmp_path / "wide.toml", mini_data)
    monkeypatch.setenv("COLUMNS", str(columns))
    result = socialsim("run", str(path), "--rounds", "4", "--seed", "2", "--run-id", "w")
    assert result.code == 0, result.err
    assert "Round 4/4" in result.out and "会" in result.out and "…" in result.out
    assert max(map(cell_len, result.out.splitlines())) <= columns


def test_run_quiet_prints_only_the_final_lines(socialsim, saves: Path, scenario_file: Path):
    result = socialsim("run", str(scenario_file), "--rounds", "2", "--run-id", "q", "--quiet")
    assert result.code == 0, result.err
    assert "Round 1/" not in result.out
    lines = result.out.strip().splitlines()
    assert len(lines) == 2, result.out
    assert lines[0].startswith("q: round 2/2 saved in")
    assert "offline rule-based model" in lines[0]
    assert lines[1].startswith("Fav ")
    assert (saves / "q" / "rounds" / "000002.json.gz").is_file()


def test_run_accepts_a_toml_path_and_defaults_to_the_scenario_rounds(
    socialsim, saves: Path, scenario_file: Path
):
    result = socialsim("run", str(scenario_file), "--run-id", "p", "-q")
    assert result.code == 0, result.err
    meta = SaveStore(saves).read_meta("p")
    assert meta.scenario.id == "mini"
    assert meta.scenario_ref == str(scenario_file)
    assert meta.total_rounds == 5
    assert len(round_files(saves / "p")) == 6


def test_same_seed_gives_identical_round_files(socialsim, saves: Path, scenario_file: Path):
    for run_id in ("one", "two"):
        result = socialsim(
            "run", str(scenario_file), "--rounds", "3", "--seed", "11", "--run-id", run_id, "-q"
        )
        assert result.code == 0, result.err
    assert played(saves / "one") == played(saves / "two")
    metas = [json.loads((saves / r / "run.json").read_text())["run"]["1"] for r in ("one", "two")]
    for meta in metas:
        del meta["run_id"], meta["created"]
    assert metas[0] == metas[1]


def test_user_text_is_printed_verbatim_not_as_rich_markup(
    socialsim, saves: Path, tmp_path: Path, mini_data: dict, mini
):
    mini_data["title"] = "Budget [/draft] [bold]v2"
    path = write_scenario(tmp_path / "markup.toml", mini_data)
    label = "[/oops] v[2]"
    result = socialsim("run", str(path), "--rounds", "1", "--run-id", "m", "--name", label)
    assert result.code == 0, result.err
    assert result.out.startswith("Budget [/draft] [bold]v2 — offline rule-based model")
    listed = socialsim("list")
    assert listed.code == 0, listed.err
    assert label in listed.out
    shown = socialsim("show", "m")
    assert shown.code == 0, shown.err
    assert f"m  ({label})" in shown.out
    assert "Budget [/draft] [bold]v2 [" in shown.out

    # Utterances (from a model or the user) are shown as typed.
    said = "[laughs] fine, [/] [red]no[/red]"
    with Simulation.new(mini, seed=1, store=SaveStore(saves), run_id="f", rounds=1) as sim:
        sim.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="all", utterance=said))
        asyncio.run(sim.run())
    shown = socialsim("show", "f")
    assert shown.code == 0, shown.err
    assert re.search(rf"Ann \(forced\)\s+{re.escape(said)}", shown.out), shown.out


# -- scenario library and files ----------------------------------------------------------


def test_scenarios_lists_the_library(socialsim, lib_id: str):
    result = socialsim("scenarios")
    assert result.code == 0, result.err
    listed = {line.split()[0] for line in result.out.splitlines()[1:] if line.strip()}
    assert set(library_ids()) <= listed
    assert lib_id in listed
    assert load_library(lib_id).title in result.out


def test_scenarios_shows_a_broken_library_file_without_hiding_the_rest(
    socialsim, monkeypatch: pytest.MonkeyPatch, mini
):
    import engine

    def fake_load(sid: str):
        if sid == "broken":
            raise ScenarioError("scenarios/broken.toml: invalid TOML: Invalid value (at line 3)")
        return mini

    monkeypatch.setattr(engine, "library_ids", lambda: ["broken", "fine"])
    monkeypatch.setattr(engine, "load_library", fake_load)
    result = socialsim("scenarios")
    assert result.code == 0, result.err
    assert "scenarios/broken.toml: invalid TOML" in result.out
    assert re.search(r"^fine\s+Mini committee\s+3\s+5", result.out, re.M), result.out


def test_validate_prints_an_ok_line(socialsim, scenario_file: Path):
    result = socialsim("validate", str(scenario_file))
    assert result.code == 0, result.err
    assert result.out.strip().splitlines() == [
        f"{scenario_file}: ok — 'Mini committee', 3 agents, 5 rounds, 2 events, 2 relations"
    ]


def test_validate_on_a_terminal_says_what_it_opens_while_it_reads(
    socialsim, scenario_file: Path, monkeypatch: pytest.MonkeyPatch
):
    """A 1,000-agent cast's file takes about 2 s to read: meanwhile a spinner on stderr
    names it and the seconds so far, erased once it is read."""
    import io

    from rich.console import Console

    import engine
    from tui.cli import progress

    out = io.StringIO()
    console = Console(force_terminal=True, file=out, width=240)
    monkeypatch.setattr(progress, "terminal", lambda: console)
    shown: list[str] = []  # the terminal's text while the file is read
    load = engine.load_scenario_file

    def read(path: Path):
        shown.append(out.getvalue())
        return load(path)

    monkeypatch.setattr(engine, "load_scenario_file", read)
    result = socialsim("validate", str(scenario_file))
    assert result.code == 0, result.err
    assert re.search(rf"Opening {re.escape(str(scenario_file))}… \d+\.\d s", shown[0]), shown
    assert "\x1b[2K" in out.getvalue().rsplit("Opening", 1)[1]  # the line erased after
    assert "ok — 'Mini committee'" in result.out


def test_what_is_opening_is_shown_on_one_line_without_control_characters() -> None:
    """A name as typed (a file name may hold a newline or an escape) cannot move the
    cursor or break the spinner's line."""
    import io

    from rich.console import Console

    from tui.cli.progress import _Opening

    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(_Opening("cast\x1b[2J\nname.toml"))
    shown = out.getvalue()
    assert "\x1b" not in shown and shown.count("\n") == 1 and "Opening cast" in shown


def test_schema_prints_json_schema(socialsim):
    result = socialsim("schema")
    assert result.code == 0, result.err
    schema = json.loads(result.out)
    assert "agents" in schema["properties"]
    assert "relations" in schema["properties"]


def test_schema_out_writes_a_file(socialsim, tmp_path: Path):
    target = tmp_path / "schema.json"
    result = socialsim("schema", "--out", str(target))
    assert result.code == 0, result.err
    assert result.out.strip() == str(target)
    assert "agents" in json.loads(target.read_text())["properties"]


def test_schema_out_into_a_missing_folder_is_one_error_line(socialsim, tmp_path: Path):
    target = tmp_path / "missing" / "schema.json"
    result = socialsim("schema", "--out", str(target))
    assert_one_error(result, str(target))
    assert not target.parent.exists()


# -- list, show, branch, resume ------------------------------------------------------------


def test_list_shows_rounds_parent_and_broken_saves(socialsim, saves: Path, finished: str):
    assert socialsim("branch", finished, "--at", "1", "--run-id", "kid").code == 0
    broken = saves / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("garbage{")
    newer = saves / "newer"
    newer.mkdir()
    (newer / "run.json").write_text(
        json.dumps({"run": {"1": {"format_version": FORMAT_VERSION + 1}}})
    )
    (saves / "notes.txt").write_text("not a run")
    result = socialsim("list")
    assert result.code == 0, result.err
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:] if line.strip()}
    assert set(rows) == {"base", "broken", "kid", "newer", "notes.txt"}
    assert re.search(r"\bmini\s+2/2\s+offline rule-based\s", rows["base"])
    assert re.search(r"\bmini\s+1/2\s+offline rule-based\s+base@1\b", rows["kid"])
    assert "run.json: corrupt or truncated save file" in rows["broken"]
    assert "newer socialsim" in rows["newer"]
    assert "not a socialsim run folder" in rows["notes.txt"]


def test_list_of_an_empty_saves_folder(socialsim, saves: Path):
    result = socialsim("list")
    assert result.code == 0
    assert result.out.strip() == f"no runs in {saves}"
    assert not saves.exists()


def test_show_a_run_and_one_of_its_rounds(socialsim, finished: str, scenario_file: Path):
    result = socialsim("show", finished)
    assert result.code == 0, result.err
    out = result.out
    assert "Round 2/2" in out
    assert re.search(r"round\s+2/2", out)
    assert f"Mini committee [{scenario_file}]" in out
    assert "offline rule-based model" in out
    assert "favorability (row → column)" in out
    for name in ("Ann", "Bob", "Cy"):
        assert re.search(rf"^{name}\s", out, re.M)

    first = socialsim("show", finished, "--round", "1")
    assert first.code == 0, first.err
    assert "Round 1/2" in first.out and "Round 2/2" not in first.out
    assert re.search(r"round\s+1/2", first.out)

    start = socialsim("show", finished, "--round", "0")
    assert start.code == 0, start.err
    assert "Round " not in start.out
    assert re.search(r"round\s+0/2", start.out)

    assert_one_error(socialsim("show", finished, "--round", "3"), "--round 3", "0..2")


def test_branch_then_resume_the_branch(socialsim, saves: Path, finished: str):
    result = socialsim("branch", finished, "--at", "1", "--run-id", "kid", "--name", "what if")
    assert result.code == 0, result.err
    assert result.out.strip() == "kid: branched from base at round 1"
    assert re.search(r"^kid\s.*base@1\s+what if", socialsim("list").out, re.M)
    before = round_files(saves / "base")
    kid = round_files(saves / "kid")
    assert sorted(kid) == ["000000.json.gz", "000001.json.gz"]
    assert kid["000000.json.gz"] == before["000000.json.gz"]
    # the fork round is the parent's, written as a keyframe (format 6: packed columns)
    assert kid["000001.json.gz"]["keyframe"]["packed"]["round"] == 1
    # the fork round is the parent's, as a keyframe written by the branch
    assert {**kid["000001.json.gz"], "keyframe": None, "run": "base"} == before["000001.json.gz"]
    assert kid["000001.json.gz"]["run"] == "kid" and kid["000000.json.gz"]["run"] == "base"

    resumed = socialsim("resume", "kid", "--rounds", "1")
    assert resumed.code == 0, resumed.err
    assert "Round 2/2" in resumed.out and "Round 1/2" not in resumed.out
    assert "kid: round 2/2 saved" in resumed.out
    assert sorted(round_files(saves / "kid")) == [
        "000000.json.gz",
        "000001.json.gz",
        "000002.json.gz",
    ]
    shown = socialsim("show", "kid")
    assert re.search(r"lineage\s+base@1 → kid", shown.out), shown.out
    # The parent is untouched.
    assert round_files(saves / "base") == before


def test_resume_of_a_finished_run_needs_rounds(socialsim, saves: Path, finished: str):
    before = snapshot(saves)
    result = socialsim("resume", finished)
    assert_one_error(result, "'base' already finished (2/2)", "--rounds")
    assert snapshot(saves) == before


def test_resume_with_rounds_extends_a_finished_run(socialsim, saves: Path, finished: str):
    result = socialsim("resume", finished, "--rounds", "2", "-q")
    assert result.code == 0, result.err
    assert result.out.startswith("base: round 4/4 saved")
    assert SaveStore(saves).read_meta(finished).total_rounds == 4
    assert len(round_files(saves / finished)) == 5
    assert re.search(r"\bmini\s+4/4\s", socialsim("list").out)


def test_resume_an_unfinished_run_to_its_end(socialsim, saves: Path, scenario_file: Path):
    assert socialsim("run", str(scenario_file), "--rounds", "3", "--run-id", "u", "-q").code == 0
    assert socialsim("branch", "u", "--at", "1", "--run-id", "half").code == 0
    result = socialsim("resume", "half", "-q")
    assert result.code == 0, result.err
    assert result.out.startswith("half: round 3/3 saved")


# -- export and delete ------------------------------------------------------------------


def test_export_writes_every_csv_with_the_documented_columns(
    socialsim, tmp_path: Path, finished: str
):
    out = tmp_path / "csv"
    result = socialsim("export", finished, "--out", str(out))
    assert result.code == 0, result.err
    names = [*(f"{name}.csv" for name in COLUMNS), "card.json"]
    assert result.out.split() == [str(out / n) for n in names]
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    for name, columns in COLUMNS.items():
        with (out / f"{name}.csv").open(newline="") as handle:
            assert tuple(next(csv.reader(handle))) == columns


def test_no_secret_appears_in_any_output(socialsim, saves: Path, tmp_path: Path, finished: str):
    out = tmp_path / "csv"
    seen = [
        socialsim("run", "--help"),
        socialsim("list"),
        socialsim("show", finished),
        socialsim("branch", finished, "--at", "1", "--run-id", "kid"),
        socialsim("resume", "kid", "--rounds", "1"),
        socialsim("export", finished, "--out", str(out)),
        socialsim("show", "missing"),
    ]
    assert os.environ["OPENAI_API_KEY"] == SECRET
    for result in seen:
        assert SECRET not in result.out + result.err
    files = [p for p in [*saves.rglob("*"), *out.rglob("*")] if p.is_file()]
    assert len(files) > 8
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


def test_delete_with_yes(socialsim, saves: Path, finished: str):
    assert socialsim("branch", finished, "--at", "1", "--run-id", "kid").code == 0
    result = socialsim("delete", finished, "--yes")
    assert result.code == 0, result.err
    assert result.out.strip() == f"deleted {finished}"
    assert not (saves / finished).exists()
    assert [p.name for p in saves.iterdir() if p.name != ".verified"] == ["kid"]
    assert not (saves / ".verified" / f"{finished}.json").exists()  # its verdicts went too
    # The branch keeps its own copies and still reads.
    assert socialsim("show", "kid").code == 0
    assert_one_error(socialsim("delete", finished, "--yes"), f"no run {finished!r}")


# -- bad input: exit 2, one line on stderr, nothing written ------------------------------


def _corrupt_meta(saves: Path) -> None:
    (saves / "base" / "run.json").write_text("{ garbage")


def _truncate_round(saves: Path) -> None:
    path = saves / "base" / "rounds" / "000002.json.gz"
    path.write_bytes(path.read_bytes()[:200])


def _newer_format(saves: Path) -> None:
    path = saves / "base" / "run.json"
    data = json.loads(path.read_text())
    data["run"]["1"]["format_version"] = FORMAT_VERSION + 1
    path.write_text(json.dumps(data))


def _bad_relation(tmp_path: Path, data: dict) -> str:
    data["relations"][0]["to"] = "Zed"
    return str(write_scenario(tmp_path / "badrel.toml", data))


def _bad_fav(tmp_path: Path, data: dict) -> str:
    data["relations"][1]["fav"] = 1.5
    return str(write_scenario(tmp_path / "badfav.toml", data))


def _broken_toml(tmp_path: Path, data: dict) -> str:
    path = tmp_path / "broken.toml"
    path.write_text('title = "Broken"\nagents = [\n  { name = "Ann", role = "x" },\n')
    return str(path)


SCENARIO_ERRORS = {
    "unknown-id": (lambda tmp, data: "no-such-scenario", ["'no-such-scenario'", "library ids"]),
    "broken-toml": (_broken_toml, ["broken.toml", "invalid TOML"]),
    "unknown-agent": (_bad_relation, ["badrel.toml", "relations.0.to", "'Zed'"]),
    "fav-range": (_bad_fav, ["badfav.toml", "relations.1.fav", "1.5"]),
    "missing-file": (lambda tmp, data: str(tmp / "nope.toml"), ["nope.toml"]),
}


@pytest.mark.parametrize("case", list(SCENARIO_ERRORS))
def test_bad_scenario_is_one_error_line(
    socialsim, saves: Path, tmp_path: Path, mini_data: dict, finished: str, case: str
):
    make, fragments = SCENARIO_ERRORS[case]
    ref = make(tmp_path, mini_data)
    before = snapshot(saves)
    assert_one_error(socialsim("run", ref, "--rounds", "1"), *fragments)
    assert snapshot(saves) == before
    if case != "unknown-id":
        assert_one_error(socialsim("validate", ref), *fragments)


SAVE_ERRORS = {
    "corrupt-meta": (_corrupt_meta, ["show", "base"], ["run.json", "corrupt"]),
    "truncated-round": (_truncate_round, ["show", "base"], ["000002.json.gz", "damaged"]),
    "truncated-export": (
        _truncate_round,
        ["export", "base", "--out", "{tmp}/x"],
        ["000002.json.gz"],
    ),
    "newer-format": (_newer_format, ["show", "base"], ["run.json", "newer socialsim", "format"]),
    "branch-past-end": (None, ["branch", "base", "--at", "99"], ["--at 99", "0..2"]),
    "branch-traversal": (None, ["branch", "base", "--at", "1", "--run-id", "../x"], ["'../x'"]),
    "show-traversal": (None, ["show", "../etc"], ["'../etc'", "plain name"]),
    "run-traversal": (None, ["run", "{lib}", "--run-id", "../x"], ["'../x'", "plain name"]),
    "run-existing-id": (None, ["run", "{lib}", "--run-id", "base"], ["'base' already exists"]),
    "unknown-model": (None, ["run", "{lib}", "--model", "foo"], ["--model 'foo'"]),
    "show-missing": (None, ["show", "nope"], ["no run 'nope'"]),
    "resume-missing": (None, ["resume", "nope", "--rounds", "1"], ["no run 'nope'"]),
    "delete-traversal": (None, ["delete", "../base", "--yes"], ["'../base'"]),
}


@pytest.mark.parametrize("case", list(SAVE_ERRORS))
def test_bad_run_input_is_one_error_line(
    socialsim, saves: Path, tmp_path: Path, finished: str, lib_id: str, case: str
):
    damage, args, fragments = SAVE_ERRORS[case]
    if damage is not None:
        damage(saves)
    argv = [a.format(tmp=tmp_path, lib=lib_id) for a in args]
    before = snapshot(saves)
    assert_one_error(socialsim(*argv), *fragments)
    assert snapshot(saves) == before
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "args", [["run", "{lib}", "--rounds", "0"], ["resume", "base", "--rounds", "0"]]
)
def test_rounds_zero_is_a_usage_error(
    socialsim, saves: Path, finished: str, lib_id: str, args: list[str]
):
    before = snapshot(saves)
    result = socialsim(*[a.format(lib=lib_id) for a in args])
    assert result.code == 2
    assert "--rounds" in result.err
    assert snapshot(saves) == before


@pytest.mark.parametrize("garbage", ['{"run": {"1": "garbage"}}', '{"run": []}'])
def test_save_of_the_wrong_shape_is_one_error_line(
    socialsim, saves: Path, finished: str, garbage: str
):
    (saves / finished / "run.json").write_text(garbage)
    result = socialsim("show", finished)
    assert_one_error(result, "run.json")


# -- end to end, in a subprocess -----------------------------------------------------------


def _cli(*args: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "COLUMNS": "250"}
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_subprocess_runs_are_reproducible_across_processes(tmp_path: Path, lib_id: str):
    folder = tmp_path / "saves"
    for run_id, hash_seed in (("a", "1"), ("b", "2")):
        proc = _cli(
            "run",
            lib_id,
            "--rounds",
            "2",
            "--seed",
            "9",
            "--run-id",
            run_id,
            "--saves",
            str(folder),
            "-q",
            hash_seed=hash_seed,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert proc.stdout.startswith(f"{run_id}: round 2/2 saved")
    assert played(folder / "a") == played(folder / "b")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["show", "../etc"], "run id '../etc' is not a plain name"),
        (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
    ],
)
def test_subprocess_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], fragment: str):
    folder = tmp_path / "saves"
    proc = _cli(*args, "--saves", str(folder))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(ERROR) and fragment in proc.stderr
    assert not folder.exists()


# -- start-up and the shared LLM options -------------------------------------------------


def _loaded_after(*argv: str) -> list[str]:
    """The heavy or engine modules a fresh ``socialsim ARGV`` process has imported."""
    probe = (
        f"import sys\nfrom tui import cli\nsys.argv = ['socialsim', *{list(argv)!r}]\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('litellm', 'textual', 'pydantic', 'numpy', 'statsmodels', 'typer')\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('engine.')]\n"
        "print('PROBE', sorted({m.split('.')[0] if m.split('.')[0] in heavy else m "
        "for m in loaded}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1].removeprefix("PROBE "))


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["run", "--help"]])
def test_help_imports_no_heavy_module_and_no_engine_module_beyond_errors_and_limits(
    argv: list[str],
):
    loaded = _loaded_after(*argv)
    assert not {"litellm", "textual", "numpy", "statsmodels"} & set(loaded)
    engine = {m for m in loaded if m.startswith("engine.")}
    assert engine <= {"engine.errors", "engine.core", "engine.core.limits"}  # core: a docstring


def test_a_command_imports_its_own_module_and_no_other_command_or_writer(tmp_path: Path):
    probe = (
        f"import sys\nfrom tui import cli\nsys.argv = ['socialsim', 'list', '--saves', "
        f"{str(tmp_path)!r}]\ntry:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "print('PROBE', sorted(sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(eval(proc.stdout.strip().splitlines()[-1].removeprefix("PROBE ")))
    assert "tui.cli.library" in loaded
    from tui.cli import COMMANDS

    others = {f"tui.cli.{module}" for module, _ in COMMANDS.values()} - {"tui.cli.library"}
    assert not (others - {"tui.cli.runs"}) & loaded  # runs holds the app's callback
    assert not {"filelock", "tinydb", "numpy", "litellm", "textual"} & {
        m.split(".")[0] for m in loaded
    }


def test_each_command_shows_only_its_llm_options(socialsim):
    models = {"--model", "--judge-model", "--agent-model", "--judge-mode"}
    server = {"--api-base", "--api-key-env", "--structured", "--tolerate-fallbacks"}
    caps = {"--max-calls", "--budget-usd"}
    settings = {"--max-concurrency", "--timeout", "--retries"}
    everything = models | server | caps | settings | {"--structured-model"}
    expected = {
        "run": everything,
        "tui": everything,
        "resume": caps | {"--tolerate-fallbacks"},
        "recast": {"--model", "--judge-model"} | server | settings,
        "sweep": server,
        "show": set(),
    }
    for command, options in expected.items():
        result = socialsim(command, "--help")
        assert result.code == 0, result.err
        shown = {o for o in everything if re.search(rf"{o}\b(?!-)", result.out)}
        assert shown == options, command


def test_llm_options_build_one_mind_spec():
    from engine.llm.settings import LLMSettings
    from engine.minds.spec import OFFLINE
    from tui.cli.options import LLMOptions

    assert LLMOptions().spec(["Ann"]) is OFFLINE
    options = LLMOptions(
        model="openai/a",
        agent_model=("Ann=openai/b",),
        judge_mode="batched",
        max_calls=9,
        structured="text",
        structured_model=("openai/b=json", "openai/d = schema"),
        api_key_env="MY_KEY",
        tolerate_fallbacks=True,
    )
    spec = options.spec(["Ann", "Bob"], scenario_models={"Ann": "openai/c", "Bob": "openai/d"})
    assert spec == LLMSettings(
        model="openai/a",
        agent_models={"Ann": "openai/b", "Bob": "openai/d"},
        judge_mode="batched",
        max_calls=9,
        structured="text",
        structured_models={"openai/b": "json", "openai/d": "schema"},
        api_key_env="MY_KEY",
        tolerate_fallbacks=True,
    )
    assert LLMOptions(max_calls=20).resumed(spec) == spec.model_copy(update={"max_calls": 20})
    assert LLMOptions().resumed(spec) is None
    strict = spec.model_copy(update={"tolerate_fallbacks": False})
    assert LLMOptions(tolerate_fallbacks=True).resumed(strict) == spec


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--judge-model", "openai/j"], ["need an LLM --model"]),
        (["--model", "openai/x", "--agent-model", "Zed=openai/y"], ["no agent 'Zed'", "Ann"]),
        (["--model", "openai/x", "--agent-model", "Ann"], ["'Ann'", "NAME=MODEL"]),
        (["--model", "openai/x", "--judge-mode", "sideways"], ["--judge-mode:"]),
        (["--model", "openai/x", "--max-concurrency", "99999"], ["--max-concurrency:"]),
        (["--model", "openai/x", "--structured", "fancy"], ["--structured:"]),
        (["--model", "openai/x", "--api-key-env", "1-KEY"], ["--api-key-env:"]),
        (["--api-key-env", "MY_KEY"], ["need an LLM --model"]),
        (["--structured-model", "openai/x=json"], ["need an LLM --model"]),
        (["--model", "openai/x", "--structured-model", "openai/x"], ["'openai/x'", "MODEL=MODE"]),
        (["--model", "openai/x", "--structured-model", "=json"], ["'=json'", "MODEL=MODE"]),
        (
            ["--model", "openai/x", "--structured-model", "openai/x=fancy"],
            ["'openai/x=fancy'", "MODE is one of auto, schema, grammar, json, text"],
        ),
        (
            ["--model", "openai/x", "--judge-model", "openai/j", "--structured-model", "gpt=json"],
            ["'gpt' plays no part in this run", "models: openai/j, openai/x"],
        ),
    ],
)
def test_bad_llm_options_are_one_error_line(
    socialsim, saves: Path, scenario_file: Path, args: list[str], fragments: list[str]
):
    result = socialsim("run", str(scenario_file), "--run-id", "x", *args)
    assert_one_error(result, *fragments)
    assert not saves.exists()


def test_caps_on_resume_need_an_llm_run(socialsim, saves: Path, finished: str):
    before = snapshot(saves)
    result = socialsim("resume", finished, "--rounds", "1", "--max-calls", "5")
    assert_one_error(
        result, "--max-calls, --budget-usd, --call-timeout and --tolerate-fallbacks apply to LLM"
    )
    assert snapshot(saves) == before


# -- LLM runs against the local stub: structured modes, the summary, degraded stops ---------


@pytest.fixture
def stub_run(socialsim, scenario_file: Path) -> Iterator:
    """``stub_run(run_id, *args, **stub_kwargs)``: a two-round LLM run of the mini scenario
    against a fresh stub (no retries); the stubs stop afterwards."""
    stubs: list[StubLLM] = []

    def play(run_id: str, *args: str, **stub_kwargs) -> Result:
        stub = StubLLM(seed=2, **stub_kwargs)
        stub.start()
        stubs.append(stub)
        model = ["--model", "openai/stub", "--api-base", stub.url, "--retries", "0"]
        return socialsim(
            "run", str(scenario_file), "--rounds", "2", "--run-id", run_id, "-q", *model, *args
        )

    yield play
    for stub in stubs:
        stub.stop()


def summary_rows(out: str) -> dict[str, str]:
    """The final LLM summary's rows, by label."""
    labels = ("LLM calls", "answers", "fell back", "structured")
    out = re.sub(r"\n {10,}(?=\S)", " ", out)  # a row wrapped onto the next lines
    return {
        label: line.removeprefix(label).strip()
        for line in out.splitlines()
        for label in labels
        if line.startswith(label + " ")
    }


def test_auto_against_a_server_refusing_json_schema_settles_on_grammar(
    socialsim, stub_run, saves: Path
):
    result = stub_run("llama", rejects={"json_schema"}, server="llama.cpp")
    assert result.code == 0, result.err
    store = SaveStore(saves)
    assert store.read_meta("llama").structured_modes == {"openai/stub": "grammar"}
    rounds = store.read_rounds("llama")[1:]
    usages = [r.usage for r in rounds]
    # no reply failed its format (the stub's empty speech, asked again in vain, falls back)
    failed = [c for r in rounds for c in r.llm_calls if c.fell_back and c.outcome != "degenerate"]
    assert not failed
    calls = sum(u.calls for u in usages if u)
    structured = sum(u.structured for u in usages if u)
    rows = summary_rows(result.out)
    assert rows["LLM calls"].startswith(f"{calls} in 2 rounds, ")
    # The stub leaves out optional fields: an utterance without "say" is empty (degenerate).
    total = RoundUsage.summed(u for u in usages if u)
    assert rows["answers"] == (
        f"{structured} structured; 0 repaired, 0 clamped, {total.degenerate} degenerate, "
        f"{total.at_cap} at the caps, {total.reasks} re-asked, 0 retries, "
        f"{total.fallbacks} fallbacks, "
        "0 edges left out, 0 still missing"
    )
    share = total.structured_fallbacks / total.structured
    assert rows["fell back"] == f"{share:.1%} of the structured answers"
    assert rows["structured"] == "openai/stub grammar"
    shown = socialsim("show", "llama")
    assert shown.code == 0, shown.err
    assert re.search(r"^structured\s+openai/stub grammar\s*$", shown.out, re.M), shown.out


def test_an_offline_run_prints_no_llm_summary_and_no_modes(socialsim, finished: str, saves: Path):
    assert SaveStore(saves).read_meta(finished).structured_modes == {}
    result = socialsim("resume", finished, "--rounds", "1")
    assert result.code == 0, result.err
    assert summary_rows(result.out) == {}
    assert not re.search(r"^structured\s", socialsim("show", finished).out, re.M)


def test_a_save_without_structured_modes_still_reads(socialsim, finished: str, saves: Path):
    path = saves / finished / "run.json"
    data = json.loads(path.read_text())
    del data["run"]["1"]["structured_modes"]
    path.write_text(json.dumps(data))
    assert SaveStore(saves).read_meta(finished).structured_modes == {}
    assert socialsim("show", finished).code == 0


def test_a_degraded_round_is_saved_then_the_run_exits_2_after_its_summary(
    socialsim, stub_run, saves: Path
):
    result = stub_run("down", faults={"500": 1.0})
    store = SaveStore(saves)
    assert store.round_numbers("down") == [0, 1]
    usage = store.read_round("down", 1).usage
    assert usage is not None and usage.degraded
    assert_one_error(
        result,
        f"round 1 saved in {store.run_dir('down')}; 100% of the structured answers fell back "
        f"(openai/stub at http://127.0.0.1:",
        f"; most common error, {usage.structured}x: InternalServerError after 1 attempts); "
        "fix the server, or go on with --tolerate-fallbacks "
        "(socialsim resume down --tolerate-fallbacks)",
    )
    assert result.err.count("round 1") == 1 and "the round is saved" not in result.err
    # The summary came first, on stdout.
    assert result.out.startswith("down: round 1/2 saved")
    rows = summary_rows(result.out)
    assert rows["LLM calls"].startswith(f"{usage.calls} in 1 round, ")
    assert rows["fell back"] == "100.0% of the structured answers"
    # Going on regardless plays the last round (against the same failing server).
    resumed = socialsim("resume", "down", "--tolerate-fallbacks", "-q")
    assert resumed.code == 0, resumed.err
    assert store.round_numbers("down") == [0, 1, 2]
    assert summary_rows(resumed.out)["LLM calls"].startswith(f"{usage.calls * 2} in 2 rounds, ")


def test_a_server_that_streams_for_ever_costs_cut_calls_and_the_run_goes_on(
    socialsim, stub_run, saves: Path
):
    """A tenth of the replies stream ``"la "`` for ever: each is cut (at ``--max-tokens``
    streamed, at ``--call-timeout`` sent whole), said, counted; both rounds are played."""
    result = stub_run(
        "hostile", "--max-tokens", "100", "--call-timeout", "3", faults={"endless": 0.1}
    )
    assert result.code == 0, result.err
    store = SaveStore(saves)
    assert store.round_numbers("hostile") == [0, 1, 2]
    assert store.read_meta("hostile").mind.call_timeout == 3  # saved with the run's settings
    calls = [c for r in store.read_rounds("hostile")[1:] for c in r.llm_calls]
    cut = [c for c in calls if (c.error or "").endswith("; cut")]
    assert cut and all(c.outcome == "fallback" and c.response is None for c in cut)
    for reason in {c.error for c in cut}:  # said at once, each reason once per run
        assert len(re.findall(rf"socialsim: round \d: {re.escape(reason)}\n", result.err)) == 1
    fallbacks = int(re.search(r"(\d+) fallbacks", summary_rows(result.out)["answers"])[1])
    assert fallbacks >= sum(c.structured != "text" for c in cut)
    resumed = socialsim("resume", "hostile", "--rounds", "1", "--call-timeout", "30", "-q")
    assert resumed.code == 0, resumed.err
    assert store.read_meta("hostile").mind.call_timeout == 30  # resume may change it


def test_a_first_round_that_fails_unexpectedly_leaves_no_run_and_no_lock(
    socialsim, stub_run, saves: Path, monkeypatch: pytest.MonkeyPatch
):
    """The issue's deep JSON raised RecursionError in round 1 and left a ``0/2`` run with a
    stale lock in ``list``; any surprise in the first round of a new run leaves nothing."""

    def surprise(*args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("engine.llm.verdict.parse", surprise)
    with pytest.raises(RecursionError):
        stub_run("surprise")
    assert not (saves / "surprise").exists()
    assert [p.name for p in saves.iterdir()] == [] if saves.exists() else True
    listed = socialsim("list")
    assert listed.code == 0 and "surprise" not in listed.out


# -- bare --help -----------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["60", "100"])
def test_bare_help_lists_every_command_in_order_under_both_options(columns: str):
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TERMINAL_WIDTH")}
    env["COLUMNS"] = columns

    def cli(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "tui.cli", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return proc.stdout

    from tui.cli import COMMANDS

    shown = cli("--help")
    assert shown == cli("-h")
    assert "Run and inspect LLM multi-agent social simulations." in shown
    listed = [m.group(1) for m in re.finditer(r"^│ (\w+) ", shown, re.MULTILINE)]
    assert listed == [*COMMANDS, "label"]


# -- usage errors, bounds and edge cases: one line, exit 2, nothing written --------------

USAGE_ERRORS = {
    "rounds-zero": (["run", "{lib}", "--rounds", "0"], ["run: ", "--rounds '"]),
    "rounds-huge": (["run", "{lib}", "--rounds", "1000000000"], ["--rounds '", "10000"]),
    "rounds-bignum": (["run", "{lib}", "--rounds", "9" * 23], ["--rounds '", "10000"]),
    "resume-huge": (["resume", "base", "--rounds", "10001"], ["resume: ", "--rounds '"]),
    "at-not-int": (["branch", "base", "--at", "abc"], ["branch: ", "--at 'abc'", "integer"]),
    "unknown-option": (["run", "{lib}", "--bogus"], ["run: ", "No such option: --bogus"]),
    "unknown-root-option": (["--bogus"], ["No such option: --bogus", "socialsim --help"]),
    "unknown-command": (["frobnicate"], ["No such command 'frobnicate'"]),
    "missing-argument": (["show"], ["show: ", "Missing argument"]),
    "missing-option": (["branch", "base"], ["branch: ", "--at"]),
}


@pytest.mark.parametrize("case", list(USAGE_ERRORS))
def test_usage_errors_are_one_line(socialsim, saves: Path, finished: str, lib_id: str, case: str):
    args, fragments = USAGE_ERRORS[case]
    before = snapshot(saves)
    result = socialsim(*[a.format(lib=lib_id) for a in args])
    assert_one_error(result, *fragments)
    assert "╭" not in result.err + result.out
    assert snapshot(saves) == before


def test_usage_error_in_a_process_is_one_line(tmp_path: Path):
    proc = _cli("run", "tavern", "--rounds", "0", "--saves", str(tmp_path / "s"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(ERROR), proc.stderr
    assert not (tmp_path / "s").exists()


def test_resume_may_not_extend_a_run_past_the_round_limit(socialsim, saves: Path, finished):
    before = snapshot(saves)
    result = socialsim("resume", finished, "--rounds", "9999")
    assert_one_error(result, "--rounds 9999 after round 2", "1 to 10,000 rounds", "10,001")
    assert snapshot(saves) == before


def test_branch_refuses_an_empty_run_id_like_run(socialsim, saves: Path, finished, lib_id):
    before = snapshot(saves)
    for args in (
        ["branch", finished, "--at", "1", "--run-id", ""],
        ["run", lib_id, "--run-id", ""],
        ["replay", finished, "--run-id", ""],
    ):
        assert_one_error(socialsim(*args), "run id ''", "plain name")
    assert snapshot(saves) == before


@pytest.mark.parametrize("command", [["list"], ["show", "base"], ["run", "{lib}", "-q"]])
def test_saves_pointing_at_a_file_is_one_line(run_cli, tmp_path: Path, lib_id, command):
    file = tmp_path / "saves.txt"
    file.write_text("not a folder")
    argv = [a.format(lib=lib_id) for a in command]
    assert_one_error(run_cli(*argv, "--saves", str(file)), str(file), "is a file, not a folder")
    assert file.read_text() == "not a folder"


def test_a_scenario_with_an_escape_sequence_is_refused_before_anything_is_written(
    socialsim, saves: Path, tmp_path: Path, mini_data: dict
):
    mini_data["agents"][0]["name"] = "Ann\u001b[31mRED\u001b]0;PWNED\u0007x"
    path = write_scenario(tmp_path / "esc.toml", mini_data)
    for args in (["run", str(path)], ["validate", str(path)]):
        result = socialsim(*args)
        assert_one_error(result, "esc.toml", "agents.0.name", "U+001B")
        assert "\x1b" not in result.err + result.out
    assert not saves.exists()


def test_error_lines_escape_control_characters(run_cli, tmp_path: Path):
    path = tmp_path / "a\x1b[2Jb\nc.toml"
    result = run_cli("validate", str(path))
    assert_one_error(result, "a\\x1b[2Jb\\nc.toml")


def test_the_console_never_writes_control_characters_of_the_text():
    import io

    from rich.table import Table
    from rich.text import Text

    from tui.cli.base import make_console

    console = make_console()
    console.file = io.StringIO()
    table = Table()
    table.add_column("who")
    table.add_row(Text("Ann\x1b[31mRED\x1b]0;PWNED\x07x"))
    table.add_row(Text("exe.\u202etxt"))  # a bidi override: not a control, not printable
    console.print(table)
    console.print("plain \x1b[2J text", style="bold")
    assert "\x1b" not in console.file.getvalue() and "\x07" not in console.file.getvalue()
    assert "\u202e" not in console.file.getvalue() and "exe.txt" in console.file.getvalue()
    assert "Ann[31mRED]0;PWNEDx" in console.file.getvalue()


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_the_clis_console_prints_text_as_rich_does(terminal: bool) -> None:
    """A one-line text that fits is drawn without rich's wrap, to the same bytes."""
    import io

    from rich.console import Console, Group
    from rich.text import Text

    from tui.cli.base import make_console

    texts = [
        Text.assemble(("  Fav ", "dim"), ("-0.22", "bold red"), "  S 0.09  balance 51%"),
        Text("  A0001→A0041: rival → neutral (fav -0.09) — Round 60", style="italic"),
        Text("Round 60/200", style="bold cyan", end=""),
        Text("word " * 30, style="yellow"),  # wider than the console: wrapped
        Text("two\nlines\tand a tab"),
        Text("centred", justify="center"),
        Text("日本語の言葉 " * 6),
    ]
    plain = type(make_console())  # the CLI's console, built as a terminal or a pipe
    shown = {"force_terminal": True, "color_system": "truecolor"} if terminal else {}
    for width in (20, 80, 160):
        ours = plain(highlight=False, emoji=False, width=width, file=io.StringIO(), **shown)
        theirs = Console(highlight=False, emoji=False, width=width, file=io.StringIO(), **shown)
        for console in (ours, theirs):
            console.print(Group(*texts), crop=False)
            for text in texts:
                console.print(text)
        assert ours.file.getvalue() == theirs.file.getvalue(), width


def test_sigterm_during_a_run_says_which_round_was_saved(tmp_path: Path):
    import signal
    import time

    folder = tmp_path / "saves"
    argv = ["run", "tavern", "--rounds", "10000", "-q", "--run-id", "long", "--saves", str(folder)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rounds = folder / "long" / "rounds"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(rounds.glob("*.json*"))) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    match = re.fullmatch(
        r"socialsim: terminated; run long is saved up to round (\d+)/10000 in (.+); "
        r"socialsim resume long continues it",
        lines[0],
    )
    assert match, lines[0]
    assert SaveStore(folder).round_numbers("long")[-1] == int(match.group(1))
    assert "Traceback" not in out + err
