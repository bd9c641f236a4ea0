"""Structured and streamed exchanges on top of a transport, with every exchange recorded.

A structured call asks for JSON in the model's format (``response_format`` json_schema,
json_object carrying the schema, json_object with the schema in the prompt, or instructions
only; see ``formats``), validates it with pydantic, repairs malformed JSON with json-repair,
clamps values beyond the schema's bounds (``clamp``), re-asks once with the validation error,
and otherwise falls back to a safe default. A caller's ``check`` (``engine.core.quality``)
judges a valid reply or a free text: a degenerate one is asked again once, its task told the
flaw (``parsing.asked_again``: without the reply, which a small model would only say again;
one saying the flaw back is degenerate too), then falls back, both recorded as outcome
``degenerate``. The run never crashes on model output; each refusal, repair, clamp, re-ask,
degenerate reply and fallback is in the record. A reply is kept (and an invalid one sent
back in its re-ask) up to ``parsing.MAX_REPLY_CHARS``.

Every exchange's prompt is counted (``tokens``): a model whose server drops the system
message is switched to carrying it in the first user turn, and a prompt the server cut is
flagged; both are said at once through :attr:`LLMClient.notices`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel

from ..core.exchanges import AGAIN, REASK, LLMCall, Outcome
from ..core.quality import Flaw
from ..core.textsafe import clean, strip_controls
from .clamp import at_caps
from .formats import Ask, Formats
from .health import Health
from .parsing import Messages, Parsed, asked_again, in_shape, kept, schema_of, told_back
from .reasks import Reasks
from .records import record_of
from .settings import LLMSettings
from .tokens import Counter, SystemRoles
from .transport import (
    RESPONSE_FORMATS,
    ReplayTransport,
    Reply,
    Request,
    SchemaRejected,
    Sink,
    Transport,
    TransportError,
    rejected_key,
)
from .verdict import FLAWED_TOO, Replayed, scale_flaw

M = TypeVar("M", bound=BaseModel)
#: (model, agent, exchange key, messages) -> the key of the model's state for the exchange.
Route = Callable[[str, str, str, list[dict[str, str]]], str]
T = TypeVar("T")
#: What is wrong with a reply that fits its schema (None: it counts).
Check = Callable[[T], Flaw | None]
#: How a valid reply came out of its checks (:meth:`LLMClient._judged`).
Came = Literal["taken", "mended", "held", "flawed"]
#: The record key of an exchange asked again because the server dropped its system text.
DROPPED_SUFFIX = ":system-dropped"


class LLMClient:
    """Performs a run's exchanges and keeps their records and totals."""

    def __init__(self, settings: LLMSettings, transport: Transport) -> None:
        self.settings = settings
        self.transport = transport
        #: The record the client replays (:mod:`.verdict`; none: live).
        replayed = transport.calls if isinstance(transport, ReplayTransport) else None
        self._replayed = Replayed(replayed)
        self._formats: dict[str, Formats] = {}
        self.roles = SystemRoles(settings.system_role)
        self._counter: Counter | None = None
        self._calls: list[LLMCall] = []
        self.total_calls = 0
        self.total_cost = 0.0
        #: Called with each line socialsim must say at once (a dropped system message, a
        #: cut prompt); the lines are also kept in :attr:`said`.
        self.notices: Callable[[str], None] | None = None
        self.said: list[str] = []
        self.health: dict[str, Health] = {}
        self._reasks = Reasks()
        #: The key of a model's structured mode and system role for an agent's calls: the
        #: model, or with several endpoints the model at the agent's endpoint
        #: (``model @ url``; set by the mind from ``Endpoints.route``, or a replay's record).
        self.route: Route = _model_only

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

    def note_missing(self, key: str, left_out: Sequence[str], missing: Sequence[str]) -> None:
        """Record on exchange ``key``, a re-ask of the parts of an answer its first reply
        ``left_out``, those parts, and on its last exchange (a re-ask of it, if it had one)
        the parts still ``missing``, which fell back."""
        calls = [c for c in self._calls if c.key in (key, key + REASK, key + AGAIN)]
        for call in calls:
            if call.key == key:
                call.left_out = list(left_out)
        if calls and missing:
            calls[-1].missing = list(missing)

    def stop_reason(self) -> str | None:
        """Why the run must stop after this round, if a cap was reached."""
        s = self.settings
        if s.max_calls is not None and self.total_calls >= s.max_calls:
            return f"stopped: {self.total_calls} LLM calls reached --max-calls {s.max_calls}"
        if s.budget_usd is not None and self.total_cost >= s.budget_usd:
            return f"stopped: spent ${self.total_cost:.4f}, reaching --budget-usd {s.budget_usd:g}"
        return None

    def modes(self) -> dict[str, str]:
        """The structured mode of each of the run's models ("auto" until probed); with
        several endpoints, of each model at each endpoint it was asked at."""
        s = self.settings
        models = dict.fromkeys([s.model, s.judge, *s.agent_models.values()])
        routed = [key for key in self._formats if key not in models]
        asked = {_model_of(key) for key in routed}
        modes: dict[str, str] = {m: self._formats_of(m).resolved for m in models if m not in asked}
        return modes | {key: self._formats[key].resolved for key in sorted(routed)}

    def enforces_grammar(self, model: str, agent: str, key: str) -> bool:
        """True once ``model``'s structured replies (``agent``'s exchange ``key``, at its
        endpoint) are held to their schema by the server's grammar (llama.cpp's
        json_object carrying it)."""
        formats = self._formats_of(model, self.route(model, agent, key, []))
        return formats.resolved != "auto" and formats.current == "json_object_schema"

    def slow_lines(self) -> list[str]:
        """One line per model whose calls timed out (see :class:`Health`)."""
        lines = (h.line(m, self.settings) for m, h in sorted(self.health.items()))
        return [line for line in lines if line]

    def system_roles(self) -> dict[str, str]:
        """Where each model's system text goes (keep or merge), as its first exchange showed."""
        return self.roles.resolved()

    def settle(self, modes: dict[str, str], roles: dict[str, str]) -> None:
        """Start from what a saved run found: each model's structured mode (no probe) and
        where its system text goes (see :meth:`SystemRoles.restore`)."""
        for key, mode in modes.items():
            self._formats_of(_model_of(key), key).settle(mode)
        self.roles.restore(roles)

    def _notice(self, line: str) -> None:
        if line in self.said:
            return
        self.said.append(line)
        if self.notices is not None:
            self.notices(line)

    def _formats_of(self, model: str, key: str | None = None) -> Formats:
        """How ``model`` is asked (at the endpoint ``key`` names, with several)."""
        key = key or model
        formats = self._formats.get(key)
        if formats is None:
            formats = self._formats[key] = Formats(self.settings.structured_for(model))
        return formats

    def _record(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply | None,
        outcome: Outcome,
        error: str | None = None,
        timed_out: bool = False,
        **fields: Any,
    ) -> None:
        """Keep the record of an exchange (``fields``: :func:`.records.record_of`'s)."""
        call = record_of(request, purpose, agent, reply, outcome, error, **fields)
        health = self.health.setdefault(request.model, Health())
        health.took(None if reply is None else reply.latency_s, timed_out)
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
        max_tokens: int | None = None,
        check: Check[str] | None = None,
    ) -> str:
        """Free text (streamed into ``sink``), at most ``max_tokens`` of it when given; an
        empty string when the model fails, or (with a ``check``) when the text and the one
        re-ask it takes are degenerate. Control characters are stripped from the text and
        the streamed tokens."""
        shown = None if sink is None else (lambda token: sink(strip_controls(token)))
        route = self.route(model, agent, key, messages)
        request = Request(
            key=key,
            model=model,
            messages=self.roles.shaped(route, messages),
            sink=shown,
            max_tokens=max_tokens,
            agent=agent,
        )
        first: Flaw | None = None  # the first reply's flaw
        for again in (False, True):
            reply = await self._attempt(request, purpose, agent)
            if reply is not None and self._dropped(request, reply, purpose, agent):
                request = replace(request, messages=self.roles.shaped(route, request.messages))
                reply = await self._attempt(request, purpose, agent)
            if reply is None:
                return ""
            text = strip_controls(reply.text).strip()
            flaw = self._flaw(request.key, text, check, first=first)
            if again:
                self._reasks.went(model, purpose, taken=flaw is None and bool(text))
            if flaw is None:
                outcome: Outcome = "ok" if text else "fallback"
                error = None if text else "empty reply"
                self._record(request, purpose, agent, reply, outcome, error)
                return text
            held = "" if again else self._held_back(request.key, model, purpose)
            flaw = self._spared(request.key, flaw, first) if again else flaw
            came = self._flawed(request, purpose, agent, reply, flaw, held, again)
            if came == "mended":
                return str(flaw.mended)
            if came == "held" or again:
                break
            first = flaw
            request = replace(
                request, key=key + AGAIN, messages=asked_again(request.messages, flaw.note)
            )
        return ""

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
        check: Check[M] | None = None,
    ) -> M:
        """A validated ``schema`` instance, repaired or re-asked when needed, else ``default``
        (a value, or a function giving it only when needed); its strings hold no control
        characters. A valid reply ``check`` finds degenerate, or with a value far off its
        scale, is asked again once, then falls back."""
        fallback = default if callable(default) else (lambda: default)
        ask = Ask(
            key, model, messages, schema_of(schema), schema.__name__, temperature,
            agent=agent,
        )  # fmt: skip
        formats = self._formats_of(model, self.route(model, agent, key, messages))
        request, reply = await self._probing(formats, ask, purpose, agent, schema)
        if reply is None:
            return fallback()
        first = self._replayed.read(key, reply.text, schema)
        formats.answered(request.format, in_shape(first, reply.text))
        flaw: Flaw | None = None
        if first.value is not None:
            held = partial(self._held_back, key, model, purpose)
            value, flaw, came = self._judged(request, purpose, agent, reply, first, check, held)
            if came in ("taken", "mended"):
                return value
            if came == "held" or flaw is None:  # not asked again, nor mended: it falls back
                return fallback()
            reasking = replace(ask, key=key + AGAIN, messages=asked_again(messages, flaw.note))
        else:  # invalid: shown to the model with what is wrong with it, to be mended
            self._record(request, purpose, agent, reply, "reasked", first.problem, read=first.read)
            note = (
                f"That reply was not valid: {first.problem}. "
                "Reply again with only the JSON object that matches the schema."
            )
            followup = (
                {"role": "assistant", "content": kept(reply.text)},
                {"role": "user", "content": note},
            )
            reasking = replace(ask, key=key + REASK, followup=followup)
        reask, second = await self._exchange(formats, reasking, purpose, agent)
        if second is None:
            return fallback()
        again = self._replayed.read(reask.key, second.text, schema)
        if again.value is None:
            if flaw is not None:
                self._reasks.went(model, purpose, taken=False)
            if flaw is not None and flaw.mended is not None and self._replayed.mends(reask.key):
                # the first reply, mended, rather than nothing
                vain = replace(flaw, mending=f"{flaw.mending}, as its re-ask was not valid")
                return self._mended(reask, purpose, agent, second, vain, again)
            self._record(reask, purpose, agent, second, "fallback", again.problem, read=again.read)
            return fallback()
        reasked = flaw is not None
        value, flaw, came = self._judged(
            reask, purpose, agent, second, again, check, last=True, first=flaw
        )
        if reasked:
            self._reasks.went(model, purpose, taken=came == "taken")
        return value if flaw is None else fallback()

    def _flaw(
        self, key: str, value: Any, check: Check[Any] | None, far: Sequence[str] = (),
        first: Flaw | None = None,
    ) -> Flaw | None:  # fmt: skip
        """The flaw of reply ``value`` to exchange ``key``: ``check``'s, else a change far
        off its scale (``far``), else (a re-ask of a reply with flaw ``first``) that flaw
        told back (:func:`.parsing.told_back`); in a replay, as its record judged and mended it."""
        flaw = (check(value) if check is not None else None) or scale_flaw(far)
        return self._replayed.flaw(key, flaw or told_back(value, first), check, value)

    def _judged(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply,
        parsed: Parsed,
        check: Check[Any] | None,
        held: Callable[[], str] = str,
        last: bool = False,
        first: Flaw | None = None,
    ) -> tuple[Any, Flaw | None, Came]:
        """A valid reply's value, its flaw (:meth:`_flaw`) and how it came: ``taken`` (recorded
        as such) when it has none, else ``flawed`` (recorded as degenerate); the ``last`` one
        asked, when its flaw (or the ``first``'s: :meth:`_spared`) has a mend, ``mended`` (taken
        so, recorded as repaired, the flaw noted). A flawed reply ``held`` back from its re-ask
        (:meth:`_held_back`: why) is the last one too: mended, else ``held`` (fallen back)."""
        value = clean(cast(BaseModel, parsed.value))
        flaw = self._flaw(request.key, value, check, parsed.far, first)
        if flaw is None:
            self._taken(request, purpose, agent, reply, parsed, value)
            return value, None, "taken"
        flaw = self._spared(request.key, flaw, first) if last else flaw
        why = "" if last else held()
        came = self._flawed(request, purpose, agent, reply, flaw, why, last, parsed)
        return (flaw.mended, None, came) if came == "mended" else (value, flaw, came)

    def _spared(self, key: str, flaw: Flaw, first: Flaw | None) -> Flaw:
        """Re-ask ``key``'s reply's ``flaw``, or the ``first`` reply's where only that has a
        mend: that reply mended rather than nothing (in a replay: where its record took it)."""
        if first is None or first.mended is None or not self._replayed.keeps_first(key, flaw):
            return flaw
        return replace(first, mending=f"{first.mending}, {FLAWED_TOO}")

    def _flawed(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply,
        flaw: Flaw,
        held: str,
        last: bool,
        parsed: Parsed | None = None,
    ) -> Came:
        """Record a flawed reply and say how it came: the ``last`` one asked, or one
        ``held`` back from its re-ask (:meth:`_held_back`: why), is ``mended`` where its
        flaw has a mend (recorded as repaired), else a held one ``held`` (recorded as fallen
        back); any other is ``flawed`` (recorded as degenerate, to be asked again)."""
        if (last or held) and flaw.mended is not None and self._replayed.mends(request.key):
            self._mended(request, purpose, agent, reply, flaw, parsed, held)
            return "mended"
        outcome: Outcome = "fallback" if held else "degenerate"
        note = f"{flaw.note}; {held}" if held else flaw.note
        self._record_flaw(request, purpose, agent, reply, outcome, note, flaw, parsed)
        return "held" if held else "flawed"

    def _held_back(self, key: str, model: str, purpose: str) -> str:
        """Why flawed exchange ``key`` is not asked again (:mod:`.reasks`; empty: it is); in
        a replay, as its record did."""
        recorded = self._replayed
        if recorded.active:
            return "" if recorded.call(key + AGAIN) else "not asked again, as in its record"
        return self._reasks.held_back(model, purpose)

    def _mended(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply,
        flaw: Flaw,
        parsed: Parsed | None = None,
        held: str = "",
    ) -> Any:
        """A flawed reply taken as its ``flaw``'s mended value, recorded at the last exchange
        asked (``request``, ``reply``, as ``parsed``) as repaired, with the flaw's kind and
        what was left out (and why the last reply was not valid, when it was not, or why it
        was not asked again: ``held``)."""
        why = f" ({parsed.problem})" if parsed is not None and parsed.problem else ""
        note = f"{flaw.note}; {flaw.mending}{why}" + (f", {held}" if held else "")
        self._record_flaw(request, purpose, agent, reply, "repaired", note, flaw, parsed)
        return flaw.mended

    def _record_flaw(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply,
        outcome: Outcome,
        note: str,
        flaw: Flaw,
        parsed: Parsed | None,
    ) -> None:
        """Keep the record of a flawed reply: ``outcome`` with ``note``, the flaw's kind,
        and (asked as JSON) the reply's clamps and how it was read."""
        clamped, read = (parsed.clamped, parsed.read) if parsed is not None else ((), "")
        self._record(
            request, purpose, agent, reply, outcome, note, clamped=clamped, flaw=flaw.kind,
            read=read,
        )  # fmt: skip

    def _taken(
        self,
        request: Request,
        purpose: str,
        agent: str,
        reply: Reply,
        parsed: Parsed,
        value: BaseModel,
    ) -> None:
        """Record a reply taken: repaired or not, its clamps, and whether its every signed
        change sat at a cap."""
        capped = at_caps(value.model_dump(mode="json", warnings=False), request.schema or {})
        self._record(
            request, purpose, agent, reply, parsed.outcome, clamped=parsed.clamped,
            at_cap=capped, read=parsed.read,
        )  # fmt: skip

    async def _probing(
        self, formats: Formats, ask: Ask, purpose: str, agent: str, schema: type[BaseModel]
    ) -> tuple[Request, Reply | None]:
        """The exchange; a model's first one goes alone while its format is probed: a
        reply out of the schema's shape in a response format steps down (recorded as that
        format's refusal), so a server that accepts a format and ignores it is passed by."""
        if not formats.settled:
            async with formats.probe:
                if not formats.settled:
                    while True:
                        request, reply = await self._exchange(formats, ask, purpose, agent)
                        if not self._ignored(formats, request, reply, schema, purpose, agent):
                            break
                    formats.settled = True
                    return request, reply
        return await self._exchange(formats, ask, purpose, agent)

    def _ignored(
        self,
        formats: Formats,
        request: Request,
        reply: Reply | None,
        schema: type[BaseModel],
        purpose: str,
        agent: str,
    ) -> bool:
        """True (and the format stepped down) when the probe's reply in a response format
        is not in the schema's shape although a lower format is left."""
        if reply is None or request.format not in RESPONSE_FORMATS or not formats.can_step:
            return False
        if in_shape(self._replayed.read(request.key, reply.text, schema), reply.text) is not False:
            return False
        refused = replace(request, key=rejected_key(request.key, request.format))
        problem = (
            f"{request.model}: {request.format} accepted but not enforced (a reply out of "
            f"the schema's shape: {reply.text[:120]!r})"
        )
        # Recorded as a refusal is (no reply kept), so a replay steps down the same way.
        self._record(refused, purpose, agent, None, "error", error=problem)
        formats.refused(request.format)
        return True

    def _dropped(self, request: Request, reply: Reply, purpose: str, agent: str) -> bool:
        """Check what the server read of the prompt. True when a model's first exchange
        showed its system text dropped: the exchange is recorded under its own key, the
        model is merged from now on, and the caller asks again."""
        route = self.route(request.model, agent, request.key, request.messages)
        first = self.roles.checking(route)
        system = (
            sum(
                self._tokens(request.model, m["content"])
                for m in request.messages
                if m["role"] == "system"
            )
            if first
            else 0
        )
        read = reply.prompt_tokens if reply.counted_by == "server" else 0
        verdict = self.roles.check(route, reply.sent_tokens, system, read)
        if verdict == "dropped":
            self._notice(
                f"{route}: the server read {read} of the {reply.sent_tokens} prompt "
                "tokens sent, dropping the system message (its chat template has none); "
                "socialsim now puts the system text in the first user turn "
                "(--system-role merge)"
            )
            dropped = replace(request, key=request.key + DROPPED_SUFFIX)
            self._record(dropped, purpose, agent, reply, "error", error="system message dropped")
            return True
        if verdict == "cut":
            self._notice(
                f"{route}: the server read {read} of the {reply.sent_tokens} prompt "
                f"tokens sent ({request.key}): the prompt was cut; raise the server's "
                "context window"
            )
        return False

    def _tokens(self, model: str, text: str) -> int:
        """``text``'s tokens as socialsim counts them (litellm, imported on first use)."""
        if self._counter is None:
            from .transport import _litellm

            self._counter = Counter(_litellm())
        return self._counter.text(model, text)

    async def _exchange(
        self, formats: Formats, ask: Ask, purpose: str, agent: str
    ) -> tuple[Request, Reply | None]:
        """One exchange in the model's format, stepping down the formats the server refuses
        (each refusal recorded); ``None`` (recorded as a fallback) when it failed. The
        prompt is checked on arrival (:meth:`_dropped`)."""
        while True:
            request = ask.request(formats.current)
            route = self.route(ask.model, ask.agent, ask.key, ask.messages)
            # Streamed once the model's first exchange (not streamed: a server may send usage
            # only then) has shown what the server reads of a prompt.
            request = replace(
                request,
                messages=self.roles.shaped(route, request.messages),
                stream=self.roles.settled(route),
            )
            try:
                reply = await self.transport.complete(request)
            except SchemaRejected as err:
                refused = replace(request, key=rejected_key(request.key, request.format))
                self._record(refused, purpose, agent, None, "error", error=str(err))
                if not formats.refused(request.format):
                    raise TransportError(
                        f"{err}; this server does not take structured mode "
                        f"{formats.mode!r}: use --structured auto",
                        fatal=True,
                    ) from None
                continue
            except TransportError as err:
                self._failed(request, purpose, agent, err)
                return request, None
            if not self._dropped(request, reply, purpose, agent):
                return request, reply

    async def _attempt(self, request: Request, purpose: str, agent: str) -> Reply | None:
        """One free-text exchange; ``None`` (recorded as a fallback) when it failed."""
        try:
            return await self.transport.complete(request)
        except TransportError as err:
            self._failed(request, purpose, agent, err)
            return None

    def _failed(self, request: Request, purpose: str, agent: str, err: TransportError) -> None:
        """Record a failed exchange as a fallback (a fatal failure is raised); a reply cut
        past its bounds is said at once too."""
        if err.fatal:
            raise err
        if err.cut:
            self._notice(str(err))
        self._record(
            request, purpose, agent, None, "fallback", str(err), attempts=err.attempts,
            timed_out=err.timed_out,
        )  # fmt: skip
        self._calls[-1].endpoint = err.endpoint

    async def aclose(self) -> None:
        """Close the transport's clients."""
        await self.transport.aclose()


def _model_only(model: str, agent: str, key: str, messages: list[dict[str, str]]) -> str:
    """One endpoint: a model's state is the model's."""
    return model


def _model_of(key: str) -> str:
    """The model of a state's key (``model``, or ``model @ url``)."""
    return key.partition(" @ ")[0]
