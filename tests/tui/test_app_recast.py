"""The recast screen of the app (``c``): diagnosis per agent, edit, apply as a branch.

The app is built with :func:`tui.app.build_app` on a finished student-council task run
saved in a temporary folder, and driven with ``run_test()`` pilots.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Button, DataTable, Label, Select, Static

from engine import Archetype, SaveStore
from engine.saves.runmeta import Lineage
from engine.studies.tasks.episode import run_episode
from engine.studies.tasks.spec import AGENTS, load_task
from tui.app import SocialsimApp, build_app
from tui.screens.recast import KEEP, RecastScreen

SIZE = (120, 50)
#: Seed 2 of the hetero casting: reserved Avery keeps the hidden profile, the team misses.
SEED = 2


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """Every test here runs with no user keymap and no files outside tmp_path."""


@pytest.fixture
async def task_run(saves: Path) -> str:
    """A finished, scored student-council episode (hetero casting) saved in ``saves``."""
    task = load_task("student-council")
    sim, outcome = await run_episode(task, task.casting.hetero, seed=SEED, store=SaveStore(saves))
    assert sim.finished and outcome.utility == 0.0
    return sim.run_id


def run_json(saves: Path, run_id: str) -> dict:
    doc = json.loads((saves / run_id / "run.json").read_text(encoding="utf-8"))
    (meta,) = doc["run"].values()
    return meta


def tree(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if p.name != ".lock"
    }


def runs(saves: Path) -> set[str]:
    return {p.name for p in saves.iterdir() if not p.name.startswith(".")}


def screen_text(screen: RecastScreen) -> str:
    return "\n".join(str(s.render()) for s in screen.query(Static))


async def pick(pilot, screen: RecastScreen, agent: str, value: str) -> None:
    """Highlight ``agent``'s row and choose ``value`` in the selector, as a person does."""
    table = screen.query_one(DataTable)
    table.move_cursor(row=table.get_row_index(agent))
    await pilot.pause()
    screen.query_one("#choice", Select).value = value
    await pilot.pause()


async def open_recast(pilot) -> RecastScreen:
    await pilot.press("c")
    await pilot.app.workers.wait_for_complete()  # the diagnosis is read off the UI thread
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, RecastScreen)
    return screen


async def test_c_lists_every_agent_with_its_diagnosis(saves: Path, task_run: str) -> None:
    app = build_app(task_run, saves=saves)
    assert isinstance(app, SocialsimApp)
    async with app.run_test(size=SIZE) as pilot:
        assert app.sim.run_id == task_run and app.sim.finished
        screen = await open_recast(pilot)
        assert task_run in screen_text(screen) and "utility 0" in screen_text(screen)
        assert [p.agent for p in screen.proposals] == list(AGENTS)
        table = screen.query_one(DataTable)
        hetero = ["reserved", "dominant", "analytical", "agreeable"]
        for row, (p, now) in enumerate(zip(screen.proposals, hetero, strict=True)):
            assert p.current.value == now
            choice = p.archetype.value if p.archetype else KEEP
            cells = [str(c) for c in table.get_row_at(row)]
            assert cells == [p.agent, now, choice, p.rationale]
            table.move_cursor(row=row)
            await pilot.pause()
            assert screen.query_one("#choice", Select).value == choice
            text = screen_text(screen)
            assert f"{p.agent}  now {now}" in text
            assert p.rationale in text
            assert p.evidence.line() in text
        avery = screen.proposals[0]
        # The quiet holder of the hidden profile is proposed analytical: nothing she said
        # registered with the others (their relation memories of her).
        assert avery.archetype is Archetype.ANALYTICAL
        assert "registered" in avery.rationale
        assert "registered 1.0/10" in avery.evidence.line()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecastScreen)


async def test_apply_an_edited_casting_branches_at_round_zero(saves: Path, task_run: str) -> None:
    parent = run_json(saves, task_run)
    app = build_app(task_run, saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_recast(pilot)
        proposed = {p.agent: p.archetype or p.current for p in screen.proposals}
        await pick(pilot, screen, "Blake", "balanced")  # edit: dominant -> balanced
        await pilot.click("#apply")
        # The branch starts running after the next refresh; wait until it is done.
        for _ in range(200):
            await pilot.pause(0.01)
            await app.workers.wait_for_complete()
            if app.sim.run_id != task_run and app.sim.finished and not app.main.running:
                break
        assert not isinstance(app.screen, RecastScreen)
        child_id = app.sim.run_id
        assert child_id != task_run
        assert runs(saves) == {task_run, child_id}
        child = run_json(saves, child_id)
        assert Lineage.model_validate(child["parent"]) == Lineage(run_id=task_run, round=0)
        expected = {**{n: a.value for n, a in proposed.items()}, "Blake": "balanced"}
        assert {a["name"]: a["archetype"] for a in child["scenario"]["agents"]} == expected
        assert expected["Avery"] == "analytical"  # the accepted proposal came along
        for new, old in zip(child["scenario"]["agents"], parent["scenario"]["agents"], strict=True):
            assert new["evidence"] == old["evidence"]
            assert new["role"] == old["role"]
            assert new["talking_points"] == old["talking_points"]
        assert child["scenario_ref"] == parent["scenario_ref"] == "task:student-council"
        # The branch reruns the task from the start and is scored when it finishes.
        assert app.sim.finished and app.sim.round == 4
        assert child["outcome"]["casting"] == list(expected.values())
        # The parent run is untouched.
        assert run_json(saves, task_run)["scenario"] == parent["scenario"]


async def test_the_recast_branch_is_made_off_the_ui_thread(
    saves: Path, task_run: str, monkeypatch
) -> None:
    """Apply closes the dialog and says "Recasting…" at once; a key pressed while the branch
    is made is answered; then the branch opens and plays."""
    from cast import answered_while_held, hold_call, record_notifications

    from engine import Simulation

    release, threads = hold_call(monkeypatch, Simulation, "branch")
    app = build_app(task_run, saves=saves)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_recast(pilot)
        await pick(pilot, screen, "Blake", "balanced")
        await pilot.click("#apply")
        await pilot.pause()
        assert not isinstance(app.screen, RecastScreen)
        assert any(m.startswith(f"Recasting {task_run}") for _, m in notes)
        await answered_while_held(pilot, release, task_run)
        for _ in range(200):  # the branch opens, then plays to its end
            await pilot.pause(0.01)
            await app.workers.wait_for_complete()
            if app.sim.run_id != task_run and app.sim.finished and not app.main.running:
                break
        assert app.sim.meta.parent == Lineage(run_id=task_run, round=0)
    assert threads and threads[0].name != "MainThread"


async def test_apply_without_a_change_shows_an_inline_error(saves: Path, task_run: str) -> None:
    app = build_app(task_run, saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_recast(pilot)
        before = tree(saves)
        for p in screen.proposals:  # keep everyone, or pick the archetype it already has
            await pick(pilot, screen, p.agent, p.current.value if p.agent == "Casey" else KEEP)
        await pilot.click("#apply")
        await pilot.pause()
        assert app.screen is screen
        assert "Nothing to change" in str(screen.query_one(".error", Label).content)
        assert app.sim.run_id == task_run
        assert tree(saves) == before


async def test_escape_and_cancel_close_without_writing(saves: Path, task_run: str) -> None:
    app = build_app(task_run, saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        before = tree(saves)
        screen = await open_recast(pilot)
        await pick(pilot, screen, "Drew", "balanced")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecastScreen)
        screen = await open_recast(pilot)
        assert isinstance(screen.query_one("#cancel", Button), Button)
        await pilot.click("#cancel")
        await pilot.pause()
        assert not isinstance(app.screen, RecastScreen)
        assert app.sim.run_id == task_run
        assert tree(saves) == before


async def test_the_diagnosis_is_imported_off_the_ui_thread(
    saves: Path, task_run: str, monkeypatch
) -> None:
    """The diagnosis' modules are imported by the worker that reads the rounds: the key's
    notice waits for no import."""
    import importlib.abc
    import sys
    import threading

    name = "engine.studies.tasks.diagnosis"
    threads: list[str] = []

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname == name:
                threads.append(threading.current_thread().name)
            return None

    app = build_app(task_run, saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        import engine.studies.tasks as tasks

        monkeypatch.setattr(tasks, "diagnosis", tasks.diagnosis)  # put back after the test
        monkeypatch.delitem(sys.modules, name)
        monkeypatch.setattr(sys, "meta_path", [Watch(), *sys.meta_path])
        await open_recast(pilot)
    assert threads and "MainThread" not in threads
