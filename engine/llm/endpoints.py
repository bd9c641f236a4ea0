"""Several endpoints of one run: each agent's calls kept on one server, a silent server's
agents moved to the others and given back once it answers again.

A run given more than one ``--api-base`` (or an ``--endpoints`` file) gets one
:class:`~engine.llm.transport.LiteLLMTransport` per endpoint, so each keeps its own
adaptive in-flight limit, its slots and its retries as a lone endpoint does. The endpoints
are the deployments of a litellm ``Router`` (one model group, each deployment's id its
URL): the Router holds their cooldowns. An endpoint whose call went unanswered through its
retries is recorded as failed with the Router (``health().record_failure``, which cools it
down for :data:`COOLDOWN_SECONDS`), and its agents go to the deployments the Router lists as
healthy (``select(kind="healthy")``). The Router is asked at those moments only, never per
call: each call goes to its agent's endpoint, which the Router's own strategies (shuffle,
least busy, latency) cannot keep, and the per-call selection would cost client CPU.

Affinity: an agent's first call places it on the healthy endpoint with the fewest expected
tokens (its first prompt's tokens plus the reply cap stand for each of its calls), and its
calls stay there while that endpoint answers, so the server keeps its prompt head cached.
No call names a slot (llama.cpp's ``id_slot``): the server chooses, and its own choice
keeps more of an agent's prompt. ``llama-server`` with its defaults (4 slots, one unified KV
cache) saves each idle slot's prompt to its host-memory prompt cache and clears the slot
whenever a task starts; a call naming no slot takes a cleared one and loads the cached
prompt sharing its longest prefix, while a call naming a slot finds it cleared and reads its
whole prompt again (llama.cpp's ``get_available_slot``: an empty slot asked by id loads
nothing from the cache). Measured
on two real servers, round 2 of a tavern: a slot an agent, 26% of the prompt reused; the
server choosing, 60%; a slot each agent's voice, 40-45% (docs/benchmarks.md). After its
cooldown a failed endpoint is probed (``GET /v1/models``); once it answers, the agents first
placed on it go back.

:meth:`Endpoints.route` names the endpoint an agent's calls go to before they are made, so the
client keeps each model's structured mode and system role per endpoint (``model @ url``).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.exchanges import LLMCall
from . import progress
from .keys import api_key
from .server import answers
from .settings import LLMSettings
from .slots import ServerSlots
from .transport import LiteLLMTransport, Reply, Request, TransportError

#: Seconds a silent endpoint rests before it is probed and, answering, given its agents back.
COOLDOWN_SECONDS = 30.0
#: The Router's model group of the run's endpoints.
GROUP = "socialsim-endpoints"


@dataclass
class Endpoint:
    """One server of the run: its transport, the agents it serves now, its health."""

    base: str
    transport: LiteLLMTransport
    #: Agent -> expected tokens of its calls, for the agents it serves now.
    agents: dict[str, float] = field(default_factory=dict)
    #: The agents placed here first (its own agents), given back after a failover.
    own: list[str] = field(default_factory=list)
    down: bool = False
    retry_at: float = 0.0
    answered: int = 0

    @property
    def load(self) -> float:
        return sum(self.agents.values())


class Endpoints:
    """A transport over several endpoints: affinity by agent, failover, recovery."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.cooldown = COOLDOWN_SECONDS
        self.endpoints = {
            b: Endpoint(b, LiteLLMTransport(settings.at(b))) for b in settings.endpoints
        }
        self.router = _router(settings, self.cooldown)
        self.where: dict[str, str] = {}  # agent -> the endpoint serving it now
        #: Called with each line the user must read at once (a failover, a recovery).
        self.notices: Callable[[str], None] | None = None
        self._probes: set[asyncio.Task[None]] = set()

    # -- the transport -------------------------------------------------------------------

    async def complete(self, request: Request) -> Reply:
        moved_from = ""
        for _ in range(len(self.endpoints) + 1):
            endpoint = self._endpoint_for(request)
            try:
                with progress.at_endpoint(endpoint.base):
                    reply = await endpoint.transport.complete(request)
            except TransportError as err:
                err.endpoint = endpoint.base
                if not err.unanswered or not await self._failed(endpoint, err):
                    raise
                moved_from = endpoint.base
                continue
            endpoint.answered += 1
            reply.endpoint, reply.moved_from = endpoint.base, moved_from
            return reply
        raise TransportError(f"{request.model}: no endpoint answered", fatal=True)

    def servers(self) -> list[ServerSlots]:
        """What each endpoint's server said of its slots."""
        return [e.transport.slots for e in self.endpoints.values()]

    async def aclose(self) -> None:
        for task in self._probes:
            task.cancel()
        self.router.retire()

    # -- affinity ------------------------------------------------------------------------

    def route(self, model: str, agent: str, key: str, messages: list[dict[str, str]]) -> str:
        """``model @ url``: the key of ``model``'s structured mode and system role at the
        endpoint ``agent``'s calls go to (the agent placed now if it is new)."""
        return f"{model} @ {self._place(agent, model, messages, None).base}"

    def _endpoint_for(self, request: Request) -> Endpoint:
        return self._place(request.agent, request.model, request.messages, request.max_tokens)

    def _place(
        self, agent: str, model: str, messages: list[dict[str, str]], max_tokens: int | None
    ) -> Endpoint:
        """The endpoint of ``agent``'s calls: its own while that answers; else (a new agent,
        or one whose endpoint went silent) the answering one with the fewest expected
        tokens, where it stays."""
        self._recover()
        base = self.where.get(agent)
        if base is not None and not self.endpoints[base].down:
            return self.endpoints[base]
        up = [e for e in self.endpoints.values() if not e.down]
        if not up:  # every endpoint silent: the call fails as a lone endpoint's does
            return self.endpoints[base] if base else next(iter(self.endpoints.values()))
        chosen = min(up, key=lambda e: e.load)
        weight = self._weight(agent, model, messages, max_tokens, chosen)
        if base is None:
            chosen.own.append(agent)
        self._move(agent, weight, chosen)
        return chosen

    def _weight(
        self,
        agent: str,
        model: str,
        messages: list[dict[str, str]],
        max_tokens: int | None,
        endpoint: Endpoint,
    ) -> float:
        """An agent's expected tokens per call: its first prompt's and the reply cap."""
        for e in self.endpoints.values():
            if agent in e.agents:
                return e.agents[agent]
        sent = endpoint.transport.counter.messages(model, messages) if messages else 0
        return float(sent + min(max_tokens or self.settings.max_tokens, self.settings.max_tokens))

    def _move(self, agent: str, weight: float, to: Endpoint) -> None:
        for e in self.endpoints.values():
            e.agents.pop(agent, None)
        to.agents[agent] = weight
        self.where[agent] = to.base

    # -- failover and recovery ---------------------------------------------------------

    async def _failed(self, endpoint: Endpoint, err: TransportError) -> bool:
        """``endpoint`` left a call unanswered through its retries: record it with the
        Router and move its agents to the healthy others. False when none is left."""
        if endpoint.down:  # said by the call that failed first
            return any(not e.down for e in self.endpoints.values())
        from litellm.exceptions import ServiceUnavailableError

        endpoint.down = True
        failure = ServiceUnavailableError(str(err), llm_provider="openai", model=GROUP)
        self.router.health().record_failure(endpoint.base, failure, 503)
        healthy = await self._healthy()
        others = [e for e in self.endpoints.values() if not e.down and e.base in healthy]
        if not others:
            endpoint.down = False
            return False
        endpoint.retry_at = time.monotonic() + self.cooldown
        moved = sorted(endpoint.agents.items(), key=lambda item: -item[1])
        taken: Counter[str] = Counter()
        for agent, weight in moved:
            to = min(others, key=lambda e: e.load)
            self._move(agent, weight, to)
            taken[to.base] += 1
        where = ", ".join(f"{base} ({n})" for base, n in taken.items()) or "no agent yet"
        self._say(
            f"endpoint {endpoint.base} stopped answering ({err}; {endpoint.answered} calls "
            f"answered before, this one tried {err.attempts} times): its {len(moved)} agents "
            f"moved to {where}; tried again in {self.cooldown:g} s"
        )
        return True

    def _recover(self) -> None:
        """Probe each silent endpoint whose rest is over (once at a time)."""
        now = time.monotonic()
        for endpoint in self.endpoints.values():
            if endpoint.down and now >= endpoint.retry_at:
                endpoint.retry_at = now + self.cooldown
                task = asyncio.get_running_loop().create_task(self._probe(endpoint))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)

    async def _probe(self, endpoint: Endpoint) -> None:
        """Give ``endpoint`` its agents back if the Router's cooldown is over and it
        answers; else it rests again."""
        if endpoint.base not in await self._healthy():
            return
        key = api_key(self.settings)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if not await answers(endpoint.base, headers):
            return
        endpoint.down = False
        back = [a for a in endpoint.own if self.where.get(a) != endpoint.base]
        for agent in back:
            base = self.where[agent]
            self._move(agent, self.endpoints[base].agents.get(agent, 0.0), endpoint)
        self._say(f"endpoint {endpoint.base} answers again: its {len(back)} agents are back")

    async def _healthy(self) -> set[str]:
        """The endpoints the Router would pick from (those not cooling down; it raises
        when every one is)."""
        from litellm.types.router import RouterRateLimitError

        try:
            listed = await self.router.select(GROUP, kind="healthy")
        except RouterRateLimitError:
            return set()
        return {d["model_info"]["id"] for d in listed}

    def _say(self, line: str) -> None:
        if self.notices is not None:
            self.notices(line)


class RecordedRoute:
    """A replay's :meth:`Endpoints.route`: the endpoint each exchange went to, as its record
    says (else its agent's last), so its model is asked as it was there."""

    def __init__(self, calls: Iterable[LLMCall]) -> None:
        self.at = {call.key: call.endpoint for call in calls if call.endpoint}
        self._last: dict[str, str] = {}  # agent -> the endpoint of its last exchange

    def __call__(self, model: str, agent: str, key: str, messages: list[dict[str, str]]) -> str:
        if key in self.at:
            self._last[agent] = self.at[key]
        at = self._last.get(agent)
        return f"{model} @ {at}" if at else model


def _router(settings: LLMSettings, cooldown: float) -> Any:
    """litellm's Router over the run's endpoints: one deployment each, cooled down at its
    first failure recorded (see the module's docstring); litellm's cost map as it was."""
    from .transport import _litellm

    litellm = _litellm()
    deployments = [
        {
            "model_name": GROUP,
            "litellm_params": {"model": settings.model, "api_base": base},
            "model_info": {"id": base},
        }
        for base in settings.endpoints
    ]
    priced = set(litellm.model_cost)
    router = litellm.Router(
        model_list=deployments, allowed_fails=0, cooldown_time=cooldown, num_retries=0
    )
    for added in set(litellm.model_cost) - priced:  # the Router prices its deployments (at
        del litellm.model_cost[added]  # nothing): a model with no price stays unpriced
    return router
