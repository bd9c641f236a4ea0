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
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.managers import BaseManager, SyncManager
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
    ``listener``."""
    while True:
        try:
            report = source.get_nowait()
        except Exception:  # queue.Empty; or a queue broken: reports stop
            return
        if isinstance(report, Report):
            listener(report.local())


class Drain:
    """:func:`drain` of ``source`` to ``listener``, called again and again, until a Ctrl+C
    (or any error not the queue's) interrupts one: a read cut in the middle leaves the
    manager's connection in the middle of a message, and the next read waited for ever
    while the caller drained its running jobs (a trial's first Ctrl+C, under load). From
    then on it reads nothing: the running jobs' calls are no longer shown."""

    def __init__(self, source: Any, listener: Listener) -> None:
        self.source, self.listener, self.broken = source, listener, False

    def __call__(self) -> None:
        if self.broken:
            return
        try:
            drain(self.source, self.listener)
        except BaseException:
            self.broken = True
            raise
