"""Cost before you spend: the calls, tokens and cost an LLM run would take, with a range.

From the prompts: the run's first rounds (until the history window is full,
``HISTORY_WINDOW + 1``) are played by the offline model, without network, while an
:class:`~engine.minds.llm.LLMMind` whose transport sends nothing renders every request the LLM
run would make in the same contexts: the same prompts, the schema pasted or sent as
``response_format``, the same judge calls. Their tokens are counted with
``litellm.token_counter`` (a schema sent as ``response_format`` counts too: providers bill
it); a reply is the offline model's answer to that request in the reply's shape. Later rounds
cost what the played ones did once the window is full: their mean number of calls, at the
last round's tokens per call.

The model's behaviour: who speaks, how, and how long replies are, is a property of the model,
not of the scenario. Saved runs of any scenario played by the same models
(:mod:`engine.studies.behaviour`) give it: the play then takes the model's share of speakers and of
private and addressed turns, and its utterances, intents and relation summaries at the
model's length (so the later prompts hold the history the model would write); each request's
reply is the model's mean reply of that purpose, and its re-asks are added. Without such runs
the expected figures assume the offline model's behaviour (it speaks more, and at more
length, than most models), which the range allows for.

The range: low = a third of the speakers (turns and triggered edges), every request at the
least prompt of its kind rendered, replies half as long; high = every agent speaks, 10% of
the calls resent and replies twice as long.

From earlier runs of the same scenario: saved runs of the same scenario, model, judge model
and judge mode give their recorded usage per round; then the expected figures are theirs,
and the range covers both sources.

Cost comes from litellm's model cost map; a model without a price makes the cost unknown.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.exchanges import LLMCall, RoundUsage
from ..core.priors import Prior
from ..core.rules import HISTORY_WINDOW
from ..core.scenario import Scenario
from ..core.state import ALL, Action, Decision, Mode
from ..errors import SaveError
from ..llm.settings import LLMSettings
from ..llm.transport import Reply, Request, TransportError
from ..minds.base import AgentContext, RelationJudgement, TokenSink
from ..minds.offline import OfflineMind
from ..minds.planner import N_CANDIDATES, imagine
from ..minds.question import Question
from ..minds.spec import OFFLINE, MindSpec
from .behaviour import Behaviour, Voice, measure

if TYPE_CHECKING:
    from ..minds.base import A
    from ..minds.llm import LLMMind

#: Replies of the low and high ends, relative to the offline answers' length.
SHORT_REPLIES, LONG_REPLIES = 0.5, 2.0
#: Share of calls the high end re-asks or retries (each resends the prompt).
REASK_ALLOWANCE = 0.1
#: Calls that grow with the number of speakers (each speaker's turn, each triggered edge).
SPEAKER_PURPOSES = frozenset({"speak", "relation"})
#: The low end's share of the speakers of the played rounds.
FEWER_SPEAKERS = 1 / 3
#: At most this many requests of one purpose and model are token-counted per round; the
#: rest are counted at their mean.
SAMPLE = 200


@dataclass(frozen=True)
class Span:
    """A figure's low, expected and high values."""

    low: float
    expected: float
    high: float

    def __add__(self, other: Span) -> Span:
        return Span(self.low + other.low, self.expected + other.expected, self.high + other.high)

    def times(self, factor: float) -> Span:
        return Span(self.low * factor, self.expected * factor, self.high * factor)


@dataclass(frozen=True)
class Figures:
    """Calls and tokens of some rounds, one model."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def times(self, factor: float) -> Figures:
        return Figures(
            self.calls * factor, self.prompt_tokens * factor, self.completion_tokens * factor
        )


ZERO = Figures()


@dataclass(frozen=True)
class Estimate:
    """What a run would cost: calls, tokens and cost (``None``: a model has no price)."""

    rounds: int
    calls: Span
    prompt_tokens: Span
    completion_tokens: Span
    cost_usd: Span | None
    #: Models without a price in litellm's cost map.
    unpriced: tuple[str, ...] = ()
    #: Expected calls per round, by purpose.
    per_round: dict[str, float] = field(default_factory=dict)
    #: Prompt tokens per call of the last round played for the estimate, by purpose.
    prompt_per_call: dict[str, float] = field(default_factory=dict)
    #: The whole run's figures by purpose, from the prompts (and the measured behaviour),
    #: before earlier runs of the scenario set the totals.
    by_purpose: dict[str, Figures] = field(default_factory=dict)
    #: Earlier runs (and their rounds) whose recorded usage set the expected figures.
    earlier_runs: int = 0
    earlier_rounds: int = 0
    #: Saved runs (and their rounds), of any scenario, whose models' behaviour was measured.
    measured_runs: int = 0
    measured_rounds: int = 0

    @property
    def tokens(self) -> Span:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def source(self) -> str:
        """Where the figures come from, in words."""
        parts = ["the prompts of the first rounds, rendered and counted"]
        if self.measured_runs:
            parts.append(
                "who speaks, reply lengths and re-asks as measured in "
                f"{_runs(self.measured_runs)} of these models ({self.measured_rounds} rounds)"
            )
        else:
            parts.append(
                "who speaks and reply lengths as the offline model plays "
                "(no saved run of these models)"
            )
        if self.earlier_runs:
            parts.append(
                f"expected from {_runs(self.earlier_runs)} of this scenario and these "
                f"settings ({self.earlier_rounds} rounds)"
            )
        return "; ".join(parts)

    @property
    def basis(self) -> str:
        """What sets the expected figures, in a few words."""
        if self.earlier_runs:
            return f"{_runs(self.earlier_runs)} of this scenario"
        if self.measured_runs:
            return f"the prompts and the models' behaviour in {_runs(self.measured_runs)}"
        return "the prompts, as the offline model plays (no saved run of these models)"

    def times(self, runs: float) -> Estimate:
        """The estimate of ``runs`` such runs (a sweep, the arms of a trial)."""
        cost = None if self.cost_usd is None else self.cost_usd.times(runs)
        return replace(
            self,
            calls=self.calls.times(runs),
            prompt_tokens=self.prompt_tokens.times(runs),
            completion_tokens=self.completion_tokens.times(runs),
            cost_usd=cost,
        )

    def above(self, usd: float | None = None, calls: float | None = None) -> bool:
        """Whether the expected cost exceeds ``usd`` or the expected calls exceed ``calls``
        (an unknown price never exceeds a cost threshold)."""
        over_cost = usd is not None and self.cost_usd is not None and self.cost_usd.expected > usd
        return over_cost or (calls is not None and self.calls.expected > calls)

    def summary(self) -> str:
        """One line: expected calls, tokens and cost with their range."""
        return (
            f"~{_ranged(self.calls)} LLM calls, ~{_ranged(self.tokens)} tokens, {self.cost_text()}"
        )

    def cost_text(self) -> str:
        """The expected cost with its range, or "unknown price (models)"."""
        if self.cost_usd is None:
            return f"unknown price ({', '.join(self.unpriced)})"
        c = self.cost_usd
        return f"${c.expected:,.4f} [${c.low:,.4f}–${c.high:,.4f}]"


def _runs(n: int) -> str:
    return f"{n} saved run" if n == 1 else f"{n} saved runs"


def _ranged(s: Span) -> str:
    return f"{s.expected:,.0f} [{s.low:,.0f}–{s.high:,.0f}]"


def no_calls(rounds: int) -> Estimate:
    """The estimate of an offline run: nothing."""
    zero = Span(0.0, 0.0, 0.0)
    return Estimate(rounds, zero, zero, zero, zero)


def estimate_run(
    scenario: Scenario,
    settings: MindSpec,
    rounds: int | None = None,
    saves: Path | str | None = None,
    *,
    prior: Prior | None = None,
    seed: int = 0,
) -> Estimate:
    """The estimate of playing ``rounds`` rounds (default: the scenario's) of ``scenario``
    with ``settings``; ``saves``: a saves folder whose earlier runs of the same scenario and
    models inform it. Runs its own event loop (in a thread when one is running here)."""
    coro = estimate_run_async(scenario, settings, rounds, saves, prior=prior, seed=seed)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def estimate_run_async(
    scenario: Scenario,
    settings: MindSpec,
    rounds: int | None = None,
    saves: Path | str | None = None,
    *,
    prior: Prior | None = None,
    seed: int = 0,
) -> Estimate:
    """:func:`estimate_run` in the running event loop."""
    total = rounds or scenario.rounds
    if not isinstance(settings, LLMSettings):
        return no_calls(total)
    behaviour = measure(saves, settings)
    played = await _play(scenario, settings, min(total, HISTORY_WINDOW + 1), prior, seed, behaviour)
    earlier = _earlier(saves, scenario, settings)
    return _combine(played, total, len(scenario.agents), earlier, behaviour)


# -- the prompts of the first rounds ------------------------------------------------------


class _Unsent:
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


class _Shadow:
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


@dataclass(frozen=True)
class _Played:
    """The rounds played for the estimate: per round, figures by (purpose, model) and the
    turns spoken (speak requests, re-asks not counted); the least prompt tokens of one call
    of each (purpose, model) in any of them."""

    rounds: list[dict[tuple[str, str], Figures]]
    least: dict[tuple[str, str], float]
    speakers: list[int]


async def _play(
    scenario: Scenario,
    settings: LLMSettings,
    rounds: int,
    prior: Prior | None,
    seed: int,
    behaviour: Behaviour,
) -> _Played:
    from ..minds.llm import LLMMind
    from ..round.simulation import Simulation

    unsent = _Unsent()
    # The run is the offline model's (no caps, no degraded stop): every request fails unsent.
    llm = LLMMind(settings, transport=unsent)
    shadow = _Shadow(OfflineMind(seed), llm, behaviour, seed)
    sim = Simulation.new(scenario, seed=seed, mind=shadow, rounds=rounds, prior=prior)
    try:
        await sim.run(rounds)
    finally:
        await shadow.aclose()
    counter = _Counter(shadow.answers, unsent.schemas, behaviour)
    return _Played(
        [counter.count(calls) for calls in shadow.calls],
        counter.least,
        [sum(c.purpose == "speak" for c in calls) for calls in shadow.calls],
    )


class _Counter:
    """Counts the tokens of rendered requests and of their answers with litellm (a sample
    of each kind); a purpose the behaviour measured for the model takes its replies' length
    and its exchanges per question (re-asks) from there."""

    def __init__(
        self,
        answers: Mapping[str, Any],
        schemas: Mapping[str, dict[str, Any]],
        behaviour: Behaviour,
    ) -> None:
        from ..llm.transport import _litellm

        self.litellm = _litellm()
        self.answers, self.schemas, self.behaviour = answers, schemas, behaviour
        self._rng = random.Random(0)
        #: The least prompt tokens of one call, by (purpose, model).
        self.least: dict[tuple[str, str], float] = {}

    def count(self, calls: list[LLMCall]) -> dict[tuple[str, str], Figures]:
        groups: dict[tuple[str, str], list[LLMCall]] = defaultdict(list)
        for call in calls:
            groups[call.purpose, call.model].append(call)
        figures = {}
        for (purpose, model), group in groups.items():
            sample = group if len(group) <= SAMPLE else self._rng.sample(group, SAMPLE)
            prompts = [self._prompt(c) for c in sample]
            prompt = statistics.fmean(prompts)
            least = float(min(prompts))
            n = len(group)
            measured = self.behaviour.exchange(purpose, model)
            if measured is not None:  # a call's share of a question's prompts, re-asks too
                least *= measured.prompt_factor / measured.calls_per_ask
            self.least[purpose, model] = min(least, self.least.get((purpose, model), least))
            if measured is None:
                completion = statistics.fmean(self._answer(c) for c in sample)
                figures[purpose, model] = Figures(n, prompt * n, completion * n)
            else:
                figures[purpose, model] = Figures(
                    n * measured.calls_per_ask,
                    prompt * n * measured.prompt_factor,
                    measured.completion_per_ask * n,
                )
        return figures

    def _prompt(self, call: LLMCall) -> int:
        tokens = int(self.litellm.token_counter(model=call.model, messages=call.messages))
        schema = self.schemas.get(call.key)
        if schema is not None:
            text = json.dumps(schema, separators=(",", ":"))
            tokens += int(self.litellm.token_counter(model=call.model, text=text))
        return tokens

    def _answer(self, call: LLMCall) -> int:
        """Tokens of the offline answer to ``call``, in its reply's shape."""
        answer = self.answers.get(call.key, "")
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return int(self.litellm.token_counter(model=call.model, text=text)) if text else 0


# -- earlier runs -------------------------------------------------------------------------


def _earlier(
    saves: Path | str | None, scenario: Scenario, settings: LLMSettings
) -> list[list[RoundUsage]]:
    """The per-round usage of each saved run of the same scenario, agents, models and judge
    mode (runs that cannot be read are skipped)."""
    if saves is None:
        return []
    from ..saves.store import SaveStore

    store = SaveStore(saves)
    found = []
    for row in store.list_runs():
        if not row.ok or row.scenario_id != scenario.id or row.model != settings.model:
            continue
        try:
            meta = store.read_meta(row.run_id)
            if not _same_models(meta.llm, settings) or meta.scenario.names != scenario.names:
                continue
            usages = [u for u in store.history(row.run_id, meta).usages() if u.calls]
        except SaveError:
            continue
        if usages:
            found.append(usages)
    return found


def _same_models(run: LLMSettings | None, settings: LLMSettings) -> bool:
    return (
        run is not None
        and run.judge == settings.judge
        and run.judge_mode == settings.judge_mode
        and run.agent_models == settings.agent_models
    )


# -- the estimate -------------------------------------------------------------------------


@dataclass(frozen=True)
class _End:
    """One end of the range: factors on the calls of speaker-dependent purposes, on the
    others' calls, and on the replies' length; ``fewest`` puts every request at the least
    prompt of its kind rendered in the played rounds (the least history and seen)."""

    speakers: float
    others: float
    replies: float
    fewest: bool = False

    def scaled(self, purpose: str, f: Figures) -> Figures:
        k = self.speakers if purpose in SPEAKER_PURPOSES else self.others
        return Figures(f.calls * k, f.prompt_tokens * k, f.completion_tokens * k * self.replies)


def _ends(played: _Played, agents: int) -> dict[str, _End]:
    """Low: a third of the speakers, the least prompts, short replies; high: every agent
    speaks, re-asks, long replies."""
    speakers = statistics.fmean(played.speakers)
    everyone = max(1.0, agents / speakers) if speakers else 1.0
    more = 1 + REASK_ALLOWANCE
    return {
        "low": _End(FEWER_SPEAKERS, 1.0, SHORT_REPLIES, fewest=True),
        "expected": _End(1.0, 1.0, 1.0),
        "high": _End(everyone * more, more, LONG_REPLIES),
    }


def _combine(
    played: _Played,
    total: int,
    agents: int,
    earlier: list[list[RoundUsage]],
    behaviour: Behaviour,
) -> Estimate:
    """The played rounds, then the later rounds to ``total`` at the played rounds' mean
    calls and the last one's tokens per call, at each end of the range; earlier runs'
    usage, if any."""
    ends = _ends(played, agents)
    later = total - len(played.rounds)
    by_model: dict[str, dict[str, Figures]] = {end: defaultdict(Figures) for end in ends}
    per_round: dict[str, float] = defaultdict(float)
    by_purpose: dict[str, Figures] = defaultdict(Figures)
    final: dict[str, Figures] = defaultdict(Figures)
    for (purpose, _), f in played.rounds[-1].items():
        final[purpose] += f
    for key in sorted({k for r in played.rounds for k in r}):
        purpose, model = key
        series = [r.get(key, ZERO) for r in played.rounds]
        calls = statistics.fmean(f.calls for f in series)
        per_round[purpose] += calls
        last = _per_call(played.rounds[-1].get(key) or sum(series, ZERO))
        least = played.least[key]
        done = sum(series, ZERO)
        for name, end in ends.items():
            first, per_call = done, last
            if end.fewest:  # every request at the least prompt of its kind
                first = replace(done, prompt_tokens=least * done.calls)
                per_call = replace(last, prompt_tokens=least)
            rounds = first + per_call.times(calls * later)
            by_model[name][model] += end.scaled(purpose, rounds)
            if name == "expected":
                by_purpose[purpose] += rounds
    spans = {name: sum(models.values(), ZERO) for name, models in by_model.items()}
    earlier_rounds = 0
    if earlier:
        spans, earlier_rounds = _with_earlier(spans, earlier, total)
    prices = _Prices(by_model["expected"])
    order = ("low", "expected", "high")
    return Estimate(
        rounds=total,
        calls=Span(*(spans[e].calls for e in order)),
        prompt_tokens=Span(*(spans[e].prompt_tokens for e in order)),
        completion_tokens=Span(*(spans[e].completion_tokens for e in order)),
        cost_usd=None if prices.unpriced else Span(*(prices.cost(spans[e]) for e in order)),
        unpriced=prices.unpriced,
        per_round=dict(per_round),
        prompt_per_call={p: _per_call(f).prompt_tokens for p, f in final.items()},
        by_purpose=dict(by_purpose),
        earlier_runs=len(earlier),
        earlier_rounds=earlier_rounds,
        measured_runs=behaviour.runs,
        measured_rounds=behaviour.rounds,
    )


def _per_call(f: Figures) -> Figures:
    return f.times(1 / f.calls) if f.calls else ZERO


def _with_earlier(
    spans: dict[str, Figures], earlier: list[list[RoundUsage]], total: int
) -> tuple[dict[str, Figures], int]:
    """Expected figures from the earlier runs' mean usage per round; the range widened to
    cover the slowest and the busiest of them."""
    runs = [
        Figures(
            statistics.fmean(u.calls for u in usages),
            statistics.fmean(u.prompt_tokens for u in usages),
            statistics.fmean(u.completion_tokens for u in usages),
        ).times(total)
        for usages in earlier
    ]
    rounds = sum(len(u) for u in earlier)
    weights = [len(u) / rounds for u in earlier]
    expected = sum((f.times(w) for f, w in zip(runs, weights, strict=True)), ZERO)
    low = Figures(*(min(getattr(f, k) for f in [spans["low"], *runs]) for k in _FIELDS))
    high = Figures(*(max(getattr(f, k) for f in [spans["high"], *runs]) for k in _FIELDS))
    return {"low": low, "expected": expected, "high": high}, rounds


_FIELDS = ("calls", "prompt_tokens", "completion_tokens")


class _Prices:
    """Each model's price per token from litellm's cost map, and its share of the tokens."""

    def __init__(self, by_model: Mapping[str, Figures]) -> None:
        from ..llm.transport import _litellm

        litellm = _litellm()
        total = sum(by_model.values(), ZERO)
        self.rates: dict[str, tuple[float, float]] = {}
        self.shares: dict[str, tuple[float, float]] = {}
        unpriced = []
        for model, f in by_model.items():
            try:
                p, c = litellm.cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
            except Exception:  # litellm raises for a model its map does not price
                unpriced.append(model)
                continue
            self.rates[model] = (float(p), float(c))
            self.shares[model] = (
                f.prompt_tokens / total.prompt_tokens if total.prompt_tokens else 0.0,
                f.completion_tokens / total.completion_tokens if total.completion_tokens else 0.0,
            )
        self.unpriced = tuple(sorted(unpriced))

    def cost(self, f: Figures) -> float:
        """The cost of ``f``'s tokens, split among the models as the prompts split them."""
        return sum(
            f.prompt_tokens * share_p * rate_p + f.completion_tokens * share_c * rate_c
            for (rate_p, rate_c), (share_p, share_c) in (
                (self.rates[m], self.shares[m]) for m in self.rates
            )
        )
