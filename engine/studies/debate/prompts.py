"""What a model agent sees and answers in a debate (Relational priors App. B.1, AutoGen-style):
the system prompt with the relational block, its own dialogue history, the others' previous
responses, and a structured answer whose letter is validated against the options."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, create_model

from ...minds.question import Message
from .extract import extract_answer
from .questions import LETTERS, DebateQuestion

SYSTEM = (
    "You are {agent}, one of {k} agents ({team}) answering a "
    "multiple-choice question together. You first answer on your own; then, for {rounds} "
    "revision round(s), you see the other agents' answers from the previous round and may "
    "keep or change yours. Explain your reasoning briefly and give your choice as the letter "
    "of one option."
)

#: The longest explanation kept, as speech is capped (engine/minds/llm.py SPEECH_CHARS): a
#: server that holds replies to a grammar stops the model there (Gemma 3 270M ran its
#: revisions to the 1,024-token reply cap, about 100 s each); a longer one is clamped.
ANSWER_CHARS = 480


class DebateAnswer(BaseModel):
    """One agent's answer in one round; ``answer`` None means no valid answer (a missing
    vote). Models reply to :func:`answer_schema`, which requires one of the option letters."""

    explanation: str = Field(
        default="", max_length=ANSWER_CHARS, description="your reasoning, briefly"
    )
    answer: str | None = None


def _normalise_letter(n_options: int) -> Any:
    def normalise(value: Any) -> Any:
        if isinstance(value, str):
            return extract_answer(value, n_options) or value
        return value

    return normalise


@functools.cache
def answer_schema(n_options: int) -> type[DebateAnswer]:
    """The reply a model must give for a question with ``n_options`` options ("(C)", "c",
    ... are normalised to the letter)."""
    letters = tuple(LETTERS[:n_options])
    letter: Any = Annotated[Literal[letters], BeforeValidator(_normalise_letter(n_options))]
    return create_model(
        "DebateAnswer",
        __base__=DebateAnswer,
        answer=(letter, Field(description="the letter of the option you choose")),
    )


def response_text(out: DebateAnswer) -> str:
    """An answer as the other agents are shown it."""
    if out.answer is None:
        return "(no valid answer)"
    explanation = out.explanation.strip()
    return f"{explanation}\nAnswer: ({out.answer})" if explanation else f"Answer: ({out.answer})"


def messages(
    q: DebateQuestion,
    agent: str,
    names: Sequence[str],
    block: str | None,
    rounds: int,
    said: Sequence[Mapping[str, str]],
) -> list[Message]:
    """``agent``'s dialogue so far: the system prompt (with its relational ``block``), the
    question, then for each past round ``said[t]`` its own response and a revision prompt
    showing the others' responses."""
    system = SYSTEM.format(agent=agent, k=len(names), team=", ".join(names), rounds=rounds)
    if block:
        system += "\n\n" + block
    history = [
        {"role": "system", "content": system},
        {"role": "user", "content": _first_prompt(q)},
    ]
    for t, texts in enumerate(said, start=1):
        others = {o: texts[o] for o in names if o != agent}
        history += [
            {"role": "assistant", "content": texts[agent]},
            {"role": "user", "content": _revision_prompt(q, t, rounds, others)},
        ]
    return history


def question_text(q: DebateQuestion) -> str:
    options = "\n".join(
        f"({letter}) {text}" for letter, text in zip(q.letters, q.options, strict=True)
    )
    return f"Question: {q.question}\n\nOptions:\n{options}"


def _first_prompt(q: DebateQuestion) -> str:
    return (
        f"{question_text(q)}\n\nAnswer on your own. Explain briefly, then give the letter "
        "of your choice."
    )


def _revision_prompt(q: DebateQuestion, t: int, rounds: int, others: Mapping[str, str]) -> str:
    shown = "\n\n".join(f"{name}:\n{text}" for name, text in others.items())
    return (
        f"Revision round {t} of {rounds}. The other agents' answers from the previous round:"
        f"\n\n{shown}\n\nConsidering their answers, give your updated explanation and the "
        f"letter of your choice for the same question:\n\n{question_text(q)}"
    )
