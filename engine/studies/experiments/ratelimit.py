"""One LLM rate limit shared by every worker of an executor: a reservation clock kept in
one place (a manager process locally, an actor on Ray) that hands each call its slot."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Awaitable, Callable
from multiprocessing.managers import BaseManager
from typing import Any

from .parent_watch import serve_until_parent_dies


class RateLimit:
    """At most ``rate`` calls a second: each :meth:`reserve` takes the next free slot,
    ``1 / rate`` seconds after the one before, and says how long to wait for it."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next = time.monotonic()

    def reserve(self) -> float:
        now = time.monotonic()
        slot = max(now, self.next)
        self.next = slot + self.interval
        return slot - now


class _Manager(BaseManager):
    """Serves one :class:`RateLimit` to the local worker processes."""


_Manager.register("RateLimit", RateLimit)


def local_limit(rate: float) -> tuple[BaseManager, Any]:
    """A started manager process and a proxy to its :class:`RateLimit` (picklable into
    the workers); shut the manager down when the batch ends."""
    manager = _Manager(ctx=multiprocessing.get_context("spawn"))
    manager.start(serve_until_parent_dies)  # through a first Ctrl+C, never past its caller
    return manager, manager.RateLimit(rate)  # type: ignore[attr-defined]


def install(reserve: Callable[[], Awaitable[float]]) -> None:
    """Make every LLM call of this process wait for its slot: ``reserve()`` gives the
    seconds to wait."""
    from ...llm.stack import share_rate_limit

    async def acquire() -> None:
        delay = await reserve()
        if delay > 0:
            await asyncio.sleep(delay)

    share_rate_limit(acquire)
