"""Writers of a run's files at once lose nothing (measurements are merged under the run's
measurements lock), no ``--out`` lands inside the saves folder, and a survey on a full or
read-only saves folder is one line and exit code 2."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from engine import SaveStore
from engine.saves import measurements
from engine.saves.store import MEASURE_FILE, META_FILE
from engine.studies.surveys import SurveyResult

ERROR = "socialsim: error: "


@pytest.fixture
def run(socialsim, saves: Path) -> Path:
    """An offline tavern run ``t`` of 2 rounds."""
    assert socialsim("run", "tavern", "--rounds", "2", "--run-id", "t", "-q").code == 0
    return saves / "t"


def _row(agent: str) -> SurveyResult:
    return SurveyResult(
        agent=agent, round=0, questionnaire="rses", answers=[1] * 10, score=10,
        respondent="offline",
    )  # fmt: skip


def test_two_surveys_saved_at_once_keep_both(run: Path, monkeypatch) -> None:
    """Survey A reads the measurements, survey B saves meanwhile, then A writes: B's row
    must survive (A waits for B's lock, or B for A's)."""
    store = SaveStore(run.parent)
    store.add_measurements("t", "surveys", [_row("Nell")])  # the file exists
    a_read, b_done = threading.Event(), threading.Event()
    real_read = measurements.AtomicJSONStorage.read

    def read(self):
        data = real_read(self)
        if threading.current_thread().name == "A" and not a_read.is_set():
            a_read.set()
            b_done.wait(timeout=1)  # B cannot finish while A holds the lock
        return data

    monkeypatch.setattr(measurements.AtomicJSONStorage, "read", read)

    def b() -> None:
        a_read.wait(timeout=10)
        store.add_measurements("t", "surveys", [_row("Silas")])
        b_done.set()

    threads = [
        threading.Thread(target=store.add_measurements, args=("t", "surveys", [_row("Edmund")]),
                         name="A"),
        threading.Thread(target=b, name="B"),
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    agents = sorted(r["agent"] for r in store.read_measurements("t")["surveys"])
    assert agents == ["Edmund", "Nell", "Silas"]


def test_a_survey_of_a_run_being_played_is_saved(run: Path, socialsim) -> None:
    """The lock of a playing process is the run's; a survey merges under its own."""
    store = SaveStore(run.parent)
    lock = store.lock("t")
    try:
        result = socialsim(
            "survey", "t", "--questionnaire", "rses", "--agent", "Nell", "--rounds", "0,2"
        )
    finally:
        lock.release()
    assert result.code == 0, result.err
    assert len(store.read_measurements("t")["surveys"]) == 2


def test_a_survey_after_its_run_was_deleted_fails_plainly(run: Path, socialsim) -> None:
    store = SaveStore(run.parent)
    (run / META_FILE).unlink()
    with pytest.raises(Exception, match="no run 't'"):
        store.add_measurements("t", "surveys", [_row("Nell")])
    assert not (run / MEASURE_FILE).exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["full", "read-only"])
def test_a_survey_on_a_full_or_read_only_folder_is_one_line(
    run: Path, socialsim, monkeypatch, code: int
) -> None:
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith(MEASURE_FILE):
            raise OSError(code, os.strerror(code))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    result = socialsim("survey", "t", "--questionnaire", "rses", "--agent", "Nell", "--rounds", "0")
    assert result.code == 2, result.err
    assert result.err.startswith(ERROR) and result.err.count("\n") == 1, result.err
    assert os.strerror(code) in result.err
    assert not (run / MEASURE_FILE).exists()
    assert [p.name for p in run.iterdir() if p.name.endswith(".tmp")] == []


OUTPUTS = [
    ("report", "t", "--out", "{saves}/t/run.json"),
    ("report", "t", "--out", "{saves}/t/rounds/000002.json.gz"),
    ("export", "t", "--out", "{saves}"),
    ("export", "t", "--out", "{saves}/t"),
    ("label", "sheet", "s", "--out", "{saves}/t/index.jsonl"),
    ("schema", "--out", "{saves}/t/run.json"),
    ("trial", "tavern", "--arms", "none", "--seeds", "1", "--out", "{saves}/t/run.json"),
    ("sweep", "govsim", "--runs", "1", "--out", "{saves}/t/run.json"),
]


@pytest.mark.parametrize("argv", OUTPUTS, ids=[" ".join(a[:2]) for a in OUTPUTS])
def test_no_output_lands_inside_the_saves_folder(run: Path, saves: Path, socialsim, argv):
    before = {p: p.read_bytes() for p in sorted(saves.rglob("*")) if p.is_file()}
    result = socialsim(*(a.format(saves=saves) for a in argv))
    assert result.code == 2, result.err
    assert result.err.startswith(ERROR) and result.err.count("\n") == 1, result.err
    assert "inside the saves folder" in result.err, result.err
    after = {p: p.read_bytes() for p in sorted(saves.rglob("*")) if p.is_file()}
    assert after == before
    assert [r.ok for r in SaveStore(saves).list_runs()] == [True]


def test_a_symlink_into_the_saves_folder_is_resolved(
    run: Path, saves: Path, socialsim, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").symlink_to(run)
    result = socialsim("report", "t", "--out", str(tmp_path / "elsewhere" / "run.json"))
    assert result.code == 2 and "inside the saves folder" in result.err, result.err
    assert SaveStore(saves).list_runs()[0].ok


def test_the_exports_folder_of_the_saves_folder_takes_outputs(
    run: Path, saves: Path, socialsim
) -> None:
    (saves / "exports").mkdir()
    result = socialsim("export", "t", "--out", str(saves / "exports" / "t"))
    assert result.code == 0, result.err
    assert (saves / "exports" / "t" / "transcript.csv").is_file()
