"""The help screen: every key of the main screen."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.core.rules import ALLY_AT, ENEMY_AT, RIVAL_AT

ABOUT = (
    "Panes: S is the emotional state (0 negative, 0.5 neutral, 1 positive). Needs: bar = "
    "current value, │ = expected; ✓ met, ! a small gap, ✗ a large one (also green, yellow, "
    "red). Small panes show one line per category: its mean, and the need with the largest "
    "gap. Transcript: ▶ public, ✉ private (→ sent, ← received), · silent, ⚑ private event; "
    "PgUp/PgDn scroll the transcripts on screen (the mouse wheel too), back at the bottom "
    "they follow again. z shows one agent full-size ([ and ] step through the agents), / "
    "finds an agent by part of its name, a click on a name in the strip shows it. The event "
    "strip folds to a line or two; i (or a click) shows all of it. Matrix: row regards "
    "column; colour = favorability, glyph = status (+ ally, · neutral, ~ rival, x enemy); "
    "reversed cells changed in the last round; a status is sticky: it moves when fav "
    f"crosses {ALLY_AT:+.2f}, {RIVAL_AT:+.2f} or {ENEMY_AT:+.2f}, or by an event (a short "
    "panel leaves that note out). The colour scale: bold red from -1 to -.5, yellow to -.1, "
    "plain to +.15, green to +.55, bold green to +1; without colour (NO_COLOR) a glyph cell "
    "shows that band instead of the status: ▼ ▽ · △ ▲. Agents stand in faction order: a "
    "row starts with its faction's code, the factions are named over their columns, │ opens "
    "each; F filters the matrix to one agent (its row and column: its regard for each "
    "other, Agnes→, and theirs for it, →Agnes) or one faction, F again shows all. Under a "
    "pane's gauge: whom the agent likes and dislikes most (→ in a narrow pane) and who likes "
    "and dislikes it most (←), with the favorability. Tab moves the keys between the matrix "
    "and the transcripts (a double border marks where they go). Ctrl+P opens the command "
    "palette."
)
#: What every number on screen means.
METRICS = (
    "Metrics (Sociodrama Tab. 1, App. D), after every round: mean Fav, the mean "
    "favorability of every directed edge (-1..1); mean S, the mean emotional state (0..1); "
    "reciprocity, the Pearson correlation of fav i→j with fav j→i (-1..1; – when "
    "undefined); E-I index, (E - I) / (E + I) of the mean favorability across factions (E) "
    "and within them (I): below 0 the factions favour their own (undefined when E + I ≤ 0 "
    "or without factions); balance, the percent of triads whose signs are balanced "
    "(0-100%); repair, the percent of edges that turned rival or enemy and are neutral or "
    "ally again (0-100%). θ (value-driven agents, EduMirror Eq. 2) is the angle of the "
    "agent's last choice on the self/other plane, arctan(S_other / S_self) in degrees "
    "(0..90): near 0° it acted on its own unmet needs, near 90° on what its action does "
    "for the others' needs, 45° both alike. A task's score in the header is its utility on "
    "the task's own scale (shown as value/maximum)."
)


class HelpScreen(ModalScreen[None]):
    """Lists the bindings (after any user keymap) and explains the glyphs."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 70%; min-width: 76; max-width: 100; height: auto;
        max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str]], mind: str) -> None:
        super().__init__()
        self.rows = rows
        self.mind = mind

    @property
    def says(self) -> tuple[list[tuple[str, str]], str]:
        """What it was built from: the key rows and the mind's label."""
        return self.rows, self.mind

    def on_screen_resume(self) -> None:
        self.query_one(VerticalScroll).scroll_home(animate=False)  # kept: shown from the top

    def compose(self) -> ComposeResult:
        table = Table(title="Keys", box=None, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for keys, label in self.rows:
            table.add_row(Text(keys), Text(label))
        table.add_row("Esc", "close a dialog or screen")
        with VerticalScroll():
            yield Static(table)
            yield Static(Text(f"\nMind: {self.mind}.\n{ABOUT}\n\n{METRICS}"))
