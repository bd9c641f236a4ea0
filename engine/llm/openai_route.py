"""OpenAI-compatible chat endpoints through litellm's provider layer, without its per-call
orchestration.

For the ``openai`` provider (OpenAI itself, and any OpenAI-compatible server named
``openai/<name>`` with an ``api_base``) litellm resolves the model, endpoint and headers
once; per call its OpenAI config maps the parameters (renames and drops per model) and
builds the body, and its pooled HTTP client (aiohttp underneath) sends it. What
``litellm.acompletion`` adds on top of that, per call, is skipped: a logging object, success
handlers and the standard logging payload, a cost lookup, and the synchronous request builder
run in a thread pool (socialsim has no callbacks and prices the usage itself). Errors go
through litellm's own exception mapping, so they are the exceptions ``acompletion`` raises.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .bounds import Meter, ReplyCut, loads, read_body, read_lines
from .servercache import cached_tokens

Sink = Callable[[str], None]
PROVIDER = "openai"


class StreamCut(Exception):
    """The server ended a stream before the reply finished (no ``finish_reason``): for
    example llama-cpp-python, which cuts a stream short when another request waits."""


#: Said of a reply cut short while none of its client's other calls was in flight: another
#: client of the server took its turn.
CUT_ALONE = (
    " (no other call of this run was in flight: another client of this server may be taking"
    " turns; llama-cpp-python cuts a reply short when another request waits)"
)


class ReplyNotText(Exception):
    """The reply's body is not UTF-8 text."""


class OpenAIRoute:
    """Chat exchanges with one model of the ``openai`` provider."""

    def __init__(self, litellm: Any, model: str, api_base: str | None, api_key: str | None):
        from litellm.utils import ProviderConfigManager

        self.litellm = litellm
        self.name, _, _, base = litellm.get_llm_provider(model, api_base=api_base)
        config: Any = ProviderConfigManager.get_provider_chat_config(
            model=self.name, provider=litellm.LlmProviders.OPENAI
        )
        key = api_key if api_key is not None else config.get_api_key()
        base = base or config.get_api_base()
        self.config = config
        self.url = config.get_complete_url(base, key, self.name, {}, {})
        self.headers = config.validate_environment({}, self.name, [], {}, {}, key, base)
        # What litellm's OpenAI client adds from the environment.
        organization = litellm.organization or os.environ.get("OPENAI_ORGANIZATION")
        for header, value in (
            ("OpenAI-Organization", organization),
            ("OpenAI-Project", os.environ.get("OPENAI_PROJECT_ID")),
        ):
            if value:
                self.headers[header] = value

    def body(self, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        """The request body: ``params`` as litellm maps them for this model (unsupported ones
        dropped, renamed where the model wants another name)."""
        mapped = self.config.map_openai_params(params, {}, self.name, drop_params=True)
        return self.config.transform_request(self.name, messages, mapped, {}, {})

    async def send(
        self, body: dict[str, Any], timeout: float, sink: Sink | None, meter: Meter
    ) -> tuple[str, Any, int | None]:
        """(text, usage, the prompt tokens the server says it took from its cache) of one
        exchange; streamed into ``sink`` when given. The reply is counted by ``meter`` as it
        arrives, and cut past its bounds. Failures raise the litellm exception of the status
        or error."""
        from litellm.llms.custom_httpx.http_handler import get_async_httpx_client

        client = get_async_httpx_client(llm_provider=self.litellm.LlmProviders.OPENAI)
        if sink is not None:
            body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        try:
            # Read as a stream either way, so a body is counted as it arrives.
            response = await client.post(
                self.url, json=body, headers=self.headers, timeout=timeout, stream=True
            )
            try:
                if sink is not None:
                    return await _streamed(response, sink, meter)
                return _whole(await read_body(response.aiter_bytes(), meter), meter)
            finally:
                await response.aclose()
        except (StreamCut, ReplyNotText, ReplyCut):
            raise
        except Exception as err:
            raise self._mapped(err) from err

    def _mapped(self, err: Exception) -> Exception:
        """The litellm exception ``acompletion`` raises for ``err`` (an HTTP status, a
        timeout, a refused connection, a reply that is not a chat completion)."""
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type
        from litellm.llms.openai.common_utils import OpenAIError

        response = getattr(err, "response", None)
        if response is not None:
            message = getattr(err, "message", None) or response.text
            if isinstance(message, bytes):  # the body of a streamed response, as read
                message = message.decode("utf-8", "replace")
            err = OpenAIError(
                status_code=response.status_code, message=message, headers=response.headers
            )
        elif isinstance(err, KeyError | IndexError | TypeError | ValueError):
            err = OpenAIError(status_code=500, message=f"not a chat completion: {err!r}")
        try:  # returns litellm's own exceptions (its HTTP client raises Timeout), raises others
            return exception_type(self.name, err, custom_llm_provider=PROVIDER)
        except Exception as mapped:
            return mapped


def _whole(content: bytes, meter: Meter) -> tuple[str, Any, int | None]:
    """(text, usage, the prompt tokens the server took from its cache) of a reply sent
    whole."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise ReplyNotText("the reply is not valid UTF-8") from None
    data = loads(text)
    reply = data["choices"][0]["message"]["content"] or ""
    meter.text(reply)
    usage = data.get("usage")
    return reply, usage, cached_tokens(usage, data.get("timings"), data)


async def _streamed(response: Any, sink: Sink, meter: Meter) -> tuple[str, Any, int | None]:
    """Read a server-sent-event chat stream: content deltas into ``sink``; the usage of the
    final chunk and the cache it reports (llama.cpp's last chunk has ``timings``); each
    event counted by ``meter``. A stream that ends before a choice says why it finished is
    cut. The stream is read to its end, so the connection is reused; a connection that
    breaks after ``[DONE]`` (llama-cpp-python closes a stream it cut short for the next
    request) is the end."""
    pieces: list[str] = []
    usage = None
    cached: int | None = None
    finished = done = False
    try:
        async for line in read_lines(response.aiter_bytes(), meter):
            if done or not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                continue
            meter.event()
            chunk = loads(payload)
            if "error" in chunk:
                raise ValueError(f"stream error: {chunk['error']}")
            usage = chunk.get("usage") or usage
            said = cached_tokens(chunk.get("usage"), chunk.get("timings"), chunk)
            cached = cached if said is None else said
            for choice in chunk.get("choices") or ():
                finished = finished or bool(choice.get("finish_reason"))
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    meter.text(delta)
                    pieces.append(delta)
                    sink(delta)
    except Exception:  # a cut after [DONE] is the end too
        if not done:
            raise
    if not finished:
        raise StreamCut("the server ended the stream before the reply finished")
    return "".join(pieces), usage, cached
