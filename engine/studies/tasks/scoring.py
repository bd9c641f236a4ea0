"""Task utilities computed by rule: Borda with ties, L1 to an expert ranking, Pareto."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

#: A ranking as tiers, best first; items in one tier are tied.
Tiers = list[list[str]]


def tiers_from_scores(items: Sequence[str], scores: dict[str, float]) -> Tiers:
    """Group items into tiers of equal score, highest first (tier order: item order)."""
    order = sorted(items, key=lambda i: -scores.get(i, 0.0))
    tiers: Tiers = []
    for _, group in itertools.groupby(order, key=lambda i: scores.get(i, 0.0)):
        tiers.append(list(group))
    return tiers


def borda_points(tiers: Tiers, n: int) -> dict[str, float]:
    """Borda points n-1 .. 0; tied items share the mean of the positions they span."""
    points: dict[str, float] = {}
    position = 0
    for tier in tiers:
        spanned = [n - 1 - p for p in range(position, position + len(tier))]
        for item in tier:
            points[item] = sum(spanned) / len(spanned)
        position += len(tier)
    return points


def borda(rankings: Sequence[Tiers], items: Sequence[str]) -> list[str]:
    """The team ranking: items by total Borda points; equal totals keep item order."""
    totals = dict.fromkeys(items, 0.0)
    for tiers in rankings:
        for item, p in borda_points(tiers, len(items)).items():
            totals[item] += p
    return sorted(items, key=lambda i: -totals[i])


def l1_distance(ranking: Sequence[str], expert: Sequence[str]) -> int:
    """Sum over items of |position in ranking - position in the expert ranking|."""
    where = {item: k for k, item in enumerate(ranking)}
    return sum(abs(where[item] - k) for k, item in enumerate(expert))


Agreement = tuple[int, ...]


def agreements(n_issues: int, n_options: int = 3) -> list[Agreement]:
    """Every package: one option index per issue (3^5 = 243 for the negotiation)."""
    return list(itertools.product(range(n_options), repeat=n_issues))


def package_score(table: Sequence[Sequence[float]], agreement: Agreement) -> float:
    """One agent's total for a package; ``table[i][o]`` scores option o of issue i."""
    return sum(table[i][o] for i, o in enumerate(agreement))


def pareto_frontier(tables: Sequence[Sequence[Sequence[float]]]) -> set[Agreement]:
    """Packages no other package weakly improves for all agents and strictly for one."""
    packages = agreements(len(tables[0]), len(tables[0][0]))
    scored = [(a, tuple(package_score(t, a) for t in tables)) for a in packages]
    frontier = set()
    for a, sa in scored:
        dominated = any(
            all(x >= y for x, y in zip(sb, sa, strict=True)) and sb != sa for _, sb in scored
        )
        if not dominated:
            frontier.add(a)
    return frontier
