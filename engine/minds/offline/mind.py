"""The offline mind: seeded randomness, the run's prior lens and factions, and the rules of
:mod:`.choose`, :mod:`.speech` and :mod:`.judge` behind the :class:`~engine.minds.Mind`
interface."""

from __future__ import annotations

import hashlib
import random
from _random import Random as _BaseRandom
from collections.abc import Iterable, Sequence
from itertools import islice, pairwise, repeat
from operator import lt
from typing import TYPE_CHECKING

from ...core.exchanges import LLMCall
from ...core.priors import Prior, sign_index
from ...core.rules import HISTORY_WINDOW, ReadAct, read_acts
from ...core.scenario import Archetype, Scenario
from ...core.state import ALL, Action, Decision, Mode
from ...core.values import s_self
from ..base import (
    A,
    AgentContext,
    JudgedEdges,
    RelationJudgement,
    RoundJudgements,
    TokenSink,
    no_sink,
)
from ..planner import plan
from ..question import Question
from ..spec import DYNAMICS_VERSION, OFFLINE_LABEL, Offline
from .choose import Deciders, Options, Peers, candidates, draws, intent
from .edges import edges_toward, judged_edges
from .judge import Judged, Standing, emotion_delta, need_deltas
from .lastround import LastRound
from .lens import NO_LENS, PriorLens
from .params import BASE_URGENCY, DYNAMICS, OUTGROUP, SILENCE_BELOW
from .speech import Heard, cast_of, plain, utterance

if TYPE_CHECKING:  # numpy is imported where agents decide: reading saves never needs it
    import numpy as np

LABEL = OFFLINE_LABEL


class OfflineMind:
    """A seeded rule-based mind implementing the :class:`~engine.minds.Mind` interface."""

    label = LABEL
    judge_mode = "rules"

    def __init__(self, seed: int, dynamics: int = DYNAMICS_VERSION) -> None:
        """``dynamics``: the version of the model's dynamics to play (:data:`.params.DYNAMICS`)."""
        self.seed = seed
        self.spec = Offline(dynamics=dynamics)
        self.dynamics = DYNAMICS[dynamics]
        #: Each agent's starting favorability toward each other (rows and columns in the
        #: scenario's order), where memories fade to.
        self._start: np.ndarray | None = None
        self._start_names: list[str] = []
        #: This round's draws of affective variability, by agent row (:meth:`_jitter`).
        self._draws_round = -1
        self._draws: np.ndarray | None = None
        self._prior: Prior | None = None
        self._signs: dict[str, dict[str, int]] = {}
        self._scenario: Scenario | None = None
        self._outgroups: dict[str, frozenset[str]] = {}
        self._brokers: frozenset[str] = frozenset()
        self._claims: tuple[str, ...] = ()
        self._index: dict[str, int] = {}
        self._peers: dict[str, Peers] = {}
        #: In-group bias toward each agent (OUTGROUP toward another faction's), agents in
        #: the order of ``_bias_names``.
        self._bias: np.ndarray | None = None
        self._bias_names: list[str] = []
        #: Earlier rounds' acts by speaker (:meth:`_past`), by the id of their acts' list.
        self._past_round = -1
        self._by_speaker: dict[int, tuple[int, list[Action], dict[str, list[Action]]]] = {}
        #: :meth:`_news`'s claims not heard in the earlier rounds, by the ids of their acts'
        #: lists; each agent's own claims (its points and evidence), by name.
        self._history_claims: dict[tuple[int, ...], tuple[list[list[Action]], tuple[str, ...]]]
        self._history_claims = {}
        self._known: dict[str, set[str]] = {}
        #: Each earlier round's list of acts as one lower-case text, and the claims in it.
        self._texts: dict[int, tuple[list[Action], str, frozenset[str]]] = {}
        #: Each agent's last U_S: its context, the acts judged and the delta.
        self._moods: dict[str, tuple[AgentContext, list[Action], float]] = {}
        #: The one generator :meth:`_rng` seeds afresh for each use.
        self._random = random.Random()

    async def ask(self, question: Question[A]) -> A:
        """The rule answer: no model, no record."""
        return question.offline()

    def _lens(self, ctx: AgentContext) -> PriorLens:
        """The agent's prior lens; the run's sign index is built once per prior."""
        prior = ctx.prior
        if prior is None or prior.relation is None:
            return NO_LENS
        if prior is not self._prior:
            self._prior, self._signs = prior, sign_index(prior)
        return PriorLens(**{prior.relation: self._signs.get(ctx.name, {})})

    def _scene(self, scenario: Scenario) -> None:
        """Per-scenario facts, read once: each agent's out-group, the brokers (outside every
        faction of a factional scenario), the factual claims (the agents' evidence) and the
        agents' positions; the peers and in-group bias read from them start over."""
        if scenario is self._scenario:
            return
        factions = scenario.faction_of()
        self._scenario = scenario
        self._outgroups = {
            me: frozenset(n for n, f in factions.items() if f != mine)
            for me, mine in factions.items()
        }
        self._brokers = frozenset(n for n in scenario.names if n not in factions if factions)
        self._claims = tuple(sorted({plain(e) for a in scenario.agents for e in a.evidence}))
        self._index = {n: k for k, n in enumerate(scenario.names)}
        self._peers, self._bias, self._known, self._start = {}, None, {}, None

    def _outgroup(self, ctx: AgentContext) -> frozenset[str]:
        """The members of factions other than the agent's (none if it has no faction)."""
        self._scene(ctx.scenario)
        return self._outgroups.get(ctx.name, frozenset())

    def _broker(self, ctx: AgentContext) -> bool:
        """Whether the agent stands outside every faction of a factional scenario."""
        self._scene(ctx.scenario)
        return ctx.name in self._brokers

    def _news(self, ctx: AgentContext) -> tuple[str, ...]:
        """The factual claims the agent neither holds nor heard before this round."""
        self._scene(ctx.scenario)
        if not self._claims:
            return ()
        known = self._known.get(ctx.name)
        if known is None:
            persona = ctx.persona
            known = {plain(p) for p in (*persona.talking_points, *persona.evidence)}
            self._known[ctx.name] = known
        return tuple(c for c in self._claims_unheard(ctx) if c not in known)

    def _claims_unheard(self, ctx: AgentContext) -> tuple[str, ...]:
        """The claims not in what the agent heard in the rounds it remembers (every
        utterance, lower case, as one text; searched once for agents who heard the same
        lists)."""
        if ctx.round != self._past_round:  # a new round starts them over
            self._past(ctx)
        lists = [round_.actions for round_ in ctx.history]
        key = tuple(map(id, lists))
        held = self._history_claims.get(key)
        if held is None or any(a is not b for a, b in zip(held[0], lists, strict=True)):
            heard = self._claims_in(lists)
            unheard = tuple(c for c in self._claims if c not in heard)
            held = self._history_claims[key] = (lists, unheard)
        return held[1]

    def _claims_in(self, lists: list[list[Action]]) -> frozenset[str]:
        """The claims in the utterances of ``lists`` joined by spaces, lower case: those in
        each list's text (searched once a list), and those across the joins (searched in a
        window around each join; in the whole text when there is no list, or a list's text
        is shorter than a claim)."""
        texts = [self._text_of(acts) for acts in lists if acts]  # (an empty list joins nothing)
        reach = max(map(len, self._claims)) - 1  # a claim across a join lies within this
        if reach < 1 or not texts or any(len(text) < reach for text, _ in texts):
            whole = " ".join(text for text, _ in texts)
            return frozenset(c for c in self._claims if c in whole)
        found: set[str] = set().union(*(claims for _, claims in texts))
        joins = [a[-reach:] + " " + b[:reach] for (a, _), (b, _) in pairwise(texts)]
        found.update(c for c in self._claims if any(c in join for join in joins))
        return frozenset(found)

    def _text_of(self, acts: list[Action]) -> tuple[str, frozenset[str]]:
        """One list's utterances joined by spaces, lower case (lowering by pieces is
        lowering the whole: a space ends a word's case context), and the claims in it."""
        held = self._texts.get(id(acts))
        if held is None or held[0] is not acts:
            text = " ".join(a.utterance for a in acts).lower()
            held = self._texts[id(acts)] = (
                acts,
                text,
                frozenset(c for c in self._claims if c in text),
            )
        return held[1], held[2]

    def _peers_of(self, ctx: AgentContext) -> Peers:
        """The agent's others in the order of its relations (read once per scenario)."""
        self._scene(ctx.scenario)
        peers = self._peers.get(ctx.name)
        if peers is None:
            peers = self._peers[ctx.name] = Peers(ctx.others, self._index)
        return peers

    def _past(self, ctx: AgentContext) -> list[dict[str, list[Action]]]:
        """Each earlier round's acts as the agent saw them, by speaker (sorted once per
        list of acts, while the round is in the window: agents who saw the same acts share
        one list)."""
        if ctx.round != self._past_round:
            self._past_round = ctx.round
            self._by_speaker = {
                k: v for k, v in self._by_speaker.items() if v[0] >= ctx.round - HISTORY_WINDOW
            }
            self._history_claims = {}
            live = {id(v[1]) for v in self._by_speaker.values()}
            self._texts = {k: v for k, v in self._texts.items() if k in live}
        past = []
        for round_ in ctx.history:
            held = self._by_speaker.get(id(round_.actions))
            if held is None or held[1] is not round_.actions:
                by_speaker: dict[str, list[Action]] = {}
                for a in round_.actions:
                    by_speaker.setdefault(a.speaker, []).append(a)
                held = (round_.round, round_.actions, by_speaker)
                self._by_speaker[id(round_.actions)] = held
            past.append(held[2])
        return past

    @staticmethod
    def _said(ctx: AgentContext, past: list[dict[str, list[Action]]]) -> str:
        """Everything the agent itself said earlier, lower case."""
        me = ctx.name
        return " ".join([a.utterance for by in past for a in by.get(me, ())]).lower()

    def _rng(self, ctx: AgentContext, purpose: str) -> random.Random:
        """The agent's generator for ``purpose`` this round: the mind's one generator,
        seeded as ``random.Random(seed)`` would be (every use ends before the next one
        starts: the draws are a new generator's, without making one)."""
        key = f"{self.seed}|{ctx.round}|{ctx.name}|{purpose}".encode()
        rng = self._random
        _BaseRandom.seed(rng, int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))
        rng.gauss_next = None  # type: ignore[attr-defined]  # (as Random.seed; typeshed omits it)
        return rng

    async def decide(self, ctx: AgentContext) -> Decision:
        """Urgency from archetype, arousal and provocation; target by weighted candidates."""
        return (await self.decide_all([ctx]))[0]

    async def decide_all(self, ctxs: Sequence[AgentContext]) -> list[Decision]:
        """:meth:`decide` for a round's agents at once (one call, which never waits): their
        candidate acts are weighed together, their relations read from the state's columns."""
        if not ctxs:
            return []
        self._scene(ctxs[0].scenario)
        lasts = [ctx.history[-1].actions if ctx.history else [] for ctx in ctxs]
        seen = LastRound([ctx.name for ctx in ctxs], lasts, self._index)
        if not seen.in_order:  # acts seen out of their speakers' order: one at a time
            return [(await self.decide_all([ctx]))[0] for ctx in ctxs]
        who = self._deciders(ctxs)
        options = candidates(who, seen)
        made = [
            self._decide(ctx, acts, hit)
            for ctx, acts, hit in zip(ctxs, options, seen.attacked(), strict=True)
        ]
        drawing = [(k, d) for k, d in enumerate(made) if not isinstance(d, Decision)]
        drawn = iter(draws([options[k] for k, _ in drawing], [c for _, (_, c) in drawing]))
        return [
            d if isinstance(d, Decision) else _drawn(options[k], d[0], next(drawn))
            for k, d in enumerate(made)
        ]

    def _decide(
        self, ctx: AgentContext, options: Options, attacked: bool
    ) -> Decision | tuple[float, float]:
        """One agent's decision, its candidate acts weighed; or, for an act it draws by
        weight (:func:`.choose.draws`: every agent's at once), its urgency and chance."""
        rng = self._rng(ctx, "decide")
        me, persona, view = ctx.name, ctx.persona, ctx.view
        arch, emotion, driven = persona.archetype, view.emotion, persona.kind == "value-driven"
        urgency = BASE_URGENCY[arch] + 3.0 * abs(emotion - 0.5)
        if attacked:
            urgency += 1.5
        if ctx.events and any(e.private_to or me in e.text for e in ctx.events):
            urgency += 1.0
        if arch is Archetype.RESERVED and emotion < 0.35:
            urgency -= 1.5
        if driven:  # unmet needs make speaking pressing
            urgency += 0.3 * s_self(view.needs) - 1.0
        urgency = round(min(10.0, max(0.0, urgency + rng.uniform(-1.5, 1.5))), 2)
        if driven:
            best = plan(ctx, rng, options.as_list(), attacked)
            if best.mode is Mode.SILENT or urgency < SILENCE_BELOW:
                return Decision(
                    urgency=urgency,
                    mode=Mode.SILENT,
                    theta=round(best.theta, 2),
                    intent="keep quiet: speaking would not meet my needs",
                )
            return Decision(
                urgency=urgency,
                mode=best.mode,
                target=best.target,
                stance=best.stance,
                theta=round(best.theta, 2),
                intent=intent(best.stance, best.target or ALL, best.mode),
            )
        if urgency < SILENCE_BELOW:
            return Decision(urgency=urgency, mode=Mode.SILENT, intent="stay quiet and watch")
        return urgency, rng.random()

    def _deciders(self, ctxs: Sequence[AgentContext]) -> Deciders:
        """The agents' relations, bias, brokers and lenses, in arrays (:class:`Deciders`)."""
        import numpy as np

        index = self._index
        rows: Sequence[int] | slice = [index[ctx.name] for ctx in ctxs]
        if rows == list(range(len(index))):  # every agent in order: the arrays as they are
            rows = slice(None)
        columns = ctxs[0].view.columns
        if columns.names == list(index) and all(c.view.columns is columns for c in ctxs):
            fav = columns.fav[rows]
            rivals = columns.hostile()[rows]
        else:  # agents of different states, or in another order
            fav = np.zeros((len(ctxs), len(index)))
            rivals = np.zeros((len(ctxs), len(index)), dtype=bool)
            for row, ctx in enumerate(ctxs):
                view = ctx.view
                at = [index[n] for n in view.columns.names]
                fav[row, at] = view.favs()
                rivals[row, at] = view.columns.hostile()[view.row]
                fav[row, index[ctx.name]], rivals[row, index[ctx.name]] = 0.0, False
        return Deciders(
            ctxs,
            index,
            [self._peers_of(ctx) for ctx in ctxs],
            fav,
            rivals,
            self._outgroup_bias(list(index))[rows],
            [self._broker(ctx) for ctx in ctxs],
            [self._lens(ctx) for ctx in ctxs],
        )

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        """An utterance from the agent's talking points in its archetype's voice."""
        rng, past = self._rng(ctx, "speak"), self._past(ctx)
        heard, dyn = Heard(past, ctx.heard), self.dynamics
        cast = cast_of(ctx.scenario) if dyn.grammar else None
        text = utterance(ctx, decision, rng, self._said(ctx, past), heard, dyn.variety, cast)
        if sink is not no_sink:
            for word in text.split(" "):
                sink(word + " ")
        return text

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        """U_S by rule: support lifts, attacks sink, harm to friends hurts."""
        lens, jitter = self._lens(ctx), self._jitter([ctx])
        mood = emotion_delta(ctx, read_acts(observed), lens, self.dynamics, jitter)
        self._moods[ctx.name] = (ctx, observed, mood)  # the needs judge reads it again
        return mood

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        """U_R by rule (:func:`.edges.judged_edges`) of the edges the acts the agent observed
        (``ctx.heard``) trigger, which are ``triggers``' (its E_ij)."""
        edges = self._edges([ctx], read_acts(ctx.heard))
        judged = edges_toward(edges, ctx.view.columns.names)
        return {other: RelationJudgement.of_edge(edge) for other, edge in judged.items()}

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        """Need deltas from being attacked, supported, heard or silent, plus slow recovery
        (the mood U_S just judged on the same context and acts is not judged again)."""
        held = self._moods.pop(ctx.name, None)
        mood = held[2] if held is not None and held[0] is ctx and held[1] is observed else None
        return need_deltas(ctx, read_acts(observed), self._lens(ctx), mood, self.dynamics)

    def judge_round(self, ctxs: Sequence[AgentContext], acts: list[ReadAct]) -> RoundJudgements:
        """The three judges of a round's agents at once (:class:`~.base.RuleJudge`), on
        arrays: U_S and the needs over the acts each agent heard, U_R over the edges."""
        lenses = [self._lens(ctx) for ctx in ctxs]
        heard, alone = _heard(ctxs, acts)
        jitter = self._jitter(ctxs)
        judged = Judged(ctxs, acts, heard, lenses, self.dynamics, jitter)
        emotions = judged.moods()
        needs = judged.needs(emotions)
        if alone:  # acts heard out of the round's order: judged on their own
            needs = each = list(needs)
            for row in alone:
                ctx = ctxs[row]
                mine = None if jitter is None else jitter[row : row + 1]
                one = Judged.of(
                    [ctx], read_acts(ctx.heard), None, [lenses[row]], self.dynamics, mine
                )
                emotions[row] = one.moods()[0]
                each[row] = one.needs(emotions[row : row + 1])[0]
        return RoundJudgements(emotions, needs, self._edges(ctxs, acts, lenses))

    def _edges(
        self,
        ctxs: Sequence[AgentContext],
        acts: list[ReadAct],
        lenses: Sequence[PriorLens] | None = None,
    ) -> JudgedEdges:
        """U_R by rule of the edges ``acts`` trigger for ``ctxs``' agents, and toward whoever
        the round's events implicate (:func:`.edges.judged_edges`); ``lenses``: the agents'
        prior lenses, when the caller has them."""

        self._scene(ctxs[0].scenario)
        standings = [Standing(self._outgroup(c), self._broker(c), self._news(c)) for c in ctxs]
        if lenses is None:
            lenses = [self._lens(c) for c in ctxs]
        names = ctxs[0].view.columns.names
        bias = self._outgroup_bias(names)
        start = self._start_fav(names) if self.dynamics.fading else None
        return judged_edges(ctxs, acts, standings, lenses, bias > 0, self.dynamics, start)

    def _outgroup_bias(self, names: list[str]) -> np.ndarray:
        """``[i, j]``: OUTGROUP if j is of another faction than i (agents in ``names``'
        order), else 0; built once per scenario and order."""
        import numpy as np

        if self._bias is None or self._bias_names != names:
            index = {name: k for k, name in enumerate(names)}
            self._bias = np.zeros((len(names), len(names)))
            for me, outgroup in self._outgroups.items():
                self._bias[index[me], [index[n] for n in outgroup]] = OUTGROUP
            self._bias_names = list(names)
        return self._bias

    def _jitter(self, ctxs: Sequence[AgentContext]) -> np.ndarray | None:
        """Each agent's draw of affective variability this round (None without it): a
        normal draw per agent of the state, seeded by the run's seed and the round, read at
        the agent's row."""
        import numpy as np

        sd = self.dynamics.variability
        if not sd or not ctxs:
            return None
        draws = self._draws
        if draws is None or ctxs[0].round != self._draws_round:
            key = f"{self.seed}|{ctxs[0].round}|variability".encode()
            seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest())
            n = len(ctxs[0].view.columns.names)
            draws = self._draws = sd * np.random.default_rng(seed).standard_normal(n)
            self._draws_round = ctxs[0].round
        return draws[[ctx.view.row for ctx in ctxs]]

    def _start_fav(self, names: list[str]) -> np.ndarray:
        """``[i, j]``: the scenario's starting favorability of i toward j (agents in
        ``names``' order; a pair listed twice: the last one holds), built once per scenario
        and order."""
        import numpy as np

        if self._start is None or self._start_names != names:
            index = {name: k for k, name in enumerate(names)}
            self._start = np.zeros((len(names), len(names)))
            for rel in self._scenario.relations if self._scenario else ():
                if rel.source in index and rel.target in index:
                    self._start[index[rel.source], index[rel.target]] = rel.fav
            self._start_names = list(names)
        return self._start

    def take_calls(self) -> list[LLMCall]:
        """The offline model makes no model calls."""
        return []

    def stop_reason(self) -> str | None:
        """No caps apply to the offline model."""
        return None

    def structured_modes(self) -> dict[str, str]:
        """No models, no structured modes."""
        return {}

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        """Nothing to count: the offline model has no caps."""

    async def narrate(self, scenario: Scenario, round_no: int, scene: str) -> str:
        """The scripted scene, as it is."""
        return scene

    async def aclose(self) -> None:
        """Nothing to release."""


def _heard(ctxs: Sequence[AgentContext], acts: list[ReadAct]) -> tuple[np.ndarray, list[int]]:
    """Which of the round's ``acts`` each agent heard (``[row, act]``; agents who share one
    list of the acts they heard are read once), and the rows whose acts are not in the
    round's order (or not all of the round's acts, or of another state): those are judged
    on their own."""
    import numpy as np

    at = {id(read[0]): k for k, read in enumerate(acts)}
    heard = np.zeros((len(ctxs), len(acts)), bool)
    alone: list[int] = []
    groups: dict[int, list[int]] = {}
    for row, ctx in enumerate(ctxs):
        groups.setdefault(id(ctx.heard), []).append(row)
    columns = ctxs[0].view.columns if ctxs else None
    for rows in groups.values():
        where = list(map(at.get, map(id, ctxs[rows[0]].heard), repeat(-1)))  # (C loops)
        if -1 in where or not all(map(lt, where, islice(where, 1, None))):
            alone += rows
        else:  # one row of the acts heard, set for every row of the group
            seen = np.zeros(len(acts), bool)
            seen[where] = True
            heard[rows] = seen
    alone += [row for row, ctx in enumerate(ctxs) if ctx.view.columns is not columns]
    return heard, sorted(set(alone))


def _drawn(options: Options, urgency: float, pick: int) -> Decision:
    """The decision of the act ``pick`` of ``options`` (drawn by weight)."""
    _, stance, target, mode = options.act(pick)
    return Decision(
        urgency=urgency,
        mode=mode,
        target=target,
        stance=stance,
        intent=intent(stance, target, mode),
    )
