"""A typed question to a mind: what every structured question in socialsim is.

The offline mind answers a question by rule (``offline``); an LLM mind sends ``messages``
to its structured client and validates the reply against ``schema``: one place for
validation, repair, re-ask, fallback, recording for replay and cost caps, whichever
study asks (GovSim harvests, surveys, ratings, votes, proposals, diagnoses, debate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

A = TypeVar("A", bound=BaseModel)
Message = dict[str, str]


@dataclass(frozen=True, slots=True)
class Question(Generic[A]):
    """One structured question.

    ``key`` names the exchange deterministically (replay serves responses by key);
    ``messages`` is built only when a model is asked (a callable, or a list); ``offline``
    is the rule answer, and also the safe answer when a model fails unless ``fallback``
    says otherwise. ``judge`` asks the judge model rather than the agent's own model;
    ``temperature`` overrides the run's (GovSim 0.8, debate greedy).
    """

    purpose: str
    key: str
    agent: str
    messages: Callable[[], list[Message]] | list[Message]
    schema: type[A]
    offline: Callable[[], A]
    fallback: Callable[[], A] | None = None
    judge: bool = False
    temperature: float | None = None

    def render(self) -> list[Message]:
        """The messages to send."""
        return self.messages() if callable(self.messages) else list(self.messages)

    def safe(self) -> A:
        """The answer used when a model gives none that validates."""
        return (self.fallback or self.offline)()
