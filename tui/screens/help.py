"""The help screen: every key of the main screen."""

from __future__ import annotations

from rich.table import Table
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
    "panel leaves that note out). Ctrl+P opens the command palette."
)


class HelpScreen(ModalScreen[None]):
    """Lists the bindings (after any user keymap) and explains the glyphs."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str]], mind: str) -> None:
        super().__init__()
        self.rows = rows
        self.mind = mind

    def compose(self) -> ComposeResult:
        table = Table(title="Keys", box=None, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for keys, label in self.rows:
            table.add_row(keys, label)
        table.add_row("Esc", "close a dialog or screen")
        with VerticalScroll():
            yield Static(table)
            yield Static(f"\nMind: {self.mind}.\n{ABOUT}")
