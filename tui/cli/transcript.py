"""A round's utterances as ``socialsim run`` prints them: the turn, who spoke to whom, and
what was said wrapped beside it, drawn line by line.

It prints what a rich :class:`~rich.table.Table` (no box, no header, no edge padding) of the
three columns printed, cell for cell, without measuring and laying out every cell as a
table does: at 100 agents that table cost twice the round it showed. Words of printable
ASCII (one cell a character) are wrapped here as rich wraps them; others by rich. A line is
a few segments (its styles); a console that prints no style (a pipe, a file) gets the whole
transcript as one. A console too narrow for the utterance column to keep
:data:`NARROWEST` cells gets that table itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
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
#: A letter of a word (of printable ASCII, whose only space is " ").
_LETTER = re.compile(r"\S")


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
        labels = [_cells(t.who) for t in turns]
        second = max(labels)
        longest = max(_widest_line(t.said) for t in turns)
        room = options.max_width - first - second - 4 * _PAD
        if room < NARROWEST:
            yield self.table()
            return
        rows = self._rows(console, first, labels, min(room, longest))
        pad = " " * _PAD
        if console.color_system is None:  # no style is printed: the text as one segment
            text = "".join(
                f"{number}{pad}{label}{pad}{pad}{line}\n" for number, label, _, line in rows
            )
            yield Segment(text)
            return
        dim = console.get_style("dim")
        for number, label, style, line in rows:
            yield Segment(number, dim)
            yield Segment(pad)
            yield Segment(label, console.get_style(style) if style else None)
            yield Segment(f"{pad}{pad}{line}\n")

    def _rows(
        self, console: Console, first: int, labels: list[int], width: int
    ) -> Iterator[tuple[str, str, str, str]]:
        """Each printed line's columns: the number (with the padding after it), the label
        (``labels``: each turn's label's cells), the label's style ("" on a turn's later
        lines, whose columns are blank) and the line of words (padded to ``width``)."""
        second = max(labels)
        blank_number, blank_label = " " * (first + _PAD), " " * second
        for turn, cells in zip(self.turns, labels, strict=True):
            number = turn.order.rjust(first) + " " * _PAD
            label = turn.who + " " * (second - cells)
            for k, line in enumerate(_said_lines(console, turn.said, width)):
                if k:
                    yield blank_number, blank_label, "", line
                else:
                    yield number, label, turn.style, line


def _said_lines(console: Console, said: str, width: int) -> list[str]:
    """The words wrapped in ``width`` cells, each line padded (no words to show: one
    empty line, the label's)."""
    if not width:
        return [""]
    if said.isascii() and said.isprintable():
        return plain_lines(said, width)
    lines = Text(said).wrap(console, width, justify="left", overflow="ellipsis")
    return [line.plain for line in lines]


def plain_lines(text: str, width: int) -> list[str]:
    """One line of printable ASCII wrapped in ``width`` cells as rich's ``Text.wrap``
    wraps it (left-justified, a word too long for a line cut with an ellipsis), each
    line padded to ``width``: a line keeps its first word, and the words after it whose
    last letter is within ``width`` of the line's start."""
    lines, begin, end = [], 0, len(text)
    while end - begin > width:
        lead = _LETTER.search(text, begin)
        first_end = text.find(" ", lead.start()) if lead else -1
        if lead is None or first_end < 0:  # one word (or none) to the end
            break
        limit = begin + width  # the first cell past the line
        if text[limit] == " ":  # the next line begins at the next word
            after = _LETTER.search(text, limit)
            start = after.start() if after else end
        else:  # or at the word that crosses the line's end
            start = text.rfind(" ", begin, limit) + 1
        if start <= lead.start():  # that is the line's first word: the next one begins it
            after = _LETTER.search(text, first_end)
            start = after.start() if after else end
        if start >= end:
            break
        lines.append(text[begin:start])
        begin = start
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
