"""The LLM calls of runs played in workers, relayed to the caller (engine/llm/progress.py
across processes).

A job wraps what it plays in :func:`follow` with the run's name: every round tracked there
(each :class:`~engine.llm.progress.Calls` made in it) sends a :class:`Report` at each change
and each finished phase to the sink the executor installed in the worker (:func:`install`:
a manager's queue locally, a Ray queue on Ray: a report is in it once sent, so all of a
job's are there before its result), and one when the job ends. The caller's executor hands
them on with :func:`drain`, in the calling thread. Without a sink :func:`follow` does
nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.managers import BaseManager, SyncManager
from types import FrameType
from typing import Any

from ...llm.progress import Calls, PhaseDone, Progress, watch_new
from .parent_watch import serve_until_parent_dies

_SINK: Any = None


@dataclass(frozen=True)
class Report:
    """Where a run's round stands; ``progress`` None: the run's job ended. Times are on the
    sender's clock until :meth:`local` moves them to the receiver's."""

    run: str
    #: The rounds the run plays to (None: not known ahead).
    rounds: int | None
    progress: Progress | None
    #: The phase that just ended, if that is the news.
    phase: PhaseDone | None = None
    sent: float = 0.0

    def local(self, now: float | None = None) -> Report:
        """The report with its times on this process's ``time.monotonic()`` (the clocks of
        two machines need not agree; the time in transit is not counted)."""
        p = self.progress
        if p is None:
            return self
        shift = (time.monotonic() if now is None else now) - self.sent
        moved = dataclasses.replace(
            p,
            round_started=p.round_started + shift,
            oldest_started=None if p.oldest_started is None else p.oldest_started + shift,
        )
        phase = self.phase and dataclasses.replace(self.phase, progress=moved)
        return dataclasses.replace(self, progress=moved, phase=phase, sent=self.sent + shift)


Listener = Callable[[Report], None]


def install(sink: Any) -> None:
    """In a worker: send the reports to ``sink`` (anything with ``put``)."""
    global _SINK
    _SINK = sink


@contextlib.contextmanager
def follow(run: str, rounds: int | None = None) -> Iterator[None]:
    """Relay the rounds played in the block as run ``run`` (to ``rounds`` rounds)."""
    sink = _SINK
    if sink is None:
        yield
        return

    def send(progress: Progress | None, phase: PhaseDone | None = None) -> None:
        try:
            sink.put(Report(run, rounds, progress, phase, time.monotonic()))
        except Exception:  # the manager gone, a Ray queue lost: a report must not cost the run
            return

    def adopt(calls: Calls) -> None:
        calls.on_change(send)
        calls.on_phase(lambda done: send(done.progress, done))

    try:
        with watch_new(adopt):
            yield
    finally:
        send(None)


def local_queue() -> tuple[BaseManager, Any]:
    """A started manager process and a proxy to its queue (picklable into local workers);
    shut the manager down when the batch ends."""
    manager = SyncManager(ctx=multiprocessing.get_context("spawn"))
    manager.start(serve_until_parent_dies)
    return manager, manager.Queue()


def drain(source: Any, listener: Listener) -> None:
    """Every report waiting in ``source`` (a queue), on this process's clock, to
    ``listener``. A Ctrl+C or SIGTERM meanwhile acts once they are read
    (:func:`held_signals`): one that cut a read of a manager's queue in the middle left its
    connection in the middle of a message, and the next read waited for ever (a trial's
    first Ctrl+C, under load: its running jobs are drained on)."""
    with held_signals():
        while True:
            try:
                report = source.get_nowait()
            except Exception:  # queue.Empty; or a broken queue: reports stop
                return
            if isinstance(report, Report):
                listener(report.local())


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """While inside (in the main thread), SIGINT and SIGTERM are noted, not acted on; on
    leaving, each one noted goes, in turn, to the handler that was in place (raising
    KeyboardInterrupt, say, once the block is done)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        came.append(signum)

    held = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    previous = {s: signal.signal(s, note) for s in held}
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)
        for number in came:
            handler = previous[signal.Signals(number)]
            if callable(handler):
                handler(number, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(number)
