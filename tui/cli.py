"""The ``socialsim`` command line (typer). Engine imports stay inside commands so
``socialsim --help`` starts fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from engine import SaveStore

app = typer.Typer(
    name="socialsim",
    help="Run and inspect LLM multi-agent social simulations.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SavesOpt = Annotated[
    Path | None,
    typer.Option("--saves", help="Saves folder [default: $SOCIALSIM_SAVES or ./saves]."),
]
RunArg = Annotated[str, typer.Argument(help="Run id (see `socialsim list`).")]
ModelOpt = Annotated[
    str,
    typer.Option(
        help="'offline' (rule-based) or a litellm model string, e.g. gpt-4o-mini.",
        rich_help_panel="Model",
    ),
]
JudgeOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="Model of the judge (U_S, U_R, needs) [default: --model].",
        rich_help_panel="Model",
    ),
]
AgentModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-model",
        help="NAME=MODEL for one agent (repeatable; mixed teams).",
        rich_help_panel="Model",
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="Base URL of an OpenAI-compatible server (with openai/<name>).",
        rich_help_panel="Model",
    ),
]
JudgeModeOpt = Annotated[
    str,
    typer.Option(
        "--judge-mode",
        help="per-edge (one U_R call per edge) or batched (one per observer).",
        rich_help_panel="Model",
    ),
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--max-concurrency", min=1, help="LLM calls in flight at once.", rich_help_panel="Model"
    ),
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=0.1, help="Seconds per LLM call.", rich_help_panel="Model")
]
RetriesOpt = Annotated[
    int,
    typer.Option(
        "--retries", min=0, help="Retries on timeout, 429 and 5xx.", rich_help_panel="Model"
    ),
]
MaxCallsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-calls",
        min=1,
        help="Stop after the round that reaches this many LLM calls.",
        rich_help_panel="Model",
    ),
]
PriorOpt = Annotated[
    str | None,
    typer.Option(
        help="Relational prior: none | neutral:REL:TOPO | REL:TOPO:λ | REL:TOPO:+,-,... "
        "(REL attitude/trust/influence, TOPO complete/chain/star/tree).",
    ),
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--budget-usd",
        min=0.0,
        help="Stop after the round that reaches this cost.",
        rich_help_panel="Model",
    ),
]


def _llm_settings(
    names: list[str],
    model: str,
    *,
    scenario_models: dict[str, str] | None = None,
    judge_model: str | None = None,
    agent_model: list[str] | None = None,
    api_base: str | None = None,
    judge_mode: str = "per-edge",
    max_concurrency: int = 8,
    timeout: float = 60.0,
    retries: int = 3,
    max_calls: int | None = None,
    budget_usd: float | None = None,
):
    """LLMSettings from the command line and the scenario's per-agent models (None: offline)."""
    if model == "offline":
        if judge_model or agent_model or api_base:
            fail("--judge-model, --agent-model and --api-base need an LLM --model")
        return None
    from pydantic import ValidationError

    from engine.llm.settings import LLMSettings

    agents = dict(scenario_models or {})
    for item in agent_model or []:  # mixed teams: NAME=MODEL
        name, sep, value = item.partition("=")
        if not sep or not value.strip():
            fail(f"--agent-model {item!r}: use NAME=MODEL")
        if name not in names:
            fail(f"--agent-model {item!r}: no agent {name!r}; agents: {', '.join(names)}")
        agents[name] = value.strip()
    try:
        return LLMSettings(
            model=model,
            judge_model=judge_model,
            agent_models=agents,
            api_base=api_base,
            judge_mode=judge_mode,
            max_concurrency=max_concurrency,
            timeout=timeout,
            retries=retries,
            max_calls=max_calls,
            budget_usd=budget_usd,
        )
    except ValidationError as err:
        first = err.errors()[0]
        fail(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}")


def fail(message: str) -> NoReturn:
    """One clear line on stderr, exit code 2."""
    typer.echo(f"socialsim: error: {message}", err=True)
    raise typer.Exit(2)


def _store(saves: Path | None) -> SaveStore:
    from engine import SaveStore

    return SaveStore(saves)


def _console():
    from rich.console import Console

    return Console(highlight=False)


def main() -> None:
    """Console-script entry point: engine errors become one line and exit code 2."""
    from engine.errors import SocialsimError

    try:
        app()
    except SocialsimError as err:
        typer.echo(f"socialsim: error: {err}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("socialsim: interrupted; every finished round is saved", err=True)
        sys.exit(130)


def _scenario_models(scenario) -> dict[str, str]:
    """Per-agent models a scenario file sets (``model = "..."`` on an agent)."""
    return {a.name: a.model for a in scenario.agents if a.model}


def _launch(
    target: str | None,
    seed: int,
    saves: Path | None,
    keymap: Path | None,
    model: str = "offline",
    llm_options: dict | None = None,
    prior: str | None = None,
) -> None:
    from .app import DEFAULT_SCENARIO, build_app

    llm = None
    if model != "offline":
        from engine import resolve_scenario

        if target and _store(saves).exists_quietly(target):
            fail("--model and its options apply to new runs; a saved run keeps its model")
        spec = resolve_scenario(target or DEFAULT_SCENARIO)
        llm = _llm_settings(
            spec.names, model, scenario_models=_scenario_models(spec), **(llm_options or {})
        )
    app_ = build_app(
        target, model=model, seed=seed, saves=saves, keymap_file=keymap, llm=llm, prior=prior
    )
    app_.run()
    sim = app_.sim
    typer.echo(
        f"{sim.run_id}: round {sim.round}/{sim.total_rounds} saved in "
        f"{sim.store.run_dir(sim.run_id)}"
    )


@app.callback()
def root(ctx: typer.Context) -> None:
    """Run and inspect LLM multi-agent social simulations.

    Without a command, opens the app on the tavern scenario with the offline model.
    """
    if ctx.invoked_subcommand is None:
        _launch(None, 0, None, None)


@app.command()
def tui(
    target: Annotated[
        str | None,
        typer.Argument(help="Scenario id or .toml path (new run), or a saved run id (resume)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for a new run.")] = 0,
    keymap: Annotated[Path | None, typer.Option(help="Key remapping TOML file.")] = None,
    saves: SavesOpt = None,
    model: ModelOpt = "offline",
    judge_model: JudgeOpt = None,
    agent_model: AgentModelOpt = None,
    api_base: ApiBaseOpt = None,
    judge_mode: JudgeModeOpt = "per-edge",
    max_concurrency: ConcurrencyOpt = 8,
    timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 3,
    max_calls: MaxCallsOpt = None,
    budget_usd: BudgetOpt = None,
    prior: PriorOpt = None,
) -> None:
    """Open the app on a scenario (a new run) or a saved run (resumed where it stopped)."""
    options = {
        "judge_model": judge_model,
        "agent_model": agent_model,
        "api_base": api_base,
        "judge_mode": judge_mode,
        "max_concurrency": max_concurrency,
        "timeout": timeout,
        "retries": retries,
        "max_calls": max_calls,
        "budget_usd": budget_usd,
    }
    _launch(target, seed, saves, keymap, model, options, prior)


def _run_async(coro):
    """Run a coroutine, then close any LLM clients it opened (no unclosed-client warnings)."""
    import asyncio

    async def main():
        try:
            return await coro
        finally:
            from engine.llm.transport import close_clients

            await close_clients()

    return asyncio.run(main())


async def _play(sim, rounds: int | None, quiet: bool) -> None:
    from engine.events import RoundEnded, RunPaused

    from .report import round_summary

    console = _console()

    def show(event) -> None:
        if isinstance(event, RoundEnded) and not quiet:
            console.print(round_summary(event.record, sim.total_rounds, sim.metrics()))
            console.print()
        elif isinstance(event, RunPaused) and event.reason:
            typer.echo(f"socialsim: {event.reason}; the save holds round {event.round}", err=True)

    sim.subscribe(show)
    try:
        await sim.run(rounds)
    finally:
        await sim.mind.aclose()


def _finish(sim) -> None:
    from rich.markup import escape

    from .report import metrics_line, model_label

    console = _console()
    console.print(
        f"[bold]{sim.run_id}[/]: round {sim.round}/{sim.total_rounds} saved "
        f"in {escape(str(sim.store.run_dir(sim.run_id)))} ({escape(model_label(sim.meta.model))})"
    )
    console.print(metrics_line(sim.metrics()))


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Library id (see `scenarios`) or a .toml path.")],
    rounds: Annotated[
        int | None, typer.Option(min=1, help="Rounds to play [default: the scenario's].")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for every random choice.")] = 0,
    name: Annotated[str, typer.Option(help="A label for the run.")] = "",
    run_id: Annotated[str | None, typer.Option("--run-id", help="Id for the new run.")] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only print the final line.")
    ] = False,
    saves: SavesOpt = None,
    model: ModelOpt = "offline",
    judge_model: JudgeOpt = None,
    agent_model: AgentModelOpt = None,
    api_base: ApiBaseOpt = None,
    judge_mode: JudgeModeOpt = "per-edge",
    max_concurrency: ConcurrencyOpt = 8,
    timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 3,
    max_calls: MaxCallsOpt = None,
    budget_usd: BudgetOpt = None,
    prior: PriorOpt = None,
) -> None:
    """Start a new run of SCENARIO and play it, saving after every round.

    SCENARIO may also be `govsim` (the fishing commons) or `debate` (the bundled questions)
    for a single episode of seed 001's tasks.
    """
    if scenario in ("govsim", "debate"):
        _single_episode(scenario, seed, model, api_base, prior, agent_model)
        return
    from engine import Simulation, make_mind, resolve_scenario
    from engine.store import check_run_id

    spec = resolve_scenario(scenario)
    relational = None
    if prior is not None:
        from engine.priors import parse_prior

        relational = parse_prior(prior, spec.names)
    llm = _llm_settings(
        spec.names,
        model,
        scenario_models=_scenario_models(spec),
        judge_model=judge_model,
        agent_model=agent_model,
        api_base=api_base,
        judge_mode=judge_mode,
        max_concurrency=max_concurrency,
        timeout=timeout,
        retries=retries,
        max_calls=max_calls,
        budget_usd=budget_usd,
    )
    if run_id is not None:
        check_run_id(run_id)
    mind = make_mind(model, seed, llm)
    store = _store(saves)
    with Simulation.new(
        spec,
        seed=seed,
        model=model,
        mind=mind,
        store=store,
        run_id=run_id,
        name=name,
        rounds=rounds,
        scenario_ref=scenario,
        llm=llm,
        prior=relational,
    ) as sim:
        if not quiet:
            from rich.markup import escape

            _console().print(
                f"[bold]{escape(spec.title)}[/] — {escape(mind.label)}, "
                f"seed {seed}, run {sim.run_id}\n"
            )
        _run_async(_play(sim, None, quiet))
        _finish(sim)


@app.command()
def resume(
    run_id: RunArg,
    rounds: Annotated[
        int | None, typer.Option(min=1, help="Rounds to play (may extend the run).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    saves: SavesOpt = None,
    max_calls: MaxCallsOpt = None,
    budget_usd: BudgetOpt = None,
) -> None:
    """Continue a saved run from its last finished round (new caps apply from now on)."""
    from engine import Simulation

    store = _store(saves)
    llm = None
    if max_calls is not None or budget_usd is not None:
        meta = store.read_meta(run_id)
        if meta.llm is None:
            fail("--max-calls and --budget-usd apply to LLM runs")
        llm = meta.llm.model_copy(
            update={k: v for k, v in (("max_calls", max_calls), ("budget_usd", budget_usd)) if v}
        )
    with Simulation.resume(run_id, store, llm=llm) as sim:
        if rounds is not None and sim.round + rounds > sim.total_rounds:
            sim.extend(rounds)
        if sim.finished:
            fail(
                f"run {run_id!r} already finished ({sim.round}/{sim.total_rounds}); "
                "pass --rounds N to extend it"
            )
        _run_async(_play(sim, rounds, quiet))
        _finish(sim)


@app.command()
def replay(
    run_id: RunArg,
    new_id: Annotated[str | None, typer.Option("--run-id", help="Id for the replay.")] = None,
    saves: SavesOpt = None,
) -> None:
    """Re-run RUN from its record (no network calls) into a new run and compare the states."""
    from engine.replay import replay_run

    result = _run_async(replay_run(_store(saves), run_id, new_id))
    result.sim.close()
    calls = sum(len(r.llm_calls) for r in result.sim.records)
    if not result.identical:
        fail(f"replay {result.sim.run_id} diverged from {run_id} at rounds {result.diverged}")
    typer.echo(
        f"{result.sim.run_id}: replayed {result.rounds} rounds of {run_id} from "
        f"{calls} recorded LLM exchanges, no network calls; identical state"
    )


@app.command()
def survey(
    run_id: RunArg,
    questionnaire: Annotated[
        str,
        typer.Option(
            "--questionnaire", help="rses, svo (the slider) or a questionnaire id of the scenario."
        ),
    ],
    agent: Annotated[str, typer.Option("--agent", help="The agent to survey.")],
    rounds: Annotated[
        str,
        typer.Option(
            "--rounds", help="Comma-separated rounds, e.g. 0,8 (the state logged after them)."
        ),
    ],
    saves: SavesOpt = None,
) -> None:
    """Administer a questionnaire to an agent from its logged state (the run is untouched)."""
    from engine.measure import survey as run_survey

    store = _store(saves)
    meta = store.read_meta(run_id)
    try:
        wanted = [int(r) for r in rounds.split(",") if r.strip()]
    except ValueError:
        fail(f"--rounds {rounds!r}: give round numbers like 0,8")
    if not wanted:
        fail("--rounds: give at least one round")
    records = store.read_rounds(run_id)
    results = _run_async(
        _measure(
            meta,
            lambda mind: run_survey(meta.scenario, records, questionnaire, agent, wanted, mind),
        )
    )
    store.add_measurements(run_id, "surveys", results)
    for r in results:
        extra = f" angle {r.angle:.1f}° ({r.category})" if r.angle is not None else ""
        typer.echo(
            f"{r.agent} round {r.round} {r.questionnaire}: score {r.score:g}{extra} "
            f"answers {' '.join(map(str, r.answers))} [{r.respondent}]"
        )


@app.command()
def rate(run_id: RunArg, saves: SavesOpt = None) -> None:
    """Score every agent's observable behaviour on the scenario's Rater criteria."""
    from engine.measure import rate as run_rate

    store = _store(saves)
    meta = store.read_meta(run_id)
    records = store.read_rounds(run_id)
    ratings = _run_async(_measure(meta, lambda mind: run_rate(meta.scenario, records, mind)))
    store.add_measurements(run_id, "ratings", ratings)
    for r in ratings:
        typer.echo(f"{r.criterion:<24} {r.agent:<10} {r.score}  {r.evidence[:60]} [{r.rater}]")


async def _measure(meta, measure):
    """Run a measurement with the run's own kind of mind (LLM runs are measured by LLM)."""
    if meta.llm is None:
        return await measure(None)
    from engine.minds.llm import LLMMind

    return await measure(LLMMind(meta.llm))


@app.command()
def branch(
    run_id: RunArg,
    at: Annotated[int, typer.Option("--at", help="Fork after this round (0 = the start).")],
    name: Annotated[str, typer.Option(help="A label for the branch.")] = "",
    new_id: Annotated[str | None, typer.Option("--run-id", help="Id for the branch.")] = None,
    intervention: Annotated[
        str | None,
        typer.Option(
            "--intervention", help="A ready-made intervention of the scenario to schedule."
        ),
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Create a new run that copies RUN up to round --at and records its parent."""
    child = _store(saves).branch(run_id, at, new_id=new_id, name=name, intervention=intervention)
    typer.echo(f"{child.run_id}: branched from {run_id} at round {at}")


@app.command("list")
def list_runs(saves: SavesOpt = None) -> None:
    """List saved runs with their lineage (broken saves are shown with the reason)."""
    from .report import runs_table

    store = _store(saves)
    rows = store.list_runs()
    if not rows:
        typer.echo(f"no runs in {store.root}")
        return
    _console().print(runs_table(rows))


@app.command()
def show(
    run_id: RunArg,
    round_no: Annotated[
        int | None, typer.Option("--round", help="Show this round's state.")
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Show a run: lineage, agents, favorability matrix and metrics."""
    from engine import compute_metrics

    from .report import round_summary, run_overview

    store = _store(saves)
    meta = store.read_meta(run_id)
    records = store.read_rounds(run_id)
    if round_no is not None:
        if not 0 <= round_no < len(records):
            fail(f"--round {round_no}: run {run_id!r} has rounds 0..{len(records) - 1}")
        records = records[: round_no + 1]
    metrics = compute_metrics(meta.scenario, [r.state for r in records])
    console = _console()
    if records[-1].round > 0:
        console.print(round_summary(records[-1], meta.total_rounds, metrics))
        console.print()
    console.print(run_overview(meta, records, metrics))


@app.command()
def export(
    run_id: RunArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for the CSV files.")],
    saves: SavesOpt = None,
) -> None:
    """Export a run as tidy CSVs: transcript, events, emotions, relations, needs, metrics."""
    from engine.export import export_run

    store = _store(saves)
    meta = store.read_meta(run_id)
    paths = export_run(meta, store.read_rounds(run_id), out, store.read_measurements(run_id))
    for path in paths:
        typer.echo(str(path))


@app.command()
def delete(
    run_id: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    saves: SavesOpt = None,
) -> None:
    """Delete a saved run (its branches keep their own copies)."""
    store = _store(saves)
    if not store.run_dir(run_id).is_dir():
        fail(f"no run {run_id!r} in {store.root}")
    if not yes and not typer.confirm(f"Delete run {run_id}?"):
        raise typer.Exit(1)
    store.delete(run_id)
    typer.echo(f"deleted {run_id}")


#: Metrics shown in the sweep table, with short headers (all are in the CSV).
SWEEP_METRICS = {
    "govsim": {
        "score": "S",
        "survival_time": "surv",
        "total_gain": "gain",
        "equality": "eq",
        "over_usage": "over",
    },
    "debate": {"cr": "CR", "acc": "ACC", "ccr": "CCR", "wcf": "WCF"},
}


def _floats(text: str, option: str) -> list[float]:
    try:
        return [float(eval_fraction(t)) for t in text.split(",") if t.strip()]
    except (ValueError, ZeroDivisionError):
        fail(f"{option} {text!r}: give numbers like 0,0.5,1 (fractions like 1/3 work)")


def eval_fraction(text: str) -> float:
    """``0.5`` or ``1/3``."""
    num, sep, den = text.strip().partition("/")
    return float(num) / float(den) if sep else float(num)


def _names(text: str, option: str, allowed: tuple[str, ...]) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        fail(f"{option} {text!r}: choose from {', '.join(allowed)}")
    return items


def _single_episode(
    task: str,
    seed: int,
    model: str,
    api_base: str | None,
    prior_text: str | None,
    agent_model: list[str] | None = None,
) -> None:
    """``run govsim`` / ``run debate``: one episode under one prior, printed."""
    from engine.priors import no_prior, parse_prior
    from engine.sweep import agent_names

    names = agent_names(task)  # type: ignore[arg-type]
    prior = parse_prior(prior_text, names) if prior_text else no_prior()
    llm = _llm_settings(names, model, agent_model=agent_model, api_base=api_base)
    console = _console()
    if task == "govsim":
        from engine.govsim import run_govsim

        result = _run_async(run_govsim(prior, seed=seed, model=model, llm=llm))
        for m in result.months:
            console.print(
                f"month {m.month:>2}: stock {m.stock_before:6.1f} → {m.stock_after:6.1f}"
                f"  harvests "
                + ", ".join(f"{k} {v:g}" for k, v in m.harvests.items())
                + ("  \\[collapse]" if m.collapsed else "")
            )
    else:
        from engine.debate import run_debate, sample_questions

        result = _run_async(run_debate(prior, sample_questions(), seed=seed, model=model, llm=llm))
        for t in result.traces:
            console.print(
                f"{t.question_id}: "
                + " → ".join("/".join(str(v) for v in r.values()) for r in t.answers)
            )
    console.print(
        " ".join(f"{k} {'–' if v is None else format(v, '.3g')}" for k, v in result.metrics.items())
    )


@app.command()
def sweep(
    task: Annotated[str, typer.Argument(help="govsim or debate.")],
    relations: Annotated[str, typer.Option(help="Relation types.")] = "attitude,trust,influence",
    topologies: Annotated[
        str, typer.Option(help="GovSim topologies (debate: complete).")
    ] = "complete",
    lambdas: Annotated[str, typer.Option(help="Positivity values λ, e.g. 0,0.5,1 or 1/3.")] = "0,1",
    runs: Annotated[int, typer.Option(help="Repeated runs per cell.")] = 3,
    models: Annotated[str, typer.Option(help="Comma-separated models.")] = "offline",
    questions: Annotated[
        Path | None,
        typer.Option(help="Debate questions (MMLU-Pro-style JSONL) [default: the bundled sample]."),
    ] = None,
    executor: Annotated[str, typer.Option(help="local (asyncio) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(help="Ray address, e.g. auto.")] = None,
    concurrency: Annotated[int, typer.Option(help="Local episodes at once.")] = 4,
    calls_per_second: Annotated[
        float | None, typer.Option(help="Shared LLM rate limit across Ray workers.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of run 0; run r uses seed + r.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write the tidy CSV here.")] = None,
    api_base: ApiBaseOpt = None,
) -> None:
    """Sweep relational priors over relation types, topologies, λ, models and runs."""
    from rich.table import Table

    from engine.sweep import conditions, tidy_rows
    from engine.sweep import sweep as run_sweep

    if task not in ("govsim", "debate"):
        fail(f"sweep {task!r}: choose govsim or debate")
    rels = _names(relations, "--relations", ("attitude", "trust", "influence"))
    tops = _names(topologies, "--topologies", ("complete", "chain", "star", "tree"))
    if task == "debate" and tops != ["complete"]:
        fail("--topologies: debate uses complete connectivity (seed 001 Sec. 4)")
    model_list = [m.strip() for m in models.split(",") if m.strip()]
    cells = conditions(task, rels, tops, _floats(lambdas, "--lambdas"), runs, model_list)
    qs = []
    if task == "debate":
        from engine.debate import load_questions, sample_questions

        qs = load_questions(questions) if questions else sample_questions()
    llm = None
    if any(m != "offline" for m in model_list):
        from engine.llm.settings import LLMSettings

        llm = LLMSettings(model=model_list[0], api_base=api_base)
    if executor == "ray":
        from engine.sweep_ray import RayExecutor

        runner = RayExecutor(address=address, calls_per_second=calls_per_second)
    elif executor == "local":
        from engine.sweep import LocalExecutor

        runner = LocalExecutor(concurrency)
    else:
        fail(f"--executor {executor!r}: choose local or ray")
    result = _run_async(run_sweep(task, cells, runner, questions=qs, seed=seed, llm=llm))
    console = _console()
    shown = SWEEP_METRICS[task]
    table = Table(
        title=f"{task}: {len(result.outcomes)} episodes (mean over runs)", title_justify="left"
    )
    table.add_column("model", no_wrap=True)
    table.add_column("condition", no_wrap=True)
    table.add_column("n", justify="right")
    for header in shown.values():
        table.add_column(header, justify="right")
    groups: dict[tuple[str, str], list] = {}
    for o in result.outcomes:
        groups.setdefault((o.condition.model, o.condition.label()), []).append(o)
    for (model_name, label), outs in groups.items():
        cells = []
        for k in shown:
            values = [o.metrics[k] for o in outs if o.metrics.get(k) is not None]
            mean = sum(values) / len(values) if values else None
            cells.append(
                "–" if mean is None else f"{mean:.0f}" if abs(mean) >= 10 else f"{mean:.2f}"
            )
        table.add_row(model_name, label, str(len(outs)), *cells)
    console.print(table)
    ci = Table(title="paired 95% bootstrap intervals", title_justify="left")
    for col in ("relation", "topology", "contrast", "units", "mean", "95% CI"):
        ci.add_column(col)
    for row in result.contrasts:
        ci.add_row(
            row["relation"],
            row["topology"],
            row["contrast"],
            str(row["units"]),
            f"{row['mean']:+.3f}",
            f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]",
        )
    console.print(ci)
    if out is not None:
        import csv
        import io

        from engine.store import atomic_write_text

        rows = tidy_rows(result)
        buffer = io.StringIO()
        writer = csv.DictWriter(
            buffer, fieldnames=list(rows[0]) if rows else ["task"], lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(out, buffer.getvalue())
        typer.echo(str(out))


@app.command()
def tasks() -> None:
    """List the collaborative tasks of the persona-recasting controller."""
    from rich.table import Table

    from engine.tasks.spec import load_task, task_ids

    table = Table(box=None, pad_edge=False)
    for col in ("id", "title", "utility", "hetero", "random"):
        table.add_column(col)
    for tid in task_ids():
        t = load_task(tid)
        table.add_row(
            tid,
            t.title,
            t.utility,
            "/".join(a.value for a in t.casting.hetero),
            "/".join(a.value for a in t.casting.random),
        )
    _console().print(table)


@app.command()
def recast(
    task: Annotated[str, typer.Argument(help="Task id (see `socialsim tasks`).")],
    init: Annotated[
        str, typer.Option("--init", help="hetero, random, or four archetypes a,b,c,d.")
    ] = "hetero",
    episodes: Annotated[int, typer.Option("--episodes", "-r", help="Episodes per casting.")] = 4,
    seed: Annotated[int, typer.Option(help="Seed of the first episode.")] = 0,
    ablation: Annotated[
        bool, typer.Option("--ablation", help="w/o social dynamics: fixed order, no S/R updates.")
    ] = False,
    saves: SavesOpt = None,
    model: ModelOpt = "offline",
    judge_model: JudgeOpt = None,
    api_base: ApiBaseOpt = None,
    max_concurrency: ConcurrencyOpt = 8,
    timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 3,
) -> None:
    """Trajectory-guided persona recasting: evaluate, diagnose, recast, repeat."""
    from rich.markup import escape
    from rich.table import Table

    from engine.tasks.controller import recast as run_recast
    from engine.tasks.episode import task_scenario
    from engine.tasks.spec import load_task, parse_casting

    spec = load_task(task)
    if episodes < 1:
        fail(f"--episodes {episodes}: must be at least 1")
    casting = {"hetero": spec.casting.hetero, "random": spec.casting.random}.get(init)
    casting = casting or parse_casting(init)
    team = task_scenario(spec, casting)
    llm = _llm_settings(
        team.names,
        model,
        judge_model=judge_model,
        api_base=api_base,
        max_concurrency=max_concurrency,
        timeout=timeout,
        retries=retries,
    )
    console = _console()
    console.print(
        f"[bold]{escape(spec.title)}[/] — {episodes} episodes per casting, "
        f"{'ablation: w/o social dynamics, ' if ablation else ''}model {model}\n"
    )

    def show(it) -> None:
        table = Table(
            title=f"iteration {it.iteration}: " + " / ".join(a.value for a in it.casting),
            title_justify="left",
        )
        table.add_column("agent")
        table.add_column("now")
        table.add_column("proposal")
        table.add_column("votes", justify="right")
        table.add_column("rationale")
        for v in it.decisions:
            table.add_row(
                v.agent,
                v.current.value,
                v.archetype.value if v.archetype else "keep",
                f"{v.votes}/{v.of}",
                escape(v.rationale),
            )
        console.print(table)
        console.print(
            f"utility {it.mean:.3f} ± {it.sd:.3f} over {len(it.utilities)} "
            f"episodes: {', '.join(f'{u:g}' for u in it.utilities)}\n"
        )

    session = _run_async(
        run_recast(
            spec,
            casting,
            episodes,
            seed=seed,
            model=model,
            llm=llm,
            store=_store(saves),
            ablation=ablation,
            on_iteration=show,
        )
    )
    best = max(session.iterations, key=lambda it: it.mean)
    console.print(
        f"stopped: {session.stop}. best casting "
        f"{' / '.join(a.value for a in best.casting)} (iteration {best.iteration}, "
        f"utility {best.mean:.3f}); runs saved as {session.session} it<k> ep<e>"
    )


@app.command()
def scenarios() -> None:
    """List the bundled scenario library (broken entries are shown with the reason)."""
    from rich.markup import escape
    from rich.table import Table

    from engine import ScenarioError, library_ids, load_library

    table = Table(box=None, pad_edge=False)
    for col in ("id", "title", "agents", "rounds", "conflict"):
        table.add_column(col)
    for sid in library_ids():
        try:
            s = load_library(sid)
        except ScenarioError as err:  # one broken file must not hide the rest of the library
            table.add_row(f"[red]{sid}[/]", f"[red]{escape(str(err))}[/]", "", "", "")
            continue
        table.add_row(sid, escape(s.title), str(len(s.agents)), str(s.rounds), "●" * s.conflict)
    _console().print(table)


@app.command()
def validate(file: Annotated[Path, typer.Argument(help="A scenario .toml file.")]) -> None:
    """Check a scenario file; prints one line naming the problem, or a summary."""
    from engine import load_scenario_file

    s = load_scenario_file(file)
    typer.echo(
        f"{file}: ok — {s.title!r}, {len(s.agents)} agents, {s.rounds} rounds, "
        f"{len(s.events)} events, {len(s.relations)} relations"
    )


@app.command()
def schema(
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to a file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of the scenario format."""
    import json

    from engine import scenario_json_schema

    text = json.dumps(scenario_json_schema(), indent=2)
    if out is None:
        typer.echo(text)
    else:
        try:
            out.write_text(text + "\n", encoding="utf-8")
        except OSError as err:
            fail(f"--out {out}: cannot write ({err.strerror})")
        typer.echo(str(out))


if __name__ == "__main__":
    main()
