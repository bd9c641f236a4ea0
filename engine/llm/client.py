"""Structured and streamed exchanges on top of a transport, with every exchange recorded.

A structured call asks for JSON in the model's format (``response_format`` json_schema,
json_object with the schema in the prompt, or instructions only; see ``formats``),
validates it with pydantic, repairs malformed JSON with json-repair, re-asks once with the
validation error, and otherwise falls back to a safe default. The run never crashes on model
output; each refusal, repair, re-ask and fallback is in the record.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from ..core.exchanges import LLMCall, Outcome, Structured
from ..core.textsafe import clean, strip_controls
from .formats import Formats
from .settings import LLMSettings
from .transport import (
    Reply,
    Request,
    SchemaRejected,
    Sink,
    Transport,
    TransportError,
    rejected_key,
)

M = TypeVar("M", bound=BaseModel)
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class _Ask:
    """A structured exchange to make, in whichever format the model is asked with."""

    key: str
    model: str
    messages: Messages
    schema: dict[str, Any]
    schema_name: str
    temperature: float | None
    followup: tuple[dict[str, str], ...] = ()

    def request(self, format: Structured) -> Request:
        """The request in ``format``: the schema goes in the prompt unless it is sent as
        ``response_format`` json_schema."""
        pasted = None if format == "json_schema" else self.schema
        return Request(
            key=self.key,
            model=self.model,
            messages=[*with_schema(self.messages, pasted), *self.followup],
            schema=self.schema,
            schema_name=self.schema_name,
            format=format,
            temperature=self.temperature,
        )


class LLMClient:
    """Performs a run's exchanges and keeps their records and totals."""

    def __init__(self, settings: LLMSettings, transport: Transport) -> None:
        self.settings = settings
        self.transport = transport
        self._formats: dict[str, Formats] = {}
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

    def note_missing(self, key: str, missing: Sequence[str]) -> None:
        """Record on exchange ``key`` (its re-ask, if it had one) the parts of the answer
        still missing, which fell back."""
        for call in reversed(self._calls):
            if call.key in (key, f"{key}:reask"):
                call.missing = list(missing)
                return

    def stop_reason(self) -> str | None:
        """Why the run must stop after this round, if a cap was reached."""
        s = self.settings
        if s.max_calls is not None and self.total_calls >= s.max_calls:
            return f"stopped: {self.total_calls} LLM calls reached --max-calls {s.max_calls}"
        if s.budget_usd is not None and self.total_cost >= s.budget_usd:
            return f"stopped: spent ${self.total_cost:.4f}, reaching --budget-usd {s.budget_usd:g}"
        return None

    def modes(self) -> dict[str, str]:
        """The structured mode of each of the run's models ("auto" until probed)."""
        s = self.settings
        models = dict.fromkeys([s.model, s.judge, *s.agent_models.values()])
        return {m: self._formats_of(m).resolved for m in models}

    def _formats_of(self, model: str) -> Formats:
        formats = self._formats.get(model)
        if formats is None:
            formats = self._formats[model] = Formats(self.settings.structured_for(model))
        return formats

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
            structured=request.format,
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

    async def text(
        self,
        *,
        key: str,
        purpose: str,
        agent: str,
        model: str,
        messages: Messages,
        sink: Sink | None = None,
    ) -> str:
        """Free text (streamed into ``sink``); an empty string when the model fails. Control
        characters are stripped from the text and the streamed tokens."""
        shown = None if sink is None else (lambda token: sink(strip_controls(token)))
        request = Request(key=key, model=model, messages=messages, sink=shown)
        reply = await self._attempt(request, purpose, agent)
        if reply is None:
            return ""
        text = strip_controls(reply.text).strip()
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
        messages: Messages,
        schema: type[M],
        default: M | Callable[[], M],
        temperature: float | None = None,
    ) -> M:
        """A validated ``schema`` instance, repaired or re-asked when needed, else ``default``
        (a value, or a function giving it only when needed); its strings hold no control
        characters."""
        fallback = default if callable(default) else (lambda: default)
        ask = _Ask(key, model, messages, _schema_of(schema), schema.__name__, temperature)
        formats = self._formats_of(model)
        request, reply = await self._probing(formats, ask, purpose, agent)
        if reply is None:
            return fallback()
        value, repaired, problem = parse(reply.text, schema)
        formats.answered(request.format, value is not None or repaired or _is_object(reply.text))
        if value is not None:
            self._record(request, purpose, agent, reply, "repaired" if repaired else "ok")
            return clean(value)
        self._record(request, purpose, agent, reply, "reasked", problem)
        followup = (
            {"role": "assistant", "content": reply.text},
            {
                "role": "user",
                "content": f"That reply was not valid: {problem}. "
                "Reply again with only the JSON object that matches the schema.",
            },
        )
        reask, second = await self._exchange(
            formats, replace(ask, key=f"{key}:reask", followup=followup), purpose, agent
        )
        if second is None:
            return fallback()
        value, repaired, problem = parse(second.text, schema)
        if value is not None:
            self._record(reask, purpose, agent, second, "repaired" if repaired else "ok")
            return clean(value)
        self._record(reask, purpose, agent, second, "fallback", problem)
        return fallback()

    async def _probing(
        self, formats: Formats, ask: _Ask, purpose: str, agent: str
    ) -> tuple[Request, Reply | None]:
        """The exchange; a model's first one goes alone while its format is probed."""
        if not formats.settled:
            async with formats.probe:
                if not formats.settled:
                    result = await self._exchange(formats, ask, purpose, agent)
                    formats.settled = True
                    return result
        return await self._exchange(formats, ask, purpose, agent)

    async def _exchange(
        self, formats: Formats, ask: _Ask, purpose: str, agent: str
    ) -> tuple[Request, Reply | None]:
        """One exchange in the model's format, stepping down the formats the server refuses
        (each refusal recorded); ``None`` (recorded as a fallback) when it failed."""
        while True:
            request = ask.request(formats.current)
            try:
                return request, await self.transport.complete(request)
            except SchemaRejected as err:
                refused = replace(request, key=rejected_key(request.key, request.format))
                self._record(refused, purpose, agent, None, "error", error=str(err))
                if not formats.refused(request.format):
                    raise TransportError(
                        f"{err}; this server does not take structured mode "
                        f"{formats.mode!r}: use --structured auto",
                        fatal=True,
                    ) from None
            except TransportError as err:
                if err.fatal:
                    raise
                self._record(request, purpose, agent, None, "fallback", str(err), err.attempts)
                return request, None

    async def _attempt(self, request: Request, purpose: str, agent: str) -> Reply | None:
        """One free-text exchange; ``None`` (recorded as a fallback) when it failed."""
        try:
            return await self.transport.complete(request)
        except TransportError as err:
            if err.fatal:
                raise
            self._record(request, purpose, agent, None, "fallback", str(err), err.attempts)
            return None

    async def aclose(self) -> None:
        """Close the transport's clients."""
        await self.transport.aclose()


@functools.cache
def _schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of an output model (built once per model)."""
    return schema.model_json_schema()


def with_schema(messages: Messages, schema: dict[str, Any] | None) -> Messages:
    """Append the JSON instruction, and ``schema`` unless the server is given it as
    ``response_format`` (None), to the system message."""
    note = "\n\nReply with one JSON object and nothing else."
    if schema is not None:
        note += f"\nJSON schema:\n{json.dumps(schema, separators=(',', ':'))}\nEND SCHEMA"
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
