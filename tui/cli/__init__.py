"""The ``socialsim`` command line (typer): the commands live in one module per topic and are
listed in :data:`COMMANDS` in the order of ``socialsim --help``. Nothing heavy is imported
until a command runs: typer prints every help, a command runs in an app that holds it alone
(its module imported, not the others), and the engine, the app, litellm, numpy and
statsmodels are imported inside the commands, never at module import."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

__all__ = ["COMMANDS", "app", "build_app", "commands", "main"]


#: Every command by name, in the order of ``socialsim --help``: the module of ``tui/cli``
#: that defines it and the function. A module is imported when one of its commands runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "tui": ("runs", "tui"),
    "run": ("runs", "run"),
    "resume": ("runs", "resume"),
    "replay": ("runs", "replay"),
    "survey": ("measurement", "survey"),
    "rate": ("measurement", "rate"),
    "branch": ("runs", "branch"),
    "queue": ("runs", "queue"),
    "list": ("library", "list_runs"),
    "show": ("library", "show"),
    "diff": ("compare", "diff"),
    "card": ("card", "card"),
    "export": ("library", "export"),
    "report": ("reports", "report"),
    "delete": ("library", "delete"),
    "estimate": ("estimate", "estimate"),
    "sweep": ("studies", "sweep"),
    "trial": ("trial", "trial"),
    "tasks": ("studies", "tasks"),
    "recast": ("studies", "recast"),
    "scenarios": ("library", "scenarios"),
    "validate": ("library", "validate"),
    "schema": ("library", "schema"),
}


def commands(*names: str) -> dict[str, Callable[..., Any]]:
    """The commands ``names`` (every one when none is named) by name, in the order of
    ``socialsim --help``; only their modules are imported."""
    from importlib import import_module

    return {
        name: getattr(import_module(f".{module}", __name__), function)
        for name, (module, function) in COMMANDS.items()
        if not names or name in names
    }


def build_app(only: str | None = None) -> typer.Typer:
    """The typer application with every command registered, or with command ``only``
    alone (to run it: typer builds the parameters of every command it holds first)."""
    import typer

    from . import runs

    app = typer.Typer(
        name="socialsim",
        help="Run and inspect LLM multi-agent social simulations.",
        invoke_without_command=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode="markdown",
    )
    app.callback()(runs.root)
    for name, command in (commands(only) if only else commands()).items():
        app.command(name)(command)
    if only is None:
        from . import label

        app.add_typer(label.app(), name="label")
    return app


def _app() -> typer.Typer:
    app: typer.Typer | None = globals().get("app")
    if app is None:
        app = globals()["app"] = build_app()
    return app


def __getattr__(name: str) -> Any:
    """``tui.cli.app``: the typer application, built on first use."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: exits with the command's code; bad input (engine errors
    and typer's usage errors alike) is one line ``socialsim: error: ...`` and exit code 2."""
    args = sys.argv[1:]
    # socialsim uses no pydantic plugins; looking for them reads the metadata of every
    # installed distribution (~20 ms of each command)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from .base import invoke

    only = args[0] if args and args[0] in COMMANDS else None
    sys.exit(invoke(_app() if only is None else build_app(only), args))
