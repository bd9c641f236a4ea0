"""Playing runs: the app (``tui``, bare ``socialsim``), ``run``, ``resume``, ``branch``,
``queue``, ``replay``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.core.limits import MAX_ROUNDS

from . import options
from .base import (
    FormatOpt,
    RunArg,
    SavesOpt,
    fail,
    make_console,
    open_store,
    run_async,
    saved_so_far,
    say,
    tidy,
)
from .options import LLMOptions, llm_options

if TYPE_CHECKING:
    from engine import SaveStore, Scenario, Simulation
    from engine.minds.spec import MindSpec

PriorOpt = Annotated[
    str | None,
    typer.Option(
        help="Relational prior: none | neutral:REL:TOPO | REL:TOPO:λ | REL:TOPO:+,-,... "
        "(REL attitude/trust/influence, TOPO complete/chain/star/tree).",
    ),
]


PlayOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--play",
        metavar="AGENT[=PLAYER]",
        help="A person plays AGENT (their turns are asked in the app; PLAYER names them in "
        "the record, default the agent's name). Repeat for several people at one keyboard.",
    ),
]


def played(play: list[str] | None) -> dict[str, str]:
    """``--play AGENT[=PLAYER]`` options as agent -> player's name."""
    players = {}
    for given in play or []:
        agent, _, player = given.partition("=")
        players[agent.strip()] = player.strip() or agent.strip()
    return players


def scenario_models(scenario: Scenario) -> dict[str, str]:
    """Per-agent models a scenario file sets (``model = "..."`` on an agent)."""
    return {a.name: a.model for a in scenario.agents if a.model}


def _launch(
    target: str | None,
    seed: int,
    saves: Path | None,
    keymap: Path | None,
    llm: LLMOptions,
    prior: str | None = None,
    players: dict[str, str] | None = None,
    confirm_above: str = "never",
) -> None:
    from ..app import DEFAULT_SCENARIO, TERMINATED, build_app, opened_scenario
    from .progress import opening

    store = open_store(saves)  # a --saves that is a file: one line before the app starts
    if not llm.offline and target and store.exists_quietly(target):
        fail("--model and its options apply to new runs; a saved run keeps its model")
    what = target or DEFAULT_SCENARIO
    with opening(what):  # (its file read once, its run made, until the app draws)
        opened, names, models, spend = None, [], {}, None
        if not llm.offline:
            opened = opened_scenario(what)
            names, models = opened[0].names, scenario_models(opened[0])
        mind = llm.spec(names, scenario_models=models)
        if opened is not None:  # cost before you spend: the app asks above the threshold
            from .estimate import over_threshold

            found = over_threshold(opened[0], mind, confirm_above, saves, prior)
            spend = (found, confirm_above) if found else None
        app_ = build_app(
            target,
            mind=mind,
            seed=seed,
            saves=saves,
            keymap_file=keymap,
            prior=prior,
            players=players,
            spend=spend,
            opened=opened,
        )
    app_.run()
    sim = app_.sim
    if app_.return_code == TERMINATED:
        kept = (
            f"run {sim.run_id}: no round played, nothing saved"
            if app_.discarded
            else saved_so_far(sim)
        )
        say(f"terminated; {kept}")
        raise typer.Exit(TERMINATED)
    if app_.discarded:
        typer.echo(f"{sim.run_id}: no round played, nothing saved (the run was not kept)")
        return
    kept = ""
    if app_.kept is not None:
        kept = (
            f"; round {sim.round + 1} stopped mid-round, its {app_.kept} answered exchanges "
            "kept in its journal for the next open"
        )
    typer.echo(
        f"{sim.run_id}: round {sim.round}/{sim.total_rounds} saved in "
        f"{sim.store.run_dir(sim.run_id)}{kept}"
    )


def root(ctx: typer.Context) -> None:
    """Run and inspect LLM multi-agent social simulations.

    Without a command, opens the app on the tavern scenario with the offline model.
    """
    if ctx.invoked_subcommand is None:
        _launch(None, 0, None, None, LLMOptions())


def _threshold(value: str) -> str:
    """``--confirm-above`` checked whether or not the run turns out to use an LLM."""
    from .estimate import parse_threshold

    parse_threshold(value)
    return value


@llm_options()
def tui(
    target: Annotated[
        str | None,
        typer.Argument(
            help="Scenario id or .toml path (new run), task id (an episode of the task), "
            "or a saved run id (resume)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for a new run.", callback=options.seed)] = 0,
    keymap: Annotated[Path | None, typer.Option(help="Key remapping TOML file.")] = None,
    saves: SavesOpt = None,
    prior: PriorOpt = None,
    play: PlayOpt = None,
    confirm_above: Annotated[
        str,
        typer.Option(
            "--confirm-above",
            help="A new LLM run whose estimate is above this asks first: USD (1.00), a "
            "number of calls (500calls) or never.",
            callback=_threshold,
        ),
    ] = "1.00",
    *,
    llm: LLMOptions,
) -> None:
    """Open the app on a scenario (a new run) or a saved run (resumed where it stopped)."""
    _launch(target, seed, saves, keymap, llm, prior, played(play), confirm_above)


async def _play(sim: Simulation, rounds: int | None, quiet: bool) -> None:
    from engine.core.textsafe import strip_controls
    from engine.round.events import Notice, RoundEnded, RunPaused

    from .progress import calls_shown
    from .tables import FLIPS_SHOWN, round_summary

    console = make_console()

    def show(event: object) -> None:
        if isinstance(event, RoundEnded) and not quiet:
            view = event.view  # no model an edge, nor the state as models
            flips = view.changes.flips(FLIPS_SHOWN)
            summary = round_summary(view.log, flips, sim.total_rounds, sim.metrics())
            console.print(summary, crop=False)  # its lines are made to fit the width
            console.print()
        elif isinstance(event, Notice):
            typer.echo(f"socialsim: round {event.round}: {strip_controls(event.message)}", err=True)
        elif isinstance(event, RunPaused) and event.reason:
            say(f"{event.reason}; the save holds round {event.round}")

    sim.subscribe(show, only=(RoundEnded, Notice, RunPaused))  # no event a word for it
    try:
        with calls_shown(sim, quiet):
            await sim.run(rounds)
    finally:
        await sim.mind.aclose()


def _play_to_the_end(sim: Simulation, store: SaveStore, rounds: int | None, quiet: bool) -> None:
    """Play, then print the final lines; a run stopped as degraded prints them too, then
    its one error line (exit 2)."""
    from engine.errors import DegradedRunError

    try:
        run_async(_play(sim, rounds, quiet), lambda: saved_so_far(sim), holds=sim)
    except DegradedRunError as err:
        _finish(sim, store)
        fail(_degraded_line(sim, store, str(err)))
    _finish(sim, store)


def _degraded_line(sim: Simulation, store: SaveStore, message: str) -> str:
    """The engine's line, opened by what the save holds (read back to check it)."""
    from engine.errors import SaveError

    last = sim.records[-1]
    try:
        saved = store.read_round(sim.run_id, last.round) == last
    except SaveError:
        saved = False
    where = "saved in" if saved else "NOT found in the save"
    detail = message.removeprefix(f"round {last.round}: ").replace("; the round is saved", "")
    return (
        f"round {last.round} {where} {store.run_dir(sim.run_id)}; {detail} "
        f"(socialsim resume {sim.run_id} --tolerate-fallbacks)"
    )


def _finish(sim: Simulation, store: SaveStore) -> None:
    from rich.markup import escape

    from ..report import metrics_line
    from .tables import llm_summary, mind_name

    console = make_console()
    console.print(
        f"[bold]{sim.run_id}[/]: round {sim.round}/{sim.total_rounds} saved "
        f"in {escape(str(store.run_dir(sim.run_id)))} ({escape(mind_name(sim.meta.mind))})"
    )
    console.print(metrics_line(sim.metrics()))
    summary = llm_summary(sim.meta, sim.records)
    if summary is not None:
        console.print(summary)


@llm_options()
def run(
    scenario: Annotated[str, typer.Argument(help="Library id (see `scenarios`) or a .toml path.")],
    rounds: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_ROUNDS, help="Rounds to play [default: the scenario's]."),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed for every random choice.", callback=options.seed)
    ] = 0,
    name: Annotated[str, typer.Option(help="A label for the run.", callback=options.label)] = "",
    run_id: Annotated[str | None, typer.Option("--run-id", help="Id for the new run.")] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only print the final line.")
    ] = False,
    saves: SavesOpt = None,
    prior: PriorOpt = None,
    agents: Annotated[str, typer.Option(help="govsim only: 3 or 5 fishers.")] = "3",
    fmt: FormatOpt = "table",
    confirm_above: Annotated[
        str,
        typer.Option(
            "--confirm-above",
            help="Ask first when the LLM run's estimate is above this: USD (1.00), a number "
            "of calls (500calls), a time measured at --api-base (90s, 10m, 1h) or never.",
            callback=_threshold,
        ),
    ] = "never",
    *,
    llm: LLMOptions,
) -> None:
    """Start a new run of SCENARIO and play it, saving after every round.

    SCENARIO may also be `govsim` (the fishing commons) or `debate` (the bundled questions)
    for a single episode of the Relational priors paper's tasks, saved as a run turn by turn
    (a month, or a debate round of one question); `resume` goes on with it.
    """
    from engine.studies.families import FAMILIES

    if fmt != "table" and scenario != "debate":
        fail(f"--format {fmt}: only a debate episode prints a table (its intervals)")
    if scenario in FAMILIES:
        from .studies import single_episode

        if rounds is not None:
            fail(f"--rounds: {scenario} plays its own turns (see `socialsim run --help`)")
        single_episode(scenario, seed, llm, prior, agents, fmt, saves, run_id, name, quiet)
        return
    from engine import Simulation, resolve_scenario
    from engine.errors import SocialsimError
    from engine.saves.store import check_run_id

    from .progress import opening

    with opening(scenario):
        resolved = resolve_scenario(scenario)
    relational = None
    if prior is not None:
        from engine.core.priors import parse_prior

        relational = parse_prior(prior, resolved.names)
    spec = llm.spec(resolved.names, scenario_models=scenario_models(resolved))
    if run_id is not None:
        check_run_id(run_id)
    from engine.studies.fits import check_window

    check_window(resolved, spec, rounds, prior=relational, seed=seed)
    if not llm.offline:
        _ask_to_spend(resolved, spec, confirm_above, saves, prior)
    store = open_store(saves)
    tidy(store, [run_id] if run_id else [])
    failed: Exception | None = None
    with Simulation.new(
        resolved,
        seed=seed,
        mind=spec,
        store=store,
        run_id=run_id,
        name=name,
        rounds=rounds,
        scenario_ref=scenario,
        prior=relational,
    ) as sim:
        if not quiet:
            from rich.markup import escape

            make_console().print(
                f"[bold]{escape(resolved.title)}[/] — {escape(sim.mind.label)}, "
                f"seed {seed}, run {sim.run_id}\n"
            )
        try:
            _play_to_the_end(sim, store, None, quiet)
        except typer.Exit:  # interrupted: the run and its journaled exchanges are kept
            raise
        except Exception as err:
            if sim.round > 0:
                raise
            failed = err
    if failed is not None:  # a first round that fails (a server, a bug) leaves no empty run
        store.delete(sim.run_id)
        kept = f"no round was played, so run {sim.run_id} was not kept"
        if isinstance(failed, SocialsimError):
            raise SocialsimError(f"{failed}; {kept}")
        say(kept)
        raise failed


def _ask_to_spend(
    scenario: Scenario, spec: MindSpec, threshold: str, saves: Path | None, prior: str | None
) -> None:
    """``run --confirm-above``: the estimate (and its measured time), then a question on
    stdin; no means no round is played and nothing saved."""
    from .estimate import over_threshold

    found = over_threshold(scenario, spec, threshold, saves, prior)
    if found is None:
        return
    timed = f"; time {found.time_text()}" if found.time_text() else ""
    say(f"{found.summary()}{timed} (from {found.source})")
    try:
        go = typer.confirm(f"Above --confirm-above {threshold}. Start the run?", err=True)
    except typer.Abort:
        go = False
    if not go:
        fail("cancelled before any round (--confirm-above never skips this question)")


@llm_options("max_calls", "budget_usd", "call_timeout", "tolerate_fallbacks")
def resume(
    run_id: RunArg,
    rounds: Annotated[
        int | None, typer.Option(min=1, max=MAX_ROUNDS, help="Rounds to play (may extend the run).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    saves: SavesOpt = None,
    *,
    llm: LLMOptions,
) -> None:
    """Continue a saved run from its last finished round (new caps apply from now on)."""
    from engine import Simulation
    from engine.studies.families import FAMILIES

    store = open_store(saves)
    tidy(store, [run_id])
    meta = store.read_meta(run_id)
    mind = llm.resumed(meta.mind)
    study = meta.scenario_ref if meta.scenario_ref in FAMILIES else None
    if study is not None:
        from .studies import resume_episode

        if rounds is not None:
            fail(f"--rounds: run {run_id!r} is a {study} episode, which plays its own turns")
        sim = FAMILIES[study].resumed(run_id, store, mind)
        if sim.finished:
            sim.close()
            fail(f"run {run_id!r} already finished ({sim.round}/{sim.total_rounds})")
        resume_episode(study, sim, quiet)
        return
    with Simulation.resume(run_id, store, mind=mind) as sim:
        from engine.studies.fits import check_window

        check_window(sim.scenario, sim.meta.mind, sim.total_rounds, prior=sim.meta.prior)
        if rounds is not None and sim.round + rounds > sim.total_rounds:
            sim.extend(rounds)
        if sim.finished:
            fail(
                f"run {run_id!r} already finished ({sim.round}/{sim.total_rounds}); "
                "pass --rounds N to extend it"
            )
        if sim.journaled and not quiet:
            kept = sim.journaled
            typer.echo(
                f"{run_id}: round {sim.round + 1} goes on from {kept} journaled "
                f"exchange{'s' * (kept != 1)}, served without asking the server"
            )
        _play_to_the_end(sim, store, rounds, quiet)


def branch(
    run_id: RunArg,
    at: Annotated[int, typer.Option("--at", help="Fork after this round (0 = the start).")],
    name: Annotated[str, typer.Option(help="A label for the branch.", callback=options.label)] = "",
    new_id: Annotated[str | None, typer.Option("--run-id", help="Id for the branch.")] = None,
    intervention: Annotated[
        str | None,
        typer.Option(
            "--intervention", help="A ready-made intervention of the scenario to schedule."
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            min=1, max=MAX_ROUNDS, help="Rounds after the fork (a finished run's branch goes on)."
        ),
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Create a new run that copies RUN up to round --at and records its parent; a branch at
    RUN's last round carries what is queued for the next one."""
    if new_id is not None:
        from engine.saves.store import check_run_id

        check_run_id(new_id)
    store = open_store(saves)
    tidy(store, [run_id])
    child = store.branch(
        run_id, at, new_id=new_id, name=name, intervention=intervention, rounds=rounds
    )
    typer.echo(f"{child.run_id}: branched from {run_id} at round {at}")


def queue(
    run_id: RunArg,
    remove: Annotated[
        list[int] | None,
        typer.Option("--remove", min=1, metavar="N", help="Remove queued item N (repeatable)."),
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """List the interventions queued for RUN's next round (numbered), or remove some."""
    from engine import Simulation

    from ..queued import describe, queue_lines

    store = open_store(saves)
    tidy(store, [run_id])
    with Simulation.resume(run_id, store) as sim:
        names, count = sim.scenario.names, len(sim.queue)
        if any(n > count for n in remove or []):
            fail(f"--remove {max(remove or [])}: run {run_id!r} has {count} queued")
        for n in sorted(set(remove or []), reverse=True):  # the later first: numbers hold
            typer.echo(f"removed {n}. {describe(sim.unqueue(n - 1), names)}")
        lines = queue_lines(sim.queue, names)
        typer.echo("\n".join(lines) if lines else f"nothing queued for run {run_id!r}")


def replay(
    run_id: RunArg,
    new_id: Annotated[str | None, typer.Option("--run-id", help="Id for the replay.")] = None,
    saves: SavesOpt = None,
) -> None:
    """Re-run RUN from its record (no network calls) into a new run and compare the states."""
    from engine.round.replay import replay_run
    from engine.saves.store import check_run_id

    if new_id is not None:
        check_run_id(new_id)

    playing: list[Simulation] = []

    def stopped() -> str:
        where = f" at round {playing[0].round}/{playing[0].total_rounds}" if playing else ""
        return (
            f"replay of {run_id} stopped{where}; nothing of it was kept (a replay is saved whole)"
        )

    result = run_async(replay_run(open_store(saves), run_id, new_id, playing.append), stopped)
    result.sim.close()
    calls = sum(u.calls for u in result.sim.records.usages())  # the index: no round is read
    if not result.identical:
        fail(f"replay {result.sim.run_id} diverged from {run_id} at rounds {result.diverged}")
    typer.echo(
        f"{result.sim.run_id}: replayed {result.rounds} rounds of {run_id} from "
        f"{calls} recorded LLM exchanges, no network calls; identical state"
    )
    if result.journaled:
        kept = result.journaled
        typer.echo(
            f"{result.sim.run_id}: {kept} journaled exchange{'s' * (kept != 1)} of round "
            f"{result.rounds + 1} carried over; socialsim resume {result.sim.run_id} asks "
            "the server only the rest"
        )
