"""What every command shares: one-line errors, the save store, the console, running a
coroutine, the run and saves parameters."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from rich.console import Console

    from engine import SaveStore

T = TypeVar("T")

SavesOpt = Annotated[
    Path | None,
    typer.Option("--saves", help="Saves folder [default: $SOCIALSIM_SAVES or ./saves]."),
]
RunArg = Annotated[str, typer.Argument(help="Run id (see `socialsim list`).")]


def fail(message: str) -> NoReturn:
    """One clear line on stderr, exit code 2."""
    typer.echo(f"socialsim: error: {message}", err=True)
    raise typer.Exit(2)


def open_store(saves: Path | None) -> SaveStore:
    """The saves folder ``--saves`` names (default: $SOCIALSIM_SAVES or ./saves)."""
    from engine import SaveStore

    return SaveStore(saves)


def make_console() -> Console:
    """A console that prints user text as it is (no highlighting)."""
    from rich.console import Console

    return Console(highlight=False)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, then close any LLM clients it opened (no unclosed-client warnings)."""
    import asyncio

    async def main() -> T:
        try:
            return await coro
        finally:
            from engine.llm.transport import close_clients

            await close_clients()

    return asyncio.run(main())
