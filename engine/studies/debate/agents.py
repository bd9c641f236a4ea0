"""The debating agents: their names and the relational block of each one's system prompt."""

from __future__ import annotations

from ...core.priors import Prior, render
from ...errors import SocialsimError


def default_names(k: int) -> list[str]:
    """``Agent1 .. Agentk``, the debate names of the sweep (``engine.studies.sweep.agent_names``)."""
    return [f"Agent{i + 1}" for i in range(k)]


def agent_names(prior: Prior | None, k: int) -> list[str]:
    """The debate's agent names: ``Agent1 .. Agentk``, or the prior's own names when it
    relates other agents (then it must name exactly ``k``). Traces, exchange keys and
    ``LLMSettings.agent_models`` use these names."""
    if k < 2:
        raise SocialsimError(f"a debate needs at least 2 agents, got k={k}")
    defaults = default_names(k)
    named = prior.names if prior is not None else []
    if all(n in defaults for n in named):
        return defaults
    if len(named) != k:
        raise SocialsimError(
            f"the relational prior relates {len(named)} agents ({', '.join(named)}) "
            f"but the debate has k={k}"
        )
    return named


def relational_block(prior: Prior | None, agent: str) -> str | None:
    """``agent``'s relational system-prompt block (:func:`engine.core.priors.render`); None for no
    prior or No-Prior."""
    return render(prior, agent) if prior is not None else None
