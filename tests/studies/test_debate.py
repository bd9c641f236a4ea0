"""Multi-agent debate (Relational priors Sec. 4.2, App. B): question loading, answer
extraction, the App. B metrics and their denominators on hand-made debates, the relational
prior in prompts and in the offline rule model, and an LLM debate asked through
``mind.ask`` over real HTTP to the local stub (tests/llm_stub.py)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.core.priors import Prior, explicit_neutral, no_prior, render, signed_priors
from engine.errors import BudgetError, SocialsimError
from engine.llm.settings import LLMSettings
from engine.minds import OfflineMind, Question, make_mind
from engine.minds.llm import LLMMind
from engine.studies.debate import (
    DebateQuestion,
    DebateTrace,
    agent_names,
    extract_answer,
    load_questions,
    metrics,
    relational_block,
    run_debate,
    sample_questions,
)
from engine.studies.debate.rules import BASE_CONFORMITY, EXPLICIT_SHIFT, SLOPE, Network
from engine.studies.debate.stats import bootstrap_contrast, bootstrap_metrics

NAMES = ["Agent1", "Agent2", "Agent3"]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- questions


def test_load_questions_reads_mmlu_pro_style_rows(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "question_id": 70,
                "question": "2 + 2?",
                "options": ["3", "4", "5", "6"],
                "answer": "B",
                "answer_index": 1,
                "category": "math",
            },
            "",
            {"id": "s1", "question": "Tea or coffee?", "options": ["Tea", "Coffee"]},
            {"id": "x", "question": "Pick", "options": list("abcdefghij"), "answer_index": 9},
            {"id": "y", "question": "Lower", "options": ["a", "b", "c"], "answer": "c"},
        ],
    )
    qs = load_questions(path)
    assert [q.id for q in qs] == ["70", "s1", "x", "y"]
    assert qs[0] == DebateQuestion(
        id="70", question="2 + 2?", options=["3", "4", "5", "6"], answer="B"
    )
    assert qs[1].answer is None
    assert qs[2].answer == "J" and qs[2].letters == "ABCDEFGHIJ"
    assert qs[3].answer == "C"


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "not valid JSON"),
        ({"id": "b", "question": "Q?"}, "'options'"),
        ({"id": "b", "question": "Q?", "options": "A or B"}, "'options'"),
        ({"id": "b", "question": "Q?", "options": ["only"]}, "at least 2"),
        ({"id": "b", "question": "Q?", "options": ["x", "y"], "answer": "C"}, "'answer'"),
        ({"id": "b", "question": "Q?", "options": ["x", "y"], "answer_index": 2}, "answer_index"),
        (
            {"id": "b", "question": "Q?", "options": ["x", "y"], "answer": "A", "answer_index": 1},
            "contradicts",
        ),
        ({"question": "Q?", "options": ["x", "y"]}, "'question_id' or 'id'"),
        ({"id": "b", "options": ["x", "y"]}, "question"),
        ({"id": "a", "question": "Q?", "options": ["x", "y"]}, "duplicate question id 'a'"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_a_bad_line_is_reported_with_file_and_line_number(
    tmp_path: Path, bad: Any, needle: str
) -> None:
    good = {"id": "a", "question": "Fine?", "options": ["yes", "no"], "answer": "A"}
    path = write_jsonl(tmp_path / "bad.jsonl", [good, "", bad, good | {"id": "c"}])
    with pytest.raises(SocialsimError) as err:
        load_questions(path)
    assert f"{path}:3:" in str(err.value)
    assert needle in str(err.value)


def test_missing_or_empty_question_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SocialsimError, match="cannot read"):
        load_questions(tmp_path / "nope.jsonl")
    with pytest.raises(SocialsimError, match="no questions"):
        load_questions(write_jsonl(tmp_path / "empty.jsonl", [""]))


def test_bundled_sample_has_objective_and_subjective_questions() -> None:
    qs = sample_questions()
    assert len(qs) == 12 and len({q.id for q in qs}) == 12
    objective = [q for q in qs if q.answer is not None]
    assert len(objective) == 6
    assert all(4 <= len(q.options) <= 5 for q in qs)
    assert all(q.answer in q.letters for q in objective)


# --------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("Answer: C", 4, "C"),
        ("ANSWER: B", 4, "B"),
        ("answer: (c)", 4, "C"),
        ("**Answer:** D", 4, "D"),
        ("**Answer**: D", 4, "D"),
        ("Answer - B", 4, "B"),
        ("The answer is C.", 4, "C"),
        ("the answer is (B)", 4, "B"),
        ("The answer is therefore B.", 4, "B"),
        ("the answer would be (E)", 5, "E"),
        ("My answer remains (A).", 4, "A"),
        ('{"explanation": "sum", "answer": "B"}', 4, "B"),
        ("Final answer: \\boxed{D}", 4, "D"),
        ("I choose A.", 4, "A"),
        ("I'll go with option B", 4, "B"),
        ("After reviewing, I stick with C.", 4, "C"),
        ("The correct option is D", 4, "D"),
        ("I previously said B, but now my answer is C.", 4, "C"),
        ("The answer is C, not B.", 4, "C"),
        ("Option B looks wrong; answer: A", 4, "A"),
        ("Answer: E\nActually the answer is D", 4, "D"),
        ("Answer: I think it's J", 10, "J"),
        ("Answer: I", 10, "I"),
        ("(C)", 4, "C"),
        ("C", 4, "C"),
        ("c", 4, "C"),
        ("C.", 4, "C"),
        ("**B**", 4, "B"),
        ("C) 42 minutes", 4, "C"),
        ("A. Because 2 + 2 = 4", 4, "A"),
        ("Looking at it, (C) is the only consistent one.", 4, "C"),
        # absent, ambiguous or out of range
        ("", 4, None),
        ("I am not sure.", 4, None),
        ("The answer is not obvious.", 4, None),
        ("answer is a matter of taste", 4, None),
        ("Nitrogen is the answer", 4, None),
        ("Between (A) and (C), hard to say.", 4, None),
        ("Answer: E", 4, None),
        ("Answer: C", 0, None),
    ],
)
def test_extract_answer(text: str, n: int, expected: str | None) -> None:
    assert extract_answer(text, n) == expected


# --------------------------------------------------------------------------- metrics


def trace(qid: str, *rounds: str) -> DebateTrace:
    """A trace from strings such as "BBA" (one letter per agent; "-" = no answer)."""
    return DebateTrace(
        question_id=qid,
        answers=[
            {f"Agent{i + 1}": (x if x != "-" else None) for i, x in enumerate(r)} for r in rounds
        ],
    )


def objective(qid: str, answer: str = "A") -> DebateQuestion:
    return DebateQuestion(id=qid, question=qid, options=["w", "x", "y", "z"], answer=answer)


def subjective(qid: str) -> DebateQuestion:
    return DebateQuestion(id=qid, question=qid, options=["w", "x", "y", "z"])


HAND_QUESTIONS = [objective(f"q{i}") for i in range(7)] + [subjective("s1"), subjective("s2")]
HAND_TRACES = [
    trace("q0", "BBB", "BBB", "BBB"),  # unanimous wrong from the start: outside I (no WCF)
    trace("q1", "AAA", "AAA", "AAA"),  # unanimous right from the start: outside I
    trace("q2", "BBA", "BAA", "AAA"),  # 2-1 wrong majority -> right consensus
    trace("q3", "BBA", "BBA", "BBB"),  # 2-1 wrong majority -> wrong consensus
    trace("q4", "AAB", "ABB", "BBB"),  # 2-1 right majority -> wrong consensus
    trace("q5", "ABC", "CBC", "CCC"),  # 1-1-1 -> wrong consensus
    trace("q6", "AAC", "AAC", "AAC"),  # 2-1 right majority, no consensus
    trace("s1", "ABC", "BBC", "BBB"),  # subjective, converges
    trace("s2", "AAB", "AAB", "AAB"),  # subjective, does not converge
]


def test_metric_denominators_follow_appendix_b() -> None:
    m = metrics(HAND_TRACES, HAND_QUESTIONS)
    # I = initially non-unanimous = q2..q6, s1, s2; C = q2..q5, s1
    assert (m["n_disagree"], m["n_consensus"]) == (7, 5)
    assert m["cr"] == pytest.approx(5 / 7)
    assert m["cr_objective"] == pytest.approx(4 / 5)
    assert m["cr_subjective"] == pytest.approx(1 / 2)
    # CCR over the objective final consensus cases q2..q5: only q2 is right
    assert m["n_consensus_objective"] == 4
    assert m["ccr"] == pytest.approx(1 / 4)
    # WCF over all objective initially non-unanimous (incl. the 1-1-1 q5): q3, q4, q5;
    # q0 ends in wrong consensus too but began unanimous, so it is not counted
    assert m["n_disagree_objective"] == 5
    assert m["wcf"] == pytest.approx(3 / 5)
    # 2-1 transitions: wrong majority {q2, q3} -> q2 corrected; right majority {q4, q6} -> q4
    assert (m["n_t21_wrong_majority"], m["n_t21_correct_majority"]) == (2, 2)
    assert m["t21_to_correct"] == pytest.approx(1 / 2)
    assert m["t21_to_wrong"] == pytest.approx(1 / 2)
    # ACC over every objective question: final majorities right for q1, q2, q6
    assert m["n_objective"] == 7
    assert m["acc"] == pytest.approx(3 / 7)


def test_acc_counts_a_tied_vote_as_wrong() -> None:
    qs = [objective("tie3"), objective("tie4"), objective("win"), objective("none")]
    traces = [
        trace("tie3", "ABC", "ABC"),  # 1-1-1: no majority answer
        trace("tie4", "AABB", "AABB"),  # 2-2: no majority answer
        trace("win", "AB-", "AA-"),  # a missing answer casts no vote: A wins 2-0
        trace("none", "---", "---"),  # no votes at all
    ]
    m = metrics(traces, qs)
    assert m["acc"] == pytest.approx(1 / 4)
    # "win" started A, B, none: no option held by a strict majority, so no 2-1 split
    assert m["n_t21_wrong_majority"] == 0 and m["n_t21_correct_majority"] == 0


def test_missing_answers_break_unanimity_and_count_as_dissent() -> None:
    qs = [objective("a"), objective("b")]
    traces = [trace("a", "AA-", "AAA"), trace("b", "---", "---")]
    m = metrics(traces, qs)
    assert m["n_disagree"] == 2  # no answer from anyone is not a consensus either
    assert m["cr"] == pytest.approx(1 / 2)
    assert m["n_t21_correct_majority"] == 1 and m["t21_to_wrong"] == 0.0


def test_zero_denominators_give_none() -> None:
    m = metrics([trace("q1", "AAA", "AAA")], [objective("q1")])
    assert m["cr"] is None and m["ccr"] is None and m["wcf"] is None
    assert m["t21_to_correct"] is None and m["t21_to_wrong"] is None
    assert m["acc"] == 1.0
    m = metrics([trace("s1", "ABC", "ABC")], [subjective("s1")])
    assert m["acc"] is None and m["cr"] == 0.0 and m["ccr"] is None and m["cr_objective"] is None


def test_metrics_follow_the_traces_given_so_bootstrap_resamples_work() -> None:
    once = metrics(HAND_TRACES, HAND_QUESTIONS)
    resample = [HAND_TRACES[2], HAND_TRACES[2], HAND_TRACES[4]]  # q2 twice, q4
    m = metrics(resample, {q.id: q for q in HAND_QUESTIONS})
    assert m["n_questions"] == 3 and m["n_disagree"] == 3
    assert m["ccr"] == pytest.approx(2 / 3)
    assert m["t21_to_correct"] == 1.0 and m["t21_to_wrong"] == 1.0
    assert once["n_questions"] == 9
    with pytest.raises(SocialsimError, match="unknown question 'zz'"):
        metrics([trace("zz", "AAA")], HAND_QUESTIONS)


# --------------------------------------------------------------------------- bootstrap (App. B.3)


def test_bootstrap_point_estimates_are_the_hand_values_inside_their_intervals() -> None:
    got = bootstrap_metrics(HAND_TRACES, HAND_QUESTIONS, resamples=20_000, seed=3)
    hand = {"acc": 3 / 7, "cr": 5 / 7, "ccr": 1 / 4, "wcf": 3 / 5}
    assert list(got) == list(hand)
    for name, value in hand.items():
        ci = got[name]
        assert ci.estimate == pytest.approx(value)
        assert ci.low is not None and ci.high is not None
        assert ci.low <= ci.estimate <= ci.high and ci.low < ci.high
        assert (ci.units, ci.resamples, ci.level) == (9, 20_000, 0.95)
    assert bootstrap_metrics(HAND_TRACES, HAND_QUESTIONS, resamples=20_000, seed=3) == got
    assert bootstrap_metrics(HAND_TRACES, HAND_QUESTIONS, resamples=20_000, seed=4) != got
    # CCR's denominator (objective final consensus: q2..q5) is empty when none of those
    # four is drawn, (5/9)^9 of the resamples: dropped, not counted as 0 or 1
    assert got["ccr"].dropped / 20_000 == pytest.approx((5 / 9) ** 9, abs=0.002)
    assert got["cr"].dropped == 0


def test_every_resample_recomputes_the_denominators() -> None:
    questions = [objective("a"), objective("b")]
    traces = [trace("a", "ABC", "AAA"), trace("b", "ABC", "ABB")]
    got = bootstrap_metrics(traces, questions, resamples=40_000, seed=1)
    # resamples {a,a}, {a,b}, {b,b}: CR 1, 1/2, 0 over the drawn questions' own |I|
    assert (got["cr"].low, got["cr"].high) == (0.0, 1.0)
    # CCR is 1 wherever it is defined; {b,b} (a quarter) has no consensus case: dropped.
    # With the full sample's denominator instead, {a,a} would give CCR 2.
    assert (got["ccr"].low, got["ccr"].high, got["ccr"].estimate) == (1.0, 1.0, 1.0)
    assert got["ccr"].dropped / 40_000 == pytest.approx(0.25, abs=0.01)
    never = bootstrap_metrics([trace("q1", "AAA", "AAA")], [objective("q1")], resamples=100)
    assert never["ccr"].estimate is None and never["ccr"].low is None
    assert never["ccr"].dropped == 100


def _flips(
    n: int, flipped: int
) -> tuple[list[DebateQuestion], list[DebateTrace], list[DebateTrace]]:
    """n questions whose accuracy varies a lot between questions; ``other`` corrects
    ``flipped`` of the wrong ones and is otherwise the same: strongly correlated."""
    questions = [objective(f"q{i}") for i in range(n)]
    base = [trace(f"q{i}", "ABB", "AAA" if i % 2 else "BBB") for i in range(n)]
    fixed = {f"q{i}" for i in range(0, 2 * flipped, 2)}
    other = [trace(t.question_id, "ABB", "AAA") if t.question_id in fixed else t for t in base]
    return questions, base, other


def test_paired_contrasts_are_narrower_on_correlated_conditions() -> None:
    questions, base, other = _flips(40, 4)
    paired = bootstrap_contrast(base, other, questions, resamples=20_000, seed=2)
    unpaired = bootstrap_contrast(base, other, questions, paired=False, resamples=20_000, seed=2)
    for ci in (paired["acc"], unpaired["acc"]):
        assert ci.estimate == pytest.approx(4 / 40)
        assert ci.low is not None and ci.high is not None
        assert ci.low <= ci.estimate <= ci.high
    width = {k: ci.high - ci.low for k, ci in (("p", paired["acc"]), ("u", unpaired["acc"]))}
    assert width["p"] < width["u"] / 2
    # the same questions weight both conditions: a question corrected in "other" is the
    # only source of a difference, so no paired resample has ACC lower than in base
    assert paired["acc"].low >= 0.0 and unpaired["acc"].low < 0.0


def test_a_contrast_pairs_by_question_id_and_recomputes_both_sides() -> None:
    other = [trace("q6", "AAC", "AAC", "AAA") if t.question_id == "q6" else t for t in HAND_TRACES]
    got = bootstrap_contrast(HAND_TRACES, other, HAND_QUESTIONS, resamples=5_000)
    before, after = metrics(HAND_TRACES, HAND_QUESTIONS), metrics(other, HAND_QUESTIONS)
    for name in ("acc", "cr", "ccr", "wcf"):
        assert got[name].estimate == pytest.approx(after[name] - before[name])
    assert got["cr"].estimate == pytest.approx(1 / 7) and got["ccr"].estimate == pytest.approx(
        2 / 5 - 1 / 4
    )
    with pytest.raises(SocialsimError, match="share no units"):
        bootstrap_contrast(HAND_TRACES[:1], HAND_TRACES[1:2], HAND_QUESTIONS, resamples=10)


# --------------------------------------------------------------------------- offline debate


def prior(relation: str, sign: int) -> Prior:
    lam = 1.0 if sign > 0 else 0.0
    (p,) = signed_priors(NAMES, relation, "complete", lam)  # type: ignore[arg-type]
    return p


async def test_offline_debate_is_deterministic_with_rounds_0_to_2() -> None:
    qs = sample_questions()
    a = await run_debate(None, qs, seed=7)
    b = await run_debate(None, qs, seed=7)
    c = await run_debate(None, qs, seed=8)
    assert a == b
    assert a.traces != c.traces
    assert a.agents == NAMES
    assert [t.question_id for t in a.traces] == [q.id for q in qs]
    for t, q in zip(a.traces, qs, strict=True):
        assert len(t.answers) == 3  # round 0 (independent) and revisions 1, 2
        for answers in t.answers:
            assert set(answers) == set(NAMES)
            assert all(x in q.letters for x in answers.values())
    assert a.metrics == metrics(a.traces, qs)
    assert a.calls == []
    short = await run_debate(None, qs, seed=7, rounds=0, k=4)
    assert all(len(t.answers) == 1 and len(t.answers[0]) == 4 for t in short.traces)


async def test_a_prior_changes_revisions_only_and_no_prior_object_equals_none() -> None:
    qs = sample_questions()
    base = await run_debate(None, qs, seed=3)
    same = await run_debate(no_prior(), qs, seed=3)
    warm = await run_debate(prior("influence", +1), qs, seed=3)
    assert same == base
    # protocol-preserving: the independent answers do not depend on the prior
    assert [t.answers[0] for t in warm.traces] == [t.answers[0] for t in base.traces]


async def test_positive_priors_converge_at_least_as_often_as_negative_ones() -> None:
    qs = sample_questions()
    seeds = range(12)
    totals: dict[str, float] = {}
    for relation in ("attitude", "trust", "influence"):
        for sign in (+1, -1):
            consensus = disagree = 0.0
            for seed in seeds:
                m = (await run_debate(prior(relation, sign), qs, seed=seed)).metrics
                consensus += m["n_consensus"] or 0
                disagree += m["n_disagree"] or 0
            totals[f"{relation}{sign:+d}"] = consensus / disagree
        assert totals[f"{relation}+1"] >= totals[f"{relation}-1"], totals
    # the offline model makes Influence the strongest lever, Attitude the weakest
    spread = {r: totals[f"{r}+1"] - totals[f"{r}-1"] for r in ("attitude", "influence")}
    assert spread["influence"] > spread["attitude"] > 0


async def test_explicit_neutral_stays_near_no_prior() -> None:
    qs = sample_questions()

    async def cr(p: Prior | None) -> float:
        n = d = 0.0
        for seed in range(12):
            m = (await run_debate(p, qs, seed=seed)).metrics
            n, d = n + (m["n_consensus"] or 0), d + (m["n_disagree"] or 0)
        return n / d

    none, neutral = await cr(None), await cr(explicit_neutral(NAMES, "trust", "complete"))
    pos, neg = await cr(prior("trust", +1)), await cr(prior("trust", -1))
    assert abs(neutral - none) < (pos - neg) / 4
    assert neg < neutral < pos


def test_agent_names_come_from_the_prior_or_default() -> None:
    assert agent_names(None, 3) == NAMES
    assert agent_names(prior("trust", 1), 3) == NAMES
    (ann,) = signed_priors(["Ann", "Bob", "Cy"], "trust", "complete", 1.0)
    assert agent_names(ann, 3) == ["Ann", "Bob", "Cy"]
    with pytest.raises(SocialsimError, match="k=4"):
        agent_names(ann, 4)
    with pytest.raises(SocialsimError, match="at least 2"):
        agent_names(None, 1)


async def test_offline_results_are_pinned() -> None:
    """Exact values of the rule model, so a refactoring cannot drift them."""
    qs = sample_questions()
    result = await run_debate(prior("influence", +1), qs, seed=3)
    assert ["".join(map(str, t.answers[0].values())) for t in result.traces] == [
        "ACC", "BBB", "ACA", "ADD", "BDB", "CCC", "DAD", "DBD", "CEC", "BBB", "AAB", "BBB",
    ]  # fmt: skip
    assert ["".join(map(str, t.answers[-1].values())) for t in result.traces] == [
        "CCC", "BBB", "AAA", "DDD", "BBB", "CCC", "DDD", "DDD", "CCC", "BBB", "AAA", "BBB",
    ]  # fmt: skip
    assert result.metrics["acc"] == pytest.approx(4 / 6)
    assert (result.metrics["ccr"], result.metrics["wcf"]) == (0.5, 0.5)
    assert (result.metrics["n_disagree"], result.metrics["n_consensus"]) == (8.0, 8.0)


async def test_a_built_offline_mind_plays_the_same_debate_as_the_spec() -> None:
    qs = sample_questions()
    mind = OfflineMind(7)
    built = await run_debate(prior("trust", -1), qs, seed=7, mind=mind)
    spec = await run_debate(prior("trust", -1), qs, seed=7)
    assert built == spec
    assert mind.take_calls() == []


def test_the_relational_block_is_the_priors_rendering() -> None:
    p = prior("trust", -1)
    assert relational_block(p, "Agent2") == render(p, "Agent2")
    assert "- You and Agent1 distrust each other" in (relational_block(p, "Agent2") or "")
    assert relational_block(None, "Agent1") is None
    assert relational_block(no_prior(), "Agent1") is None


def test_the_rule_model_reads_the_prior_edges_and_relation() -> None:
    assert Network(None).conformity("Agent1", ["Agent2"]) == BASE_CONFORMITY
    assert Network(no_prior()).conformity("Agent1", ["Agent2"]) == BASE_CONFORMITY
    neutral = Network(explicit_neutral(NAMES, "trust", "complete"))
    assert neutral.conformity("Agent1", ["Agent2"]) == pytest.approx(
        BASE_CONFORMITY + EXPLICIT_SHIFT
    )
    for relation, sign in (("influence", +1), ("attitude", -1), ("trust", +1)):
        net = Network(prior(relation, sign))
        assert net.sign("Agent3", "Agent1") == sign
        assert net.conformity("Agent1", ["Agent2", "Agent3"]) == pytest.approx(
            BASE_CONFORMITY + EXPLICIT_SHIFT + sign * SLOPE[relation]
        )
    (chain,) = signed_priors(NAMES, "influence", "chain", 1.0)
    ends = Network(chain)
    assert ends.sign("Agent1", "Agent3") is None  # a non-edge carries no relational context
    assert ends.conformity("Agent1", ["Agent3"]) == pytest.approx(BASE_CONFORMITY + EXPLICIT_SHIFT)


# --------------------------------------------------------------------------- LLM debate


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A local OpenAI-compatible stub server; litellm's clients closed afterwards."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    from llm_stub import StubLLM

    server = StubLLM(seed=5)
    server.start()
    yield server
    import litellm

    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    server.stop()


class AskingMind(LLMMind):
    """An LLM mind that notes every question asked of it."""

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(settings)
        self.asked: list[Question[Any]] = []

    async def ask(self, question: Question[Any]) -> Any:
        self.asked.append(question)
        return await super().ask(question)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_llm_debate_asks_the_mind_once_per_agent_and_round(stub: Any) -> None:
    settings = LLMSettings(
        model="openai/stub",
        api_base=stub.url,
        timeout=5.0,
        temperature=0.7,
        agent_models={"Agent2": "openai/stub-two"},
    )
    mind = AskingMind(settings)
    qs = sample_questions()[:2]
    try:
        result = await run_debate(prior("influence", +1), qs, mind=mind)
        calls = mind.take_calls()
    finally:
        await mind.aclose()
    assert result.calls == []  # the caller's mind keeps its record
    keys = sorted(f"debate:{q.id}:r{t}:{a}" for q in qs for t in range(3) for a in NAMES)
    assert sorted(q.key for q in mind.asked) == keys
    assert {(q.purpose, q.temperature, q.judge) for q in mind.asked} == {("debate", 0.0, False)}
    assert sorted(c.key for c in calls) == keys
    assert {c.purpose for c in calls} == {"debate"}
    assert {c.agent: c.model for c in calls} == {
        "Agent1": "openai/stub",
        "Agent2": "openai/stub-two",
        "Agent3": "openai/stub",
    }
    # greedy decoding (App. B.1) whatever the run's temperature
    assert {r["temperature"] for r in stub.requests} == {0.0}
    for t, q in zip(result.traces, qs, strict=True):
        assert len(t.answers) == 3
        assert all(x in q.letters for r in t.answers for x in r.values())
    by_key = {c.key: c for c in calls}
    first = by_key[f"debate:{qs[0].id}:r0:Agent1"].messages
    assert "Relation type: Influence" in first[0]["content"]
    assert "You and Agent2 have a positive influence" in first[0]["content"]
    assert qs[0].question in first[1]["content"] and len(first) == 2
    revise = by_key[f"debate:{qs[0].id}:r2:Agent1"].messages
    # own history kept: system, question, (own answer, others' answers) x 2 rounds
    assert [m["role"] for m in revise] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    shown = revise[-1]["content"]
    r1 = result.traces[0].answers[1]
    assert "Agent2:" in shown and "Agent3:" in shown and "Agent1:" not in shown
    assert f"Answer: ({r1['Agent2']})" in shown and f"Answer: ({r1['Agent3']})" in shown
    assert len(stub.requests) == 18


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_llm_debate_on_a_spec_returns_the_calls_and_omits_no_prior(stub: Any) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5.0)
    qs = sample_questions()[6:7]
    result = await run_debate(None, qs, mind=settings, rounds=1)
    assert len(result.calls) == 6
    assert {c.key.rsplit(":", 2)[0] for c in result.calls} == {f"debate:{qs[0].id}"}
    assert all("Relation" not in c.messages[0]["content"] for c in result.calls)
    assert len(result.traces[0].answers) == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_a_model_without_a_valid_answer_casts_no_vote(stub: Any) -> None:
    """No rule answer stands in for a failed model: the answer is missing, and the others
    are shown that it is."""
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5.0, retries=0)
    stub.faults = {"schema": 1.0}
    mind = make_mind(settings, 0)
    qs = sample_questions()[:1]
    try:
        result = await run_debate(None, qs, mind=mind, rounds=1)
        calls = mind.take_calls()
    finally:
        await mind.aclose()
    assert result.traces[0].answers == [dict.fromkeys(NAMES), dict.fromkeys(NAMES)]
    assert {c.outcome for c in calls if c.key.endswith(":reask")} == {"fallback"}
    revise = next(c for c in calls if c.key == f"debate:{qs[0].id}:r1:Agent1")
    assert "Agent2:\n(no valid answer)" in revise.messages[-1]["content"]
    assert result.metrics["acc"] == 0.0 and result.metrics["cr"] == 0.0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_a_reached_call_cap_stops_the_debate(stub: Any) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5.0, max_calls=3)
    with pytest.raises(BudgetError):
        await run_debate(None, sample_questions()[:1], mind=settings)
