"""Dual-track measurement (EduMirror): a Surveyor and a Rater, post hoc, never changing a run.

* The Surveyor administers a questionnaire to one agent at chosen rounds, from the agent's
  logged state at that round: RSES (Fig. 27; items 3, 5, 8, 9, 10 reverse-scored, total
  10-40), the six-item SVO slider (Fig. 28) with the standard SVO angle, or any Likert
  questionnaire of the scenario. The offline model answers from internal state (RSES from
  self-worth and sense of respect; the slider from the agent's SVO); an LLM answers in role.
* The Rater scores observable behaviour from the transcript against the scenario's criteria.
Results are kept in the run folder (``measurements.json``) and exported to CSV.
"""

from __future__ import annotations

import contextlib
import re
import statistics
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.scenario import Criterion, LikertItem, Questionnaire, Scenario
from ..core.state import AgentState, Mode, RoundRecord
from ..core.values import SVO_ANGLE, svo_angle, svo_category
from ..errors import SocialsimError
from ..minds import Mind, Question, make_mind
from ..minds.spec import OFFLINE, MindSpec, Offline

SELF_ESTEEM = ["self_worth", "sense_of_respect"]
RSES = Questionnaire(
    title="Rosenberg Self-Esteem Scale",
    scale_min=1,
    scale_max=4,
    labels=["Strongly Disagree", "Disagree", "Agree", "Strongly Agree"],
    items=[
        LikertItem(text=t, reverse=r, needs=SELF_ESTEEM)
        for t, r in [
            ("I feel that I am a person of worth, at least on an equal plane with others.", False),
            ("I feel that I have a number of good qualities.", False),
            ("All in all, I am inclined to feel that I am a failure.", True),
            ("I am able to do things as well as most other people.", False),
            ("I feel I do not have much to be proud of.", True),
            ("I take a positive attitude toward myself.", False),
            ("On the whole, I am satisfied with myself.", False),
            ("I wish I could have more respect for myself.", True),
            ("I certainly feel useless at times.", True),
            ("At times I think I am no good at all.", True),
        ]
    ],
)
"""The ten items in the order of EduMirror Fig. 27; items 3, 5, 8, 9 and 10 are reversed."""

#: The six primary SVO slider items of Fig. 28: nine (self, other) options each, A..I.
SVO_SLIDER: list[list[tuple[int, int]]] = [
    [(85, 85), (85, 76), (85, 68), (85, 59), (85, 50), (85, 41), (85, 33), (85, 24), (85, 15)],
    [(85, 15), (87, 19), (89, 24), (91, 28), (93, 33), (94, 37), (96, 41), (98, 46), (100, 50)],
    [(50, 100), (54, 98), (59, 96), (63, 94), (68, 93), (72, 91), (76, 89), (81, 87), (85, 85)],
    [(50, 100), (54, 89), (59, 79), (63, 68), (68, 58), (72, 47), (76, 36), (81, 26), (85, 15)],
    [(100, 50), (94, 56), (88, 63), (81, 69), (75, 75), (69, 81), (63, 88), (56, 94), (50, 100)],
    [(100, 50), (98, 54), (96, 59), (94, 63), (93, 68), (91, 72), (89, 76), (87, 81), (85, 85)],
]
LETTERS = "ABCDEFGHI"


class SurveyResult(BaseModel):
    """One administration of a questionnaire to one agent at one round."""

    model_config = ConfigDict(extra="forbid")

    questionnaire: str
    agent: str
    round: int
    answers: list[int]
    score: float
    angle: float | None = None
    category: str | None = None
    respondent: str


class Rating(BaseModel):
    """The Rater's score of one agent on one criterion over a run."""

    model_config = ConfigDict(extra="forbid")

    criterion: str
    agent: str
    score: int
    evidence: str
    rater: str


def questionnaire(scenario: Scenario, name: str) -> Questionnaire | None:
    """A Likert questionnaire by id: ``rses``, or one the scenario defines (``svo`` is the
    slider and has no Likert items)."""
    if name in scenario.questionnaires:
        return scenario.questionnaires[name]
    if name == "rses":
        return RSES
    if name == "svo":
        return None
    known = ", ".join(dict.fromkeys(["rses", "svo", *scenario.questionnaires]))
    raise SocialsimError(f"--questionnaire {name!r}: unknown; known: {known}")


def likert_score(q: Questionnaire, answers: Sequence[int]) -> float:
    """Sum of item scores, reverse items counted as scale_max + scale_min - answer."""
    if len(answers) != len(q.items):
        raise ValueError(f"{q.title}: {len(answers)} answers for {len(q.items)} items")
    total = 0
    for item, a in zip(q.items, answers, strict=True):
        if not q.scale_min <= a <= q.scale_max:
            raise ValueError(f"{q.title}: answer {a} outside {q.scale_min}-{q.scale_max}")
        total += (q.scale_max + q.scale_min - a) if item.reverse else a
    return float(total)


def slider_angle(choices: Sequence[int]) -> float:
    """SVO angle of six slider choices (option index 0-8 per item)."""
    mine = statistics.fmean(SVO_SLIDER[k][c][0] for k, c in enumerate(choices))
    theirs = statistics.fmean(SVO_SLIDER[k][c][1] for k, c in enumerate(choices))
    return svo_angle(mine, theirs)


def offline_likert(q: Questionnaire, state: AgentState) -> list[int]:
    """Answers consistent with internal state: agreement follows the item's needs."""
    answers = []
    n = len(q.items)
    for k, item in enumerate(q.items):
        needs = item.needs or list(state.needs)
        level = statistics.fmean(state.needs[d].current for d in needs) / 10.0
        # Items differ a little in how easily they are endorsed, so totals move smoothly.
        level += 0.3 * ((k + 0.5) / n - 0.5)
        level = 1.0 - level if item.reverse else level
        level = min(1.0, max(0.0, level))
        answers.append(round(q.scale_min + level * (q.scale_max - q.scale_min)))
    return answers


def offline_slider(svo: str) -> list[int]:
    """Slider answers whose SVO angle comes closest to the agent's SVO target.

    Exact search: the angle depends only on the summed allocations, so a pass over the six
    items keeps every reachable (self, other) sum with one choice sequence that reaches it.
    """
    target = SVO_ANGLE[svo]
    reach: dict[tuple[int, int], list[int]] = {(0, 0): []}
    for row in SVO_SLIDER:
        step: dict[tuple[int, int], list[int]] = {}
        for (mine, theirs), picks in reach.items():
            for o, (s_, t_) in enumerate(row):
                step.setdefault((mine + s_, theirs + t_), [*picks, o])
        reach = step
    n = len(SVO_SLIDER)
    best = min(reach, key=lambda k: (abs(svo_angle(k[0] / n, k[1] / n) - target), k))
    return reach[best]


async def survey(
    scenario: Scenario,
    records: Sequence[RoundRecord],
    name: str,
    agent: str,
    rounds: Sequence[int],
    mind: MindSpec | Mind = OFFLINE,
) -> list[SurveyResult]:
    """Administer questionnaire ``name`` to ``agent`` at each round; the run is untouched.

    ``mind`` answers: the offline model from internal state, or an LLM in role (a spec, or
    a built mind)."""
    if agent not in scenario.names:
        raise SocialsimError(
            f"--agent {agent!r}: no such agent; agents: {', '.join(scenario.names)}"
        )
    last = records[-1].round
    for r in rounds:
        if not 0 <= r <= last:
            raise SocialsimError(f"--rounds: round {r} is outside the run (0..{last})")
    q = questionnaire(scenario, name)
    results = []
    async with _asking(mind) as asked:
        respondent = _who(asked.spec)
        for r in rounds:
            state = records[r].state.agents[agent]
            if q is None:
                choices = await asked.ask(_slider_question(scenario, agent, state, r))
                angle = slider_angle(choices.picks())
                results.append(
                    SurveyResult(
                        questionnaire=name,
                        agent=agent,
                        round=r,
                        answers=choices.picks(),
                        score=angle,
                        angle=angle,
                        category=svo_category(angle),
                        respondent=respondent,
                    )
                )
                continue
            out = await asked.ask(_likert_question(scenario, agent, state, r, name, q))
            answers = list(out.answers)
            results.append(
                SurveyResult(
                    questionnaire=name,
                    agent=agent,
                    round=r,
                    answers=answers,
                    score=likert_score(q, answers),
                    respondent=respondent,
                )
            )
    return results


@contextlib.asynccontextmanager
async def _asking(mind: MindSpec | Mind) -> AsyncIterator[Mind]:
    """The mind to ask: the one given, or one built from a spec and closed afterwards."""
    if not isinstance(mind, MindSpec):
        yield mind
        return
    built = make_mind(mind, 0)
    try:
        yield built
    finally:
        await built.aclose()


def _who(spec: MindSpec, judge: bool = False) -> str:
    """Who answered: the offline model, or ``LLM <model>`` (the judge model for ratings)."""
    if isinstance(spec, Offline):
        return spec.label
    return f"LLM {spec.judge if judge else spec.model}"


def _persona_block(scenario: Scenario, agent: str, state: AgentState, r: int) -> str:
    from ..core.values import describe

    spec = scenario.agent(agent)
    needs = "; ".join(
        f"{n.replace('_', ' ')}: {describe(v.current)} ({v.current:.1f})"
        for n, v in state.needs.items()
    )
    return (
        f"You are {agent}, {spec.role}, in '{scenario.title}', at round {r}. Traits: "
        f"{', '.join(spec.traits) or '-'}. Your emotional state is {state.emotion:.2f} "
        f"(0-1). How your needs stand: {needs}. Answer as yourself, honestly."
    )


class _Answers(BaseModel):
    answers: list[int]


def _likert_question(
    scenario: Scenario, agent: str, state: AgentState, r: int, name: str, q: Questionnaire
) -> Question[_Answers]:
    """One Likert questionnaire to one agent at one round; offline: from internal state."""
    answers: Any = list[Literal[tuple(range(q.scale_min, q.scale_max + 1))]]  # type: ignore[misc]
    schema = create_model(
        "Answers",
        __base__=_Answers,
        answers=(answers, Field(min_length=len(q.items), max_length=len(q.items))),
    )

    def messages() -> list[dict[str, str]]:
        labels = ", ".join(f"{q.scale_min + k} = {label}" for k, label in enumerate(q.labels))
        items = "\n".join(f"{k + 1}. {i.text}" for k, i in enumerate(q.items))
        return [
            {
                "role": "system",
                "content": f"{_persona_block(scenario, agent, state, r)}",
            },
            {
                "role": "user",
                "content": f"{q.title}. Rate each statement from {q.scale_min} to "
                f"{q.scale_max}{' (' + labels + ')' if labels else ''}:\n{items}",
            },
        ]

    return Question(
        purpose="survey",
        key=f"survey:{name}:{agent}:{r}",
        agent=agent,
        messages=messages,
        schema=schema,
        offline=lambda: schema(answers=offline_likert(q, state)),
    )


class _Choices(BaseModel):
    choices: list[str]

    def picks(self) -> list[int]:
        """The option index (0-8) chosen on each slider item."""
        return [LETTERS.index(c) for c in self.choices]


def _slider_question(
    scenario: Scenario, agent: str, state: AgentState, r: int
) -> Question[_Choices]:
    """The six SVO slider items to one agent at one round; offline: from the agent's SVO."""
    letters: Any = list[Literal[tuple(LETTERS)]]  # type: ignore[misc]
    schema = create_model(
        "Choices", __base__=_Choices, choices=(letters, Field(min_length=6, max_length=6))
    )

    def messages() -> list[dict[str, str]]:
        items = "\n".join(
            f"Question {k + 1}: "
            + " ".join(f"{LETTERS[o]}: {s}, {t}" for o, (s, t) in enumerate(row))
            for k, row in enumerate(SVO_SLIDER)
        )
        return [
            {
                "role": "system",
                "content": f"{_persona_block(scenario, agent, state, r)}",
            },
            {
                "role": "user",
                "content": "For each choice, the first number is the coins for you "
                "and the second for another participant. Pick one letter per question.\n" + items,
            },
        ]

    svo = scenario.agent(agent).svo
    return Question(
        purpose="survey",
        key=f"survey:svo:{agent}:{r}",
        agent=agent,
        messages=messages,
        schema=schema,
        offline=lambda: schema(choices=[LETTERS[c] for c in offline_slider(svo)]),
    )


async def rate(
    scenario: Scenario, records: Sequence[RoundRecord], mind: MindSpec | Mind = OFFLINE
) -> list[Rating]:
    """Score every agent on every criterion of the scenario from the transcript.

    One question per criterion to ``mind``'s judge: offline, a count of the turns that use
    the criterion's cue words; an LLM rates from the whole transcript."""
    if not scenario.criteria:
        raise SocialsimError(f"{scenario.title!r} defines no rater criteria")
    said: dict[str, list[str]] = {n: [] for n in scenario.names}
    for r in records[1:]:
        for a in r.actions:
            if a.mode is not Mode.SILENT:
                said[a.speaker].append(f"R{r.round}: {a.utterance}")
    ratings = []
    async with _asking(mind) as asked:
        rater = _who(asked.spec, judge=True)
        for c in scenario.criteria:
            out = await asked.ask(_rating_question(scenario, c, said))
            given = {s.agent: s for s in out.scores}
            for agent in scenario.names:
                s = given.get(agent)
                ratings.append(
                    Rating(
                        criterion=c.name,
                        agent=agent,
                        score=s.score if s else c.scale_min,
                        evidence=s.evidence[:200] if s else "not rated",
                        rater=rater,
                    )
                )
    return ratings


def _says(text: str, cue: str) -> bool:
    """Whether ``text`` contains ``cue`` as whole words (so "our" is not found in "your")."""
    return re.search(rf"\b{re.escape(cue.lower())}\b", text.lower()) is not None


class _Score(BaseModel):
    agent: str
    score: int
    evidence: str


class _Scores(BaseModel):
    scores: list[_Score]


def _rating_question(
    scenario: Scenario, c: Criterion, said: dict[str, list[str]]
) -> Question[_Scores]:
    """Every agent's score on one criterion. Offline: the scale minimum plus one per turn
    using a cue word, the first such turn as evidence; a failed model rates nobody."""
    agents: Any = Literal[tuple(scenario.names)]
    row = create_model(
        "Score",
        __base__=_Score,
        agent=(agents, ...),
        score=(int, Field(ge=c.scale_min, le=c.scale_max)),
    )
    schema = create_model("Scores", __base__=_Scores, scores=(list[row], ...))

    def messages() -> list[dict[str, str]]:
        transcript = "\n".join(f"{n}: {line}" for n, lines in said.items() for line in lines)
        return [
            {
                "role": "system",
                "content": "You rate observable behaviour in a "
                "transcript, fairly and only from what was said.",
            },
            {
                "role": "user",
                "content": f"Criterion: {c.name} — {c.description}. Score every "
                f"agent from {c.scale_min} to {c.scale_max} and quote the evidence.\n{transcript}",
            },
        ]

    def by_cues() -> _Scores:
        scores = []
        for agent, lines in said.items():
            hits = [line for line in lines if any(_says(line, cue) for cue in c.cues)]
            scores.append(
                row(
                    agent=agent,
                    score=min(c.scale_max, c.scale_min + len(hits)),
                    evidence=hits[0][:200] if hits else "no matching turn",
                )
            )
        return schema(scores=scores)

    return Question(
        purpose="rate",
        key=f"rate:{c.name}",
        agent="rater",
        messages=messages,
        schema=schema,
        offline=by_cues,
        fallback=lambda: schema(scores=[]),
        judge=True,
    )
