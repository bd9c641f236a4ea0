"""What ``sweep`` and ``trial`` share: the executor options, a rich progress bar on stderr
(runs finished of the total, and the LLM calls of the runs in flight), and the confirmation
asked before an LLM batch spends money."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from .base import fail, say

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID

    from engine.studies.estimate import Estimate
    from engine.studies.experiments.executor import Executor

    from .progress import BatchCalls

PANEL = "Executor"
ExecutorOpt = Annotated[
    str, typer.Option(help="local (worker processes) or ray.", rich_help_panel=PANEL)
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        min=1, help="Local worker processes [default: one per core].", rich_help_panel=PANEL
    ),
]
AddressOpt = Annotated[
    str | None, typer.Option(help="Ray address, e.g. auto.", rich_help_panel=PANEL)
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        min=0.001, help="One LLM rate limit shared by every worker.", rich_help_panel=PANEL
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before spending on an LLM.")]


def make_executor(
    kind: str, workers: int | None, address: str | None, calls_per_second: float | None
) -> Executor:
    """The executor the options name."""
    if kind == "local":
        from engine.studies.experiments.executor import LocalExecutor

        return LocalExecutor(workers, calls_per_second)
    if kind == "ray":
        from engine.studies.experiments.ray_executor import RayExecutor

        return RayExecutor(address=address, num_cpus=workers, calls_per_second=calls_per_second)
    fail(f"--executor {kind!r}: choose local or ray")


class Bar:
    """A rich progress bar's one task: runs finished of a total; ``calls``: the listener of
    the runs' LLM call reports (None: an offline batch)."""

    def __init__(self, progress: Progress, task: TaskID, calls: BatchCalls | None) -> None:
        self.progress = progress
        self.task = task
        self.calls = calls

    def advance(self, *_: object) -> None:
        """One more job finished."""
        self.progress.advance(self.task)

    def total(self, total: int) -> None:
        """The jobs there are to play (after those finished already are counted out)."""
        self.progress.update(self.task, total=total)


@contextmanager
def progress_bar(
    what: str,
    total: int,
    llm: bool = False,
    console: Console | None = None,
) -> Iterator[Bar]:
    """A progress bar on stderr (or ``console``), cleared when it ends. An ``llm`` batch's
    runs in flight each get a row of their round's calls below it on a terminal, piped a
    line per finished phase."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from .progress import BatchCalls

    class WithRuns(Progress):
        """The runs bar, then a row per run in flight."""

        def get_renderables(self) -> Iterable[RenderableType]:
            yield self.make_tasks_table(self.tasks)
            if calls is not None:
                yield from calls.rows()

    console = console or Console(stderr=True)
    tty = console.is_terminal
    calls = BatchCalls(not tty) if llm else None
    progress = WithRuns(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task(what, total=total)
    with progress:
        yield Bar(progress, task, calls)


def confirm_spend(offline: bool, yes: bool, what: str, estimate: Estimate | None = None) -> None:
    """Before an LLM batch: print its estimate (when there is one) and ask, unless
    ``--yes``; the offline model costs nothing."""
    if offline:
        return
    if estimate is not None:
        say(f"{what}: {estimate.summary()} (from {estimate.source})")
    if yes:
        return
    if not typer.confirm(f"{what} calls an LLM for every run. Go on?", default=False, err=True):
        fail("cancelled before any call (give --yes to skip this question)")
