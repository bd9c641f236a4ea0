"""Damaged, symlinked, unreadable and read-only saves: one clear line, exit 2, nothing
changed; leftovers of killed writers cleaned by the next ``list``; exports whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import SaveStore
from engine.reports.card import FILE as CARD_FILE
from engine.reports.export import COLUMNS

ERROR = "socialsim: error: "
#: What an export writes.
EXPORTED = {*(f"{n}.csv" for n in COLUMNS), CARD_FILE}


def one_error(result, fragment: str) -> None:
    assert result.code == 2, result
    assert result.err.startswith(ERROR) and result.err.count("\n") == 1, result.err
    assert fragment in result.err, result.err


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: (size, mtime) by relative path (the lock file aside)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.fixture
def good(socialsim, saves: Path) -> Path:
    """A finished 6-round offline run ``good``."""
    assert socialsim("run", "tavern", "--rounds", "6", "--run-id", "good", "-q").code == 0
    return saves / "good"


# -- symlinks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["resume", "goodlink", "--rounds", "1", "-q"],
        ["show", "goodlink"],
        ["export", "goodlink", "--out", "OUT"],
        ["branch", "goodlink", "--at", "2"],
        ["delete", "goodlink", "--yes"],
    ],
    ids=lambda a: a[0],
)
def test_a_symlinked_run_folder_is_refused(socialsim, good: Path, saves: Path, tmp_path, argv):
    (saves / "goodlink").symlink_to("good")
    before = snapshot(good)
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    one_error(socialsim(*argv), "symlinked run folder")
    assert snapshot(good) == before
    assert (saves / "goodlink").is_symlink()
    assert not (tmp_path / "out").exists()
    listed = socialsim("list")
    assert listed.code == 0 and "symlinked run folder" in listed.out


# -- damage found by list ------------------------------------------------------------------


def _age_index(run: Path) -> None:
    """Date the index 10 s back: the damage below happens after the run was written."""
    index = run / "index.jsonl"
    t = index.stat().st_mtime - 10
    os.utime(index, (t, t))


def test_list_flags_a_truncated_middle_round(socialsim, good: Path):
    path = good / "rounds" / "000003.json.gz"
    path.write_bytes(path.read_bytes()[:-7])
    listed = socialsim("list")
    assert listed.code == 0
    assert "000003.json.gz: damaged round file" in listed.out
    one_error(socialsim("show", "good"), "000003")


def test_list_flags_a_bit_flipped_middle_round(socialsim, good: Path):
    _age_index(good)
    path = good / "rounds" / "000003.json.gz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    listed = socialsim("list")
    assert listed.code == 0
    assert "000003.json.gz: damaged round file" in listed.out
    assert "checksum" in listed.out
    one_error(socialsim("export", "good", "--out", str(good.parent.parent / "x")), "000003")


def test_list_reads_a_healthy_runs_round_files_once(socialsim, good: Path, monkeypatch):
    from engine.saves import runfiles

    reads: list[Path] = []
    real = runfiles.read_regular
    monkeypatch.setattr(runfiles, "read_regular", lambda p, *a: reads.append(p) or real(p, *a))
    for _ in range(2):
        (row,) = SaveStore(good.parent).list_runs()
        assert row.ok and row.rounds_done == 6
    assert [p.name for p in reads if p.parent.name == "rounds"] == [
        f"{n:06d}.json.gz" for n in range(7)
    ]


# -- leftovers of killed writers ------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


def test_list_removes_and_reports_leftovers_of_writers_that_are_gone(
    socialsim, good: Path, saves: Path
):
    dead = _dead_pid()
    staging = saves / f".branch1.{dead}.abcd1234"
    (staging / "rounds").mkdir(parents=True)
    (staging / "run.json").write_text("{}")
    deleting = saves / ".deleting-old-1f2e"
    deleting.mkdir()
    temps = [good / "rounds" / ".000007.json.gz.x1y2.tmp", good / ".run.json.a1b2.tmp"]
    for t in temps:
        t.write_bytes(b"half")
    live = saves / f".branch2.{os.getpid()}.abcd1234"
    live.mkdir()
    before = snapshot(good)
    listed = socialsim("list")
    assert listed.code == 0 and "good" in listed.out
    for path in (staging, deleting, *temps):
        assert not path.exists()
        assert str(path) in listed.err
    assert live.exists() and str(live) not in listed.err  # its writer is alive (this test)
    assert snapshot(good) == {k: v for k, v in before.items() if ".tmp" not in k}
    assert socialsim("list").err == ""


def test_temp_files_of_a_run_in_use_are_kept(good: Path, saves: Path):
    temp = good / "rounds" / ".000007.json.gz.x1y2.tmp"
    temp.write_bytes(b"being written")
    store = SaveStore(saves)
    lock = store.lock("good")
    try:
        assert store.clean_leftovers() == []
        assert temp.exists()
    finally:
        lock.release()
    assert store.clean_leftovers() == [temp]


# -- exports ------------------------------------------------------------------------------


def test_an_export_replaces_an_earlier_one_as_a_whole(socialsim, good: Path, tmp_path: Path):
    out = tmp_path / "out"
    assert socialsim("export", "good", "--out", str(out)).code == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(first) == EXPORTED
    assert socialsim("resume", "good", "--rounds", "2", "-q").code == 0
    assert socialsim("export", "good", "--out", str(out)).code == 0
    second = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(second) == set(first) and second["metrics.csv"] != first["metrics.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "saves"]  # nothing hidden


def test_a_failed_export_leaves_nothing_and_an_earlier_one_whole(
    socialsim, good: Path, tmp_path: Path
):
    old = tmp_path / "old"
    assert socialsim("export", "good", "--out", str(old)).code == 0
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    assert socialsim("resume", "good", "--rounds", "1", "-q").code == 0
    (good / "rounds" / "000004.json.gz").write_bytes(b"\x1f\x8b broken")
    one_error(socialsim("export", "good", "--out", str(tmp_path / "new")), "000004")
    one_error(socialsim("export", "good", "--out", str(old)), "000004")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old", "saves"]
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before


def test_an_export_keeps_other_files_in_its_folder(socialsim, good: Path, tmp_path: Path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert socialsim("export", "good", "--out", str(out)).code == 0
    assert (out / "notes.txt").read_text() == "keep me"
    assert {p.name for p in out.iterdir()} == {"notes.txt", *EXPORTED}


# -- permissions (chmod, or for root, which ignores it, the same failures emulated) ----------

AS_ROOT = os.geteuid() == 0


def _denied(*paths: str | os.PathLike) -> PermissionError:
    return PermissionError(13, "Permission denied", str(paths[0]))


def emulate_unreadable(monkeypatch, folder: Path) -> None:
    """What ``chmod 000`` on ``folder`` does: every access under it fails with EACCES."""

    def under(path) -> bool:
        return folder in Path(os.fsdecode(path)).parents

    def guard(real):
        def call(path, *args, **kwargs):
            if isinstance(path, str | bytes | os.PathLike) and under(path):
                raise _denied(path)
            return real(path, *args, **kwargs)

        return call

    for name in ("listdir", "stat", "open", "scandir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    monkeypatch.setattr(Path, "read_bytes", guard(Path.read_bytes))
    monkeypatch.setattr(Path, "read_text", guard(Path.read_text))


def emulate_read_only(monkeypatch, folder: Path) -> None:
    """What ``chmod 555`` on ``folder`` does: no entry in it can be created, removed or
    renamed, and ``os.access`` says it cannot be written."""
    real_access, real_open = os.access, os.open

    def inside(path) -> bool:
        return Path(os.fsdecode(path)).parent == folder

    def access(path, mode, *args, **kwargs):
        if Path(os.fsdecode(path)) == folder and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and inside(path) and not os.path.lexists(path):
            raise _denied(path)
        return real_open(path, flags, *args, **kwargs)

    def entries(name: str):
        real = getattr(os, name)

        def call(*args, **kwargs):
            paths = [a for a in args[:2] if isinstance(a, str | bytes | os.PathLike)]
            exists = name == "mkdir" and os.path.lexists(args[0])  # EEXIST comes first
            if any(inside(p) for p in paths) and not exists:
                raise _denied(*paths)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "open", open_)
    for name in ("mkdir", "rename", "replace", "unlink", "rmdir", "link"):
        monkeypatch.setattr(os, name, entries(name))


def test_an_unreadable_run_is_listed_as_damaged(socialsim, good: Path, saves: Path, monkeypatch):
    assert socialsim("run", "tavern", "--rounds", "1", "--run-id", "other", "-q").code == 0
    if AS_ROOT:
        emulate_unreadable(monkeypatch, good)
    else:
        good.chmod(0)
    try:
        listed = socialsim("list")
        assert listed.code == 0 and "other" in listed.out and "good" in listed.out, listed
        assert "Permission denied" in listed.out
        for argv in (
            ["show", "good"],
            ["resume", "good", "-q"],
            ["export", "good", "--out", str(saves.parent / "x")],
        ):
            one_error(socialsim(*argv), "good")
        assert not (saves.parent / "x").exists()
    finally:
        good.chmod(0o755)


@pytest.mark.parametrize("where", ["rounds", "run", "saves"])
def test_a_read_only_folder_changes_nothing(socialsim, good: Path, saves: Path, where, monkeypatch):
    folder = {"rounds": good / "rounds", "run": good, "saves": saves}[where]
    before = snapshot(good)
    with monkeypatch.context() as patch:
        if AS_ROOT:
            emulate_read_only(patch, folder)
        else:
            folder.chmod(0o555)
        try:
            resumed = socialsim("resume", "good", "--rounds", "1", "-q")
            deleted = socialsim("delete", "good", "--yes")
        finally:
            folder.chmod(0o755)
    if where != "saves":
        one_error(resumed, "cannot write the run")
        assert snapshot(good) == before
    one_error(deleted, "good")
    assert (saves / "good" / "run.json").is_file()
    assert not [p for p in saves.iterdir() if p.name.startswith(".") and p.name != ".verified"]


def test_a_run_that_cannot_be_written_is_refused_before_anything_changes(
    socialsim, good: Path, monkeypatch
):
    """What a read-only rounds/ folder does, for root too: the access check fails."""
    real = os.access

    def access(path, mode, **kwargs):
        return Path(path).name != "rounds" and real(path, mode, **kwargs)

    before = snapshot(good)
    monkeypatch.setattr(os, "access", access)
    one_error(socialsim("resume", "good", "--rounds", "1", "-q"), "cannot write the run")
    assert snapshot(good) == before


# -- the app's run browser ---------------------------------------------------------------------


async def test_the_app_browser_lists_damaged_runs_and_stays_open(
    good: Path, saves: Path, hermetic_app: None
):
    from textual.widgets import DataTable, Label

    from tui.app import build_app
    from tui.screens.runs import RunBrowser

    _age_index(good)
    path = good / "rounds" / "000002.json.gz"
    data = bytearray(path.read_bytes())
    data[40] ^= 0x01
    path.write_bytes(bytes(data))
    (saves / "goodlink").symlink_to("good")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the runs are listed on a worker thread
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser)
        assert not browser.rows["good"].ok and "checksum" in browser.rows["good"].reason
        assert not browser.rows["goodlink"].ok
        assert browser.rows[app.sim.run_id].ok
        table = browser.query_one(DataTable)
        table.move_cursor(row=list(browser.rows).index("good"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is browser and app.is_running
        assert "Cannot open good" in str(browser.query_one("#message", Label).content)


def test_an_export_that_cannot_be_moved_into_place_keeps_the_earlier_one(
    socialsim, good: Path, tmp_path: Path, monkeypatch
):
    out = tmp_path / "out"
    assert socialsim("export", "good", "--out", str(out)).code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert socialsim("resume", "good", "--rounds", "1", "-q").code == 0
    real = os.rename

    def rename(src, dst):
        if Path(dst) == out and ".export-" in Path(src).name:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    one_error(socialsim("export", "good", "--out", str(out)), "No space left on device")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "saves"]


async def test_the_app_browser_removes_and_reports_leftovers(
    good: Path, saves: Path, hermetic_app: None
):
    from textual.widgets import Label

    from tui.app import build_app

    temp = good / "rounds" / ".000009.json.gz.k1l2.tmp"
    temp.write_bytes(b"half")
    staging = saves / f".gone.{_dead_pid()}.abcd1234"
    staging.mkdir()
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        writing = saves / app.sim.run_id / "rounds" / ".000001.json.gz.m3n4.tmp"
        writing.write_bytes(b"the open run's, being written")
        await pilot.press("o")
        await pilot.pause()
        message = str(app.screen.query_one("#message", Label).content)
        assert "Removed 2 leftover(s)" in message and temp.name in message
        assert not temp.exists() and not staging.exists()
        assert writing.exists()  # the app holds that run's lock: its writer is alive
