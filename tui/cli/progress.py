"""A run's LLM calls as the CLI shows them (``engine.llm.progress``), on stderr: on a terminal
one progress bar (the round's calls done of those expected, in flight, the oldest's age and
an ETA); piped, one line per finished phase."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from engine.llm.throughput import duration

if TYPE_CHECKING:
    from rich.console import RenderableType

    from engine import Simulation
    from engine.llm.progress import Calls, PhaseDone, Progress


def phase_line(done: PhaseDone, total_rounds: int) -> str:
    """``round 1/3 decide: 5 calls in 4 s (round: 5 of ~18 calls)``."""
    p = done.progress
    of = f" of ~{p.expected}" if p.expected is not None else ""
    return (
        f"round {p.round}/{total_rounds} {done.phase}: {done.calls} calls in "
        f"{duration(done.seconds)} (round: {p.done}{of} calls)"
    )


def bar_text(p: Progress, total_rounds: int, now: float | None = None) -> str:
    """What stands beside the bar: calls done of expected, in flight, oldest, ETA."""
    of = f"/~{p.expected}" if p.expected is not None else ""
    parts = [f"round {p.round}/{total_rounds} {p.phase}", f"{p.done}{of} calls"]
    age = p.oldest_age(now)
    if age is not None:
        parts.append(f"{p.in_flight} in flight, oldest {duration(age)}")
    eta = p.eta(now)
    parts.append(f"ETA {duration(eta)}" if eta is not None else "ETA unknown")
    return " · ".join(parts)


class _Bar:
    """A live renderable: the bar of the round's calls, read anew at every refresh."""

    def __init__(self, calls: Calls, total_rounds: int) -> None:
        self.calls, self.total_rounds = calls, total_rounds

    def __rich__(self) -> RenderableType:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        p = self.calls.now()
        grid = Table.grid(padding=(0, 1))
        grid.add_row(
            ProgressBar(total=p.expected, completed=p.done, width=30),
            bar_text(p, self.total_rounds),
        )
        return grid


@contextlib.contextmanager
def calls_shown(sim: Simulation, quiet: bool = False) -> Iterator[None]:
    """Show ``sim``'s LLM calls while the block plays it (nothing offline or ``quiet``)."""
    if quiet or sim.meta.llm is None:
        yield
        return
    if not sys.stderr.isatty():
        total = sim.total_rounds
        stop = sim.progress.on_phase(
            lambda done: typer.echo(phase_line(done, total), err=True) if done.calls else None
        )
        try:
            yield
        finally:
            stop()
        return
    from rich.console import Console
    from rich.live import Live

    if sim.round == 0:  # no round before the first to say how many calls to expect
        from engine.studies.estimate import estimate_run

        first = estimate_run(sim.scenario, sim.meta.llm, 1).calls.expected
        sim.progress.expect(round(first))
    bar = _Bar(sim.progress, sim.total_rounds)
    with Live(bar, console=Console(stderr=True), refresh_per_second=4, transient=True):
        yield
