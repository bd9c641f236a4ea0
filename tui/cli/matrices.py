"""Numeric matrices for ``show`` and ``diff`` that fit the terminal and never cut a cell:
the directed matrix in faction order, paged by columns (each page as wide as the console,
the row labels repeated); one agent's row and column (``--agent``); one faction's members
(``--faction``); or the long format, one line per directed edge (``--long``).

``show`` prints favorability with the status glyph (``+0.69+``); ``diff`` the difference
B − A (``+.12*``, ``*`` when the status differs). Values carry their sign in the text, so
they read the same without colour (``NO_COLOR``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text

from engine import WorldState
from engine.studies.diff import RoundDiff

from ..diff_text import delta_style, edge_cell
from ..diff_text import signed as delta
from ..relations import Selection, faction_codes, parse_selection, selected_names
from ..widgets.style import STATUS_GLYPH, fav_style

#: Columns between two cells of a page.
GAP = 2


@dataclass(frozen=True)
class MatrixView:
    """How ``show``/``diff`` print their matrix: one agent, one faction or all; long or
    paged; ``width`` is the console's."""

    selection: Selection
    long: bool
    width: int


def matrix_view(
    agent: str | None,
    faction: str | None,
    long: bool,
    width: int,
    names: Sequence[str],
    factions: Mapping[str, Sequence[str]],
) -> MatrixView:
    """The view ``--agent``/``--faction``/``--long`` ask for; a name that is neither an
    agent nor a faction is a ValueError with one clear line."""
    if agent is not None and faction is not None:
        raise ValueError("--agent and --faction: give one of them")
    selection = Selection()
    if agent is not None:
        if agent not in names:
            raise ValueError(f"--agent {agent}: no such agent; agents: {', '.join(names)}")
        selection = Selection(agent=agent)
    elif faction is not None:
        try:
            found = parse_selection(faction, [], factions) if factions else None
        except ValueError:
            found = None
        if found is None or found.faction is None:
            known = ", ".join(factions) or "none in this scenario"
            raise ValueError(f"--faction {faction}: no such faction; factions: {known}")
        selection = found
    return MatrixView(selection, long, width)


def _label(name: str, codes: Mapping[str, str]) -> str:
    code = codes.get(name, "")
    width = max((len(c) for c in codes.values()), default=0)
    return f"{code:<{width}} {name}" if width else name


def paged(
    rows: Sequence[str],
    cols: Sequence[str],
    cell: Callable[[str, str], Text],
    width: int,
    codes: Mapping[str, str],
    title: str,
) -> list[RenderableType]:
    """The matrix ``rows`` × ``cols`` in pages of whole columns that fit ``width``, each
    page's title naming its columns; a cell or a name is never cut. Rows carry their
    faction's code; columns (in the same order) their names. Each cell is made once and
    each page is one text aligned by hand (a table of a 1,000-agent matrix took minutes)."""
    labels = [_label(r, codes) for r in rows]
    label_width = max(len(x) for x in labels)
    grid = [[cell(r, c) for c in cols] for r in rows]
    widths = [max(len(c), *(line[k].cell_len for line in grid)) for k, c in enumerate(cols)]
    pages: list[list[int]] = [[]]
    used = label_width
    for k in range(len(cols)):
        if pages[-1] and used + GAP + widths[k] > width:
            pages.append([])
            used = label_width
        pages[-1].append(k)
        used += GAP + widths[k]
    out: list[RenderableType] = []
    pad = " " * GAP
    for number, page in enumerate(pages, start=1):
        first = page[0] + 1
        what = f"{title}, columns {first}-{first + len(page) - 1} of {len(cols)}"
        heading = what + (f" (page {number}/{len(pages)})" if len(pages) > 1 else "")
        text = Text(no_wrap=True, overflow="ignore")
        text.append(" " * label_width + "".join(pad + cols[k].rjust(widths[k]) for k in page))
        text.stylize("bold")
        for label, line in zip(labels, grid, strict=True):
            text.append("\n")
            text.append(label.ljust(label_width), style="bold")
            for k in page:
                text.append(pad + " " * (widths[k] - line[k].cell_len))
                text.append_text(line[k])
        out += [Text(heading, style="bold"), text, Text("")]
    return out[:-1]


def _codes_line(factions: Mapping[str, Sequence[str]]) -> Text:
    codes = faction_codes(list(factions))
    return Text("factions: " + " · ".join(f"{c} {f}" for f, c in codes.items()), style="dim")


def _member_codes(factions: Mapping[str, Sequence[str]]) -> dict[str, str]:
    codes = faction_codes(list(factions))
    return {who: codes[f] for f, members in factions.items() for who in members}


def _aligned(header: Sequence[str], lines: list[list[Text]]) -> Text:
    """Columns aligned by hand, every cell whole (the long format: a few columns)."""
    widths = [max([len(h), *(row[k].cell_len for row in lines)]) for k, h in enumerate(header)]
    out = Text(
        "  ".join(
            h.ljust(w) if k < 2 else h.rjust(w)
            for k, (h, w) in enumerate(zip(header, widths, strict=True))
        ),
        style="bold",
    )
    for row in lines:
        out.append("\n")
        for k, (cell, w) in enumerate(zip(row, widths, strict=True)):
            if k:
                out.append("  ")
            pad = " " * (w - cell.cell_len)
            out.append_text(Text.assemble(cell, pad) if k < 2 else Text.assemble(pad, cell))
    return out


# -- show: favorability ---------------------------------------------------------------------------


def fav_cell(state: WorldState, i: str, j: str) -> Text:
    """``+0.69+``: the value with two decimals and the status glyph; ``—`` on the diagonal."""
    if i == j:
        return Text("—", style="dim")
    rel = state.agents[i].relations[j]
    value = f"{round(rel.fav, 2) + 0.0:+.2f}"
    return Text(value + STATUS_GLYPH[rel.status], style=fav_style(rel.fav))


def fav_matrices(
    state: WorldState, factions: Mapping[str, Sequence[str]], view: MatrixView
) -> RenderableType:
    """``show``'s favorability (row → column) as ``view`` asks."""
    names = list(state.agents)
    codes = _member_codes(factions)
    rows = selected_names(view.selection, names, factions)
    legend = Text("+ ally · neutral ~ rival x enemy (the glyph after each value)", style="dim")
    ego = view.selection.agent
    if view.long:
        edges = (
            [(ego, o) for o in rows] + [(o, ego) for o in rows]
            if ego is not None
            else [(i, j) for i in rows for j in rows if i != j]
        )
        lines = []
        for i, j in edges:
            rel = state.agents[i].relations[j]
            value = Text(f"{rel.fav:+.4f}", style=fav_style(rel.fav))
            lines.append([Text(i), Text(j), value, Text(rel.status.value)])
        table = _aligned(("source", "target", "fav", "status"), lines)
        return Group(Text(f"favorability, {view.selection.describe()}", style="bold"), table)
    if ego is not None:
        lines = [
            [Text(_label(o, codes)), fav_cell(state, ego, o), fav_cell(state, o, ego)] for o in rows
        ]
        header = ("agent", f"{ego} → agent", f"agent → {ego}")
        title = Text(f"favorability: {ego}'s row and column", style="bold")
        parts: list[RenderableType] = [title, _aligned(header, lines), legend]
    else:
        what = f"favorability (row → column), {view.selection.describe()}"
        parts = paged(rows, rows, lambda i, j: fav_cell(state, i, j), view.width, codes, what)
        parts.append(legend)
    if factions:
        parts.append(_codes_line(factions))
    return Group(*parts)


# -- diff: favorability differences ---------------------------------------------------------------


def diff_cell(rd: RoundDiff, i: str, j: str) -> Text:
    """``+.12*``: B − A, ``*`` when the status differs; ``—`` on the diagonal."""
    return Text("—", style="dim") if i == j else edge_cell(rd.edges[(i, j)])


def diff_matrices(
    rd: RoundDiff, factions: Mapping[str, Sequence[str]], view: MatrixView
) -> RenderableType:
    """``diff``'s favorability difference (row → column) as ``view`` asks."""
    codes = _member_codes(factions)
    rows = selected_names(view.selection, list(rd.agents), factions)
    ego = view.selection.agent
    if view.long or ego is not None:
        edges = (
            [(ego, o) for o in rows] + [(o, ego) for o in rows]
            if ego is not None
            else [(i, j) for i in rows for j in rows if i != j]
        )
        lines = []
        for i, j in edges:
            e = rd.edges[(i, j)]
            status = e.status_b.value
            if e.status_a != e.status_b:
                status = f"{e.status_a.value}→{e.status_b.value}"
            lines.append(
                [
                    Text(i),
                    Text(j),
                    Text(f"{e.fav_a:+.3f}"),
                    Text(f"{e.fav_b:+.3f}"),
                    Text(delta(e.delta, 3), style=delta_style(e.delta)),
                    Text(status),
                ]
            )
        header = ("source", "target", "fav A", "fav B", "Δ", "status")
        title = Text(f"Δ fav = B − A, {view.selection.describe()}", style="bold")
        return Group(title, _aligned(header, lines))
    what = f"Δ fav = B − A (row → column), {view.selection.describe()}"
    parts = paged(rows, rows, lambda i, j: diff_cell(rd, i, j), view.width, codes, what)
    if factions:
        parts.append(_codes_line(factions))
    return Group(*parts)
