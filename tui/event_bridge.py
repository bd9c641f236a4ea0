"""Engine events to Textual messages.

An :class:`EventBridge` listens to one run (``Simulation.subscribe``). It turns each engine
event the screen shows into a message of :mod:`tui.messages` and posts it. Token streams are
coalesced: tokens are buffered per speaker and posted at most once per ``interval`` (and
whenever a turn or a round ends), so a fast model cannot flood the message queue.

The run may be played on another thread (:mod:`tui.engine_thread`): events arriving there
are handed to the thread that made the bridge (the app's) through its event loop, in the
order they were emitted, so messages are posted from the app's thread only (a burst of them
with one wake-up of that loop, not one each: ~600 a round at 300 agents, and those of the
kinds only the run's view reads as one :class:`~tui.messages.Burst`); with a
:class:`~tui.engine_thread.Pacer`, that thread is held after each round while the screen has
not drawn the round before (the screen calls :meth:`EventBridge.drawn`), and at every event
while a key waits for its repaint.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable

from textual.message import Message

from engine import Simulation
from engine.round import events

from . import messages
from .engine_thread import Pacer

#: The screen redraws at most 30 times a second; more token messages would be wasted.
TOKEN_INTERVAL = 1 / 30
#: A change smaller than this is not shown as one (the matrix marks the same).
CHANGED = 0.005


def to_message(event: events.SimEvent) -> Message | None:
    """The message for an engine event, or ``None`` for events the screen does not show."""
    match event:
        case events.RoundStarted():
            return messages.RoundStarted(event.round, event.events)
        case events.AgentDecided():
            return messages.Decided(event.round, event.agent, event.decision, event.forced)
        case events.AgentSpoke():
            return messages.Spoke(event.round, event.action)
        case events.StateUpdated():
            changes = event.changes
            moods = sum(abs(e.delta) >= CHANGED for e in changes.emotions)
            return messages.Judged(event.round, moods, int(changes.moved(CHANGED).sum()))
        case events.RoundEnded():
            return messages.RoundEnded(event.view)
        case events.RunPaused():
            return messages.RunPaused(event.round, event.reason)
        case events.Notice():
            return messages.Notice(event.message)
        case events.EngineError():
            return messages.RoundFailed(event.round, event.message)
    return None


class EventBridge:
    """Post the engine events of ``sim`` through ``post``, token streams coalesced.

    Made on the app's thread (inside its running loop); the run's events may come from any
    thread."""

    def __init__(
        self,
        sim: Simulation,
        post: Callable[[Message], object],
        interval: float = TOKEN_INTERVAL,
        pacer: Pacer | None = None,
    ) -> None:
        self._post = post
        self._pacer = pacer
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._lock = threading.Lock()  # guards _tokens and _armed across threads
        self._tokens: dict[str, list[str]] = {}
        self._armed = False  # a flush is scheduled (or about to be)
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._handed: deque[tuple[Callable[..., None], tuple[object, ...]]] = deque()
        #: While a drain runs, its messages of :data:`~tui.messages.BURSTABLE` kinds.
        self._burst: list[Message] | None = None
        self._unsubscribe = sim.subscribe(self._on_event)

    def _on_event(self, event: events.SimEvent) -> None:
        away = threading.get_ident() != self._thread  # on the engine thread
        if away and self._pacer is not None:
            self._pacer.give_way()
        if isinstance(event, events.TokenStreamed):
            with self._lock:
                self._tokens.setdefault(event.agent, []).append(event.text)
                arm, self._armed = not self._armed, True
            if arm:
                self._on_app_thread(self._arm)
            return
        message = to_message(event)
        if message is not None:
            self._on_app_thread(self._deliver, message)
        if away and self._pacer is not None and isinstance(event, events.RoundEnded):
            self._pacer.sent()

    def drawn(self) -> None:
        """The screen drew a round the bridge posted (lets the engine go on)."""
        if self._pacer is not None:
            self._pacer.drawn()

    def _on_app_thread(self, fn: Callable[..., None], *args: object) -> None:
        if threading.get_ident() == self._thread:
            fn(*args)
            return
        with self._lock:
            wake = not self._handed  # else a drain is due and takes this one too
            self._handed.append((fn, args))
        if wake:
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        """Run what the engine thread has handed over by now, in order; what it hands over
        meanwhile wakes the loop again, so a drain never holds the loop for longer than a
        burst. One that raises is the loop's to report, as a callback's would be."""
        with self._lock:
            burst, self._handed = self._handed, deque()
        self._burst = []
        try:
            for fn, args in burst:
                try:
                    fn(*args)
                except Exception as err:
                    self._report(err)
            self._send_burst()
        finally:
            self._burst = None

    def _report(self, err: Exception) -> None:
        self._loop.call_exception_handler(
            {"message": f"delivering an engine event: {err!r}", "exception": err}
        )

    def _send(self, message: Message) -> None:
        """Post ``message``, or keep it for the drain's burst; what is kept goes first."""
        if self._burst is not None and isinstance(message, messages.BURSTABLE):
            self._burst.append(message)
            return
        self._send_burst()
        self._post(message)

    def _send_burst(self) -> None:
        """Post what the drain kept (one message as itself); a failure is reported, and
        what comes after it is still posted."""
        if not self._burst:
            return
        items, self._burst = self._burst, []
        try:
            self._post(items[0] if len(items) == 1 else messages.Burst(items))
        except Exception as err:
            self._report(err)

    def _arm(self) -> None:
        if not self._closed and self._timer is None:
            self._timer = self._loop.call_later(self._interval, self.flush)

    def _deliver(self, message: Message) -> None:
        if not self._closed:
            self.flush()  # the tokens before the turn or round that ends
            self._send(message)

    def flush(self) -> None:
        """Post the buffered tokens now, one message per speaker."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with self._lock:
            tokens, self._tokens, self._armed = self._tokens, {}, False
        for agent, pieces in tokens.items():
            self._send(messages.TokensArrived(agent, "".join(pieces)))

    def close(self) -> None:
        """Stop listening; what is buffered or still on its way is dropped."""
        self._closed = True
        self._unsubscribe()
        if self._pacer is not None:
            self._pacer.reset()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with self._lock:
            self._tokens = {}
