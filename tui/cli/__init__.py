"""The ``socialsim`` command line (typer): the commands live in one module per topic and are
listed here in the order of ``socialsim --help``. Engine imports stay inside the commands so
``socialsim --help`` starts fast."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer

from . import compare, library, measurement, runs, studies

__all__ = ["app", "main"]

app = typer.Typer(
    name="socialsim",
    help="Run and inspect LLM multi-agent social simulations.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.callback()(runs.root)
COMMANDS: dict[str, Callable[..., Any]] = {
    "tui": runs.tui,
    "run": runs.run,
    "resume": runs.resume,
    "replay": runs.replay,
    "survey": measurement.survey,
    "rate": measurement.rate,
    "branch": runs.branch,
    "list": library.list_runs,
    "show": library.show,
    "diff": compare.diff,
    "export": library.export,
    "delete": library.delete,
    "sweep": studies.sweep,
    "tasks": studies.tasks,
    "recast": studies.recast,
    "scenarios": library.scenarios,
    "validate": library.validate,
    "schema": library.schema,
}
for name, command in COMMANDS.items():
    app.command(name)(command)


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
