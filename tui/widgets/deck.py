"""The agent deck: as many agent panes side by side as fit, paged with [ and ], or one agent
full-size (focus mode); above them a strip naming the agents, which follows the page."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widget import Widget

from .agent_pane import AgentPane
from .style import emotion_style, mood_glyph

PANE_WIDTH = 42


def strip_window(widths: list[int], shown: range, room: int) -> range:
    """The names to draw: every shown one, then neighbours (nearest first, right before
    left) while their ``widths`` fit in ``room`` cells."""
    start, stop = shown.start, shown.stop
    used = sum(widths[start:stop])
    grew = True
    while grew:
        grew = False
        if stop < len(widths) and used + widths[stop] <= room:
            used += widths[stop]
            stop, grew = stop + 1, True
        if start > 0 and used + widths[start - 1] <= room:
            used += widths[start - 1]
            start, grew = start - 1, True
    return range(start, stop)


class AgentStrip(Widget):
    """One line naming the agents around the page on screen (those on it reversed), each in
    its mood's colour (with colour off, NO_COLOR, a glyph after the name says it); a name is
    clicked to show that agent, ``‹n`` and ``n›`` (agents out of sight) turn the page."""

    DEFAULT_CSS = "AgentStrip { height: 1; padding: 0 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._targets: list[tuple[int, int, str | int]] = []  # (from x, to x, name or page step)

    def render(self) -> Text:
        deck = self.parent
        assert isinstance(deck, AgentDeck)
        panes, shown = deck.panes, deck.shown_range()
        self._targets = []
        line = Text()
        if deck.pages > 1:
            line.append(f"{deck.page_number + 1}/{deck.pages} ", style="bold")
        hint = "  [ ] page" if deck.pages > 1 else ""
        moods = self.app.no_color  # the mood as a glyph too: one more cell a name
        widths = [len(p.spec.name) + 3 + moods for p in panes]
        room = self.size.width - len(line) - 8  # 8: the ‹n and n› markers
        window = strip_window(widths, shown, room - len(hint))
        if len(window) == len(shown) < len(panes):  # neighbours matter more than the hint
            hint = ""
            window = strip_window(widths, shown, room)
        if window.start:
            self._mark(line, f"‹{window.start} ", -1, "bold")
        for k in window:
            pane = panes[k]
            style = emotion_style(pane.state.emotion)
            name = pane.spec.name + (mood_glyph(pane.state.emotion) if moods else "")
            if k in shown:
                label, style = f"[{name}]", f"bold reverse {style}"
            else:
                label = name
            if pane.spec.name == deck.current:
                style += " underline"
            self._mark(line, label, pane.spec.name, style)
            line.append(" ")
        if window.stop < len(panes):
            self._mark(line, f"{len(panes) - window.stop}›", 1, "bold")
        line.append(hint, style="dim")
        line.no_wrap = True
        line.overflow = "ellipsis"
        return line

    def _mark(self, line: Text, label: str, target: str | int, style: str) -> None:
        start = len(line)
        line.append(label, style=style)
        self._targets.append((start, len(line), target))

    def on_click(self, event: events.Click) -> None:
        x = event.x - self.styles.padding.left
        deck = self.parent
        assert isinstance(deck, AgentDeck)
        for start, end, target in self._targets:
            if start <= x < end:
                if isinstance(target, str):
                    deck.show_agent(target)
                else:
                    deck.turn(target)
                return


class AgentDeck(Vertical):
    """Pages of agent panes, or one agent at a time in focus mode."""

    DEFAULT_CSS = """
    AgentDeck { width: 1fr; }
    AgentDeck > Horizontal { height: 1fr; }
    AgentDeck AgentPane { width: 1fr; }
    AgentDeck.no-needs NeedBars { display: none; }
    """
    agent_index: reactive[int] = reactive(0)
    """The agent the reader is on: its page is the one shown."""
    focus_mode: reactive[bool] = reactive(False)
    """One agent full-size."""

    def __init__(self, panes: list[AgentPane], **kwargs) -> None:
        super().__init__(**kwargs)
        self.panes = panes
        self._by_name = {p.spec.name: p for p in panes}
        for pane in panes[1:]:  # mounted when its page is first shown, not at the first frame
            pane.display = False
        self.current: str | None = None  # the agent chosen by name (/, a click)
        self._paged_width = 0  # the width the deck had when it last showed pages

    def compose(self) -> ComposeResult:
        yield AgentStrip()
        with Horizontal():
            yield from self.panes[:1]

    def pane(self, name: str) -> AgentPane:
        """The pane of the agent ``name`` (mounted or not yet)."""
        return self._by_name[name]

    @property
    def per_page(self) -> int:
        return 1 if self.focus_mode else max(1, self.width_now // PANE_WIDTH)

    @property
    def width_now(self) -> int:
        """The deck's width, already as the layout will make it: in focus mode the whole
        body (the side panel steps aside), with pages the width pages had. A key that comes
        right after ``z`` must not page by the width before it."""
        if self.focus_mode and isinstance(self.parent, Widget):
            return self.parent.size.width
        return self._paged_width or self.size.width

    @property
    def pages(self) -> int:
        return -(-len(self.panes) // self.per_page)

    @property
    def page_number(self) -> int:
        return self.agent_index // self.per_page

    def shown_range(self) -> range:
        """Indexes of the panes on screen."""
        n = self.per_page
        first = self.page_number * n
        return range(first, min(first + n, len(self.panes)))

    def on_resize(self) -> None:
        if not self.focus_mode:
            self._paged_width = self.size.width
        self._apply()

    def watch_agent_index(self) -> None:
        self._apply()

    def watch_focus_mode(self) -> None:
        self._apply()

    def turn(self, step: int) -> None:
        """Go ``step`` pages forward (wrapping around); in focus mode, ``step`` agents."""
        page = (self.page_number + step) % self.pages
        self.agent_index = page * self.per_page
        self.current = None

    def show_agent(self, name: str) -> None:
        """Turn to the page holding ``name`` (in focus mode: show ``name``) and mark it."""
        names = [p.spec.name for p in self.panes]
        self.current = name
        self.agent_index = names.index(name)
        self._apply()

    def toggle_focus(self) -> bool:
        """Switch focus mode on (the current agent, or the first shown) or off."""
        if not self.focus_mode and self.current not in self.shown_agents():
            self.agent_index = self.shown_range().start
        self.focus_mode = not self.focus_mode
        return self.focus_mode

    def shown_agents(self) -> list[str]:
        """Names of the agents on screen."""
        return [self.panes[k].spec.name for k in self.shown_range()]

    def current_agent(self) -> str | None:
        """The agent chosen by name if it is on screen, else the first one shown."""
        shown = self.shown_agents()
        return self.current if self.current in shown else (shown[0] if shown else None)

    def scroll_transcripts(self, step: int) -> None:
        """Scroll the transcripts on screen ``step`` pages (negative: back)."""
        for k in self.shown_range():
            self.panes[k].transcript.page(step)

    def _apply(self) -> None:
        if not self.is_mounted or not self.panes:
            return
        shown = self.shown_range()
        for k in shown:
            self.panes[k].fit(self.width_now // len(shown))
            if not self.panes[k].display:
                self.panes[k].prepare()
        self._mount(shown)
        for k, pane in enumerate(self.panes):
            pane.display = k in shown
            pane.set_class(pane.spec.name == self.current and len(shown) > 1, "-current")
        self.query_one(AgentStrip).refresh()

    def _mount(self, shown: range) -> None:
        """Mount the panes of ``shown`` not mounted yet, each in its place among the others
        (a deck of hundreds mounts only the pages the reader turns to)."""
        row = self.query_one(Horizontal)
        for k in shown:
            pane = self.panes[k]
            if pane.parent is not None:
                continue
            after = [p for p in self.panes[k + 1 :] if p.parent is not None]
            row.mount(pane, before=after[0] if after else None)

    def refresh_strip(self) -> None:
        """Recolour the strip after emotions changed."""
        self.query_one(AgentStrip).refresh()
