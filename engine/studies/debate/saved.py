"""A debate as a saved run: one round per question and debate round (the independent
answer, then each revision), saved as it ends, so ``list``, ``show``, ``export``,
``report`` and ``card`` read it as any run and a killed debate goes on from its last
finished turn.

Each saved round holds the turn's event (the question, or which revision it is) and one
public action per agent: the response the others are shown as the utterance, the option
chosen as the intent (``answer (B)``, or ``no valid answer``), and the round's exchanges.
Nothing in the agents' state moves. Questions are played one after another (a sweep's
unsaved debates play them at once: :func:`~engine.studies.debate.play.run_debate`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from ...core.priors import Prior
from ...core.scenario import Scenario, parse_scenario
from ...core.state import Action, Mode, ScenarioEvent
from ...errors import SaveError
from ...minds import Mind
from ...minds.spec import OFFLINE, MindSpec
from ...round.study import StudyRun
from ...saves.store import SaveStore
from ..studyfile import Shown
from .agents import agent_names, relational_block
from .play import DebateResult, QuestionDebate
from .prompts import DebateAnswer, question_text
from .questions import DebateQuestion
from .rules import Network, RuleDebater
from .scoring import metrics

#: What a turn's intent says of the option chosen (``answer (B)``), and of none.
ANSWERED = "answer ({})"
NO_ANSWER = "no valid answer"
#: A finished turn as told: (question id, debate round, each agent's option or None).
Turn = tuple[str, int, dict[str, str | None]]


def debate_scenario(
    names: Sequence[str], questions: Sequence[DebateQuestion], rounds: int
) -> Scenario:
    """The debate as a scenario: its agents, one round per question and debate round."""
    agents = [
        {
            "name": n,
            "role": "a debater answering multiple-choice questions with the others",
            "archetype": "balanced",
            "traits": ["careful"],
            "goal": "give the right answer",
            "talking_points": ["the reasoning behind my answer"],
        }
        for n in names
    ]
    ids = ", ".join(q.id for q in questions)
    return parse_scenario(
        {
            "id": "debate",
            "title": "Multi-agent debate (Relational priors)",
            "description": (
                f"{len(names)} agents answer multiple-choice questions ({ids}): each first "
                f"on their own, then in {rounds} revision round(s) seeing the others' answers."
            ),
            "rounds": len(questions) * (rounds + 1),
            "agents": agents,
        },
        "debate",
    )


def debate_run(
    prior: Prior | None,
    questions: Sequence[DebateQuestion],
    *,
    k: int = 3,
    seed: int = 0,
    mind: MindSpec | Mind = OFFLINE,
    rounds: int = 2,
    store: SaveStore | None = None,
    run_id: str | None = None,
    name: str = "",
) -> StudyRun:
    """A new debate's simulation (saved in ``store`` if given), not yet played."""
    names = agent_names(prior, k)
    label = prior.label if prior else "no-prior"
    sim = StudyRun.new(
        debate_scenario(names, questions, rounds),
        seed=seed,
        mind=mind,
        store=store,
        run_id=run_id,
        name=name or f"debate {k} agents {label} seed {seed}",
        scenario_ref="debate",
        prior=prior,
    )
    assert isinstance(sim, StudyRun)
    return sim


async def play_debate(
    sim: StudyRun,
    questions: Sequence[DebateQuestion],
    on_turn: Callable[[Turn], None] | None = None,
    shown: Shown | None = None,
) -> DebateResult:
    """Play ``sim``'s debate to its end from where its save stands (each turn saved as it
    ends; ``on_turn`` told each); ``sim`` is closed afterwards. The debate rounds per
    question follow from the run's rounds and ``questions``."""
    names = list(sim.scenario.names)
    per, left = divmod(sim.total_rounds, len(questions)) if questions else (0, 1)
    if left or per < 1:
        raise SaveError(
            f"run {sim.run_id!r}: {sim.total_rounds} rounds do not fit {len(questions)} "
            "debate questions"
        )
    prior, network = sim.meta.prior, Network(sim.meta.prior)
    blocks = {n: relational_block(prior, n) for n in names}
    debates = [
        QuestionDebate(q, names, blocks, RuleDebater(q, names, network, sim.meta.seed), per - 1)
        for q in questions
    ]
    for log in sim.history.logs(1):
        debates[(log.round - 1) // per].keep(*_read_turn(log.actions, names))
    try:
        with shown(sim) if shown is not None else contextlib.nullcontext():
            while not sim.finished:
                debate, t = debates[sim.round // per], sim.round % per
                with sim.progress.round(sim.round + 1, len(names)):
                    sim.progress.phase("debate")
                    outs = await debate.turn(sim.mind, t)
                sim.record([_event(debate.question, t, per - 1)], _actions(names, outs, debate))
                if on_turn is not None:
                    on_turn((debate.question.id, t, debate.answers[-1]))
    finally:
        await sim.aclose()
    traces = [d.trace for d in debates]
    return DebateResult(traces=traces, metrics=metrics(traces, questions), agents=names)


def _event(q: DebateQuestion, t: int, rounds: int) -> ScenarioEvent:
    """The turn's event: the question, then which revision of it."""
    if t == 0:
        return ScenarioEvent(text=f"Question {q.id}. {question_text(q)}", source="narrator")
    return ScenarioEvent(
        text=f"Question {q.id}, revision round {t} of {rounds}.", source="narrator"
    )


def _actions(
    names: Sequence[str], outs: Sequence[DebateAnswer], debate: QuestionDebate
) -> list[Action]:
    """Each agent's response as a public action, its option as the intent."""
    said = debate.said[-1]
    return [
        Action(
            speaker=n,
            urgency=0.0,
            mode=Mode.PUBLIC,
            intent=ANSWERED.format(o.answer) if o.answer is not None else NO_ANSWER,
            utterance=said[n],
            order=i + 1,
        )
        for i, (n, o) in enumerate(zip(names, outs, strict=True))
    ]


def _read_turn(
    actions: Sequence[Action], names: Sequence[str]
) -> tuple[dict[str, str | None], dict[str, str]]:
    """A saved turn's answers and responses, as :func:`_actions` wrote them."""
    by = {a.speaker: a for a in actions}
    if set(by) != set(names):
        raise SaveError(f"a saved debate turn has the actions of {sorted(by)}, not {names}")
    answers: dict[str, str | None] = {}
    for n in names:
        intent = by[n].intent
        answers[n] = intent[len("answer (") : -1] if intent.startswith("answer (") else None
    return answers, {n: by[n].utterance for n in names}
