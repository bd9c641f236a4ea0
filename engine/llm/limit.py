"""An adaptive in-flight limit per endpoint: additive increase, multiplicative decrease.

A local server decodes one or a few requests at a time; what it is sent beyond that waits in
its queue, where each call's clock runs until it times out, and abandoned requests keep the
server busy. So an ``api_base`` endpoint starts at its slot count where the server says it
(llama.cpp's ``/props``), else at one call. While latency holds the limit grows: by one call
per answer until the first sign of a full server (slow start: it doubles every round trip),
then by one call per limit's worth of answers; it shrinks by one when latency rises well
above the best seen (calls queue in the server rather than run), and halves on a timeout, a
429 or 503: TCP's congestion control, with the ceiling ``--max-concurrency``. A local
server that cuts a stream short while another request waits serves one call at a time
from then on. A hosted provider starts at the ceiling, as before, and still halves
on a fault.

Latency is compared per unit of work (seconds per completion token plus a share per prompt
token), so a long reply is not mistaken for a busy server.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque

#: Prompt tokens a server reads in the time it generates one token (roughly: prompt
#: processing is batched), for the latency per unit of work.
PROMPT_WEIGHT = 1 / 20
#: Latency above this many times the best seen counts as queueing: the limit shrinks.
QUEUE_FACTOR = 2.0
#: Latency within this many times the best seen "holds": the limit may grow.
HOLD_FACTOR = 1.5
#: Answers the latency is smoothed over.
WINDOW = 8


class AdaptiveLimit:
    """At most ``limit`` calls in flight; the limit adapts to how the server answers."""

    def __init__(self, start: int, ceiling: int, *, adaptive: bool = True) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = float(min(max(1, start), self.ceiling))
        self.adaptive = adaptive
        self.in_flight = 0
        self._started: dict[int, float] = {}
        self._tickets = itertools.count()
        self._cond = asyncio.Condition()
        self._recent: deque[float] = deque(maxlen=WINDOW)
        self._best: float | None = None
        #: How often the limit was halved, and the highest it reached.
        self.decreases = 0
        self.peak = int(self.limit)
        self._slow_start = True

    @property
    def oldest_age(self) -> float:
        """Seconds the oldest call in flight has been running (0 with none)."""
        return time.monotonic() - min(self._started.values()) if self._started else 0.0

    async def acquire(self) -> int:
        """Wait for a place; a ticket for :meth:`release`."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1
            ticket = next(self._tickets)
            self._started[ticket] = time.monotonic()
            return ticket

    async def release(self, ticket: int) -> None:
        """Give the place back."""
        async with self._cond:
            self._started.pop(ticket, None)
            self.in_flight -= 1
            self._cond.notify_all()

    async def answered(self, latency_s: float, prompt_tokens: int, completion_tokens: int) -> None:
        """An answer came back: grow while latency holds, shrink when calls queue."""
        if not self.adaptive:
            return
        before = int(self.limit)
        work = completion_tokens + prompt_tokens * PROMPT_WEIGHT + 1
        self._recent.append(latency_s / work)
        smoothed = sorted(self._recent)[len(self._recent) // 2]
        if self._best is None or smoothed < self._best:
            self._best = smoothed
        if len(self._recent) < 2:
            return
        if smoothed <= self._best * HOLD_FACTOR:
            step = 1.0 if self._slow_start else 1 / self.limit
            self.limit = min(self.ceiling, self.limit + step)
        elif smoothed > self._best * QUEUE_FACTOR and self.limit >= 2:
            self._slow_start = False
            self.limit -= 1 / self.limit
        self.peak = max(self.peak, int(self.limit))
        if int(self.limit) > before:
            async with self._cond:
                self._cond.notify_all()

    def interrupted(self) -> None:
        """A local server cut a stream short while another request waited (llama-cpp-python
        serves one request at a time and interrupts the running one for the next): one call
        at a time from now on, since every call sent beside another would be cut."""
        self.ceiling = 1
        self.overloaded()

    def overloaded(self) -> None:
        """A timeout, a 429 or 503, or a cut stream: halve the limit."""
        self.limit = max(1.0, self.limit / 2)
        self.decreases += 1
        self._slow_start = False
        self._recent.clear()
