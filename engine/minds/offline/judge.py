"""Offline judgements of U_S and the needs by rule, and what U_R (:mod:`.edges`) reads of an
agent's standing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, compress
from operator import is_
from typing import TYPE_CHECKING, Any, NamedTuple

from ...core.needs import DEFAULT_CURRENT, NEED_MAX, NEED_MIN
from ...core.rounding import rounded
from ...core.rules import ReadAct
from ...core.scenario import AgentSpec
from ...core.state import Mode, Stance
from ..base import AgentContext, NeedRows
from .event_effects import event_mood, event_needs
from .lens import TRUST_WEIGHT, PriorLens
from .params import (
    ADDRESSED_SUPPORT,
    ATTACKED_NEEDS,
    ATTACKING_NEEDS,
    BACKED_NEEDS,
    CONFIDED_SUPPORT,
    CURRENT,
    DIRECT_MOOD,
    FRIEND_AT,
    FRIEND_FEELING,
    MOOD_MEANING,
    MOOD_STABILITY,
    MOOD_WELLBEING,
    OVERHEARD_ATTACK,
    OWN_ACT_MOOD,
    PUBLIC_SHAME,
    QUARREL_SAFETY,
    RECOVERY,
    SILENT_NEEDS,
    SPEAKING_NEEDS,
    TEMPER,
    Dynamics,
)

#: The need changes of each kind of act, as pairs (weighed by the credit a Trust prior gives
#: the speaker where it says so).
_SPEAKING = tuple(SPEAKING_NEEDS.items())
_ATTACKING = tuple(ATTACKING_NEEDS.items())
_ATTACKED = tuple(ATTACKED_NEEDS.items())
_BACKED = tuple(BACKED_NEEDS.items())
_SILENT = tuple(SILENT_NEEDS.items())

if TYPE_CHECKING:
    import numpy as np

#: Stances as codes (the judges' arrays), and back.
SUPPORT, OPPOSE, NEUTRAL = 0, 1, 2
STANCE: dict[Stance, int] = {"support": SUPPORT, "oppose": OPPOSE, "neutral": NEUTRAL}
STANCE_OF: tuple[Stance, ...] = ("support", "oppose", "neutral")

VERB: dict[Stance, str] = {"support": "backed", "oppose": "challenged", "neutral": "spoke with"}


class Standing(NamedTuple):
    """Where an agent stands in its scenario when it judges: the members of other factions,
    whether it is a broker (outside every faction of a factional scenario: it takes no side
    in others' quarrels), and the factual claims it has not yet heard (``news``)."""

    outgroup: frozenset[str] = frozenset()
    broker: bool = False
    news: tuple[str, ...] = ()


def need_deltas(
    ctx: AgentContext,
    observed: Sequence[ReadAct],
    lens: PriorLens,
    mood: float | None = None,
    dynamics: Dynamics = CURRENT,
) -> dict[str, float]:
    """Need deltas from being attacked, supported, heard or silent, plus slow recovery;
    ``mood`` is :func:`emotion_delta` of the same arguments when the caller has it."""
    if mood is None:
        mood = emotion_delta(ctx, observed, lens, dynamics)
    return Judged.of([ctx], observed, None, [lens], dynamics).needs([mood])[0]


def emotion_delta(
    ctx: AgentContext,
    observed: Sequence[ReadAct],
    lens: PriorLens,
    dynamics: Dynamics = CURRENT,
    jitter: np.ndarray | None = None,
) -> float:
    """The rule behind U_S; the needs judge reuses it for affect-linked needs. A trusted
    peer's acts weigh more, a distrusted peer's less (Trust priors). ``jitter``: the
    agent's draw of affective variability, as a one-element array (None: none)."""
    return Judged.of([ctx], observed, None, [lens], dynamics, jitter).moods()[0]


class Judged:
    """U_S and the needs judge of several agents at once, over a round's acts (``acts``,
    in the order spoken; ``heard[row, k]``: whether the row's agent observed act k); all
    agents in one state's columns.

    Each agent's terms are added in the order a loop over the acts it observed adds them
    (U_S: its events' mood, then each act; the needs: its events, each act, the quarrels it
    saw, silence, its mood, recovery), so every float is the same as such a loop's."""

    __slots__ = (
        "acts",
        "ctxs",
        "dynamics",
        "heard",
        "jitter",
        "lenses",
        "me",
        "personas",
        "rows",
        "speaker",
        "stance",
        "target",
        "to_me",
        "trust",
    )

    def __init__(
        self,
        ctxs: Sequence[AgentContext],
        acts: Sequence[ReadAct],
        heard: np.ndarray,
        lenses: Sequence[PriorLens],
        dynamics: Dynamics = CURRENT,
        jitter: np.ndarray | None = None,
    ) -> None:
        """``jitter``: each row's draw of affective variability (None: none)."""
        import numpy as np

        self.ctxs, self.acts, self.heard, self.lenses = ctxs, acts, heard, lenses
        self.dynamics, self.jitter = dynamics, jitter
        self.personas = [c.persona for c in ctxs]
        index = ctxs[0].view.index
        self.rows = np.array([c.view.row for c in ctxs], np.intp)
        #: Each act's speaker and target (-1: everyone, nobody or not an agent), stance.
        self.speaker = np.array([index.get(a[1], -1) for a in acts], np.intp)
        self.target = np.array([index.get(a[2] or "", -1) for a in acts], np.intp)
        self.stance = np.array([STANCE[a[3]] for a in acts], np.int8)
        #: Whether the row's agent made act k, and whether act k was aimed at it.
        self.me = self.rows[:, None] == self.speaker[None, :]
        self.to_me = self.rows[:, None] == self.target[None, :]
        #: The credit each row gives each act's speaker (1 without a Trust prior).
        self.trust = np.ones((len(ctxs), len(acts)))
        for row, lens in enumerate(lenses):
            if lens.trust:
                signs = [lens.trust.get(a[1], 0) for a in acts]
                self.trust[row] = [1.0 + TRUST_WEIGHT * sign for sign in signs]

    @classmethod
    def of(
        cls,
        ctxs: Sequence[AgentContext],
        acts: Sequence[ReadAct],
        heard: np.ndarray | None,
        lenses: Sequence[PriorLens],
        dynamics: Dynamics = CURRENT,
        jitter: np.ndarray | None = None,
    ) -> Judged:
        """``heard`` None: every agent observed every act."""
        import numpy as np

        if heard is None:
            heard = np.ones((len(ctxs), len(acts)), bool)
        return cls(ctxs, acts, heard, lenses, dynamics, jitter)

    def moods(self) -> list[float]:
        """U_S of each row, rounded to 4 places."""
        import numpy as np

        ctxs, rows, stance = self.ctxs, self.rows, self.stance
        r, count = len(ctxs), len(self.acts)
        personas = self.personas
        temper = _fixed(personas, "temper", lambda: _tempers(personas))
        thin, responsive = temper[:, 2:3], temper[:, 3:4]
        me, to_me = self.me, self.to_me
        oppose, neutral = stance == OPPOSE, stance == NEUTRAL
        public = np.array([a[4] is Mode.PUBLIC for a in self.acts], bool).reshape(count)
        direct = np.where(stance == SUPPORT, DIRECT_MOOD * responsive, -DIRECT_MOOD * thin)
        direct = np.where(oppose & public, direct * PUBLIC_SHAME, direct)
        fav = ctxs[0].view.columns.fav[rows][:, np.maximum(self.target, 0)]
        friend = (self.target >= 0) & (fav >= FRIEND_AT)
        feeling = np.array([FRIEND_FEELING[STANCE_OF[k]] for k in stance.tolist()])
        felt = np.where(to_me, direct, np.where(friend, feeling, -OVERHEARD_ATTACK))
        felt = np.where(self.trusting()[:, None], felt * self.trust, felt)
        counts = self.heard & ~me & np.where(to_me, ~neutral, friend | oppose)
        dyn = self.dynamics
        if dyn.attention:  # a crowd weighs less than the sum of its voices
            felt = felt * attended(counts, dyn)[:, None]
        terms = np.empty((r, count + 1))
        terms[:, 0] = [event_mood(c) if c.events else 0.0 for c in ctxs]
        own = np.where(oppose, -OWN_ACT_MOOD, OWN_ACT_MOOD)
        terms[:, 1:] = np.where(self.heard & me, own, np.where(counts, felt, 0.0))
        delta = np.add.accumulate(terms, axis=1)[:, -1]  # term by term, in order
        emotion = np.array(ctxs[0].view.columns.emotion)[rows]
        if self.jitter is not None and dyn.bounded_variability:
            delta = delta + self.jitter
        if dyn.bound:  # a change shrinks near the bound it heads for
            delta = delta * np.minimum(np.where(delta > 0, 1.0 - emotion, emotion) / dyn.bound, 1.0)
        if self.jitter is not None and not dyn.bounded_variability:
            delta = delta + self.jitter
        rest = _fixed(personas, ("rest", dyn), lambda: _resting(personas, thin, dyn))
        rate = dyn.adaptation / thin[:, 0] if dyn.by_temper else dyn.adaptation
        delta = delta + (rest - emotion) * rate  # hedonic adaptation
        return rounded(delta, 4).tolist()

    def trusting(self) -> np.ndarray:
        """Whether each row has a Trust prior."""
        import numpy as np

        return np.array([bool(lens.trust) for lens in self.lenses], bool)

    def needs(self, moods: Sequence[float]) -> Sequence[dict[str, float]]:
        """Each row's need deltas (those not 0, rounded to 4 places), given its U_S: a
        :class:`~..base.NeedRows` where every row holds the needs in one order."""
        import numpy as np

        ctxs, rows, heard = self.ctxs, self.rows, self.heard
        names = list(ctxs[0].view.needs)
        col = {need: k for k, need in enumerate(names)}
        deltas = [[0.0] * len(names) for _ in ctxs]
        for row, ctx in enumerate(ctxs):  # what happens to (or around) the agent
            if ctx.events:
                for need, change in event_needs(ctx).items():
                    deltas[row][col[need]] += change
        row_of = {agent: row for row, agent in enumerate(rows.tolist())}
        trust = self.trust.tolist() if any(lens.trust for lens in self.lenses) else None
        dyn = self.dynamics
        aimed = attended(heard & self.to_me & ~self.me, dyn).tolist() if dyn.attention else None
        stances = self.stance.tolist()
        speaking, attacking = _cols(col, _SPEAKING), _cols(col, _ATTACKING)
        attacked, backed = _cols(col, _ATTACKED), _cols(col, _BACKED)
        acts = zip(self.speaker.tolist(), self.target.tolist(), strict=True)
        for k, (speaker, target) in enumerate(acts):  # an act moves its speaker and target
            said = row_of.get(speaker)
            if said is not None and heard[said, k]:
                mine = deltas[said]
                for c, change in speaking:
                    mine[c] += change
                if stances[k] == OPPOSE:
                    for c, change in attacking:
                        mine[c] += change
            told = row_of.get(target) if target != speaker else None
            if told is not None and heard[told, k]:
                mine, weight = deltas[told], trust[told][k] if trust else 1.0
                if aimed is not None:
                    weight *= aimed[told]
                if stances[k] == OPPOSE:
                    for c, change in attacked:
                        mine[c] += weight * change
                elif stances[k] == SUPPORT:
                    for c, change in backed:
                        mine[c] += weight * change
                else:
                    mode = self.acts[k][4]
                    support = CONFIDED_SUPPORT if mode is Mode.PRIVATE else ADDRESSED_SUPPORT
                    mine[col["support_system"]] += weight * support
        d = np.array(deltas).reshape(len(ctxs), len(names))
        me, to_me = self.me, self.to_me
        quarrel = heard & ~me & ~to_me & (self.stance == OPPOSE)
        weights = np.zeros((len(ctxs), len(self.acts) + 1))
        crowd = self.trust * attended(quarrel, dyn)[:, None] if dyn.attention else self.trust
        weights[:, 1:] = np.where(quarrel, crowd, 0.0)
        quarrels = np.add.accumulate(weights, axis=1)[:, -1]  # weight by weight, in order
        d[:, col["emotional_safety"]] -= QUARREL_SAFETY * quarrels
        silent = ~(heard & me).any(axis=1)
        for c, change in _cols(col, _SILENT):
            d[:, c] = np.where(silent, d[:, c] + change, d[:, c])
        mood = np.array(moods, float).reshape(len(ctxs))
        d[:, col["emotional_wellbeing"]] += MOOD_WELLBEING * mood
        d[:, col["emotional_stability"]] += -MOOD_STABILITY * np.abs(mood)
        d[:, col["sense_of_meaning"]] += MOOD_MEANING * mood
        # each agent's (current, expected) pairs, in the first agent's order of its needs
        order = tuple(names)
        same = [tuple(ctx.view.needs) == order for ctx in ctxs]
        pairs = (
            ctx.view.needs.values() if alike else [ctx.view.needs[n] for n in names]
            for ctx, alike in zip(ctxs, same, strict=True)
        )
        flat = chain.from_iterable(chain.from_iterable(pairs))
        levels = np.fromiter(flat, float, count=d.size * 2).reshape(*d.shape, 2)
        current, expected = levels[:, :, 0], levels[:, :, 1]
        resilience = current[:, col["psychological_resilience"]] / NEED_MAX
        if dyn.need_bound:  # a change shrinks near the bound it heads for
            room = np.where(d > 0, NEED_MAX - current, current - NEED_MIN)
            d *= np.minimum(room / dyn.need_bound, 1.0)
        if dyn.chronic_needs:  # toward the persona's chronic level
            personas = self.personas
            expected = _fixed(personas, ("chronic", order), lambda: _chronic(personas, order))
        d += RECOVERY * resilience[:, None] * (expected - current)
        if all(same):
            return NeedRows(names, rounded(d, 4), d != 0.0)
        kept, moved = rounded(d, 4).tolist(), (d != 0.0).tolist()
        return [
            dict(compress(zip(names, kept[row], strict=True), moved[row]))
            if alike
            else {n: kept[row][col[n]] for n in ctx.view.needs if moved[row][col[n]]}
            for row, (ctx, alike) in enumerate(zip(ctxs, same, strict=True))
        ]


def attended(sources: np.ndarray, dyn: Dynamics) -> np.ndarray:
    """The weight of each act of a row's ``sources`` (a row per agent, the acts that count
    as True): 1 up to ``dyn.attention`` of them; beyond, each of n weighs
    attention x (n / attention)**crowding / n (Latané's psychosocial law, ``Dynamics``)."""
    import numpy as np

    k = dyn.attention
    n = np.maximum(sources.sum(axis=1), k).astype(float)
    return k * (n / k) ** dyn.crowding / n


def _tempers(personas: Sequence[AgentSpec]) -> np.ndarray:
    """Each persona's temper (:data:`.params.TEMPER`), a row of four."""
    import numpy as np

    return np.array([TEMPER[p.archetype] for p in personas]).reshape(len(personas), 4)


def _chronic(personas: Sequence[AgentSpec], names: tuple[str, ...]) -> np.ndarray:
    """Each persona's starting level of each need of ``names``: its chronic one."""
    import numpy as np

    return np.array(
        [[p.needs[n].current if n in p.needs else DEFAULT_CURRENT for n in names] for p in personas]
    ).reshape(len(personas), len(names))


def _resting(personas: Sequence[AgentSpec], thin: np.ndarray, dyn: Dynamics) -> np.ndarray | float:
    """Each persona's resting emotion, which hedonic adaptation pulls toward (``thin``:
    their tempers' thin skins)."""
    import numpy as np

    rest = np.array([p.emotion for p in personas]) if dyn.rest is None else dyn.rest
    if dyn.temperament:  # a stable temperament sits higher, a neurotic one lower
        with np.errstate(divide="ignore", over="ignore"):  # a baseline at a bound stays
            odds = np.log(rest / (1.0 - rest)) + dyn.temperament * (1.0 - thin[:, 0])
            rest = 1.0 / (1.0 + np.exp(-odds))
    return rest


#: The personas of the agents judged last, and what :func:`_fixed` read of them.
_held: tuple[Sequence[AgentSpec], dict[object, Any]] = ((), {})


def _fixed(personas: Sequence[AgentSpec], key: object, make: Callable[[], Any]) -> Any:
    """``make()``, what the judges read of the ``personas`` alone (named by ``key``): made
    once while the same agents judge round after round."""
    global _held
    held, made = _held
    if len(held) != len(personas) or not all(map(is_, held, personas)):
        held, made = personas, {}
        _held = (held, made)
    if key not in made:
        made[key] = make()
    return made[key]


def _cols(col: dict[str, int], changes: tuple[tuple[str, float], ...]) -> list[tuple[int, float]]:
    return [(col[need], change) for need, change in changes]
