"""One agent's pane: identity, emotion gauge, need bars and a live transcript."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import RichLog, Static

from engine import Action, Mode, ScenarioEvent
from engine.scenario import AgentSpec
from engine.state import AgentState

from .needs import NeedBars
from .style import bar, emotion_style

FULL_NEEDS_AT = 36


def emotion_line(state: AgentState, delta: float | None) -> Text:
    """``S 0.62 ███████▌░░░ +0.05``."""
    value = state.emotion
    line = Text.assemble(("S ", "bold"), (f"{value:.2f} ", emotion_style(value)))
    line.append(bar(value, 14), style=emotion_style(value))
    if delta:
        line.append(f" {delta:+.2f}", style="green" if delta > 0 else "red")
    if state.theta is not None:  # value-driven agents: social orientation (EduMirror Eq. 2)
        line.append(f"  θ {state.theta:.0f}°", style="magenta")
    return line


def turn_line(round_no: int, action: Action, me: str) -> Text:
    """A transcript line; public, private and silent turns look different at a glance."""
    tag = Text(f"R{round_no} ", style="dim")
    if action.mode is Mode.SILENT:
        return tag + Text("· silent", style="dim italic")
    forced = Text(" (forced)", style="bold yellow") if action.forced else Text("")
    if action.mode is Mode.PRIVATE:
        arrow = f"✉ →{action.target}" if action.speaker == me else f"✉ ←{action.speaker}"
        return (
            tag
            + Text(f"{arrow} ", style="bold magenta")
            + Text(action.utterance, style="magenta")
            + forced
        )
    target = "all" if action.target in (None, "all") else action.target
    return tag + Text(f"▶ →{target} ", style="bold cyan") + Text(action.utterance) + forced


class AgentPane(Vertical):
    """The pane of one agent, refreshed after every round and fed tokens while it speaks."""

    DEFAULT_CSS = """
    AgentPane { border: round $primary-darken-1; padding: 0; min-width: 40; }
    AgentPane .emotion { height: 1; }
    AgentPane .identity { height: 1; color: $text-muted; }
    AgentPane RichLog { height: 1fr; min-height: 3; background: $surface; }
    AgentPane .live { height: auto; max-height: 3; color: $text; text-style: italic; }
    """

    def __init__(self, spec: AgentSpec, state: AgentState, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.state = state
        self.border_title = spec.name
        self.border_subtitle = spec.archetype.value
        self.live = ""

    def compose(self) -> ComposeResult:
        yield Static(Text(self.spec.role, overflow="ellipsis", no_wrap=True), classes="identity")
        yield Static(emotion_line(self.state, None), classes="emotion")
        yield NeedBars(self.state.needs)
        yield RichLog(wrap=True, markup=False, auto_scroll=True, min_width=20)
        yield Static("", classes="live")

    def on_resize(self) -> None:
        self.query_one(NeedBars).compact = self.size.height < FULL_NEEDS_AT

    def show_state(self, state: AgentState, delta: float | None) -> None:
        """Refresh the gauge and bars after a round."""
        self.state = state
        self.query_one(".emotion", Static).update(emotion_line(state, delta))
        self.query_one(NeedBars).update_needs(state.needs)

    def add_event(self, round_no: int, event: ScenarioEvent) -> None:
        """A private event this agent received."""
        self.query_one(RichLog).write(
            Text(f"R{round_no} ⚑ ", style="dim") + Text(event.text, style="yellow italic")
        )

    def add_turn(self, round_no: int, action: Action) -> None:
        """Write a finished turn (own, or a private message received)."""
        self.live = ""
        self.query_one(".live", Static).update("")
        self.query_one(RichLog).write(turn_line(round_no, action, self.spec.name))

    def stream(self, text: str) -> None:
        """Add ``text`` to the utterance being generated and show it."""
        self.live += text
        self.query_one(".live", Static).update(Text("… ", style="dim") + Text(self.live))
