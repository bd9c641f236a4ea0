"""The writers' sweep (``-m slow``): every kind of writer at once on one run (survey, rate,
label, resume, branch, export, report, delete), as separate processes; then every command
on a read-only and on a full saves folder (real tmpfs mounts, so it holds as root too).
None may lose a record or print a traceback: each works or says one line and exits 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import SaveStore
from engine.studies.labels.study import load_study

pytestmark = pytest.mark.slow

AGENTS = ("Alice", "Jane", "Megan", "Lily")
CODE = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"


def start(saves: Path, *argv: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-c", CODE, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def outcome(proc: subprocess.Popen[bytes], argv: tuple[str, ...]) -> int:
    """The exit code of ``proc``, checked: 0, or 2 with one ``socialsim: error:`` line."""
    _, err = proc.communicate(timeout=600)
    text = err.decode()
    assert "Traceback" not in text, (argv, text)
    if proc.returncode != 0:
        assert proc.returncode == 2, (argv, proc.returncode, text)
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("socialsim: error: "), (argv, text)
    return proc.returncode


def fill_sheet(sheet: Path, label: str) -> None:
    import csv

    with sheet.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["label"] = label
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def prepare(saves: Path, tmp: Path) -> tuple[Path, Path]:
    """Run ``t`` (4 rounds), study ``st`` on it and two filled sheets."""
    for argv in (
        ("run", "bullying", "--rounds", "4", "--run-id", "t", "-q"),
        ("label", "new", "st", "--runs", "t", "--sample", "8"),
        ("label", "sheet", "st", "--out", str(tmp / "a.csv")),
    ):
        assert outcome(start(saves, *argv), argv) == 0
    shutil.copy(tmp / "a.csv", tmp / "b.csv")
    fill_sheet(tmp / "a.csv", "increase")
    fill_sheet(tmp / "b.csv", "decrease")
    return tmp / "a.csv", tmp / "b.csv"


@pytest.mark.parametrize("trial", range(3))
def test_every_kind_of_writer_at_once_loses_nothing(saves: Path, tmp_path: Path, trial: int):
    a, b = prepare(saves, tmp_path)
    commands = [
        *(("survey", "t", "--questionnaire", "rses", "--agent", x, "--rounds", "0,2,4")
          for x in AGENTS),
        ("rate", "t"),
        ("rate", "t"),
        ("label", "import", "st", "--rater", "ann", str(a)),
        ("label", "import", "st", "--rater", "bob", str(b)),
        ("resume", "t", "--rounds", "2", "-q"),
        ("branch", "t", "--at", "2", "--run-id", "b1"),
        ("branch", "t", "--at", "3", "--run-id", "b2"),
        ("export", "t", "--out", str(tmp_path / "e")),
        ("report", "t", "--out", str(tmp_path / "r.html")),
    ]  # fmt: skip
    procs = [(start(saves, *argv), argv) for argv in commands]
    codes = {argv: outcome(proc, argv) for proc, argv in procs}
    assert {a[0]: c for a, c in codes.items() if c} == {}, codes
    store = SaveStore(saves)
    surveys = store.read_measurements("t")["surveys"]
    assert sorted((s["agent"], s["round"]) for s in surveys) == sorted(
        (x, r) for x in AGENTS for r in (0, 2, 4)
    )
    ratings = store.read_measurements("t")["ratings"]
    assert len(ratings) % 2 == 0 and ratings[: len(ratings) // 2] == ratings[len(ratings) // 2 :]
    study = load_study(saves, "st")
    assert set(study.labels) == {"ann", "bob"} and len(study.labels["ann"]) == 8
    rows = {r.run_id: r for r in store.list_runs()}
    assert all(r.ok for r in rows.values()) and rows["t"].rounds_done == 6
    # Delete against surveys: every survey is saved before the delete or fails plainly.
    commands = [
        ("delete", "t", "-y"),
        *(("survey", "t", "--questionnaire", "rses", "--agent", x, "--rounds", "0")
          for x in AGENTS),
    ]  # fmt: skip
    procs = [(start(saves, *argv), argv) for argv in commands]
    for proc, argv in procs:
        outcome(proc, argv)
    assert "t" not in {r.run_id for r in SaveStore(saves).list_runs()}
    assert not (saves / "t").exists()


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs mounted at a fresh folder (skipped where it cannot be mounted)."""
    point = tmp_path / "mnt"
    point.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(point)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.decode().strip()})")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def every_command(out: Path) -> list[tuple[str, ...]]:
    """Every command touching the saves folder, outputs outside it."""
    return [
        ("list",),
        ("show", "t"),
        ("card", "t"),
        ("diff", "t", "t"),
        ("queue", "t"),
        ("export", "t", "--out", str(out / "e")),
        ("report", "t", "--out", str(out / "r.html")),
        ("survey", "t", "--questionnaire", "rses", "--agent", "Alice", "--rounds", "0,2"),
        ("rate", "t"),
        ("resume", "t", "--rounds", "1", "-q"),
        ("branch", "t", "--at", "2", "--run-id", "b"),
        ("replay", "t", "--run-id", "rp"),
        ("run", "tavern", "--rounds", "2", "--run-id", "n", "-q"),
        ("label", "new", "st2", "--runs", "t", "--sample", "4"),
        ("label", "import", "st", "--rater", "ann", str(out / "a.csv")),
        ("label", "report", "st"),
        ("trial", "tavern", "--arms", "none", "--inject", "Rain.@2", "--seeds", "1",
         "--fork-at", "1", "--rounds", "2", "--workers", "1"),
    ]  # fmt: skip


def contents(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock") and p.parent.name != ".verified"
    }


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_every_command_on_a_read_only_or_full_saves_folder(
    mounted: Path, tmp_path: Path, kind: str
) -> None:
    saves = mounted / "saves"
    prepare(saves, tmp_path)  # the sheets are in tmp_path, outside the mount
    if kind == "read-only":
        subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    else:
        with (mounted / "filler").open("wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * (1 << 16))
                    filler.flush()
            except OSError:
                pass
    before = contents(saves)
    failed = []
    for argv in every_command(tmp_path):
        if outcome(start(saves, *argv), argv) != 0:
            failed.append(argv[0])
    assert "survey" in failed and "run" in failed  # what must write cannot
    after = contents(saves)
    if kind == "read-only":
        assert after == before
    else:  # what was saved is still there, byte for byte
        assert {k: after.get(k) for k in before} == before
    rows = {r.run_id: r for r in SaveStore(saves).list_runs()}
    assert rows["t"].ok and rows["t"].rounds_done == 4
    deleted = outcome(start(saves, "delete", "t", "-y"), ("delete",))  # a rename: no space
    assert deleted == (2 if kind == "read-only" else 0)
    assert (saves / "t").exists() == (kind == "read-only")
