"""The executor layer shared by ``sweep`` and ``trial``: a batch of independent jobs, each a
top-level function and its arguments, played in local worker processes
(:class:`LocalExecutor`) or as Ray tasks (engine/studies/experiments/ray_executor.py).

Results come back to the calling thread one by one as jobs finish (``done(index, result)``),
so a caller keeps what finished whatever happens next; with ``calls``, so do the reports of
the LLM calls of the runs the jobs play (engine/studies/experiments/relay.py). Ctrl+C
(KeyboardInterrupt in the calling thread, or the ``stop`` event set from another thread)
cancels the jobs not yet started, lets the running ones finish and report, then raises
KeyboardInterrupt; a second Ctrl+C stops the running ones too, and so does
:class:`Terminated` (SIGTERM). A job that raises cancels the
rest the same way and its error is raised. Workers (and the manager processes serving them)
ignore SIGINT: the terminal's Ctrl+C reaches the caller alone, and they exit when the caller
is gone, SIGKILLed too (``parent_watch``), so no worker, and no resource tracker kept alive
by one, outlives it.
Workers are spawned, not forked: the app and rich's progress bar hold threads, and a fork
copies their locks in whatever state they are.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ...errors import SocialsimError
from .parent_watch import die_with_parent
from .relay import Listener, drain

#: How often a waiting caller looks at its ``stop`` event (seconds).
POLL = 0.1

Done = Callable[[int, Any], None]
T = TypeVar("T")


class Interrupted(KeyboardInterrupt):
    """Ctrl+C during a batch: ``partial`` is the result of the jobs that finished, of
    ``total``."""

    def __init__(self, partial: Any, total: int) -> None:
        super().__init__()
        self.partial = partial
        self.total = total


class Terminated(KeyboardInterrupt):
    """SIGTERM during a batch (raised by the caller's handler): the running jobs are stopped
    at once, as by a second Ctrl+C; their runs keep every finished round."""


def in_worker(coro: Coroutine[Any, Any, T]) -> T:
    """Run a job's coroutine in the worker's own event loop, then close the LLM clients it
    opened there."""

    async def main() -> T:
        try:
            return await coro
        finally:
            from ...llm.transport import close_clients

            await close_clients()

    return asyncio.run(main())


@dataclass(frozen=True)
class Job:
    """One unit of work: ``fn(*args)`` in a worker; ``fn`` is a module-level function and
    ``args`` are picklable."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


class Executor(Protocol):
    """Plays a batch of jobs, reporting each result as it comes."""

    def run(
        self,
        jobs: Sequence[Job],
        done: Done,
        stop: threading.Event | None = None,
        calls: Listener | None = None,
    ) -> None:
        """Play ``jobs``; ``done(i, result)`` for each finished job and ``calls(report)``
        for each report of their LLM calls, in the calling thread."""
        ...


def _worker_init(limit: Any, reports: Any) -> None:
    """A local worker: Ctrl+C is the caller's to handle, the caller's death ends it; LLM
    calls share the rate limit and are reported to ``reports`` (a queue)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    if limit is not None:
        from .ratelimit import install

        install(lambda: asyncio.to_thread(limit.reserve))
    if reports is not None:
        from . import relay

        relay.install(reports)


class LocalExecutor:
    """Worker processes on this machine (``workers``, default: one per core); with
    ``calls_per_second``, one LLM rate limit shared by all of them."""

    def __init__(self, workers: int | None = None, calls_per_second: float | None = None) -> None:
        if workers is not None and workers < 1:
            raise SocialsimError(f"--workers {workers}: must be at least 1")
        self.workers = workers or os.cpu_count() or 1
        self.calls_per_second = calls_per_second

    def run(
        self,
        jobs: Sequence[Job],
        done: Done,
        stop: threading.Event | None = None,
        calls: Listener | None = None,
    ) -> None:
        if not jobs:
            return
        managers, limit, reports = [], None, None
        if self.calls_per_second:
            from .ratelimit import local_limit

            manager, limit = local_limit(self.calls_per_second)
            managers.append(manager)
        if calls is not None:
            from .relay import local_queue

            manager, reports = local_queue()
            managers.append(manager)
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(jobs)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(limit, reports),
        )
        poll = None if calls is None else lambda: drain(reports, calls)
        try:
            futures = {pool.submit(job.fn, *job.args): i for i, job in enumerate(jobs)}
            # The pool's own dict (a shutdown drops the pool's reference to it, not the dict).
            processes = getattr(pool, "_processes", None) or {}
            collect(
                futures,
                done,
                stop,
                cancel=lambda: pool.shutdown(wait=False, cancel_futures=True),
                terminate=lambda: _terminate(processes),
                poll=poll,
            )
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for manager in managers:
                manager.shutdown()


def _terminate(processes: dict[int, Any]) -> None:
    """Stop a pool's worker ``processes`` now (a second Ctrl+C): their runs keep every
    finished round. concurrent.futures has no public way before Python 3.14."""
    for process in list(processes.values()):
        process.terminate()


def collect(
    futures: dict[Future[Any], int],
    done: Done,
    stop: threading.Event | None,
    cancel: Callable[[], None],
    terminate: Callable[[], None],
    poll: Callable[[], None] | None = None,
) -> None:
    """Report futures as they finish (and call ``poll`` at least every ``POLL`` seconds
    meanwhile); on Ctrl+C, ``stop`` or a failed job, ``cancel`` those not started and drain
    the running ones (``terminate`` them on a second Ctrl+C, or at once on SIGTERM), then
    raise.

    The pool cancels its own futures (``cancel``): a future cancelled from this thread while
    the pool breaks under ``terminate`` makes Python 3.11's pool thread raise
    InvalidStateError."""
    unreported = set(futures)
    poll = poll or (lambda: None)

    def report(future: Future[Any]) -> None:
        poll()  # what the job reported before it finished comes first
        unreported.discard(future)
        done(futures[future], future.result())

    try:
        while unreported:
            finished, _ = wait(unreported, timeout=POLL, return_when=FIRST_COMPLETED)
            poll()
            for future in finished:
                report(future)
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt
    except BaseException as stopped:
        if isinstance(stopped, Terminated):
            terminate()
            raise
        cancel()
        try:
            for future in list(unreported):
                while not future.done():  # the running jobs' calls stay shown meanwhile
                    wait([future], timeout=POLL)
                    poll()
                if not future.cancelled() and future.exception() is None:
                    report(future)
        except KeyboardInterrupt:
            terminate()
        raise
