"""Saved runs and the scenario library: ``list``, ``show``, ``export``, ``delete``,
``scenarios``, ``validate``, ``schema``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .base import (
    FormatOpt,
    RunArg,
    SavesOpt,
    fail,
    folder,
    make_console,
    open_store,
    out_file,
    outside_saves,
    tidy,
)

if TYPE_CHECKING:
    from engine import RunListing

    from ..listing import TrialRuns


def list_runs(
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
    every: Annotated[
        bool, typer.Option("--all", help="every run, a trial's runs too (one row each)")
    ] = False,
    trial: Annotated[
        str | None, typer.Option("--trial", metavar="ID", help="only the runs of trial ID")
    ] = None,
) -> None:
    """List saved runs newest first with their lineage, names and snapshots (broken saves
    last, with the reason); a trial's runs are one row (--all or --trial ID lists them).
    Leftovers of interrupted writes (killed creates, branches, deletes, round writes) are
    removed first, one line each on stderr."""
    from ..listing import folded, newest_first
    from .output import emit
    from .tables import runs_rows, runs_table

    store = open_store(saves)
    tidy(store)
    rows = store.list_runs()
    shown: list[RunListing | TrialRuns]
    if trial is not None:
        shown = [r for r in newest_first(rows) if r.ok and r.trial and r.trial.trial == trial]
        if not shown:
            trials = sorted({r.trial.trial for r in rows if r.ok and r.trial})
            fail(f"--trial {trial!r}: no runs of that trial; trials: {', '.join(trials) or 'none'}")
    else:
        shown = list(newest_first(rows)) if every else folded(rows)
    if not shown and fmt == "table":
        typer.echo(f"no runs in {store.root}")
        return
    if fmt == "table":
        make_console().print(runs_table(shown), soft_wrap=True)
        return
    emit(make_console(), [runs_rows(shown)], fmt)


AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", metavar="NAME", help="Only NAME's row and column of the matrix."),
]
FactionOpt = Annotated[
    str | None,
    typer.Option("--faction", metavar="F", help="Only the members of faction F (or its code)."),
]
LongOpt = Annotated[
    bool, typer.Option("--long", help="The matrix in long format: one line per directed edge.")
]


def show(
    run_id: RunArg,
    round_no: Annotated[
        int | None, typer.Option("--round", help="Show this round's state.")
    ] = None,
    agent: AgentOpt = None,
    faction: FactionOpt = None,
    long: LongOpt = False,
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Show a run: lineage, agents, favorability matrix and metrics. The matrix stands in
    faction order, in pages of columns that fit the terminal; --agent, --faction and
    --long narrow it down or list it edge by edge (--format other than table: the agents
    and the matrix)."""
    from .matrices import fav_matrices, matrix_view
    from .tables import agents_table, fav_matrix, llm_summary, round_summary, run_overview

    store = open_store(saves)
    tidy(store, [run_id])
    meta = store.read_meta(run_id)
    # The run as a whole is shown only if every round is sound; one round, if its own are.
    history = store.history(run_id, meta, whole=round_no is None)
    last = len(history) - 1
    if round_no is not None and not 0 <= round_no <= last:
        fail(f"--round {round_no}: run {run_id!r} has rounds 0..{last}")
    console = make_console()
    factions = meta.scenario.factions
    try:
        view = matrix_view(agent, faction, long, console.width, meta.scenario.names, factions)
    except ValueError as err:
        fail(str(err))
    record = history[last if round_no is None else round_no]
    metrics = history.metrics(record.round)
    if fmt != "table":
        from .output import emit, rows_of

        tables = [rows_of(agents_table(meta, record.state), "agents")]
        tables.append(rows_of(fav_matrix(record.state, plain=True), "favorability"))
        emit(console, tables, fmt)
        return
    if record.round > 0:
        flips = [c for c in record.relation_changes if c.status != c.previous_status]
        console.print(round_summary(record, flips, meta.total_rounds, metrics))
        console.print()
    from .output import print_all

    matrix = fav_matrices(record.state, factions, view)
    print_all(console, run_overview(meta, record, metrics, matrix))
    summary = llm_summary(meta, history) if round_no is None else None
    if summary is not None:
        console.print(summary)


def export(
    run_id: RunArg,
    out: Annotated[
        Path,
        typer.Option("--out", parser=folder, metavar="<path>", help="Folder for the CSV files."),
    ],
    saves: SavesOpt = None,
    graphml: Annotated[
        bool, typer.Option("--graphml", help="Also a GraphML file per round (the signed network).")
    ] = False,
    parquet: Annotated[
        bool, typer.Option("--parquet", help="The tables as Parquet instead of CSV (pyarrow).")
    ] = False,
    changed_only: Annotated[
        bool,
        typer.Option(
            "--changed-only",
            help="relations: only the edges each round changed (round 0 whole); "
            "docs/formats.md rebuilds the dense table from it.",
        ),
    ] = False,
) -> None:
    """Export a run as tidy CSVs (transcript, events, emotions, relations, needs, metrics)
    and its run card (card.json)."""
    from engine.core.textsafe import one_line
    from engine.reports.export import export_run

    store = open_store(saves)
    outside_saves(out, store)
    tidy(store, [run_id])
    meta = store.read_meta(run_id)
    history = store.history(run_id, meta)
    measured = store.read_measurements(run_id)
    asked = [name for name, on in (("graphml", graphml), ("parquet", parquet)) if on]
    paths = export_run(meta, history, out, measured, formats=asked, changed_only=changed_only)
    for path in paths:
        typer.echo(one_line(str(path)))


def delete(
    run_id: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    saves: SavesOpt = None,
) -> None:
    """Delete a saved run (its branches keep their own copies)."""
    # A damaged run is deleted after saying what it holds; a folder that is not a run never is.
    from engine.core.textsafe import one_line

    store = open_store(saves)
    damage = store.damage(run_id)
    if damage is not None:
        typer.echo(one_line(f"run {run_id} is damaged: {damage}"))
    if not yes and not typer.confirm(f"Delete run {run_id}?"):
        raise typer.Exit(1)
    store.delete(run_id, damaged=damage is not None)
    typer.echo(f"deleted {run_id}")


def scenarios(fmt: FormatOpt = "table") -> None:
    """List the bundled scenario library (broken entries are shown with the reason)."""
    from engine import Scenario, ScenarioError, library_ids, load_library

    from .tables import scenarios_table

    entries: dict[str, Scenario | Exception] = {}
    for sid in library_ids():
        try:
            entries[sid] = load_library(sid)
        except ScenarioError as err:  # one broken file must not hide the rest of the library
            entries[sid] = err
    from .output import emit

    emit(make_console(), [scenarios_table(entries)], fmt)


def validate(file: Annotated[Path, typer.Argument(help="A scenario .toml file.")]) -> None:
    """Check a scenario file; prints one line naming the problem, or a summary."""
    from engine import load_scenario_file
    from engine.core.textsafe import one_line

    from .progress import opening

    with opening(str(file)):  # (a 1,000-agent cast's file: about 2 s)
        s = load_scenario_file(file)
    typer.echo(
        f"{one_line(str(file))}: ok — {s.title!r}, {len(s.agents)} agents, {s.rounds} rounds, "
        f"{len(s.events)} events, {len(s.relations)} relations"
    )


def schema(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", parser=out_file, metavar="<path>", help="Write to a file instead of stdout."
        ),
    ] = None,
) -> None:
    """Print the JSON Schema of the scenario format."""
    import json

    from engine import scenario_json_schema
    from engine.saves.atomic import atomic_write_text

    outside_saves(out)
    text = json.dumps(scenario_json_schema(), indent=2)
    if out is None:
        typer.echo(text)
    else:
        try:
            atomic_write_text(out, text + "\n")
        except OSError as err:
            fail(f"--out {out}: cannot write ({err.strerror})")
        typer.echo(str(out))
