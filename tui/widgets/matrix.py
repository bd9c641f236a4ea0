"""The directed favorability matrix: row = from, column = to; and its relational-prior
overlay, the fixed signs a prior states for each pair (Relational priors Sec. 3).

The grid scrolls both ways under sticky headers (the column header row and the row-label
column). Cells show the value and a status glyph when every column fits the width the
matrix is given, else one coloured glyph per cell under numbered columns. The line above
the grid names the cursor's pair in full with its exact value; the lines under it say
which rows and columns are in view when some are not, and explain the glyphs (compact, for
a short panel, without the sticky note).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from engine import Status, WorldState
from engine.core.priors import Prior, sign_index
from engine.core.rules import ALLY_AT, ENEMY_AT, RIVAL_AT, threshold_status

from .grid import Grid
from .style import STATUS_GLYPH, fav_style

LEGEND = "+ ally · neutral ~ rival x enemy"
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


def short_fav(fav: float) -> str:
    """Four characters: ``+.55``, ``-.05``, ``+1.0``, and `` .00`` for what rounds to 0."""
    if abs(fav) >= 0.995:
        return f"{fav:+.1f}"
    if round(fav, 2) == 0:
        return " .00"
    return f"{fav:+.2f}".replace("0.", ".", 1)


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
    in two header lines, tens over units, to fit more columns)."""

    density: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    col_widths: tuple[int, ...]
    header_lines: int = 1

    @property
    def label_width(self) -> int:
        return max(len(label) for label in self.row_labels)

    @property
    def width(self) -> int:
        """Columns the whole grid needs (each cell has a space before it)."""
        return self.label_width + sum(w + 1 for w in self.col_widths)


def layouts(names: Sequence[str]) -> tuple[Layout, ...]:
    """The layouts to try, widest first: values under full column names, values under five
    characters per name, glyphs under numbers with room between them, glyphs under numbers,
    glyphs under numbers standing tens over units (only when some number has two digits).
    Worked out once per cast (the matrix asks on every round and resize)."""
    return _layouts(tuple(names))


@lru_cache(maxsize=8)
def _layouts(names: tuple[str, ...]) -> tuple[Layout, ...]:
    n = len(names)
    rows = tuple(abbreviate(names, NAME_MAX))
    full = tuple(abbreviate(names, HEADER_MAX))
    short = tuple(abbreviate(names, 5))
    digits = len(str(n))
    numbered = tuple(f"{k:>{digits}} {label}" for k, label in enumerate(rows, start=1))
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
    return tuple(options)


def choose_layout(names: Sequence[str], width: int) -> Layout:
    """The first layout that fits ``width``; if none does, glyphs under numbers on one
    header line, scrolled sideways."""
    options = layouts(names)
    return next((o for o in options if o.width <= width), options[3])


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec)


def sticky_example(state: WorldState) -> str | None:
    """A cell whose status its fav alone would not give (``+.38~ is still rival``), if any."""
    for agent in state.agents.values():
        for rel in agent.relations.values():
            if threshold_status(rel.fav, Status.NEUTRAL) is not rel.status:
                glyph = STATUS_GLYPH[rel.status]
                return f"{short_fav(rel.fav)}{glyph} is still {rel.status.value}"
    return None


class LazyRows(Sequence[list[Segment]]):
    """The grid's rows, each built when first drawn: a new state costs the rows in view."""

    def __init__(self, names: Sequence[str], build: Callable[[str], list[Segment]]) -> None:
        self._names = names
        self._build = build
        self._rows: dict[int, list[Segment]] = {}

    def __len__(self) -> int:
        return len(self._names)

    @overload
    def __getitem__(self, index: int) -> list[Segment]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[list[Segment]]: ...

    def __getitem__(self, index: int | slice) -> list[Segment] | Sequence[list[Segment]]:
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

    def __init__(self, state: WorldState, prior: Prior | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.changed: set[tuple[str, str]] = set()
        self.prior = prior
        self._signs = sign_index(prior)
        self.overlay = False
        self.layout_: Layout | None = None
        self._names: tuple[str, ...] = ()
        self._sticky: tuple[WorldState | None, str | None] = (None, None)
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
        """The agents, in row (and column) order."""
        return tuple(self.state.agents)

    # -- what the run view calls --------------------------------------------------------------

    def show(
        self, state: WorldState, changed: set[tuple[str, str]], prior: Prior | None = None
    ) -> None:
        """Draw a new state (and the run's prior), highlighting the edges in ``changed``."""
        self.state = state
        self.changed = changed
        if prior is not self.prior:
            self.prior, self._signs = prior, sign_index(prior)
        if self.is_mounted:
            self._draw()

    def toggle_overlay(self) -> bool:
        """Switch between favorability and the prior overlay; True when the overlay is on."""
        self.overlay = not self.overlay
        if self.is_mounted:
            self._draw()
        return self.overlay

    def natural_width(self) -> int:
        """Columns the matrix would like: every cell's value under full column names."""
        return max(layouts(self.names)[0].width, len(LEGEND))

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
        line(s), the column header, the range note, the legend and the sticky note."""
        width = self.size.width
        lines = self._cell_lines() + choose_layout(self.names, width).header_lines + 2
        example = None if self.overlay else self._sticky_example()
        if example is not None and width:
            sticky = Text(STICKY.format(example=example))
            lines += len(sticky.wrap(self.app.console, width))
        return lines

    # -- the cursor ---------------------------------------------------------------------------

    def cursor_pair(self) -> tuple[str, str]:
        """(row agent, column agent) under the cursor."""
        row, column = self.grid.cursor
        return self._names[row], self._names[column]

    def move_to(self, source: str, target: str) -> None:
        """Put the cursor on the cell ``source`` → ``target`` (scrolling it into view)."""
        self.grid.move_cursor(self._names.index(source), self._names.index(target))

    def on_grid_moved(self, event: Grid.Moved) -> None:
        event.stop()
        self._describe_cursor()
        self._note()

    def _describe_cursor(self) -> None:
        if not self._names:
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
        self.query_one("#matrix-cell", Static).update(text)

    def _cell_lines(self) -> int:
        """Lines the cursor's description takes: one when the two longest names and the
        longest value (of the view shown) fit the width, else two (fixed, so moving the
        cursor never shifts the grid)."""
        longest = sorted((len(n) for n in self.names), reverse=True)[:2]
        words = PRIOR_WORDS if self.overlay else FAV_WORDS
        return 1 if sum(longest) + len(" → ") + words <= self.size.width else 2

    # -- drawing ------------------------------------------------------------------------------

    def _draw(self) -> None:
        names = self.names
        if not self.size.width:
            return
        layout = choose_layout(names, self.size.width)
        self.layout_, self._names = layout, names
        bold = _style("bold")
        head = [
            [
                Segment(label.split("\n")[line].rjust(w + 1), bold)
                for label, w in zip(layout.col_labels, layout.col_widths, strict=True)
            ]
            for line in range(layout.header_lines)
        ]
        labels = [Segment(label.ljust(layout.label_width), bold) for label in layout.row_labels]
        cells = LazyRows(names, self._cells)
        self.query_one("#matrix-cell").styles.height = self._cell_lines()
        self.grid.set_content(head, labels, cells, [w + 1 for w in layout.col_widths])
        self.call_after_refresh(self._note)  # the range once the grid has its new size

    def _prior_cell(self, i: str, j: str) -> tuple[str, str, str, str]:
        """(glyph, full text, style, words) of the sign stated for the pair i-j."""
        sign = self._signs.get(i, {}).get(j)
        return UNSTATED if sign is None else SIGN_CELL[sign]

    def _cells(self, i: str) -> list[Segment]:
        """Row ``i`` of the current layout, each cell right-aligned after a space."""
        layout = self.layout_
        assert layout is not None
        values = layout.density == "values"
        cells = []
        for j, w in zip(self._names, layout.col_widths, strict=True):
            if i == j:
                cells.append(Segment(("—" if values else "\\").rjust(w + 1), _style("dim")))
            elif self.overlay:
                glyph, full, style, _ = self._prior_cell(i, j)
                cells.append(Segment((full if values else glyph).rjust(w + 1), _style(style)))
            else:
                rel = self.state.agents[i].relations[j]
                style = fav_style(rel.fav) + (" reverse" if (i, j) in self.changed else "")
                glyph = STATUS_GLYPH[rel.status]
                body = short_fav(rel.fav) + glyph if values else glyph
                cells.append(Segment(" " + body.rjust(w), _style(style)))
        return cells

    def _sticky_example(self) -> str | None:
        """A cell whose status its fav alone would not give (``+.38~ is rival``), if any
        (looked for once per state, not at every scroll)."""
        state = self.state
        if self._sticky[0] is not state:
            self._sticky = (state, sticky_example(state))
        return self._sticky[1]

    def in_view(self) -> tuple[range, range]:
        """The rows and columns (agent indices) wholly in view."""
        return self.grid.in_view()

    def _note(self) -> None:
        """The range in view (when not everything is), then the legend."""
        lines: list[Text] = []
        n = len(self._names)
        rows, cols = self.in_view()
        if n and (len(rows) < n or len(cols) < n):
            arrows = ("↕" if len(rows) < n else "") + ("↔" if len(cols) < n else "")
            lines.append(
                Text(
                    f"{span(rows.start, rows.stop, n, 'rows')} · "
                    f"{span(cols.start, cols.stop, n, 'cols')} {arrows}",
                    style="bold",
                )
            )
        if self.overlay:
            lines.append(Text(PRIOR_LEGEND))
        else:
            lines.append(Text(LEGEND))
            example = None if self.compact else self._sticky_example()
            if example is not None:
                lines.append(Text(STICKY.format(example=example)))
        self.query_one("#matrix-notes", Static).update(Text("\n").join(lines))
