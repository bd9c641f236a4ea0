"""Offline judgements (U_S, U_R and needs by rule), where balance, repair and escalation act
on how an agent feels about what it saw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ...core.changes import STATUSES
from ...core.needs import NEED_MAX
from ...core.rounding import ROUNDED_4
from ...core.rules import RIVAL_AT, ReadAct, ends_above
from ...core.scenario import Status
from ...core.state import ALL, Mode, Stance
from ..base import AgentContext, Edge
from .event_effects import event_mood, event_needs
from .lens import ATTITUDE_LENS, TRUST_WEIGHT, PriorLens
from .params import (
    ADDRESSED_GROUP,
    ADDRESSED_SUPPORT,
    ATTACKED_ME,
    ATTACKED_NEEDS,
    ATTACKING_NEEDS,
    BACKED_ME,
    BACKED_NEEDS,
    CONFIDED,
    CONFIDED_SUPPORT,
    DIRECT_MOOD,
    FOE_AT,
    FOE_BACKED,
    FORGIVE,
    FRIEND_AT,
    FRIEND_BACKED,
    FRIEND_FEELING,
    FRIEND_HURT,
    HEIDER,
    IMPORTANCE,
    INFORM,
    MOOD_MEANING,
    MOOD_PULL,
    MOOD_REST,
    MOOD_STABILITY,
    MOOD_WELLBEING,
    NEGATIVE,
    OUTGROUP,
    OVERHEARD_ATTACK,
    OWN_ACT,
    OWN_ACT_MOOD,
    PEACE,
    PEACE_AT,
    PEACE_FROM,
    PUBLIC_SHAME,
    PUBLIC_STING,
    QUARREL_SAFETY,
    RECONCILE,
    RECOVERY,
    SIGN,
    SILENT_NEEDS,
    SPEAKING_NEEDS,
    SPOKE_TO_ME,
    TEMPER,
)

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


@dataclass(frozen=True, slots=True)
class _Observer:
    """What every edge an agent judges this round shares, read once (the edges are the hot
    loop): who I am, my relations, my temper, how calm the room is, and the stances heard
    of each agent by peers I give credence to (Heider)."""

    me: str
    #: My favorability toward each agent, and each agent's position in it.
    favs: list[float]
    index: dict[str, int]
    standing: Standing
    warmth: float
    thin: float
    responsive: float
    calm: float
    said_of: dict[str, list[tuple[str, Stance, float]]]


@dataclass(slots=True)
class _Edge:
    """One edge's judgement as the mechanisms build it: the favorability change so far, a
    status override, and the notes (importance, text) its memory summary is chosen from."""

    other: str
    fav: float
    feud: bool
    warm: float
    bias: float
    delta: float = 0.0
    override: Status | None = None
    notes: list[tuple[int, str]] = field(default_factory=list)

    def note(self, kind: str, text: str) -> None:
        self.notes.append((IMPORTANCE[kind], text))

    def make_peace(self, kind: str, text: str) -> None:
        """Reconciliation: a lift of RECONCILE, at least to PEACE_AT, and the feud ends."""
        self.delta = max(self.delta + RECONCILE, PEACE_AT - self.fav)
        self.override = Status.NEUTRAL
        self.note(kind, text)


def _my_act(e: _Edge, stance: Stance, mode: Mode, attacked_me: bool) -> None:
    """My own act toward the agent judged; backing a rival who did not attack me makes peace."""
    e.delta += OWN_ACT[stance]
    how = "publicly" if mode is Mode.PUBLIC else "privately"
    e.note("own act", f"I {VERB[stance]} {e.other} {how}")
    if stance == "support" and e.feud and not attacked_me:
        e.make_peace("peace", f"I reached out to {e.other} and we made peace")


def _act_on_me(e: _Edge, o: _Observer, status: Status, stance: Stance, mode: Mode) -> None:
    """Direct support or attack: support from a rival that lifts the edge past PEACE_FROM
    makes peace; an ally's attack is betrayal."""
    public = mode is Mode.PUBLIC
    how = "publicly" if public else "privately"
    other = e.other
    if stance == "support":
        e.delta += BACKED_ME * o.responsive * (1.0 + e.warm) * (1.0 - e.bias)
        e.note("backed me", f"{other} backed me {how}")
        if e.feud and ends_above(e.fav, e.delta, PEACE_FROM):
            e.make_peace("peace", f"{other} reached out and we made peace")
    elif stance == "oppose":
        hurt = ATTACKED_ME * o.thin * (PUBLIC_STING if public else 1.0) * (1.0 - e.warm)
        e.delta -= hurt * (1.0 + e.bias)
        e.note("attacked me", f"{other} attacked me {how}")
        if status is Status.ALLY:
            e.override = Status.RIVAL
            e.note("betrayed", f"{other}, my ally, turned on me")
    elif mode is Mode.PRIVATE:
        e.delta += CONFIDED
        e.note("confided", f"{other} confided in me")
    else:
        e.delta += SPOKE_TO_ME
        e.note("spoke to me", f"{other} spoke to me")


def _act_on_a_third(e: _Edge, o: _Observer, target: str, stance: Stance) -> None:
    """Balance through a third party: attacking my friend costs, backing my friend or my
    foe's side moves me accordingly."""
    friend = o.favs[o.index[target]]
    if friend >= FRIEND_AT:
        if stance == "oppose":
            e.delta -= FRIEND_HURT * friend * o.thin
            e.note("attacked my friend", f"{e.other} attacked my friend {target}")
        elif stance == "support":
            e.delta += FRIEND_BACKED * o.warmth
            e.note("backed my friend", f"{e.other} backed my friend {target}")
    elif friend <= FOE_AT and stance == "support":
        e.delta -= FOE_BACKED
        e.note("sided with my foe", f"{e.other} sided with {target}")


def _address(e: _Edge, o: _Observer, rival_side: bool) -> None:
    """A neutral word to the room: warms me to my own side, not to the other side's case."""
    if rival_side:
        e.note("pressed their case", f"{e.other} pressed the other side's case")
    else:
        e.delta += ADDRESSED_GROUP * o.warmth
        e.note("addressed the group", f"{e.other} addressed the group")


def _informant(e: _Edge, acts: list[ReadAct], news: tuple[str, ...]) -> None:
    """Whoever tells me a factual claim I did not know earns regard (and the credit that
    regard lends its word)."""
    other = e.other
    if any(
        c in low
        for a, speaker, *_ in acts
        if speaker == other
        for low in (a.utterance.lower(),)
        for c in news
    ):
        e.delta += INFORM
        e.note("informed me", f"{other} told me something I did not know")


def _hearsay(e: _Edge, o: _Observer) -> None:
    """Heider: a friend's enemy is mine, a foe's my friend (by the credence I give each
    teller, less toward another faction's)."""
    believed = None
    outgroup = o.standing.outgroup
    for said in o.said_of.get(e.other, ()):
        teller, view, credence = said
        if teller in outgroup:
            credence *= 1.0 - OUTGROUP
        e.delta += HEIDER * credence * SIGN[view]
        believed = said if credence > 0 else believed
    if believed is not None:
        teller, view, _ = believed
        e.note("believed", f"{teller} {VERB[view]} {e.other}, and I believe it")


def _grudge_fades(e: _Edge, o: _Observer, acts: list[ReadAct], rival_side: bool) -> None:
    """A grudge not renewed (nor its side's case pressed) this round fades; once the edge
    rises past the rival threshold the quarrel is settled."""
    other = e.other
    if rival_side and any(t == ALL and s == other for _, s, t, _, _ in acts):
        return
    e.delta += o.calm * (1.0 - e.bias)
    if ends_above(e.fav, e.delta, RIVAL_AT):
        e.override = Status.NEUTRAL
        e.note("grudge faded", f"{other} and I put our quarrel behind us")


def _observer(
    ctx: AgentContext,
    triggers: dict[str, list[ReadAct]],
    lens: PriorLens,
    heard: Sequence[ReadAct],
    standing: Standing,
) -> _Observer:
    """What the agent brings to every edge it judges this round."""
    me, broker, view = ctx.name, standing.broker, ctx.view
    favs, index = view.favs(), view.index
    credence_of = lens.credence
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
            credence = credence_of(speaker, favs[index[speaker]])
            if credence > 0 or (credence < 0 and stance != "oppose"):
                said_of.setdefault(target, []).append((speaker, stance, credence))
    climate = attacks / spoken if spoken else 0.0
    _, warmth, thin, responsive = TEMPER[ctx.persona.archetype]
    # a grudge not renewed this round fades: fastest for peacemakers in a calm room
    calm = FORGIVE * PEACE[ctx.persona.archetype] * (1.0 - climate)
    return _Observer(me, favs, index, standing, warmth, thin, responsive, calm, said_of)


def relation_judgements(
    ctx: AgentContext,
    triggers: dict[str, list[ReadAct]],
    lens: PriorLens,
    heard: Sequence[ReadAct],
    standing: Standing = UNAFFILIATED,
) -> dict[str, Edge]:
    """U_R by rule, one mechanism a function: my own acts, direct support and attack
    (peace, betrayal), balance through third parties, words to the room, regard for
    whoever told me a fact I did not know, Heider's hearsay and fading grudges, with
    in-group favoritism throughout. ``triggers`` and ``heard`` (``ctx.heard``) are read
    (:func:`~engine.core.rules.read_acts`)."""
    o = _observer(ctx, triggers, lens, heard, standing)
    me, favs, index, attitude = o.me, o.favs, o.index, lens.attitude
    codes = ctx.view.codes()
    broker, outgroup, news = standing.broker, standing.outgroup, standing.news
    opening = f"Round {ctx.round}: "
    present = _present(opening)
    judged: dict[str, Edge] = {}
    for other, acts in triggers.items():  # once per edge
        at = index[other]
        fav, status = favs[at], STATUSES[codes[at]]
        warm = ATTITUDE_LENS * attitude[other] if other in attitude else 0.0
        rival_side = other in outgroup
        bias = OUTGROUP if rival_side else 0.0  # in-group favoritism (Krackhardt & Stern)
        feud = status in NEGATIVE
        e = _Edge(other, fav, feud, warm, bias)
        attacked_me = feud and any(t == me and s == "oppose" for _, _, t, s, _ in acts)
        for _, speaker, target, stance, mode in acts:
            if speaker == me:
                _my_act(e, stance, mode, attacked_me)
            elif target == me:
                _act_on_me(e, o, status, stance, mode)
            elif target in index and not broker:
                _act_on_a_third(e, o, target, stance)
            elif stance == "neutral":
                _address(e, o, rival_side)
        if news:
            _informant(e, acts, news)
        _hearsay(e, o)
        if feud and e.override is None and not attacked_me:
            _grudge_fades(e, o, acts, rival_side)
        if e.notes:
            importance, note = max(e.notes)
            summary = f"{opening}{note}."
        else:
            importance, summary = 1, present[other]
        delta = e.delta
        rounded = ROUNDED_4[delta] if delta else delta  # zeros: a table never holds them
        judged[other] = (rounded, e.override, summary, importance)
    return judged


def need_deltas(
    ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens, mood: float | None = None
) -> dict[str, float]:
    """Need deltas from being attacked, supported, heard or silent, plus slow recovery;
    ``mood`` is :func:`emotion_delta` of the same arguments when the caller has it."""
    me = ctx.name
    needs = ctx.view.needs
    deltas = dict.fromkeys(needs, 0.0)

    def bump(weight: float = 1.0, **changes: float) -> None:
        for need, change in changes.items():
            deltas[need] += weight * change

    for need, change in event_needs(ctx).items():  # what happens to (or around) the agent
        deltas[need] += change
    spoke, quarrels = False, 0.0  # quarrels: attacks among others, by credit given
    trusting = bool(lens.trust)
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        weight = lens.weight(speaker) if trusting else 1.0
        if speaker == me:
            spoke = True
            bump(**SPEAKING_NEEDS)
            if stance == "oppose":
                bump(**ATTACKING_NEEDS)
        elif target != me:
            if stance == "oppose":
                quarrels += weight
        elif stance == "oppose":
            bump(weight, **ATTACKED_NEEDS)
        elif stance == "support":
            bump(weight, **BACKED_NEEDS)
        else:
            bump(
                weight,
                support_system=CONFIDED_SUPPORT if mode is Mode.PRIVATE else ADDRESSED_SUPPORT,
            )
    deltas["emotional_safety"] -= QUARREL_SAFETY * quarrels
    if not spoke:
        bump(**SILENT_NEEDS)
    if mood is None:
        mood = emotion_delta(ctx, observed, lens)
    bump(
        emotional_wellbeing=MOOD_WELLBEING * mood,
        emotional_stability=-MOOD_STABILITY * abs(mood),
        sense_of_meaning=MOOD_MEANING * mood,
    )
    resilience = needs["psychological_resilience"].current / NEED_MAX
    for need, value in needs.items():
        deltas[need] += RECOVERY * resilience * (value.expected - value.current)
    return {n: round(d, 4) for n, d in deltas.items() if d}  # seldom seen before: no table


def emotion_delta(ctx: AgentContext, observed: Sequence[ReadAct], lens: PriorLens) -> float:
    """The rule behind U_S; the needs judge reuses it for affect-linked needs. A trusted
    peer's acts weigh more, a distrusted peer's less (Trust priors)."""
    me = ctx.name
    _, _, thin, responsive = TEMPER[ctx.persona.archetype]
    view = ctx.view
    favs, index = view.favs(), view.index
    delta = event_mood(ctx)
    trust, public = lens.trust, Mode.PUBLIC
    for _, speaker, target, stance, mode in observed:  # once per act an agent observed
        if speaker == me:
            delta += -OWN_ACT_MOOD if stance == "oppose" else OWN_ACT_MOOD
            continue
        if target == me:
            if stance == "neutral":
                continue
            felt = DIRECT_MOOD * responsive if stance == "support" else -DIRECT_MOOD * thin
            if stance == "oppose" and mode is public:
                felt *= PUBLIC_SHAME
        elif target in index and favs[index[target]] >= FRIEND_AT:
            felt = FRIEND_FEELING[stance]
        elif stance == "oppose":
            felt = -OVERHEARD_ATTACK
        else:
            continue
        delta += felt * (1.0 + TRUST_WEIGHT * trust.get(speaker, 0)) if trust else felt
    delta += (MOOD_REST - view.emotion) * MOOD_PULL
    return round(delta, 4)
