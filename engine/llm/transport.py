"""Transports deliver one chat exchange: live through litellm, or from a run's record.

Live exchanges with the ``openai`` provider (OpenAI, and OpenAI-compatible servers at an
``api_base``) take litellm's provider layer directly (see ``openai_route``); other providers
go through ``litellm.acompletion``. Either way litellm runs without callbacks or debug
logging, and the exceptions, retries and records are the same.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.exchanges import CountedBy, LLMCall, Structured
from ..errors import SocialsimError
from . import progress
from .bounds import Meter, ReplyCut, count
from .grammar import grammar_schema
from .keys import api_key
from .limit import AdaptiveLimit
from .openai_route import CUT_ALONE, PROVIDER, OpenAIRoute, ReplyNotText, StreamCut
from .servercache import cached_tokens
from .settings import MAX_CONCURRENCY, LLMSettings
from .slots import ServerSlots
from .tokens import Counter

Sink = Callable[[str], None]
BACKOFF_BASE = 0.25
BACKOFF_CAP = 8.0
#: Formats sent as ``response_format`` (a server may refuse them, or accept and ignore them).
RESPONSE_FORMATS = frozenset({"json_schema", "json_object_schema", "json_object"})
#: What a server says of a prompt longer than its context window (llama.cpp's servers, vLLM,
#: OpenAI), and how each is raised.
WINDOW_WORDS = ("context window", "context length", "context_length", "maximum context")
WINDOW_HINT = (
    "raise the server's context window (llama.cpp --ctx-size, llama-cpp-python --n_ctx, "
    "Ollama num_ctx, vLLM --max-model-len)"
)
#: Exchanges a record may lack because it predates them (the batched judge's re-ask of
#: missing edges, the re-ask of a degenerate reply): replayed as failures, which give the
#: no-change of the old runs. (Each reply the record holds is judged as the record judged it,
#: whatever the checks have become since: ``LLMClient._flaw``.)
NEWER_EXCHANGES = (":missing", ":missing:reask", ":again")
#: What a server's refusal of a response format says (OpenAI, vLLM, llama.cpp's
#: llama-server, llama-cpp-python's pydantic error "Input should be 'text' or 'json_object'").
FORMAT_WORDS = ("response_format", "json_schema", "json_object", "input should be 'text'")


@dataclass
class Request:
    """One exchange to perform."""

    key: str
    model: str
    messages: list[dict[str, str]]
    schema: dict[str, Any] | None = None
    schema_name: str = "reply"
    #: How the reply is asked for; ``json_schema`` and ``json_object`` set ``response_format``.
    format: Structured = "text"
    sink: Sink | None = None
    #: Overrides the settings' temperature for this exchange.
    temperature: float | None = None
    #: A lower cap on the reply's tokens than the settings' (an utterance of a few sentences).
    max_tokens: int | None = None
    #: Stream the reply from an ``api_base`` server even without a ``sink``, so the timeout
    #: counts from the last byte received: waiting in a busy local server's queue or for a
    #: long prompt's evaluation (llama-cpp-python pings a waiting stream every 15 s) is then
    #: not a failure.
    stream: bool = False
    #: Whose exchange it is: several endpoints keep each one's calls on one (``endpoints``).
    agent: str = ""


@dataclass
class Reply:
    """The model's text and what it cost; ``sent_tokens``: the prompt as socialsim counts
    it; ``counted_by``: who counted ``prompt_tokens`` and ``completion_tokens``."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    sent_tokens: int = 0
    counted_by: CountedBy = "server"
    #: The prompt tokens the server says it took from its prefix cache (None: not said).
    cached_tokens: int | None = None
    #: Who answered, and whom a call moved off (``endpoints``; empty with one endpoint).
    endpoint: str = ""
    moved_from: str = ""


class TransportError(SocialsimError):
    """An exchange that failed after its retries; ``fatal`` ones stop the round."""

    def __init__(
        self,
        message: str,
        *,
        fatal: bool,
        attempts: int = 1,
        timed_out: bool = False,
        cut: bool = False,
        unanswered: bool = False,
    ) -> None:
        super().__init__(message)
        self.fatal = fatal
        self.attempts = attempts
        self.timed_out = timed_out
        #: The reply ran past a bound (``bounds``): said at once.
        self.cut = cut
        #: The server did not answer within the retries (unreachable, timing out, 5xx).
        self.unanswered = unanswered
        #: The endpoint that failed (empty with one endpoint).
        self.endpoint = ""


class SchemaRejected(TransportError):
    """The server refused the request's response format (a 4xx or 5xx naming it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, fatal=False)


def rejected_key(key: str, format: Structured) -> str:
    """The record key of a refused format (``:rejected`` alone for json_schema, as saved
    before json_object was probed too)."""
    return f"{key}:rejected" if format == "json_schema" else f"{key}:rejected:{format}"


class Transport(Protocol):
    """Performs exchanges."""

    async def complete(self, request: Request) -> Reply:
        """One exchange, or :class:`TransportError`."""
        ...

    async def aclose(self) -> None:
        """Release network resources."""
        ...


#: litellm's callback lists: socialsim registers none, and runs with all of them empty.
CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "service_callback",
    "_async_success_callback",
    "_async_failure_callback",
)
#: litellm's loggers, kept at ERROR whatever ``LITELLM_LOG`` said when it was imported.
LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


def _litellm():
    """Import litellm on first use, with the bundled cost map (no network at import), no
    callbacks and no debug output. Its aiohttp pool (500 connections per host by default)
    is made as large as ``max_concurrency`` may be, so the semaphore alone caps the calls
    in flight (both read when litellm is imported)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    for pool in ("AIOHTTP_CONNECTOR_LIMIT", "AIOHTTP_CONNECTOR_LIMIT_PER_HOST"):
        os.environ.setdefault(pool, str(MAX_CONCURRENCY))
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    litellm.disable_hf_tokenizer_download = True  # token counts never reach the network
    for name in CALLBACK_LISTS:
        setattr(litellm, name, [])
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


class LiteLLMTransport:
    """Live calls under an adaptive in-flight limit per endpoint, an idle timeout and
    retries with backoff."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.litellm = _litellm()
        ceiling = settings.max_concurrency
        # A local server starts at one call (then at the slots it says: ``self.slots``); a
        # provider at the ceiling.
        start = 1 if settings.api_base else ceiling
        self.limit = AdaptiveLimit(start, ceiling)
        self.counter = Counter(self.litellm)
        self._api_key = api_key(settings)
        self.slots = ServerSlots(settings.api_base, self.limit, self._api_key)
        #: Models priced at nothing (no price in litellm's map): never looked up again.
        self._unpriced: set[str] = set()
        self._routes: dict[str, OpenAIRoute] = {}
        for model in sorted({settings.model, settings.judge, *settings.agent_models.values()}):
            if self._check(model) == PROVIDER:
                self._routes[model] = OpenAIRoute(
                    self.litellm, model, settings.api_base, self._api_key
                )

    def _check(self, model: str) -> str:
        """The model's provider; fails early on an unknown provider, or a missing key for a
        provider's own API."""
        try:
            _, provider, _, _ = self.litellm.get_llm_provider(
                model, api_base=self.settings.api_base
            )
        except Exception:
            raise SocialsimError(
                f"--model {model!r}: unknown model or provider; use a litellm model string "
                "such as gpt-4o-mini, anthropic/<model>, ollama/<model>, or openai/<name> "
                "with --api-base"
            ) from None
        if self.settings.api_base or self.settings.api_key_env:
            return provider  # the key is the placeholder, or the named variable's (checked)
        missing = [
            k
            for k in self.litellm.validate_environment(model).get("missing_keys", [])
            if k.endswith("KEY")
        ]
        if missing:
            raise SocialsimError(f"--model {model!r}: set {', '.join(missing)} in the environment")
        return provider

    def servers(self) -> list[ServerSlots]:
        """What its server said of its slots (one endpoint)."""
        return [self.slots]

    async def complete(self, request: Request) -> Reply:
        await self.slots.ask(request.model)
        attempts = 0
        while True:
            attempts += 1
            ticket = await (self._first_slot() if attempts == 1 else self.limit.acquire())
            start = time.perf_counter()
            failure: Exception | None = None
            try:
                reply = await self._timed(request)
            except StreamCut as err:  # with none of its own beside it: another client's
                failure = StreamCut(f"{err}{CUT_ALONE}") if self.limit.in_flight == 1 else err
            except Exception as err:
                failure = err
            finally:
                await self.limit.release(ticket)
            if failure is None:
                reply.latency_s = round(time.perf_counter() - start, 4)
                reply.attempts = attempts
                await self.limit.answered(
                    reply.latency_s, reply.prompt_tokens, reply.completion_tokens
                )
                return reply
            if isinstance(failure, StreamCut) and self.settings.api_base:
                self.limit.interrupted()
            elif self._overloads(failure):
                self.limit.overloaded()
            await asyncio.sleep(self._backoff(request, failure, attempts))

    async def _first_slot(self) -> int:
        """A slot of the in-flight limit for a call's first attempt, taken while the run is
        not held: a call that queued for its slot while the run was held waits, slot given
        back, until it is released. The call is in flight from then (its retries run on
        while held: the call finishes)."""
        while True:
            ticket = await self.limit.acquire()
            if not progress.held():
                progress.sent()
                return ticket
            await self.limit.release(ticket)
            await progress.passage()

    def _overloads(self, err: Exception) -> bool:
        """A sign the server has more than it can do: a timeout, a 429 or 503, a cut stream."""
        ex = self.litellm.exceptions
        return isinstance(
            err, ex.Timeout | ex.RateLimitError | ex.ServiceUnavailableError | StreamCut
        )

    def _backoff(self, request: Request, err: Exception, attempts: int) -> float:
        """The wait before retrying a failed attempt, or the :class:`TransportError` it is."""
        ex = self.litellm.exceptions
        text = str(err)
        status = getattr(err, "status_code", None)
        if isinstance(err, ReplyNotText | ReplyCut):  # the same request would fail again
            raise TransportError(
                f"{request.model}: {err}",
                fatal=False,
                attempts=attempts,
                cut=isinstance(err, ReplyCut),
            )
        if (
            request.format in RESPONSE_FORMATS
            and isinstance(status, int)
            and 400 <= status < 600
            and _names_format(text)
        ):  # refused at once: retrying the same format cannot help
            raise SchemaRejected(
                f"{request.model}: {request.format} refused: {_format_line(text)}"
            ) from None
        if isinstance(err, ex.BadRequestError):
            hint = f"; {WINDOW_HINT}" if _names_window(text) else ""
            raise TransportError(
                f"{request.model}: request rejected: {_short(text)}{hint}",
                fatal=True,
                attempts=attempts,
            ) from None
        if isinstance(err, ex.AuthenticationError):
            hint = (
                f"name the variable holding {self.settings.api_base}'s key with --api-key-env"
                if self.settings.api_base
                else "set the provider's API key in the environment (for example OPENAI_API_KEY)"
            )
            raise TransportError(
                f"{request.model}: authentication failed; {hint}", fatal=True, attempts=attempts
            ) from None
        transient = (
            ex.Timeout,
            ex.RateLimitError,
            ex.InternalServerError,
            ex.ServiceUnavailableError,
            ex.BadGatewayError,
            ex.APIConnectionError,
            StreamCut,
        )
        if not isinstance(err, transient):  # not found, forbidden, bad model strings, ...
            raise TransportError(
                f"{request.model}: {_short(text)}", fatal=True, attempts=attempts
            ) from None
        if attempts > self.settings.retries:
            unreachable = not isinstance(err, ex.Timeout) and _unreachable(err)
            where = self.settings.api_base or "the provider"
            if unreachable:
                message = f"{request.model}: cannot reach {where}"
            elif isinstance(err, ex.Timeout):
                message = (
                    f"{request.model}: timed out after {attempts} attempts "
                    f"({self.settings.timeout:g} s each)"
                )
            else:
                name = str(err) if isinstance(err, StreamCut) else type(err).__name__
                message = f"{request.model}: {name} after {attempts} attempts"
            raise TransportError(
                message,
                fatal=unreachable,
                attempts=attempts,
                timed_out=isinstance(err, ex.Timeout),
                unanswered=True,
            ) from None
        delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempts - 1))
        return delay * (0.5 + random.random())

    def _params(self, request: Request) -> dict[str, Any]:
        """The OpenAI parameters of ``request``, before any provider mapping."""
        s = self.settings
        params: dict[str, Any] = {
            "temperature": s.temperature if request.temperature is None else request.temperature,
            "max_tokens": min(s.max_tokens, request.max_tokens or s.max_tokens),
        }
        if request.format == "json_schema" and request.schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.schema},
            }
        elif request.format == "json_object_schema" and request.schema is not None:
            # (as a grammar can hold a reply to it: its numbers' steps, one item per key)
            params["response_format"] = {
                "type": "json_object",
                "schema": grammar_schema(request.schema),
            }
        elif request.format in ("json_object", "json_object_schema"):
            params["response_format"] = {"type": "json_object"}
        return params

    async def _timed(self, request: Request) -> Reply:
        """One attempt, cut once it has taken ``call_timeout`` seconds (whether or not
        the server still sends)."""
        limit = self.settings.call_timeout
        scope = asyncio.timeout(limit)
        try:
            async with scope:
                return await self._once(request)
        except TimeoutError:
            if scope.expired():
                raise ReplyCut(f"a call ran past --call-timeout {limit:g} s; cut") from None
            raise

    async def _once(self, request: Request) -> Reply:
        streamed = request.stream and self.settings.api_base is not None
        sink = request.sink or (_ignored if streamed else None)
        route = self._routes.get(request.model)
        params = self._params(request)
        meter = Meter(params["max_tokens"])
        if route is not None:
            body = route.body(request.messages, params)
            text, sent, reused = await route.send(body, self.settings.timeout, sink, meter)
            reply = self._reply(request, text, _counts(sent))
            reply.cached_tokens = reused
            return reply
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "timeout": self.settings.timeout,
            "num_retries": 0,
            "max_retries": 0,
            **params,
        }
        if self.settings.api_base:
            kwargs["api_base"] = self.settings.api_base
        if self._api_key is not None:  # else litellm reads the provider's usual variable
            kwargs["api_key"] = self._api_key
        if sink is None:
            response = await self.litellm.acompletion(**kwargs)
            text = response.choices[0].message.content or ""
            meter.text(text)
            hidden = getattr(response, "_hidden_params", None) or {}
            reply = self._reply(request, text, _counts(response.usage))
            reply.cached_tokens = cached_tokens(response.usage)
            if hidden.get("response_cost"):  # litellm's price; None: unpriced
                reply.cost_usd = float(hidden["response_cost"])
            return reply
        pieces: list[str] = []
        usage: dict[str, int] = {}
        cached: int | None = None
        finished = False
        stream = await self.litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            meter.event()
            if getattr(chunk, "usage", None) is not None:
                usage = _counts(chunk.usage)  # the final chunk carries the usage
                cached = cached_tokens(chunk.usage)
            choice = chunk.choices[0] if chunk.choices else None
            finished = finished or bool(choice and choice.finish_reason)
            delta = choice.delta.content if choice else None
            if delta:
                meter.text(delta)
                pieces.append(delta)
                sink(delta)
        if not finished:
            raise StreamCut("the server ended the stream before the reply finished")
        reply = self._reply(request, "".join(pieces), usage)
        reply.cached_tokens = cached
        return reply

    def _reply(self, request: Request, text: str, usage: dict[str, int]) -> Reply:
        """The reply, its tokens counted by socialsim where the server sent no usage."""
        sent = self.counter.messages(request.model, request.messages)
        counted_by: CountedBy = "server"
        if not usage.get("prompt_tokens") and not usage.get("completion_tokens"):
            usage = {
                "prompt_tokens": sent,
                "completion_tokens": self.counter.text(request.model, text),
            }
            counted_by = "socialsim"
        return Reply(
            text=text,
            cost_usd=self._token_cost(request.model, usage),
            sent_tokens=sent,
            counted_by=counted_by,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )

    def _token_cost(self, model: str, usage: dict[str, int]) -> float:
        """Price a reply from its token counts; a model litellm has no price for (a local
        server) costs nothing, and is not looked up again."""
        if not usage or model in self._unpriced:
            return 0.0
        try:
            prompt, completion = self.litellm.cost_per_token(
                model=model,
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            )
        except Exception:
            self._unpriced.add(model)
            return 0.0
        return float(prompt + completion)

    async def aclose(self) -> None:
        """Nothing per run: litellm's HTTP clients are shared by every run on the loop
        (closing them here would break the others); :func:`close_clients` ends them."""


class ReplayTransport:
    """Serves a run's recorded exchanges by key: zero network calls."""

    def __init__(self, calls: list[LLMCall]) -> None:
        self.calls = {c.key: c for c in calls}

    async def complete(self, request: Request) -> Reply:
        refused = self.calls.get(rejected_key(request.key, request.format))
        if request.format in RESPONSE_FORMATS and refused is not None:
            raise SchemaRejected(refused.error or f"{request.format} refused")
        call = self.calls.get(request.key)
        if call is None and request.key.endswith(NEWER_EXCHANGES):
            raise TransportError("replay: not in a record made before this exchange", fatal=False)
        if call is None:
            raise TransportError(
                f"replay: no recorded exchange {request.key!r}; the run diverged from its record",
                fatal=True,
            )
        if call.response is None:
            raise TransportError(
                call.error or "recorded failure", fatal=False, attempts=call.attempts
            )
        if request.sink is not None:
            for word in call.response.split(" "):
                request.sink(word + " ")
        return Reply(
            text=call.response,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            cost_usd=call.cost_usd,
            latency_s=call.latency_s,
            attempts=call.attempts,
            sent_tokens=call.sent_tokens,
            counted_by=call.counted_by,
            cached_tokens=call.cached_tokens,
            endpoint=call.endpoint,
            moved_from=call.moved_from,
        )

    async def aclose(self) -> None:
        return None


def _ignored(_: str) -> None:
    """The sink of a reply streamed only for the idle timeout."""


def _counts(usage: Any) -> dict[str, int]:
    """Token counts of a usage (litellm's object, or an OpenAI reply's dict)."""
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        usage = {k: getattr(usage, k, 0) for k in ("prompt_tokens", "completion_tokens")}
    return {k: count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")}


def _unreachable(err: BaseException) -> bool:
    """True when the server could not be connected to at all: a refused connection or a
    name that does not resolve, found in the cause chain (litellm reports a refused
    connection as an ``InternalServerError`` or an ``APIConnectionError``, and a timeout or
    a dropped connection as an ``APIConnectionError`` too, which are not unreachable)."""
    import httpx
    from aiohttp import ClientConnectorError  # litellm's HTTP client is aiohttp underneath

    refused = (httpx.ConnectError, ConnectionRefusedError, socket.gaierror, ClientConnectorError)
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, refused):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _names_window(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in WINDOW_WORDS)


def _names_format(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in FORMAT_WORDS)


def _format_line(text: str) -> str:
    """The line of a refusal that names the format (FastAPI puts it on the second)."""
    named = [line.strip() for line in text.splitlines() if _names_format(line)]
    return named[0][:300] if named else _short(text)


def _short(text: str) -> str:
    """First line of an error, without litellm's long hints."""
    line = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return line[:300]


async def close_clients() -> None:
    """Close litellm's shared HTTP clients, once, before the event loop ends."""
    import sys

    litellm = sys.modules.get("litellm")
    close = getattr(litellm, "close_litellm_async_clients", None)
    if close is not None:
        await close()
