"""The studies: single GovSim and debate episodes and ``sweep`` (Relational priors), ``tasks``
and ``recast`` (Sociodrama's trajectory-guided persona recasting)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from . import options
from .base import (
    FormatOpt,
    SavesOpt,
    fail,
    make_console,
    open_store,
    out_file,
    outside_saves,
    run_async,
    saved_so_far,
    say,
    sigterm_raises,
    tidy,
)
from .batch import (
    AddressOpt,
    ExecutorOpt,
    RateOpt,
    WorkersOpt,
    YesOpt,
    confirm_spend,
    make_executor,
    progress_bar,
)
from .options import LLMOptions, llm_options

if TYPE_CHECKING:
    from engine import Simulation
    from engine.studies.families import Family
    from engine.studies.sweep import SweepResult


def _floats(text: str, option: str) -> list[float]:
    try:
        return [eval_fraction(t) for t in text.split(",") if t.strip()]
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


def team_sizes(text: str, kind: Family) -> list[int]:
    """``--agents``: the family's team sizes (GovSim 3 and/or 5, Relational priors Sec. 4.1;
    debate three agents, Sec. 4.2)."""
    sizes = _names(text, "--agents", tuple(map(str, kind.team_sizes)))
    return sorted({int(s) for s in sizes})


def _family(task: str, command: str) -> Family:
    """The study family ``task`` names; an unknown one fails naming the choices."""
    from engine.studies.families import FAMILIES

    found = FAMILIES.get(task)
    if found is None:
        fail(f"{command} {task!r}: choose {' or '.join(FAMILIES)}")
    return found


def single_episode(
    task: str,
    seed: int,
    llm: LLMOptions,
    prior_text: str | None,
    agents: str = "3",
    fmt: str = "table",
    saves: Path | None = None,
    run_id: str | None = None,
    name: str = "",
    quiet: bool = False,
) -> None:
    """``run govsim`` / ``run debate``: one episode under one prior, saved as a run as it
    plays (GovSim with ``agents`` fishers; debate with its question-level 95% intervals, in
    ``fmt``: what surrounds them goes to stderr in the formats but table)."""
    from engine.core.priors import no_prior, parse_prior
    from engine.saves.store import check_run_id

    kind = _family(task, "run")
    sizes = team_sizes(agents, kind)
    if len(sizes) != 1:
        fail(f"--agents {agents!r}: one team size for a single episode")
    names = kind.agent_names(sizes[0])
    prior = parse_prior(prior_text, names) if prior_text else no_prior()
    mind = llm.spec(names)
    if run_id is not None:
        check_run_id(run_id)
    store = open_store(saves)
    tidy(store, [run_id] if run_id else [])
    sim = kind.new_run(prior, sizes[0], seed, mind, store, run_id, name)
    if not quiet:
        from rich.markup import escape

        make_console(stderr=fmt != "table").print(
            f"[bold]{escape(sim.scenario.title)}[/] — {escape(sim.mind.label)}, seed {seed}, "
            f"run {sim.run_id}\n"
        )
    _play_episode(kind, sim, fmt, quiet, new=True)


def resume_episode(task: str, sim: Simulation, quiet: bool) -> None:
    """``resume`` of a GovSim or debate run: on from its last finished turn."""
    _play_episode(_family(task, "resume"), sim, "table", quiet, new=False)


def _play_episode(kind: Family, sim: Simulation, fmt: str, quiet: bool, new: bool) -> None:
    """Play the episode's run to its end, each turn printed as it ends (the calls in flight
    shown while it plays), then its metrics, where it is saved and its LLM summary. A new
    run that fails before its first turn is saved is not kept."""
    from rich.markup import escape

    from engine.errors import SocialsimError

    from .progress import calls_shown
    from .tables import llm_summary, mind_name

    console = make_console(stderr=fmt != "table")
    store = sim.store
    assert store is not None

    def say_line(line: str) -> None:
        if not quiet:
            console.print(escape(line))

    try:
        episode = run_async(
            kind.play_on(sim, say_line, lambda s: calls_shown(s, quiet)),
            interrupted=lambda: saved_so_far(sim),
        )
    except SocialsimError as err:
        if not new or sim.round > 0:
            raise
        store.delete(sim.run_id)
        raise SocialsimError(
            f"{err}; no turn was played, so run {sim.run_id} was not kept"
        ) from None
    if episode.intervals is not None:
        from .output import emit
        from .tables import intervals_table

        emit(make_console(), [intervals_table(episode.intervals)], fmt)
    metrics: Mapping[str, float | None] = episode.metrics
    console.print(
        " ".join(f"{k} {'–' if v is None else format(v, '.3g')}" for k, v in metrics.items())
    )
    console.print(
        f"[bold]{sim.run_id}[/]: round {sim.round}/{sim.total_rounds} saved "
        f"in {escape(str(store.run_dir(sim.run_id)))} ({escape(mind_name(sim.meta.mind))})"
    )
    summary = llm_summary(sim.meta, sim.records)
    if summary is not None:
        console.print(summary)


@llm_options("api_base", "endpoints", "api_key_env", "structured", "tolerate_fallbacks")
def sweep(
    task: Annotated[str, typer.Argument(help="govsim or debate.")],
    relations: Annotated[str, typer.Option(help="Relation types.")] = "attitude,trust,influence",
    topologies: Annotated[
        str, typer.Option(help="GovSim topologies (debate: complete).")
    ] = "complete",
    lambdas: Annotated[str, typer.Option(help="Positivity values λ, e.g. 0,0.5,1 or 1/3.")] = "0,1",
    runs: Annotated[int, typer.Option(help="Repeated runs per cell.")] = 3,
    agents: Annotated[str, typer.Option(help="GovSim team sizes: 3, 5 or 3,5 (debate: 3).")] = "3",
    resamples: Annotated[
        int, typer.Option(min=1, help="Bootstrap resamples per contrast.")
    ] = 100_000,
    models: Annotated[str, typer.Option(help="Comma-separated models.")] = "offline",
    questions: Annotated[
        Path | None,
        typer.Option(help="Debate questions (MMLU-Pro-style JSONL) [default: the bundled sample]."),
    ] = None,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    calls_per_second: RateOpt = None,
    seed: Annotated[
        int, typer.Option(help="Seed of run 0; run r uses seed + r.", callback=options.seed)
    ] = 0,
    out: Annotated[
        Path | None,
        typer.Option(parser=out_file, metavar="<path>", help="Write the tidy CSV here."),
    ] = None,
    yes: YesOpt = False,
    fmt: FormatOpt = "table",
    *,
    llm: LLMOptions,
) -> None:
    """Sweep relational priors over team sizes, relation types, topologies, λ, models and
    runs."""
    from engine.minds.spec import OFFLINE, mind_spec
    from engine.studies.sweep import conditions, topology_aliases
    from engine.studies.sweep import sweep as run_sweep

    outside_saves(out)
    kind = _family(task, "sweep")
    rels = _names(relations, "--relations", ("attitude", "trust", "influence"))
    tops = _names(topologies, "--topologies", ("complete", "chain", "star", "tree"))
    if kind.topology_note and not set(tops) <= set(kind.topologies):
        fail(f"--topologies: {kind.topology_note}")
    sizes = team_sizes(agents, kind)
    model_list = [m.strip() for m in models.split(",") if m.strip()]
    cells = conditions(
        kind.name, rels, tops, _floats(lambdas, "--lambdas"), runs, model_list, agents=sizes
    )
    console = make_console(stderr=fmt != "table")  # what surrounds the tables
    for n in sizes:
        for dup, kept in topology_aliases(kind.agent_names(n), tops).items():
            console.print(
                f"[dim]{n} agents: {dup} states the same edges as {kept}; "
                f"its cells are {kept}'s, run once.[/]"
            )
    qs = kind.questions(questions)
    # The LLM settings every cell shares (each cell plays its own model).
    live = [m for m in model_list if not mind_spec(m).offline]
    shared = kind.sweep_mind(replace(llm, model=live[0]).spec(()) if live else OFFLINE)
    runner = make_executor(executor, workers, address, calls_per_second)
    confirm_spend(not live, yes, f"This sweep of {len(cells)} episodes")
    from engine.studies.experiments.executor import Interrupted, Terminated

    try:
        with (
            sigterm_raises(Terminated) as terminated,
            progress_bar(f"sweep {kind.name}", len(cells), bool(live)) as bar,
        ):
            result = run_sweep(
                kind.name,
                cells,
                runner,
                questions=qs,
                seed=seed,
                mind=shared,
                resamples=resamples,
                progress=bar.advance,
                calls=bar.calls,
            )
    except Interrupted as stopped:
        result = stopped.partial
        _report(result, out, fmt)
        say(
            ("terminated; " if terminated.received else "")
            + f"{len(result.outcomes)} of {stopped.total} episodes finished"
            + (f", written to {out}" if out is not None else "")
            + "; a sweep is not resumed: run it again for the rest"
        )
        raise typer.Exit(143 if terminated.received else 130) from None
    _report(result, out, fmt)


def _report(result: SweepResult, out: Path | None, fmt: str) -> None:
    """The sweep's tables (in json: ``means`` and ``contrasts``), and its CSV when asked
    for."""
    from .output import emit, rows_of
    from .tables import contrasts_table, sweep_table

    means, contrasts = sweep_table(result), contrasts_table(result)
    named = [rows_of(means, "means"), rows_of(contrasts, "contrasts")]
    emit(make_console(), [means, contrasts] if fmt == "table" else named, fmt)
    if out is not None:
        try:
            _write_csv(result, out)
        except OSError as err:
            fail(f"--out {out}: cannot write the CSV ({err.strerror or err})")
        typer.echo(str(out), err=fmt != "table")


def _write_csv(result: SweepResult, out: Path) -> None:
    """The sweep's tidy rows as one CSV file (written atomically)."""
    import csv
    import io

    from engine.core.textsafe import csv_cell
    from engine.saves.store import atomic_write_text
    from engine.studies.sweep import tidy_rows

    rows = [{k: csv_cell(v) for k, v in row.items()} for row in tidy_rows(result)]
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=list(rows[0]) if rows else ["task"], lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out, buffer.getvalue())


def tasks(fmt: FormatOpt = "table") -> None:
    """List the collaborative tasks of the persona-recasting controller."""
    from engine.studies.tasks.spec import load_task, task_ids

    from .output import emit
    from .tables import tasks_table

    emit(make_console(), [tasks_table({tid: load_task(tid) for tid in task_ids()})], fmt)


@llm_options(
    "model",
    "judge_model",
    "api_base",
    "endpoints",
    "api_key_env",
    "structured",
    "max_concurrency",
    "timeout",
    "call_timeout",
    "retries",
    "tolerate_fallbacks",
)
def recast(
    task: Annotated[str, typer.Argument(help="Task id (see `socialsim tasks`).")],
    init: Annotated[
        str, typer.Option("--init", help="hetero, random, or four archetypes a,b,c,d.")
    ] = "hetero",
    episodes: Annotated[int, typer.Option("--episodes", "-r", help="Episodes per casting.")] = 4,
    seed: Annotated[
        int, typer.Option(help="Seed of the first episode.", callback=options.seed)
    ] = 0,
    ablation: Annotated[
        bool, typer.Option("--ablation", help="w/o social dynamics: fixed order, no S/R updates.")
    ] = False,
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
    *,
    llm: LLMOptions,
) -> None:
    """Trajectory-guided persona recasting: evaluate, diagnose, recast, repeat."""
    from rich.markup import escape

    from engine.studies.tasks.controller import Iteration
    from engine.studies.tasks.controller import recast as run_recast
    from engine.studies.tasks.episode import task_scenario
    from engine.studies.tasks.spec import load_task, parse_casting

    from .output import emit
    from .tables import iteration_table

    spec = load_task(task)
    if episodes < 1:
        fail(f"--episodes {episodes}: must be at least 1")
    casting = {"hetero": spec.casting.hetero, "random": spec.casting.random}.get(init)
    casting = casting or parse_casting(init)
    mind = llm.spec(task_scenario(spec, casting).names)
    console = make_console(stderr=fmt != "table")  # what surrounds the tables
    console.print(
        f"[bold]{escape(spec.title)}[/] — {episodes} episodes per casting, "
        f"{'ablation: w/o social dynamics, ' if ablation else ''}model {mind.model}\n"
    )

    def show(it: Iteration) -> None:
        emit(make_console(), [iteration_table(it)], fmt)
        console.print(
            f"utility {it.mean:.3f} ± {it.sd:.3f} over {len(it.utilities)} "
            f"episodes: {', '.join(f'{u:g}' for u in it.utilities)}\n"
        )

    session = run_async(
        run_recast(
            spec,
            casting,
            episodes,
            seed=seed,
            mind=mind,
            store=open_store(saves),
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
