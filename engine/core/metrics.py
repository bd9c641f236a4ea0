"""Social-fidelity metrics of Sociodrama Tab. 1 and App. D, computable at any round.

App. D defines Fav, S and balance (Eq. 6); its text is cut inside the reciprocity formula,
so the rest is read from Tab. 1, its glosses and Sec. 5.2:

* **Reciprocity**: Pearson correlation of fav_ij with fav_ji. The paper correlates the two
  directions of the N(N-1)/2 dyads listed as i < j, which depends on the agents' order; we
  enter every dyad twice (double-entry), so the order does not matter. Undefined (``None``)
  below two dyads and when all favorabilities are equal (within 1e-9): a correlation of a
  constant is 0/0, and rounding must not turn it into 1.0.
* **E-I index**: Tab. 1 glosses it "contrast in mean favorability across and within
  factions" and the polarization regularity cites Krackhardt & Stern (1988), whose E-I
  index is (E - I) / (E + I). Tab. 1 reports -2.25 for Demolition, a mean over 30
  episodes: no index bounded in [-2, 2] can average there, which rules out the plain
  difference of the two means (our former definition, kept as :func:`ei_contrast`), E-I on
  counts of positive ties ([-1, 1]) and any other bounded contrast. Taking E and I as
  summed favorabilities makes the index depend on faction sizes: in Hospital and Tavern
  (two pairs and one outsider: 8 cross, 4 within edges) equal favorability everywhere gives
  +1/3, whereas Tab. 1 reports -0.10 for Hospital, the warmest scenario. We therefore take
  E and I as the mean favorability of cross- and within-faction edges among agents in a
  faction: ``(E - I) / (E + I)``. It is 0 for equal means and lies in [-1, 1] when both
  are positive, but is unbounded as E + I falls to 0, which is how an average can reach
  -2.25. Where E + I <= 0 the sign no longer tells which side is favoured (E = -0.6,
  I = -0.2 gives +0.5), so the index is undefined there; App. D does not say what the
  paper did in that case.
* **Repair %**: Tab. 1 "% of deteriorated relationships recovered by the final round";
  Sec. 5.2 "relationships that become rival or enemy recover to neutral or ally". A
  directed edge deteriorated when its status turned rival or enemy after having been
  neutral or ally earlier in the run (one already hostile at round 0 has not); it is
  repaired when neutral or ally at the round measured. App. D pools repair across episodes
  from edge counts: :func:`repair_counts` gives them.

A state is read into an :class:`Edges` view (the favorability matrix and bit masks of
hostile edges): the engine's own states straight from their columns
(:class:`~engine.core.columns.StateColumns`, :func:`round_metrics`), a
:class:`~engine.core.state.WorldState` once while it lives at the same round. Mean
favorability, reciprocity and the E-I index take their terms from the matrix with numpy and
sum them exactly in any order (``math.fsum``'s sum, :mod:`.exactsum`): the values are
bit-for-bit those of the plain definitions over lists. Balance and repair count on bit masks.
"""

from __future__ import annotations

import math
import statistics
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from pydantic import BaseModel

from .exactsum import exact_sum
from .scenario import Scenario, Status
from .state import WorldState

if TYPE_CHECKING:  # numpy is imported where a metric is computed: reading saves never needs it
    import numpy as np

    from .columns import StateColumns

NEGATIVE = frozenset((Status.RIVAL, Status.ENEMY))
CONSTANT_WITHIN = 1e-9


class Metrics(BaseModel):
    """One round's metrics; ``None`` where a metric is undefined (too few agents, ...)."""

    round: int
    mean_fav: float
    mean_emotion: float
    reciprocity: float | None
    ei_index: float | None
    balance: float | None
    repair: float | None

    def as_row(self) -> dict[str, float | None]:
        """Metric name to value, without the round."""
        return self.model_dump(exclude={"round"})


#: Each metric's unit and scale (``metrics.csv``'s ``unit`` column): no commas, so the
#: column needs no quoting.
METRIC_UNITS = {
    "mean_fav": "fav (-1..1)",
    "mean_emotion": "S (0..1)",
    "reciprocity": "Pearson r (-1..1)",
    "ei_index": "ratio (E-I)/(E+I) (unbounded)",
    "balance": "percent of triads balanced (0..100)",
    "repair": "percent of deteriorated edges repaired (0..100)",
}


@dataclass(frozen=True, slots=True)
class Edges:
    """A state's directed edges, agents in the state's order: the matrix ``fav[i, j]`` (0.0
    on the diagonal) and ``hostile[i]``, the bit mask of the agents i regards as rival or
    enemy."""

    round: int
    names: list[str]
    fav: np.ndarray
    hostile: list[int]
    #: ``hostile`` as a boolean matrix (``[i, j]``), when it is at hand.
    matrix: np.ndarray | None = None

    @classmethod
    def of(cls, state: WorldState) -> Edges:
        names = list(state.agents)
        n = len(names)
        index = {name: k for k, name in enumerate(names)}
        rows = [[0.0] * n for _ in names]
        hostile = []
        for row, agent in zip(rows, state.agents.values(), strict=True):
            mask = 0
            for other, rel in agent.relations.items():
                k = index[other]
                row[k] = rel.fav
                if rel.status in NEGATIVE:
                    mask |= 1 << k
            hostile.append(mask)
        import numpy as np

        fav = np.array(rows, dtype=float).reshape(n, n)
        return cls(state.round, names, fav, hostile)

    def hostile_rows(self, rows: Sequence[int]) -> np.ndarray:
        """``hostile`` of agents ``rows`` as a boolean matrix (``[row, j]``)."""
        import numpy as np

        n = len(self.names)
        size = (n + 7) // 8
        raw = b"".join(self.hostile[i].to_bytes(size, "little") for i in rows)
        table = np.frombuffer(raw, dtype=np.uint8).reshape(len(rows), size)
        return np.unpackbits(table, axis=1, count=n, bitorder="little").astype(bool)

    @classmethod
    def of_columns(cls, columns: StateColumns) -> Edges:
        """The view of a state held as columns (read, not copied: columns never change)."""
        import numpy as np

        matrix = columns.hostile()
        packed = np.packbits(matrix, axis=1, bitorder="little")
        hostile = [int.from_bytes(row.tobytes(), "little") for row in packed]
        return cls(columns.round, columns.names, columns.fav, hostile, matrix)


_VIEWS: dict[int, tuple[weakref.ref[WorldState], Edges]] = {}


def _held(state: WorldState) -> Edges | None:
    hit = _VIEWS.get(id(state))
    if hit is not None and hit[0]() is state and hit[1].round == state.round:
        return hit[1]
    return None


def _keep(state: WorldState, view: Edges) -> Edges:
    key = id(state)
    _VIEWS[key] = (weakref.ref(state, lambda _: _VIEWS.pop(key, None)), view)
    return view


def favorability(state: WorldState) -> Edges:
    """The state's :class:`Edges`, read once while the state lives at the same round."""
    held = _held(state)
    return held if held is not None else _keep(state, Edges.of(state))


def mean_fav(state: WorldState) -> float:
    """Mean favorability over all N(N-1) directed edges."""
    return _mean_fav(favorability(state))


def mean_emotion(state: WorldState) -> float:
    """Mean affective valence S over agents."""
    return statistics.fmean(a.emotion for a in state.agents.values())


def reciprocity(state: WorldState) -> float | None:
    """Pearson correlation of fav_ij with fav_ji over dyads (double-entry)."""
    return _reciprocity(favorability(state))


def ei_index(state: WorldState, faction_of: dict[str, str]) -> float | None:
    """(E - I) / (E + I) of the mean cross-faction (E) and within-faction (I) favorability."""
    return _ei_index(_faction_means(favorability(state), faction_of))


def ei_contrast(state: WorldState, faction_of: dict[str, str]) -> float | None:
    """Mean cross-faction fav minus mean within-faction fav, in [-2, 2]."""
    means = _faction_means(favorability(state), faction_of)
    return None if means is None else means[0] - means[1]


def balance(state: WorldState) -> float | None:
    """Percentage of triads with an even number of negative dyads (Eq. 6)."""
    return _balance(favorability(state))


def repair_counts(states: Sequence[WorldState]) -> tuple[int, int]:
    """(repaired, deteriorated) directed edges at the last state, for pooling over runs."""
    return _repair_counts([favorability(s).hostile for s in states])[-1] if states else (0, 0)


def repair_series(states: Sequence[WorldState]) -> list[float | None]:
    """Repair % at every state, in one pass over the run."""
    return [_percent(*c) for c in _repair_counts([favorability(s).hostile for s in states])]


def repair(states: Sequence[WorldState]) -> float | None:
    """Percentage of deteriorated directed edges whose status recovered by the last state."""
    return _percent(*repair_counts(states))


def metrics_series(scenario: Scenario, states: Sequence[WorldState]) -> list[Metrics]:
    """The metrics at every state of a run (each state read once)."""
    views = [favorability(s) for s in states]
    counts = _repair_counts([v.hostile for v in views])
    return [
        _metrics(scenario, state, view, _percent(*c))
        for state, view, c in zip(states, views, counts, strict=True)
    ]


def compute_metrics(scenario: Scenario, states: Sequence[WorldState]) -> Metrics:
    """All metrics at the last of ``states`` (states from round 0 onward)."""
    return _metrics(scenario, states[-1], favorability(states[-1]), repair(states))


def _metrics(
    scenario: Scenario, state: WorldState, edges: Edges, repaired: float | None
) -> Metrics:
    total = _fav_sum(edges)
    return Metrics(
        round=state.round,
        mean_fav=_mean_fav(edges, total),
        mean_emotion=mean_emotion(state),
        reciprocity=_reciprocity(edges, total),
        ei_index=_ei_index(_faction_means(edges, scenario.faction_of())),
        balance=_balance(edges),
        repair=repaired,
    )


def _fav_sum(edges: Edges) -> float:
    """The exact sum of every edge's favorability (the diagonal's zeros leave it as it is)."""
    return exact_sum(edges.fav)


def _mean_fav(edges: Edges, total: float | None = None) -> float:
    """Mean favorability (``total``: :func:`_fav_sum`, when it is at hand)."""
    n = len(edges.names)
    if n < 2:
        return 0.0
    return (_fav_sum(edges) if total is None else total) / (n * (n - 1))


@cache
def _upper(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions (i, j) above the diagonal of an n x n matrix (shared: read only)."""
    import numpy as np

    return np.triu_indices(n, 1)


def _reciprocity(edges: Edges, total: float | None = None) -> float | None:
    """Pearson's r of (fav_ij, fav_ji) over every ordered pair i != j, as
    ``statistics.correlation`` computes it (means and sums by ``fsum``). Both series hold
    the same values, so they share their mean (that of :func:`_mean_fav`) and sum of
    squares, and a dyad's two entries give the same product: the sums are taken once, over
    each dyad once where they can."""
    import numpy as np

    upper = _upper(len(edges.names))
    ij, ji = edges.fav[upper], edges.fav.T[upper]
    xs = np.concatenate((ij, ji))
    if len(xs) < 4 or xs.max() - xs.min() <= CONSTANT_WITHIN:
        return None
    mean = _mean_fav(edges, total)
    sxy = 2.0 * exact_sum((ij - mean) * (ji - mean))
    sxx = exact_sum(np.square(xs - mean))
    r = sxy / math.sqrt(sxx * sxx)
    return max(-1.0, min(1.0, r))


def _faction_means(edges: Edges, faction_of: dict[str, str]) -> tuple[float, float] | None:
    """(mean cross-faction fav, mean within-faction fav), or None without both kinds."""
    import numpy as np

    member = [k for k, n in enumerate(edges.names) if n in faction_of]
    codes: dict[str, int] = {}
    faction = np.array([codes.setdefault(faction_of[edges.names[k]], len(codes)) for k in member])
    everyone = len(member) == len(edges.names)
    fav = edges.fav if everyone else edges.fav[np.ix_(member, member)]
    same = faction[:, None] == faction[None, :]
    inside = int(np.count_nonzero(same)) - len(member)  # (less the diagonal)
    outside = same.size - inside - len(member)
    if not inside or not outside:
        return None
    # each kind's sum over the whole matrix, the other kind's edges (and the diagonal's
    # zeros) as zeros: the same exact sum as over its own edges alone
    across = exact_sum(np.where(same, 0.0, fav))
    return across / outside, exact_sum(np.where(same, fav, 0.0)) / inside


def _ei_index(means: tuple[float, float] | None) -> float | None:
    if means is None or means[0] + means[1] <= CONSTANT_WITHIN:
        return None
    e, i = means
    return (e - i) / (e + i)


def _balance(edges: Edges) -> float | None:
    """A dyad is negative when s_ij = (sigma_ij + sigma_ji) / 2 < 0, i.e. both directions
    are rival or enemy. Unbalanced triads (1 or 3 negative dyads) are counted from the
    negative-dyad graph: edges m, two-paths P and triangles T give exactly-2 = P - 3T and
    exactly-1 = m(N-2) - 2(P - 3T) - 3T."""
    import numpy as np

    n = len(edges.hostile)
    if n < 3:
        return None
    hostile = edges.matrix if edges.matrix is not None else edges.hostile_rows(range(n))
    negative = hostile & hostile.T
    degrees = np.count_nonzero(negative, axis=1).astype(np.int64)
    links = int(degrees.sum()) // 2
    paths = int((degrees * (degrees - 1) // 2).sum())
    triangles = _shared_neighbours(negative) // 3
    two = paths - 3 * triangles
    one = links * (n - 2) - 2 * two - 3 * triangles
    total = n * (n - 1) * (n - 2) // 6
    return 100.0 * (total - one - triangles) / total


#: Negative dyads whose shared neighbours are counted at once (bounds the temporary rows).
_DYADS_AT_ONCE = 1 << 15


def _shared_neighbours(negative: np.ndarray) -> int:
    """The common neighbours of every linked pair of the symmetric boolean matrix
    ``negative``, summed over each pair once: three times its triangles. Its rows are
    packed into 64-bit words; a pair's count is the popcount of their rows' AND."""
    import numpy as np

    packed = np.packbits(negative, axis=1, bitorder="little")
    width = -(-packed.shape[1] // 8) * 8
    words = np.zeros((len(packed), width), np.uint8)
    words[:, : packed.shape[1]] = packed
    rows = words.view(np.uint64)
    first, second = np.nonzero(np.triu(negative, 1))
    shared = 0
    for at in range(0, len(first), _DYADS_AT_ONCE):
        end = at + _DYADS_AT_ONCE
        both = rows[first[at:end]] & rows[second[at:end]]
        shared += int(np.bitwise_count(both).sum(dtype=np.int64))
    return shared


def _repair_counts(hostile_by_state: Sequence[list[int]]) -> list[tuple[int, int]]:
    """(repaired, deteriorated) at every state, from each state's hostile-edge masks."""
    if not hostile_by_state:
        return []
    counter = RepairCounter(len(hostile_by_state[0]))
    return [counter.add(hostile) for hostile in hostile_by_state]


class RepairCounter:
    """Repair counted state by state, so a run's metrics never need its earlier states:
    ``fell[i]`` masks the edges i -> j that deteriorated so far, ``was_friendly[i]`` those
    that were neutral or ally at some state so far (agents in the states' order)."""

    __slots__ = ("_everyone", "fell", "was_friendly")

    def __init__(
        self, n: int, fell: list[int] | None = None, was_friendly: list[int] | None = None
    ) -> None:
        self._everyone = [((1 << n) - 1) & ~(1 << i) for i in range(n)]
        self.fell = list(fell) if fell is not None else [0] * n
        self.was_friendly = list(was_friendly) if was_friendly is not None else [0] * n

    def add(self, hostile: list[int]) -> tuple[int, int]:
        """Take the next state's hostile masks; (repaired, deteriorated) at that state."""
        fell, was_friendly = self.fell, self.was_friendly
        repaired = deteriorated = 0
        for i, mask in enumerate(hostile):
            friendly = self._everyone[i] & ~mask
            fell[i] |= mask & was_friendly[i]
            was_friendly[i] |= friendly
            deteriorated += fell[i].bit_count()
            repaired += (fell[i] & friendly).bit_count()
        return repaired, deteriorated


def round_metrics(scenario: Scenario, state: StateColumns, counter: RepairCounter) -> Metrics:
    """The metrics of the next state of a run whose earlier states ``counter`` has taken
    (it takes this one too): what :func:`compute_metrics` gives over all the states. The
    state's :class:`~engine.core.state.WorldState`, if built, is given the same view."""
    edges = Edges.of_columns(state)
    if state.built is not None:
        _keep(state.built, edges)
    total = _fav_sum(edges)
    return Metrics(
        round=state.round,
        mean_fav=_mean_fav(edges, total),
        mean_emotion=statistics.fmean(state.emotion),
        reciprocity=_reciprocity(edges, total),
        ei_index=_ei_index(_faction_means(edges, scenario.faction_of())),
        balance=_balance(edges),
        repair=_percent(*counter.add(edges.hostile)),
    )


def _percent(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None
