"""The thread the open run's rounds are played on, with an asyncio loop of its own.

An offline round is CPU-bound (tens of milliseconds at 30 agents, seconds at 300), an LLM
round waits on the network: played on the app's event loop, a round held back every key
until its next ``await``. :class:`EngineThread` runs one event loop
on a daemon thread for the app's whole life (one loop, so the LLM clients a run opens stay
bound to the loop that uses them); the screen awaits coroutines submitted to it
(``await engine.call(sim.run(1))``) from an ordinary async Textual worker, so the app's loop
stays free and ``workers.wait_for_complete()`` still waits for the round.

Who touches what. While a round is in flight only the engine thread mutates the
:class:`~engine.Simulation`; the engine's events reach the UI as Textual messages
(``post_message`` is thread-safe; :class:`~tui.event_bridge.EventBridge` hands them over in
order). What the UI reads is immutable: a finished round's ``RoundRecord`` (its
``WorldState`` included) is never changed after it is built, ``sim.meta`` is replaced, never
changed in place, and ``sim.history`` finds held rounds by round number, so a reader never
gets a half-appended round. The screen draws from the record a ``RoundEnded`` message hands
it. Pausing is a flag the round loop reads between rounds (``sim.request_pause``);
cancelling the awaiting worker cancels the round's task on the engine loop (the round is not
saved; the save keeps the last finished one).

Input first, and the screen keeps up: the two threads share one interpreter lock, so a
busy engine thread would halve the app's speed just when a key wants an answer. A
:class:`Pacer` holds the engine thread (at its next event: every word spoken, every turn,
every round's end) from a key or resize until the screen has been repainted with its effect,
and at the end of a round while the screen has not drawn the round before it, so the engine
is never more than a round ahead (fast offline rounds do not pile up messages in front of the
keys). Each hold is bounded (:data:`PACE_TIMEOUT`), so nothing can stall the run for good.

The seam for a mind that waits for a person (a human playing an agent) is
:class:`engine.minds.human.Turn`: a future of the loop that plays the round, which the mind
awaits on the engine thread and the UI thread answers (``turn.decide``, ``turn.say``) or gives
up (``turn.withdraw``). Pausing does not interrupt a round waiting for a person; withdrawing
its turn cancels the round, unsaved: ``r`` does, and so does the first ``q`` (then the app
quits). A round that waits on anything else is dropped by ``q`` pressed twice.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

T = TypeVar("T")


#: Longest the engine waits for the screen to draw a round (a screen that stopped drawing,
#: a test without one, must not stop the run).
PACE_TIMEOUT = 1.0


class Pacer:
    """Holds the engine thread while input waits for its repaint, and until the screen has
    drawn all but ``ahead`` of the rounds it was sent (not while the UI thread itself waits
    for the engine; never longer than :data:`PACE_TIMEOUT` at a time)."""

    def __init__(self, ahead: int = 1) -> None:
        self._ahead = ahead
        self._cond = threading.Condition()
        self._undrawn = 0  # rounds sent to the screen and not drawn yet
        self._waiting = 0  # UI calls waiting for the engine loop
        self._input = threading.Event()  # set: no input waits for its repaint
        self._input.set()

    def input_arrived(self) -> None:
        """A key (or a resize) arrived: the engine waits until :meth:`input_drawn`."""
        self._input.clear()

    def input_drawn(self) -> None:
        """The screen was repainted after the input."""
        self._input.set()

    def give_way(self) -> None:
        """Engine thread, at each event: wait while input waits for its repaint."""
        self._input.wait(PACE_TIMEOUT)

    def sent(self) -> None:
        """A round was posted to the screen (engine thread): wait while it is behind."""
        with self._cond:
            self._undrawn += 1
            self._cond.wait_for(
                lambda: self._undrawn <= self._ahead or self._waiting > 0, PACE_TIMEOUT
            )

    def drawn(self) -> None:
        """The screen drew a round (UI thread)."""
        with self._cond:
            self._undrawn = max(0, self._undrawn - 1)
            self._cond.notify_all()

    def reset(self) -> None:
        """Nothing is waiting to be drawn any more (the screen stopped listening)."""
        self._input.set()
        with self._cond:
            self._undrawn = 0
            self._cond.notify_all()

    @contextmanager
    def ui_waiting(self) -> Iterator[None]:
        """While the UI thread waits for the engine loop, the engine is not held."""
        self._input.set()
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._waiting -= 1


class EngineThread:
    """One event loop on a daemon thread; coroutines are submitted to it from the UI."""

    def __init__(self, name: str = "socialsim-engine") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.pacer = Pacer()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The engine's event loop (started on first use)."""
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    @property
    def started(self) -> bool:
        """Whether the loop runs (nothing was submitted yet, else)."""
        return self._loop is not None

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the engine loop and wait for its result without blocking the
        caller's loop; cancelling the caller cancels ``coro``."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wrap_future(future)

    def run_sync(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` on the engine thread, waited for (an intervention the user makes
        while a round is in flight, so the run's metadata has one writer). It waits at most
        for the round's next ``await``; while no loop was started it is called here."""
        if self._loop is None or threading.current_thread() is self._thread:
            return fn(*args)

        async def call() -> T:
            return fn(*args)

        with self.pacer.ui_waiting():
            return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    def stop(self) -> None:
        """Cancel what still runs on the loop (and let it finish), then stop the loop and
        join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self.pacer.reset()
        # A round stuck in CPU work past the timeout is left to the daemon thread's exit.
        with suppress(TimeoutError):
            asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None


async def _cancel_pending() -> None:
    """Cancel every other task of the running loop and wait until they have finished."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
