"""The LLM client's own CPU per call against the floor of plain httpx (for bench_llm.py).

The call pattern is a real update wave: the judge exchanges (U_S, U_R per edge, the needs) of
a per-edge round, with their prompts as they were sent. A pass sends the whole wave with the
run's concurrency cap to a stub in a child process, so the CPU time of this process (all its
threads: litellm's thread pool included) is the client's alone. Three senders:

* ``engine``: the engine's client (LLMClient.structured over LiteLLMTransport) on an
  ``openai/`` model, which takes litellm's provider layer directly;
* ``httpx floor``: plain ``httpx.AsyncClient`` posting the same bodies (checked identical
  first) and reading the reply's content from its JSON (the floor issue 12 names);
* ``aiohttp floor``: the same with a plain ``aiohttp.ClientSession``, what litellm's HTTP
  client runs on (httpx's pool costs more per call the more calls are in flight);
* ``litellm.acompletion``: the engine's client on a ``hosted_vllm/`` model (the same
  OpenAI-compatible server to litellm), the route every other provider takes.

Passes interleave the senders (one warm-up pass each first), so load drifts hit them alike.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx
from llm_stub import StubLLM
from pydantic import BaseModel

from engine.core.exchanges import LLMCall
from engine.llm.client import LLMClient
from engine.llm.parsing import with_schema
from engine.llm.settings import LLMSettings
from engine.llm.transport import LiteLLMTransport, close_clients
from engine.minds.llm import EmotionOut, NeedsOut, RelationOut

#: The update wave's structured judge exchanges (per-edge mode) and their output schemas.
SCHEMAS: dict[str, type[BaseModel]] = {
    "emotion": EmotionOut,
    "relation": RelationOut,
    "needs": NeedsOut,
}
ENGINE, FLOOR, AIOHTTP, ACOMPLETION = (
    "engine",
    "httpx floor",
    "aiohttp floor",
    "litellm.acompletion",
)
SENDERS = (ENGINE, FLOOR, AIOHTTP, ACOMPLETION)
MODELS = {ENGINE: "openai/stub", ACOMPLETION: "hosted_vllm/stub"}


@dataclass(frozen=True)
class Exchange:
    """One exchange of the wave: its messages as the engine hands them to the client."""

    purpose: str
    messages: list[dict[str, str]]

    @property
    def schema(self) -> type[BaseModel]:
        return SCHEMAS[self.purpose]


@dataclass(frozen=True)
class Pass:
    """One pass of the whole wave: wall time and this process's CPU time (all threads)."""

    wall: float
    cpu: float
    calls: int

    @property
    def cpu_per_call(self) -> float:
        return self.cpu / self.calls


def wave_of(calls: Sequence[LLMCall]) -> list[Exchange]:
    """The first attempts of a round's per-edge judge exchanges asked with json_schema."""
    return [
        Exchange(c.purpose, c.messages)
        for c in calls
        if c.purpose in SCHEMAS
        and c.structured == "json_schema"
        and not any(tag in c.key for tag in (":reask", ":rejected"))
    ]


def floor_body(exchange: Exchange, settings: LLMSettings) -> dict[str, Any]:
    """The body the engine sends for ``exchange`` (json_schema mode), built beforehand."""
    return {
        "model": "stub",
        "messages": with_schema(exchange.messages, None),
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": exchange.schema.__name__,
                "schema": exchange.schema.model_json_schema(),
            },
        },
    }


def engine_client(url: str, model: str, cap: int) -> LLMClient:
    settings = LLMSettings(
        model=model, api_base=url, structured="schema", max_concurrency=cap, timeout=60
    )
    return LLMClient(settings, LiteLLMTransport(settings))


async def ask(client: LLMClient, exchange: Exchange, key: str) -> None:
    await client.structured(
        key=key,
        purpose=exchange.purpose,
        agent="bench",
        model=client.settings.model,
        messages=exchange.messages,
        schema=exchange.schema,
        default=exchange.schema.model_construct(),
    )


AUTH = {"Authorization": "Bearer no-key"}


async def post(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> str:
    reply = await http.post(f"{url}/chat/completions", json=body, headers=AUTH)
    reply.raise_for_status()
    return reply.json()["choices"][0]["message"]["content"] or ""


async def post_aiohttp(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> str:
    async with session.post(f"{url}/chat/completions", json=body, headers=AUTH) as reply:
        reply.raise_for_status()
        return (await reply.json())["choices"][0]["message"]["content"] or ""


async def same_payloads(wave: Sequence[Exchange], cap: int) -> bool:
    """Whether the floor sends byte for byte the body the engine sends (in-process stub)."""
    with StubLLM(seed=1) as stub:
        client = engine_client(stub.url, MODELS[ENGINE], cap)
        async with httpx.AsyncClient(timeout=60) as http:
            await ask(client, wave[0], "check")
            await post(http, stub.url, floor_body(wave[0], client.settings))
        await close_clients()
        return stub.calls == 2 and stub.requests[0] == stub.requests[1]


async def measure(
    url: str, wave: Sequence[Exchange], cap: int, repeat: int
) -> dict[str, list[Pass]]:
    """``repeat`` timed passes of the wave per sender, after one warm-up pass each."""
    clients = {name: engine_client(url, model, cap) for name, model in MODELS.items()}
    limits = httpx.Limits(max_connections=cap, max_keepalive_connections=cap)
    http = httpx.AsyncClient(timeout=60, limits=limits)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=cap))
    gate = asyncio.Semaphore(cap)
    bodies = [floor_body(x, clients[ENGINE].settings) for x in wave]

    async def gated(name: str, body: dict[str, Any]) -> None:
        async with gate:  # the engine's semaphore, for the floors
            if name == FLOOR:
                await post(http, url, body)
            else:
                await post_aiohttp(session, url, body)

    async def send(name: str, n: int) -> None:
        if name in (FLOOR, AIOHTTP):
            await asyncio.gather(*(gated(name, b) for b in bodies))
        else:
            client = clients[name]
            await asyncio.gather(*(ask(client, x, f"p{n}:{k}") for k, x in enumerate(wave)))

    passes: dict[str, list[Pass]] = {name: [] for name in SENDERS}
    try:
        for n in range(repeat + 1):
            order = SENDERS[n % len(SENDERS) :] + SENDERS[: n % len(SENDERS)]
            for name in order:
                cpu0, wall0 = time.process_time(), time.perf_counter()
                await send(name, n)
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                if name in clients:
                    clients[name].take_calls()
                if n:  # the first pass of each sender warms it up
                    passes[name].append(Pass(wall, cpu, len(wave)))
    finally:
        await http.aclose()
        await session.close()
        for client in clients.values():
            await client.aclose()
        await close_clients()
    return passes


def spread(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    """``median (min-max)`` of ``values`` times ``scale``."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid * scale:.{digits}f} ({low * scale:.{digits}f}-{high * scale:.{digits}f})"


def ratios(passes: dict[str, list[Pass]], name: str, floor: str = FLOOR) -> list[float]:
    """Per pass, the sender's CPU per call over the floor's of the same round of passes."""
    return [
        p.cpu_per_call / f.cpu_per_call for p, f in zip(passes[name], passes[floor], strict=True)
    ]
