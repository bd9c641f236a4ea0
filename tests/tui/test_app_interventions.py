"""Interventions in the app that always mean something and never dead-end: the event
dialog asks for the meaning (and shows what the text reads as), a finished run offers to
extend or branch before f, e, n and r, and the queue is listed and thinned with u."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cast import answered_while_held, hold_call, record_notifications
from textual.widgets import Input, Select, Static

from engine import SaveStore, Simulation, load_library
from tui.app import build_app
from tui.screens.forms import ForceForm, GoOnForm, InjectForm, QueueForm, TickList

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def test_the_event_dialog_asks_for_the_meaning(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, InjectForm)
        form.query_one("#text", Input).value = "The bank calls in the loan."
        await pilot.pause()
        reading = str(form.query_one("#reading", Static).content)
        assert reading == "the text reads as: valence -1.00; touches everyone"
        form.query_one("#valence", Select).value = "-0.5"
        form.query_one("#implicates", Select).value = "Edmund"
        form.query_one("#about", TickList).select("Nell")
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, InjectForm)
        (event,) = app.sim.pending.events
        assert (event.valence, event.about, event.implicates) == (-0.5, ["Nell"], ["Edmund"])
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.events == [event]


async def test_left_alone_the_meaning_is_read_from_the_text(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        app.screen.query_one("#text", Input).value = "Nell finds the will."
        await pilot.press("enter")
        await pilot.pause()
        (event,) = app.sim.pending.events
        assert (event.valence, event.about, event.implicates) == (None, [], None)


async def finished(saves: Path) -> str:
    """A saved one-round tavern run, played to its end."""
    sim = Simulation.new(load_library("tavern"), store=SaveStore(saves), rounds=1, run_id="done")
    await sim.run()
    sim.close()
    return "done"


@pytest.mark.parametrize(("key", "then"), [("f", ForceForm), ("e", InjectForm)])
async def test_a_finished_run_extends_before_it_queues(saves: Path, key: str, then: type) -> None:
    app = build_app(await finished(saves), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        assert app.sim.finished
        run_id = app.sim.run_id
        await pilot.press(key)
        assert isinstance(app.screen, GoOnForm)
        app.screen.query_one("#rounds", Input).value = "2"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, then)  # the dialog asked for, on the run that goes on
        assert app.sim.run_id == run_id and app.sim.total_rounds == 3 and not app.sim.finished


async def test_a_finished_run_branches_on_n(saves: Path) -> None:
    app = build_app(await finished(saves), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        assert app.sim.finished
        parent = app.sim.run_id
        await pilot.press("n")
        form = app.screen
        assert isinstance(form, GoOnForm)
        form.query_one("#how", Select).value = "branch"
        form.query_one("#rounds", Input).value = "1"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.run_id != parent and app.sim.meta.parent.run_id == parent
        assert (app.sim.round, app.sim.total_rounds) == (1, 2)  # n plays it
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.round == 2 and app.sim.finished
        assert SaveStore(saves).read_meta(parent).total_rounds == 1


async def test_the_go_on_branch_is_made_off_the_ui_thread(saves: Path, monkeypatch) -> None:
    """Branching a finished run reads and writes its files (seconds at hundreds of agents):
    a notice says so at once, a key pressed meanwhile is answered, then the branch opens."""
    release, threads = hold_call(monkeypatch, Simulation, "branch")
    app = build_app(await finished(saves), saves=saves)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        parent = app.sim.run_id
        await pilot.press("n")
        form = app.screen
        assert isinstance(form, GoOnForm)
        form.query_one("#how", Select).value = "branch"
        await pilot.press("enter")
        await pilot.pause()
        assert any(m.startswith(f"Branching {parent} at round 1") for _, m in notes)
        await answered_while_held(pilot, release, parent)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.meta.parent.run_id == parent and not app.sim.finished
    assert threads and threads[0] is not threading.main_thread()


async def test_escape_leaves_a_finished_run_as_it_was(saves: Path) -> None:
    app = build_app(await finished(saves), saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        assert app.sim.finished
        await pilot.press("e")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, GoOnForm | InjectForm)
        assert app.sim.finished and app.sim.queue == []


async def test_u_lists_the_queue_and_removes_the_ticked(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        await pilot.pause()
        assert not isinstance(app.screen, QueueForm)  # nothing queued: a notice only
        app.sim.inject("First news.")
        app.sim.inject("Edmund lied to Nell.")
        await pilot.press("u")
        form = app.screen
        assert isinstance(form, QueueForm)
        ticks = form.query_one(TickList)
        prompts = [str(ticks.get_option_at_index(k).prompt) for k in range(ticks.option_count)]
        assert prompts[0].startswith("1. event: First news.")
        assert (
            prompts[1].startswith("2. event: Edmund lied to Nell.")
            and "implicates Edmund" in prompts[1]
        )
        ticks.focus()
        await pilot.press("space")
        await pilot.press("enter")
        await pilot.pause()
        assert [e.text for e in app.sim.pending.events] == ["Edmund lied to Nell."]
        assert [e.text for e in SaveStore(saves).read_meta(app.sim.run_id).pending.events] == [
            "Edmund lied to Nell."
        ]
