"""The export action (``x``): where the CSVs go (by default under the saves folder, named
in full; relative folders are under the folder socialsim was started in) and their
permissions (the user's umask, not 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cast import record_notifications
from textual.widgets import Input, Static

from engine import SaveStore, Simulation, resolve_scenario
from engine.reports.export import export_run
from tui.app import build_app
from tui.screens.forms import TextForm
from tui.screens.metrics import MetricsScreen

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap; the working folder is tmp_path."""


@pytest.fixture
def umask():
    """Set the process umask for one test, then restore it."""
    before = os.umask(0o022)
    os.umask(before)
    yield os.umask
    os.umask(before)


def modes(folder: Path) -> set[int]:
    return {stat.S_IMODE(p.stat().st_mode) for p in folder.glob("*.csv")}


async def export_from_the_app(tmp_path: Path, typed: str) -> tuple[Path, list[str], str]:
    """Play a round, press x, type ``typed`` (or keep the default), Enter: (the folder the
    dialog offered, the notifications, the hint)."""
    app = build_app("tavern", saves=tmp_path / "saves")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TextForm)
        field = form.query_one("#value", Input)
        assert field.value == ""  # nothing to erase before typing
        offered = Path(form.default)
        hint = " ".join(str(s.content) for s in form.query(Static))
        field.value = typed
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, TextForm)
        await app.workers.wait_for_complete()  # the export runs on a worker thread
        await pilot.pause()
        run_id = app.sim.run_id
    assert offered == tmp_path / "saves" / "exports" / run_id
    return offered, [message for _, message in notes], hint


async def test_default_folder_is_named_in_full_under_the_saves_folder(
    tmp_path: Path, umask
) -> None:
    umask(0o022)
    folder, seen, hint = await export_from_the_app(tmp_path, "")
    assert folder.is_absolute() and folder.parent.parent == tmp_path / "saves"
    assert [r.run_id for r in SaveStore(tmp_path / "saves").list_runs()] == [folder.name]
    assert str(tmp_path) in hint  # where relative folders go
    csvs = sorted(p.name for p in folder.glob("*.csv"))
    assert "transcript.csv" in csvs and "metrics.csv" in csvs and len(csvs) >= 5
    assert any(f" files to {folder}." in message for message in seen)
    assert modes(folder) == {0o644}  # what the umask gives a new file, not 0600


async def test_a_relative_folder_is_under_the_start_folder(tmp_path: Path, umask) -> None:
    umask(0o027)
    _, seen, _ = await export_from_the_app(tmp_path, "mine/csv")
    out = tmp_path / "mine" / "csv"
    assert (out / "relations.csv").is_file()
    assert any(f" files to {out}." in message for message in seen)
    assert modes(out) == {0o640}
    assert not (tmp_path / "exports").exists()


async def test_the_app_exports_every_format_the_cli_can(tmp_path: Path, umask) -> None:
    _, seen, hint = await export_from_the_app(tmp_path, "mine/all --graphml --parquet")
    out = tmp_path / "mine" / "all"
    assert "--graphml" in hint and "--parquet" in hint
    assert (out / "relations.parquet").is_file() and not list(out.glob("*.csv"))
    assert (out / "card.json").is_file()
    assert sorted(p.name for p in (out / "graphml").iterdir())[0].endswith(".graphml")
    assert any(f" files to {out}." in message for message in seen)


async def test_an_unknown_format_is_said_in_the_form(tmp_path: Path) -> None:
    app = build_app("tavern", saves=tmp_path / "saves")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        form = app.screen
        form.query_one("#value", Input).value = "mine/x --pdf"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TextForm)  # the form stays, saying why
        shown = " ".join(str(s.content) for s in app.screen.query(Static))
        assert "export format 'pdf'" in shown
    assert not (tmp_path / "mine").exists()


def test_engine_export_follows_the_umask(tmp_path: Path, umask) -> None:
    store = SaveStore(tmp_path / "saves")
    sim = Simulation.new(resolve_scenario("tavern"), seed=0, store=store)
    try:
        for mask, mode in ((0o077, 0o600), (0o002, 0o664)):
            umask(mask)
            out = tmp_path / f"out-{mask:o}"
            export_run(sim.meta, sim.records, out)
            assert modes(out) == {mode}
    finally:
        sim.close()


async def test_keys_are_answered_while_the_app_exports(tmp_path: Path, monkeypatch) -> None:
    """The export runs on a worker thread: a notice says so at once, and a key pressed
    meanwhile opens its screen before the export ends."""
    import threading

    from engine.reports import export

    release, threads = threading.Event(), []

    def held_export(*args, **kwargs):
        threads.append(threading.current_thread())
        release.wait(10)
        return []

    monkeypatch.setattr(export, "export_run", held_export)
    app = build_app("tavern", saves=tmp_path / "saves")
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x", "enter")
        await pilot.pause()
        assert any(message.startswith("Exporting ") for _, message in notes)
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MetricsScreen) and not release.is_set()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert threads and threads[0] is not threading.main_thread()
    assert any(message.startswith("Exported 0 files") for _, message in notes)
