"""Everything that decides, speaks or judges sits behind :class:`Mind`."""

from .base import AgentContext, Mind, RelationJudgement
from .offline import OfflineMind

__all__ = ["AgentContext", "Mind", "OfflineMind", "RelationJudgement", "make_mind"]


def make_mind(model: str, seed: int) -> Mind:
    """The mind for a ``--model`` value; ``offline`` is the rule-based model."""
    if model == "offline":
        return OfflineMind(seed)
    from ..errors import SocialsimError

    raise SocialsimError(f"--model {model!r}: only the offline model is available in this build")
