"""The diagnosis screen: per agent, the proposal, its rationale and the trajectory evidence;
accept or edit, then apply as a branch that reruns the run from the start.

One row an agent in a table, and one selector for the highlighted agent's archetype: a
widget set of a few dozen whatever the cast (a selector and three lines an agent made ~3,000
widgets at 300 agents, ~8 s to show and a stall when closed)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Label, Select, Static

from engine import Archetype
from engine.studies.tasks.diagnosis import Proposal

from ..outside import shown

KEEP = "keep"
#: The table's columns; the third is the choice, edited with the selector.
COLUMNS = ("agent", "now", "choice", "rationale")


class RecastScreen(ModalScreen[None]):
    """Edit the proposed casting; Apply hands ``{agent: archetype}`` to ``apply``."""

    DEFAULT_CSS = """
    RecastScreen { align: center middle; }
    RecastScreen > Vertical { width: 100; max-width: 100%; height: 100%;
        border: thick $primary; background: $surface; padding: 0 1; }
    RecastScreen DataTable { height: 1fr; }
    RecastScreen #detail { height: auto; margin: 1 0; }
    RecastScreen .row { height: auto; }
    RecastScreen Select { width: 24; }
    RecastScreen #for { width: 1fr; padding-left: 1; }
    RecastScreen .error { color: $error; height: auto; }
    RecastScreen .keys { color: $text-muted; height: auto; }
    RecastScreen #buttons { height: auto; align-horizontal: right; }
    RecastScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("a", "apply", "Apply")]
    AUTO_FOCUS = "DataTable"  # on the first proposal

    def __init__(
        self,
        proposals: list[Proposal],
        headline: str,
        apply: Callable[[dict[str, Archetype]], str | None],
    ) -> None:
        super().__init__()
        self.proposals = proposals
        self.headline = headline
        self.apply_fn = apply
        #: Each agent's choice: ``keep`` or an archetype's value (the proposal at first).
        self.choices = {p.agent: p.archetype.value if p.archetype else KEEP for p in proposals}
        self._at = 0  # the highlighted agent's position

    def compose(self) -> ComposeResult:
        options = [("keep", KEEP)] + [(a.value, a.value) for a in Archetype]
        with Vertical():
            yield Static(Text(self.headline, style="bold"))
            yield DataTable(cursor_type="row", zebra_stripes=True)
            yield Static(id="detail")
            with Horizontal(classes="row"):
                yield Select(options, allow_blank=False, compact=True, id="choice")
                yield Static(id="for")
            yield Label("", classes="error")
            yield Static(
                "↑↓ an agent · Tab its archetype (Space or Enter opens the list) · a apply · "
                "Esc cancel",
                classes="keys",
            )
            with Horizontal(id="buttons"):
                yield Button(
                    "Apply: rerun from the start", variant="primary", id="apply", compact=True
                )
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        for p in self.proposals:
            table.add_row(*self._cells(p), key=p.agent)
        self._show(0)

    def _cells(self, p: Proposal) -> tuple[Text, ...]:
        choice = self.choices[p.agent]
        return (
            Text(p.agent, style="bold"),
            Text(p.current.value, style="cyan"),
            Text(choice, style="dim" if choice == KEEP else "bold yellow"),
            Text(p.rationale, style="italic"),
        )

    def _show(self, at: int) -> None:
        """The highlighted agent's rationale, evidence and choice under the table."""
        self._at = at
        p = self.proposals[at]
        self.query_one("#detail", Static).update(
            Text.assemble(
                (p.agent, "bold"),
                "  now ",
                (p.current.value, "cyan"),
                "\n",
                (p.rationale, "italic"),
                "\n",
                (p.evidence.line(), "dim"),
            )
        )
        self.query_one("#for", Static).update(Text.assemble("the archetype of ", (p.agent, "bold")))
        self.query_one("#choice", Select).value = self.choices[p.agent]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show(event.cursor_row)

    def on_select_changed(self, event: Select.Changed) -> None:
        p = self.proposals[self._at]
        value = str(event.select.value)  # as it is now: an earlier agent's event may be late
        if value == self.choices[p.agent]:
            return
        self.choices[p.agent] = value
        table = self.query_one(DataTable)
        table.update_cell(p.agent, COLUMNS[2], self._cells(p)[2])

    def casting(self) -> dict[str, Archetype]:
        """The chosen archetype of every agent (kept ones included)."""
        chosen = {}
        for p in self.proposals:
            value = self.choices[p.agent]
            chosen[p.agent] = p.current if value == KEEP else Archetype(value)
        return chosen

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.dismiss()

    def action_apply(self) -> None:
        casting = self.casting()
        if all(casting[p.agent] == p.current for p in self.proposals):
            self.query_one(".error", Label).update("Nothing to change: pick a new archetype.")
            return
        error = self.apply_fn(casting)
        if error:
            self.query_one(".error", Label).update(shown(error))
        else:
            self.dismiss()
