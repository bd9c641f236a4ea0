"""A grid of one-line cells that scrolls both ways under sticky headers: the header lines
stay on top and the row labels on the left. A cell cursor moves with the arrow keys, Home,
End, Page Up/Down or a click, and the grid scrolls to keep it in view.

It draws only the lines in view from segments it is given (the Line API), so a new state of
a 100 × 100 grid costs building its segments, not laying out 10,000 widgets or renderables.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import overload

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

NOT_REVERSED = Style(reverse=False)


class LazyCells(Sequence[Segment]):
    """A row's cells, each made when first drawn (``make(k)``: cell ``k``)."""

    def __init__(self, count: int, make: Callable[[int], Segment]) -> None:
        self._count, self._make = count, make
        self._made: dict[int, Segment] = {}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Segment: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Segment]: ...

    def __getitem__(self, index: int | slice) -> Segment | Sequence[Segment]:
        if isinstance(index, slice):
            return [self[k] for k in range(self._count)[index]]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        index %= self._count
        cell = self._made.get(index)
        if cell is None:
            cell = self._made[index] = self._make(index)
        return cell


class Grid(ScrollView, can_focus=True):
    """Cells of fixed widths; every header line, label and cell is one :class:`Segment`."""

    COMPONENT_CLASSES = {"grid--cursor", "grid--cursor-head"}
    DEFAULT_CSS = """
    Grid { height: auto; max-height: 100%; scrollbar-size: 0 0; background: $surface; }
    Grid > .grid--cursor {
        background: $block-cursor-blurred-background; text-style: bold underline;
    }
    Grid:focus > .grid--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
    }
    Grid > .grid--cursor-head { text-style: bold underline; }
    """
    BINDINGS = [
        Binding("up", "move(-1, 0)", "Up", show=False),
        Binding("down", "move(1, 0)", "Down", show=False),
        Binding("left", "move(0, -1)", "Left", show=False),
        Binding("right", "move(0, 1)", "Right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First column", show=False),
        Binding("end", "edge(1)", "Last column", show=False),
    ]

    class Moved(Message):
        """The cursor moved (or the grid got new content, or a new size)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.head: list[list[Segment]] = []
        self.labels: list[Segment] = []
        self.cells: Sequence[Sequence[Segment]] = []
        self.widths: list[int] = []
        self.label_width = 0
        self.cursor = (0, 0)
        self._starts: list[int] = [0]

    def set_content(
        self,
        head: list[list[Segment]],
        labels: list[Segment],
        cells: Sequence[Sequence[Segment]],
        widths: list[int],
    ) -> None:
        """New header lines (one segment per column), row labels and cells (``cells[r][c]``
        is ``widths[c]`` wide; rows are read only when drawn, so they may be built lazily);
        the cursor stays where it was when it still fits."""
        self.head, self.labels, self.cells, self.widths = head, labels, cells, widths
        self.label_width = max((s.cell_length for s in labels), default=0)
        self._starts = [0, *accumulate(widths)]
        self.virtual_size = Size(self.label_width + self._starts[-1], len(head) + len(cells))
        row, col = self.cursor
        self.cursor = (min(row, max(0, len(cells) - 1)), min(col, max(0, len(widths) - 1)))
        self.refresh()
        self.post_message(self.Moved())

    # -- geometry ----------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.post_message(self.Moved())  # what is in view changed with the size

    @property
    def view_width(self) -> int:
        """Columns of cells in view (right of the labels)."""
        return max(0, self.scrollable_content_region.width - self.label_width)

    @property
    def view_height(self) -> int:
        """Rows of cells in view (under the header)."""
        return max(0, self.scrollable_content_region.height - len(self.head))

    def in_view(self) -> tuple[range, range]:
        """The rows and the columns wholly in view (a column's leading space aside)."""
        top = round(self.scroll_y)
        rows = range(top, min(len(self.cells), top + self.view_height))
        left = round(self.scroll_x)
        right = left + self.view_width
        shown = [
            k
            for k, (x, w) in enumerate(zip(self._starts, self.widths, strict=False))
            if x + 1 >= left and x + w <= right
        ]
        return rows, range(shown[0], shown[-1] + 1) if shown else range(0)

    # -- the cursor --------------------------------------------------------------------------

    def move_cursor(self, row: int, col: int) -> None:
        """Put the cursor on a cell (clamped to the grid) and scroll it into view."""
        row = min(max(0, row), len(self.cells) - 1)
        col = min(max(0, col), len(self.widths) - 1)
        self.cursor = (row, col)
        x0, x1 = self._starts[col], self._starts[col + 1]
        left, top = round(self.scroll_x), round(self.scroll_y)
        if x0 < left:
            left = x0
        elif x1 > left + self.view_width:
            left = x1 - self.view_width
        if row < top:
            top = row
        elif row >= top + self.view_height:
            top = row - self.view_height + 1
        self.scroll_to(left, top, animate=False, force=True)
        self.refresh()
        self.post_message(self.Moved())

    def action_move(self, rows: int, cols: int) -> None:
        self.move_cursor(self.cursor[0] + rows, self.cursor[1] + cols)

    def action_page(self, pages: int) -> None:
        self.move_cursor(self.cursor[0] + pages * max(1, self.view_height), self.cursor[1])

    def action_edge(self, last: int) -> None:
        self.move_cursor(self.cursor[0], (len(self.widths) - 1) * last)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < len(self.head):
            return
        row = round(self.scroll_y) + offset.y - len(self.head)
        x = round(self.scroll_x) + offset.x - self.label_width
        col = next((k for k in range(len(self.widths)) if x < self._starts[k + 1]), -1)
        if row < len(self.cells) and offset.x >= self.label_width and col >= 0:
            self.move_cursor(row, col)

    # -- drawing -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        row, col = self.cursor
        lead = self.get_component_rich_style("grid--cursor-head")
        mark: Style | None = lead
        line: Sequence[Segment]
        if y < len(self.head):
            label = Segment(" " * self.label_width)
            line = self.head[y]
        else:
            r = round(self.scroll_y) + y - len(self.head)
            if r >= len(self.cells):
                return Strip.blank(width, base)
            label = self.labels[r]
            if r == row:
                label = Segment(label.text, (label.style or Style()) + lead)
            line = self.cells[r]
            mark = self.get_component_rich_style("grid--cursor") if r == row else None
        # Only the cells in view are made and become a strip (a large cast's row holds
        # hundreds).
        left = round(self.scroll_x)
        first = max(0, bisect_right(self._starts, left) - 1)
        last = bisect_left(self._starts, left + self.view_width)
        shown = list(line[first:last])
        if mark is not None and first <= col < last:  # the cursor: on its colour, not reversed
            cell = shown[col - first]
            shown[col - first] = Segment(cell.text, (cell.style or Style()) + NOT_REVERSED + mark)
        x = left - self._starts[first]
        cells = Strip(shown).crop(x, x + self.view_width)
        return (
            Strip.join([Strip([label]), cells])
            .apply_style(base)
            .extend_cell_length(width, base)
            .crop(0, width)
        )
