"""``estimate``: calls, tokens and cost of an LLM run before it is started; the threshold
above which the app asks before a new LLM run plays (``tui --confirm-above``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.core.limits import MAX_ROUNDS

from .base import SavesOpt, fail, make_console, open_store
from .options import LLMOptions, llm_options

if TYPE_CHECKING:
    from rich.table import Table

    from engine import Scenario
    from engine.minds.spec import MindSpec
    from engine.studies.estimate import Estimate


@llm_options("model", "judge_model", "agent_model", "judge_mode", "structured", "structured_model")
def estimate(
    scenario: Annotated[str, typer.Argument(help="Library id (see `scenarios`) or a .toml path.")],
    rounds: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_ROUNDS, help="Rounds to play [default: the scenario's]."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the offline rounds played to render.")] = 0,
    prior: Annotated[
        str | None, typer.Option(help="Relational prior, as for `run` (in every prompt).")
    ] = None,
    saves: SavesOpt = None,
    *,
    llm: LLMOptions,
) -> None:
    """Estimate the LLM calls, tokens and cost of a run of SCENARIO, with a range.

    The first rounds' prompts are rendered (the offline model plays them) and counted with
    litellm's tokenizer; earlier saved runs of the same scenario and models give their
    recorded usage. Prices come from litellm's cost map. Nothing is sent.
    """
    if scenario in ("govsim", "debate"):
        fail(f"estimate {scenario}: estimates cover scenario runs; govsim and debate are not")
    from engine import resolve_scenario
    from engine.core.priors import parse_prior
    from engine.studies.estimate import estimate_run

    resolved = resolve_scenario(scenario)
    models = {a.name: a.model for a in resolved.agents if a.model}  # the file's own
    spec = llm.spec(resolved.names, scenario_models=models)
    if spec.offline:
        typer.echo("offline: the rule-based model makes no LLM calls and costs nothing")
        return
    relational = parse_prior(prior, resolved.names) if prior is not None else None
    store = open_store(saves)
    found = estimate_run(resolved, spec, rounds, store.root, prior=relational, seed=seed)
    make_console().print(estimate_table(found, f"{resolved.title} · {spec.label}"))


def estimate_table(e: Estimate, title: str) -> Table:
    """Calls, tokens and cost, low / expected / high, and where the figures come from."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"{title} · {e.rounds} rounds"), title_justify="left")
    table.add_column("")
    for end in ("low", "expected", "high"):
        table.add_column(end, justify="right")
    for name, span in (
        ("LLM calls", e.calls),
        ("prompt tokens", e.prompt_tokens),
        ("completion tokens", e.completion_tokens),
    ):
        table.add_row(name, *(f"{v:,.0f}" for v in (span.low, span.expected, span.high)))
    if e.cost_usd is None:
        table.add_row("cost", "", escape(e.cost_text()), "")
    else:
        c = e.cost_usd
        table.add_row("cost", *(f"${v:,.4f}" for v in (c.low, c.expected, c.high)))
    per_round = ", ".join(
        f"{purpose} {n:.3g} ({e.prompt_per_call.get(purpose, 0):,.0f} tokens)"
        for purpose, n in sorted(e.per_round.items())
    )
    table.caption = escape(f"calls per round: {per_round}\nfrom {e.source}")
    table.caption_justify = "left"
    return table


def parse_threshold(text: str) -> tuple[float | None, float | None]:
    """``--confirm-above``: ``1.00`` or ``$1`` (USD), ``500calls`` (LLM calls) or ``never``
    -> (usd, calls); both None for never."""
    given = text.strip().lower().replace(" ", "")
    if given == "never":
        return None, None
    calls = given.endswith("calls")
    number = given.removesuffix("calls").removeprefix("$")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not value >= 0:  # NaN and negatives too
        fail(f"--confirm-above {text!r}: give USD (1.00), a number of calls (500calls) or never")
    return (None, value) if calls else (value, None)


def over_threshold(
    scenario: Scenario,
    spec: MindSpec,
    threshold: str,
    saves: Path | None,
    prior: str | None = None,
) -> Estimate | None:
    """The estimate of a new run when it is above ``--confirm-above`` (None: it is not, or
    no LLM plays the run)."""
    usd, calls = parse_threshold(threshold)
    if spec.offline or (usd is None and calls is None):
        return None
    from engine.core.priors import parse_prior
    from engine.studies.estimate import estimate_run

    relational = parse_prior(prior, scenario.names) if prior is not None else None
    found = estimate_run(scenario, spec, None, open_store(saves).root, prior=relational)
    return found if found.above(usd=usd, calls=calls) else None
