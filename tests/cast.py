"""Casts of 5 and 30 agents for the app's matrix and plot tests, the text on screen, the
notifications shown, and rounds held mid-way."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from textual.app import App
from textual.widget import Widget

from engine.minds.offline import OfflineMind

#: Thirty names, some long and some alike in their first five letters (Christopher,
#: Christina; Maximilian, Maxine), as a real cast of a town meeting has.
THIRTY = (
    "Abigail Bartholomew Cornelius Dorothea Ebenezer Florence Gideon Henrietta Ignatius "
    "Josephine Christopher Christina Leopold Maximilian Maxine Nathaniel Ophelia Percival "
    "Quentin Rosalind Sebastian Theodora Ulysses Valentina Wilhelmina Xavier Yolanda "
    "Zachariah Ann Bo"
).split()
ARCHETYPES = ("dominant", "balanced", "analytical", "agreeable", "reserved")


def write_cast(path: Path, names: tuple[str, ...] | list[str], rounds: int = 3) -> Path:
    """A scenario of the named agents (a town meeting) with ``rounds`` rounds."""
    lines = ['id = "meeting"', f'title = "Town meeting of {len(names)}"', f"rounds = {rounds}", ""]
    for k, name in enumerate(names):
        lines += [
            "[[agents]]",
            f'name = "{name}"',
            f'role = "resident number {k + 1}"',
            f'archetype = "{ARCHETYPES[k % 5]}"',
            f'talking_points = ["point {k + 1} matters", "the square needs trees"]',
            "",
        ]
    lines += ["[[events]]", "round = 1", 'text = "The mayor opens the meeting."', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def screen_text(app: App) -> list[str]:
    """The lines the terminal shows now (the screen's composed strips)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def record_notifications(app: App) -> list[tuple[str, str]]:
    """Capture (severity, message) of every notification while still showing it."""
    seen: list[tuple[str, str]] = []
    original = app.notify

    def notify(message, *args, **kwargs):
        seen.append((kwargs.get("severity", "information"), str(message)))
        return original(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


def record_layouts(widget: Widget) -> list[bool]:
    """Capture whether each refresh ``widget`` is asked for from now on wants a new layout
    of the screen (what a redraw of a large cast costs most)."""
    asked: list[bool] = []
    refresh = widget.refresh

    def counted(*regions, layout: bool = False, **kwargs):
        asked.append(layout)
        return refresh(*regions, layout=layout, **kwargs)

    widget.refresh = counted  # type: ignore[method-assign]
    return asked


def hold_rounds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every offline round at its decisions, off the event loop, until the gate
    returned is set (10 s at most)."""
    gate = threading.Event()
    decide_all = OfflineMind.decide_all

    async def held_decide_all(self, ctxs):
        await asyncio.get_running_loop().run_in_executor(None, gate.wait, 10)
        return await decide_all(self, ctxs)

    monkeypatch.setattr(OfflineMind, "decide_all", held_decide_all)
    return gate


def hold_call(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, static: bool = False
) -> tuple[threading.Event, list[threading.Thread]]:
    """Make ``owner.name`` wait for the event returned (10 s at most) before it runs; the
    list returned gets the thread each call ran on."""
    release, threads = threading.Event(), []
    original = getattr(owner, name)

    def held(*args, **kwargs):
        threads.append(threading.current_thread())
        release.wait(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, staticmethod(held) if static else held)
    return release, threads


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The round numbers a run's files are read for (``RunFiles.read``) from now on."""
    from engine.saves.runfiles import RunFiles

    reads: list[int] = []
    real = RunFiles.read

    def counted(self: RunFiles, n: int, *args, **kwargs):
        reads.append(n)
        return real(self, n, *args, **kwargs)

    monkeypatch.setattr(RunFiles, "read", counted)
    return reads


async def answered_while_held(pilot, release: threading.Event, run_id: str) -> None:
    """While an operation is held on ``release``: ``?`` opens the help at once and the app
    is still on run ``run_id``; then the operation is let go."""
    from tui.screens.help import HelpScreen

    await pilot.press("question_mark")
    await pilot.pause()
    assert isinstance(pilot.app.screen, HelpScreen) and not release.is_set()
    assert pilot.app.sim.run_id == run_id
    release.set()


async def played_run(store, scenario, run_id: str, rounds: int) -> list:
    """A saved run of ``rounds`` rounds (seed 1), closed: its records."""
    from engine import Simulation

    with Simulation.new(scenario, seed=1, store=store, run_id=run_id, rounds=rounds) as sim:
        await sim.run()
        return list(sim.records)


def round_file_names(store, run_id: str) -> list[str]:
    """The names of a saved run's round files, sorted."""
    return sorted(p.name for p in (store.run_dir(run_id) / "rounds").iterdir())
