"""Percentile bootstrap of ratio statistics over resampling units, vectorised with numpy.

A *unit* (a debate question, a GovSim run) holds counts: its share of each statistic's
numerator and denominator. A statistic is the ratio of the numerator summed over the units
to the denominator summed over them, so a resample (units drawn with replacement) recomputes
every denominator, as Relational priors App. B.3 asks for CR and CCR, whose eligible sets
depend on which questions were drawn. Every resample is a row of draw counts ``W`` (how
often each unit was drawn), so the resampled sums are one matrix product, ``W @ counts``.

A resample in which a statistic's denominator is 0 gives NaN for that statistic; those
resamples are dropped from its percentiles and counted in :attr:`Interval.dropped`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from ..errors import SocialsimError

#: App. B.3 draws 100,000 resamples for every endpoint contrast.
RESAMPLES = 100_000
#: Draw counts made at once (rows x units): small enough to stay in cache, which measured
#: faster than one big matrix on 12 to 1000 units.
CHUNK = 1 << 16

#: Unit name -> part name -> count (e.g. question id -> {"consensus": 1, "disagree": 1}).
Units = Mapping[str, Mapping[str, float]]
#: Statistic name -> (numerator part, denominator part).
Ratios = Mapping[str, tuple[str, str]]


class Interval(BaseModel):
    """A statistic (or a difference of two) and its percentile bootstrap interval.

    ``estimate`` is computed on the units as observed; ``low``/``high`` are the percentiles
    of the resampled values at ``level``. None where the denominator is 0 on the data
    (estimate) or in every resample (interval). ``dropped`` counts the resamples whose
    denominator was 0, left out of the percentiles.
    """

    estimate: float | None
    low: float | None
    high: float | None
    units: int
    resamples: int
    dropped: int
    level: float


def _matrix(units: Units, names: Sequence[str], ratios: Ratios) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator counts as (units x statistics) arrays."""
    num = np.array([[units[u].get(ratios[s][0], 0.0) for s in ratios] for u in names], float)
    den = np.array([[units[u].get(ratios[s][1], 0.0) for s in ratios] for u in names], float)
    return num.reshape(len(names), len(ratios)), den.reshape(len(names), len(ratios))


def _draws(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """``rows`` resamples of ``n`` units with replacement, as draw counts (rows x n)."""
    picks = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
    counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n)
    return counts.astype(np.float64)  # a float matrix product is BLAS's, an int one is not


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _chunks(resamples: int, n: int) -> Iterator[int]:
    rows = max(1, CHUNK // max(n, 1))
    for start in range(0, resamples, rows):
        yield min(rows, resamples - start)


def _intervals(
    estimates: np.ndarray, values: np.ndarray, level: float, n_units: int
) -> list[Interval]:
    tail = (1.0 - level) / 2.0
    out = []
    for k, estimate in enumerate(estimates):
        column = values[:, k]
        kept = column[~np.isnan(column)]
        low = high = None
        if kept.size:
            low, high = (float(x) for x in np.quantile(kept, [tail, 1.0 - tail]))
        out.append(
            Interval(
                estimate=None if np.isnan(estimate) else float(estimate),
                low=low,
                high=high,
                units=n_units,
                resamples=len(column),
                dropped=int(column.size - kept.size),
                level=level,
            )
        )
    return out


def _check(resamples: int, level: float) -> None:
    if resamples < 1:
        raise SocialsimError(f"bootstrap: resamples must be at least 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise SocialsimError(f"bootstrap: level must be in (0, 1), got {level}")


def ratio_intervals(
    units: Units,
    ratios: Ratios,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Each statistic of ``ratios`` over ``units``, with its percentile interval; every
    statistic is computed on the same resamples. Reproducible for a seed."""
    _check(resamples, level)
    names = sorted(units)
    if not names:
        raise SocialsimError("bootstrap: no units")
    num, den = _matrix(units, names, ratios)
    rng = np.random.default_rng(seed)
    values = np.concatenate(
        [
            _ratio(w @ num, w @ den)
            for w in (_draws(rng, len(names), rows) for rows in _chunks(resamples, len(names)))
        ]
    )
    estimates = _ratio(num.sum(0), den.sum(0))
    return dict(zip(ratios, _intervals(estimates, values, level, len(names)), strict=True))


def ratio_contrasts(
    base: Units,
    other: Units,
    ratios: Ratios,
    *,
    paired: bool = True,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """``other`` minus ``base`` for each statistic of ``ratios``, with percentile intervals.

    Paired (App. B.3): the units both conditions have are resampled once and the same draw
    counts weight both, preserving the unit-by-unit pairing; ``Interval.units`` is the
    number of shared units. Unpaired (App. A.3): each condition's units are resampled on
    their own; ``Interval.units`` is the smaller condition's count. A resample is dropped
    for a statistic when either denominator is 0.
    """
    _check(resamples, level)
    if paired:
        shared = sorted(set(base) & set(other))
        if not shared:
            raise SocialsimError("bootstrap: the conditions share no units to pair")
        names_a = names_b = shared
    else:
        names_a, names_b = sorted(base), sorted(other)
        if not names_a or not names_b:
            raise SocialsimError("bootstrap: a condition has no units")
    num_a, den_a = _matrix(base, names_a, ratios)
    num_b, den_b = _matrix(other, names_b, ratios)
    rng = np.random.default_rng(seed)
    parts = []
    for rows in _chunks(resamples, len(names_a) + (0 if paired else len(names_b))):
        w_a = _draws(rng, len(names_a), rows)
        w_b = w_a if paired else _draws(rng, len(names_b), rows)
        parts.append(_ratio(w_b @ num_b, w_b @ den_b) - _ratio(w_a @ num_a, w_a @ den_a))
    estimates = _ratio(num_b.sum(0), den_b.sum(0)) - _ratio(num_a.sum(0), den_a.sum(0))
    n_units = len(names_a) if paired else min(len(names_a), len(names_b))
    intervals = _intervals(estimates, np.concatenate(parts), level, n_units)
    return dict(zip(ratios, intervals, strict=True))
