"""The diagnosis screen: per agent, the proposal, its rationale and the trajectory evidence;
accept or edit, then apply as a branch that reruns the run from the start."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from engine import Archetype
from engine.studies.tasks.diagnosis import Proposal

KEEP = "keep"


class RecastScreen(ModalScreen[None]):
    """Edit the proposed casting; Apply hands ``{agent: archetype}`` to ``apply``."""

    DEFAULT_CSS = """
    RecastScreen { align: center middle; }
    RecastScreen > Vertical { width: 100; max-width: 100%; height: 100%;
        border: thick $primary; background: $surface; padding: 0 1; }
    RecastScreen .agent { height: auto; margin-bottom: 1; }
    RecastScreen .row { height: auto; }
    RecastScreen Select { width: 24; }
    RecastScreen .who { width: 1fr; padding-left: 1; }
    RecastScreen .error { color: $error; height: auto; }
    RecastScreen .keys { color: $text-muted; height: auto; }
    RecastScreen #buttons { height: auto; align-horizontal: right; }
    RecastScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("a", "apply", "Apply")]
    AUTO_FOCUS = "Select"  # the first proposal

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

    def compose(self) -> ComposeResult:
        options = [("keep", KEEP)] + [(a.value, a.value) for a in Archetype]
        with Vertical():
            yield Static(Text(self.headline, style="bold"))
            with VerticalScroll():
                for p in self.proposals:
                    with Vertical(classes="agent"):
                        with Horizontal(classes="row"):
                            yield Select(
                                options,
                                value=p.archetype.value if p.archetype else KEEP,
                                allow_blank=False,
                                compact=True,
                                id=f"choice-{p.agent}",
                            )
                            yield Static(
                                Text.assemble(
                                    (p.agent, "bold"), "  now ", (p.current.value, "cyan")
                                ),
                                classes="who",
                            )
                        yield Static(Text(p.rationale, style="italic"))
                        yield Static(Text(p.evidence.line(), style="dim"))
            yield Label("", classes="error")
            yield Static(
                "Tab next agent · Space or Enter opens a list · a apply · Esc cancel",
                classes="keys",
            )
            with Horizontal(id="buttons"):
                yield Button(
                    "Apply: rerun from the start", variant="primary", id="apply", compact=True
                )
                yield Button("Cancel", id="cancel", compact=True)

    def casting(self) -> dict[str, Archetype]:
        """The chosen archetype of every agent (kept ones included)."""
        chosen = {}
        for p in self.proposals:
            value = self.query_one(f"#choice-{p.agent}", Select).value
            chosen[p.agent] = p.current if value == KEEP else Archetype(str(value))
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
            self.query_one(".error", Label).update(error)
        else:
            self.dismiss()
