"""A scrollable transcript that keeps what was said, not how it was once wrapped.

Entries are stored as rich ``Text`` and wrapped at the widget's current width; a resize
re-wraps every entry, so no line keeps the wrapping of the width it was first drawn at. It
stays on the newest line while the reader is at the bottom; scrolled back, it stays where
the reader is (on the same entry across a resize). While hidden (an agent on another page)
it only stores what it is given, and wraps it when it is shown.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip


class Transcript(ScrollView, can_focus=True):
    """Turns and events of one agent, newest at the bottom, plus the utterance streaming in."""

    DEFAULT_CSS = """
    Transcript {
        background: $surface; overflow-x: hidden; overflow-y: auto;
        scrollbar-gutter: stable; scrollbar-size-vertical: 1;
    }
    Transcript:focus { background-tint: $foreground 5%; }
    """

    class Moved(Message):
        """What is out of sight changed: lines above (older), lines below (newer)."""

        def __init__(self, older: bool, newer: bool) -> None:
            super().__init__()
            self.older = older
            self.newer = newer

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entries: list[Text] = []
        self.written = 0  # entries written at the bottom, ever (not older history)
        self.live: Text | None = None
        self._strips: list[Strip] = []  # every entry wrapped at _width, in order
        self._starts: list[int] = []  # the first strip of each entry
        self._live: list[Strip] = []
        self._live_stale = False  # the live text changed since it was wrapped
        self._width = 0
        self._shown = False
        self._pinned = True  # the reader is at the bottom: stay there
        self._out_of_sight = (False, False)  # as last reported by Moved
        self._drawn: LRUCache[int, Strip] = LRUCache(1024)  # entry lines as last drawn

    # -- content ------------------------------------------------------------------------------

    def write(self, text: Text) -> None:
        """Add an entry at the bottom."""
        self.entries.append(text)
        self.written += 1
        if self._shown:
            self._catch_up()

    def write_older(self, texts: list[Text]) -> None:
        """Add entries above the others (older history, read after the newer); a reader
        scrolled back stays on the lines they are reading."""
        if not texts:
            return
        self.entries[:0] = texts
        if not self._starts:  # nothing wrapped yet: wrapped with the rest when shown
            return
        strips: list[Strip] = []
        starts = []
        for text in texts:
            starts.append(len(strips))
            strips.extend(self._wrap(text))
        added = len(strips)
        self._starts = starts + [start + added for start in self._starts]
        self._strips[:0] = strips
        self._drawn.clear()
        self.virtual_size = Size(self._width, self.line_count)
        if not self._pinned:
            self.scroll_to(y=self.scroll_y + added, animate=False, immediate=True, force=True)
        self._settle()

    def take_back(self, count: int) -> None:
        """Drop the last ``count`` entries written and the live text (a round that failed
        takes back what it wrote; older history may have arrived above meanwhile)."""
        keep = max(0, len(self.entries) - count)
        self.written -= len(self.entries) - keep
        del self.entries[keep:]
        if len(self._starts) > keep:
            del self._strips[self._starts[keep] :]
            del self._starts[keep:]
        self.live, self._live, self._live_stale = None, [], False
        self._drawn.clear()
        if self._shown and self._width:
            self._settle()

    def set_live(self, text: Text | None) -> None:
        """Show ``text`` under the entries (an utterance still arriving); None clears it."""
        self.live, self._live_stale = text, True
        if self._shown:
            self._catch_up()

    @property
    def line_count(self) -> int:
        """Wrapped lines at the current width."""
        return len(self._strips) + len(self._live)

    def visible_lines(self) -> list[str]:
        """The text of the lines on screen."""
        height = self.scrollable_content_region.height
        return [self.render_line(y).text.rstrip() for y in range(height)]

    def page(self, step: int) -> None:
        """Scroll ``step`` pages (negative: back); a page keeps one line of context."""
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=self.scroll_y + step * height, animate=False, immediate=True, force=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn.clear()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._pinned = new_value >= self.max_scroll_y
        self._report()

    def _report(self) -> None:
        out_of_sight = (self.scroll_y > 0, self.scroll_y < self.max_scroll_y)
        if out_of_sight != self._out_of_sight:
            self._out_of_sight = out_of_sight
            self.post_message(self.Moved(*out_of_sight))

    # -- wrapping -----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Wrap what was written while hidden (at the width last laid out; a new width
        re-wraps on resize), so showing the transcript changes no size."""
        self._catch_up()

    def on_show(self) -> None:
        self._shown = True
        self._catch_up()

    def on_hide(self) -> None:
        self._shown = False

    def on_resize(self, event: events.Resize) -> None:
        width = self.scrollable_content_region.width
        if width == self._width:
            self._settle()  # a new height: the bottom stays in view if the reader was there
            return
        top = bisect_right(self._starts, int(self.scroll_y)) - 1
        self._width = width
        self._strips, self._starts, self._live_stale = [], [], True
        self._drawn.clear()
        self._catch_up(keep=max(0, top))

    def _catch_up(self, keep: int | None = None) -> None:
        """Wrap the entries (and live text) not wrapped at the current width yet."""
        new = self.entries[len(self._starts) :]
        if not self._width or not (new or self._live_stale or keep is not None):
            return
        for text in new:
            self._starts.append(len(self._strips))
            self._strips.extend(self._wrap(text))
        if self._live_stale:
            self._live = self._wrap(self.live) if self.live is not None else []
            self._live_stale = False
        self._settle(keep)

    def _wrap(self, text: Text) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(self._width)
        return [
            Strip(Segment.adjust_line_length(line, self._width), self._width)
            for line in console.render_lines(text, options, pad=False)
        ]

    def _settle(self, keep: int | None = None) -> None:
        """Size the scroll area; stay at the bottom if the reader was there, else on the
        entry ``keep`` (after a re-wrap)."""
        self.virtual_size = Size(self._width, self.line_count)
        if self._pinned:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        elif keep is not None and keep < len(self._starts):
            self.scroll_to(y=self._starts[keep], animate=False, immediate=True, force=True)
        self._report()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_y) + y
        style = self.rich_style
        width = self.scrollable_content_region.width
        if index < len(self._strips):
            drawn = self._drawn.get(index)
            if drawn is None:
                drawn = self._strips[index].crop_extend(0, width, style).apply_style(style)
                self._drawn[index] = drawn
            return drawn
        if index - len(self._strips) < len(self._live):
            strip = self._live[index - len(self._strips)]
            return strip.crop_extend(0, width, style).apply_style(style)
        return Strip.blank(width, style)
