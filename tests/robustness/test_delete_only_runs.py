"""``delete`` removes runs and nothing else: a folder that is not a run (notes, a run's own
``rounds/`` under ``--saves saves/A``) is refused in one line and left whole; a damaged run
is deleted only after saying what it holds; a branch racing the delete of its parent says
the parent was deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.saves.store
from engine import SaveError, SaveStore

ERROR = "socialsim: error: "


def _one_error(result) -> str:
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.err
    return lines[0]


@pytest.fixture
def played(socialsim, saves: Path) -> Path:
    """Run ``A``: three rounds of the tavern."""
    assert socialsim("run", "tavern", "--rounds", "3", "--run-id", "A", "-q").code == 0
    return saves / "A"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_folder_that_is_not_a_run_is_never_deleted(socialsim, saves: Path, played: Path):
    notes = saves / "notes"
    notes.mkdir()
    (notes / "thesis.txt").write_text("x")
    line = _one_error(socialsim("delete", "notes", "--yes"))
    assert "not a socialsim run" in line and "not deleted" in line
    assert _files(notes) == {"thesis.txt": b"x"}  # not even a lock file was added


def test_a_runs_rounds_folder_is_never_deleted(socialsim, saves: Path, played: Path):
    before = _files(played)
    line = _one_error(socialsim("delete", "rounds", "--saves", str(played), "--yes"))
    assert "not a socialsim run" in line
    assert _files(played) == before
    assert socialsim("show", "A").code == 0


def test_a_damaged_run_is_deleted_after_saying_what_it_holds(socialsim, saves: Path, played: Path):
    (played / "run.json").write_text("{ torn")
    result = socialsim("delete", "A", "--yes")
    assert result.code == 0, result.err
    said = result.out.splitlines()
    assert said[0].startswith("run A is damaged: ") and "corrupt" in said[0]
    assert "run.json (6 bytes)" in said[0] and "rounds/ (4 files)" in said[0]
    assert said[1] == "deleted A"
    assert not played.exists()


def test_a_damaged_run_holding_other_files_is_refused(socialsim, saves: Path, played: Path):
    (played / "run.json").unlink()
    (played / "thesis.txt").write_text("x")
    line = _one_error(socialsim("delete", "A", "--yes"))
    assert "thesis.txt" in line and "not deleted" in line
    assert (played / "thesis.txt").read_text() == "x"


def test_the_store_deletes_a_damaged_run_only_when_told(saves: Path, played: Path):
    store = SaveStore(saves)
    (played / "run.json").write_bytes(b"")
    damage = store.damage("A")
    assert damage is not None and "empty or truncated" in damage
    with pytest.raises(SaveError, match="is damaged"):
        store.delete("A")
    assert played.is_dir()
    store.delete("A", damaged=True)
    assert not played.exists()


def test_a_branch_racing_the_delete_of_its_parent_names_the_parent(
    socialsim, saves: Path, played: Path, monkeypatch: pytest.MonkeyPatch
):
    link = engine.saves.store._link

    def deleted_meanwhile(source: Path, folder: Path) -> None:
        if played.exists():
            SaveStore(saves).delete("A")  # another process's delete, between two links
        link(source, folder)

    monkeypatch.setattr(engine.saves.store, "_link", deleted_meanwhile)
    line = _one_error(socialsim("branch", "A", "--at", "2", "--run-id", "B"))
    assert "run 'A' was deleted while it was being branched" in line
    assert sorted(p.name for p in saves.iterdir() if not p.name.startswith(".")) == []


def _make(saves: Path, played: Path, kind: str) -> Path:
    """An entry ``X`` of the saves folder that is not a run."""
    entry = saves / "X"
    if kind == "file":
        entry.write_text("x")
    elif kind == "symlink-to-run":
        entry.symlink_to(played)
    elif kind == "symlink-to-folder":
        (saves.parent / "elsewhere").mkdir()
        (saves.parent / "elsewhere" / "a.txt").write_text("x")
        entry.symlink_to(saves.parent / "elsewhere")
    else:
        entry.mkdir()
        contents = {
            "empty-folder": {},
            "index-only": {"index.jsonl": "{}\n"},
            "tmp-only": {"run.json.tmp": "x"},
            "run-json-and-notes": {"run.json": "{}", "notes.md": "x"},
            "rounds-and-photos": {"rounds/000000.json.gz": "x", "photo.jpg": "x"},
            "lock-only": {".lock": ""},
        }[kind]
        for name, text in contents.items():
            (entry / name).parent.mkdir(parents=True, exist_ok=True)
            (entry / name).write_text(text)
    return entry


def _tree(saves: Path) -> dict[str, bytes | str]:
    return {
        str(p.relative_to(saves.parent)): (
            f"-> {p.readlink()}" if p.is_symlink() else p.read_bytes() if p.is_file() else ""
        )
        for p in sorted(saves.parent.rglob("*"))
    }


FEW_ENTRIES = ["empty-folder", "file", "run-json-and-notes"]
MORE_ENTRIES = [
    "symlink-to-run",
    "symlink-to-folder",
    "index-only",
    "tmp-only",
    "rounds-and-photos",
    "lock-only",
]


@pytest.mark.parametrize(
    "kind", [*FEW_ENTRIES, *(pytest.param(k, marks=pytest.mark.slow) for k in MORE_ENTRIES)]
)
def test_no_entry_that_is_not_a_run_is_deleted(socialsim, saves: Path, played: Path, kind: str):
    _make(saves, played, kind)
    before = _tree(saves)
    _one_error(socialsim("delete", "X", "--yes"))
    assert _tree(saves) == before
