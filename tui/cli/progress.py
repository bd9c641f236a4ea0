"""LLM calls as the CLI shows them (``engine.llm.progress``), on stderr: on a terminal a
progress bar (the round's calls done of those expected, in flight, the oldest's age and an
ETA); piped, one line per finished phase. For a run played here (``run``, ``resume``:
:func:`calls_shown`) and for the runs a batch plays in its workers (``trial``, ``sweep``:
:class:`BatchCalls`, fed the workers' relayed reports), one row and one line per run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from engine.llm.throughput import duration

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from engine import Simulation
    from engine.llm.progress import PhaseDone, Progress
    from engine.studies.experiments.relay import Report


def _where(p: Progress, total_rounds: int | None, run: str) -> str:
    """``round 1/3`` (``round 1`` with no total), after the run's name if there is one."""
    rounds = f"round {p.round}" + (f"/{total_rounds}" if total_rounds is not None else "")
    return f"{run} {rounds}" if run else rounds


def phase_line(done: PhaseDone, total_rounds: int | None, run: str = "") -> str:
    """``round 1/3 decide: 5 calls in 4 s (round: 5 of ~18 calls)``, after ``run``."""
    p = done.progress
    of = f" of ~{p.expected}" if p.expected is not None else ""
    return (
        f"{_where(p, total_rounds, run)} {done.phase}: {done.calls} calls in "
        f"{duration(done.seconds)} (round: {p.done}{of} calls)"
    )


def bar_text(p: Progress, total_rounds: int | None, now: float | None = None, run: str = "") -> str:
    """What stands beside the bar: calls done of expected, in flight, oldest, ETA."""
    of = f"/~{p.expected}" if p.expected is not None else ""
    parts = [f"{_where(p, total_rounds, run)} {p.phase}".rstrip(), f"{p.done}{of} calls"]
    age = p.oldest_age(now)
    if age is not None:
        parts.append(f"{p.in_flight} in flight{p.by_endpoint()}, oldest {duration(age)}")
    eta = p.eta(now)
    parts.append(f"ETA {duration(eta)}" if eta is not None else "ETA unknown")
    return " · ".join(parts)


def calls_row(p: Progress, total_rounds: int | None, run: str = "") -> RenderableType:
    """One bar of a round's calls and its text."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    bar = ProgressBar(total=p.expected, completed=p.done, width=30)
    grid.add_row(bar, bar_text(p, total_rounds, run=run))
    return grid


def terminal() -> Console | None:
    """A console on stderr when stderr is a terminal (None: piped)."""
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else None


class _Bar:
    """A live renderable: the bar of the round's calls, read anew at every refresh."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def __rich__(self) -> RenderableType:
        return calls_row(self.sim.progress.now(), self.sim.total_rounds)


@contextlib.contextmanager
def calls_shown(sim: Simulation, quiet: bool = False) -> Iterator[None]:
    """Show ``sim``'s LLM calls while the block plays it (nothing offline or ``quiet``)."""
    if quiet or sim.meta.llm is None:
        yield
        return
    console = terminal()
    if console is None:
        total = sim.total_rounds
        stop = sim.progress.on_phase(
            lambda done: typer.echo(phase_line(done, total), err=True) if done.calls else None
        )
        try:
            yield
        finally:
            stop()
        return
    from rich.live import Live

    with Live(_Bar(sim), console=console, refresh_per_second=4, transient=True):
        yield


@contextlib.contextmanager
def opening(what: str) -> Iterator[None]:
    """While the block opens ``what`` (a scenario or run as the user named it: a
    1,000-agent cast's file or save takes seconds before the app can draw), a spinner and
    the seconds so far on stderr, erased after; only on a terminal."""
    console = terminal()
    if console is None:
        yield
        return
    from rich.live import Live

    with Live(_Opening(what), console=console, refresh_per_second=10, transient=True):
        yield


class _Opening:
    """A live renderable: a spinner, what is being opened and for how long."""

    def __init__(self, what: str) -> None:
        from rich.spinner import Spinner

        from engine.core.textsafe import one_line

        self.what, self.start, self.spinner = one_line(what), time.monotonic(), Spinner("dots")

    def __rich__(self) -> RenderableType:
        from rich.text import Text

        seconds = time.monotonic() - self.start
        self.spinner.update(text=Text(f"Opening {self.what}… {seconds:.1f} s"))
        return self.spinner


class BatchCalls:
    """The LLM calls of the runs a batch is playing, from their relayed reports
    (engine/studies/experiments/relay.py): the latest of each run in flight, one row each on
    a terminal; piped (``lines``), one line per finished phase."""

    def __init__(self, lines: bool) -> None:
        self.lines = lines
        self.runs: dict[str, Report] = {}

    def __call__(self, report: Report) -> None:
        """One report (in the calling thread; rows are read from rich's)."""
        p = report.progress
        if p is None:  # the run's job ended
            self.runs = {run: r for run, r in self.runs.items() if run != report.run}
            return
        if self.lines and report.phase is not None and report.phase.calls:
            typer.echo(phase_line(report.phase, report.rounds, report.run), err=True)
        self.runs = {**self.runs, report.run: report}

    def rows(self) -> list[RenderableType]:
        """A bar of the round's calls for each run in flight, in the order they began."""
        return [
            calls_row(r.progress, r.rounds, r.run)
            for r in self.runs.values()
            if r.progress is not None
        ]
