"""The LLM mind: agents and a unified judge played by litellm models (Sociodrama Sec. 3.3)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.exchanges import LLMCall
from ..core.limits import MAX_UTTERANCE_CHARS
from ..core.needs import NEEDS
from ..core.quality import Flaw
from ..core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA, relation_triggers
from ..core.scenario import Status
from ..core.state import ALL, Action, Decision, Mode
from ..core.values import gap, s_self, svo_utility, theta
from ..llm.client import LLMClient
from ..llm.endpoints import RecordedRoute
from ..llm.journal import Journal, Journaled
from ..llm.settings import LLMSettings
from ..llm.stack import Tracked, endpoints_of, live_transport
from ..llm.transport import ReplayTransport, Transport
from . import checks, prompts
from .base import A, AgentContext, RelationJudgement, TokenSink
from .planner import N_CANDIDATES, OTHERS_EFFECT
from .prompts import NEED_DELTA_CAP
from .question import Question

#: The most tokens an utterance may take: the prompt asks for one to three sentences, and a
#: small model can otherwise ramble to the reply cap, and every later prompt carries it.
SPEECH_TOKENS = 120
#: The same cap for an utterance asked as JSON (about 4 characters a token).
SPEECH_CHARS = 480


def _bounded(cap: float, tolerated: float) -> Any:
    """A signed change the schema (and the prompt) bound to +-``cap``, which is what the engine
    applies. Replies up to +-``tolerated`` (the bounds before the schemas stated the caps)
    still validate and are clipped to the cap as before: no re-ask for a small overshoot, and
    the records of earlier runs replay as they were played."""
    return Field(ge=-tolerated, le=tolerated, json_schema_extra={"minimum": -cap, "maximum": cap})


class _DecisionBase(BaseModel):
    urgency: float = Field(ge=0, le=10)
    stance: Literal["support", "oppose", "neutral"] = "neutral"
    intent: str = Field(default="", max_length=400)


class _Silent(BaseModel):
    mode: Literal["silent"]
    target: None = None


class SpeechOut(BaseModel):
    """An utterance asked as JSON, of a model whose server enforces a grammar."""

    FIELD: ClassVar[str] = "say"
    say: str = Field(default="", max_length=SPEECH_CHARS)


class EmotionOut(BaseModel):
    """U_S output."""

    delta: float = _bounded(MAX_EMOTION_DELTA, 1)


class RelationOut(BaseModel):
    """U_R output for one edge."""

    delta_fav: float = _bounded(MAX_FAV_DELTA, 1)
    status: Status | None = None
    summary: str = Field(default="", max_length=400)
    importance: int = Field(default=1, ge=1, le=10)

    def judgement(self) -> RelationJudgement:
        return RelationJudgement(
            delta=self.delta_fav,
            status=self.status,
            summary=self.summary,
            importance=self.importance,
        )


_NEED_FIELDS: dict[str, Any] = {
    n: (Annotated[float, _bounded(NEED_DELTA_CAP, 10)] | None, None) for n in NEEDS
}
NeedsOut: type[BaseModel] = create_model("NeedsOut", **_NEED_FIELDS)


@dataclass(frozen=True)
class _InReply:
    """An utterance's check of a reply asked as JSON: its ``line``'s, a mended line taken
    as that reply (the client takes the mend in place of the reply)."""

    line: checks.SpeechCheck

    def __call__(self, out: SpeechOut) -> Flaw | None:
        return self._replied(self.line(out.say), out)

    def as_recorded(self, out: SpeechOut, kind: str) -> Flaw | None:
        return self._replied(self.line.as_recorded(out.say, kind), out)

    @staticmethod
    def _replied(flaw: Flaw | None, out: SpeechOut) -> Flaw | None:
        if flaw is None or flaw.mended is None:
            return flaw
        return replace(flaw, mended=out.model_copy(update={"say": flaw.mended}))


@functools.cache
def _decision_schema(others: tuple[str, ...]) -> type[_DecisionBase]:
    """Phase-1 output whose JSON schema itself rules out invalid mode/target pairs:
    silent has no target, public addresses one agent or 'all', private one agent."""
    anyone: Any = Literal[(*others, ALL)]
    someone: Any = Literal[others]
    public_mode: Any = Literal["public"]
    private_mode: Any = Literal["private"]
    public: Any = create_model("Public", mode=(public_mode, ...), target=(anyone, ...))
    private: Any = create_model("Private", mode=(private_mode, ...), target=(someone, ...))
    action: Any = Annotated[_Silent | public | private, Field(discriminator="mode")]
    return create_model("DecisionOut", __base__=_DecisionBase, action=(action, ...))


@functools.cache
def _plan_schema(others: tuple[str, ...]) -> type[BaseModel]:
    """The planner's output: N candidates, each an action with its imagined need changes."""
    candidate = create_model(
        "Candidate",
        __base__=_decision_schema(others),
        imagined=(NeedsOut, Field(default_factory=NeedsOut)),
    )
    return create_model(
        "Plan", candidates=(list[candidate], Field(min_length=1, max_length=N_CANDIDATES))
    )


@functools.cache
def _edge_model(targets: tuple[str, ...]) -> type[RelationOut]:
    """U_R output naming its target (batched judgements)."""
    named: Any = Literal[targets]
    return create_model("EdgeOut", __base__=RelationOut, target=(named, ...))


def _judgements(targets: tuple[str, ...]) -> tuple[Any, Any]:
    """One judgement per target. The schema says so (required, that many items); validation
    accepts fewer, none or repeats, which :func:`_judged` and the ``:missing`` re-ask deal
    with edge by edge."""
    n = len(targets)
    extra: dict[str, Any] = {"minItems": n, "maxItems": n}
    edges: Any = list.__class_getitem__(_edge_model(targets))
    return edges, Field(default_factory=list, json_schema_extra=extra)


def _asks_judgements(schema: dict[str, Any]) -> None:
    """List ``judgements`` as required in a JSON schema (validation tolerates its absence)."""
    schema["required"] = [*schema.get("required", []), "judgements"]


@functools.cache
def _observer_schema(targets: tuple[str, ...]) -> type[BaseModel]:
    """The batched judge's output for one observer: emotion, its edges and its needs."""
    fields: dict[str, Any] = {
        "delta": (float, _bounded(MAX_EMOTION_DELTA, 1)),
        "needs": (NeedsOut, Field(default_factory=NeedsOut)),
    }
    if not targets:
        return create_model("ObserverOut", **fields)
    config = ConfigDict(json_schema_extra=_asks_judgements)
    return create_model("ObserverOut", __config__=config, **fields, judgements=_judgements(targets))


@functools.cache
def _missing_schema(targets: tuple[str, ...]) -> type[BaseModel]:
    """The batched judge's re-ask: judgements for exactly the edges its reply left out."""
    config = ConfigDict(json_schema_extra=_asks_judgements)
    return create_model("MissingOut", __config__=config, judgements=_judgements(targets))


def _judged(judgements: Sequence[Any], targets: Iterable[str]) -> dict[str, RelationJudgement]:
    """The judgements of ``targets`` a reply gave (of one given twice, the last, as always)."""
    wanted = set(targets)
    return {j.target: j.judgement() for j in judgements if j.target in wanted}


@dataclass(frozen=True)
class _Observed:
    """One observer's batched judgement: U_S, U_R of the edges judged, and needs."""

    delta: float
    edges: dict[str, RelationJudgement]
    needs: Any


class LLMMind:
    """Implements the Mind interface with LLM calls; every exchange is recorded."""

    def __init__(self, settings: LLMSettings, transport: Transport | None = None) -> None:
        self.settings = self.spec = settings
        self.client = LLMClient(settings, transport or live_transport(settings))
        self._notices: list[str] = []
        self._said_slow: set[str] = set()
        self.client.notices = self._notices.append
        routed = endpoints_of(self.client.transport)
        if routed is not None:
            routed.notices = self._notices.append
            self.client.route = routed.route
        self.judge_mode = settings.judge_mode
        self._observers: dict[tuple[int, str], asyncio.Future] = {}
        self.label = settings.label

    async def ask(self, question: Question[A]) -> A:
        """Render the question, ask the agent's (or the judge) model, validate the reply;
        repair, re-ask once, then fall back to the question's safe answer."""
        model = self.settings.judge if question.judge else self.settings.model_for(question.agent)
        return await self.client.structured(
            key=question.key,
            purpose=question.purpose,
            agent=question.agent,
            model=model,
            messages=question.render(),
            schema=question.schema,
            default=question.safe,
            temperature=question.temperature,
        )

    def planned_calls(self, purpose: str, agents: Sequence[str], edges: int = 0) -> int:
        """One call a turn or a narration; the judges one an observer batched, else one for
        its emotion, one for its needs and one an edge."""
        if purpose == "narrate":
            return 1
        if purpose == "judge" and self.judge_mode != "batched":
            return 2 * len(agents) + edges
        return len(agents)

    def _key(self, ctx: AgentContext, purpose: str, target: str = "") -> str:
        return f"r{ctx.round:04d}:{purpose}:{ctx.name}" + (f":{target}" if target else "")

    async def decide(self, ctx: AgentContext) -> Decision:
        if ctx.persona.kind == "value-driven":
            return await self._plan(ctx)
        schema = _decision_schema(tuple(ctx.others))
        check = checks.decision(ctx.scenario.names)
        out: Any = await self._call(ctx, "decide", prompts.decide(ctx), schema, None, check=check)
        if out is None:
            return Decision(urgency=0, mode=Mode.SILENT, intent="(no valid decision: silent)")
        return Decision(
            urgency=out.urgency,
            mode=Mode(out.action.mode),
            target=out.action.target,
            stance=out.stance,
            intent=out.intent,
        )

    async def _plan(self, ctx: AgentContext) -> Decision:
        """Generate N candidates with imagined need changes (the model), then select the one
        best for the agent's SVO (the rule of the offline planner); theta from Eq. 2."""
        schema = _plan_schema(tuple(ctx.others))
        out: Any = await self._call(
            ctx, "plan", prompts.plan(ctx, N_CANDIDATES), schema, None,
            check=checks.plan(N_CANDIDATES, ctx.scenario.names),
        )  # fmt: skip
        if out is None:
            return Decision(urgency=0, mode=Mode.SILENT, intent="(no valid plan: silent)")
        before = sum(gap(v) for v in ctx.state.needs.values())
        best, best_value, best_theta = None, None, 0.0
        for c in out.candidates:
            changes = c.imagined.model_dump()
            imagined = {
                n: v.model_copy(
                    update={"current": min(10.0, max(0.0, v.current + (changes[n] or 0)))}
                )
                for n, v in ctx.state.needs.items()
            }
            own = before - sum(gap(v) for v in imagined.values())
            others = OTHERS_EFFECT.get(c.stance, 0.0) if c.action.mode != "silent" else 0.0
            value = svo_utility(ctx.persona.svo, own, others)
            if best_value is None or value > best_value:
                best, best_value = c, value
                best_theta = theta(s_self(imagined), max(0.0, others) * 10.0)
        assert best is not None  # the schema asks for at least one candidate
        return Decision(
            urgency=best.urgency,
            mode=Mode(best.action.mode),
            target=best.action.target,
            stance=best.stance,
            intent=best.intent,
            theta=round(best_theta, 2),
        )

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        model = self.settings.model_for(ctx.name)
        key = self._key(ctx, "speak")
        if self.client.enforces_grammar(model, ctx.name, key):
            heard = _InReply(checks.speech(ctx, decision, SpeechOut.FIELD))
            # A small local model asked for free text repeats its prompt; held to a JSON
            # string by the server's grammar, it speaks. Shown whole once it is in.
            said = await self.client.structured(
                key=key,
                purpose="speak",
                agent=ctx.name,
                model=model,
                messages=prompts.speak(ctx, decision, SpeechOut.FIELD),
                schema=SpeechOut,
                default=SpeechOut(),
                check=heard,
            )
            if said.say:
                sink(said.say)
            return said.say
        return await self.client.text(
            key=key,
            purpose="speak",
            agent=ctx.name,
            model=model,
            messages=prompts.speak(ctx, decision),
            sink=sink,
            max_tokens=SPEECH_TOKENS,
            check=checks.speech(ctx, decision),
        )

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        if self.judge_mode == "batched":
            return (await self._observer(ctx, observed)).delta
        out = await self._judge(
            ctx,
            "emotion",
            prompts.emotion(ctx, observed),
            EmotionOut,
            EmotionOut(delta=0.0),
        )
        return out.delta

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        if not triggers:
            return {}
        if self.judge_mode == "batched":
            judged = (await self._observer(ctx, ctx.heard)).edges
            return {other: judged.get(other, RelationJudgement(delta=0.0)) for other in triggers}
        outs = await asyncio.gather(
            *(
                self._judge(
                    ctx,
                    "relation",
                    prompts.relation(ctx, other, acts),
                    RelationOut,
                    RelationOut(delta_fav=0.0),
                    target=other,
                    check=checks.relation(ctx.scenario.names),
                )
                for other, acts in triggers.items()
            )
        )
        return {other: out.judgement() for other, out in zip(triggers, outs, strict=True)}

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        if self.judge_mode == "batched":
            changes = (await self._observer(ctx, observed)).needs
        else:
            changes = await self._judge(
                ctx,
                "needs",
                prompts.needs(ctx, observed),
                NeedsOut,
                NeedsOut(),
            )
        return {
            n: max(-NEED_DELTA_CAP, min(NEED_DELTA_CAP, v))
            for n, v in changes.model_dump().items()
            if v
        }

    def _judge(
        self,
        ctx: AgentContext,
        purpose: str,
        messages: list[dict[str, str]],
        schema: type[Any],
        default: Any,
        target: str = "",
        check: checks.Check | None = None,
    ) -> Any:
        """One structured call to the unified judge model about ``ctx``'s agent."""
        return self._call(ctx, purpose, messages, schema, default, target, judge=True, check=check)

    def _call(
        self,
        ctx: AgentContext,
        purpose: str,
        messages: list[dict[str, str]],
        schema: type[Any],
        default: Any,
        target: str = "",
        *,
        judge: bool = False,
        check: checks.Check | None = None,
    ) -> Any:
        """One structured round-loop call about ``ctx``'s agent, by its own model or the judge;
        ``check`` judges a valid reply (a degenerate one is asked again, then falls back)."""
        return self.client.structured(
            key=self._key(ctx, purpose, target),
            purpose=purpose,
            agent=ctx.name,
            model=self.settings.judge if judge else self.settings.model_for(ctx.name),
            messages=messages,
            schema=schema,
            default=default,
            check=check,
        )

    def _observer(self, ctx: AgentContext, observed: list[Action]) -> asyncio.Future[_Observed]:
        """Batched mode: U_S, U_R and the needs of one observer in a single judge call,
        shared by the three interface methods the engine calls together."""
        key = (ctx.round, ctx.name)
        pending = self._observers.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._observe(ctx, observed))
            self._observers[key] = pending
        return pending

    async def _observe(self, ctx: AgentContext, observed: list[Action]) -> _Observed:
        """The batched judgement of one observer. Edges the reply left out (a repeat may have
        taken their place) are re-asked once, alone; those still missing get no change and are
        recorded."""
        triggers = relation_triggers(ctx.name, observed, ctx.scenario.names)
        messages = prompts.observer(ctx, observed, triggers)
        schema = _observer_schema(tuple(triggers))
        check = checks.judgements(ctx.scenario.names)
        out = await self._judge(ctx, "judge", messages, schema, None, check=check)
        if out is None:  # the whole judgement fell back (and is counted so)
            return _Observed(delta=0.0, edges={}, needs=NeedsOut())
        edges = _judged(out.judgements if triggers else [], triggers)
        missing = tuple(t for t in triggers if t not in edges)
        if missing:
            key = self._key(ctx, "judge", "missing")
            again: Any = await self.client.structured(
                key=key,
                purpose="judge",
                agent=ctx.name,
                model=self.settings.judge,
                messages=prompts.missing_edges(ctx, {t: triggers[t] for t in missing}),
                schema=_missing_schema(missing),
                default=None,
                check=check,
            )
            if again is not None:
                edges |= _judged(again.judgements, missing)
            still = [t for t in missing if t not in edges]
            self.client.note_missing(key, missing, still)
        return _Observed(delta=out.delta, edges=edges, needs=out.needs)

    async def narrate(self, scenario: Any, round_no: int, scene: str) -> str:
        """The game master's narration of a round, told by the judge model."""
        rules = "; ".join(r.text for r in scenario.rules) or "none"
        messages = [
            {
                "role": "system",
                "content": "You are the game master of a "
                f"social simulation: {scenario.title}. {scenario.description}",
            },
            {
                "role": "user",
                "content": f"Round {round_no}. Scene notes: {scene}\nRules: "
                f"{rules}\nNarrate the scene in one or two sentences, keeping the time, place "
                "and any rule breach; no dialogue.",
            },
        ]
        told = await self.client.text(
            key=f"r{round_no:04d}:narrate",
            purpose="narrate",
            agent="game master",
            model=self.settings.judge,
            messages=messages,
        )
        return told[:MAX_UTTERANCE_CHARS]

    def take_notices(self) -> list[str]:
        """Lines the user must read at once: a dropped system message, a cut prompt, a cut
        reply, and calls timing out (with the figures, when they changed)."""
        for line in self.client.slow_lines():
            if line not in self._said_slow:
                self._said_slow.add(line)
                self._notices.append(line)
        lines = self._notices[:]
        self._notices.clear()  # the list the client appends to: emptied, not replaced
        return lines

    def system_roles(self) -> dict[str, str]:
        """Where each model's system text goes (keep, or merge into the first user turn)."""
        return self.client.system_roles()

    def structured_modes(self) -> dict[str, str]:
        """How each model is asked for structured replies (schema, json or text; "auto"
        until its first exchange), for the run metadata and the app header."""
        return self.client.modes()

    def keep_journal(self, journal: Journal) -> bool:
        """Journal this mind's exchanges in ``journal`` (and serve the round's journaled
        ones); False when its transport does not journal (a replay's)."""
        transport = self.client.transport
        if isinstance(transport, Tracked | Journaled):
            transport.attach(journal)
            return True
        return False

    def settle(self, modes: dict[str, str], roles: dict[str, str], slots: dict[str, int]) -> None:
        """Start from a saved run's structured modes, system roles and server slots: no
        probe, no question to the server."""
        self.client.settle(modes, roles)
        transport = self.client.transport
        if isinstance(transport, Tracked):
            for found in transport.live.servers():
                found.settle(slots)

    def server_slots(self) -> dict[str, int]:
        """The slots each endpoint said it has (0: it did not say), once asked."""
        transport = self.client.transport
        if not isinstance(transport, Tracked):
            return {}
        return {base: n for found in transport.live.servers() for base, n in found.said().items()}

    def take_calls(self) -> list[LLMCall]:
        self._observers.clear()  # the round's batched judgements are done
        return self.client.take_calls()

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        """Count a resumed run's recorded exchanges toward --max-calls and --budget-usd."""
        self.client.count_recorded(calls)

    def stop_reason(self) -> str | None:
        return self.client.stop_reason()

    async def aclose(self) -> None:
        await self.client.aclose()


def replay_mind(settings: LLMSettings, calls: Iterable[LLMCall]) -> LLMMind:
    """An LLM mind answering only from a run's recorded exchanges: zero network calls.
    It tolerates fallbacks: a replay plays the record as it is, degraded rounds included."""
    tolerant = settings.model_copy(update={"tolerate_fallbacks": True})
    recorded = list(calls)
    mind = LLMMind(tolerant, transport=ReplayTransport(recorded))
    if len(settings.endpoints) > 1:  # each exchange's model asked as at its endpoint
        mind.client.route = RecordedRoute(recorded)
    return mind
