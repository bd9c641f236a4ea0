"""The offline rule-based social model: deterministic from the run seed, no network.

Dynamics by design: support warms the target toward the speaker and lifts its emotion,
attacks cool both, returned support is likely (reciprocity), dominant agents speak more and
earlier, reserved agents less and withdraw when hurt. Sociodrama Sec. 5's patterns come
from mechanisms in the decisions and judgements, not from the starting relations:

* Structural balance (Heider): agents resolve unbalanced triads. Attacking my friend cools
  me toward the attacker; a friend's (or a trusted peer's) stance on a third agent moves my
  view of that agent the same way (my friend's enemy becomes mine, its friend warms me, my
  foe's enemy warms me), and I lean to join my friends' attacks and back whom they back.
* Repair: relations that turned rival or enemy get mended. Agents reach out to rivals, the
  peacemaking archetypes (agreeable, balanced) most, a calm agent more than an upset one;
  backing a rival, or being backed by one, makes peace (status neutral, favorability lifted
  above the rival threshold) unless the rival struck back that round, and a grudge the
  rival does not renew fades round by round until it is settled.
* Escalation: the hostility an agent saw last round (the share of attacks among the acts
  it observed; in the judges, this round's) scales its aggression up from half and its
  readiness to reach out and to forgive down, so conflict feeds on itself where it is high
  and repair prevails where it is low. Rivals in another faction are attacked more readily
  and reached out to less (in-group favoritism, Krackhardt & Stern).

A relational prior (Relational priors Sec. 3) is a fixed prompt layer, never a relation
state: the model reads each stated sign s in {-1, 0, +1} through the relation type's own
channel (:class:`PriorLens`): Attitude is warmth toward the peer (how it is treated and
judged), Trust the weight of the peer's words (on emotion, needs and views of third
agents), Influence the pull toward the peer's last act (followed or countered). Explicit-
Neutral states every edge with s = 0, which carries no direction to act on, so offline it
plays exactly as No-Prior; only the prompt an LLM sees differs.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..lexicon import sentiment
from ..mind_spec import OFFLINE, OFFLINE_LABEL
from ..priors import Prior, sign_index
from ..records import LLMCall
from ..rules import MAX_FAV_DELTA, RIVAL_AT
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
FOE_AT = -0.2
NEGATIVE = (Status.RIVAL, Status.ENEMY)
#: Readiness to reach out to a rival or enemy, by archetype (peacemakers first).
PEACE = {
    Archetype.AGREEABLE: 1.0,
    Archetype.BALANCED: 0.8,
    Archetype.ANALYTICAL: 0.5,
    Archetype.RESERVED: 0.4,
    Archetype.DOMINANT: 0.3,
}
#: Option weight of reaching out to a rival at full readiness, calm, no hostility seen.
REPAIR_PULL = 3.0
#: Favorability gained on top of the act when a relation is reconciled, and the level a
#: reconciled relation rises to when the round's clip allows (above the rival threshold).
RECONCILE = 0.15
PEACE_AT = -0.05
#: Support from a rival makes peace when it lifts the relation above this favorability.
PEACE_FROM = -0.3
#: Aggression scales with last round's share of attacks: CALM_AGGRESSION + ESCALATION x
#: share (half in a calm room, two and a half times in one where everyone attacks).
ESCALATION = 2.0
CALM_AGGRESSION = 0.5
#: Heider: favorability change per unit of credence in a peer's stance on a third agent.
HEIDER = 0.08
#: Favorability lost toward an attacker per unit of favorability toward the one attacked.
FRIEND_HURT = 0.15
#: Heider in decisions: weight of joining a friend's attack or backing whom it backed.
HEIDER_PULL = 1.2
#: A rival's grudge fades by this much a round the rival does not attack (times the
#: archetype's PEACE and the calm of the room); once above the rival threshold it is settled.
FORGIVE = 0.25
#: In-group favoritism (Krackhardt & Stern): toward another faction's members attacks are
#: likelier (1 + OUTGROUP)x and reaching out rarer (1 - OUTGROUP)x.
OUTGROUP = 0.4
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

#: Relational priors, read by relation type (see :class:`PriorLens`). Attitude, warmth
#: toward the peer: extra weight to back (s = +1) or challenge (s = -1) it, and its support
#: counts (1 + ATTITUDE_LENS s)x, its attacks (1 - ATTITUDE_LENS s)x when it is judged.
ATTITUDE_WARMTH = 0.8
ATTITUDE_LENS = 0.5
#: Trust, weight of the peer's claims: its acts move my emotion and needs (1 + TRUST_WEIGHT s)x,
#: and its stance on a third agent moves my view of that agent as a friend's (or foe's) of
#: favorability TRUST_WEIGHT s would, on top of my own feelings toward the peer.
TRUST_WEIGHT = 0.6
#: Influence, pull toward the peer's proposals: the weight of an option that follows its
#: last act (s = +1: same stance and target) or counters it (s = -1: the opposite stance).
INFLUENCE_PULL = 1.5
FLIP: dict[Stance, Stance] = {"support": "oppose", "oppose": "support", "neutral": "neutral"}
SIGN = {"support": 1, "oppose": -1, "neutral": 0}
#: Emotion change from seeing a friend backed, attacked or addressed.
FRIEND_FEELING = {"support": 0.03, "oppose": -0.05, "neutral": 0.0}

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


@dataclass(frozen=True)
class PriorLens:
    """An agent's relational prior as the offline model reads it: the sign stated toward
    each peer, in the channel of the prior's relation type (the other two empty; unstated
    pairs and Explicit-Neutral edges read as 0)."""

    #: Warmth toward the peer (Attitude priors).
    attitude: dict[str, int] = field(default_factory=dict)
    #: Credit given to the peer's words (Trust priors).
    trust: dict[str, int] = field(default_factory=dict)
    #: Pull toward the peer's proposals (Influence priors).
    influence: dict[str, int] = field(default_factory=dict)

    def weight(self, peer: str) -> float:
        """How much ``peer``'s acts move my emotion and needs (1 without a Trust prior)."""
        return 1.0 + TRUST_WEIGHT * self.trust.get(peer, 0) if self.trust else 1.0

    def credence(self, peer: str, fav: float) -> float:
        """How far ``peer``'s stance on a third agent moves my view of that agent: my
        friendship (or enmity) toward ``peer``, plus the trust the prior states (Heider)."""
        held = fav if fav >= FRIEND_AT or fav <= FOE_AT else 0.0
        return held + TRUST_WEIGHT * self.trust.get(peer, 0) if self.trust else held


NO_LENS = PriorLens()


class OfflineMind:
    """A seeded rule-based mind implementing the :class:`~engine.minds.Mind` interface."""

    spec = OFFLINE
    label = LABEL
    judge_mode = "rules"

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._prior: Prior | None = None
        self._signs: dict[str, dict[str, int]] = {}
        self._scenario: Scenario | None = None
        self._outgroups: dict[str, frozenset[str]] = {}

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

    def _outgroup(self, ctx: AgentContext) -> frozenset[str]:
        """The members of factions other than the agent's (none if it has no faction)."""
        if ctx.scenario is not self._scenario:
            factions = ctx.scenario.faction_of()
            self._scenario = ctx.scenario
            self._outgroups = {
                me: frozenset(n for n, f in factions.items() if f != mine)
                for me, mine in factions.items()
            }
        return self._outgroups.get(ctx.name, frozenset())

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
        """Weighted candidate actions: support friends, oppose foes, address the group, take
        sides in others' quarrels (balance), reach out to rivals (repair), follow or counter
        an influential peer's lead (Influence prior)."""
        me, arch = ctx.name, ctx.persona.archetype
        aggression, warmth, _, _ = TEMPER[arch]
        rels = ctx.state.relations
        lens = self._lens(ctx)
        spoken = [a for a in last if a.order and a.speaker != me]
        climate = _hostility(spoken)
        aggression *= CALM_AGGRESSION + ESCALATION * climate
        calm = min(1.0, 2.0 * ctx.state.emotion)
        peace = REPAIR_PULL * PEACE[arch] * calm * (1.0 - climate)
        supporters = {a.speaker for a in last if a.target == me and a.stance == "support"}
        hit = {a.target: a.speaker for a in last if a.stance == "oppose" and a.target != me}
        hit_friends = {
            who for victim, who in hit.items() if victim in rels and rels[victim].fav >= FRIEND_AT
        }
        # Heider: what my friends did to others last round is what I lean to do.
        sides: dict[str, float] = {}
        for a in spoken:
            friend = rels[a.speaker].fav
            if friend >= FRIEND_AT and a.target in rels and a.stance != "neutral":
                sides[a.target] = sides.get(a.target, 0.0) + friend * SIGN[a.stance]
        analytic = 1.6 if arch is Archetype.ANALYTICAL else 1.0
        outgroup = self._outgroup(ctx)
        options: list[tuple[float, Stance, str, Mode]] = [(analytic, "neutral", ALL, Mode.PUBLIC)]
        attitude, confides = lens.attitude, bool(ctx.persona.private_info or ctx.persona.evidence)
        mode = Mode.PRIVATE if arch is Archetype.RESERVED else Mode.PUBLIC
        for other, rel in rels.items():
            fav = rel.fav
            hostile = (FOE_AT + 0.15 - fav) * 4.0 if fav < FOE_AT + 0.15 else 0.0
            friendly = (fav - 0.1) * 3.0 if fav > 0.1 else 0.0
            if other in attackers:
                hostile += 2.0
            if other in hit_friends:
                hostile += 1.5
            if other in supporters:
                friendly += 1.5
            if other in hit and fav >= FRIEND_AT:
                friendly += 1.0
            bias = OUTGROUP if other in outgroup else 0.0
            if rel.status in NEGATIVE:
                friendly += peace * (1.0 - bias)  # reaching out to a rival: the seed of repair
            for pull in (
                HEIDER_PULL * sides.get(other, 0.0),
                ATTITUDE_WARMTH * attitude.get(other, 0),
            ):
                if pull > 0:
                    friendly += pull
                elif pull < 0:
                    hostile -= pull
            if hostile > 0:
                options.append((hostile * aggression * (1.0 + bias), "oppose", other, mode))
            if friendly > 0:
                options.append((friendly * warmth, "support", other, Mode.PUBLIC))
                if confides and fav >= 0.4:
                    options.append((0.5 * friendly, "neutral", other, Mode.PRIVATE))
        if lens.influence:
            options += _follow_options(me, spoken, lens.influence)
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
        return _emotion_delta(ctx, observed, self._lens(ctx))

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        """U_R by rule: direct support/attack, balance through third parties, betrayal,
        reconciliation."""
        lens, me = self._lens(ctx), ctx.name
        said_of: dict[str, list[Action]] = {}  # this round's stances on each agent, by others
        spoken = attacks = 0
        for a in ctx.heard:  # one pass: the room's hostility and who was backed or attacked
            if a.speaker == me:
                continue
            spoken += 1
            if a.stance == "oppose":
                attacks += 1
            elif a.stance == "neutral":
                continue
            if a.target in triggers:
                said_of.setdefault(a.target, []).append(a)
        climate = attacks / spoken if spoken else 0.0
        return {
            other: self._judge_edge(ctx, other, acts, lens, said_of.get(other, ()), climate)
            for other, acts in triggers.items()
        }

    def _judge_edge(
        self,
        ctx: AgentContext,
        other: str,
        acts: list[Action],
        lens: PriorLens,
        said_of: Sequence[Action],
        climate: float,
    ) -> RelationJudgement:
        me = ctx.name
        _, warmth, thin, responsive = TEMPER[ctx.persona.archetype]
        rels = ctx.state.relations
        rel = rels[other]
        warm = ATTITUDE_LENS * lens.attitude[other] if other in lens.attitude else 0.0
        delta, override = 0.0, None
        notes: list[tuple[int, str]] = []
        feud = rel.status in NEGATIVE
        attacked_me = feud and any(a.target == me and a.stance == "oppose" for a in acts)
        for a in acts:
            how = "publicly" if a.mode is Mode.PUBLIC else "privately"
            if a.speaker == me:
                delta += {"support": 0.03, "oppose": -0.03, "neutral": 0.0}[a.stance]
                notes.append((2, f"I {_verb(a.stance)} {other} {how}"))
                if a.stance == "support" and feud and not attacked_me:
                    delta = max(delta + RECONCILE, PEACE_AT - rel.fav)
                    override = Status.NEUTRAL
                    notes.append((8, f"I reached out to {other} and we made peace"))
            elif a.target == me:
                if a.stance == "support":
                    delta += 0.13 * responsive * (1.0 + warm)
                    notes.append((5, f"{other} backed me {how}"))
                    reached = rel.fav + min(delta, MAX_FAV_DELTA)
                    if feud and reached > PEACE_FROM:
                        delta = max(delta + RECONCILE, PEACE_AT - rel.fav)
                        override = Status.NEUTRAL
                        notes.append((8, f"{other} reached out and we made peace"))
                elif a.stance == "oppose":
                    delta -= 0.16 * thin * (1.2 if a.mode is Mode.PUBLIC else 1.0) * (1.0 - warm)
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
                    delta -= FRIEND_HURT * friend * thin
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
        believed = None
        for a in said_of:  # Heider: my friend's enemy is my enemy, my foe's enemy my friend
            credence = lens.credence(a.speaker, rels[a.speaker].fav)
            if credence:
                delta += HEIDER * credence * SIGN[a.stance]
                believed = a if credence > 0 else believed
        if believed is not None:
            notes.append(
                (3, f"{believed.speaker} {_verb(believed.stance)} {other}, and I believe it")
            )
        if feud and override is None and not attacked_me:
            # a grudge not renewed this round fades: fastest for peacemakers in a calm room
            delta += FORGIVE * PEACE[ctx.persona.archetype] * (1.0 - climate)
            if rel.fav + min(delta, MAX_FAV_DELTA) > RIVAL_AT:
                override = Status.NEUTRAL
                notes.append((6, f"{other} and I put our quarrel behind us"))
        importance, summary = max(notes) if notes else (1, f"{other} was present")
        return RelationJudgement(
            delta=round(delta, 4),
            status=override,
            importance=importance,
            summary=f"Round {ctx.round}: {summary}.",
        )

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        """Need deltas from being attacked, supported, heard or silent, plus slow recovery."""
        me = ctx.name
        lens = self._lens(ctx)
        deltas = dict.fromkeys(ctx.state.needs, 0.0)

        def bump(weight: float = 1.0, **changes: float) -> None:
            for need, change in changes.items():
                deltas[need] += weight * change

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
        spoke, quarrels = False, 0.0  # quarrels: attacks among others, by credit given
        trusting = bool(lens.trust)
        for a in observed:
            weight = lens.weight(a.speaker) if trusting else 1.0
            if a.speaker == me:
                spoke = True
                bump(sense_of_control=0.2, passion_and_motivation=0.15)
                if a.stance == "oppose":
                    bump(sense_of_superiority=0.3)
            elif a.target == me and a.stance == "oppose":
                bump(
                    weight,
                    psychological_safety=-0.4,
                    emotional_safety=-0.35,
                    sense_of_respect=-0.4,
                    self_worth=-0.25,
                    group_acceptance=-0.2,
                    psychological_resilience=-0.1,
                )
            elif a.target == me and a.stance == "support":
                bump(
                    weight,
                    group_acceptance=0.5,
                    support_system=0.5,
                    sense_of_respect=0.3,
                    self_worth=0.3,
                    psychological_resilience=0.1,
                )
            elif a.target == me:
                bump(weight, support_system=0.3 if a.mode is Mode.PRIVATE else 0.1)
            elif a.stance == "oppose":
                quarrels += weight
        deltas["emotional_safety"] -= 0.1 * quarrels
        if not spoke:
            bump(passion_and_motivation=-0.15, sense_of_control=-0.15, group_acceptance=-0.1)
        emotion_delta = _emotion_delta(ctx, observed, lens)
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


def _emotion_delta(ctx: AgentContext, observed: list[Action], lens: PriorLens) -> float:
    """The rule behind U_S; the needs judge reuses it for affect-linked needs. A trusted
    peer's acts weigh more, a distrusted peer's less (Trust priors)."""
    me = ctx.name
    _, _, thin, responsive = TEMPER[ctx.persona.archetype]
    rels = ctx.state.relations
    delta = sum(
        TONE_EMOTION[e.tone] * (1.0 if me in e.about else 0.25)
        if e.tone != "neutral"
        else 0.04 * _salience(ctx, e.text) * sentiment(e.text)
        for e in ctx.events
    )
    trust = lens.trust
    for a in observed:
        if a.speaker == me:
            delta += -0.01 if a.stance == "oppose" else 0.01
            continue
        if a.target == me:
            if a.stance == "neutral":
                continue
            felt = 0.08 * responsive if a.stance == "support" else -0.08 * thin
            if a.stance == "oppose" and a.mode is Mode.PUBLIC:
                felt *= 1.25
        elif a.target in rels and rels[a.target].fav >= FRIEND_AT:
            felt = FRIEND_FEELING[a.stance]
        elif a.stance == "oppose":
            felt = -0.01
        else:
            continue
        delta += felt * (1.0 + TRUST_WEIGHT * trust.get(a.speaker, 0)) if trust else felt
    delta += (0.5 - ctx.state.emotion) * 0.12
    return round(delta, 4)


def _hostility(spoken: list[Action]) -> float:
    """The climate: the share of attacks among the spoken acts an agent saw last round (0
    when none); the judges count this round's the same way."""
    return [a.stance for a in spoken].count("oppose") / len(spoken) if spoken else 0.0


def _follow_options(
    me: str, spoken: list[Action], influence: dict[str, int]
) -> list[tuple[float, Stance, str, Mode]]:
    """Influence priors: options that follow (s = +1) or counter (s = -1) each influential
    peer's last act; a proposal to the group is backed or challenged in the peer's person."""
    options: list[tuple[float, Stance, str, Mode]] = []
    for a in spoken:
        s = influence.get(a.speaker, 0)
        if not s or a.target == me or a.target is None:
            continue
        stance: Stance
        if a.target == ALL or a.stance == "neutral":
            stance, target = ("support" if s > 0 else "oppose"), a.speaker
        else:
            stance, target = (a.stance if s > 0 else FLIP[a.stance]), a.target
        options.append((INFLUENCE_PULL, stance, target, Mode.PUBLIC))
    return options


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
