"""Debate traces and their metrics (Relational priors App. B.2, B.4): ACC, CR, CCR, WCF and
the 2-1 transitions, with every denominator spelled out in :func:`metrics`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from ..errors import SocialsimError
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


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


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

    Traces are matched to questions by id and iterated as given, so a bootstrap resample
    with repeated traces recomputes every denominator (App. B.3).
    """
    by_id = dict(questions) if isinstance(questions, Mapping) else {q.id: q for q in questions}
    count: Counter[str] = Counter()
    for trace in traces:
        question = by_id.get(trace.question_id)
        if question is None:
            raise SocialsimError(f"debate trace for unknown question {trace.question_id!r}")
        if not trace.answers:
            raise SocialsimError(f"debate trace for {trace.question_id!r} has no rounds")
        truth = question.answer
        first, last = trace.answers[0], trace.answers[-1]
        initial, final = _unanimous(first), _unanimous(last)
        kind = "subjective" if truth is None else "objective"
        count["questions"] += 1
        count[kind] += 1
        if truth is not None:
            count["correct"] += _plurality(last) == truth
        if initial is not None:
            continue  # unanimous from the start: outside I
        count[f"disagree_{kind}"] += 1
        count[f"consensus_{kind}"] += final is not None
        if truth is None:
            continue
        count["wrong_consensus"] += final is not None and final != truth
        majority = _strict_majority(first)
        if majority is None:
            continue  # 1-1-1 (or no strict majority): only in the CR/CCR/WCF sets
        if majority == truth:
            count["t21_right_majority"] += 1
            count["t21_right_to_wrong"] += final is not None and final != truth
        else:
            count["t21_wrong_majority"] += 1
            count["t21_wrong_to_right"] += final == truth
    disagree = count["disagree_objective"] + count["disagree_subjective"]
    consensus = count["consensus_objective"] + count["consensus_subjective"]
    return {
        "cr": _rate(consensus, disagree),
        "cr_objective": _rate(count["consensus_objective"], count["disagree_objective"]),
        "cr_subjective": _rate(count["consensus_subjective"], count["disagree_subjective"]),
        "acc": _rate(count["correct"], count["objective"]),
        "ccr": _rate(
            count["consensus_objective"] - count["wrong_consensus"], count["consensus_objective"]
        ),
        "wcf": _rate(count["wrong_consensus"], count["disagree_objective"]),
        "t21_to_correct": _rate(count["t21_wrong_to_right"], count["t21_wrong_majority"]),
        "t21_to_wrong": _rate(count["t21_right_to_wrong"], count["t21_right_majority"]),
        "n_questions": float(count["questions"]),
        "n_objective": float(count["objective"]),
        "n_disagree": float(disagree),
        "n_consensus": float(consensus),
        "n_disagree_objective": float(count["disagree_objective"]),
        "n_consensus_objective": float(count["consensus_objective"]),
        "n_t21_wrong_majority": float(count["t21_wrong_majority"]),
        "n_t21_correct_majority": float(count["t21_right_majority"]),
    }
