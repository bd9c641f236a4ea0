"""A round's LLM calls as they go: done out of expected, in flight, the oldest's start.

The transport stack reports each exchange to the simulation it serves with :func:`exchange`,
and the live transport inside says when it is sent (:func:`sent`): no-ops outside a round.
A :class:`Simulation` owns a :class:`Calls` tracker (``sim.progress``) and marks its rounds
and phases on it; renderers (the CLI's bar and per-phase lines, the app's header) read
:meth:`Calls.now` from any thread or subscribe to finished phases with
:meth:`Calls.on_phase` and to every change with :meth:`Calls.on_change`. :func:`watch_new`
hears of every tracker made in a block (a worker process relays the rounds of the runs it
plays so: engine/studies/experiments/relay.py).

A round's expected calls come from its own plan: as each phase begins the round loop says
how many calls it and the round's later phases are expected to make (``phase(name,
planned)``: who decides, who speaks, which edges are judged, as far as each is known then);
until it does, the previous round's (a run's first: unknown). The ETA assumes the calls
left go at the round's pace so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlsplit

from .gate import Gate

_CURRENT: ContextVar[Calls | None] = ContextVar("socialsim_progress", default=None)
_WATCH: ContextVar[Callable[[Calls], None] | None] = ContextVar("socialsim_watch", default=None)


_SENDING: ContextVar[_Exchange | None] = ContextVar("socialsim_sending", default=None)


class _Exchange:
    """One exchange of a round: in flight from when the transport sends it (:func:`sent`),
    done when it ends."""

    def __init__(self, calls: Calls, key: str) -> None:
        self.calls, self.key, self.sent = calls, key, False

    def send(self) -> None:
        if not self.sent:
            self.sent = True
            self.calls.started(self.key)


def sent() -> None:
    """The exchange the calling task plays went to the server: in flight from now on (a
    no-op outside :func:`exchange`, and after its first attempt)."""
    handle = _SENDING.get()
    if handle is not None:
        handle.send()


@contextlib.contextmanager
def exchange(key: str) -> Iterator[None]:
    """One exchange ``key`` of the round (a no-op outside a simulation's round). It is in
    flight from when the transport inside says :func:`sent`, and done when the block ends:
    answered or failed, served without asking the server, or cancelled once sent (cancelled
    before it was sent, it never happened)."""
    calls = _CURRENT.get()
    if calls is None:
        yield
        return
    handle = _Exchange(calls, key)
    token = _SENDING.set(handle)
    try:
        yield
    except asyncio.CancelledError:
        if handle.sent:
            calls.finished(key)
        raise
    except BaseException:
        calls.finished(key, sent=handle.sent)
        raise
    else:
        calls.finished(key, sent=handle.sent)
    finally:
        _SENDING.reset(token)


def held() -> bool:
    """True while the round's simulation is held (no new call goes out)."""
    calls = _CURRENT.get()
    return calls is not None and calls.gate.held


@contextlib.contextmanager
def at_endpoint(base: str) -> Iterator[None]:
    """A call is in flight at endpoint ``base`` while the block runs (a run of several)."""
    calls = _CURRENT.get()
    if calls is not None:
        calls.at_endpoint(base, 1)
    try:
        yield
    finally:
        if calls is not None:
            calls.at_endpoint(base, -1)


async def passage() -> None:
    """Wait while the round's simulation is held (see :meth:`Calls.gate`); at once outside
    a simulation's round."""
    calls = _CURRENT.get()
    if calls is not None:
        await calls.gate.passage()


@contextlib.contextmanager
def watch_new(hook: Callable[[Calls], None]) -> Iterator[None]:
    """``hook(calls)`` hears of every :class:`Calls` made while the block runs (in its
    context: the tasks it starts too)."""
    token = _WATCH.set(hook)
    try:
        yield
    finally:
        _WATCH.reset(token)


@dataclass(frozen=True)
class Progress:
    """Where a round's calls stand (times from ``time.monotonic()``)."""

    round: int = 0
    phase: str = ""
    done: int = 0
    #: The round's expected calls (None: unknown); never below the calls done and in flight.
    expected: int | None = None
    #: Calls sent and not yet answered (they run on while held).
    in_flight: int = 0
    #: When the oldest call in flight started (None: none in flight).
    oldest_started: float | None = None
    round_started: float = 0.0
    #: True while no new call goes out (:meth:`Calls.gate` held; ``Simulation.hold``).
    held: bool = False
    #: Calls in flight at each endpoint of a run served by several (empty: one endpoint).
    endpoints: tuple[tuple[str, int], ...] = ()

    def oldest_age(self, now: float | None = None) -> float | None:
        """Seconds the oldest call in flight has waited."""
        if self.oldest_started is None:
            return None
        return (time.monotonic() if now is None else now) - self.oldest_started

    def by_endpoint(self) -> str:
        """`` (127.0.0.1:8101 2, 127.0.0.1:8102 1)``: the calls in flight at each endpoint of
        a run served by several (empty with one)."""
        if not self.endpoints:
            return ""
        return " (" + ", ".join(f"{urlsplit(b).netloc} {n}" for b, n in self.endpoints) + ")"

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left in the round at its pace so far (None: no call done, or unknown)."""
        if self.expected is None or not self.done:
            return None
        elapsed = (time.monotonic() if now is None else now) - self.round_started
        return max(0, self.expected - self.done) * elapsed / self.done


@dataclass(frozen=True)
class PhaseDone:
    """A phase of a round ended: its calls and seconds, and the round's progress then."""

    phase: str
    calls: int
    seconds: float
    progress: Progress


class Calls:
    """The calls of the round a simulation is playing (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._round, self._phase, self._done = 0, "", 0
        self._expected: int | None = None
        self._round_started = self._phase_started = 0.0
        self._phase_done = 0
        self._phases: dict[str, int] = {}  # this round's calls by phase, as each ended
        self._last: dict[str, int] = {}  # the round before's
        self._flight: dict[str, list[float]] = {}
        self._at: dict[str, int] = {}  # calls in flight by endpoint (several endpoints)
        self._listeners: list[Callable[[PhaseDone], None]] = []
        self._watchers: list[Callable[[Progress], None]] = []
        #: Held, the simulation's rounds send no new call (``Simulation.hold``).
        self.gate = Gate(self._changed)
        hook = _WATCH.get()
        if hook is not None:
            hook(self)

    def on_phase(self, listener: Callable[[PhaseDone], None]) -> Callable[[], None]:
        """Call ``listener`` (in the engine's thread) at the end of each phase; returns the
        unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def on_change(self, listener: Callable[[Progress], None]) -> Callable[[], None]:
        """Call ``listener`` with the progress after each change (a round or phase begun, an
        exchange started or ended), in the thread that made it; returns the unsubscribe."""
        self._watchers.append(listener)
        return lambda: self._watchers.remove(listener)

    def _changed(self) -> None:
        if self._watchers:
            now = self.now()
            for listener in list(self._watchers):
                listener(now)

    def now(self) -> Progress:
        """The round's progress at this moment."""
        with self._lock:
            return self._now()

    def _now(self) -> Progress:
        starts = [t for ts in self._flight.values() for t in ts]
        expected = self._expected
        if expected is not None:
            expected = max(expected, self._done + len(starts))
        return Progress(
            self._round,
            self._phase,
            self._done,
            expected,
            len(starts),
            min(starts, default=None),
            self._round_started,
            self.gate.held,
            tuple(self._at.items()),
        )

    @contextlib.contextmanager
    def round(self, number: int, previous: int | None) -> Iterator[None]:
        """Track round ``number`` (``previous``: the calls of the round before, if known)
        while the block runs: the transport's reports in it come here."""
        with self._lock:
            self._round, self._phase, self._done, self._phase_done = number, "", 0, 0
            if self._phases:
                self._last, self._phases = self._phases, {}
            self._expected = previous
            self._round_started = self._phase_started = time.monotonic()
            self._flight.clear()
        self._changed()
        token = _CURRENT.set(self)
        try:
            yield
            self.phase("")
        finally:
            _CURRENT.reset(token)

    def last_round(self) -> dict[str, int]:
        """The calls each phase of the round before made (empty: no round before here)."""
        with self._lock:
            return dict(self._last)

    def phase(self, name: str, planned: int | None = None) -> None:
        """Phase ``name`` begins (``""``: the round's last one ended); the one before ends.
        ``planned``: the calls this phase and the round's later ones are expected to make."""
        now = time.monotonic()
        with self._lock:
            ended = PhaseDone(
                self._phase, self._done - self._phase_done, now - self._phase_started, self._now()
            )
            if ended.phase:
                self._phases[ended.phase] = ended.calls
            self._phase, self._phase_done, self._phase_started = name, self._done, now
            if planned is not None:
                self._expected = self._done + planned
        if ended.phase:
            for listener in list(self._listeners):
                listener(ended)
        self._changed()

    def started(self, key: str) -> None:
        """An exchange of the round went out."""
        with self._lock:
            self._flight.setdefault(key, []).append(time.monotonic())
        self._changed()

    def at_endpoint(self, base: str, change: int) -> None:
        """A call went to endpoint ``base`` (``change`` 1) or came back from it (-1)."""
        with self._lock:
            self._at[base] = self._at.get(base, 0) + change
        self._changed()

    def finished(self, key: str, *, sent: bool = True) -> None:
        """An exchange of the round ended (``sent``: it was in flight; else it was served
        without asking the server)."""
        with self._lock:
            if sent:
                times = self._flight.get(key)
                if not times:
                    return
                times.pop(0)
                if not times:
                    del self._flight[key]
            self._done += 1
        self._changed()
