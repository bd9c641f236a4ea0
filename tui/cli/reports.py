"""``socialsim report``: one self-contained HTML file of a run or of a trial, to copy off
the machine and open in any browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .base import SavesOpt, fail, open_store, out_file, outside_saves, say, tidy


def report(
    ref: Annotated[
        str, typer.Argument(metavar="RUN|TRIAL", help="Run id (see `socialsim list`) or trial id.")
    ],
    out: Annotated[
        Path,
        typer.Option(parser=out_file, metavar="<path>", help="The HTML file to write."),
    ],
    outcome: Annotated[
        list[str],
        typer.Option(
            "--outcome",
            help="A trial: plot this outcome (METRIC or METRIC:AGENT; repeatable) "
            "[default: as socialsim trial shows].",
        ),
    ] = [],  # noqa: B006 - typer reads the default
    arm_reports: Annotated[
        bool,
        typer.Option(
            "--arm-reports/--no-arm-reports",
            help="A trial: also each arm run's report, in FILE.runs/ beside it, linked "
            "[default: one file].",
        ),
    ] = False,
    saves: SavesOpt = None,
) -> None:
    """Write a run's or a trial's report: one HTML file, every script inlined, that opens
    from file:// without network (plotly and Jinja2)."""
    from engine.reports.html import report_modules, write_run_report, write_trial_report
    from engine.saves.store import check_run_id
    from engine.studies.experiments.trial import load_spec, spec_path

    report_modules()
    store = open_store(saves)
    outside_saves(out, store)
    check_run_id(ref)
    if store.run_dir(ref).is_dir():
        tidy(store, [ref])
        typer.echo(str(write_run_report(store, ref, out)))
        return
    if not spec_path(store, ref).is_file():
        fail(f"no run or trial {ref!r} in {store.root} (see socialsim list)")
    from .trial import _selector

    shown = _selector(outcome, load_spec(store, ref))
    paths = write_trial_report(
        store, ref, out, outcomes=shown, arm_reports=arm_reports,  # type: ignore[arg-type]
        progress=lambda run_id: say(f"wrote the report of {run_id}"),
    )  # fmt: skip
    typer.echo(str(paths[-1]))
