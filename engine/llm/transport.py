"""Transports deliver one chat exchange: live through litellm, or from a run's record."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import SocialsimError
from ..records import LLMCall
from .settings import LLMSettings

Sink = Callable[[str], None]
BACKOFF_BASE = 0.25
#: Awaited before every attempt when set: a rate limit shared across processes (Ray sweeps).
RATE_LIMIT: Callable[[], Any] | None = None
BACKOFF_CAP = 8.0


@dataclass
class Request:
    """One exchange to perform."""

    key: str
    model: str
    messages: list[dict[str, str]]
    schema: dict[str, Any] | None = None
    schema_name: str = "reply"
    response_format: bool = False
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
    """The server refused the ``json_schema`` response format."""

    def __init__(self, message: str) -> None:
        super().__init__(message, fatal=False)


class Transport(Protocol):
    """Performs exchanges."""

    async def complete(self, request: Request) -> Reply:
        """One exchange, or :class:`TransportError`."""
        ...

    async def aclose(self) -> None:
        """Release network resources."""
        ...


def _litellm():
    """Import litellm on first use, with the bundled cost map (no network at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


class LiteLLMTransport:
    """Live calls with a concurrency cap, a per-call timeout and retries with backoff."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.litellm = _litellm()
        self._semaphore = asyncio.Semaphore(settings.max_concurrency)
        models = {settings.model, settings.judge, *settings.agent_models.values()}
        self._keyless = {m for m in sorted(models) if self._check(m)}

    def _check(self, model: str) -> bool:
        """Fail early on an unknown provider or a missing key; True if no key is needed."""
        try:
            self.litellm.get_llm_provider(model, api_base=self.settings.api_base)
        except Exception:
            raise SocialsimError(
                f"--model {model!r}: unknown model or provider; use a litellm model string "
                "such as gpt-4o-mini, anthropic/<model>, ollama/<model>, or openai/<name> "
                "with --api-base"
            ) from None
        missing = [
            k
            for k in self.litellm.validate_environment(model).get("missing_keys", [])
            if k.endswith("KEY")
        ]
        if missing and not self.settings.api_base:
            raise SocialsimError(f"--model {model!r}: set {', '.join(missing)} in the environment")
        return bool(missing)

    async def complete(self, request: Request) -> Reply:
        ll = self.litellm
        ex = ll.exceptions
        transient = (
            ex.Timeout,
            ex.RateLimitError,
            ex.InternalServerError,
            ex.ServiceUnavailableError,
            ex.BadGatewayError,
            ex.APIConnectionError,
        )
        attempts = 0
        async with self._semaphore:
            while True:
                attempts += 1
                if RATE_LIMIT is not None:
                    await RATE_LIMIT()
                start = time.perf_counter()
                try:
                    reply = await self._once(request)
                except ex.BadRequestError as err:
                    text = str(err)
                    if request.response_format and _mentions_schema(text):
                        raise SchemaRejected(_short(text)) from None
                    raise TransportError(
                        f"{request.model}: request rejected: {_short(text)}",
                        fatal=True,
                        attempts=attempts,
                    ) from None
                except ex.AuthenticationError:
                    raise TransportError(
                        f"{request.model}: authentication failed; set the provider's API key "
                        "in the environment (for example OPENAI_API_KEY)",
                        fatal=True,
                        attempts=attempts,
                    ) from None
                except (ex.NotFoundError, ex.PermissionDeniedError) as err:
                    raise TransportError(
                        f"{request.model}: {_short(str(err))}", fatal=True, attempts=attempts
                    ) from None
                except transient as err:
                    if attempts > self.settings.retries:
                        unreachable = _unreachable(err, ex.APIConnectionError)
                        where = self.settings.api_base or "the provider"
                        message = (
                            f"{request.model}: cannot reach {where}"
                            if unreachable
                            else f"{request.model}: {type(err).__name__} after {attempts} attempts"
                        )
                        raise TransportError(
                            message, fatal=unreachable, attempts=attempts
                        ) from None
                    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempts - 1))
                    await asyncio.sleep(delay * (0.5 + random.random()))
                    continue
                except Exception as err:  # litellm raises plain errors for bad model strings
                    raise TransportError(
                        f"{request.model}: {_short(str(err))}", fatal=True, attempts=attempts
                    ) from None
                reply.latency_s = round(time.perf_counter() - start, 4)
                reply.attempts = attempts
                return reply

    async def _once(self, request: Request) -> Reply:
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "timeout": s.timeout,
            "temperature": s.temperature if request.temperature is None else request.temperature,
            "num_retries": 0,
            "max_retries": 0,
        }
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if request.model in self._keyless:
            kwargs["api_key"] = "no-key"  # local OpenAI-compatible servers ignore it
        if request.schema is not None and request.response_format:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.schema},
            }
        if request.sink is None:
            response = await self.litellm.acompletion(**kwargs)
            text = response.choices[0].message.content or ""
            return Reply(text=text, cost_usd=self._cost(response), **_usage(response))
        pieces: list[str] = []
        usage: dict[str, int] = {}
        stream = await self.litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = _usage(chunk)  # the final chunk carries the usage
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                pieces.append(delta)
                request.sink(delta)
        return Reply(text="".join(pieces), cost_usd=self._token_cost(request.model, usage), **usage)

    def _token_cost(self, model: str, usage: dict[str, int]) -> float:
        """Price a streamed reply from its token counts (unpriced models cost nothing)."""
        if not usage:
            return 0.0
        try:
            prompt, completion = self.litellm.cost_per_token(
                model=model,
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            )
        except Exception:  # models without a price (local servers) cost nothing
            return 0.0
        return float(prompt + completion)

    def _cost(self, response: Any) -> float:
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("response_cost") is not None:  # litellm priced it already
            return float(hidden["response_cost"])
        try:
            return float(self.litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # models without a price (local servers) cost nothing
            return 0.0

    async def aclose(self) -> None:
        """Nothing per run: litellm's HTTP clients are shared by every run on the loop
        (closing them here would break the others); :func:`close_clients` ends them."""


class ReplayTransport:
    """Serves a run's recorded exchanges by key: zero network calls."""

    def __init__(self, calls: list[LLMCall]) -> None:
        self.calls = {c.key: c for c in calls}

    async def complete(self, request: Request) -> Reply:
        if request.response_format and f"{request.key}:rejected" in self.calls:
            raise SchemaRejected(self.calls[f"{request.key}:rejected"].error or "json_schema")
        call = self.calls.get(request.key)
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


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    return {
        "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
    }


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


def _mentions_schema(text: str) -> bool:
    lowered = text.lower()
    return "response_format" in lowered or "json_schema" in lowered


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
