"""``estimate``: calls, tokens and cost of an LLM run before it is started; the threshold
above which the app (``tui --confirm-above``) and ``run`` ask before a new LLM run plays."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from engine.core.limits import MAX_ROUNDS

from .base import FormatOpt, SavesOpt, fail, make_console, open_store, say
from .options import LLMOptions, llm_options

if TYPE_CHECKING:
    from rich.table import Table

    from engine import Scenario
    from engine.minds.spec import MindSpec
    from engine.studies.estimate import Estimate


@llm_options(
    "model",
    "judge_model",
    "agent_model",
    "api_base",
    "endpoints",
    "api_key_env",
    "judge_mode",
    "structured",
    "structured_model",
    "max_concurrency",
    "timeout",
    "call_timeout",
)
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
    fmt: FormatOpt = "table",
    probe: Annotated[
        bool,
        typer.Option(
            "--probe/--no-probe",
            help="With --api-base: measure the server with a few short calls, for the time.",
        ),
    ] = True,
    *,
    llm: LLMOptions,
) -> None:
    """Estimate the LLM calls, tokens, cost and (at an --api-base) time of a run of
    SCENARIO, with a range.

    The first rounds' prompts are rendered (the offline model plays them) and counted with
    litellm's tokenizer; earlier saved runs of the same scenario and models give their
    recorded usage. Prices come from litellm's cost map. Nothing is sent, except at an
    --api-base: a short probe (a few chat completions) measures the server's prompt and
    generation speed, which gives the expected wall time.
    """
    from engine.studies.families import FAMILIES

    if scenario in FAMILIES:
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
    if probe:
        found = with_time(found, spec)
    from .output import emit

    emit(make_console(), [estimate_table(found, f"{resolved.title} · {spec.label}")], fmt)
    if found.unmeasured:
        fail(f"estimate: time not measured: {found.unmeasured}")


def with_time(found: Estimate, spec: MindSpec) -> Estimate:
    """``found`` timed at the run's ``api_base`` (each of its endpoints, and all together),
    measured by a short probe (a failed probe says why in ``unmeasured``); as it is without
    an ``api_base``."""
    import asyncio
    from dataclasses import replace

    from engine.llm.settings import LLMSettings
    from engine.llm.throughput import ProbeError
    from engine.llm.throughput import probe_endpoints as measure

    if not isinstance(spec, LLMSettings) or not spec.api_base:
        return found
    try:
        speed = asyncio.run(measure(spec))
    except ProbeError as err:
        return replace(found, unmeasured=str(err))
    return found.timed(speed)


def estimate_table(e: Estimate, title: str) -> Table:
    """Calls, tokens, cost and (measured) wall time, low / expected / high, and where the
    figures come from."""
    from rich.markup import escape
    from rich.table import Table

    from .output import Number, seconds

    table = Table(title=escape(f"{title} · {e.rounds} rounds"), title_justify="left")
    table.add_column("")
    for end in ("low", "expected", "high"):
        table.add_column(end, justify="right")
    for name, span in (
        ("LLM calls", e.calls),
        ("prompt tokens", e.prompt_tokens),
        ("completion tokens", e.completion_tokens),
    ):
        table.add_row(
            name, *(Number(f"{v:,.0f}", round(v)) for v in (span.low, span.expected, span.high))
        )
    if e.cost_usd is None:
        table.add_row("cost", "", escape(e.cost_text()), "")
    else:
        c = e.cost_usd
        table.add_row(
            "cost", *(Number(f"${v:,.4f}", round(v, 6)) for v in (c.low, c.expected, c.high))
        )
    if e.wall_s is not None:
        w, rounds = e.wall_s, max(1, e.rounds)
        table.add_row("wall time", *(seconds(v) for v in (w.low, w.expected, w.high)))
        table.add_row("per round", *(seconds(v / rounds) for v in (w.low, w.expected, w.high)))
    per_round = ", ".join(
        f"{purpose} {n:.3g} ({e.prompt_per_call.get(purpose, 0):,.0f} tokens)"
        for purpose, n in sorted(e.per_round.items())
    )
    speed = f"\nserver: {e.speed.text()}" if e.speed is not None else ""
    table.caption = escape(f"calls per round: {per_round}\nfrom {e.source}{speed}")
    table.caption_justify = "left"
    return table


class Threshold(NamedTuple):
    """``--confirm-above`` read: a cost (USD), a number of calls or a wall time (seconds);
    all None for never."""

    usd: float | None = None
    calls: float | None = None
    seconds: float | None = None

    @property
    def never(self) -> bool:
        return self == Threshold()


#: The units of a time threshold, in seconds.
TIME_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}


def parse_threshold(text: str) -> Threshold:
    """``--confirm-above``: ``1.00`` or ``$1`` (USD), ``500calls`` (LLM calls), ``90s``,
    ``10m`` or ``1h`` (the run's measured time) or ``never``."""
    given = text.strip().lower().replace(" ", "")
    if given == "never":
        return Threshold()
    unit = next((u for u in ("calls", *TIME_UNITS) if given.endswith(u)), "")
    number = given.removesuffix(unit).removeprefix("$") if unit else given.removeprefix("$")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not value >= 0 or (unit and number != given.removesuffix(unit)):  # NaN, negatives, $5m
        fail(
            f"--confirm-above {text!r}: give USD (1.00), a number of calls (500calls), a "
            "time (90s, 10m, 1h) or never"
        )
    if unit == "calls":
        return Threshold(calls=value)
    if unit:
        return Threshold(seconds=value * TIME_UNITS[unit])
    return Threshold(usd=value)


def over_threshold(
    scenario: Scenario,
    spec: MindSpec,
    threshold: str,
    saves: Path | None,
    prior: str | None = None,
) -> Estimate | None:
    """The estimate of a new run to show before it plays (None: no LLM plays it, or it is
    under ``--confirm-above``). Against an ``--api-base`` the estimate is timed there (as
    ``socialsim estimate`` times it) and shown whatever the price, unless the threshold is a
    time the run is measured under; a time threshold asks too when no time was measured."""
    limit = parse_threshold(threshold)
    if spec.offline or limit.never:
        return None
    from engine.core.priors import parse_prior
    from engine.llm.settings import LLMSettings
    from engine.studies.estimate import estimate_run

    relational = parse_prior(prior, scenario.names) if prior is not None else None
    found = estimate_run(scenario, spec, None, open_store(saves).root, prior=relational)
    served = isinstance(spec, LLMSettings) and bool(spec.api_base)
    if served or limit.seconds is not None:
        if isinstance(spec, LLMSettings) and spec.api_base:
            from engine.llm.throughput import PROBE_SECONDS

            say(
                f"timing {spec.api_base} with a few short calls (at most {PROBE_SECONDS:.0f} "
                "s; --confirm-above never skips it)…"
            )
        found = with_time(found, spec)
    if limit.seconds is not None:
        asks = found.wall_s is None or found.wall_s.expected > limit.seconds
    else:
        asks = served or found.above(usd=limit.usd, calls=limit.calls)
    return found if asks else None
