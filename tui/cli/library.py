"""Saved runs and the scenario library: ``list``, ``show``, ``export``, ``delete``,
``scenarios``, ``validate``, ``schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .base import RunArg, SavesOpt, fail, folder, make_console, open_store, out_file, tidy


def list_runs(saves: SavesOpt = None) -> None:
    """List saved runs with their lineage (broken saves are shown with the reason).
    Leftovers of interrupted writes (killed creates, branches, deletes, round writes) are
    removed first, one line each on stderr."""
    from .tables import runs_table

    store = open_store(saves)
    tidy(store)
    rows = store.list_runs()
    if not rows:
        typer.echo(f"no runs in {store.root}")
        return
    make_console().print(runs_table(rows), soft_wrap=True)


def show(
    run_id: RunArg,
    round_no: Annotated[
        int | None, typer.Option("--round", help="Show this round's state.")
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Show a run: lineage, agents, favorability matrix and metrics."""
    from .tables import round_summary, run_overview

    store = open_store(saves)
    tidy(store, [run_id])
    meta = store.read_meta(run_id)
    # The run as a whole is shown only if every round is sound; one round, if its own are.
    history = store.history(run_id, meta, whole=round_no is None)
    last = len(history) - 1
    if round_no is not None and not 0 <= round_no <= last:
        fail(f"--round {round_no}: run {run_id!r} has rounds 0..{last}")
    record = history[last if round_no is None else round_no]
    metrics = history.metrics(record.round)
    console = make_console()
    if record.round > 0:
        console.print(round_summary(record, meta.total_rounds, metrics))
        console.print()
    console.print(run_overview(meta, record, metrics))


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
) -> None:
    """Export a run as tidy CSVs (transcript, events, emotions, relations, needs, metrics)
    and its run card (card.json)."""
    from engine.reports.export import export_run

    store = open_store(saves)
    tidy(store, [run_id])
    meta = store.read_meta(run_id)
    history = store.history(run_id, meta)
    measured = store.read_measurements(run_id)
    paths = export_run(meta, history, out, measured, graphml=graphml, parquet=parquet)
    for path in paths:
        typer.echo(str(path))


def delete(
    run_id: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    saves: SavesOpt = None,
) -> None:
    """Delete a saved run (its branches keep their own copies)."""
    store = open_store(saves)
    if not store.run_dir(run_id).is_dir():
        fail(f"no run {run_id!r} in {store.root}")
    if not yes and not typer.confirm(f"Delete run {run_id}?"):
        raise typer.Exit(1)
    store.delete(run_id)
    typer.echo(f"deleted {run_id}")


def scenarios() -> None:
    """List the bundled scenario library (broken entries are shown with the reason)."""
    from engine import Scenario, ScenarioError, library_ids, load_library

    from .tables import scenarios_table

    entries: dict[str, Scenario | Exception] = {}
    for sid in library_ids():
        try:
            entries[sid] = load_library(sid)
        except ScenarioError as err:  # one broken file must not hide the rest of the library
            entries[sid] = err
    make_console().print(scenarios_table(entries))


def validate(file: Annotated[Path, typer.Argument(help="A scenario .toml file.")]) -> None:
    """Check a scenario file; prints one line naming the problem, or a summary."""
    from engine import load_scenario_file

    s = load_scenario_file(file)
    typer.echo(
        f"{file}: ok — {s.title!r}, {len(s.agents)} agents, {s.rounds} rounds, "
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

    text = json.dumps(scenario_json_schema(), indent=2)
    if out is None:
        typer.echo(text)
    else:
        try:
            out.write_text(text + "\n", encoding="utf-8")
        except OSError as err:
            fail(f"--out {out}: cannot write ({err.strerror})")
        typer.echo(str(out))
