"""The offline rule-based social model: deterministic from the run seed, no network.

Dynamics by design: support warms the target toward the speaker and lifts its emotion,
attacks cool both, attacking someone's friend cools that friend's allies toward the
attacker (structural balance), returned support is likely (reciprocity), dominant agents
speak more and earlier, reserved agents less and withdraw when hurt.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable

from ..lexicon import sentiment
from ..mind_spec import OFFLINE, OFFLINE_LABEL
from ..records import LLMCall
from ..rules import MAX_FAV_DELTA
from ..scenario import Archetype, Scenario, Status
from ..state import ALL, Action, Decision, Mode, Stance
from ..values import s_self
from .base import A, AgentContext, RelationJudgement, TokenSink
from .planner import plan
from .question import Question

LABEL = OFFLINE_LABEL

BASE_URGENCY = {
    Archetype.DOMINANT: 7.0,
    Archetype.ANALYTICAL: 5.0,
    Archetype.BALANCED: 5.0,
    Archetype.AGREEABLE: 4.2,
    Archetype.RESERVED: 2.6,
}
SILENCE_BELOW = 3.5
#: (aggression, warmth, thin skin, responsiveness to support) per archetype.
TEMPER = {
    Archetype.DOMINANT: (1.6, 0.6, 0.7, 0.7),
    Archetype.ANALYTICAL: (0.8, 0.7, 0.9, 0.8),
    Archetype.BALANCED: (1.0, 1.0, 1.0, 1.0),
    Archetype.AGREEABLE: (0.4, 1.5, 1.2, 1.3),
    Archetype.RESERVED: (0.5, 0.8, 1.4, 0.9),
}
FRIEND_AT = 0.25
PEACEMAKERS = (Archetype.AGREEABLE, Archetype.BALANCED)
#: How a toned event moves the needs and emotion of the agents it is about (offline model).
TONE_NEEDS: dict[str, dict[str, float]] = {
    "supportive": {
        "psychological_safety": 0.6,
        "emotional_safety": 0.5,
        "group_acceptance": 0.5,
        "support_system": 0.7,
        "self_worth": 0.4,
        "sense_of_respect": 0.4,
    },
    "protective": {"psychological_safety": 0.8, "emotional_safety": 0.4},
    "punitive": {"sense_of_superiority": -0.6, "sense_of_control": -0.4, "sense_of_respect": -0.3},
    "hostile": {
        "psychological_safety": -0.6,
        "emotional_safety": -0.5,
        "group_acceptance": -0.5,
        "self_worth": -0.7,
        "sense_of_respect": -0.7,
    },
}
TONE_EMOTION = {"supportive": 0.08, "protective": 0.05, "punitive": -0.06, "hostile": -0.08}
#: Chance that a speaker with unshared evidence (task facts) voices it rather than a
#: talking point: analysts pool information, dominant and agreeable agents echo the
#: common view (Sociodrama Sec. 1: information holders stay silent, dominant voices anchor).
SHARES_EVIDENCE = {
    Archetype.ANALYTICAL: 0.9,
    Archetype.BALANCED: 0.5,
    Archetype.RESERVED: 0.6,
    Archetype.AGREEABLE: 0.15,
    Archetype.DOMINANT: 0.1,
}
FOE_AT = -0.2

TEMPLATES: dict[Archetype, dict[Stance, str]] = {
    Archetype.DOMINANT: {
        "support": "{t} is right, and I'll back that all the way: {p}.",
        "oppose": "{t}, that is simply wrong. {P}, and everyone here knows it.",
        "neutral": "Let me be clear: {p}. We settle this now.",
    },
    Archetype.ANALYTICAL: {
        "support": "{t}'s point holds up. Look at it closely: {p}.",
        "oppose": "{t}, the facts don't support you. Consider this: {p}.",
        "neutral": "Let's look at what we actually know: {p}.",
    },
    Archetype.AGREEABLE: {
        "support": "I'm with {t} on this. And {p}, if that helps all of us.",
        "oppose": "{t}, I understand where you're coming from, but I can't agree. {P}.",
        "neutral": "Maybe we can find common ground here: {p}.",
    },
    Archetype.RESERVED: {
        "support": "...I agree with {t}. {P}.",
        "oppose": "I don't think that's fair, {t}. {P}.",
        "neutral": "If I may... {p}.",
    },
    Archetype.BALANCED: {
        "support": "{t} makes a fair point, and {p}.",
        "oppose": "{t}, I see it differently: {p}.",
        "neutral": "Here is where I stand: {p}.",
    },
}
CONFIDE = "Between you and me, {t}: {p}."


class OfflineMind:
    """A seeded rule-based mind implementing the :class:`~engine.minds.Mind` interface."""

    spec = OFFLINE
    label = LABEL
    judge_mode = "rules"

    def __init__(self, seed: int) -> None:
        self.seed = seed

    async def ask(self, question: Question[A]) -> A:
        """The rule answer: no model, no record."""
        return question.offline()

    def _rng(self, ctx: AgentContext, purpose: str) -> random.Random:
        key = f"{self.seed}|{ctx.round}|{ctx.name}|{purpose}".encode()
        return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))

    async def decide(self, ctx: AgentContext) -> Decision:
        """Urgency from archetype, arousal and provocation; target by weighted candidates."""
        rng = self._rng(ctx, "decide")
        me, arch = ctx.name, ctx.persona.archetype
        last = ctx.history[-1].actions if ctx.history else []
        attackers = {a.speaker for a in last if a.target == me and a.stance == "oppose"}
        urgency = BASE_URGENCY[arch] + 3.0 * abs(ctx.state.emotion - 0.5)
        if attackers:
            urgency += 1.5
        if any(e.private_to or me in e.text for e in ctx.events):
            urgency += 1.0
        if arch is Archetype.RESERVED and ctx.state.emotion < 0.35:
            urgency -= 1.5
        if ctx.persona.kind == "value-driven":  # unmet needs make speaking pressing
            urgency += 0.3 * s_self(ctx.state.needs) - 1.0
        urgency = round(min(10.0, max(0.0, urgency + rng.uniform(-1.5, 1.5))), 2)
        if ctx.persona.kind == "value-driven":
            best = plan(ctx, rng, self._options(ctx, last, attackers), bool(attackers))
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
                intent=_intent(best.stance, best.target or ALL, best.mode),
            )
        if urgency < SILENCE_BELOW:
            return Decision(urgency=urgency, mode=Mode.SILENT, intent="stay quiet and watch")
        stance, target, mode = self._choose(ctx, rng, last, attackers)
        return Decision(
            urgency=urgency,
            mode=mode,
            target=target,
            stance=stance,
            intent=_intent(stance, target, mode),
        )

    def _choose(
        self, ctx: AgentContext, rng: random.Random, last: list[Action], attackers: set[str]
    ) -> tuple[Stance, str, Mode]:
        options = self._options(ctx, last, attackers)
        pick = rng.random() * sum(w for w, *_ in options)
        for weight, stance, target, mode in options:
            pick -= weight
            if pick <= 0:
                return stance, target, mode
        _, stance, target, mode = options[-1]
        return stance, target, mode

    def _options(
        self, ctx: AgentContext, last: list[Action], attackers: set[str]
    ) -> list[tuple[float, Stance, str, Mode]]:
        """Weighted candidate actions: support friends, oppose foes, address the group."""
        me, arch = ctx.name, ctx.persona.archetype
        aggression, warmth, _, _ = TEMPER[arch]
        rels = ctx.state.relations
        supporters = {a.speaker for a in last if a.target == me and a.stance == "support"}
        hit = {a.target: a.speaker for a in last if a.stance == "oppose" and a.target != me}
        hit_friends = {
            who for victim, who in hit.items() if victim in rels and rels[victim].fav >= FRIEND_AT
        }
        analytic = 1.6 if arch is Archetype.ANALYTICAL else 1.0
        options: list[tuple[float, Stance, str, Mode]] = [(analytic, "neutral", ALL, Mode.PUBLIC)]
        for other, rel in rels.items():
            hostile = max(0.0, FOE_AT + 0.15 - rel.fav) * 4.0
            if other in attackers:
                hostile += 2.0
            if other in hit_friends:
                hostile += 1.5
            if hostile > 0:
                mode = Mode.PRIVATE if arch is Archetype.RESERVED else Mode.PUBLIC
                options.append((hostile * aggression, "oppose", other, mode))
            friendly = max(0.0, rel.fav - 0.1) * 3.0
            if other in supporters:
                friendly += 1.5
            if other in hit and rel.fav >= FRIEND_AT:
                friendly += 1.0
            if rel.status is Status.RIVAL and arch in PEACEMAKERS and ctx.state.emotion >= 0.4:
                friendly += 0.4  # reaching out to a rival: the seed of repair
            if friendly > 0:
                options.append((friendly * warmth, "support", other, Mode.PUBLIC))
                if (ctx.persona.private_info or ctx.persona.evidence) and rel.fav >= 0.4:
                    options.append((0.5 * friendly, "neutral", other, Mode.PRIVATE))
        return options

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        """An utterance from the agent's talking points in its archetype's voice."""
        rng = self._rng(ctx, "speak")
        target = decision.target if decision.target not in (None, ALL) else "everyone"
        if decision.mode is Mode.PRIVATE and decision.stance == "neutral":
            secrets = ctx.persona.private_info + ctx.persona.evidence
            point = _pick(rng, secrets, _said(ctx)) or _point(ctx, rng)
            text = CONFIDE.format(t=target, p=point.rstrip(". "))
        else:
            point = _point(ctx, rng).rstrip(". ")
            template = TEMPLATES[ctx.persona.archetype][decision.stance]
            text = template.format(t=target, p=point, P=point[:1].upper() + point[1:])
        jab = next(
            (
                a.speaker
                for a in reversed(ctx.heard)
                if a.target == ctx.name and a.stance == "oppose" and a.speaker != decision.target
            ),
            None,
        )
        if jab and decision.mode is Mode.PUBLIC:
            text = f"({jab}, I heard that.) " + text
        for word in text.split(" "):
            sink(word + " ")
        return text

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        """U_S by rule: support lifts, attacks sink, harm to friends hurts."""
        return _emotion_delta(ctx, observed)

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        """U_R by rule: direct support/attack, balance through third parties, betrayal."""
        return {other: self._judge_edge(ctx, other, acts) for other, acts in triggers.items()}

    def _judge_edge(self, ctx: AgentContext, other: str, acts: list[Action]) -> RelationJudgement:
        me = ctx.name
        _, warmth, thin, responsive = TEMPER[ctx.persona.archetype]
        rels = ctx.state.relations
        rel = rels[other]
        delta, override = 0.0, None
        notes: list[tuple[int, str]] = []
        for a in acts:
            how = "publicly" if a.mode is Mode.PUBLIC else "privately"
            if a.speaker == me:
                delta += {"support": 0.03, "oppose": -0.03, "neutral": 0.0}[a.stance]
                notes.append((2, f"I {_verb(a.stance)} {other} {how}"))
            elif a.target == me:
                if a.stance == "support":
                    delta += 0.13 * responsive
                    notes.append((5, f"{other} backed me {how}"))
                    reached = rel.fav + min(delta, MAX_FAV_DELTA)
                    if rel.status in (Status.RIVAL, Status.ENEMY) and reached > -0.3:
                        override = Status.NEUTRAL
                        notes.append((8, f"{other} reached out and we made peace"))
                elif a.stance == "oppose":
                    delta -= 0.16 * thin * (1.2 if a.mode is Mode.PUBLIC else 1.0)
                    notes.append((7, f"{other} attacked me {how}"))
                    if rel.status is Status.ALLY:
                        override = Status.RIVAL
                        notes.append((9, f"{other}, my ally, turned on me"))
                else:
                    delta += 0.08 if a.mode is Mode.PRIVATE else 0.02
                    notes.append(
                        (
                            4 if a.mode is Mode.PRIVATE else 2,
                            f"{other} confided in me"
                            if a.mode is Mode.PRIVATE
                            else f"{other} spoke to me",
                        )
                    )
            elif a.target in rels:
                friend = rels[a.target].fav
                if a.stance == "oppose" and friend >= FRIEND_AT:
                    delta -= 0.15 * friend * thin
                    notes.append((4, f"{other} attacked my friend {a.target}"))
                elif a.stance == "oppose" and friend <= FOE_AT:
                    delta += 0.05
                    notes.append((3, f"{other} stood up to {a.target}, whom I distrust"))
                elif a.stance == "support" and friend >= FRIEND_AT:
                    delta += 0.05 * warmth
                    notes.append((3, f"{other} backed my friend {a.target}"))
                elif a.stance == "support" and friend <= FOE_AT:
                    delta -= 0.05
                    notes.append((3, f"{other} sided with {a.target}"))
            elif a.stance == "neutral":
                delta += 0.01 * warmth
                notes.append((1, f"{other} addressed the group"))
        importance, summary = max(notes, default=(1, f"{other} was present"))
        return RelationJudgement(
            delta=round(delta, 4),
            status=override,
            importance=importance,
            summary=f"Round {ctx.round}: {summary}.",
        )

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        """Need deltas from being attacked, supported, heard or silent, plus slow recovery."""
        me = ctx.name
        deltas = dict.fromkeys(ctx.state.needs, 0.0)

        def bump(**changes: float) -> None:
            for need, change in changes.items():
                deltas[need] += change

        for event in ctx.events:  # what happens to (or around) the agent moves its needs
            if event.tone != "neutral":
                weight = 1.0 if me in event.about else 0.0
                if event.tone in ("supportive", "hostile") and me not in event.about:
                    weight = 0.25  # the climate reaches bystanders too
                for need, change in TONE_NEEDS[event.tone].items():
                    deltas[need] += weight * change
                continue
            tone = sentiment(event.text) * _salience(ctx, event.text)
            if tone:
                bump(
                    psychological_safety=0.5 * tone,
                    emotional_safety=0.4 * tone,
                    group_acceptance=0.4 * tone,
                    self_worth=0.3 * tone,
                    sense_of_respect=0.3 * tone,
                    support_system=0.3 * tone,
                )
        spoke = False
        for a in observed:
            if a.speaker == me:
                spoke = True
                bump(sense_of_control=0.2, passion_and_motivation=0.15)
                if a.stance == "oppose":
                    bump(sense_of_superiority=0.3)
            elif a.target == me and a.stance == "oppose":
                bump(
                    psychological_safety=-0.4,
                    emotional_safety=-0.35,
                    sense_of_respect=-0.4,
                    self_worth=-0.25,
                    group_acceptance=-0.2,
                    psychological_resilience=-0.1,
                )
            elif a.target == me and a.stance == "support":
                bump(
                    group_acceptance=0.5,
                    support_system=0.5,
                    sense_of_respect=0.3,
                    self_worth=0.3,
                    psychological_resilience=0.1,
                )
            elif a.target == me:
                bump(support_system=0.3 if a.mode is Mode.PRIVATE else 0.1)
            elif a.stance == "oppose":
                bump(emotional_safety=-0.1)
        if not spoke:
            bump(passion_and_motivation=-0.15, sense_of_control=-0.15, group_acceptance=-0.1)
        emotion_delta = _emotion_delta(ctx, observed)
        bump(
            emotional_wellbeing=3.0 * emotion_delta,
            emotional_stability=-2.0 * abs(emotion_delta),
            sense_of_meaning=1.0 * emotion_delta,
        )
        resilience = ctx.state.needs["psychological_resilience"].current / 10.0
        for need, value in ctx.state.needs.items():
            deltas[need] += 0.08 * resilience * (value.expected - value.current)
        return {n: round(d, 4) for n, d in deltas.items() if d}

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


def _salience(ctx: AgentContext, text: str) -> float:
    """How much an event concerns the agent: fully when it names the agent."""
    return 1.0 if ctx.name.lower() in text.lower() else 0.3


def _emotion_delta(ctx: AgentContext, observed: list[Action]) -> float:
    """The rule behind U_S; the needs judge reuses it for affect-linked needs."""
    me = ctx.name
    _, _, thin, responsive = TEMPER[ctx.persona.archetype]
    rels = ctx.state.relations
    delta = sum(
        TONE_EMOTION[e.tone] * (1.0 if me in e.about else 0.25)
        if e.tone != "neutral"
        else 0.04 * _salience(ctx, e.text) * sentiment(e.text)
        for e in ctx.events
    )
    for a in observed:
        if a.speaker == me:
            delta += -0.01 if a.stance == "oppose" else 0.01
        elif a.target == me:
            if a.stance == "support":
                delta += 0.08 * responsive
            elif a.stance == "oppose":
                delta -= 0.08 * thin * (1.25 if a.mode is Mode.PUBLIC else 1.0)
        elif a.target in rels and rels[a.target].fav >= FRIEND_AT:
            delta += {"support": 0.03, "oppose": -0.05, "neutral": 0.0}[a.stance]
        elif a.stance == "oppose":
            delta -= 0.01
    delta += (0.5 - ctx.state.emotion) * 0.12
    return round(delta, 4)


def _intent(stance: Stance, target: str, mode: Mode) -> str:
    if target == ALL:
        return "press my case to the whole group"
    if mode is Mode.PRIVATE and stance == "neutral":
        return f"confide in {target} privately"
    how = "publicly" if mode is Mode.PUBLIC else "privately"
    return {
        "support": f"back {target} {how}",
        "oppose": f"challenge {target} {how}",
        "neutral": f"speak with {target} {how}",
    }[stance]


def _verb(stance: Stance) -> str:
    return {"support": "backed", "oppose": "challenged", "neutral": "spoke with"}[stance]


def _said(ctx: AgentContext) -> str:
    """Everything the agent itself said earlier, to avoid repeating a point."""
    return " ".join(
        a.utterance for past in ctx.history for a in past.actions if a.speaker == ctx.name
    ).lower()


def _pick(rng: random.Random, points: list[str], said: str) -> str | None:
    fresh = [p for p in points if p.rstrip(". ").lower() not in said]
    pool = fresh or points
    return rng.choice(pool) if pool else None


def _point(ctx: AgentContext, rng: random.Random) -> str:
    """A talking point; evidence holders share unsaid evidence as their archetype allows."""
    persona = ctx.persona
    said = _said(ctx)
    share = SHARES_EVIDENCE[persona.archetype]
    fresh = [e for e in persona.evidence if e.rstrip(". ").lower() not in said]
    if fresh and rng.random() < share:
        return rng.choice(fresh)
    return (
        _pick(rng, persona.talking_points, said)
        or persona.goal.rstrip(".")
        or f"as the {persona.role}, I have a stake in how this ends"
    )
