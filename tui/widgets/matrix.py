"""The directed favorability matrix: row = from, column = to; and its relational-prior
overlay, the fixed signs a prior states for each pair (Relational priors Sec. 3).

Agents stand in faction order: a header line names the factions over their columns, a
``│`` opens each faction's columns, the last row of each is underlined and, where rows are
numbered, each row label starts with its faction's code. The
grid scrolls both ways under sticky headers (the column header rows and the row-label
column). Cells show the value and a status glyph when every column fits the width the
matrix is given, else one coloured glyph per cell under numbered columns (with colour off,
``NO_COLOR``, a glyph of the value's sign and size instead). The matrix may be filtered to
one agent's row and column (the others down the side, two columns: its regard for them and
theirs for it) or to one faction. The line above the grid names the cursor's pair in full
with its exact value; the lines under it say what is shown and which rows and columns are
in view when some are not, and give the legend of the colour scale and the glyphs
(compact, for a short panel, without the sticky note).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate, pairwise
from typing import overload

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from engine import Status
from engine.core.priors import Prior, sign_index
from engine.core.rules import ALLY_AT, ENEMY_AT, RIVAL_AT, threshold_status
from engine.core.view import StateLike

from ..relations import (
    BAND_EDGES,
    BAND_GLYPH,
    Selection,
    faction_codes,
    fav_band,
    selected_names,
    short_fav,
)
from .grid import Grid, LazyCells
from .statics import show_content
from .style import STATUS_GLYPH, fav_style

LEGEND = "+ ally · neutral ~ rival x enemy"
#: Under NO_COLOR a glyph cell shows the value's band, not the status.
BAND_LEGEND = "glyph = fav; status on the cursor's line"
#: The colour of each favorability band (:func:`~tui.relations.fav_band`), lowest first.
BAND_STYLE = {band: fav_style(fav) for band, fav in enumerate((-1, -0.3, 0, 0.3, 1), -2)}
PRIOR_LEGEND = "prior + pos 0 neutral - neg · unstated"
STICKY = (
    f"sticky: {{example}} (status moves at {ALLY_AT:+.2f}, {RIVAL_AT:+.2f}, {ENEMY_AT:+.2f}"
    " or by an event)"
).replace("0.", ".")
#: How a stated sign is drawn: compact glyph, full cell, colour, words.
SIGN_CELL = {
    1: ("+", "+1", "bold green", "+1 positive"),
    0: ("0", "0", "default", "0 neutral"),
    -1: ("-", "-1", "bold red", "-1 negative"),
}
UNSTATED = ("·", "·", "dim", "not stated")
NAME_MAX = 12  # row labels longer than this are cut (unambiguously)
HEADER_MAX = 10  # column headers of the value layout
#: The longest value part of the cursor's line, with the prior overlay and without.
PRIOR_WORDS = len("  prior -1 negative")
FAV_WORDS = len("  +0.0000 neutral")


def prior_title(prior: Prior | None) -> str:
    """The overlay's heading: the prior's relation type, topology and λ, or none."""
    if prior is None or prior.relation is None:
        return "relational prior: none (no block)"
    what = f"{prior.relation}/{prior.topology}"
    if prior.control == "explicit-neutral":
        return f"relational prior: {what}, all neutral"
    return f"relational prior: {what} λ={prior.positivity:.2g}"


def signed(value: float, digits: int) -> str:
    """``value`` with a sign and ``digits`` decimals; never ``-0.00``."""
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def scale_legend(no_color: bool) -> Text:
    """The colour scale: ``fav -1 █ -.5 █ -.1 █ .15 █ .55 █ 1``, each block in its
    band's colour (with colour off, the band's glyph)."""
    text = Text("fav ", style="dim")
    for band, low in enumerate(BAND_EDGES[:-1], -2):
        text.append(f"{low} ")
        mark = BAND_GLYPH[band] if no_color else "█"
        text.append(mark, style="" if no_color else BAND_STYLE[band])
        text.append(" ")
    text.append(BAND_EDGES[-1])
    return text


def abbreviate(names: Sequence[str], width: int) -> list[str]:
    """Each name cut to ``width`` characters with ``…``; cuts that would read the same keep
    the agent's number (``Maxi…12``), so no two labels are alike."""
    cut = [n if len(n) <= width else n[: width - 1] + "…" for n in names]
    seen = Counter(cut)
    return [
        label if seen[label] == 1 else f"{name[: max(1, width - 1 - len(str(k)))]}…{k}"
        for k, (name, label) in enumerate(zip(names, cut, strict=True), start=1)
    ]


@dataclass(frozen=True)
class Layout:
    """How the grid is drawn: ``values`` (fav and glyph per cell, named columns) or
    ``glyphs`` (one glyph per cell, numbered columns and rows; numbers above 9 may stand
    in two header lines, tens over units, to fit more columns). ``starts``: the columns that
    open a faction (a ``│`` before them); ``ends``: the rows that close one (underlined)."""

    density: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    col_widths: tuple[int, ...]
    header_lines: int = 1
    starts: frozenset[int] = frozenset()
    ends: frozenset[int] = frozenset()

    @cached_property
    def label_width(self) -> int:
        return max(len(label) for label in self.row_labels)

    @property
    def width(self) -> int:
        """Columns the whole grid needs (each cell has a space before it)."""
        return self.label_width + sum(w + 1 for w in self.col_widths)


@dataclass(frozen=True)
class Cast:
    """The agents a grid shows, in order, each with its faction's code, and the factions
    over the columns as (name, how many columns); no factions: empty codes and groups."""

    names: tuple[str, ...]
    codes: tuple[str, ...] = ()
    groups: tuple[tuple[str, int], ...] = ()


def cast_of(names: Sequence[str], factions: dict[str, list[str]]) -> Cast:
    """``names`` (already in faction order) with their factions' codes and column groups."""
    if not factions:
        return Cast(tuple(names))
    code = faction_codes(list(factions))
    faction_of = {who: f for f, members in factions.items() for who in members}
    groups: list[tuple[str, int]] = []
    for name in names:
        faction = faction_of.get(name, "others")
        if groups and groups[-1][0] == faction:
            groups[-1] = (faction, groups[-1][1] + 1)
        else:
            groups.append((faction, 1))
    codes = tuple(code.get(faction_of.get(n, ""), "") for n in names)
    return Cast(tuple(names), codes, tuple(groups))


def layouts(names: Sequence[str] | Cast) -> tuple[Layout, ...]:
    """The layouts to try, widest first: values under full column names, values under five
    characters per name, glyphs under numbers with room between them, glyphs under numbers,
    glyphs under numbers standing tens over units (only when some number has two digits).
    With factions, a header line above names them over their columns. Worked out once per
    cast (the matrix asks on every round and resize)."""
    return _layouts(names if isinstance(names, Cast) else Cast(tuple(names)))


def _grouped(options: list[Layout], cast: Cast) -> tuple[Layout, ...]:
    """Each layout with the factions' header line over its columns, ``│`` opening each,
    the last row of each underlined, and (numbered rows) the faction's code before each
    row's number: the values layouts, for a few agents, keep their width for values."""
    if not cast.groups:
        return tuple(options)
    ends = frozenset(accumulate(count for _, count in cast.groups[:-1])) - {0}
    ends = frozenset(k - 1 for k in ends)
    grouped = []
    for o in options:
        parts: list[str] = []
        starts: set[int] = set()
        k = 0
        for faction, count in cast.groups:
            widths = [w + 1 for w in o.col_widths[k : k + count]]
            span = sum(widths)
            code = cast.codes[k] or "-"
            label = ("│" + (faction if len(faction) < span else code))[:span].ljust(span)
            cuts = [0, *accumulate(widths)]
            parts += [label[x:y] for x, y in pairwise(cuts)]
            starts.add(k)
            k += count
        labels = tuple(f"{part}\n{label}" for part, label in zip(parts, o.col_labels, strict=True))
        rows = o.row_labels
        if o.density == "glyphs":
            width = max(len(c) for c in cast.codes)
            rows = tuple(f"{c:<{width}} {label}" for c, label in zip(cast.codes, rows, strict=True))
        grouped.append(
            Layout(
                o.density, rows, labels, o.col_widths, o.header_lines + 1, frozenset(starts), ends
            )
        )
    return tuple(grouped)


@lru_cache(maxsize=8)
def _layouts(cast: Cast) -> tuple[Layout, ...]:
    names = cast.names
    n = len(names)
    rows = tuple(abbreviate(names, NAME_MAX))
    full = tuple(abbreviate(names, HEADER_MAX))
    short = tuple(abbreviate(names, 5))
    digits = len(str(n))
    # The faction's code before a numbered row costs its name as many characters.
    room = NAME_MAX - (max(map(len, cast.codes)) + 1 if cast.codes else 0)
    cut = abbreviate(names, room)
    numbered = tuple(f"{k:>{digits}} {label}" for k, label in enumerate(cut, start=1))
    numbers = tuple(str(k) for k in range(1, n + 1))
    options = [
        Layout("values", rows, full, tuple(max(5, len(h)) for h in full)),
        Layout("values", rows, short, (5,) * n),
        Layout("glyphs", numbered, numbers, (digits + 1,) * n),
        Layout("glyphs", numbered, numbers, (digits,) * n),
    ]
    if digits == 2:
        stacked = tuple(f"{k // 10 or ' '}\n{k % 10}" for k in range(1, n + 1))
        options.append(Layout("glyphs", numbered, stacked, (1,) * n, header_lines=2))
    return _grouped(options, cast)


def choose_layout(names: Sequence[str] | Cast, width: int) -> Layout:
    """The first layout that fits ``width``; if none does, glyphs under numbers on one
    header line, scrolled sideways."""
    options = layouts(names)
    return next((o for o in options if o.width <= width), options[3])


def ego_layout(agent: str, cast: Cast) -> Layout:
    """One agent's row and column: the others down the side (in faction order, with their
    codes), two value columns: ``agent``'s regard for each (``Agnes→``) and each one's
    for ``agent`` (``→Agnes``)."""
    rows = tuple(abbreviate(cast.names, NAME_MAX))
    if cast.codes:
        width = max(len(c) for c in cast.codes)
        rows = tuple(f"{c:<{width}} {r}" for c, r in zip(cast.codes, rows, strict=True))
    short = abbreviate([agent], HEADER_MAX - 1)[0]
    cols = (f"{short}→", f"→{short}")
    return Layout("values", rows, cols, tuple(max(5, len(c)) for c in cols))


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec)


def sticky_example(state: StateLike) -> str | None:
    """A cell whose status its fav alone would not give (``+.38~ is still rival``), if any."""
    for agent in state.agents.values():
        for rel in agent.relations.values():
            if threshold_status(rel.fav, Status.NEUTRAL) is not rel.status:
                glyph = STATUS_GLYPH[rel.status]
                return f"{short_fav(rel.fav)}{glyph} is still {rel.status.value}"
    return None


class LazyRows(Sequence[Sequence[Segment]]):
    """The grid's rows, each built when first drawn: a new state costs the rows in view."""

    def __init__(self, names: Sequence[str], build: Callable[[str], Sequence[Segment]]) -> None:
        self._names = names
        self._build = build
        self._rows: dict[int, Sequence[Segment]] = {}

    def __len__(self) -> int:
        return len(self._names)

    @overload
    def __getitem__(self, index: int) -> Sequence[Segment]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Sequence[Segment]]: ...

    def __getitem__(self, index: int | slice) -> Sequence[Segment] | Sequence[Sequence[Segment]]:
        if isinstance(index, slice):
            return [self[k] for k in range(len(self))[index]]
        row = self._rows.get(index)
        if row is None:
            row = self._rows[index] = self._build(self._names[index])
        return row


def span(first: int, stop: int, total: int, what: str) -> str:
    """``rows 3-9 of 30``."""
    if stop <= first:
        return f"{what} 0 of {total}"
    return f"{what} {first + 1}-{stop} of {total}"


class FavMatrix(Vertical):
    """Colour = fav, glyph = status; cells changed in the last round are reversed. With the
    prior overlay on, each cell shows instead the sign the run's relational prior states for
    the pair (the same both ways, the same every round)."""

    DEFAULT_CSS = """
    FavMatrix { width: 1fr; height: 1fr; }
    FavMatrix > #matrix-cell { height: 1; dock: top; }
    FavMatrix > #matrix-notes { height: auto; dock: bottom; color: $text-muted; }
    """

    class Resized(Message):
        """The matrix has a new size: the panel around it may fit itself anew."""

    def __init__(
        self,
        state: StateLike,
        prior: Prior | None = None,
        factions: dict[str, list[str]] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.changed: Container[tuple[str, str]] = frozenset()
        self.prior = prior
        self._signs = sign_index(prior)
        self.factions = factions or {}
        self.selection = Selection()
        self.overlay = False
        self.layout_: Layout | None = None
        self._rows: tuple[str, ...] = ()  # the agents down the side, as drawn
        self._cols: tuple[str, ...] = ()  # across (an agent's row and column: it, twice)
        self._sticky: tuple[StateLike | None, str | None] = (None, None)
        self.compact = False

    def compose(self) -> ComposeResult:
        yield Static(id="matrix-cell")
        yield Grid(id="matrix-grid")
        yield Static(id="matrix-notes")

    def on_mount(self) -> None:
        grid = self.grid
        grid.cursor = (0, 1)  # the first row's first value, not its diagonal
        self.watch(grid, "scroll_x", self._note, init=False)
        self.watch(grid, "scroll_y", self._note, init=False)
        self._draw()

    @property
    def grid(self) -> Grid:
        """The scrolling grid of cells."""
        return self.query_one(Grid)

    @property
    def names(self) -> tuple[str, ...]:
        """The agents down the side, in faction order (filtered: those selected)."""
        return tuple(selected_names(self.selection, list(self.state.agents), self.factions))

    def _cast(self) -> Cast:
        return cast_of(self.names, self.factions)

    def _layout(self, width: int) -> Layout:
        cast = self._cast()
        if self.selection.agent is not None:
            return ego_layout(self.selection.agent, cast)
        return choose_layout(cast, width)

    # -- what the run view calls --------------------------------------------------------------

    def show(
        self,
        state: StateLike,
        changed: Container[tuple[str, str]],
        prior: Prior | None = None,
        factions: dict[str, list[str]] | None = None,
    ) -> None:
        """Draw a new state (and the run's prior and factions), highlighting the edges in
        ``changed``."""
        if factions is not None and factions != self.factions:
            self.factions, self.selection = factions, Selection()
        if self.selection.agent is not None and self.selection.agent not in state.agents:
            self.selection = Selection()
        self.state = state
        self.changed = changed
        if prior is not self.prior:
            self.prior, self._signs = prior, sign_index(prior)
        if self.is_mounted:
            self._draw()

    def select(self, selection: Selection) -> None:
        """Show every agent, one agent's row and column, or one faction."""
        self.selection = selection
        if self.is_mounted:
            self.grid.cursor = (0, 0 if selection.agent is not None else 1)
            self.grid.scroll_to(0, 0, animate=False, force=True)
            self._draw()
            self.post_message(self.Resized())

    def toggle_overlay(self) -> bool:
        """Switch between favorability and the prior overlay; True when the overlay is on."""
        self.overlay = not self.overlay
        if self.is_mounted:
            self._draw()
        return self.overlay

    def natural_width(self) -> int:
        """Columns the matrix would like: every cell's value under full column names."""
        legend = len(scale_legend(False)) + 2
        if self.selection.agent is not None:
            return max(self._layout(0).width, legend)
        return max(layouts(self._cast())[0].width, legend)

    def narrowest_width(self) -> int:
        """Columns the narrowest layout needs: every cell in view, one glyph each."""
        if self.selection.agent is not None:
            return self.natural_width()
        return min(o.width for o in layouts(self._cast()))

    def on_resize(self) -> None:
        self._draw()
        self.post_message(self.Resized())

    def set_compact(self, compact: bool) -> None:
        """Compact: no sticky note (for a short panel)."""
        if compact != self.compact:
            self.compact = compact
            if self.is_mounted:
                self._note()

    def full_chrome(self) -> int:
        """Lines the matrix takes besides its grid rows when not compact: the cursor's
        line(s), the column header, the selection, range and legend lines and the sticky
        note."""
        width = self.size.width
        lines = self._cell_lines() + self._layout(width).header_lines + 3
        lines += self.selection != Selection()
        extra = [self._codes_line()] if self.factions and not self.overlay else []
        example = None if self.overlay else self._sticky_example()
        if example is not None:
            extra.append(Text(STICKY.format(example=example)))
        if width:
            lines += sum(len(t.wrap(self.app.console, width)) for t in extra)
        return lines

    def _codes_line(self) -> Text:
        """``VF valley farmers · TF traders and families · ...``."""
        codes = faction_codes(list(self.factions))
        return Text(" · ".join(f"{c} {f}" for f, c in codes.items()), style="dim")

    # -- the cursor ---------------------------------------------------------------------------

    def cursor_pair(self) -> tuple[str, str]:
        """(row agent, column agent) under the cursor: the edge its cell shows."""
        return self._pair(*self.grid.cursor)

    def _pair(self, row: int, column: int) -> tuple[str, str]:
        ego = self.selection.agent
        if ego is not None:
            other = self._rows[row]
            return (ego, other) if column == 0 else (other, ego)
        return self._rows[row], self._cols[column]

    def move_to(self, source: str, target: str) -> None:
        """Put the cursor on the cell ``source`` → ``target`` (scrolling it into view)."""
        ego = self.selection.agent
        if ego is not None and ego in (source, target) and source != target:
            other = target if source == ego else source
            self.grid.move_cursor(self._rows.index(other), 0 if source == ego else 1)
            return
        if ego is not None or source not in self._rows or target not in self._cols:
            self.select(Selection())
        self.grid.move_cursor(self._rows.index(source), self._cols.index(target))

    def on_grid_moved(self, event: Grid.Moved) -> None:
        event.stop()
        self._describe_cursor()
        self._note()

    def _describe_cursor(self) -> None:
        if not self._rows:
            return
        i, j = self.cursor_pair()
        text = Text.assemble((i, "bold"))
        if i == j:
            text.append(" (itself)", style="dim")
        else:
            text.append(" → ")
            text.append(j, style="bold")
            text.append("\n" if self._cell_lines() == 2 else "  ")
            if self.overlay:
                text.append("prior " + self._prior_cell(i, j)[3])
            else:
                rel = self.state.agents[i].relations[j]
                text.append(signed(rel.fav, 4), style=fav_style(rel.fav))
                text.append(f" {rel.status.value}")
        show_content(self.query_one("#matrix-cell", Static), text)

    def _cell_lines(self) -> int:
        """Lines the cursor's description takes: one when the two longest names and the
        longest value (of the view shown) fit the width, else two (fixed, so moving the
        cursor never shifts the grid)."""
        longest = sorted((len(n) for n in self.state.agents), reverse=True)[:2]
        words = PRIOR_WORDS if self.overlay else FAV_WORDS
        return 1 if sum(longest) + len(" → ") + words <= self.size.width else 2

    # -- drawing ------------------------------------------------------------------------------

    def _draw(self) -> None:
        names = self.names
        if not self.size.width or not names:
            return
        layout = self._layout(self.size.width)
        ego = self.selection.agent
        self.layout_, self._rows = layout, names
        self._cols = (ego, ego) if ego is not None else names
        bold = _style("bold")
        head = [
            [
                Segment(label.split("\n")[line].rjust(w + 1), bold)
                for label, w in zip(layout.col_labels, layout.col_widths, strict=True)
            ]
            for line in range(layout.header_lines)
        ]
        closing = _style("bold underline")
        labels = [
            Segment(label.ljust(layout.label_width), closing if k in layout.ends else bold)
            for k, label in enumerate(layout.row_labels)
        ]
        cells = LazyRows(names, self._cells)
        self.query_one("#matrix-cell").styles.height = self._cell_lines()
        self.grid.set_content(head, labels, cells, [w + 1 for w in layout.col_widths])
        self.call_after_refresh(self._note)  # the range once the grid has its new size

    def _prior_cell(self, i: str, j: str) -> tuple[str, str, str, str]:
        """(glyph, full text, style, words) of the sign stated for the pair i-j."""
        sign = self._signs.get(i, {}).get(j)
        return UNSTATED if sign is None else SIGN_CELL[sign]

    def _cells(self, row: str) -> LazyCells:
        """Row ``row`` of the current layout, each cell (made when drawn) right-aligned
        after a space (a ``│`` where a faction's columns open)."""
        layout = self.layout_
        assert layout is not None
        values = layout.density == "values"
        bands = not values and self.app.no_color  # no colour: the glyph carries the value
        r = self._rows.index(row)
        rule = " underline" if r in layout.ends else ""  # the last row of a faction
        relations = self.state.agents[row].relations if not self.overlay else None

        def cell(k: int) -> Segment:
            w = layout.col_widths[k]
            i, j = self._pair(r, k)
            lead = "│" if k in layout.starts else " "
            if i == j:
                return Segment(lead + ("—" if values else "\\").rjust(w), _style("dim" + rule))
            if relations is None:
                glyph, full, style, _ = self._prior_cell(i, j)
                return Segment(lead + (full if values else glyph).rjust(w), _style(style + rule))
            rel = self.state.agents[i].relations[j] if i != row else relations[j]
            style = fav_style(rel.fav) + (" reverse" if (i, j) in self.changed else "") + rule
            if values:
                body = short_fav(rel.fav) + STATUS_GLYPH[rel.status]
            else:
                body = BAND_GLYPH[fav_band(rel.fav)] if bands else STATUS_GLYPH[rel.status]
            return Segment(lead + body.rjust(w), _style(style))

        return LazyCells(len(layout.col_widths), cell)

    def _sticky_example(self) -> str | None:
        """A cell whose status its fav alone would not give (``+.38~ is rival``), if any
        (looked for once per state, not at every scroll)."""
        state = self.state
        if self._sticky[0] is not state:
            self._sticky = (state, sticky_example(state))
        return self._sticky[1]

    def in_view(self) -> tuple[range, range]:
        """The rows and columns (grid indices) wholly in view."""
        return self.grid.in_view()

    def _note(self) -> None:
        """What is shown (when filtered), the range in view (when not everything is), the
        factions' codes, then the legends."""
        lines: list[Text] = []
        n, m = len(self._rows), len(self._cols)
        if self.selection != Selection():
            lines.append(Text(f"{self.selection.describe()} (F: all)", style="bold"))
        rows, cols = self.in_view()
        if n and (len(rows) < n or len(cols) < m):
            arrows = ("↕" if len(rows) < n else "") + ("↔" if len(cols) < m else "")
            lines.append(
                Text(
                    f"{span(rows.start, rows.stop, n, 'rows')} · "
                    f"{span(cols.start, cols.stop, m, 'cols')} {arrows}",
                    style="bold",
                )
            )
        if self.overlay:
            lines.append(Text(PRIOR_LEGEND))
            show_content(self.query_one("#matrix-notes", Static), Text("\n").join(lines))
            return
        lines.append(scale_legend(self.app.no_color))
        glyphs = self.layout_ is not None and self.layout_.density == "glyphs"
        lines.append(Text(BAND_LEGEND if glyphs and self.app.no_color else LEGEND))
        if self.factions and not self.compact:
            lines.append(self._codes_line())
        example = None if self.compact else self._sticky_example()
        if example is not None:
            lines.append(Text(STICKY.format(example=example)))
        show_content(self.query_one("#matrix-notes", Static), Text("\n").join(lines))
