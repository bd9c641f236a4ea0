"""Social-fidelity metrics of Sociodrama Tab. 1 and App. D, computable at any round.

The seed's App. D text is cut after the reciprocity formula, so two definitions are ours:

* **E-I index**: mean favorability of cross-faction edges minus mean favorability of
  within-faction edges (range [-2, 2]; negative = in-group favoritism), over agents that
  belong to a faction.
* **Repair %**: among directed edges that *deteriorated* (their status turned rival or
  enemy after having been neutral or ally earlier in the run), the share whose status is
  neutral or ally again at the round measured.

Reciprocity is the double-entry Pearson correlation of the two directions of each dyad,
so it does not depend on which direction is listed first.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

from pydantic import BaseModel

from .scenario import Scenario, Status
from .state import WorldState

NEGATIVE = frozenset((Status.RIVAL, Status.ENEMY))


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


def mean_fav(state: WorldState) -> float:
    """Mean favorability over all N(N-1) directed edges."""
    favs = [r.fav for a in state.agents.values() for r in a.relations.values()]
    return statistics.fmean(favs) if favs else 0.0


def mean_emotion(state: WorldState) -> float:
    """Mean affective valence S over agents."""
    return statistics.fmean(a.emotion for a in state.agents.values())


def reciprocity(state: WorldState) -> float | None:
    """Pearson correlation of fav_ij with fav_ji over dyads (double-entry)."""
    names = list(state.agents)
    xs: list[float] = []
    ys: list[float] = []
    for i, j in itertools.combinations(names, 2):
        a, b = state.agents[i].relations[j].fav, state.agents[j].relations[i].fav
        xs += [a, b]
        ys += [b, a]
    if len(xs) < 4:
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def ei_index(state: WorldState, faction_of: dict[str, str]) -> float | None:
    """Mean cross-faction fav minus mean within-faction fav."""
    inside: list[float] = []
    outside: list[float] = []
    for i, agent in state.agents.items():
        if i not in faction_of:
            continue
        for j, rel in agent.relations.items():
            if j in faction_of:
                (inside if faction_of[i] == faction_of[j] else outside).append(rel.fav)
    if not inside or not outside:
        return None
    return statistics.fmean(outside) - statistics.fmean(inside)


def balance(state: WorldState) -> float | None:
    """Percentage of triads with an even number of negative dyads (Eq. 6).

    A dyad is negative when s_ij = (sigma_ij + sigma_ji) / 2 < 0, i.e. both directions
    are rival or enemy. Unbalanced triads (1 or 3 negative dyads) are counted from the
    negative-dyad graph: edges m, two-paths P and triangles T give exactly-2 = P - 3T and
    exactly-1 = m(N-2) - 2(P - 3T) - 3T.
    """
    names = list(state.agents)
    n = len(names)
    if n < 3:
        return None
    bit = {name: 1 << k for k, name in enumerate(names)}
    adj = dict.fromkeys(names, 0)
    edges = 0
    for i, j in itertools.combinations(names, 2):
        if (
            state.agents[i].relations[j].status in NEGATIVE
            and state.agents[j].relations[i].status in NEGATIVE
        ):
            adj[i] |= bit[j]
            adj[j] |= bit[i]
            edges += 1
    degrees = [adj[x].bit_count() for x in names]
    paths = sum(d * (d - 1) // 2 for d in degrees)
    triangles = (
        sum(
            (adj[i] & adj[j]).bit_count()
            for i, j in itertools.combinations(names, 2)
            if adj[i] & bit[j]
        )
        // 3
    )
    two = paths - 3 * triangles
    one = edges * (n - 2) - 2 * two - 3 * triangles
    total = n * (n - 1) * (n - 2) // 6
    return 100.0 * (total - one - triangles) / total


def repair_series(states: Sequence[WorldState]) -> list[float | None]:
    """Repair % at every state, in one pass over the run (see :func:`repair`)."""
    if not states:
        return []
    edges = [(i, j) for i, agent in states[0].agents.items() for j in agent.relations]
    was_positive = dict.fromkeys(edges, False)
    fell = dict.fromkeys(edges, False)
    series: list[float | None] = []
    for st in states:
        deteriorated = recovered = 0
        for edge in edges:
            negative = st.agents[edge[0]].relations[edge[1]].status in NEGATIVE
            if negative and was_positive[edge]:
                fell[edge] = True
            was_positive[edge] = was_positive[edge] or not negative
            if fell[edge]:
                deteriorated += 1
                recovered += not negative
        series.append(100.0 * recovered / deteriorated if deteriorated else None)
    return series


def repair(states: Sequence[WorldState]) -> float | None:
    """Percentage of deteriorated directed edges whose status recovered by the last state."""
    return repair_series(states)[-1] if states else None


def metrics_series(scenario: Scenario, states: Sequence[WorldState]) -> list[Metrics]:
    """The metrics at every state of a run (one pass for repair)."""
    return [
        _metrics(scenario, state, rep)
        for state, rep in zip(states, repair_series(states), strict=True)
    ]


def compute_metrics(scenario: Scenario, states: Sequence[WorldState]) -> Metrics:
    """All metrics at the last of ``states`` (states from round 0 onward)."""
    return _metrics(scenario, states[-1], repair(states))


def _metrics(scenario: Scenario, state: WorldState, repaired: float | None) -> Metrics:
    return Metrics(
        round=state.round,
        mean_fav=mean_fav(state),
        mean_emotion=mean_emotion(state),
        reciprocity=reciprocity(state),
        ei_index=ei_index(state, scenario.faction_of()),
        balance=balance(state),
        repair=repaired,
    )
