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

from ..core.exchanges import LLMCall, Structured
from ..errors import SocialsimError
from .openai_route import PROVIDER, OpenAIRoute
from .settings import MAX_CONCURRENCY, LLMSettings

Sink = Callable[[str], None]
BACKOFF_BASE = 0.25
#: Awaited before every attempt when set: a rate limit shared across processes (Ray sweeps).
RATE_LIMIT: Callable[[], Any] | None = None
BACKOFF_CAP = 8.0
#: Formats sent as ``response_format`` (a server may refuse them).
RESPONSE_FORMATS = frozenset({"json_schema", "json_object"})
#: Sent as the API key to an ``api_base`` unless ``api_key_env`` names a variable.
PLACEHOLDER_KEY = "no-key"
#: Exchanges a record may lack because it predates them (the batched judge's re-ask of
#: missing edges): replayed as failures, which give the no-change of the old runs.
NEWER_EXCHANGES = (":missing", ":missing:reask")
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


@dataclass
class Reply:
    """The model's text and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1


class TransportError(SocialsimError):
    """An exchange that failed after its retries; ``fatal`` ones stop the round."""

    def __init__(self, message: str, *, fatal: bool, attempts: int = 1) -> None:
        super().__init__(message)
        self.fatal = fatal
        self.attempts = attempts


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
    for name in CALLBACK_LISTS:
        setattr(litellm, name, [])
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


class LiteLLMTransport:
    """Live calls with a concurrency cap, a per-call timeout and retries with backoff."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.litellm = _litellm()
        self._semaphore = asyncio.Semaphore(settings.max_concurrency)
        self._api_key = _api_key(settings)
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

    async def complete(self, request: Request) -> Reply:
        attempts = 0
        async with self._semaphore:
            while True:
                attempts += 1
                if RATE_LIMIT is not None:
                    await RATE_LIMIT()
                start = time.perf_counter()
                try:
                    reply = await self._once(request)
                except Exception as err:
                    delay = self._backoff(request, err, attempts)
                else:
                    reply.latency_s = round(time.perf_counter() - start, 4)
                    reply.attempts = attempts
                    return reply
                await asyncio.sleep(delay)

    def _backoff(self, request: Request, err: Exception, attempts: int) -> float:
        """The wait before retrying a failed attempt, or the :class:`TransportError` it is."""
        ex = self.litellm.exceptions
        text = str(err)
        status = getattr(err, "status_code", None)
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
            raise TransportError(
                f"{request.model}: request rejected: {_short(text)}", fatal=True, attempts=attempts
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
        )
        if not isinstance(err, transient):  # not found, forbidden, bad model strings, ...
            raise TransportError(
                f"{request.model}: {_short(text)}", fatal=True, attempts=attempts
            ) from None
        if attempts > self.settings.retries:
            unreachable = _unreachable(err, ex.APIConnectionError)
            where = self.settings.api_base or "the provider"
            message = (
                f"{request.model}: cannot reach {where}"
                if unreachable
                else f"{request.model}: {type(err).__name__} after {attempts} attempts"
            )
            raise TransportError(message, fatal=unreachable, attempts=attempts) from None
        delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempts - 1))
        return delay * (0.5 + random.random())

    def _params(self, request: Request) -> dict[str, Any]:
        """The OpenAI parameters of ``request``, before any provider mapping."""
        s = self.settings
        params: dict[str, Any] = {
            "temperature": s.temperature if request.temperature is None else request.temperature,
            "max_tokens": s.max_tokens,
        }
        if request.format == "json_schema" and request.schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.schema},
            }
        elif request.format == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    async def _once(self, request: Request) -> Reply:
        route = self._routes.get(request.model)
        if route is not None:
            body = route.body(request.messages, self._params(request))
            text, sent = await route.send(body, self.settings.timeout, request.sink)
            counts = _counts(sent)
            return Reply(text=text, cost_usd=self._token_cost(request.model, counts), **counts)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "timeout": self.settings.timeout,
            "num_retries": 0,
            "max_retries": 0,
            **self._params(request),
        }
        if self.settings.api_base:
            kwargs["api_base"] = self.settings.api_base
        if self._api_key is not None:  # else litellm reads the provider's usual variable
            kwargs["api_key"] = self._api_key
        if request.sink is None:
            response = await self.litellm.acompletion(**kwargs)
            text = response.choices[0].message.content or ""
            hidden = getattr(response, "_hidden_params", None) or {}
            cost = float(hidden.get("response_cost") or 0.0)  # litellm's price; None: unpriced
            return Reply(text=text, cost_usd=cost, **_counts(response.usage))
        pieces: list[str] = []
        usage: dict[str, int] = {}
        stream = await self.litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = _counts(chunk.usage)  # the final chunk carries the usage
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                pieces.append(delta)
                request.sink(delta)
        return Reply(text="".join(pieces), cost_usd=self._token_cost(request.model, usage), **usage)

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
        )

    async def aclose(self) -> None:
        return None


def _counts(usage: Any) -> dict[str, int]:
    """Token counts of a usage (litellm's object, or an OpenAI reply's dict)."""
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        usage = {k: getattr(usage, k, 0) for k in ("prompt_tokens", "completion_tokens")}
    return {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}


def _unreachable(err: BaseException, connection_error: type[BaseException]) -> bool:
    """True when the server could not be connected to at all (refused, unknown host).

    litellm reports a refused connection to an OpenAI-compatible server as an
    ``InternalServerError`` (status 500); its cause chain still holds the connect error.
    """
    import httpx

    if isinstance(err, connection_error):
        return True
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, httpx.ConnectError | ConnectionRefusedError | socket.gaierror):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _api_key(settings: LLMSettings) -> str | None:
    """The key to send: the named variable's value, a placeholder for an ``api_base``, or
    None (litellm reads the provider's usual variable). Never stored."""
    name = settings.api_key_env
    if name is None:
        return PLACEHOLDER_KEY if settings.api_base else None
    value = os.environ.get(name, "")
    if not value:
        raise SocialsimError(f"--api-key-env {name}: {name} is not set in the environment")
    return value


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
