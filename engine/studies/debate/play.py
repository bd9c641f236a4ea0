"""Playing a debate: every agent answer is a :class:`~engine.minds.Question` asked of a mind.

Round 0 is the independent answer; each of ``rounds`` revisions shows an agent the others'
responses of the previous round. The offline mind answers by the rule model
(:mod:`engine.studies.debate.rules`), from the previous round's answers; an LLM mind asks the
agent's model with its dialogue history (:mod:`engine.studies.debate.prompts`), greedily (App. B.1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel

from ...core.exchanges import LLMCall
from ...core.priors import Prior
from ...errors import BudgetError, SocialsimError
from ...llm.progress import Calls
from ...llm.settings import LLMSettings
from ...minds import Mind, Question, make_mind
from ...minds.spec import OFFLINE, MindSpec, Offline
from .agents import agent_names, relational_block
from .prompts import DebateAnswer, answer_schema, messages, response_text
from .questions import DebateQuestion
from .rules import Network, RuleDebater
from .scoring import DebateTrace, metrics

PURPOSE = "debate"
#: Greedy decoding, as in Relational priors App. B.1.
TEMPERATURE = 0.0

T = TypeVar("T")


class DebateResult(BaseModel):
    """The traces of a debate run and their :func:`~engine.studies.debate.scoring.metrics`.

    ``agents`` are the agent names in order. ``calls`` holds the recorded model exchanges
    when :func:`run_debate` built its own mind; a mind passed in keeps them
    (``mind.take_calls()``).
    """

    traces: list[DebateTrace]
    metrics: dict[str, float | None]
    agents: list[str] = []
    calls: list[LLMCall] = []


class QuestionDebate:
    """One question's debate: each agent's answer and response text, round by round."""

    def __init__(
        self,
        question: DebateQuestion,
        names: Sequence[str],
        blocks: Mapping[str, str | None],
        rules: RuleDebater,
        rounds: int,
    ) -> None:
        self.question, self.names, self.blocks = question, names, blocks
        self.rules, self.rounds = rules, rounds
        self.schema = answer_schema(len(question.options))
        self.answers: list[dict[str, str | None]] = []
        self.said: list[dict[str, str]] = []

    def ask(self, i: int, round_no: int) -> Question[DebateAnswer]:
        """Agent ``i``'s question in round ``round_no``; a model that gives no valid answer
        casts no vote."""
        name = self.names[i]
        prev = self.answers[-1] if self.answers else {}
        said = tuple(self.said)
        return Question(
            purpose=PURPOSE,
            key=f"debate:{self.question.id}:r{round_no}:{name}",
            agent=name,
            messages=lambda: messages(
                self.question, name, self.names, self.blocks[name], self.rounds, said
            ),
            schema=self.schema,
            offline=lambda: DebateAnswer(answer=self.rules.answer(i, round_no, prev)),
            fallback=DebateAnswer,
            temperature=TEMPERATURE,
        )

    async def turn(self, mind: Mind, t: int) -> list[DebateAnswer]:
        """Round ``t``: every agent asked at once; their answers kept. A reached call or
        budget cap stops the debate."""
        reason = mind.stop_reason()
        if reason:
            raise BudgetError(reason)
        outs = await asyncio.gather(*(mind.ask(self.ask(i, t)) for i in range(len(self.names))))
        self.keep(
            {n: o.answer for n, o in zip(self.names, outs, strict=True)},
            {n: response_text(o) for n, o in zip(self.names, outs, strict=True)},
        )
        return outs

    def keep(self, answers: dict[str, str | None], said: dict[str, str]) -> None:
        """A finished round's answers and the responses the others are shown."""
        self.answers.append(answers)
        self.said.append(said)

    @property
    def trace(self) -> DebateTrace:
        """The rounds played so far."""
        return DebateTrace(question_id=self.question.id, answers=self.answers)

    async def play(self, mind: Mind) -> DebateTrace:
        """Ask every agent, round by round."""
        for t in range(self.rounds + 1):
            await self.turn(mind, t)
        return self.trace


async def _gather_all(aws: Sequence[Awaitable[T]]) -> list[T]:
    """Run concurrently; on the first error cancel the rest and re-raise it unwrapped."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_debate(
    prior: Prior | None,
    questions: Sequence[DebateQuestion],
    *,
    k: int = 3,
    seed: int = 0,
    mind: MindSpec | Mind = OFFLINE,
    rounds: int = 2,
) -> DebateResult:
    """Debate every question with ``k`` agents: an independent answer, then ``rounds`` revisions.

    ``prior`` None (or a No-Prior ``Prior``) omits the relational block. ``mind`` is a spec
    (the mind is built with ``seed``, closed afterwards, and its exchanges returned in
    ``DebateResult.calls``) or a built mind (its exchanges stay in it). The offline rule
    model is deterministic from ``seed``; an LLM agent ``n`` is played by
    ``settings.model_for(n)``. Questions run concurrently; the transport caps concurrency;
    a reached ``max_calls``/``budget_usd`` raises BudgetError. The debate's calls are
    tracked as one round (engine/llm/progress.py), every agent asked once a round expected.
    """
    if rounds < 0:
        raise SocialsimError(f"rounds must be >= 0, got {rounds}")
    questions = list(questions)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise SocialsimError("debate questions must have unique ids")
    names = agent_names(prior, k)
    blocks = {n: relational_block(prior, n) for n in names}
    network = Network(prior)
    debates = [
        QuestionDebate(q, names, blocks, RuleDebater(q, names, network, seed), rounds)
        for q in questions
    ]
    calls: list[LLMCall] = []
    tracked = Calls()
    with tracked.round(1, len(debates) * k * (rounds + 1)):
        tracked.phase("debate")
        if isinstance(mind, Offline | LLMSettings):
            brain = make_mind(mind, seed)
            try:
                traces = await _gather_all([d.play(brain) for d in debates])
                calls = brain.take_calls()
            finally:
                await brain.aclose()
        else:
            traces = await _gather_all([d.play(mind) for d in debates])
    return DebateResult(
        traces=traces, metrics=metrics(traces, questions), agents=names, calls=calls
    )
