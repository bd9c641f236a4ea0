"""Debate questions: multiple-choice items (MMLU-Pro style JSONL) and the bundled sample."""

from __future__ import annotations

import json
import string
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from ...errors import SocialsimError

LETTERS = string.ascii_uppercase
SAMPLE_PACKAGE = "scenarios.debate"
SAMPLE_FILE = "sample.jsonl"


class DebateQuestion(BaseModel):
    """One multiple-choice question; ``answer`` is an option letter, None if subjective."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=2, max_length=len(LETTERS))
    answer: str | None = None

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> DebateQuestion:
        if self.answer is not None and self.answer not in self.letters:
            raise ValueError(
                f"answer {self.answer!r} is not one of the option letters A-{self.letters[-1]}"
            )
        return self

    @property
    def letters(self) -> str:
        """The option letters, "ABCD" for four options."""
        return LETTERS[: len(self.options)]


def load_questions(path: Path) -> list[DebateQuestion]:
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


def sample_questions() -> list[DebateQuestion]:
    """The bundled 12-question sample (6 objective, 6 subjective)."""
    text = resources.files(SAMPLE_PACKAGE).joinpath(SAMPLE_FILE).read_text(encoding="utf-8")
    return _parse_questions(text, f"{SAMPLE_PACKAGE}/{SAMPLE_FILE}")


def _parse_questions(text: str, source: str) -> list[DebateQuestion]:
    questions: list[DebateQuestion] = []
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


def _question_from_row(row: Any, where: str) -> DebateQuestion:
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
        return DebateQuestion(
            id=str(qid), question=row.get("question"), options=options, answer=answer
        )
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "question"
        raise SocialsimError(f"{where}: {loc}: {first['msg']}") from None
