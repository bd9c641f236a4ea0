"""Everything that decides, speaks, judges or answers a question sits behind :class:`Mind`."""

from __future__ import annotations

from .base import AgentContext, Mind, RelationJudgement
from .offline import OfflineMind
from .question import Question
from .spec import OFFLINE, MindSpec, Offline, mind_spec

__all__ = [
    "OFFLINE",
    "AgentContext",
    "Mind",
    "MindSpec",
    "Offline",
    "OfflineMind",
    "Question",
    "RelationJudgement",
    "make_mind",
    "mind_spec",
]


def make_mind(spec: MindSpec, seed: int) -> Mind:
    """The mind a spec names: the rule-based model, or LLMs (litellm is imported only then)."""
    if isinstance(spec, Offline):
        return OfflineMind(seed, spec.dynamics)
    from .llm import LLMMind

    return LLMMind(spec)
