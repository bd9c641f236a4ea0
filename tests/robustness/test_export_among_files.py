"""An export into a folder that holds other files: those files are never touched; the
export's own files are replaced as a set (an error puts the earlier ones back), and a kill
while they are renamed in leaves the folder marked incomplete until the next export."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from engine.reports.staging import INCOMPLETE

ERROR = "socialsim: error: "


def contents(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def out(socialsim, saves: Path, tmp_path: Path) -> Path:
    """A folder holding the user's notes, a sub-folder of theirs and an export of run
    ``good`` (3 rounds), after which ``good`` played 2 more rounds."""
    assert socialsim("run", "tavern", "--rounds", "3", "--run-id", "good", "-q").code == 0
    folder = tmp_path / "out"
    (folder / "mine").mkdir(parents=True)
    (folder / "notes.txt").write_text("the user's own notes")
    (folder / "mine" / "plot.png").write_bytes(b"\x89PNG")
    assert socialsim("export", "good", "--out", str(folder)).code == 0
    assert socialsim("resume", "good", "--rounds", "2", "-q").code == 0
    return folder


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (no except OSError clause catches it)."""


def _replace_failing(monkeypatch, out: Path, at: int, error: BaseException) -> None:
    real, calls = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        if Path(dst).parent == out:
            calls[0] += 1
            if calls[0] == at:
                raise error
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize("at", [1, 4, 10])
def test_a_failed_rename_puts_the_earlier_export_back(socialsim, out: Path, monkeypatch, at):
    before = contents(out)
    with monkeypatch.context() as patch:
        _replace_failing(patch, out, at, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        result = socialsim("export", "good", "--out", str(out))
    assert result.code == 2 and result.err.startswith(ERROR) and result.err.count("\n") == 1
    assert "No space left on device" in result.err
    assert contents(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["out", "saves"]


def test_a_kill_while_renaming_leaves_the_folder_marked_then_the_next_export_is_whole(
    socialsim, out: Path, monkeypatch
):
    with monkeypatch.context() as patch:
        _replace_failing(patch, out, 4, Killed())
        with pytest.raises(Killed):
            socialsim("export", "good", "--out", str(out))
    assert (out / INCOMPLETE).is_file()  # the mix says what it is
    assert (out / "notes.txt").read_text() == "the user's own notes"
    assert socialsim("export", "good", "--out", str(out)).code == 0
    assert not (out / INCOMPLETE).exists()
    assert (out / "notes.txt").read_text() == "the user's own notes"
    assert (out / "mine" / "plot.png").read_bytes() == b"\x89PNG"
    rounds = {line.split(",")[1] for line in (out / "emotions.csv").read_text().splitlines()[1:]}
    assert rounds == {"0", "1", "2", "3", "4", "5"}  # the new export, all of it


def test_the_other_files_keep_their_identity(socialsim, out: Path):
    notes = (out / "notes.txt").stat()
    assert socialsim("export", "good", "--out", str(out)).code == 0
    after = (out / "notes.txt").stat()
    assert (after.st_ino, after.st_mtime_ns) == (notes.st_ino, notes.st_mtime_ns)
    assert not (out / INCOMPLETE).exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["out", "saves"]


def test_an_export_in_another_format_retires_the_earlier_ones_files(socialsim, out: Path):
    """CSV with GraphML, then Parquet alone: the earlier CSVs and graphml folder go, the
    user's files stay."""
    assert socialsim("export", "good", "--out", str(out), "--graphml").code == 0
    assert (out / "graphml").is_dir() and list(out.glob("*.csv"))
    assert socialsim("export", "good", "--out", str(out), "--parquet").code == 0
    names = {p.name for p in out.iterdir()}
    assert not (out / "graphml").exists() and not list(out.glob("*.csv"))
    assert {"notes.txt", "mine", "card.json"} <= names and list(out.glob("*.parquet"))
    assert (out / "notes.txt").read_text() == "the user's own notes"
    assert not list(out.parent.glob(".out.*"))  # no staging or set-aside folder left
