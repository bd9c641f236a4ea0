"""Jump to an agent by typing part of its name (fuzzy: ``mxl`` finds Maximilian)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList


def rank(query: str, names: list[str]) -> list[str]:
    """The names matching ``query``, best first (all of them, in order, for no query)."""
    if not query.strip():
        return list(names)
    matcher = Matcher(query.strip())
    scored = [(matcher.match(name), k, name) for k, name in enumerate(names)]
    return [name for score, _, name in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]


class JumpScreen(ModalScreen[str | None]):
    """A name field over the matching agents; Enter shows the highlighted one."""

    DEFAULT_CSS = """
    JumpScreen { align: center middle; }
    JumpScreen > Vertical { width: 44; max-width: 100%; height: auto; max-height: 80%;
        border: thick $primary; background: $surface; padding: 0 1; }
    JumpScreen OptionList { height: auto; max-height: 12; }
    """
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("down", "move(1)", show=False, priority=True),
        Binding("up", "move(-1)", show=False, priority=True),
    ]

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Agent name (Enter shows it, Esc cancels)")
            yield Input(placeholder="name")
            yield OptionList(*self.names)

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = 0

    @on(Input.Changed)
    def _filter(self, event: Input.Changed) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(rank(event.value, self.names))
        options.highlighted = 0 if options.option_count else None

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            options.highlighted = ((options.highlighted or 0) + step) % options.option_count

    @on(Input.Submitted)
    def _submit(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is None:
            self.app.bell()
            return
        self.dismiss(str(options.get_option_at_index(options.highlighted).prompt))

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(str(event.option.prompt))
