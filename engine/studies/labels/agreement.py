"""Agreement between raters and the judge, per kind of update (Sociodrama Sec. 5.2).

* Fleiss' kappa among the human raters, and again with the judge as one more rater
  (statsmodels), over the items every human labelled (Fleiss' kappa needs the same number
  of ratings per item);
* Krippendorff's alpha, nominal (``krippendorff``), over every item with two or more
  human labels (alpha allows missing labels);
* the judge's agreement with the human majority on items with a clear majority: at least
  ``majority`` humans chose the same direction (default: more than half of the raters,
  the paper's 7 of 13), and the judge-vs-majority confusion matrix;
* bootstrap 95% percentile intervals, resampling items with a seeded generator; the
  resampled statistics are computed for all replicates at once (numpy, the same formulas
  as the libraries', which the tests check).
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
from pydantic import BaseModel
from statsmodels.stats.inter_rater import fleiss_kappa

from .study import DIRECTIONS, JUDGE, Kind, Study

CODE = {d: k for k, d in enumerate(DIRECTIONS)}
STATISTICS = ("kappa_humans", "kappa_with_judge", "alpha", "agreement")


def label_matrix(study: Study, kind: Kind) -> tuple[list[str], list[str], np.ndarray]:
    """Item ids, human raters and the items x raters matrix of direction codes
    (:data:`CODE`; NaN where a rater gave no label)."""
    ids = [item.id for item in study.items if item.kind == kind]
    raters = sorted(r for r, labels in study.labels.items() if r != JUDGE and labels)
    matrix = np.full((len(ids), len(raters)), np.nan)
    for j, rater in enumerate(raters):
        labels = study.labels[rater]
        for i, item in enumerate(ids):
            if item in labels:
                matrix[i, j] = CODE[labels[item]]
    return ids, raters, matrix


def counts(matrix: np.ndarray) -> np.ndarray:
    """Items x categories: how many raters chose each direction (missing labels skipped)."""
    return np.stack([(matrix == c).sum(axis=1) for c in range(len(DIRECTIONS))], axis=1)


def fleiss_batch(table: np.ndarray) -> np.ndarray:
    """Fleiss' kappa of each of a batch of tables (... x items x categories, every item
    rated by the same number of raters)."""
    raters = table.sum(axis=-1)[..., :1]
    n_items = table.shape[-2]
    share = table.sum(axis=-2) / (n_items * raters)
    per_item = ((table**2).sum(axis=-1) - raters) / (raters * (raters - 1))
    chance = (share**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (per_item.mean(axis=-1) - chance) / (1 - chance)


def coincidences(table: np.ndarray) -> np.ndarray:
    """Each item's coincidence matrix (items x categories x categories) for Krippendorff's
    alpha; items with fewer than two labels contribute nothing."""
    m = table.sum(axis=1)
    pairs = table[:, :, None] * table[:, None, :] - np.einsum(
        "ic,cd->icd", table, np.eye(table.shape[1])
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((m >= 2)[:, None, None], pairs / (m - 1)[:, None, None], 0.0)


def alpha_batch(coinc: np.ndarray) -> np.ndarray:
    """Nominal Krippendorff's alpha from summed coincidences (... x categories x
    categories): 1 - (n - 1) * off-diagonal / (n^2 - sum n_c^2)."""
    n_c = coinc.sum(axis=-1)
    n = n_c.sum(axis=-1)
    off = coinc.sum(axis=(-1, -2)) - np.trace(coinc, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - (n - 1) * off / (n**2 - (n_c**2).sum(axis=-1))


def clear_majority(table: np.ndarray, majority: int) -> tuple[np.ndarray, np.ndarray]:
    """Which items have a clear majority (``majority`` or more humans agree, and no tie),
    and each item's most chosen direction."""
    top = table.max(axis=1)
    unique = (table == top[:, None]).sum(axis=1) == 1
    return (top >= majority) & unique, table.argmax(axis=1)


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


class Interval(BaseModel):
    low: float | None
    high: float | None


class KindReport(BaseModel):
    """The statistics for one kind of update."""

    kind: Kind
    items: int
    raters: int
    complete_items: int
    #: items with two or more human labels (what alpha is computed on)
    pairable_items: int
    kappa_humans: float | None
    kappa_with_judge: float | None
    alpha: float | None
    majority: int
    clear_items: int
    agreement: float | None
    #: rows: the judge's direction, columns: the human majority (order of DIRECTIONS).
    confusion: list[list[int]]
    intervals: dict[str, Interval]


def _interval(samples: np.ndarray) -> Interval:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return Interval(low=None, high=None)
    low, high = np.percentile(finite, [2.5, 97.5])
    return Interval(low=float(low), high=float(high))


def kind_report(
    study: Study, kind: Kind, *, majority: int | None = None, boots: int = 2000, seed: int = 0
) -> KindReport:
    """Every statistic for ``kind``: point values and bootstrap intervals (``boots``
    resamples of the items, seeded)."""
    ids, raters, matrix = label_matrix(study, kind)
    judge_of = {item.id: CODE[item.judge] for item in study.items}
    judge = np.array([judge_of[i] for i in ids], dtype=float)
    need = majority if majority is not None else len(raters) // 2 + 1
    humans = counts(matrix)
    complete = ~np.isnan(matrix).any(axis=1) if raters else np.zeros(len(ids), bool)
    with_judge = counts(np.column_stack([matrix, judge]))
    rng = np.random.default_rng(seed)

    def resample(n: int) -> np.ndarray:
        return rng.integers(0, n, size=(boots, n))

    stats: dict[str, float | None] = dict.fromkeys(STATISTICS)
    intervals = {s: Interval(low=None, high=None) for s in STATISTICS}
    if len(raters) >= 2 and complete.any():
        for key, table in (("kappa_humans", humans), ("kappa_with_judge", with_judge)):
            table = table[complete]
            stats[key] = _finite(fleiss_kappa(table, method="fleiss"))
            intervals[key] = _interval(fleiss_batch(table[resample(len(table))]))
    coinc = coincidences(humans)
    pairable = humans.sum(axis=1) >= 2
    if pairable.any():
        stats["alpha"] = _finite(
            krippendorff.alpha(
                value_counts=humans[pairable],
                value_domain=list(range(len(DIRECTIONS))),
                level_of_measurement="nominal",
            )
        )
        picked = coinc[pairable][resample(int(pairable.sum()))]
        intervals["alpha"] = _interval(alpha_batch(picked.sum(axis=1)))
    clear, top = clear_majority(humans, need)
    confusion = np.zeros((len(DIRECTIONS), len(DIRECTIONS)), dtype=int)
    np.add.at(confusion, (judge[clear].astype(int), top[clear]), 1)
    if clear.any():
        hits = (judge[clear] == top[clear]).astype(float)
        stats["agreement"] = float(hits.mean())
        intervals["agreement"] = _interval(hits[resample(len(hits))].mean(axis=1))
    return KindReport(
        kind=kind,
        items=len(ids),
        raters=len(raters),
        complete_items=int(complete.sum()),
        pairable_items=int(pairable.sum()),
        majority=need,
        clear_items=int(clear.sum()),
        confusion=confusion.tolist(),
        intervals=intervals,
        **stats,
    )


def report(
    study: Study, *, majority: int | None = None, boots: int = 2000, seed: int = 0
) -> list[KindReport]:
    """:func:`kind_report` for each kind the study has items of."""
    kinds = list(dict.fromkeys(item.kind for item in study.items))
    return [kind_report(study, k, majority=majority, boots=boots, seed=seed) for k in kinds]
