"""Will a run's prompts fit its server's context window? Asked before the first round.

The largest prompt the run will send is the largest the estimate renders (its rounds run
until the history window is full, after which prompts stop growing); with the reply's
``--max-tokens`` it must fit the window the server says it has (``engine.llm.server``). A
prompt that would be cut stops the run before anything is written, with one line saying the
prompt's tokens, the window and how to raise it.
"""

from __future__ import annotations

from ..core.priors import Prior
from ..core.scenario import Scenario
from ..errors import SocialsimError
from ..llm.server import ServerInfo, servers_of
from ..llm.settings import LLMSettings
from ..minds.spec import MindSpec


def check_window(
    scenario: Scenario,
    spec: MindSpec,
    rounds: int | None = None,
    *,
    prior: Prior | None = None,
    seed: int = 0,
) -> dict[str, ServerInfo]:
    """Raise :class:`SocialsimError` when the run's largest prompt and reply would not fit
    a model's context window; else what the servers said (for their slot counts)."""
    if not isinstance(spec, LLMSettings):
        return {}
    servers = servers_of(spec)
    windows = {m: i for m, i in servers.items() if i.window}
    if not windows:
        return servers
    from .estimate import estimate_run

    largest = estimate_run(scenario, spec, rounds, None, prior=prior, seed=seed).largest_prompt
    for model, info in sorted(windows.items()):
        assert info.window is not None
        if largest + spec.max_tokens > info.window:
            raise SocialsimError(
                f"{model}: the run's largest prompt is about {largest} tokens and a reply "
                f"may take {spec.max_tokens} (--max-tokens), but {info.kind}'s context window "
                f"holds {info.window}; raise it ({info.raise_with}) to at least "
                f"{largest + spec.max_tokens}, or lower --max-tokens"
            )
    return servers
