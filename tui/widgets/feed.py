"""The round's feed: the event strip grown into a log of the round.

At rest it shows the round just played's events and what is queued, folded to a line or two
(``i``: every line, up to half the screen, scrolled with the mouse wheel, following the
round while at its end); the log of that round stays below them. While a round is played
every decision and utterance is added the moment its reply arrives (an utterance streamed as
its tokens come), and the folded strip shows the latest lines: whoever speaks, whatever
agent panes fit. A private turn is marked ✉ and magenta, as in the transcripts.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized

from rich.console import Console
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from engine import Action, Decision, Mode
from engine.core.textsafe import strip_controls

#: The folded strip's lines while a round is played, by terminal height (up to the first
#: height, the lines after it): the latest decisions and words.
LIVE_LINES = ((30, 4), (44, 6), (10_000, 9))


def _add_who(line: Text, agent: str, mode: Mode, target: str | None, verb: str = "") -> Text:
    """``line`` with ``Ann ▶ →all`` or ``Ann ✉ →Bob`` (private) added, bold (``verb``: said
    after the name, plain). Each line is made by appending: a round of hundreds of agents
    makes hundreds of them."""
    line.append(agent, style="bold")
    if verb:
        line.append(verb)
    if mode is Mode.PRIVATE:
        line.append(f" ✉ →{target}", style="bold magenta")
    else:
        line.append(f" ▶ →{'all' if target in (None, 'all') else target}", style="bold cyan")
    return line


def decision_line(round_no: int, agent: str, decision: Decision, forced: bool) -> Text:
    """``R3 Ann decides ▶ →all, hostile, urgency 7: to rally the others``."""
    line = Text(f"R{round_no} ", style="dim")
    if decision.mode is Mode.SILENT:
        line.append(agent, style="bold")
        line.append(" stays silent", style="dim italic")
    else:
        _add_who(line, agent, decision.mode, decision.target, " decides")
        line.append(f", {decision.stance}, urgency {decision.urgency:.3g}", style="dim")
    if decision.intent and not forced:
        line.append(f": {strip_controls(decision.intent)}", style="dim italic")
    if forced:
        line.append(" (forced)", style="bold yellow")
    return line


def spoken_line(round_no: int, action: Action) -> Text:
    """``R3 Ann ▶ →all "We sell."`` (private in magenta)."""
    said = strip_controls(action.utterance)
    style = "magenta" if action.mode is Mode.PRIVATE else ""
    line = _add_who(Text(f"R{round_no} ", style="dim"), action.speaker, action.mode, action.target)
    line.append(f" “{said}”", style=style)
    if action.forced:
        line.append(" (forced)", style="bold yellow")
    elif action.actor == "human":
        line.append(f" (human: {action.player})", style="bold green")
    return line


def unsaid_line(round_no: int, action: Action) -> Text:
    """``R3 Ann said nothing usable: silent``: a turn whose words were empty or not speech."""
    line = Text(f"R{round_no} ", style="dim")
    line.append(action.speaker, style="bold")
    line.append(" said nothing usable: silent", style="dim")
    return line


def streaming_line(round_no: int, agent: str, decision: Decision | None, text: str) -> Text:
    """An utterance still arriving: ``R3 Ann ▶ →all “We s…``."""
    line = Text(f"R{round_no} ", style="dim")
    if decision is not None and decision.mode is not Mode.SILENT:
        _add_who(line, agent, decision.mode, decision.target)
    else:
        line.append(agent, style="bold")
    line.append(f" “{strip_controls(text)}…", style="italic")
    return line


class FeedScroll(VerticalScroll, can_focus=False):
    """The feed's frame: as tall as the feed, up to half the screen, scrolled beyond."""

    DEFAULT_CSS = """
    FeedScroll { height: auto; max-height: 50vh; scrollbar-size-vertical: 1; }
    """


class RoundFeed(Widget):
    """The strip under the header: the round's events, queued items and its log (in a
    :class:`FeedScroll`)."""

    DEFAULT_CSS = "RoundFeed { height: auto; padding: 0 1; }"
    expanded: reactive[bool] = reactive(False, layout=True)
    live: reactive[bool] = reactive(False, layout=True)
    """A round is being played: the folded strip shows its latest lines."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.items: list[Text] = []  # events and queued items
        self.round_log: list[Text] = []  # the round's decisions and words
        self._round = 0
        self._decisions: dict[str, Decision] = {}
        self._streams: dict[str, str] = {}  # utterances arriving, by speaker

    # -- what it holds ---------------------------------------------------------------------

    def show(self, items: list[Text]) -> None:
        """Show ``items`` (events, queued), one or more lines each, above the log."""
        self.items = items
        self._changed()

    def start(self, round_no: int, items: list[Text]) -> None:
        """A round began: its lines, and a new log."""
        self._round, self.items, self.round_log = round_no, items, []
        self._decisions, self._streams = {}, {}
        self._changed()

    def decided(self, agent: str, decision: Decision, line: Text) -> None:
        """``agent``'s decision arrived (``line``: as :func:`decision_line` tells it)."""
        self._decisions[agent] = decision
        self.round_log.append(line)
        self._changed(self._may_resize())

    def stream(self, agent: str, text: str) -> None:
        """More of ``agent``'s utterance arrived."""
        self._streams[agent] = self._streams.get(agent, "") + text
        self._changed(self._may_resize())

    def spoke(self, action: Action) -> None:
        """``action``'s turn is over: its utterance whole, or no utterance (the words that
        streamed were not speech: they go)."""
        self._streams.pop(action.speaker, None)
        line = spoken_line if action.order is not None else unsaid_line
        self.round_log.append(line(self._round, action))
        self._changed(self._may_resize())

    def note(self, line: Text) -> None:
        """Add a line of the round (its judgements applied)."""
        self.round_log.append(line)
        self._changed(self._may_resize())

    def _may_resize(self) -> bool:
        """Whether a line just added to the round's log (or a stream) may change the strip's
        height. Folded, it cannot once the live strip holds more entries than its lines (it
        shows its latest, as many as fit), nor at rest once the log has a line (the strip
        shows the first events and a hint of the log): only its text changes, and a new
        layout would repaint the screen (hundreds of times a round at hundreds of agents)."""
        if self.expanded:
            return True
        if self.live:
            held = len(self.items) + len(self.round_log) + len(self._streams)
            return held <= self.folded_lines() + 1
        return len(self.round_log) <= 1

    def _changed(self, layout: bool = True) -> None:
        frame = self.parent
        self.refresh(layout=layout)
        if self.expanded and isinstance(frame, FeedScroll) and frame.scroll_y >= frame.max_scroll_y:
            frame.call_after_refresh(frame.scroll_end, animate=False)  # following the round

    # -- drawing ---------------------------------------------------------------------------

    def _entries(self) -> list[Text]:
        arriving = [
            streaming_line(self._round, agent, self._decisions.get(agent), text)
            for agent, text in self._streams.items()
        ]
        return self.items + self.round_log + arriving

    def folded_lines(self) -> int:
        """Lines shown while folded: at rest one on a short terminal, else two; during a
        round more (:data:`LIVE_LINES`)."""
        height = self.app.size.height
        if self.live:
            return next(n for up_to, n in LIVE_LINES if height < up_to)
        return 1 if height < 30 else 2

    def watch_expanded(self, expanded: bool) -> None:
        frame = self.parent
        if isinstance(frame, FeedScroll):  # the latest lines during a round, else the first
            end = frame.scroll_end if expanded and self.live else frame.scroll_home
            frame.call_after_refresh(end, animate=False)

    def on_click(self, event: events.Click) -> None:
        self.expanded = not self.expanded

    def lines(self, width: int) -> list[Text]:
        """The lines drawn at ``width``: expanded, all (the widget scrolls); folded, those
        that fit, the first (at rest) or the latest (during a round), with a line saying what
        is hidden. Folded, only the entries shown are wrapped (a round of hundreds of agents
        logs hundreds of lines)."""
        if width <= 0:
            return []
        console: Console = self.app.console
        entries = self._entries()
        if self.expanded:
            return [line for item in entries for line in item.wrap(console, width)]
        cap = self.folded_lines()
        if self.live:
            return self._latest(entries, cap, width)
        each = [item.wrap(console, width) for item in self.items]
        wrapped = [line for lines in each for line in lines]
        if len(wrapped) <= cap and not self.round_log:
            return wrapped
        shown = wrapped[:cap]
        hint = f" … {hidden_text(each, cap, len(self.round_log))} (i: all)"
        last = shown[-1] if shown else Text()
        last.truncate(max(0, width - len(hint)))
        last.append(hint, style="bold dim")
        return [*shown[:-1], last]

    def _latest(self, entries: list[Text], cap: int, width: int) -> list[Text]:
        """The latest entries that fit ``cap`` lines, under a line saying how many came
        before: each entry whole, but the newest (its latest words, when it is longer than
        the strip) and the oldest shown (its first lines, cut with …)."""
        console: Console = self.app.console
        wrapped = [entry.wrap(console, width) for entry in entries[-cap:]]
        if sum(len(w) for w in wrapped) <= cap and len(entries) <= cap:
            return [line for w in wrapped for line in w]
        shown: list[Text] = []
        room, k = cap - 1, len(wrapped)
        while k and room:
            k -= 1
            lines = list(wrapped[k])
            if len(lines) > room:
                if k == len(wrapped) - 1:  # the newest: its latest words
                    lines = lines[-room:]
                    lines[0] = Text("…", style="dim") + lines[0]
                else:  # an older one: who said it and how it began
                    lines = lines[:room]
                    lines[-1].truncate(max(0, width - 1))
                    lines[-1].append("…", style="dim")
            shown[:0] = lines
            room -= len(lines)
        before = len(entries) - (len(wrapped) - k)
        more = Text(f"… {before} more above (i: all)" if before else "", style="bold dim")
        return [more, *shown]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.content_region.width or self.size.width))
        text.no_wrap = True
        return text


def judged_line(round_no: int, emotions: int, relations: int) -> Text:
    """``R3 judged: 4 moods, 9 ties changed``."""
    return Text.assemble(
        (f"R{round_no} ", "dim"),
        ("judged", "bold"),
        f": {emotions} moods, {relations} ties changed (matrix and needs updated)",
    )


def hidden_text(each: Sequence[Sized], cap: int, logged: int) -> str:
    """What a folded strip of ``cap`` lines leaves out, counted as a reader counts: the
    events (each wrapped to ``each`` lines) not shown whole, and the round's logged entries
    (its decisions, words and judgements)."""
    whole = used = 0
    for lines in each:
        if used + len(lines) > cap:
            break
        whole, used = whole + 1, used + len(lines)
    events = len(each) - whole
    parts = [f"+{events} event{'s' * (events != 1)}"] if events else []
    if logged:
        parts.append(f"{logged} from the round")
    return ", ".join(parts)
