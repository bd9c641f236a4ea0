"""Modal dialogs. Each one hands its values to a ``submit`` callback that applies them
through the engine and returns an error message to show inline, or ``None`` to close."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, SelectionList, Static

from engine import ALL, ForcedAction, Mode

Submit = Callable[..., str | None]

FORM_CSS = """
Form { align: center middle; }
Form > Vertical {
    width: 72; max-width: 100%; height: auto; max-height: 100%;
    border: thick $primary; background: $surface; padding: 0 1;
}
Form .title { text-style: bold; margin-bottom: 1; }
Form .error { color: $error; height: auto; }
Form Select, Form Input { margin-bottom: 1; }
Form SelectionList { height: auto; max-height: 8; }
Form Horizontal { height: auto; align-horizontal: right; }
Form Button { margin-left: 2; min-width: 8; }
"""


class Form(ModalScreen[bool]):
    """Base dialog: a title, fields, an inline error line, OK and Cancel."""

    DEFAULT_CSS = FORM_CSS
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    title_text = ""

    def __init__(self, submit: Submit) -> None:
        super().__init__()
        self.submit = submit

    def fields(self) -> ComposeResult:
        """The dialog's input widgets."""
        yield from ()

    def values(self) -> tuple:
        """Arguments for ``submit``."""
        return ()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, classes="title")
            yield from self.fields()
            yield Label("", classes="error")
            with Horizontal():
                yield Button("OK", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def show_error(self, message: str) -> None:
        """Show a problem without closing the dialog."""
        self.query_one(".error", Label).update(message)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self.action_ok()
        else:
            self.dismiss(False)

    def on_input_submitted(self) -> None:
        self.action_ok()

    def action_ok(self) -> None:
        try:
            error = self.submit(*self.values())
        except ValueError as err:
            error = str(err)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)


class TextForm(Form):
    """One text field (snapshot name, branch round, export folder)."""

    def __init__(
        self, title: str, submit: Submit, value: str = "", placeholder: str = "", hint: str = ""
    ) -> None:
        super().__init__(submit)
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.hint = hint

    def fields(self) -> ComposeResult:
        if self.hint:
            yield Static(self.hint, classes="hint")
        yield Input(self.value, placeholder=self.placeholder, id="value", compact=True)

    def values(self) -> tuple:
        return (self.query_one("#value", Input).value,)


class ForceForm(Form):
    """Behaviour control: agent, mode, target and utterance for the next round."""

    title_text = "Force an action for the next round"

    def __init__(self, names: list[str], submit: Submit, agent: str | None = None) -> None:
        super().__init__(submit)
        self.names = names
        self.agent = agent or names[0]

    def fields(self) -> ComposeResult:
        yield Label("agent")
        yield Select(
            [(n, n) for n in self.names],
            value=self.agent,
            allow_blank=False,
            id="agent",
            compact=True,
        )
        yield Label("mode")
        yield Select(
            [(m.value, m.value) for m in Mode],
            value=Mode.PUBLIC.value,
            allow_blank=False,
            id="mode",
            compact=True,
        )
        yield Label("target")
        yield Select(
            [("everyone (all)", ALL)] + [(n, n) for n in self.names],
            value=ALL,
            allow_blank=False,
            id="target",
            compact=True,
        )
        yield Label("utterance")
        yield Input(placeholder="what the agent says", id="utterance", compact=True)

    def values(self) -> tuple:
        mode = Mode(self.query_one("#mode", Select).value)
        target = self.query_one("#target", Select).value
        return (
            ForcedAction(
                agent=str(self.query_one("#agent", Select).value),
                mode=mode,
                target=None if mode is Mode.SILENT else str(target),
                utterance=self.query_one("#utterance", Input).value.strip(),
            ),
        )


class InjectForm(Form):
    """Scenario branching: an event for the next round, public or private to some agents."""

    title_text = "Inject an event into the next round"

    def __init__(self, names: list[str], submit: Submit) -> None:
        super().__init__(submit)
        self.names = names

    def fields(self) -> ComposeResult:
        yield Label("event")
        yield Input(placeholder="what happens", id="text", compact=True)
        yield Label("visible to (none ticked = everyone; space ticks)")
        yield SelectionList[str](*[(n, n) for n in self.names], id="private")

    def values(self) -> tuple:
        chosen = list(self.query_one("#private", SelectionList).selected)
        return self.query_one("#text", Input).value, chosen or None


class ConfirmForm(Form):
    """A yes/no question."""

    BINDINGS = [
        Binding("escape", "cancel", "No"),
        Binding("y", "ok", "Yes"),
        Binding("n", "cancel", "No"),
    ]

    def __init__(self, question: str, submit: Submit) -> None:
        super().__init__(submit)
        self.title_text = question

    def fields(self) -> ComposeResult:
        yield Static("y = yes, n or Esc = no")
