"""Everything that decides, speaks or judges sits behind :class:`Mind`."""

from __future__ import annotations

from ..llm.settings import LLMSettings
from .base import AgentContext, Mind, RelationJudgement
from .offline import OfflineMind

__all__ = ["AgentContext", "Mind", "OfflineMind", "RelationJudgement", "make_mind"]


def make_mind(model: str, seed: int, llm: LLMSettings | None = None) -> Mind:
    """The mind for a ``--model`` value: ``offline`` is the rule-based model, anything else
    a litellm model string (litellm is imported only then)."""
    if model == "offline":
        return OfflineMind(seed)
    from ..llm.mind import LLMMind

    return LLMMind(llm or LLMSettings(model=model))
