"""Rounds are played on the engine thread: keys are answered while a round is in flight, a
round can wait for a person (a Turn the UI answers), and quitting or pausing stays
clean. tui/engine_thread.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cast import hold_rounds

from engine import SaveStore, Simulation, resolve_scenario
from engine.minds.human import Turn
from engine.minds.offline import OfflineMind
from tui.app import SocialsimApp, build_app
from tui.engine_thread import Pacer
from tui.session import Session
from tui.widgets.deck import AgentDeck
from tui.widgets.transcript import Transcript

SIZE = (100, 30)


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def until(condition, seconds: float = 10.0) -> None:
    """Wait (polling) until ``condition()`` holds; fail after ``seconds``."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def test_keys_are_answered_while_a_round_blocks_its_thread(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round that holds its thread (CPU-bound offline work, here a blocking wait) no
    longer holds the app: the page turns while the round is still in flight."""
    gate = threading.Event()
    threads: set[int] = set()
    decide_all = OfflineMind.decide_all

    async def blocking_decide_all(self, ctxs):
        threads.add(threading.get_ident())
        gate.wait(timeout=10)  # blocks the thread the round runs on, not just a task
        return await decide_all(self, ctxs)

    monkeypatch.setattr(OfflineMind, "decide_all", blocking_decide_all)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        deck = app.query_one(AgentDeck)
        await pilot.press("n")
        await until(lambda: bool(threads))
        before = deck.agent_index
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.main.running and app.sim.round == 0
        assert deck.agent_index != before  # answered while the round is blocked
        assert threading.get_ident() not in threads
        gate.set()
        await settle(pilot)
        assert app.sim.round == 1 and not app.main.running


class PersonMind(OfflineMind):
    """Plays like the offline mind, except that ``person`` speaks what a person types: the
    round waits on a :class:`Turn` the UI thread answers."""

    def __init__(self, person: str) -> None:
        super().__init__(seed=0)
        self.person = person
        self.asked: list[Turn] = []

    async def speak(self, ctx, decision, sink):
        if ctx.name != self.person:
            return await super().speak(ctx, decision, sink)
        turn = Turn("speak", self.person, ctx, decision)
        self.asked.append(turn)
        return await turn.answer()


def person_app(saves: Path) -> tuple[SocialsimApp, PersonMind]:
    store = SaveStore(saves)
    mind = PersonMind("Edmund")
    sim = Simulation.new(resolve_scenario("tavern"), mind=mind, store=store)
    return SocialsimApp(Session(store, sim)), mind


async def test_a_round_waits_for_a_person_without_holding_the_app(saves: Path) -> None:
    app, mind = person_app(saves)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(AgentDeck).show_agent("Edmund")
        await pilot.press("n")
        await until(lambda: bool(mind.asked))
        await pilot.press("question_mark")  # the app is live while the round waits
        assert app.screen.__class__.__name__ == "HelpScreen" and app.main.running
        await pilot.press("escape")
        mind.asked[0].say("I will not sell the tavern.")
        await settle(pilot)
        assert app.sim.round == 1
        (said,) = [a for a in app.sim.records[1].actions if a.speaker == "Edmund"]
        assert said.utterance == "I will not sell the tavern."
        transcript = app.query_one("#pane-0 Transcript", Transcript)
        assert any("I will not sell the tavern." in e.plain for e in transcript.entries)


async def test_quit_twice_drops_a_round_waiting_for_a_person(saves: Path) -> None:
    app, mind = person_app(saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await until(lambda: bool(mind.asked))
        await pilot.press("q")  # a pause: the round would finish first
        await pilot.pause()
        assert app.main.running and app.is_running
        await pilot.press("q")  # now: the round in flight is dropped
        await until(lambda: not app.is_running)
    store = SaveStore(saves)
    assert [r.round for r in store.read_rounds(app.sim.run_id)] == [0]
    with store.lock(app.sim.run_id):  # released: the run opens again
        pass


async def test_an_event_injected_mid_round_is_kept_for_the_next(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = hold_rounds(monkeypatch)
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert app.main.running
        assert app.main._applied(app.sim.inject, "A storm closes the road.") is None
        gate.set()
        await settle(pilot)
        assert app.sim.round == 1
        assert [e.text for e in app.sim.pending.events] == ["A storm closes the road."]
        assert app.sim.meta.pending_round == 2


def test_stop_cancels_what_still_runs_on_the_loop(tmp_path: Path) -> None:
    """A task left pending (a turn nobody answered) is cancelled and finished by stop():
    asyncio does not report it destroyed while pending at exit."""
    script = tmp_path / "stop.py"
    script.write_text(
        "import asyncio, gc, threading\n"
        "from tui.engine_thread import EngineThread\n"
        "engine = EngineThread()\n"
        "engine.loop  # started\n"
        "cancelled = []\n"
        "async def forever():\n"
        "    try:\n"
        "        await asyncio.Event().wait()\n"
        "    except asyncio.CancelledError:\n"
        "        cancelled.append(True)\n"
        "        raise\n"
        "engine.run_sync(lambda: asyncio.get_running_loop().create_task(forever()))\n"
        "assert engine.run_sync(threading.current_thread) is not threading.current_thread()\n"
        "engine.stop()\n"
        "gc.collect()\n"
        "print('cancelled' if cancelled else 'left pending')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "cancelled"
    assert "Task was destroyed but it is pending" not in done.stderr
    assert done.stderr == ""


def _in_thread(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_the_engine_waits_for_the_screen_to_draw_the_round_before() -> None:
    pacer = Pacer()
    pacer.sent()  # one round ahead: the engine goes on at once
    second = _in_thread(pacer.sent)
    second.join(0.2)
    assert second.is_alive()  # two rounds undrawn: held
    pacer.drawn()
    second.join(0.5)
    assert not second.is_alive()


def test_the_engine_is_not_held_while_the_ui_waits_for_it() -> None:
    pacer = Pacer()
    pacer.sent()
    with pacer.ui_waiting():
        held = _in_thread(pacer.sent)
        held.join(0.5)
        assert not held.is_alive()


def test_the_engine_gives_way_to_a_key_until_it_is_drawn() -> None:
    pacer = Pacer()
    pacer.input_arrived()
    waiting = _in_thread(pacer.give_way)
    waiting.join(0.2)
    assert waiting.is_alive()
    pacer.input_drawn()
    waiting.join(0.5)
    assert not waiting.is_alive()
    pacer.give_way()  # no input pending: no wait
