"""Comparing two runs: ``diff``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .base import SavesOpt, fail, make_console, open_store

if TYPE_CHECKING:
    from rich.console import RenderableType

    from engine.studies.diff import RoundDiff


def heatmap(rd: RoundDiff) -> RenderableType:
    """The favorability difference matrix (row → column), one signed cell per edge."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ..diff_text import LEGEND, edge_cell

    table = Table(box=None, pad_edge=False)
    table.add_column("from \\ to", style="bold", no_wrap=True)
    for name in rd.agents:
        table.add_column(Text(name), justify="right", no_wrap=True)
    for i in rd.agents:
        cells = [
            Text("—", style="dim") if i == j else edge_cell(rd.edges[(i, j)]) for j in rd.agents
        ]
        table.add_row(Text(i), *cells)
    return Group(table, Text(LEGEND, style="dim"))


def agents_table(rd: RoundDiff) -> RenderableType:
    """Emotion in both runs and its difference, and the needs that differ most."""
    from rich.table import Table
    from rich.text import Text

    from ..diff_text import emotion_cells, needs_text

    table = Table(box=None, pad_edge=False)
    table.add_column("agent", style="bold", no_wrap=True)
    for header in ("S A", "S B", "Δ S"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("needs: largest Δ")
    for name, person in rd.people.items():
        table.add_row(Text(name), *emotion_cells(person), needs_text(person))
    return table


def transcripts(rd: RoundDiff, run_a: str, run_b: str) -> RenderableType:
    """The two transcripts of the round side by side."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ..diff_text import TALK_LEGEND, transcript_text

    table = Table(expand=True, caption=TALK_LEGEND, caption_justify="left")
    table.add_column(Text(f"A {run_a}", style="bold"), ratio=1)
    table.add_column(Text(f"B {run_b}", style="bold"), ratio=1)
    table.add_row(
        Group(*transcript_text(rd.transcript_a, rd.transcript_b)),
        Group(*transcript_text(rd.transcript_b, rd.transcript_a)),
    )
    return table


def diff(
    run_a: Annotated[str, typer.Argument(metavar="RUN-A", help="The reference run (A).")],
    run_b: Annotated[
        str, typer.Argument(metavar="RUN-B", help="The run compared with it (B); Δ = B − A.")
    ],
    round_no: Annotated[
        int | None,
        typer.Option(
            "--round", help="Round to show [default: the first divergence, else the last]."
        ),
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Compare two runs: first divergence, favorability difference, emotions, needs, talk."""
    from rich.text import Text

    from engine.studies.diff import RunComparison

    from ..diff_text import profile_line, run_lines

    comparison = RunComparison(open_store(saves), run_a, run_b)
    last = comparison.last_common
    if round_no is None:
        round_no = comparison.default_round()
    elif not 0 <= round_no <= last:
        fail(f"--round {round_no}: runs {run_a!r} and {run_b!r} both have rounds 0..{last}")
    rd = comparison.round_diff(round_no)
    console = make_console()
    for line in run_lines(comparison):
        console.print(line)
    console.print(profile_line(list(comparison.profile())))
    console.print()
    console.print(Text(f"Round {round_no} (Δ = B − A)", style="bold cyan"))
    console.print(heatmap(rd))
    console.print()
    console.print(agents_table(rd))
    console.print()
    console.print(transcripts(rd, comparison.run_a, comparison.run_b))
