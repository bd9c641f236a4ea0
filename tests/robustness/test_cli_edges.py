"""Command-line edge cases: every bad argument is one line ``socialsim: error: ...`` with
exit code 2 (1 for a declined confirmation), and changes nothing in the saves folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.textsafe import unsafe_char

ROOT = Path(__file__).resolve().parents[2]
BIG = "9" * 23

#: argv (``{tmp}``: a scratch folder) -> a fragment of the one error line.
EDGES: dict[str, tuple[list[str], str]] = {
    "seed-not-int": (["run", "tavern", "--seed", "abc"], "--seed 'abc'"),
    "seed-negative": (["run", "tavern", "--seed", "-1"], "--seed '-1': a seed is"),
    "seed-bignum": (["run", "tavern", "--seed", BIG], f"--seed '{BIG}': a seed is"),
    "tui-seed-negative": (["tui", "--seed", "-7"], "--seed '-7'"),
    "sweep-seed-negative": (["sweep", "govsim", "--seed", "-1"], "--seed '-1'"),
    "recast-seed-negative": (["recast", "student-council", "--seed", "-1"], "--seed '-1'"),
    "name-escape": (["run", "tavern", "--name", "a\x1b]0;PWNED\x07"], "U+001B"),
    "name-newline": (["run", "tavern", "--name", "a\nb"], "--name 'a\\nb'"),
    "name-too-long": (["run", "tavern", "--name", "x" * 201], "longer than 200"),
    "branch-name-escape": (["branch", "base", "--at", "1", "--name", "\x1b[2J"], "U+001B"),
    "export-empty-out": (["export", "base", "--out", ""], "--out '': an empty path"),
    "export-blank-out": (["export", "base", "--out=  "], "--out '  ': an empty path"),
    "schema-empty-out": (["schema", "--out", ""], "--out ''"),
    "sweep-empty-out": (["sweep", "govsim", "--out", ""], "--out ''"),
    "rounds-negative": (["run", "tavern", "--rounds", "-1"], "--rounds '-1'"),
    "rounds-over": (["run", "tavern", "--rounds", "10001"], "--rounds '10001'"),
    "rounds-bignum": (["run", "tavern", "--rounds", BIG], f"--rounds '{BIG}'"),
    "resume-rounds-over": (["resume", "base", "--rounds", BIG], f"--rounds '{BIG}'"),
    "resume-past-limit": (["resume", "base", "--rounds", "9999"], "1 to 10,000 rounds"),
    "show-round-negative": (["show", "base", "--round", "-1"], "--round -1"),
    "show-round-bignum": (["show", "base", "--round", BIG], f"--round {BIG}"),
    "show-round-text": (["show", "base", "--round", "abc"], "--round 'abc'"),
    "branch-at-text": (["branch", "base", "--at", "abc"], "--at 'abc'"),
    "branch-at-equals-text": (["branch", "base", "--at=x1"], "--at 'x1'"),
    "branch-at-negative": (["branch", "base", "--at", "-1"], "--at -1"),
    "branch-at-bignum": (["branch", "base", "--at", BIG], f"--at {BIG}"),
    "branch-empty-id": (["branch", "base", "--at", "1", "--run-id", ""], "run id ''"),
    "branch-dot-id": (["branch", "base", "--at", "1", "--run-id", "."], "run id '.'"),
    "branch-space-id": (["branch", "base", "--at", "1", "--run-id", "a b"], "'a b'"),
    "replay-empty-id": (["replay", "base", "--run-id", ""], "run id ''"),
    "run-empty-id": (["run", "tavern", "--run-id", ""], "run id ''"),
    "run-escape-id": (["run", "tavern", "--run-id", "a\x1b[2J"], "'a\\x1b[2J'"),
    "delete-empty": (["delete", "", "--yes"], "run id ''"),
    "delete-dot": (["delete", ".", "--yes"], "run id '.'"),
    "delete-parent": (["delete", "..", "--yes"], "run id '..'"),
    "resume-empty": (["resume", ""], "run id ''"),
    "run-empty-scenario": (["run", ""], "unknown scenario ''"),
    "run-dev-zero": (["run", "/dev/zero"], "not a regular file"),
    "validate-folder": (["validate", "/"], "Is a directory"),
    "export-to-a-file": (["export", "base", "--out", "/dev/null"], "--out /dev/null"),
    "schema-to-a-folder": (["schema", "--out", "/"], "--out '/': a folder"),
    "unknown-command": (["frobnicate"], "No such command 'frobnicate'"),
    "unknown-option": (["list", "--frobnicate"], "No such option: --frobnicate"),
    "extra-argument": (["show", "base", "extra"], "unexpected extra argument"),
    "missing-argument": (["export", "base"], "Missing option '--out'"),
    "zero-concurrency": (["run", "tavern", "--max-concurrency", "0"], "--max-concurrency"),
    "empty-model": (["run", "tavern", "--model", ""], "--model ''"),
    "bad-prior": (["run", "tavern", "--prior", "xx"], "--prior 'xx'"),
    "saves-is-a-file": (["list", "--saves", "{tmp}/file"], "is a file, not a folder"),
    "saves-empty": (["run", "tavern", "--rounds", "1", "--saves", ""], "--saves '': an empty"),
    "list-saves-empty": (["list", "--saves", ""], "--saves ''"),
    "tui-offline-confirm-nan": (["tui", "tavern", "--confirm-above", "nan"], "'nan': give USD"),
    "trial-seed-negative": (["trial", "bullying", "--seeds", "-1", "--yes"], "--seeds '-1'"),
    "trial-empty-out": (["trial", "bullying", "--out", "", "--yes"], "--out ''"),
    "trial-out-folder": (["trial", "bullying", "--out", "/", "--yes"], "--out '/': a folder"),
    "trial-out-nowhere": (["trial", "bullying", "--out", "/no/such/x.csv"], "no folder '/no/such'"),
    "sweep-out-folder": (["sweep", "govsim", "--out", "/", "--yes"], "--out '/': a folder"),
    "sweep-out-dev-full": (["sweep", "govsim", "--out", "/dev/full"], "not a regular file"),
    "sweep-out-nowhere": (["sweep", "govsim", "--out", "/no/such/x.csv"], "no folder '/no/such'"),
    "sheet-out-folder": (["label", "sheet", "s", "--out", "/"], "--out '/': a folder"),
    "trial-out-dev-full": (["trial", "bullying", "--out", "/dev/full"], "not a regular file"),
    "trial-seeds-too-many": (["trial", "bullying", "--seeds", "1-100000000"], "at most 10,000"),
    "trial-outcome-unknown": (["trial", "bullying", "--outcome", "nosuch"], "no outcome"),
    "trial-resume-seeds": (["trial", "t", "--resume", "--seeds", "1-20"], "saved spec"),
}


@pytest.fixture
def base(socialsim, saves: Path) -> str:
    """A finished two-round run ``base`` of the tavern."""
    result = socialsim("run", "tavern", "--rounds", "2", "--run-id", "base", "-q")
    assert result.code == 0, result.err
    return "base"


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` but the verdicts on round files (a cache, not a run)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if ".verified" not in p.relative_to(folder).parts
    }


@pytest.mark.parametrize("case", list(EDGES))
def test_a_bad_argument_is_one_line_and_changes_nothing(
    socialsim, saves: Path, tmp_path: Path, base: str, case: str
):
    args, fragment = EDGES[case]
    (tmp_path / "file").write_text("x")
    before = _tree(saves)
    result = socialsim(*[a.format(tmp=tmp_path) for a in args])
    assert result.code == 2, (result.code, result.out, result.err)
    line = result.err.rstrip("\n")
    assert "\n" not in line and unsafe_char(line) is None, result.err
    assert line.startswith("socialsim: error: ") and fragment in line, line
    assert "Traceback" not in result.out + result.err
    assert _tree(saves) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "saves"]  # nothing written


def test_a_declined_delete_changes_nothing(socialsim, saves: Path, base: str, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    before = _tree(saves)
    result = socialsim("delete", base)
    assert result.code == 1
    assert _tree(saves) == before


def test_a_delete_without_an_answer_is_aborted(socialsim, saves: Path, base: str, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    before = _tree(saves)
    result = socialsim("delete", base)
    assert result.code == 1 and result.err.endswith("socialsim: aborted\n"), result.err
    assert _tree(saves) == before


@pytest.mark.parametrize(
    "args",
    [
        ["--keymap", "/dev/zero"],
        ["--keymap", "{tmp}/deep.toml"],
        ["--saves", "{tmp}/file"],
    ],
    ids=["keymap-dev-zero", "keymap-deep", "saves-is-a-file"],
)
def test_the_app_refuses_bad_files_in_one_line_before_it_starts(tmp_path: Path, args):
    (tmp_path / "deep.toml").write_text("keys = " + "[" * 3000 + "]" * 3000)
    (tmp_path / "file").write_text("x")
    env = {**os.environ, "SOCIALSIM_SAVES": str(tmp_path / "saves"), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", "tui", *[a.format(tmp=tmp_path) for a in args]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("socialsim: error: ")
    assert not (tmp_path / "saves").exists()


@pytest.mark.parametrize("args", [["--help"], ["scenarios"]], ids=["help", "scenarios"])
def test_a_reader_that_leaves_early_gets_no_traceback(args):
    """``socialsim --help | head``: stdout's reader is gone before the first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tui.cli", *args],
            cwd=ROOT,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1)
