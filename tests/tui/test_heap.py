"""The app keeps the cyclic garbage collector's walks short (tui/heap.py): what it holds
once work ends is frozen out of the walk, with the main screen on top only; the whole heap
is walked again only when the app is idle."""

from __future__ import annotations

import gc
import time
import weakref
from pathlib import Path

import pytest

from engine import SaveStore, Simulation, resolve_scenario
from tui import heap
from tui.app import build_app
from tui.screens.help import HelpScreen


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap and no files outside tmp_path."""


@pytest.fixture(autouse=True)
def _thawed():
    """Each test starts and ends with nothing frozen (the process's other tests' objects
    stay collectable)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class Node:
    """An object in a reference cycle (only the cyclic collector frees it)."""

    def __init__(self) -> None:
        self.me = self


def test_settled_objects_leave_the_walk_and_a_reclaim_finds_their_garbage() -> None:
    node = Node()
    gone = weakref.ref(node)
    heap.settle()
    assert heap.frozen() > 0
    del node
    gc.collect()
    assert gone() is not None  # frozen: a full collection no longer walks it
    assert not heap.reclaim(heap.frozen())  # too little frozen since: no pause
    assert gone() is not None
    assert heap.reclaim(heap.frozen() - heap.RECLAIM_AFTER)
    assert gone() is None and heap.frozen() > 0  # found, and the rest frozen again


def test_settling_collects_the_young_garbage_first() -> None:
    node = Node()
    gone = weakref.ref(node)
    del node
    heap.settle()
    assert gone() is None


@pytest.fixture
def saved_run(saves: Path) -> str:
    import asyncio

    sim = Simulation.new(resolve_scenario("tavern"), seed=1, store=SaveStore(saves), rounds=6)
    asyncio.run(sim.run(3))
    sim.close()
    return sim.run_id


async def test_the_app_settles_when_its_work_ends_with_the_main_screen_on_top(
    saves: Path, saved_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[str] = []
    monkeypatch.setattr(heap, "settle", lambda: settled.append("settled"))
    app = build_app(saved_run, saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert settled  # the first screen, the transcripts read
        settled.clear()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        heap.settle_under(app.main)  # work ending now: the dialog's widgets not frozen
        assert settled == []
        await pilot.press("escape")
        await pilot.pause()
        heap.settle_under(app.main)
        assert settled == ["settled"]


async def test_the_whole_heap_is_walked_only_when_the_app_is_idle(
    saves: Path, saved_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[int] = []
    monkeypatch.setattr(heap, "reclaim", lambda since: walks.append(since) or True)
    app = build_app(saved_run, saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        main = app.main
        app.last_input = time.monotonic()  # a key just now: not idle
        main._reclaim()
        assert walks == []
        app.last_input = time.monotonic() - heap.IDLE_FOR - 1
        main.running = True  # a round in flight: not idle
        main._reclaim()
        assert walks == []
        main.running = False
        main._reclaim()
        assert len(walks) == 1
