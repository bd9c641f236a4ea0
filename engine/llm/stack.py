"""The transport a run's LLM calls go through: one wrapper per concern around the live
transport, composed here and nowhere else (as Concordia wraps its language models for
retries, call limits and profiling).

From the outside in:

* :class:`Tracked` — waits while the simulation is held (its gate), and reports each
  exchange to the round's progress: in flight from when it is sent, done once it is
  journaled (so a caller that sees no call in flight sees every answer in the journal);
* :class:`~engine.llm.journal.Journaled` — serves the exchanges a run's journal kept of a
  round not yet saved (no server asked) and appends every exchange answered;
* :class:`RateLimited` — waits for a slot of a rate limit shared across processes (the
  workers of a sweep);
* :class:`~engine.llm.transport.LiteLLMTransport` — the call itself: the adaptive in-flight
  limit, the gate looked at again once a call has its slot (a call queued for a slot never
  goes out while held), the idle timeout, retries with backoff; with several endpoints, one
  per endpoint under :class:`~engine.llm.endpoints.Endpoints` (each agent kept on one,
  failover).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from . import progress
from .endpoints import Endpoints
from .journal import Journal, Journaled
from .settings import LLMSettings
from .transport import LiteLLMTransport, Reply, Request, Transport

Acquire = Callable[[], Awaitable[None]]
#: The rate limit this process's calls share (a sweep's worker installs it; None: none).
_shared_limit: Acquire | None = None


def share_rate_limit(acquire: Acquire | None) -> None:
    """Await ``acquire()`` before each model call of the transports made from now on in this
    process (a limit shared by the workers of a sweep); None: no limit."""
    global _shared_limit
    _shared_limit = acquire


def rate_limit() -> Acquire | None:
    """The rate limit installed in this process, if any."""
    return _shared_limit


class Tracked:
    """Holds each new exchange while the round's simulation is held, then reports it to the
    round's progress until it ends (answered, failed or cancelled)."""

    def __init__(self, inner: Journaled, live: LiteLLMTransport | Endpoints) -> None:
        self.inner = inner
        #: The call itself, innermost: what the run learns of its server.
        self.live = live

    @property
    def journal(self) -> Journal | None:
        return self.inner.journal

    def attach(self, journal: Journal | None) -> None:
        self.inner.attach(journal)

    async def complete(self, request: Request) -> Reply:
        await progress.passage()
        with progress.exchange(request.key):
            return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class RateLimited:
    """Waits for a slot of a shared rate limit before each exchange."""

    def __init__(self, inner: Transport, acquire: Acquire) -> None:
        self.inner = inner
        self.acquire = acquire

    async def complete(self, request: Request) -> Reply:
        await self.acquire()
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def live_transport(settings: LLMSettings) -> Tracked:
    """The live stack of a run's calls (see the module's docstring); its journal is attached
    by the simulation that plays a saved run."""
    several = len(settings.endpoints) > 1
    live = Endpoints(settings) if several else LiteLLMTransport(settings)
    transport: Transport = live
    acquire = rate_limit()
    if acquire is not None:
        transport = RateLimited(transport, acquire)
    return Tracked(Journaled(transport), live)


def endpoints_of(transport: Transport) -> Endpoints | None:
    """The several endpoints inside ``transport``'s wrappers (None: one endpoint)."""
    inner: Transport | None = transport
    while inner is not None and not isinstance(inner, Endpoints):
        inner = getattr(inner, "inner", None)
    return inner
