"""A round's utterances as ``socialsim run`` prints them: the turn, who spoke to whom, and
what was said wrapped beside it, drawn line by line.

It prints what a rich :class:`~rich.table.Table` (no box, no header, no edge padding) of the
three columns printed, cell for cell, without measuring and laying out every cell as a
table does: at 100 agents that table cost twice the round it showed. Words of printable
ASCII (one cell a character) are wrapped here as rich wraps them, with one segment a line;
others by rich. A console too narrow for the utterance column to keep :data:`NARROWEST`
cells gets that table itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

#: The narrowest utterance column (cells) drawn line by line; narrower, a table lays it out.
NARROWEST = 12
#: The cells of padding either side of a column, but at the edges (as a table pads them).
_PAD = 1
#: A word as rich's wrap sees one: leading space, the word (group 1), the space after it.
_WORD = re.compile(r"\s*(\S+)\s*")


@dataclass(frozen=True)
class Turn:
    """One turn of the transcript: its number, the speaker's label in its style, the words."""

    order: str
    who: str
    style: str
    said: str


class Transcript:
    """The turns, in three columns: the number right-aligned and dim, the label unwrapped,
    the words wrapped in what is left of the width."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = turns

    def table(self) -> Table:
        """The same turns as a rich table (what a narrow console gets)."""
        table = Table(box=None, show_header=False, pad_edge=False, expand=False)
        table.add_column(justify="right", style="dim")
        table.add_column(no_wrap=True)
        table.add_column(ratio=1)
        for turn in self.turns:
            table.add_row(turn.order, Text(turn.who, turn.style), Text(turn.said))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        turns = self.turns
        if not turns:
            return
        first = max(_cells(t.order) for t in turns)
        second = max(_cells(t.who) for t in turns)
        longest = max(_widest_line(t.said) for t in turns)
        room = options.max_width - first - second - 4 * _PAD
        if room < NARROWEST:
            yield self.table()
            return
        yield from self._lines(console, first, second, min(room, longest))

    def _lines(self, console: Console, first: int, second: int, width: int) -> Iterator[Segment]:
        """Each turn's lines: its number and label beside the first line of its words."""
        style = console.get_style
        dim = style("dim")
        pad, new_line = Segment(" " * _PAD), Segment.line()
        under = (Segment(" " * (first + _PAD), dim), Segment(" " * (_PAD + second + _PAD)))
        for turn in self.turns:
            label = turn.who + " " * (second - _cells(turn.who))
            number = Segment(turn.order.rjust(first) + " " * _PAD, dim)
            head = (number, pad, Segment(label, style(turn.style)), pad)
            if width and turn.said.isascii() and turn.said.isprintable():
                for k, line in enumerate(plain_lines(turn.said, width)):
                    yield from head if k == 0 else under
                    yield Segment(" " * _PAD + line + "\n")
                continue
            said: Iterable[Text] = [Text()]  # no words to show: the label's line alone
            if width:
                said = Text(turn.said).wrap(console, width, justify="left", overflow="ellipsis")
            for k, text in enumerate(said):
                yield from head if k == 0 else under
                yield pad
                yield from text.render(console)
                yield new_line


def plain_lines(text: str, width: int) -> list[str]:
    """One line of printable ASCII wrapped in ``width`` cells as rich's ``Text.wrap``
    wraps it (left-justified, a word too long for a line cut with an ellipsis), each
    line padded to ``width``."""
    lines, begin, used = [], 0, 0
    for word in _WORD.finditer(text):
        start, end = word.span()
        if width - used >= word.end(1) - start:
            used += end - start
            continue
        if start:  # a word that does not fit: it begins the next line
            lines.append(text[begin:start])
            begin = start
        used = end - start
    lines.append(text[begin:])
    return [_fitted(line, width) for line in lines]


def _fitted(line: str, width: int) -> str:
    """``line`` in exactly ``width`` cells: its trailing space dropped as far as it
    overflows, then cut with an ellipsis or padded."""
    if len(line) > width:
        line = line[: max(width, len(line.rstrip()))]
    if len(line) > width:
        return line[: width - 1] + "…"
    return line + " " * (width - len(line))


def _widest_line(text: str) -> int:
    """The cells of ``text``'s widest line."""
    if text.isprintable():  # one line (every line break is unprintable)
        return _cells(text)
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _cells(text: str) -> int:
    """The cells of one line of ``text`` (printable ASCII counted without a lookup)."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)
