"""How a command prints its tables: ``--format table|csv|tsv|json|markdown``.

As a table (the default) nothing is ever cut: printed to something that is not a terminal
(a pipe, a file) a table is as wide as its widest row needs, never squeezed to 80 columns;
in a terminal too narrow for its longest words it is stacked, one ``column: value`` line per
cell, so no name or number is cut with ``…``. The other formats print the same rows for
a machine, numbers as plain numbers (:class:`Number`): csv and tsv (one block per table, a
blank line between), json (a table's rows as objects; several tables as an object of them
by title), markdown (a pipe table each).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

FORMATS = ("table", "csv", "tsv", "json", "markdown")


Plain = str | int | float | None


class Number(str):
    """A cell shown as text (``32,756``, ``$0.0056``, ``4.2 min``) whose machine formats
    (csv, tsv, json) carry the plain number: ``value``, or several named parts (an interval
    ``[-0.1, +0.3]`` as ``ci_low`` and ``ci_high``), each then a column of its own."""

    value: Plain | dict[str, Plain]

    def __new__(cls, shown: str, value: Plain | dict[str, Plain]) -> Number:
        cell = super().__new__(cls, shown)
        cell.value = value
        return cell


def seconds(value: float) -> Number:
    """A duration shown as people read it (``4.2 s``, ``3.5 min``), in seconds for a machine."""
    from engine.llm.throughput import duration

    return Number(duration(value), round(value, 1))


@dataclass
class Rows:
    """A table as plain cells: what every format but ``table`` prints."""

    name: str
    header: list[str]
    rows: list[list[Plain]]


def plain(cell: object) -> str:
    """A cell's text without its styles (markup in a ``str`` cell is rendered away)."""
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return str(cell)


def rows_of(table: Table, name: str = "", machine: bool = True) -> Rows:
    """The header and cells of a rich ``table``, as a machine reads them unless told not to
    (a :class:`Number` as its plain value; one with named parts as a column per part, named
    by the part); ``name``: its key in json [default: its title, else ``table``]."""
    header: list[str] = []
    columns: list[list[Plain]] = []
    for column in table.columns:
        cells = list(column.cells)
        head = plain(column.header)
        parts = next(
            (c.value for c in cells if isinstance(c, Number) and isinstance(c.value, dict)),
            None,
        )
        if parts is None or not machine:
            header.append(head)
            columns.append([_machine(c) if machine else plain(c) for c in cells])
            continue
        for part in parts:
            header.append(part)
            columns.append([_part(c, part) for c in cells])
    rows = [list(row) for row in zip(*columns, strict=True)] if columns else []
    return Rows(name or plain(table.title or "") or "table", header, rows)


def _machine(cell: object) -> Plain:
    if isinstance(cell, Number) and not isinstance(cell.value, dict):
        return cell.value
    return plain(cell)


def _part(cell: object, part: str) -> Plain:
    if isinstance(cell, Number) and isinstance(cell.value, dict):
        return cell.value.get(part)
    return None if plain(cell) in ("", "–") else plain(cell)


def as_text(tables: Sequence[Rows], fmt: str) -> str:
    """``tables`` in the format ``fmt`` (any of :data:`FORMATS` but ``table``)."""
    if fmt == "json":
        objects = {t.name: [dict(zip(t.header, r, strict=True)) for r in t.rows] for t in tables}
        value = next(iter(objects.values())) if len(objects) == 1 else objects
        return json.dumps(value, ensure_ascii=False, indent=1) + "\n"
    blocks = []
    for t in tables:
        if fmt == "markdown":
            lines = [f"**{t.name}**\n"] if len(tables) > 1 else []
            lines += [_md_row(t.header), "|" + "---|" * len(t.header)]
            lines += [_md_row(r) for r in t.rows]
            blocks.append("\n".join(lines) + "\n")
            continue
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(t.header)
        cells = [["" if c is None else str(c) for c in r] for r in t.rows]
        writer.writerows(
            [[c.replace("\t", " ").replace("\n", " ") for c in r] for r in cells]
            if fmt == "tsv"
            else cells
        )
        blocks.append(buffer.getvalue())
    return "\n".join(blocks)


def _md_row(cells: Sequence[Plain]) -> str:
    text = ("" if c is None else str(c) for c in cells)
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in text) + " |"


def emit(console: Console, tables: Sequence[Table | Rows], fmt: str) -> None:
    """Print ``tables`` in the format ``fmt``: as tables that are never cut, or as text."""
    if fmt != "table":
        machine = fmt != "markdown"
        found = [t if isinstance(t, Rows) else rows_of(t, machine=machine) for t in tables]
        sys.stdout.write(as_text(found, fmt))
        sys.stdout.flush()
        return
    for table in tables:
        if isinstance(table, Rows):
            table = _rich(table)
        print_whole(console, table)


def _rich(rows: Rows) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for name in rows.header:
        table.add_column(name)
    for row in rows.rows:
        table.add_row(*("" if c is None else str(c) for c in row), style=None)
    return table


def print_all(console: Console, *renderables: RenderableType) -> None:
    """Print ``renderables``, every table among them (also inside a group) whole."""
    from rich.console import Group
    from rich.table import Table

    for renderable in renderables:
        if isinstance(renderable, Group):
            print_all(console, *renderable.renderables)
        elif isinstance(renderable, Table):
            print_whole(console, renderable)
        else:
            console.print(renderable)


def print_whole(console: Console, table: Table) -> None:
    """Print ``table`` with no cell cut: as wide as it needs when not to a terminal; in a
    terminal, cells wrapped at their spaces when its longest words fit, else stacked."""
    from rich.measure import Measurement

    for column in table.columns:  # wrap, never ellipsize
        column.no_wrap = False
        column.overflow = "fold"
    table.expand = False  # a ratio column would otherwise fill the page
    if not console.is_terminal:
        needed = Measurement.get(console, console.options.update(width=10**5), table)
        width = console.width  # print's own width= can only narrow
        console.width = max(width, needed.maximum)
        try:
            console.print(table)
        finally:
            console.width = width
    elif _fit(console, table):
        console.print(table)
    else:
        console.print(stacked(table))


def _fit(console: Console, table: Table) -> bool:
    """Give each column of ``table`` at least its longest word and share the rest of the
    terminal's width by what each would take more; False when the words alone do not fit.
    (rich's own squeeze narrows the widest columns first, below their longest word.)"""
    wide = console.options.update(width=10**5)
    ranges = [table._measure_column(console, wide, column) for column in table.columns]
    free = console.width - table._extra_width - sum(r.minimum for r in ranges)
    if free < 0:
        return False
    slack = [r.maximum - r.minimum for r in ranges]
    if free >= sum(slack):
        return True
    for column, r, more in zip(table.columns, ranges, slack, strict=True):
        share = free * more // sum(slack)
        column.width = r.minimum + share - table._get_padding_width(column._index)
    return True


def stacked(table: Table) -> RenderableType:
    """A table too wide for the terminal, one ``column: value`` line per cell and a blank
    line between rows."""
    from rich.console import Group
    from rich.text import Text

    rows = rows_of(table, machine=False)
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text(plain(table.title), style="bold"))
    width = max((len(h) for h in rows.header), default=0)
    for k, row in enumerate(rows.rows):
        if k:
            parts.append(Text(""))
        for head, cell in zip(rows.header, row, strict=True):
            parts.append(Text.assemble((f"{head.rjust(width)}: ", "dim"), str(cell)))
    return Group(*parts)
