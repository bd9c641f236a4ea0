"""Offline judgements (U_S, U_R and needs by rule), where balance, repair and escalation act
on how an agent feels about what it saw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ...core.lexicon import sentiment
from ...core.rounding import ROUNDED_4
from ...core.rules import MAX_FAV_DELTA, RIVAL_AT, ReadAct
from ...core.scenario import Status
from ...core.state import ALL, Mode, Stance
from ..base import AgentContext, Edge
from .lens import ATTITUDE_LENS, TRUST_WEIGHT, PriorLens
from .params import (
    FOE_AT,
    FORGIVE,
    FRIEND_AT,
    FRIEND_HURT,
    HEIDER,
    INFORM,
    NEGATIVE,
    OUTGROUP,
    PEACE,
    PEACE_AT,
    PEACE_FROM,
    RECONCILE,
    SIGN,
    TEMPER,
)

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
#: Emotion change from seeing a friend backed, attacked or addressed.
FRIEND_FEELING = {"support": 0.03, "oppose": -0.05, "neutral": 0.0}

#: Favorability change from my own act toward the agent judged.
OWN_ACT: dict[Stance, float] = {"support": 0.03, "oppose": -0.03, "neutral": 0.0}
VERB: dict[Stance, str] = {"support": "backed", "oppose": "challenged", "neutral": "spoke with"}


@dataclass(frozen=True)
class Standing:
    """Where an agent stands in its scenario when it judges: the members of other factions,
    whether it is a broker (outside every faction of a factional scenario: it takes no side
    in others' quarrels), and the factual claims it has not yet heard (``news``)."""

    outgroup: frozenset[str] = frozenset()
    broker: bool = False
    news: tuple[str, ...] = ()


UNAFFILIATED = Standing()


class _Present(dict[str, str]):
    """Each agent's "was present" summary of a round (the summary of most edges), built once
    for every observer of the round."""

    def __init__(self, opening: str) -> None:
        super().__init__()
        self.opening = opening

    def __missing__(self, other: str) -> str:
        summary = self[other] = f"{self.opening}{other} was present."
        return summary


@lru_cache(maxsize=2)
def _present(opening: str) -> _Present:
    """The "was present" summaries of the round ``opening`` names."""
    return _Present(opening)


def relation_judgements(
    ctx: AgentContext,
    triggers: dict[str, list[ReadAct]],
    lens: PriorLens,
    heard: Sequence[ReadAct],
    standing: Standing = UNAFFILIATED,
) -> dict[str, Edge]:
    """U_R by rule: direct support/attack, balance through third parties, betrayal,
    reconciliation, in-group favoritism, and regard for whoever told me a fact I did not
    know. ``triggers`` and ``heard`` (``ctx.heard``) are read (:func:`~engine.core.rules.read_acts`)."""
    me = ctx.name
    broker, outgroup, news = standing.broker, standing.outgroup, standing.news
    rels = ctx.state.relations
    credence_of = lens.credence
    # Heider: this round's stances on each agent by others I give credit to (or hold in
    # contempt: a foe's attack counts for nothing), with the credit
    said_of: dict[str, list[tuple[str, Stance, float]]] = {}
    spoken = attacks = 0
    for _, speaker, target, stance, _ in heard:  # the room's hostility, who was backed, attacked
        if speaker == me:
            continue
        spoken += 1
        if stance == "oppose":
            attacks += 1
        elif stance == "neutral":
            continue
        if target in triggers and not broker:  # a broker takes no side (Heider)
            credence = credence_of(speaker, rels[speaker].fav)
            if credence > 0 or (credence < 0 and stance != "oppose"):
                said_of.setdefault(target, []).append((speaker, stance, credence))
    climate = attacks / spoken if spoken else 0.0
    # What every edge of this observer shares, read once (the edges are the hot loop).
    _, warmth, thin, responsive = TEMPER[ctx.persona.archetype]
    # a grudge not renewed this round fades: fastest for peacemakers in a calm room
    calm = FORGIVE * PEACE[ctx.persona.archetype] * (1.0 - climate)
    attitude = lens.attitude
    opening = f"Round {ctx.round}: "
    present = _present(opening)
    rounded4 = ROUNDED_4  # round(x, 4), remembered
    public_mode, private_mode = Mode.PUBLIC, Mode.PRIVATE
    ally, neutral = Status.ALLY, Status.NEUTRAL

    judged: dict[str, Edge] = {}
    for other, acts in triggers.items():  # the hot loop: once per edge, written inline
        rel = rels[other]
        fav = rel.fav
        warm = ATTITUDE_LENS * attitude[other] if other in attitude else 0.0
        rival_side = other in outgroup
        bias = OUTGROUP if rival_side else 0.0  # in-group favoritism (Krackhardt & Stern)
        delta, override = 0.0, None
        notes: list[tuple[int, str]] = []
        feud = rel.status in NEGATIVE
        attacked_me = feud and any(t == me and s == "oppose" for _, _, t, s, _ in acts)
        for _, speaker, target, stance, mode in acts:
            if speaker == me:
                delta += OWN_ACT[stance]
                how = "publicly" if mode is public_mode else "privately"
                notes.append((2, f"I {VERB[stance]} {other} {how}"))
                if stance == "support" and feud and not attacked_me:
                    delta = max(delta + RECONCILE, PEACE_AT - fav)
                    override = neutral
                    notes.append((8, f"I reached out to {other} and we made peace"))
            elif target == me:
                public = mode is public_mode
                how = "publicly" if public else "privately"
                if stance == "support":
                    delta += 0.13 * responsive * (1.0 + warm) * (1.0 - bias)
                    notes.append((5, f"{other} backed me {how}"))
                    reached = fav + min(delta, MAX_FAV_DELTA)
                    if feud and reached > PEACE_FROM:
                        delta = max(delta + RECONCILE, PEACE_AT - fav)
                        override = neutral
                        notes.append((8, f"{other} reached out and we made peace"))
                elif stance == "oppose":
                    hurt = 0.16 * thin * (1.2 if public else 1.0) * (1.0 - warm)
                    delta -= hurt * (1.0 + bias)
                    notes.append((7, f"{other} attacked me {how}"))
                    if rel.status is ally:
                        override = Status.RIVAL
                        notes.append((9, f"{other}, my ally, turned on me"))
                elif mode is private_mode:
                    delta += 0.08
                    notes.append((4, f"{other} confided in me"))
                else:
                    delta += 0.02
                    notes.append((2, f"{other} spoke to me"))
            elif target in rels and not broker:
                friend = rels[target].fav
                if friend >= FRIEND_AT:
                    if stance == "oppose":
                        delta -= FRIEND_HURT * friend * thin
                        notes.append((4, f"{other} attacked my friend {target}"))
                    elif stance == "support":
                        delta += 0.05 * warmth
                        notes.append((3, f"{other} backed my friend {target}"))
                elif friend <= FOE_AT and stance == "support":
                    delta -= 0.05
                    notes.append((3, f"{other} sided with {target}"))
            elif stance == "neutral" and rival_side:
                notes.append((2, f"{other} pressed the other side's case"))
            elif stance == "neutral":
                delta += 0.01 * warmth
                notes.append((1, f"{other} addressed the group"))
        if news and any(
            c in low
            for a, speaker, *_ in acts
            if speaker == other
            for low in (a.utterance.lower(),)
            for c in news
        ):  # an informant earns regard (and the credit that regard lends its word)
            delta += INFORM
            notes.append((4, f"{other} told me something I did not know"))
        believed = None
        for said in said_of.get(other, ()):  # a friend's enemy is mine, a foe's my friend
            teller, view, credence = said
            if teller in outgroup:
                credence *= 1.0 - OUTGROUP
            delta += HEIDER * credence * SIGN[view]
            believed = said if credence > 0 else believed
        if believed is not None:
            teller, view, _ = believed
            notes.append((3, f"{teller} {VERB[view]} {other}, and I believe it"))
        if (
            feud
            and override is None
            and not attacked_me
            and not (rival_side and any(t == ALL and s == other for _, s, t, _, _ in acts))
        ):  # a grudge not renewed (nor its side's case pressed) this round fades
            delta += calm * (1.0 - bias)
            if fav + min(delta, MAX_FAV_DELTA) > RIVAL_AT:
                override = neutral
                notes.append((6, f"{other} and I put our quarrel behind us"))
        if notes:
            importance, note = max(notes)
            summary = f"{opening}{note}."
        else:
            importance, summary = 1, present[other]
        rounded = rounded4[delta] if delta else delta  # zeros: a table never holds them
        judged[other] = (rounded, override, summary, importance)

    return judged


def need_deltas(
    ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens, mood: float | None = None
) -> dict[str, float]:
    """Need deltas from being attacked, supported, heard or silent, plus slow recovery;
    ``mood`` is :func:`emotion_delta` of the same arguments when the caller has it."""
    me = ctx.name
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
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        weight = lens.weight(speaker) if trusting else 1.0
        if speaker == me:
            spoke = True
            bump(sense_of_control=0.2, passion_and_motivation=0.15)
            if stance == "oppose":
                bump(sense_of_superiority=0.3)
        elif target != me:
            if stance == "oppose":
                quarrels += weight
        elif stance == "oppose":
            bump(
                weight,
                psychological_safety=-0.4,
                emotional_safety=-0.35,
                sense_of_respect=-0.4,
                self_worth=-0.25,
                group_acceptance=-0.2,
                psychological_resilience=-0.1,
            )
        elif stance == "support":
            bump(
                weight,
                group_acceptance=0.5,
                support_system=0.5,
                sense_of_respect=0.3,
                self_worth=0.3,
                psychological_resilience=0.1,
            )
        else:
            bump(weight, support_system=0.3 if mode is Mode.PRIVATE else 0.1)
    deltas["emotional_safety"] -= 0.1 * quarrels
    if not spoke:
        bump(passion_and_motivation=-0.15, sense_of_control=-0.15, group_acceptance=-0.1)
    if mood is None:
        mood = emotion_delta(ctx, observed, lens)
    bump(
        emotional_wellbeing=3.0 * mood,
        emotional_stability=-2.0 * abs(mood),
        sense_of_meaning=1.0 * mood,
    )
    resilience = ctx.state.needs["psychological_resilience"].current / 10.0
    for need, value in ctx.state.needs.items():
        deltas[need] += 0.08 * resilience * (value.expected - value.current)
    return {n: round(d, 4) for n, d in deltas.items() if d}  # seldom seen before: no table


def _salience(ctx: AgentContext, text: str) -> float:
    """How much an event concerns the agent: fully when it names the agent."""
    return 1.0 if ctx.name.lower() in text.lower() else 0.3


def emotion_delta(ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens) -> float:
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
    trust, public = lens.trust, Mode.PUBLIC
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        if speaker == me:
            delta += -0.01 if stance == "oppose" else 0.01
            continue
        if target == me:
            if stance == "neutral":
                continue
            felt = 0.08 * responsive if stance == "support" else -0.08 * thin
            if stance == "oppose" and mode is public:
                felt *= 1.25
        elif target in rels and rels[target].fav >= FRIEND_AT:
            felt = FRIEND_FEELING[stance]
        elif stance == "oppose":
            felt = -0.01
        else:
            continue
        delta += felt * (1.0 + TRUST_WEIGHT * trust.get(speaker, 0)) if trust else felt
    delta += (0.5 - ctx.state.emotion) * 0.12
    return round(delta, 4)
