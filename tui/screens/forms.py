"""Modal dialogs. Each one hands its values to a ``submit`` callback that applies them
through the engine and returns an error message to show inline, or ``None`` to close.

The usual conventions hold in every dialog: Enter submits (from any field), Space toggles a
tick box or opens a list, Esc cancels; a choice the engine would refuse is never offered.
Typed or pasted text is checked as the command line checks it (no control characters, a
bounded length) before anything is applied.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Button, Input, Label, Select, SelectionList, Static

from engine import ALL, ForcedAction, Mode
from engine.core.limits import MAX_TEXT_CHARS
from engine.core.textsafe import char_name, unsafe_char

from ..outside import shown

Submit = Callable[..., str | None]

FORM_CSS = """
Form { align: center middle; }
Form > Vertical {
    width: 72; max-width: 100%; height: auto; max-height: 100%;
    border: thick $primary; background: $surface; padding: 0 1;
}
Form .title { text-style: bold; margin-bottom: 1; }
Form .error { color: $error; height: auto; }
Form .keys { color: $text-muted; height: auto; }
Form Select, Form Input { margin-bottom: 1; }
Form SelectionList { height: auto; max-height: 8; }
Form Horizontal { height: auto; align-horizontal: right; }
Form Button { margin-left: 2; min-width: 8; }
"""


def checked(text: str, what: str) -> str:
    """``text`` of the field ``what``, or a ValueError (shown in the dialog) when it holds a
    character a terminal would act on or is longer than the engine takes."""
    bad = unsafe_char(text)
    if bad is not None:
        raise ValueError(f"{what}: contains the control character {char_name(bad)}")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"{what}: longer than {MAX_TEXT_CHARS:,} characters ({len(text):,})")
    return text


class FormSelect(Select[str]):
    """A drop-down list in a dialog: Space or the arrows open it, Enter submits the dialog."""

    BINDINGS = [Binding("enter", "screen.ok", "OK", show=False)]


class TickList(SelectionList[str]):
    """Tick boxes: Space ticks or unticks, Enter submits the dialog. A ticked box reads
    ``[x]`` and an empty one ``[ ]``, so they differ without colour (``NO_COLOR``)."""

    BINDINGS = [Binding("enter", "screen.ok", "OK", show=False)]

    def render_line(self, y: int) -> Strip:
        line = super(SelectionList, self).render_line(y)  # the prompt, without the button
        index = self.scroll_offset.y + y
        if index >= self.option_count:
            return line
        value = self.get_option_at_index(index).value
        ticked = value in self.selected
        component = "selection-list--button" + ("-selected" if ticked else "")
        if self.highlighted == index:
            component += "-highlighted"
        style = self.get_component_rich_style(component) + Style(meta={"option": index})
        under = next(iter(line)).style or self.rich_style
        return Strip([Segment("[x]" if ticked else "[ ]", style), Segment(" ", under), *line])


class Form(ModalScreen[bool]):
    """Base dialog: a title, fields, an inline error line, the keys, OK and Cancel."""

    DEFAULT_CSS = FORM_CSS
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    title_text = ""
    keys_text = "Enter OK · Esc cancel"

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
            yield Static(shown(self.title_text), classes="title")
            yield from self.fields()
            yield Label("", classes="error")
            yield Static(self.keys_text, classes="keys")
            with Horizontal():
                yield Button("OK", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def show_error(self, message: str) -> None:
        """Show a problem without closing the dialog."""
        self.query_one(".error", Label).update(shown(message))

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
    """One text field (snapshot name, branch round, export folder).

    ``default`` is what an empty field means: shown as the placeholder, so the field starts
    empty and nothing has to be erased before typing."""

    def __init__(
        self,
        title: str,
        submit: Submit,
        value: str = "",
        placeholder: str = "",
        hint: str = "",
        default: str = "",
    ) -> None:
        super().__init__(submit)
        self.title_text = title
        self.value = value
        self.placeholder = f"{default} (Enter keeps it)" if default else placeholder
        self.hint = hint
        self.default = default

    def fields(self) -> ComposeResult:
        if self.hint:
            yield Static(self.hint, classes="hint")
        yield Input(self.value, placeholder=self.placeholder, id="value", compact=True)

    def values(self) -> tuple:
        text = checked(self.query_one("#value", Input).value.strip(), "the text")
        return (text or self.default,)


def target_choices(names: list[str], agent: str, mode: Mode) -> list[tuple[str, str]]:
    """Whom ``agent`` may address in ``mode``: never itself; everyone only in public."""
    others = [(n, n) for n in names if n != agent]
    return [("everyone (all)", ALL), *others] if mode is Mode.PUBLIC else others


class ForceForm(Form):
    """Behaviour control: agent, mode, target and utterance for the next round. The target
    list offers only valid choices and follows the agent and the mode."""

    title_text = "Force an action for the next round"
    keys_text = "Enter OK · Space or ↑↓ open a list · Tab next field · Esc cancel"

    def __init__(self, names: list[str], submit: Submit, agent: str | None = None) -> None:
        super().__init__(submit)
        self.names = names
        self.agent = agent or names[0]
        self.targets = [v for _, v in target_choices(names, self.agent, Mode.PUBLIC)]

    def fields(self) -> ComposeResult:
        yield Label("agent")
        yield FormSelect(
            [(n, n) for n in self.names],
            value=self.agent,
            allow_blank=False,
            id="agent",
            compact=True,
        )
        yield Label("mode")
        yield FormSelect(
            [(m.value, m.value) for m in Mode],
            value=Mode.PUBLIC.value,
            allow_blank=False,
            id="mode",
            compact=True,
        )
        yield Label("target")
        yield FormSelect(
            target_choices(self.names, self.agent, Mode.PUBLIC),
            value=ALL,
            allow_blank=False,
            id="target",
            compact=True,
        )
        yield Label("utterance")
        yield Input(placeholder="what the agent says", id="utterance", compact=True)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id in ("agent", "mode"):
            self._update_targets()

    def _update_targets(self) -> None:
        """Offer the targets the chosen agent and mode allow, keeping the current one if
        it is still allowed; silence has no target."""
        agent = str(self.query_one("#agent", Select).value)
        mode = Mode(self.query_one("#mode", Select).value)
        target = self.query_one("#target", Select)
        choices = target_choices(self.names, agent, mode)
        allowed = [value for _, value in choices]
        if allowed != self.targets:
            current = target.value
            target.set_options(choices)
            target.value = current if current in allowed else allowed[0]
            self.targets = allowed
        target.disabled = mode is Mode.SILENT

    def values(self) -> tuple:
        mode = Mode(self.query_one("#mode", Select).value)
        target = self.query_one("#target", Select).value
        return (
            ForcedAction(
                agent=str(self.query_one("#agent", Select).value),
                mode=mode,
                target=None if mode is Mode.SILENT else str(target),
                utterance=checked(self.query_one("#utterance", Input).value.strip(), "utterance"),
            ),
        )


#: The valences the inject dialog offers ("" leaves it to the text).
VALENCES = [
    ("read from the text", ""),
    ("very good news (+1)", "1"),
    ("good news (+0.5)", "0.5"),
    ("neutral (0)", "0"),
    ("bad news (-0.5)", "-0.5"),
    ("very bad news (-1)", "-1"),
]
READ, NOBODY = "(read from the text)", "(nobody)"


class InjectForm(Form):
    """Scenario branching: an event for the next round, its meaning (how good or bad it is,
    whom it touches, whom it implicates; each read from the text unless chosen, the reading
    shown as one types) and who sees it."""

    DEFAULT_CSS = """
    InjectForm > Vertical { overflow-y: auto; }
    InjectForm .title { margin-bottom: 0; }
    InjectForm SelectionList { max-height: 7; }
    InjectForm Select, InjectForm Input { margin-bottom: 0; }
    InjectForm .reading { color: $text-muted; }
    InjectForm Horizontal.columns { align-horizontal: left; }
    InjectForm Horizontal.columns > Vertical { width: 1fr; height: auto; }
    """
    title_text = "Inject an event into the next round"
    keys_text = "Enter OK · Space ticks or opens a list · Tab next field · Esc cancel"

    def __init__(self, names: list[str], submit: Submit) -> None:
        super().__init__(submit)
        self.names = names

    def fields(self) -> ComposeResult:
        yield Label("event")
        yield Input(placeholder="what happens", id="text", compact=True)
        yield Static(self._reading(""), classes="reading", id="reading")
        yield Label("how good or bad it is for those it touches")
        yield FormSelect(VALENCES, value="", allow_blank=False, id="valence", compact=True)
        yield Label("whom it is laid at (implicates)")
        yield FormSelect(
            [(READ, READ), (NOBODY, NOBODY), *((n, n) for n in self.names)],
            value=READ,
            allow_blank=False,
            id="implicates",
            compact=True,
        )
        # Side by side, so the dialog fits 80×24 with its title and buttons on screen.
        with Horizontal(classes="columns"):
            with Vertical():
                yield Label("touches (none: read)")
                yield TickList(*[(n, n) for n in self.names], id="about")
            with Vertical():
                yield Label("visible to (none: all)")
                yield TickList(*[(n, n) for n in self.names], id="private")

    def _reading(self, text: str) -> str:
        """What the engine reads from the text so far."""
        from engine.core.state import ScenarioEvent

        from ..queued import meaning_line

        if not text.strip():
            return "the text reads as: (type the event to see its meaning)"
        return "the text reads as: " + meaning_line(ScenarioEvent(text=text), self.names, False)

    def on_mount(self) -> None:
        self.query_one("#text", Input).focus()
        self.query_one(Vertical).scroll_home(animate=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "text":
            self.query_one("#reading", Static).update(self._reading(event.value))

    def values(self) -> tuple:
        chosen = list(self.query_one("#private", SelectionList).selected)
        about = list(self.query_one("#about", SelectionList).selected)
        valence = str(self.query_one("#valence", Select).value)
        blamed = str(self.query_one("#implicates", Select).value)
        implicates = None if blamed == READ else [] if blamed == NOBODY else [blamed]
        return (
            checked(self.query_one("#text", Input).value, "event"),
            chosen or None,
            float(valence) if valence else None,
            about,
            implicates,
        )


class GoOnForm(Form):
    """A finished run goes on: extended by some rounds (as ``resume --rounds``), or branched
    with that many rounds after the fork."""

    title_text = "The run is finished"
    keys_text = "Enter OK · Space or ↑↓ open a list · Tab next field · Esc cancel"

    def __init__(self, round_no: int, submit: Submit, rounds: int = 3) -> None:
        super().__init__(submit)
        self.round_no = round_no
        self.rounds = rounds

    def fields(self) -> ComposeResult:
        yield Static(
            f"It played all its rounds ({self.round_no}); nothing can be queued for a "
            "round that will not come. Go on:",
            classes="hint",
        )
        yield FormSelect(
            [("extend this run", "extend"), ("branch it (a new run)", "branch")],
            value="extend",
            allow_blank=False,
            id="how",
            compact=True,
        )
        yield Label("by how many rounds")
        yield Input(str(self.rounds), id="rounds", compact=True)

    def values(self) -> tuple:
        text = self.query_one("#rounds", Input).value.strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"rounds: a whole number from 1 ({text!r})")
        return str(self.query_one("#how", Select).value), int(text)


class QueueForm(Form):
    """What is queued for the next round; ticked items are removed."""

    keys_text = "Space ticks · Enter removes the ticked · Esc cancel"

    def __init__(self, lines: list[str], round_no: int, submit: Submit) -> None:
        super().__init__(submit)
        self.lines = lines
        self.title_text = f"Queued for round {round_no} (tick to remove)"

    def fields(self) -> ComposeResult:
        yield TickList(*[(line, str(k)) for k, line in enumerate(self.lines)], id="queued")

    def values(self) -> tuple:
        ticked = self.query_one("#queued", SelectionList).selected
        return (sorted((int(k) for k in ticked), reverse=True),)


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

    keys_text = "y or Enter yes · n or Esc no"

    def fields(self) -> ComposeResult:
        yield from ()
