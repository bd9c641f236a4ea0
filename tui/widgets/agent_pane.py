"""One agent's pane: identity, emotion gauge, strongest ties both ways, need bars and a
live transcript."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from engine import Action, Mode, ScenarioEvent
from engine.core.scenario import AgentSpec
from engine.core.textsafe import strip_controls
from engine.core.view import AgentLike, StateLike

from ..relations import Tie, short_fav, ties_of
from .needs import HEIGHT, Detail, NeedBars
from .style import bar, emotion_style, fav_style, signed
from .transcript import Transcript

#: Transcript lines a pane keeps before it shows its needs in more detail.
ROOM: dict[Detail, int] = {"full": 20, "compact": 16}
#: A pane with fewer lines inside its border leaves out the role line: the ties take two
#: lines, and the transcript keeps its room (the role stays the pane's tooltip).
SHORT = 20
#: A pane at least this wide (one agent in focus, 100 columns and up) puts its need bars
#: beside the transcript, which then has the pane's full height and the rest of its width.
WIDE = 100


def needs_detail(rows: int, beside: bool = False) -> Detail:
    """The most detailed need bars that leave the transcript its room in ``rows`` lines
    (``beside`` the transcript: that fit in ``rows``)."""
    for detail in ("full", "compact"):
        if rows - HEIGHT[detail] >= (0 if beside else ROOM[detail]):
            return detail
    return "summary"


def emotion_line(state: AgentLike, delta: float | None) -> Text:
    """``S 0.62 ███████▌░░░ +0.05``."""
    value = state.emotion
    line = Text.assemble(("S ", "bold"), (f"{value:.2f} ", emotion_style(value)))
    line.append(bar(value, 14), style=emotion_style(value))
    if delta is not None and round(delta, 2):
        line.append(f" {signed(delta)}", style="green" if delta > 0 else "red")
    if state.theta is not None:  # value-driven agents: social orientation (EduMirror Eq. 2)
        line.append(f"  θ {state.theta:.0f}°", style="magenta")
    return line


def _tie_part(words: str, ties: tuple[Tie, ...]) -> Text:
    part = Text(words, style="dim")
    for tie in ties:
        part.append(f" {tie.other} ")
        part.append(short_fav(tie.fav), style=fav_style(tie.fav))
    return part


def _tie_line(kinds: tuple[tuple[str, tuple[Tie, ...]], ...], empty: str) -> Text:
    parts = [_tie_part(words, ties) for words, ties in kinds if ties]
    return Text(" · ").join(parts) if parts else Text(empty, style="dim")


def ties_lines(state: StateLike, agent: str, width: int) -> Text:
    """Two lines: whom ``agent`` likes and dislikes most (``likes Walter +.69 · dislikes
    Sebastian -.62``), then who likes and dislikes it most, as many ties of each kind as
    fit ``width`` (three at most). Where even one of each does not fit, the short form:
    ``→ Walter +.69 Sebastian -.62`` (its regard for them), ``← Walter +.70 Rafael -.30``
    (theirs for it)."""
    forms = []
    strongest = ties_of(state, agent, 3)  # each edge read once for every form
    for limit in (3, 2, 1):
        t = strongest.top(limit)
        forms.append(
            [
                _tie_line((("likes", t.likes), ("dislikes", t.dislikes)), "likes: none yet"),
                _tie_line(
                    (("liked by", t.liked_by), ("disliked by", t.disliked_by)),
                    "liked by: none yet",
                ),
            ]
        )
    for limit in (2, 1):
        t = strongest.top(limit)
        forms.append(
            [
                _tie_line((("→", t.likes + t.dislikes),), "→ no ties yet"),
                _tie_line((("←", t.liked_by + t.disliked_by),), "← no ties yet"),
            ]
        )
    lines = next((f for f in forms if all(ln.cell_len <= width for ln in f)), forms[-1])
    return Text("\n").join(lines)


def turn_line(round_no: int, action: Action, me: str) -> Text:
    """A transcript line; public, private and silent turns look different at a glance, and
    a turn a person played names them. What was said is shown without control characters,
    also when a save file holds them."""
    line = Text(f"R{round_no} ", style="dim")
    person = f" (human: {action.player})" if action.actor == "human" else ""
    if action.mode is Mode.SILENT:
        line.append("· silent", style="dim italic")
    elif action.mode is Mode.PRIVATE:
        arrow = f"✉ →{action.target}" if action.speaker == me else f"✉ ←{action.speaker}"
        line.append(f"{arrow} ", style="bold magenta")
        line.append(strip_controls(action.utterance), style="magenta")
    else:
        target = "all" if action.target in (None, "all") else action.target
        line.append(f"▶ →{target} ", style="bold cyan")
        line.append(strip_controls(action.utterance))
    if action.forced and action.mode is not Mode.SILENT:
        line.append(" (forced)", style="bold yellow")
    elif person:
        line.append(person, style="bold green")
    return line


def event_line(round_no: int, event: ScenarioEvent) -> Text:
    """A private event the agent received."""
    return Text(f"R{round_no} ⚑ ", style="dim") + Text(
        strip_controls(event.text), style="yellow italic"
    )


class AgentPane(Vertical):
    """The pane of one agent, refreshed after every round and fed tokens while it speaks."""

    DEFAULT_CSS = """
    AgentPane { border: round $primary-darken-1; padding: 0; min-width: 40; }
    AgentPane.-current { border: round $accent; }
    AgentPane .emotion { height: 1; }
    AgentPane .ties { height: 2; text-wrap: nowrap; text-overflow: ellipsis; }
    AgentPane .identity {
        height: 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    AgentPane Transcript { height: 1fr; min-height: 3; }
    AgentPane .pane-body { height: 1fr; }
    AgentPane.-wide .pane-body { layout: horizontal; }
    AgentPane.-wide NeedBars { width: 48; margin-right: 1; }
    AgentPane.-wide Transcript { width: 1fr; }
    """

    def __init__(self, spec: AgentSpec, state: AgentLike, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.state = state
        self.delta: float | None = None  # the emotion's change in the latest round
        self.world: StateLike | None = None  # the whole state: whom it likes, who likes it
        self._stale = True  # state not drawn yet (a hidden pane draws it when shown)
        self._streaming = False  # the live line is words arriving (not a decision)
        #: Kept from the start: a pane not mounted yet (its page never shown) stores what is
        #: written to it, and wraps it when it is shown.
        self._transcript = Transcript()
        self.border_title = spec.name
        self.tooltip = spec.role
        self.border_subtitle = spec.archetype.value

    def compose(self) -> ComposeResult:
        yield Static(Text(self.spec.role, overflow="ellipsis", no_wrap=True), classes="identity")
        yield Static(classes="emotion")
        yield Static(classes="ties")
        with Vertical(classes="pane-body"):
            yield NeedBars(self.state.needs)
            yield self._transcript

    @property
    def transcript(self) -> Transcript:
        return self._transcript

    def fit(self, width: int) -> None:
        """Arrange for the outer ``width`` the pane is about to get (set before the layout,
        so a page turn or focus mode is laid out once, not again when the size arrives)."""
        self.set_class(width - 2 >= WIDE, "-wide")

    def on_resize(self) -> None:
        wide = self.size.width >= WIDE
        self.set_class(wide, "-wide")
        rows = self.size.height - 2  # the border
        self.query_one(".identity").display = rows >= SHORT
        detail = needs_detail(rows - 2, beside=True) if wide else needs_detail(rows)
        self.query_one(NeedBars).detail = detail
        self._draw_ties()

    def on_transcript_moved(self, message: Transcript.Moved) -> None:
        """Say on the border where the rest of the transcript is, and which key shows it."""
        hint = "PgDn ↓ newer  " if message.newer else "PgUp ↑ older  " if message.older else ""
        self.border_subtitle = hint + self.spec.archetype.value

    def show_state(
        self, state: AgentLike, delta: float | None, world: StateLike | None = None
    ) -> None:
        """Refresh the gauge, ties and bars after a round (when the pane is next shown, if
        hidden); ``world`` is the whole state the agent's is part of."""
        self.state, self.delta, self._stale = state, delta, True
        self.world = world or self.world
        if self.display:
            self._draw_state()

    def on_show(self) -> None:
        if self._stale:
            self._draw_state()

    def prepare(self) -> None:
        """Draw what changed while the pane was hidden, before it is shown: a page turn
        then takes one layout pass, not a second one for what the shown panes draw (a pane
        mounted only now draws as it is shown)."""
        if not self.is_mounted:
            return
        if self._stale:
            self._draw_state()
        self.transcript.prepare()

    def _draw_state(self) -> None:
        line = emotion_line(self.state, self.delta)
        self.query_one(".emotion", Static).update(line, layout=False)  # one line, always
        self.query_one(NeedBars).update_needs(self.state.needs)
        self._draw_ties()
        self._stale = False

    def _draw_ties(self) -> None:
        if self.world is not None and self.size.width:
            lines = ties_lines(self.world, self.spec.name, self.size.width)
            self.query_one(".ties", Static).update(lines, layout=False)

    def add_event(self, round_no: int, event: ScenarioEvent) -> None:
        """A private event this agent received."""
        self.transcript.write(event_line(round_no, event))

    def add_turn(self, round_no: int, action: Action) -> None:
        """Write a finished turn (own, or a private message received)."""
        transcript = self.transcript
        if action.speaker == self.spec.name:
            self._streaming = False
            transcript.set_live(None)
        transcript.write(turn_line(round_no, action, self.spec.name))

    def decided(self, line: Text) -> None:
        """Show the agent's decision (``line``) until its turn is written."""
        self._streaming = False
        self.transcript.set_live(line)

    def stream(self, text: str) -> None:
        """Add ``text`` to the utterance being generated and show it."""
        transcript = self.transcript
        live = transcript.live
        if live is None or not self._streaming:  # a decision shown gives way to the words
            live = Text("… ", style="dim")
        live = live.copy()
        live.append(text, style="italic")
        self._streaming = True
        transcript.set_live(live)
