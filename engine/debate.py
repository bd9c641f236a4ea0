"""Multi-agent debate under relational priors (seed 001 Sec. 4.2, App. B).

Protocol (App. B.1, AutoGen-style): ``k`` agents answer a multiple-choice question
independently (round 0), then revise ``rounds`` times (default 2), each revision seeing the
other agents' responses of the previous round and keeping its own dialogue history. The
relational prior (:mod:`engine.priors`) is rendered into each agent's system prompt and is
the only thing that varies between conditions: the protocol is fixed.

Two minds play the agents:

* ``model="offline"``: a seeded rule model, deterministic from ``seed`` (no network). Each
  agent has a skill, each question a difficulty and one popular distractor, so agents start
  right with probability ~0.55 and are wrong together often enough to form wrong majorities.
  In a revision an agent moves to the answer held by more of the others than its own with a
  conformity probability that grows with the sign of its relations to those agents
  (``BASE_CONFORMITY`` with no prior, a hair below it for Explicit-Neutral, up to
  ``+SLOPE[relation]`` for all-positive and down to ``-SLOPE`` for all-negative edges).
  Being right makes an agent somewhat harder to move and a right majority somewhat more
  persuasive, so positivity raises convergence (CR) much more than correctness (CCR),
  the pattern the paper reports.
* any litellm model string (or ``llm=``): one structured call per agent per round through
  :class:`~engine.llm.client.LLMClient`, key ``debate:{qid}:r{round}:{agent}``; the answer
  letter is validated against the options (``extract_answer`` normalises "(C)", "c", ...).

Metrics follow App. B.2 and B.4 exactly; see :func:`metrics` for every denominator.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import random
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from .errors import BudgetError, SocialsimError
from .records import LLMCall

if TYPE_CHECKING:  # the colleague's module; imported lazily at run time
    from .priors import Prior

__all__ = [
    "DebateResult",
    "DebateTrace",
    "Question",
    "agent_names",
    "extract_answer",
    "load_questions",
    "metrics",
    "run_debate",
    "sample_questions",
]

LETTERS = string.ascii_uppercase
SAMPLE_PACKAGE = "scenarios.debate"
SAMPLE_FILE = "sample.jsonl"
PURPOSE = "debate"

# -- offline rule model parameters -------------------------------------------------------
#: Per-agent skill range (probability of a right independent answer before difficulty).
SKILL_RANGE = (0.45, 0.65)
#: Spread of the per-question difficulty (shared by the team) and of the per-agent draw.
DIFFICULTY_SD = 0.12
COMPETENCE_SD = 0.10
COMPETENCE_CLIP = (0.05, 0.95)
#: A wrong independent answer goes to the question's popular distractor this often.
DISTRACTOR_PULL = 0.6
#: Conformity with no relational block (No-Prior).
BASE_CONFORMITY = 0.5
#: Any explicit relational block (even all-neutral) shifts conformity by this much: the paper
#: finds Explicit-Neutral at or below No-Prior (Sec. 5.2, Fig. 8), not equal to it.
EXPLICIT_SHIFT = -0.03
#: Conformity change per unit of mean edge sign; Influence targets revision most directly,
#: Attitude least (Sec. 5.2: Influence most disruptive, Attitude comparatively stable).
SLOPE = {"influence": 0.4, "trust": 0.3, "attitude": 0.2}
DEFAULT_SLOPE = 0.3
CONFORMITY_CLIP = (0.02, 0.98)
#: A right agent resists the majority by up to this fraction (scaled by its competence);
#: a wrong agent facing a right majority is persuaded by up to this extra fraction, and a
#: wrong agent whose answer is as popular as a right one moves to it with probability
#: conformity * INSIGHT * competence (so a wrong 2-1 majority can still be corrected);
#: otherwise an agent tied with a rival answer moves to it with probability
#: conformity * DOUBT * (1 - competence) (so a right 2-1 majority can still fail).
RESIST = 0.5
INSIGHT = 0.25
DOUBT = 0.15


# =========================================================================== questions


class Question(BaseModel):
    """One multiple-choice question; ``answer`` is an option letter, None if subjective."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=2, max_length=len(LETTERS))
    answer: str | None = None

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> Question:
        if self.answer is not None and self.answer not in self.letters:
            raise ValueError(
                f"answer {self.answer!r} is not one of the option letters A-{self.letters[-1]}"
            )
        return self

    @property
    def letters(self) -> str:
        """The option letters, "ABCD" for four options."""
        return LETTERS[: len(self.options)]


def load_questions(path: Path) -> list[Question]:
    """Questions from a JSONL file (MMLU-Pro style); a bad line raises naming file and line.

    Each non-blank line is an object with ``question_id`` or ``id``, ``question``,
    ``options`` (a list of strings) and optionally ``answer`` (a letter, null for subjective
    questions) and/or ``answer_index`` (0-based). Other keys (``category``, ``src``, ...) are
    ignored.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SocialsimError(f"{path}: cannot read questions ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise SocialsimError(f"{path}: not a UTF-8 text file") from None
    return _parse_questions(text, str(path))


def sample_questions() -> list[Question]:
    """The bundled 12-question sample (6 objective, 6 subjective)."""
    text = resources.files(SAMPLE_PACKAGE).joinpath(SAMPLE_FILE).read_text(encoding="utf-8")
    return _parse_questions(text, f"{SAMPLE_PACKAGE}/{SAMPLE_FILE}")


def _parse_questions(text: str, source: str) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise SocialsimError(f"{where}: not valid JSON ({err.msg})") from None
        question = _question_from_row(row, where)
        if question.id in seen:
            raise SocialsimError(
                f"{where}: duplicate question id {question.id!r} "
                f"(first on line {seen[question.id]})"
            )
        seen[question.id] = number
        questions.append(question)
    if not questions:
        raise SocialsimError(f"{source}: no questions")
    return questions


def _question_from_row(row: Any, where: str) -> Question:
    if not isinstance(row, dict):
        raise SocialsimError(f"{where}: expected a JSON object, got {type(row).__name__}")
    qid = row.get("question_id", row.get("id"))
    if qid is None or isinstance(qid, bool) or not isinstance(qid, str | int):
        raise SocialsimError(f"{where}: missing 'question_id' or 'id' (a string or integer)")
    options = row.get("options")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise SocialsimError(f"{where}: 'options' must be a list of strings")
    if len(options) < 2:
        raise SocialsimError(f"{where}: 'options' needs at least 2 entries, got {len(options)}")
    if len(options) > len(LETTERS):
        raise SocialsimError(f"{where}: at most {len(LETTERS)} options, got {len(options)}")
    letters = LETTERS[: len(options)]
    answer = row.get("answer")
    if answer is not None:
        if not isinstance(answer, str) or answer.strip().upper() not in letters:
            raise SocialsimError(
                f"{where}: 'answer' must be one of the option letters {letters[0]}-"
                f"{letters[-1]} or null, got {answer!r}"
            )
        answer = answer.strip().upper()
    if "answer_index" in row and row["answer_index"] is not None:
        index = row["answer_index"]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(options):
            raise SocialsimError(
                f"{where}: 'answer_index' must be an integer from 0 to {len(options) - 1}, "
                f"got {index!r}"
            )
        if answer is not None and answer != letters[index]:
            raise SocialsimError(
                f"{where}: 'answer' {answer!r} contradicts 'answer_index' {index} "
                f"({letters[index]!r})"
            )
        answer = letters[index]
    try:
        return Question(id=str(qid), question=row.get("question"), options=options, answer=answer)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "question"
        raise SocialsimError(f"{where}: {loc}: {first['msg']}") from None


# =========================================================================== extraction

_SEP = r"[\s*_`\"'(\[{:=\-–—]*"
_CUE = (
    r"(?i:\banswer\b|\b(?:correct|right|best|final)\s+(?:option|choice)\b"
    r"|\bmy\s+(?:choice|pick|vote)\b"
    r"|\b(?:choose|pick|select|go\s+with|vote\s+for|stick\s+with|settle\s+on)\b)"
)
_VERB = (
    r"(?i:(?:is|was|remains|stays|becomes|would\s+be|should\s+be|must\s+be|will\s+be)\b"
    + _SEP
    + r")?"
)
_ADVERB = r"(?i:(?:therefore|thus|still|clearly|definitely|now|indeed|probably|likely)\b,?\s*)?"
_HEDGE = r"(?i:I\s+(?:think|believe)\s+(?:it(?:'s|\s+is)\s+)?)?"
_OPTION = r"(?i:(?:option|choice)\b" + _SEP + r")?"
_LETTER = r"(?:\(([A-Za-z])\)|([A-Z])(?![A-Za-z0-9]))"
_CUED = re.compile(_CUE + _SEP + _VERB + _ADVERB + _HEDGE + _OPTION + _LETTER)
_BOXED = re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*\(?([A-Za-z])\)?\s*\}")
_LEADING = re.compile(r"^\s*[*_(\[]*([A-Z])(?:[)\].:*]|\s*$)")
_LONE = re.compile(r"^\s*[*_(\[]*([A-Za-z])[)\]*_]*\.?\s*$")
_BRACKETED = re.compile(r"[(\[]([A-Z])[)\]]")
_PRONOUN_I = re.compile(r"\s+[a-z]")


def extract_answer(text: str, n_options: int) -> str | None:
    """The option letter a response settles on, or None when it names none (App. B.1 Extract).

    In order: the last explicit cue ("Answer: C", "the answer is (C)", ``"answer": "C"``,
    "I choose C", "the correct option is C", ``\\boxed{C}``); a leading letter ("C) 42",
    "(C)", "C."); a single distinct bracketed letter anywhere ("... so (C)."); a lone
    letter. Letters beyond ``n_options`` never count; "Answer: I think ..." is not option I.
    """
    if not text or n_options < 1:
        return None
    valid = LETTERS[: min(n_options, len(LETTERS))]
    found: list[tuple[int, str]] = []
    for m in _CUED.finditer(text):
        letter = m.group(1) or m.group(2)
        if m.group(2) == "I" and _PRONOUN_I.match(text, m.end()):
            continue  # "Answer: I think it is B" -- the pronoun, not option I
        found.append((m.start(), letter.upper()))
    found += [(m.start(), m.group(1).upper()) for m in _BOXED.finditer(text)]
    cued = [letter for _, letter in sorted(found) if letter in valid]
    if cued:
        return cued[-1]
    m = _LEADING.match(text) or _LONE.match(text)
    if m and m.group(1).upper() in valid:
        return m.group(1).upper()
    bracketed = {m.group(1) for m in _BRACKETED.finditer(text)} & set(valid)
    if len(bracketed) == 1:
        return bracketed.pop()
    return None


# =========================================================================== traces & metrics


class DebateTrace(BaseModel):
    """One question's debate: ``answers[t][agent]`` is the letter of round t (0 = independent)."""

    question_id: str
    answers: list[dict[str, str | None]]


class DebateResult(BaseModel):
    """The traces of a debate run and their :func:`metrics`.

    ``agents`` are the agent names in order. ``calls`` holds the recorded LLM exchanges when
    :func:`run_debate` created its own client; with ``llm=`` the caller's client keeps them
    (``client.take_calls()``).
    """

    traces: list[DebateTrace]
    metrics: dict[str, float | None]
    agents: list[str] = []
    calls: list[LLMCall] = []


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
    traces: Iterable[DebateTrace], questions: Iterable[Question] | Mapping[str, Question]
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


# =========================================================================== relational prior


def _priors_module() -> Any:
    """:mod:`engine.priors` if it imports (it is optional for this module)."""
    try:
        from . import priors
    except ImportError:
        return None
    return priors


def _edges(prior: Any) -> list[tuple[str, str, float]]:
    """``(i, j, sign)`` triples of a prior (``Prior.edges``); [] for None or No-Prior."""
    if prior is None:
        return []
    raw = getattr(prior, "edges", None) or []
    items = raw.items() if isinstance(raw, Mapping) else raw  # also {(i, j): sign}
    edges = []
    for item in items:
        try:
            (i, j), s = item if isinstance(raw, Mapping) else ((item[0], item[1]), item[2])
            edges.append((str(i), str(j), max(-1.0, min(1.0, float(s)))))
        except (TypeError, ValueError, IndexError):
            raise SocialsimError(f"relational prior: cannot read edge {item!r}") from None
    return edges


def _relation_of(prior: Any) -> str | None:
    relation = getattr(prior, "relation", None)
    relation = getattr(relation, "value", relation)  # an enum's value
    return relation.lower() if isinstance(relation, str) else None


class _Network:
    """The signed, undirected relation network of a prior, for the offline model."""

    def __init__(self, prior: Any) -> None:
        self.signs = {frozenset((i, j)): s for i, j, s in _edges(prior)}
        self.slope = SLOPE.get(_relation_of(prior) or "", DEFAULT_SLOPE)

    def sign(self, a: str, b: str) -> float | None:
        """The sign of the edge a-b, or None for a non-edge (no relational context)."""
        return self.signs.get(frozenset((a, b)))

    def explicit(self, agent: str) -> bool:
        """True if ``agent`` has a stated relation (its prompt carries a relational block)."""
        return any(agent in pair for pair in self.signs)

    def conformity(self, agent: str, holders: Iterable[str]) -> float:
        """Probability of moving to the answer ``holders`` share (see the module doc)."""
        if not self.explicit(agent):
            return BASE_CONFORMITY
        signs = [s for s in (self.sign(agent, h) for h in holders) if s is not None]
        c = BASE_CONFORMITY + EXPLICIT_SHIFT
        if signs:
            c += self.slope * sum(signs) / len(signs)
        return min(CONFORMITY_CLIP[1], max(CONFORMITY_CLIP[0], c))


def default_names(k: int) -> list[str]:
    """``Agent1 .. Agentk``, the debate names of the sweep (``engine.sweep.agent_names``)."""
    return [f"Agent{i + 1}" for i in range(k)]


def agent_names(prior: Prior | None, k: int) -> list[str]:
    """The debate's agent names: ``Agent1 .. Agentk``, or the prior's own names when it
    relates other agents (then it must name exactly ``k``). Traces, LLM keys and
    ``LLMSettings.agent_models`` use these names."""
    if k < 2:
        raise SocialsimError(f"a debate needs at least 2 agents, got k={k}")
    defaults = default_names(k)
    named: dict[str, None] = {}
    for i, j, _ in _edges(prior):
        named.setdefault(i)
        named.setdefault(j)
    if all(n in defaults for n in named):
        return defaults
    if len(named) != k:
        raise SocialsimError(
            f"the relational prior relates {len(named)} agents ({', '.join(named)}) "
            f"but the debate has k={k}"
        )
    return list(named)


def relational_block(prior: Prior | None, agent: str) -> str | None:
    """``agent``'s relational system-prompt block (``engine.priors.render``); None = none."""
    if prior is None:
        return None
    priors = _priors_module()
    if priors is not None:
        return priors.render(prior, agent)
    edges = _edges(prior)  # engine.priors missing: verbalise the edges plainly
    if not edges:
        return None
    relation = _relation_of(prior) or "relation"
    lines = [f"Relations between the agents ({relation}; mutual, known to every agent):"]
    lines += [f"- {i} and {j}: {s:+g}" for i, j, s in edges]
    return "\n".join(lines)


# =========================================================================== offline mind


def _rng(seed: int, qid: str, round_no: int, agent: int, purpose: str) -> random.Random:
    """A generator for one draw site. Keyed by agent *position*, not name, so conditions
    that differ only in the prior share their random numbers (paired comparisons)."""
    key = f"{seed}|{qid}|{round_no}|{agent}|{purpose}".encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))


def _clip(x: float, bounds: tuple[float, float]) -> float:
    return min(bounds[1], max(bounds[0], x))


def _offline_debate(
    question: Question, names: Sequence[str], net: _Network, seed: int, rounds: int
) -> DebateTrace:
    letters = question.letters
    qrng = _rng(seed, question.id, -1, -1, "question")
    # a subjective question gets a hidden popular option: agents lean to it, nothing is scored
    focal = question.answer or qrng.choice(letters)
    wrong = [x for x in letters if x != focal]
    distractor = qrng.choice(wrong)
    difficulty = qrng.gauss(0, DIFFICULTY_SD)
    competence = []
    for i in range(len(names)):
        skill = _rng(seed, "", -1, i, "skill").uniform(*SKILL_RANGE)
        noise = _rng(seed, question.id, -1, i, "competence").gauss(0, COMPETENCE_SD)
        competence.append(_clip(skill + difficulty + noise, COMPETENCE_CLIP))
    first: dict[str, str | None] = {}
    for i, name in enumerate(names):
        rng = _rng(seed, question.id, 0, i, "answer")
        if rng.random() < competence[i]:
            first[name] = focal
        elif rng.random() < DISTRACTOR_PULL:
            first[name] = distractor
        else:
            first[name] = rng.choice(wrong)
    answers = [first]
    for t in range(1, rounds + 1):
        prev = answers[-1]
        answers.append(
            {
                name: _revise(
                    i,
                    names,
                    prev,
                    net,
                    competence[i],
                    question.answer,
                    _rng(seed, question.id, t, i, "revise"),
                )
                for i, name in enumerate(names)
            }
        )
    return DebateTrace(question_id=question.id, answers=answers)


def _revise(
    i: int,
    names: Sequence[str],
    prev: Mapping[str, str | None],
    net: _Network,
    competence: float,
    truth: str | None,
    rng: random.Random,
) -> str | None:
    """One agent's revision: move toward the answer more others hold, with conformity."""
    draw, tie_break = rng.random(), rng.random()
    me = names[i]
    mine = prev[me]
    others = [(n, prev[n]) for n in names if n != me]
    counts = Counter(a for _, a in others if a is not None)
    rivals = {x: c for x, c in counts.items() if x != mine}
    if not rivals:
        return mine
    support = counts.get(mine, 0) if mine is not None else 0
    best = max(rivals.values())
    if best < support:
        return mine
    candidates = sorted(x for x, c in rivals.items() if c == best)
    if best == support:  # no majority pressure: an agent may still be won over by a peer
        if truth is not None and truth in candidates and mine != truth:
            target, insight = truth, INSIGHT * competence
        else:
            target, insight = candidates[int(tie_break * len(candidates))], DOUBT * (1 - competence)
        holders = [n for n, a in others if a == target]
        return target if draw < net.conformity(me, holders) * insight else mine

    def pull(option: str) -> float:
        return net.conformity(me, [n for n, a in others if a == option])

    top = max(pull(x) for x in candidates)
    candidates = [x for x in candidates if pull(x) == top]
    target = candidates[int(tie_break * len(candidates))]
    c = top
    if truth is not None and mine is not None:
        if mine == truth:
            c *= 1 - RESIST * competence
        elif target == truth:
            c += (1 - c) * INSIGHT * competence
    pressure = (best - support) / (len(names) - 1)
    return target if draw < c * pressure else mine


# =========================================================================== LLM mind

SYSTEM = (
    "[socialsim:debate]\nYou are {agent}, one of {k} agents ({team}) answering a "
    "multiple-choice question together. You first answer on your own; then, for {rounds} "
    "revision round(s), you see the other agents' answers from the previous round and may "
    "keep or change yours. Explain your reasoning briefly and give your choice as the letter "
    "of one option."
)


def _normalise_letter(n_options: int) -> Any:
    def normalise(value: Any) -> Any:
        if isinstance(value, str):
            return extract_answer(value, n_options) or value
        return value

    return normalise


@functools.cache
def _answer_schema(n_options: int) -> type[BaseModel]:
    letters = tuple(LETTERS[:n_options])
    return create_model(
        "DebateAnswer",
        explanation=(str, Field(default="", description="your reasoning, briefly")),
        answer=(
            Annotated[Literal[letters], BeforeValidator(_normalise_letter(n_options))],  # type: ignore[valid-type]
            Field(description="the letter of the option you choose"),
        ),
    )


def _question_text(q: Question) -> str:
    options = "\n".join(
        f"({letter}) {text}" for letter, text in zip(q.letters, q.options, strict=True)
    )
    return f"Question: {q.question}\n\nOptions:\n{options}"


def _response_text(out: Any) -> str:
    if out is None:
        return "(no valid answer)"
    explanation = out.explanation.strip()
    return f"{explanation}\nAnswer: ({out.answer})" if explanation else f"Answer: ({out.answer})"


def _first_prompt(q: Question) -> str:
    return (
        f"{_question_text(q)}\n\nAnswer on your own. Explain briefly, then give the letter "
        "of your choice."
    )


def _revision_prompt(q: Question, t: int, rounds: int, others: Mapping[str, str]) -> str:
    shown = "\n\n".join(f"{name}:\n{text}" for name, text in others.items())
    return (
        f"Revision round {t} of {rounds}. The other agents' answers from the previous round:"
        f"\n\n{shown}\n\nConsidering their answers, give your updated explanation and the "
        f"letter of your choice for the same question:\n\n{_question_text(q)}"
    )


async def _llm_debate(
    question: Question,
    names: Sequence[str],
    blocks: Mapping[str, str | None],
    client: Any,
    models: Mapping[str, str],
    rounds: int,
) -> DebateTrace:
    schema = _answer_schema(len(question.options))
    team = ", ".join(names)
    history: dict[str, list[dict[str, str]]] = {}
    for name in names:
        system = SYSTEM.format(agent=name, k=len(names), team=team, rounds=rounds)
        if blocks[name]:
            system += "\n\n" + blocks[name]
        history[name] = [
            {"role": "system", "content": system},
            {"role": "user", "content": _first_prompt(question)},
        ]
    answers: list[dict[str, str | None]] = []
    texts: dict[str, str] = {}
    for t in range(rounds + 1):
        if t:
            for name in names:
                others = {o: texts[o] for o in names if o != name}
                history[name] += [
                    {"role": "assistant", "content": texts[name]},
                    {"role": "user", "content": _revision_prompt(question, t, rounds, others)},
                ]
        reason = client.stop_reason()
        if reason:
            raise BudgetError(reason)
        outs = await asyncio.gather(
            *(
                client.structured(
                    key=f"debate:{question.id}:r{t}:{name}",
                    purpose=PURPOSE,
                    agent=name,
                    model=models[name],
                    messages=list(history[name]),
                    schema=schema,
                    default=None,
                )
                for name in names
            )
        )
        answers.append(
            {n: (o.answer if o is not None else None) for n, o in zip(names, outs, strict=True)}
        )
        texts = {n: _response_text(o) for n, o in zip(names, outs, strict=True)}
    return DebateTrace(question_id=question.id, answers=answers)


async def _gather_all(coros: Sequence[Any]) -> list[Any]:
    """Run concurrently; on the first error cancel the rest and re-raise it unwrapped."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


# =========================================================================== run


async def run_debate(
    prior: Prior | None,
    questions: Sequence[Question],
    *,
    k: int = 3,
    seed: int = 0,
    model: str = "offline",
    llm: Any = None,
    rounds: int = 2,
) -> DebateResult:
    """Debate every question with ``k`` agents: an independent answer, then ``rounds`` revisions.

    ``prior`` None (or a No-Prior ``Prior``) omits the relational block. ``model="offline"``
    with no ``llm`` plays the seeded rule model (deterministic from ``seed``). Otherwise the
    agents are LLMs: ``llm`` may be an :class:`~engine.llm.client.LLMClient` or an
    ``LLMMind`` (its exchanges stay in that client: ``take_calls()``), or ``LLMSettings`` /
    None, for which a client is created, closed afterwards and its exchanges returned in
    ``DebateResult.calls`` (None: ``LLMSettings(model=model, temperature=0)``, greedy as in
    App. B.1). Agent ``n`` uses ``settings.agent_models[n]``, else ``model`` (else
    ``settings.model`` when ``model`` is "offline"). Questions run concurrently; the
    transport caps concurrency; a reached ``max_calls``/``budget_usd`` raises BudgetError.
    """
    if rounds < 0:
        raise SocialsimError(f"rounds must be >= 0, got {rounds}")
    questions = list(questions)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise SocialsimError("debate questions must have unique ids")
    names = agent_names(prior, k)
    if model == "offline" and llm is None:
        net = _Network(prior)
        traces = [_offline_debate(q, names, net, seed, rounds) for q in questions]
        return DebateResult(traces=traces, metrics=metrics(traces, questions), agents=names)

    client, owned = _client(llm, model)
    try:
        settings = client.settings
        fallback = settings.model if model == "offline" else model
        models = {n: settings.agent_models.get(n) or fallback for n in names}
        blocks = {n: relational_block(prior, n) for n in names}
        traces = await _gather_all(
            [_llm_debate(q, names, blocks, client, models, rounds) for q in questions]
        )
        calls = client.take_calls() if owned else []
    finally:
        if owned:
            await client.aclose()
    return DebateResult(
        traces=traces, metrics=metrics(traces, questions), agents=names, calls=calls
    )


def _client(llm: Any, model: str) -> tuple[Any, bool]:
    """(client, owned): the caller's LLMClient (or an LLMMind's), else a new litellm client
    on the given LLMSettings, else on ``model`` with greedy decoding (App. B.1)."""
    from .llm.settings import LLMSettings

    if llm is not None and not isinstance(llm, LLMSettings):
        client = getattr(llm, "client", llm)
        if not callable(getattr(client, "structured", None)):
            raise SocialsimError("llm= must be an LLMClient, an LLMMind or LLMSettings")
        return client, False
    from .llm.client import LLMClient
    from .llm.transport import LiteLLMTransport

    settings = llm if llm is not None else LLMSettings(model=model, temperature=0.0)
    return LLMClient(settings, LiteLLMTransport(settings)), True
