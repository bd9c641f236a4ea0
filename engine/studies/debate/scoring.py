"""Debate traces and their metrics (Relational priors App. B.2, B.4): ACC, CR, CCR, WCF and
the 2-1 transitions, with every denominator spelled out in :func:`metrics`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from ...errors import SocialsimError
from .questions import DebateQuestion


class DebateTrace(BaseModel):
    """One question's debate: ``answers[t][agent]`` is the letter of round t (0 = independent)."""

    question_id: str
    answers: list[dict[str, str | None]]


def _unanimous(round_answers: Mapping[str, str | None]) -> str | None:
    """The option every agent gave, or None (a missing answer breaks unanimity)."""
    values = set(round_answers.values())
    if len(values) == 1:
        (only,) = values
        return only
    return None


def _plurality(round_answers: Mapping[str, str | None]) -> str | None:
    """Majority vote (Eq. 12) over the given answers; a tie or no vote is no answer."""
    counts = Counter(a for a in round_answers.values() if a is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _strict_majority(round_answers: Mapping[str, str | None]) -> str | None:
    """The option held by more than half but not all agents (a 2-1 split for K = 3)."""
    counts = Counter(a for a in round_answers.values() if a is not None)
    k = len(round_answers)
    for letter, n in counts.items():
        if 2 * n > k and n < k:
            return letter
    return None


#: Every rate of :func:`metrics` as (numerator, denominator): names of per-question 0/1
#: flags (:func:`question_flags`) summed over the questions, so the same pair serves the
#: point estimate and every bootstrap resample (App. B.3 recomputes the denominators).
RATIOS: dict[str, tuple[str, str]] = {
    "cr": ("consensus", "disagree"),
    "cr_objective": ("consensus_objective", "disagree_objective"),
    "cr_subjective": ("consensus_subjective", "disagree_subjective"),
    "acc": ("correct", "objective"),
    "ccr": ("right_consensus", "consensus_objective"),
    "wcf": ("wrong_consensus", "disagree_objective"),
    "t21_to_correct": ("t21_wrong_to_right", "t21_wrong_majority"),
    "t21_to_wrong": ("t21_right_to_wrong", "t21_right_majority"),
}
#: The counts :func:`metrics` reports beside the rates, by the flag they sum.
COUNTS: dict[str, str] = {
    "n_questions": "question",
    "n_objective": "objective",
    "n_disagree": "disagree",
    "n_consensus": "consensus",
    "n_disagree_objective": "disagree_objective",
    "n_consensus_objective": "consensus_objective",
    "n_t21_wrong_majority": "t21_wrong_majority",
    "n_t21_correct_majority": "t21_right_majority",
}
FLAGS: tuple[str, ...] = tuple(
    dict.fromkeys([*COUNTS.values(), *(f for pair in RATIOS.values() for f in pair)])
)


def question_flags(trace: DebateTrace, question: DebateQuestion) -> dict[str, int]:
    """The 0/1 flags of one question's debate that :data:`RATIOS` and :data:`COUNTS` sum
    (the sets are defined in :func:`metrics`)."""
    if not trace.answers:
        raise SocialsimError(f"debate trace for {trace.question_id!r} has no rounds")
    truth = question.answer
    first, last = trace.answers[0], trace.answers[-1]
    initial, final = _unanimous(first), _unanimous(last)
    objective = truth is not None
    disagree = initial is None  # in I
    consensus = disagree and final is not None  # in C
    majority = _strict_majority(first) if disagree and objective else None
    flags = {
        "question": True,
        "objective": objective,
        "correct": objective and _plurality(last) == truth,
        "disagree": disagree,
        "consensus": consensus,
        "disagree_objective": disagree and objective,
        "consensus_objective": consensus and objective,
        "disagree_subjective": disagree and not objective,
        "consensus_subjective": consensus and not objective,
        "right_consensus": consensus and objective and final == truth,
        "wrong_consensus": consensus and objective and final != truth,
        "t21_wrong_majority": majority is not None and majority != truth,
        "t21_wrong_to_right": majority is not None and majority != truth and final == truth,
        "t21_right_majority": majority is not None and majority == truth,
        "t21_right_to_wrong": majority is not None
        and majority == truth
        and consensus
        and final != truth,
    }
    return {name: int(flags[name]) for name in FLAGS}


def _questions(
    questions: Iterable[DebateQuestion] | Mapping[str, DebateQuestion],
) -> dict[str, DebateQuestion]:
    return dict(questions) if isinstance(questions, Mapping) else {q.id: q for q in questions}


def trace_flags(
    traces: Iterable[DebateTrace],
    questions: Iterable[DebateQuestion] | Mapping[str, DebateQuestion],
) -> list[tuple[str, dict[str, int]]]:
    """Each trace's question id and :func:`question_flags`, in the order given."""
    by_id = _questions(questions)
    flagged = []
    for trace in traces:
        question = by_id.get(trace.question_id)
        if question is None:
            raise SocialsimError(f"debate trace for unknown question {trace.question_id!r}")
        flagged.append((trace.question_id, question_flags(trace, question)))
    return flagged


def metrics(
    traces: Iterable[DebateTrace],
    questions: Iterable[DebateQuestion] | Mapping[str, DebateQuestion],
) -> dict[str, float | None]:
    """Debate metrics of App. B.2 and B.4 (rates in [0, 1]; None when the denominator is 0).

    Notation: round 0 is the independent answer, round T the last one in the trace. A
    question is *in consensus* at a round when every agent gave the same option; a missing
    (unextractable) answer breaks consensus. ``I`` = questions not in consensus at round 0
    ("begin with disagreement", Eq. 9); ``C`` = questions of ``I`` in consensus at round T
    (Eq. 10). Objective questions are those with an ``answer``; subscript ``obj`` restricts
    to them.

    * ``cr`` = |C| / |I| over all questions (Eq. 11); ``cr_objective`` / ``cr_subjective``
      the same restricted to objective / subjective questions (the paper reports CR per
      dataset).
    * ``acc`` = #{objective n : majority vote of round T == y_n} / #objective (Eq. 12). The
      vote is a plurality of the extracted answers; a tie or no vote is no answer and
      counts as wrong. All objective questions are in the denominator.
    * ``ccr`` = |C_corr| / |C_obj|, C_corr = {n in C_obj : consensus answer == y_n}
      (Eq. 13: "the proportion of final consensus cases in which that answer is correct";
      App. B.3: "CCR is computed among the subset that reaches final consensus", which is
      drawn from initially non-unanimous questions).
    * ``wcf`` = #{n in I_obj : T-round consensus on a wrong option} / |I_obj| (App. B.4:
      "the fraction of all initially non-unanimous questions, including 1-1-1 splits, that
      end in 3-0 wrong consensus").
    * ``t21_to_correct`` (wrong-majority correction) = #{initial 2-1 split with a wrong
      majority that ends in correct consensus} / #{objective initial 2-1 splits with a wrong
      majority}; ``t21_to_wrong`` (correct-majority failure) = #{initial 2-1 split with a
      right majority that ends in wrong consensus} / #{objective initial 2-1 splits with a
      right majority} (App. B.4). For K != 3 a "2-1 split" is a non-unanimous round 0 in
      which one option holds a strict majority; a missing answer counts as a dissent.

    Counts (as floats): ``n_questions``, ``n_objective``, ``n_disagree`` (|I|),
    ``n_consensus`` (|C|), ``n_disagree_objective``, ``n_consensus_objective``,
    ``n_t21_wrong_majority``, ``n_t21_correct_majority``.

    Every rate is a ratio of summed per-question flags (:data:`RATIOS`), and traces are
    iterated as given, so a resample with repeated traces recomputes every denominator
    (App. B.3; :mod:`engine.studies.debate.stats` does it vectorised).
    """
    total: Counter[str] = Counter()
    for _, flags in trace_flags(traces, questions):
        total.update(flags)
    rates: dict[str, float | None] = {
        name: total[num] / total[den] if total[den] else None for name, (num, den) in RATIOS.items()
    }
    return rates | {name: float(total[flag]) for name, flag in COUNTS.items()}
