"""The mind a cost estimate plays (:mod:`engine.studies.estimate`): the offline model decides,
while an LLM mind whose transport sends nothing renders every request the LLM run would make;
the offline answers, in each reply's shape, stand for the replies."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.exchanges import LLMCall
from ..core.scenario import Scenario
from ..core.state import ALL, Action, Decision, Mode
from ..llm.transport import Reply, Request, TransportError
from ..minds.base import AgentContext, RelationJudgement, TokenSink
from ..minds.offline import OfflineMind
from ..minds.planner import N_CANDIDATES, imagine
from ..minds.question import Question
from ..minds.spec import OFFLINE
from .behaviour import Behaviour, Voice

if TYPE_CHECKING:
    from ..minds.base import A
    from ..minds.llm import LLMMind


class Unsent:
    """A transport that keeps every request and sends none: each fails at once, so the
    client records it and falls back without a re-ask."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}

    async def complete(self, request: Request) -> Reply:
        if request.format == "json_schema" and request.schema is not None:
            self.schemas[request.key] = request.schema
        raise TransportError("estimate: not sent", fatal=False)

    async def aclose(self) -> None:
        """Nothing to release."""


class Shadow:
    """The offline model plays; an LLM mind renders what it would have been asked. The
    offline answers, in the shape of each request's reply, stand for the replies.

    With a measured :class:`~engine.studies.behaviour.Behaviour`, the play takes the model's: its
    share of speakers each round and how they speak (privately, to one agent, to all), and
    its utterances, intents and relation summaries at the model's length (the offline
    text, cut or repeated), so the later prompts hold the history the model would write."""

    judge_mode = "rules"

    def __init__(self, offline: OfflineMind, llm: LLMMind, behaviour: Behaviour, seed: int) -> None:
        self.offline, self.llm = offline, llm
        self.settings = llm.settings
        self.behaviour = behaviour
        self.seed = seed
        self.spec = OFFLINE
        self.label = offline.label
        #: The offline answer of each request, by the request's key: a JSON object or text.
        self.answers: dict[str, Any] = {}
        self.calls: list[list[LLMCall]] = []
        self._sizer = _Sizer()
        self._speakers: dict[tuple[int, str, str], dict[str, tuple[Mode, bool]]] = {}

    def _key(self, ctx: AgentContext, purpose: str, target: str = "") -> str:
        """The key the LLM mind gives the request (answers are matched to requests by it)."""
        return self.llm._key(ctx, purpose, target)

    async def ask(self, question: Question[A]) -> A:
        return await self.offline.ask(question)

    async def decide(self, ctx: AgentContext) -> Decision:
        decision, _ = await asyncio.gather(self.offline.decide(ctx), self.llm.decide(ctx))
        decision = self._as_model(ctx, decision)
        reply = _decision_json(decision)
        if ctx.persona.kind == "value-driven":
            reply["imagined"] = _imagined(ctx, decision)
            self.answers[self._key(ctx, "plan")] = {"candidates": [reply] * N_CANDIDATES}
        else:
            self.answers[self._key(ctx, "decide")] = reply
        return decision

    def _as_model(self, ctx: AgentContext, decision: Decision) -> Decision:
        """The decision as the agent's model would take it: whether and how it speaks
        (:meth:`_turns`; the offline target kept when it fits), its intent at the model's
        length."""
        model = self.settings.model_for(ctx.name)
        kind = "plan" if ctx.persona.kind == "value-driven" else "decide"
        voice = self.behaviour.voice(kind, model)
        if voice is None:
            return decision
        turn = self._turns(ctx, kind, model, voice).get(ctx.name)
        if turn is None:
            return decision.model_copy(update={"mode": Mode.SILENT, "target": None})
        mode, addressed = turn
        target: str | None = ALL
        if addressed:
            kept = decision.mode is mode and decision.target not in (None, ALL)
            rng = random.Random(f"{self.seed}|{ctx.round}|{ctx.name}|target")
            target = decision.target if kept else rng.choice(ctx.others)
        intent = self._sizer.sized(decision.intent, voice.intent_tokens, model)
        return decision.model_copy(update={"mode": mode, "target": target, "intent": intent})

    def _turns(
        self, ctx: AgentContext, kind: str, model: str, voice: Voice
    ) -> dict[str, tuple[Mode, bool]]:
        """The agents of ``kind`` and ``model`` who speak in the round, each with its mode
        and whether it addresses one agent: as many speakers as the model's share of them,
        as many of those private and as many public ones addressed as its shares, each count
        carried over the rounds (so the totals are the shares), in an order drawn for the
        round."""
        key = (ctx.round, kind, model)
        if key not in self._speakers:
            names = [
                a.name
                for a in ctx.scenario.agents
                if self.settings.model_for(a.name) == model
                and ("plan" if a.kind == "value-driven" else "decide") == kind
            ]

            def counts(r: int) -> tuple[int, int, int]:
                """(speakers, private, addressed) in rounds 1..r."""
                said = _whole(voice.speak * len(names) * r)
                private = _whole(voice.private * said)
                return said, private, _whole(voice.addressed * (said - private))

            (said, private, addressed), before = counts(ctx.round), counts(ctx.round - 1)
            n, n_private, n_addressed = (
                x - y for x, y in zip((said, private, addressed), before, strict=True)
            )
            rng = random.Random(f"{self.seed}|{ctx.round}|{kind}|{model}|speakers")
            rng.shuffle(names)
            turns = [(Mode.PRIVATE, True)] * n_private + [(Mode.PUBLIC, True)] * n_addressed
            turns += [(Mode.PUBLIC, False)] * max(0, n - len(turns))
            self._speakers[key] = dict(zip(names[:n], turns, strict=False))
        return self._speakers[key]

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        text, _ = await asyncio.gather(
            self.offline.speak(ctx, decision, sink), self.llm.speak(ctx, decision, _ignore)
        )
        model = self.settings.model_for(ctx.name)
        tokens = self.behaviour.utterance_tokens(model)
        if tokens is not None:
            text = self._sizer.sized(text, tokens, model)
        self.answers[self._key(ctx, "speak")] = text
        return text

    def _judged(self, ctx: AgentContext) -> dict[str, Any]:
        """The batched judge's answer about ``ctx``'s agent, filled by the three judges."""
        return self.answers.setdefault(self._key(ctx, "judge"), {})

    @property
    def _batched(self) -> bool:
        return self.llm.judge_mode == "batched"

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        delta, _ = await asyncio.gather(
            self.offline.judge_emotion(ctx, observed), self.llm.judge_emotion(ctx, observed)
        )
        if self._batched:
            self._judged(ctx)["delta"] = round(delta, 2)
        else:
            self.answers[self._key(ctx, "emotion")] = {"delta": round(delta, 2)}
        return delta

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        judged, _ = await asyncio.gather(
            self.offline.judge_relations(ctx, triggers), self.llm.judge_relations(ctx, triggers)
        )
        judged = {t: self._summarised(ctx, t, j) for t, j in judged.items()}
        if self._batched and triggers:
            edges = [{"target": t, **_edge_json(j)} for t, j in judged.items()]
            self._judged(ctx)["judgements"] = edges
        elif not self._batched:
            for target, j in judged.items():
                self.answers[self._key(ctx, "relation", target)] = _edge_json(j)
        return judged

    def _summarised(
        self, ctx: AgentContext, target: str, j: RelationJudgement
    ) -> RelationJudgement:
        """The judgement with a summary as the judge model gives them: as often, as long."""
        model = self.settings.judge
        summaries = self.behaviour.summaries.get(model)
        if summaries is None:
            return j
        rng = random.Random(f"{self.seed}|{ctx.round}|{ctx.name}|{target}|summary")
        given = rng.random() < summaries.share
        summary = self._sizer.sized(j.summary, summaries.tokens, model) if given else ""
        return j.model_copy(update={"summary": summary})

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        deltas, _ = await asyncio.gather(
            self.offline.judge_needs(ctx, observed), self.llm.judge_needs(ctx, observed)
        )
        needs = {n: round(d, 2) for n, d in deltas.items()}
        if self._batched:
            self._judged(ctx)["needs"] = needs
        else:
            self.answers[self._key(ctx, "needs")] = needs
        return deltas

    async def narrate(self, scenario: Scenario, round_no: int, scene: str) -> str:
        await self.llm.narrate(scenario, round_no, scene)
        self.answers[f"r{round_no:04d}:narrate"] = scene
        return await self.offline.narrate(scenario, round_no, scene)

    def take_calls(self) -> list[LLMCall]:
        self.calls.append(self.llm.take_calls())
        return []

    def stop_reason(self) -> str | None:
        return None

    def structured_modes(self) -> dict[str, str]:
        return {}

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        """Nothing to count."""

    async def aclose(self) -> None:
        await self.llm.aclose()


def _whole(x: float) -> int:
    """``x`` rounded half up."""
    return math.floor(x + 0.5)


def _ignore(piece: str) -> None:
    """A token sink for the rendering mind, which streams nothing."""


def _decision_json(d: Decision) -> dict[str, Any]:
    action = {"mode": d.mode.value, "target": None if d.mode is Mode.SILENT else d.target}
    return {"urgency": d.urgency, "stance": d.stance, "intent": d.intent, "action": action}


def _imagined(ctx: AgentContext, d: Decision) -> dict[str, float]:
    """The need changes a planner imagines for the decision (those it changes)."""
    needs, _ = imagine(ctx, d.stance, d.target, d.mode, attacked=False)
    before = ctx.state.needs
    changes = {n: round(v.current - before[n].current, 2) for n, v in needs.items()}
    return {n: c for n, c in changes.items() if c}


def _edge_json(j: RelationJudgement) -> dict[str, Any]:
    return {
        "delta_fav": round(j.delta, 2),
        "status": j.status.value if j.status else None,
        "summary": j.summary,
        "importance": j.importance,
    }


class _Sizer:
    """Cuts or repeats a text's words to about a number of tokens, as a model counts them."""

    def __init__(self) -> None:
        from ..llm.transport import _litellm

        self.litellm = _litellm()
        self._tokens: dict[tuple[str, str], int] = {}

    def sized(self, text: str, tokens: float, model: str) -> str:
        words = text.split()
        if not words or tokens <= 0:
            return ""
        key = (model, text)
        if key not in self._tokens:
            self._tokens[key] = max(1, int(self.litellm.token_counter(model=model, text=text)))
        n = max(1, round(len(words) * tokens / self._tokens[key]))
        return " ".join(words[i % len(words)] for i in range(n))
