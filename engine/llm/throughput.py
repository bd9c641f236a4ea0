"""How fast a server answers: a short probe of an OpenAI-compatible server's prompt and
generation throughput, and the wall time some tokens take at it.

The probe sends a few real chat completions (not streamed) straight to ``api_base``'s
``/chat/completions``: one to warm the model up (a server may load it on the first call),
then a long prompt asking for one word and a short prompt asking for a long reply, first one
at a time and then ``concurrency`` of each at once. ``concurrency`` is the server's slot
count where it says it (llama.cpp's ``GET /props`` ``total_slots``), else
:data:`PROBE_CONCURRENCY`, and never above ``max_concurrency``. Each prompt opens with a
fresh random word, so no server's prompt cache can reuse an earlier one.

Tokens are counted as the estimate counts them (``litellm.token_counter`` for the model: the
prompt's messages, the reply's text), so the rates apply to the estimate's tokens whatever
tokenizer the server has. From the wall times, ``time = prompt_tokens * a + reply_tokens * b``
is solved for the seconds per prompt token ``a`` and per generated token ``b``, one call at a
time and for all calls at once. Bounded: ``3 + 2 * concurrency`` calls, at most
:data:`PROBE_SECONDS` in all. The key sent is the one ``api_key_env`` names, or none.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from ..errors import SocialsimError
from .keys import api_key
from .settings import LLMSettings

#: Calls at once when the server does not say how many it decodes together.
PROBE_CONCURRENCY = 4
#: The whole probe's bound, in seconds.
PROBE_SECONDS = 90.0
#: Words of the long prompt.
PROMPT_WORDS = 300
#: Tokens the generating call asks for.
REPLY_TOKENS = 48
_FILLER = (
    "river", "stone", "market", "lantern", "harvest", "window", "letter", "bridge", "garden",
    "winter", "candle", "valley", "thread", "copper", "meadow", "signal", "harbor", "timber",
)  # fmt: skip


class ProbeError(SocialsimError):
    """The server could not be measured."""


@dataclass(frozen=True)
class Rates:
    """Seconds per prompt token and per generated token (all calls in flight together)."""

    prompt_s: float
    generate_s: float

    @property
    def prompt_per_s(self) -> float:
        """Prompt tokens read per second."""
        return 1 / self.prompt_s

    @property
    def generated_per_s(self) -> float:
        """Tokens generated per second."""
        return 1 / self.generate_s


@dataclass(frozen=True)
class Throughput:
    """A server's measured rates, one call at a time and ``concurrency`` at once."""

    concurrency: int
    single: Rates
    parallel: Rates
    #: The probe's calls and wall seconds.
    calls: int
    seconds: float
    #: Each endpoint's own figures, for several endpoints together (see :func:`combined`).
    parts: tuple[tuple[str, Throughput], ...] = ()

    def rates(self, at_once: float) -> Rates:
        """The rates with ``at_once`` calls in flight: throughput grows linearly from one
        call to ``concurrency`` calls, and no further."""
        k = self.concurrency
        share = 0.0 if k <= 1 else (min(max(at_once, 1.0), k) - 1) / (k - 1)
        one, all_ = self.single, self.parallel
        prompt = one.prompt_per_s + share * (all_.prompt_per_s - one.prompt_per_s)
        generated = one.generated_per_s + share * (all_.generated_per_s - one.generated_per_s)
        return Rates(1 / prompt, 1 / generated)

    def seconds_for(self, prompt_tokens: float, completion_tokens: float, at_once: float) -> float:
        """Wall seconds of calls with these tokens in all, ``at_once`` of them in flight."""
        r = self.rates(at_once)
        return prompt_tokens * r.prompt_s + completion_tokens * r.generate_s

    def text(self) -> str:
        """The rates in words (each endpoint's, then all together, for several)."""
        if self.parts:
            each = "".join(f"{base}: {speed.text()}\n" for base, speed in self.parts)
            return f"{each}{len(self.parts)} servers together: {self._rates_text()}"
        return self._rates_text()

    def _rates_text(self) -> str:
        one, all_ = self.single, self.parallel
        return (
            f"{one.prompt_per_s:,.0f} prompt and {one.generated_per_s:,.1f} generated tokens/s "
            f"one call at a time; {all_.prompt_per_s:,.0f} and {all_.generated_per_s:,.1f} "
            f"with {self.concurrency} at once ({self.calls} probe calls, {self.seconds:.0f} s)"
        )


def duration(seconds: float) -> str:
    """``4.2 s``, ``42 s``, ``3.5 min``, ``1.2 h``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class _Sample:
    prompt_tokens: float
    reply_tokens: float
    seconds: float


def combined(parts: list[tuple[str, Throughput]]) -> Throughput:
    """Several endpoints sharing a run's calls, each agent's on one: a call in turn goes
    to one server (their one-at-a-time rates, averaged); a wave spreads over all (their
    rates at once added up, as their concurrency)."""
    speeds = [speed for _, speed in parts]
    n = len(speeds)
    single = Rates(
        sum(s.single.prompt_s for s in speeds) / n, sum(s.single.generate_s for s in speeds) / n
    )
    parallel = Rates(
        1 / sum(s.parallel.prompt_per_s for s in speeds),
        1 / sum(s.parallel.generated_per_s for s in speeds),
    )
    return Throughput(
        sum(s.concurrency for s in speeds),
        single,
        parallel,
        sum(s.calls for s in speeds),
        sum(s.seconds for s in speeds),
        tuple(parts),
    )


async def probe_endpoints(settings: LLMSettings) -> Throughput:
    """Measure each of the run's endpoints in turn (one alone: as :func:`probe`), and what
    they serve together."""
    if len(settings.endpoints) < 2:
        return await probe(settings)
    return combined([(base, await probe(settings.at(base))) for base in settings.endpoints])


async def probe(settings: LLMSettings, model: str | None = None) -> Throughput:
    """Measure ``settings.api_base`` serving ``model`` (default the run's model), or raise
    :class:`ProbeError` with one line."""
    if not settings.api_base:
        raise ProbeError("the probe needs --api-base")
    model = model or settings.model
    try:
        return await asyncio.wait_for(_Probe(settings, model).run(), PROBE_SECONDS)
    except TimeoutError:
        raise ProbeError(f"{settings.api_base} took over {PROBE_SECONDS:.0f} s") from None


class _Probe:
    def __init__(self, settings: LLMSettings, model: str) -> None:
        import httpx

        self.settings, self.model = settings, model
        base = settings.api_base or ""
        if model.startswith(("ollama/", "ollama_chat/")) and not base.rstrip("/").endswith("/v1"):
            base = base.rstrip("/") + "/v1"  # Ollama's OpenAI-compatible endpoint
        self.url = base.rstrip("/") + "/chat/completions"
        self.root = base.rstrip("/").removesuffix("/v1")
        self.wire_model = model.split("/", 1)[1] if "/" in model else model
        key = api_key(settings)  # the named variable's value; never an unnamed one
        headers = {"Authorization": f"Bearer {key}"} if settings.api_key_env else {}
        self.client = httpx.AsyncClient(headers=headers, timeout=settings.timeout, trust_env=False)
        from .transport import _litellm  # litellm only once a probe runs

        self.litellm = _litellm()
        self.rng = random.Random()
        self.calls = 0

    async def run(self) -> Throughput:
        import httpx

        started = time.perf_counter()
        try:
            async with self.client:
                k = min(self.settings.max_concurrency, await self._slots() or PROBE_CONCURRENCY)
                await self._call(self._short(), 1)  # the model loaded, the connection open
                single = _solve([await self._call(*self._long()), await self._call(*self._gen())])
                longs = await self._wave([self._long() for _ in range(k)])
                gens = await self._wave([self._gen() for _ in range(k)])
        except httpx.HTTPError as err:
            raise ProbeError(f"{self.url}: {type(err).__name__}: {err}") from None
        return Throughput(
            k, single, _solve([longs, gens]), self.calls, time.perf_counter() - started
        )

    async def _slots(self) -> int | None:
        """llama.cpp's ``total_slots`` (``GET /props``), when the server says it."""
        import httpx

        try:
            reply = await self.client.get(f"{self.root}/props")
            slots = reply.json().get("total_slots") if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return slots if isinstance(slots, int) and slots > 0 else None

    def _nonce(self) -> str:
        return f"{self.rng.choice(_FILLER)}{self.rng.randrange(10**6)}"

    def _short(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"{self._nonce()}: say ok."}]

    def _long(self) -> tuple[list[dict[str, str]], int]:
        words = " ".join(self.rng.choice(_FILLER) for _ in range(PROMPT_WORDS))
        text = f"{self._nonce()}. Read this list, then reply with one word.\n{words}"
        return [{"role": "user", "content": text}], 1

    def _gen(self) -> tuple[list[dict[str, str]], int]:
        text = f"{self._nonce()}: count from 1 to 200, the numbers separated by spaces."
        return [{"role": "user", "content": text}], REPLY_TOKENS

    async def _call(self, messages: list[dict[str, str]], max_tokens: int) -> _Sample:
        body: dict[str, Any] = {
            "model": self.wire_model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": False,
        }
        self.calls += 1
        started = time.perf_counter()
        reply = await self.client.post(self.url, json=body)
        seconds = time.perf_counter() - started
        if reply.status_code != 200:
            raise ProbeError(f"{self.url} answered HTTP {reply.status_code}: {reply.text[:200]}")
        try:
            text = reply.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProbeError(f"{self.url}: not a chat completion: {reply.text[:200]}") from None
        counter = self.litellm.token_counter
        return _Sample(
            float(counter(model=self.model, messages=messages)),
            float(counter(model=self.model, text=text)) if text else 0.0,
            seconds,
        )

    async def _wave(self, asks: list[tuple[list[dict[str, str]], int]]) -> _Sample:
        """The calls sent at once: their tokens together, and the wave's wall time."""
        started = time.perf_counter()
        samples = await asyncio.gather(*(self._call(*ask) for ask in asks))
        return _Sample(
            sum(s.prompt_tokens for s in samples),
            sum(s.reply_tokens for s in samples),
            time.perf_counter() - started,
        )


def _solve(samples: list[_Sample]) -> Rates:
    """Seconds per prompt and per reply token from a prompt-heavy and a reply-heavy sample
    (``seconds = prompt * a + reply * b``); if the two do not separate (a non-positive
    solution), every token costs the same."""
    (p1, r1, t1), (p2, r2, t2) = ((s.prompt_tokens, s.reply_tokens, s.seconds) for s in samples)
    det = p1 * r2 - p2 * r1
    if det:
        a = (t1 * r2 - t2 * r1) / det
        b = (p1 * t2 - p2 * t1) / det
        if a > 0 and b > 0:
            return Rates(a, b)
    flat = (t1 + t2) / max(1.0, p1 + r1 + p2 + r2)
    return Rates(flat, flat)
