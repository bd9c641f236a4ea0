"""Offline decisions: the weighted candidate acts behind an agent's choice, where balance,
repair and escalation act on what it does."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...core.columns import edge_items
from ...core.scenario import Archetype
from ...core.state import ALL, Action, Mode, Stance
from ..base import AgentContext
from .lastround import LastRound
from .lens import ATTITUDE_WARMTH, INFLUENCE_PULL, PriorLens
from .params import (
    CALM_AGGRESSION,
    ESCALATION,
    FLIP,
    FOE_AT,
    FRIEND_AT,
    HEIDER_PULL,
    PEACE,
    REPAIR_PULL,
    TEMPER,
)

if TYPE_CHECKING:  # numpy is imported where options are weighed: reading saves never needs it
    import numpy as np

Option = tuple[float, Stance, str, Mode]
#: The acts toward one other agent, in the order they are weighed.
TOWARD: tuple[Stance, Stance, Stance] = ("oppose", "support", "neutral")


class Options:
    """Weighted candidate acts, in order: address the group, then up to three acts toward
    each other agent (:data:`TOWARD`: oppose, support, confide), then the influence ones.
    The acts toward others stay arrays; they are spelled out only when asked."""

    __slots__ = ("_first", "_mode", "_others", "_slots", "_tail", "_weights")

    def __init__(
        self,
        first: Option,
        others: Sequence[str],
        slots: np.ndarray,
        weights: np.ndarray,
        mode: Mode,
        tail: list[Option],
    ) -> None:
        """``slots``: the acts given toward ``others`` (``3k + kind``: kind of
        :data:`TOWARD` toward ``others[k]``), in order; ``weights``: theirs (floats)."""
        self._first, self._others, self._mode, self._tail = first, others, mode, tail
        self._slots, self._weights = slots, weights

    def __len__(self) -> int:
        return 1 + len(self._slots) + len(self._tail)

    def act(self, k: int) -> Option:
        """The ``k``-th act."""
        if k == 0:
            return self._first
        if k > len(self._slots):
            return self._tail[k - len(self._slots) - 1]
        other, kind = divmod(int(self._slots[k - 1]), 3)
        mode = self._mode if kind == 0 else Mode.PUBLIC if kind == 1 else Mode.PRIVATE
        return float(self._weights[k - 1]), TOWARD[kind], self._others[other], mode

    def as_list(self) -> list[Option]:
        """Every act, in order."""
        return [self.act(k) for k in range(len(self))]

    def weights(self) -> tuple[tuple[float], np.ndarray, list[float]]:
        """Every act's weight, in order, in three parts (joined by the caller: one join
        of every agent's weights is cheaper than one an agent)."""
        return (self._first[0],), self._weights, [w for w, *_ in self._tail]


def draws(options: Sequence[Options], chances: Sequence[float]) -> list[int]:
    """The act each of ``options`` draws by weight for its chance in [0, 1) (the last when
    rounding leaves the draw unspent), every row at once: the float arithmetic of a draw
    over a list, one add and one subtraction at a time, in order (``accumulate`` is
    sequential; the zeros that pad the shorter rows change no sum after them)."""
    import numpy as np

    if not options:
        return []
    count = len(options)
    lengths = np.array([len(o) for o in options])
    grid = np.zeros((count, 1 + int(lengths.max())))  # each row's pick, then weights
    flat = np.concatenate([part for o in options for part in o.weights()], dtype=float)
    starts = np.cumsum(lengths) - lengths
    row_of = np.repeat(np.arange(count), lengths)
    grid[row_of, 1 + np.arange(len(flat)) - starts[row_of]] = flat
    totals = np.add.accumulate(grid[:, 1:], axis=1)[np.arange(count), lengths - 1]
    grid[:, 0] = np.array(chances, float) * totals
    spent = np.subtract.accumulate(grid, axis=1)[:, 1:] <= 0
    first = spent.argmax(axis=1)
    return np.where(spent.any(axis=1), first, lengths - 1).tolist()


class Peers:
    """An agent's others, in the order of its relations, and their positions among the
    scenario's agents (``at``)."""

    __slots__ = ("at", "names")

    def __init__(self, names: Iterable[str], index: Mapping[str, int]) -> None:
        import numpy as np

        self.names = tuple(names)
        self.at = np.array([index[n] for n in self.names], dtype=np.intp)


class Deciders:
    """The agents who weigh candidate acts together (rows), with what their weighing reads
    beside their contexts, in arrays over the scenario's agents (columns): favorability,
    rival or enemy status, in-group bias (:data:`.params.OUTGROUP` toward another faction's
    members), brokers and prior lenses. The arrays are read only (they may be the state's
    own)."""

    __slots__ = ("bias", "brokers", "ctxs", "fav", "index", "lenses", "peers", "rivals")

    def __init__(
        self,
        ctxs: Sequence[AgentContext],
        index: Mapping[str, int],
        peers: Sequence[Peers],
        fav: np.ndarray,
        rivals: np.ndarray,
        bias: np.ndarray,
        brokers: Sequence[bool],
        lenses: Sequence[PriorLens],
    ) -> None:
        """``index``: every agent's column (its position among the scenario's agents)."""
        self.ctxs, self.index, self.peers = ctxs, index, peers
        self.fav, self.rivals, self.bias = fav, rivals, bias
        self.brokers, self.lenses = brokers, lenses


def candidates(who: Deciders, seen: LastRound) -> list[Options]:
    """Each row's weighted candidate actions: support friends, oppose foes, address the
    group, take sides in others' quarrels (balance), reach out to rivals (repair), follow
    or counter an influential peer's lead (Influence prior). The terms are weighed for
    every row and other agent at once."""
    import numpy as np

    ctxs, fav, bias = who.ctxs, who.fav, who.bias
    archs = [c.persona.archetype for c in ctxs]
    temper = np.array([TEMPER[a][:2] for a in archs]).reshape(len(ctxs), 2)
    aggression = temper[:, 0] * (CALM_AGGRESSION + ESCALATION * seen.climate)
    calm = np.minimum(1.0, 2.0 * np.array([c.view.emotion for c in ctxs]))
    peace = np.array([REPAIR_PULL * PEACE[a] for a in archs]) * calm * (1.0 - seen.climate)
    hostile = np.where(fav < FOE_AT + 0.15, (FOE_AT + 0.15 - fav) * 4.0, 0.0)
    friendly = np.where(fav > 0.1, (fav - 0.1) * 3.0, 0.0)
    brokers = np.array(who.brokers, dtype=bool)
    hit, hit_friends = seen.hit(fav, FRIEND_AT)
    # dense sums of the terms (adding 0.0 leaves these non-negative weights as they are)
    hostile += seen.attackers * 2.0
    hostile += (hit_friends & ~brokers[:, None]) * 1.5
    friendly += seen.supporters * 1.5
    friendly += (hit & (fav >= FRIEND_AT)) * 1.0
    for row in np.flatnonzero(brokers).tolist():  # outside every faction: both parties backed
        ctx, peers = ctxs[row], who.peers[row]
        quarrels = [a for a in _others_acts(ctx) if a.stance == "oppose"]
        mediate = {a.speaker for a in quarrels} | {a.target for a in quarrels if a.target}
        parties = [peers.at[k] for k, n in enumerate(peers.names) if n in mediate]
        friendly[row, parties] += REPAIR_PULL * PEACE[archs[row]] * calm[row]
    friendly += np.where(who.rivals, peace[:, None] * (1.0 - bias), 0.0)  # seed of repair
    # lean (Heider), then warmth (Attitude prior): + friendly, - hostile
    sides = np.where(brokers[:, None], 0.0, seen.sides(fav, FRIEND_AT))
    _lean(friendly, hostile, HEIDER_PULL * sides)
    if any(lens.attitude for lens in who.lenses):
        warm = np.zeros(fav.shape)
        for row, lens in enumerate(who.lenses):
            for other, sign in lens.attitude.items():
                if other in who.index:
                    warm[row, who.index[other]] = sign
        _lean(friendly, hostile, ATTITUDE_WARMTH * warm)
    confides = np.array([bool(c.persona.private_info or c.persona.evidence) for c in ctxs])
    given = np.stack(
        (hostile > 0, friendly > 0, (friendly > 0) & (fav >= 0.4) & confides[:, None]), axis=2
    )

    def weigh(rows: np.ndarray, cols: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """The weight of act ``kinds[k]`` of :data:`TOWARD` of row ``rows[k]`` toward
        agent ``cols[k]`` (cells read by their flat index: ``take`` is several times faster
        than indexing by row and column)."""
        cells = rows * fav.shape[1] + cols
        liked = friendly.ravel().take(cells)
        weights = np.where(kinds == 1, liked * temper[:, 1].take(rows), 0.5 * liked)
        at = np.flatnonzero(kinds == 0)
        r, c = rows.take(at), cells.take(at)
        weights[at] = hostile.ravel().take(c) * aggression.take(r) * (1.0 + bias.ravel().take(c))
        return weights

    options = []
    given_acts = _given(given, [peers.at for peers in who.peers], weigh)
    for row, (ctx, lens, peers) in enumerate(zip(ctxs, who.lenses, who.peers, strict=True)):
        arch, follow = archs[row], lens.influence
        first: Option = (1.6 if arch is Archetype.ANALYTICAL else 1.0, "neutral", ALL, Mode.PUBLIC)
        mode = Mode.PRIVATE if arch is Archetype.RESERVED else Mode.PUBLIC
        tail = _follow_options(ctx.name, _others_acts(ctx), follow) if follow else []
        slots, weights = given_acts[row]
        options.append(Options(first, peers.names, slots, weights, mode, tail))
    return options


def _given(
    given: np.ndarray,
    at: Sequence[np.ndarray],
    weigh: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each row's acts ``given`` toward its others (``at[row]``: their columns): their
    slots (``3k + kind`` toward the k-th other) and weights (``weigh``'s), read for every
    row at once when the rows have as many others; each row's are views of one array."""
    import numpy as np

    count = len(at)
    if not count:
        return []
    if all(len(a) == len(at[0]) for a in at):
        columns = np.stack(at)
        cells = (np.arange(count)[:, None] * given.shape[1] + columns).ravel()
        acts = edge_items(given).take(cells).view(bool)  # (each cell's acts at once)
        where, slots = np.divmod(np.flatnonzero(acts), 3 * columns.shape[1])  # (1-D: faster)
        cols = columns.ravel().take(where * columns.shape[1] + slots // 3)
    else:  # others of different lengths: row by row
        each = [given[row, a].ravel().nonzero()[0] for row, a in enumerate(at)]
        where = np.repeat(np.arange(count), [len(e) for e in each])
        slots = np.concatenate(each)
        cols = np.concatenate([a[e // 3] for a, e in zip(at, each, strict=True)]).astype(np.intp)
    weights = weigh(where, cols, slots % 3)
    ends = np.cumsum(np.bincount(where, minlength=count)).tolist()
    return [(slots[a:b], weights[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _others_acts(ctx: AgentContext) -> list[Action]:
    """The acts others spoke last round, as the agent saw them."""
    last = ctx.history[-1].actions if ctx.history else []
    return [a for a in last if a.order and a.speaker != ctx.name]


def _lean(friendly: np.ndarray, hostile: np.ndarray, pull: np.ndarray) -> None:
    """A pull toward (+, to ``friendly``) or against (-, to ``hostile``) each agent."""
    import numpy as np

    friendly += np.where(pull > 0, pull, 0.0)
    hostile -= np.where(pull < 0, pull, 0.0)


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


def intent(stance: Stance, target: str, mode: Mode) -> str:
    """The decision's intent in words."""
    if target == ALL:
        return "press my case to the whole group"
    if mode is Mode.PRIVATE and stance == "neutral":
        return f"confide in {target} privately"
    how = "publicly" if mode is Mode.PUBLIC else "privately"
    verb = "back" if stance == "support" else "challenge" if stance == "oppose" else "speak with"
    return f"{verb} {target} {how}"
