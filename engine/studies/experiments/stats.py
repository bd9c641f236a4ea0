"""Seed-level statistics of a trial: each arm's mean with a 95% percentile bootstrap
interval, and each arm's paired difference from the control (the same seeds resampled for
both, so the shared prefix cancels). ``scipy.stats.bootstrap``, vectorised over the
resamples and over every outcome at once, with a fixed random state."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` seeds and its interval (None with fewer than two seeds)."""

    n: int
    mean: float
    low: float | None
    high: float | None


def _estimates(
    samples: tuple[np.ndarray, ...], statistic: object, resamples: int, seed: int
) -> list[Estimate]:
    """One estimate per row of the (outcomes × seeds) ``samples``; rows holding a NaN are
    computed alone over their finite seeds."""
    from scipy.stats import bootstrap

    first = samples[0]
    point = statistic(*samples, axis=-1)  # type: ignore[operator]
    complete = ~np.isnan(np.sum(samples, axis=0)).any(axis=-1)
    low = np.full(len(first), np.nan)
    high = np.full(len(first), np.nan)
    counts = np.full(len(first), first.shape[-1])
    if first.shape[-1] >= 2 and complete.any():
        ci = bootstrap(
            tuple(s[complete] for s in samples),
            statistic,
            paired=len(samples) > 1,
            vectorized=True,
            axis=-1,
            n_resamples=resamples,
            confidence_level=LEVEL,
            method="percentile",
            random_state=np.random.default_rng(seed),
        ).confidence_interval
        low[complete], high[complete] = ci.low, ci.high
    for row in np.flatnonzero(~complete):
        keep = ~np.isnan(np.sum([s[row] for s in samples], axis=0))
        counts[row] = int(keep.sum())
        if counts[row] == 0:
            continue
        (one,) = _estimates(
            tuple(s[row : row + 1, keep] for s in samples), statistic, resamples, seed
        )
        point[row], low[row], high[row] = one.mean, one.low, one.high
    return [
        Estimate(
            n=int(n),
            mean=float(p),
            low=None if np.isnan(lo) else float(lo),
            high=None if np.isnan(hi) else float(hi),
        )
        for n, p, lo, hi in zip(counts, point, low, high, strict=True)
    ]


def _mean(x: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x, axis=axis)


def _difference(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def mean_intervals(values: np.ndarray, resamples: int = 10_000, seed: int = 0) -> list[Estimate]:
    """Each row's (an outcome's values over the seeds) mean and 95% interval."""
    return _estimates((np.asarray(values, dtype=float),), _mean, resamples, seed)


def paired_differences(
    arm: np.ndarray, control: np.ndarray, resamples: int = 10_000, seed: int = 0
) -> list[Estimate]:
    """Each row's mean of ``arm − control`` and its 95% interval, the seeds (columns)
    resampled together for both."""
    pair = (np.asarray(arm, dtype=float), np.asarray(control, dtype=float))
    return _estimates(pair, _difference, resamples, seed)


def number(x: float, signed: bool = False) -> str:
    """Three significant digits (``0.0526``, ``16.9``, ``+2.00``); whole above 1,000."""
    sign = "+" if signed else ""
    return f"{x:{sign},.0f}" if abs(x) >= 1000 else f"{x:{sign}#.3g}".removesuffix(".")


def estimate_text(e: Estimate | None, signed: bool = False) -> str:
    """``2.35 [1.90, 2.80]``: a mean and its 95% interval (the mean alone without one)."""
    if e is None:
        return ""
    interval = ""
    if e.low is not None and e.high is not None:
        interval = f" [{number(e.low, signed)}, {number(e.high, signed)}]"
    return number(e.mean, signed) + interval
