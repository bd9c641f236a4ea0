"""The executor layer shared by ``sweep`` and ``trial``: a batch of independent jobs, each a
top-level function and its arguments, played in local worker processes
(:class:`LocalExecutor`) or as Ray tasks (engine/studies/experiments/ray_executor.py).

Results come back to the calling thread one by one as jobs finish (``done(index, result)``),
so a caller keeps what finished whatever happens next. Ctrl+C (KeyboardInterrupt in the
calling thread, or the ``stop`` event set from another thread) cancels the jobs not yet
started, lets the running ones finish and report, then raises KeyboardInterrupt; a second
Ctrl+C stops the running ones too. A job that raises cancels the rest the same way and its
error is raised. Workers ignore SIGINT: the terminal's Ctrl+C reaches the caller alone.
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

    def run(self, jobs: Sequence[Job], done: Done, stop: threading.Event | None = None) -> None:
        """Play ``jobs``; ``done(i, result)`` for each finished job, in the calling thread."""
        ...


def _worker_init(limit: Any) -> None:
    """A local worker: Ctrl+C is the caller's to handle; LLM calls share the rate limit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if limit is not None:
        from .ratelimit import install

        install(lambda: asyncio.to_thread(limit.reserve))


class LocalExecutor:
    """Worker processes on this machine (``workers``, default: one per core); with
    ``calls_per_second``, one LLM rate limit shared by all of them."""

    def __init__(self, workers: int | None = None, calls_per_second: float | None = None) -> None:
        if workers is not None and workers < 1:
            raise SocialsimError(f"--workers {workers}: must be at least 1")
        self.workers = workers or os.cpu_count() or 1
        self.calls_per_second = calls_per_second

    def run(self, jobs: Sequence[Job], done: Done, stop: threading.Event | None = None) -> None:
        if not jobs:
            return
        manager, limit = None, None
        if self.calls_per_second:
            from .ratelimit import local_limit

            manager, limit = local_limit(self.calls_per_second)
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(jobs)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(limit,),
        )
        try:
            futures = {pool.submit(job.fn, *job.args): i for i, job in enumerate(jobs)}
            collect(futures, done, stop, lambda: _terminate(pool))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if manager is not None:
                manager.shutdown()


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop the running jobs of ``pool`` now (a second Ctrl+C): their runs keep every
    finished round. concurrent.futures has no public way before Python 3.14."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()


def collect(
    futures: dict[Future[Any], int],
    done: Done,
    stop: threading.Event | None,
    terminate: Callable[[], None],
) -> None:
    """Report futures as they finish; on Ctrl+C, ``stop`` or a failed job, cancel those not
    started and drain the running ones (``terminate`` them on a second Ctrl+C), then raise."""
    unreported = set(futures)

    def report(future: Future[Any]) -> None:
        unreported.discard(future)
        done(futures[future], future.result())

    try:
        while unreported:
            finished, _ = wait(unreported, timeout=POLL, return_when=FIRST_COMPLETED)
            for future in finished:
                report(future)
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt
    except BaseException:
        running = {f for f in unreported if not f.cancel()}
        try:
            for future in running:
                if future.exception() is None:
                    report(future)
        except KeyboardInterrupt:
            terminate()
        raise
