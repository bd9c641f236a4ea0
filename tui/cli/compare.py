"""Comparing two runs: ``diff``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .base import FormatOpt, SavesOpt, fail, make_console, open_store

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from engine.studies.diff import RoundDiff


def heatmap_table(rd: RoundDiff) -> Table:
    """The favorability difference matrix (row → column), one signed cell per edge."""
    from rich.table import Table
    from rich.text import Text

    from ..diff_text import edge_cell

    table = Table(box=None, pad_edge=False)
    table.add_column("from \\ to", style="bold", no_wrap=True)
    for name in rd.agents:
        table.add_column(Text(name), justify="right", no_wrap=True)
    for i in rd.agents:
        cells = [
            Text("—", style="dim") if i == j else edge_cell(rd.edges[(i, j)]) for j in rd.agents
        ]
        table.add_row(Text(i), *cells)
    return table


def agents_table(rd: RoundDiff) -> Table:
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
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="Only NAME's row and column, edge by edge."),
    ] = None,
    faction: Annotated[
        str | None,
        typer.Option("--faction", metavar="F", help="Only the members of faction F (of A)."),
    ] = None,
    long: Annotated[
        bool, typer.Option("--long", help="The difference in long format: one line per edge.")
    ] = False,
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Compare two runs: first divergence, favorability difference, emotions, needs, talk.
    The difference matrix stands in faction order, in pages of columns that fit the
    terminal; --agent, --faction and --long narrow it down or list it edge by edge
    (--format other than table: the difference matrix and the agents)."""
    from rich.text import Text

    from engine.studies.diff import RunComparison

    from ..diff_text import LEGEND, profile_line, run_lines
    from .matrices import diff_matrices, matrix_view

    comparison = RunComparison(open_store(saves), run_a, run_b)
    last = comparison.last_common
    if round_no is None:
        round_no = comparison.default_round()
    elif not 0 <= round_no <= last:
        fail(f"--round {round_no}: runs {run_a!r} and {run_b!r} both have rounds 0..{last}")
    if fmt != "table":
        from .output import emit, rows_of

        rd = comparison.round_diff(round_no)
        named = [rows_of(heatmap_table(rd), "favorability Δ"), rows_of(agents_table(rd), "agents")]
        emit(make_console(), named, fmt)
        return
    console = make_console()
    factions = comparison.meta_a.scenario.factions
    try:
        view = matrix_view(agent, faction, long, console.width, comparison.agents, factions)
    except ValueError as err:
        fail(str(err))
    rd = comparison.round_diff(round_no)
    for line in run_lines(comparison):
        console.print(line)
    if (warning := comparison.scenario_warning()) is not None:
        console.print(Text(warning, style="bold yellow"))
    console.print(profile_line(list(comparison.profile())))
    console.print()
    console.print(Text(f"Round {round_no} (Δ = B − A)", style="bold cyan"))
    console.print(diff_matrices(rd, factions, view))
    console.print(Text(LEGEND, style="dim"))
    from .output import print_all

    console.print()
    print_all(console, agents_table(rd))
    console.print()
    console.print(transcripts(rd, comparison.run_a, comparison.run_b))
