"""Question-level bootstrap intervals for debate metrics (Relational priors App. B.3).

The resampling unit is one question's whole trajectory (every agent, every round). A
resample draws questions with replacement and recomputes every metric from its numerator
and denominator (:data:`~engine.studies.debate.scoring.RATIOS`), so the eligible sets of CR, CCR
and WCF (initially non-unanimous questions, final consensus cases) are recomputed in every
resample. Contrasts between two conditions are paired: the same drawn questions weight
both. A resample in which a metric's denominator is 0 is dropped from that metric's
percentiles and counted (:class:`engine.studies.bootstrap.Interval`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..bootstrap import RESAMPLES, Interval, ratio_contrasts, ratio_intervals
from .questions import DebateQuestion
from .scoring import RATIOS, DebateTrace, trace_flags

#: The metrics bootstrapped by default: accuracy and the three conditional rates.
METRICS: tuple[str, ...] = ("acc", "cr", "ccr", "wcf")

Questions = Iterable[DebateQuestion] | Mapping[str, DebateQuestion]


def question_units(
    traces: Iterable[DebateTrace], questions: Questions
) -> dict[str, dict[str, float]]:
    """Per question id, its flags summed over its traces (several runs of one question stay
    one unit, resampled together)."""
    units: dict[str, Counter[str]] = {}
    for qid, flags in trace_flags(traces, questions):
        units.setdefault(qid, Counter()).update(flags)
    return {qid: {k: float(v) for k, v in flags.items()} for qid, flags in units.items()}


def _ratios(metrics: Sequence[str]) -> dict[str, tuple[str, str]]:
    return {m: RATIOS[m] for m in metrics}


def bootstrap_metrics(
    traces: Iterable[DebateTrace],
    questions: Questions,
    *,
    metrics: Sequence[str] = METRICS,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Each metric of one condition with its question-level percentile interval."""
    units = question_units(traces, questions)
    return ratio_intervals(units, _ratios(metrics), resamples=resamples, seed=seed, level=level)


def bootstrap_contrast(
    base: Iterable[DebateTrace],
    other: Iterable[DebateTrace],
    questions: Questions,
    *,
    metrics: Sequence[str] = METRICS,
    paired: bool = True,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """``other`` minus ``base`` per metric (e.g. λ=1 minus λ=0), paired by question unless
    ``paired`` is False (then each condition's questions are drawn on their own)."""
    questions = questions if isinstance(questions, Mapping) else {q.id: q for q in questions}
    return ratio_contrasts(
        question_units(base, questions),
        question_units(other, questions),
        _ratios(metrics),
        paired=paired,
        resamples=resamples,
        seed=seed,
        level=level,
    )
