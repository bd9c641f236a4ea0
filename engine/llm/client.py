"""Structured and streamed exchanges on top of a transport, with every exchange recorded.

A structured call asks for JSON (``response_format`` where the server accepts it, JSON
instructions always), validates it with pydantic, repairs malformed JSON with json-repair,
re-asks once with the validation error, and otherwise falls back to a safe default. The
run never crashes on model output; each repair, re-ask and fallback is in the record.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from ..records import LLMCall, Outcome
from .settings import LLMSettings
from .transport import Reply, Request, SchemaRejected, Sink, Transport, TransportError

M = TypeVar("M", bound=BaseModel)
IGNORED_LIMIT = 2


class LLMClient:
    """Performs a run's exchanges and keeps their records and totals."""

    def __init__(self, settings: LLMSettings, transport: Transport) -> None:
        self.settings = settings
        self.transport = transport
        self.use_response_format = True
        self._unparsed_with_format = 0
        self._calls: list[LLMCall] = []
        self.total_calls = 0
        self.total_cost = 0.0

    # -- bookkeeping ---------------------------------------------------------------------

    def take_calls(self) -> list[LLMCall]:
        """The exchanges since the last call, in a stable order (by key)."""
        calls, self._calls = self._calls, []
        return sorted(calls, key=lambda c: c.key)

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        """Count exchanges recorded before this process (a resumed run) toward the caps."""
        for call in calls:
            self.total_calls += 1
            self.total_cost += call.cost_usd

    def stop_reason(self) -> str | None:
        """Why the run must stop after this round, if a cap was reached."""
        s = self.settings
        if s.max_calls is not None and self.total_calls >= s.max_calls:
            return f"stopped: {self.total_calls} LLM calls reached --max-calls {s.max_calls}"
        if s.budget_usd is not None and self.total_cost >= s.budget_usd:
            return f"stopped: spent ${self.total_cost:.4f}, reaching --budget-usd {s.budget_usd:g}"
        return None

    def _record(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply | None,
        outcome: Outcome,
        error: str | None = None,
        attempts: int = 1,
    ) -> None:
        call = LLMCall(
            key=request.key,
            purpose=purpose,
            agent=agent,
            model=request.model,
            messages=request.messages,
            response=reply.text if reply else None,
            error=error,
            structured=(
                "text"
                if request.schema is None
                else "json_schema"
                if request.response_format
                else "json_instructions"
            ),
            outcome=outcome,
            attempts=reply.attempts if reply else attempts,
        )
        if reply is not None:
            call.prompt_tokens = reply.prompt_tokens
            call.completion_tokens = reply.completion_tokens
            call.cost_usd = reply.cost_usd
            call.latency_s = reply.latency_s
        self._calls.append(call)
        self.total_calls += 1
        self.total_cost += call.cost_usd

    # -- exchanges ------------------------------------------------------------------------

    async def _send(self, request: Request, purpose: str, agent: str) -> Reply:
        """One exchange; a rejected json_schema format is switched off for the whole run."""
        try:
            return await self.transport.complete(request)
        except SchemaRejected as err:
            rejected = Request(**{**request.__dict__, "key": f"{request.key}:rejected"})
            self._record(rejected, purpose, agent, None, "error", error=str(err))
            self.use_response_format = False
            request.response_format = False
            return await self.transport.complete(request)

    async def text(
        self,
        *,
        key: str,
        purpose: str,
        agent: str,
        model: str,
        messages: list[dict[str, str]],
        sink: Sink | None = None,
    ) -> str:
        """Free text (streamed into ``sink``); an empty string when the model fails."""
        request = Request(key=key, model=model, messages=messages, sink=sink)
        reply = await self._attempt(request, purpose, agent)
        if reply is None:
            return ""
        text = reply.text.strip()
        self._record(
            request,
            purpose,
            agent,
            reply,
            "ok" if text else "fallback",
            None if text else "empty reply",
        )
        return text

    async def structured(
        self,
        *,
        key: str,
        purpose: str,
        agent: str,
        model: str,
        messages: list[dict[str, str]],
        schema: type[M],
        default: M | Callable[[], M],
        temperature: float | None = None,
    ) -> M:
        """A validated ``schema`` instance, repaired or re-asked when needed, else ``default``
        (a value, or a function giving it only when needed)."""
        fallback = default if callable(default) else (lambda: default)
        json_schema = _schema_of(schema)
        messages = with_schema(messages, json_schema)
        request = Request(
            key=key,
            model=model,
            messages=messages,
            schema=json_schema,
            schema_name=schema.__name__,
            response_format=self.use_response_format,
            temperature=temperature,
        )
        reply = await self._attempt(request, purpose, agent)
        if reply is None:
            return fallback()
        value, repaired, problem = parse(reply.text, schema)
        self._note_format(request, value is not None or repaired or _is_object(reply.text))
        if value is not None:
            self._record(request, purpose, agent, reply, "repaired" if repaired else "ok")
            return value
        self._record(request, purpose, agent, reply, "reasked", problem)
        reask = Request(
            key=f"{key}:reask",
            model=model,
            schema=json_schema,
            schema_name=schema.__name__,
            response_format=self.use_response_format,
            temperature=temperature,
            messages=[
                *messages,
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": f"That reply was not valid: {problem}. "
                    "Reply again with only the JSON object that matches the schema.",
                },
            ],
        )
        second = await self._attempt(reask, purpose, agent)
        if second is None:
            return fallback()
        value, repaired, problem = parse(second.text, schema)
        if value is not None:
            self._record(reask, purpose, agent, second, "repaired" if repaired else "ok")
            return value
        self._record(reask, purpose, agent, second, "fallback", problem)
        return fallback()

    async def _attempt(self, request: Request, purpose: str, agent: str) -> Reply | None:
        """One exchange; ``None`` (recorded as a fallback) when it failed non-fatally."""
        try:
            return await self._send(request, purpose, agent)
        except TransportError as err:
            if err.fatal:
                raise
            self._record(request, purpose, agent, None, "fallback", str(err), err.attempts)
            return None

    def _note_format(self, request: Request, usable: bool) -> None:
        """A server that ignores json_schema (prose back twice) gets instructions only.

        ``usable``: the reply was a JSON object, valid or not; a reply that only breaks a
        rule the JSON schema cannot express (silent <=> no target) says nothing of the server.
        """
        if not request.response_format:
            return
        self._unparsed_with_format = 0 if usable else self._unparsed_with_format + 1
        if self._unparsed_with_format >= IGNORED_LIMIT:
            self.use_response_format = False

    async def aclose(self) -> None:
        """Close the transport's clients."""
        await self.transport.aclose()


@functools.cache
def _schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of an output model (built once per model)."""
    return schema.model_json_schema()


def with_schema(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """Append the JSON instructions and schema to the system message."""
    note = (
        "\n\nReply with one JSON object and nothing else.\nJSON schema:\n"
        f"{json.dumps(schema, separators=(',', ':'))}\nEND SCHEMA"
    )
    first, *rest = messages
    return [{**first, "content": first["content"] + note}, *rest]


def parse(text: str, schema: type[M]) -> tuple[M | None, bool, str]:
    """(value, repaired, problem): strict JSON first, then json-repair; never raises."""
    if not text or not text.strip():
        return None, False, "the reply was empty"
    try:
        return schema.model_validate_json(_strip_fences(text)), False, ""
    except ValidationError as err:
        problem = _problem(err)
    try:
        data = json_repair.loads(text)
    except Exception:  # json-repair gives up on some inputs
        return None, False, problem
    if not isinstance(data, dict):
        return None, False, "the reply was not a JSON object"
    try:
        return schema.model_validate(data), True, ""
    except ValidationError as err:
        return None, False, _problem(err)


def _is_object(text: str) -> bool:
    """True if ``text`` is one JSON object (whatever its fields)."""
    try:
        return isinstance(json.loads(_strip_fences(text)), dict)
    except ValueError:
        return False


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped.removeprefix("json").strip()
    return stripped


def _problem(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "reply"
    return f"{loc}: {first['msg']}"
