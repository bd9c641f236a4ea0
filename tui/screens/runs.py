"""The run browser: saved runs as a lineage tree; open, branch or delete them."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, Static, Tree

from engine import RunListing, SaveStore, Simulation, SocialsimError

from .forms import ConfirmForm, TextForm


def listing_label(row: RunListing, current: str) -> Text:
    """One tree node: id, scenario, progress, fork round, name; broken ones in red."""
    if not row.ok:
        return Text.assemble((row.run_id, "bold red"), ("  ", ""), (row.reason, "red"))
    label = Text(row.run_id, style="bold reverse" if row.run_id == current else "bold")
    label.append(f"  {row.scenario_id}  {row.rounds_done}/{row.total_rounds}", style="cyan")
    if row.parent:
        label.append(f"  @{row.parent.round}", style="dim")
    if row.name:
        label.append(f"  {row.name}", style="italic")
    return label


class RunBrowser(ModalScreen[Simulation | None]):
    """Enter opens (resumes) a run, b branches it, d deletes it after confirmation.

    Dismissed with the opened run, or ``None`` when the current one stays open.
    """

    DEFAULT_CSS = """
    RunBrowser { align: center middle; }
    RunBrowser > Tree { width: 100%; height: 1fr; border: thick $primary; }
    RunBrowser > #message { height: auto; color: $error; padding: 0 1; }
    RunBrowser > Static { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("b", "branch", "Branch"),
        Binding("d", "delete", "Delete"),
    ]

    def __init__(self, store: SaveStore, current: str) -> None:
        super().__init__()
        self.store = store
        self.current = current
        self.rows: dict[str, RunListing] = {}

    def compose(self) -> ComposeResult:
        yield Static(f"Saved runs in {self.store.root}  (Enter open · b branch · d delete)")
        yield Tree("runs", id="tree")
        yield Label("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.query_one(Tree).focus()

    def reload(self) -> None:
        """Rebuild the tree from the saves folder."""
        tree = self.query_one(Tree)
        tree.clear()
        tree.root.expand()
        rows = self.store.list_runs()
        self.rows = {r.run_id: r for r in rows}
        children: dict[str, list[RunListing]] = {}
        for r in rows:
            if r.ok and r.parent and r.parent.run_id in self.rows:
                children.setdefault(r.parent.run_id, []).append(r)

        def add(node, row: RunListing) -> None:
            kids = children.get(row.run_id, [])
            label = listing_label(row, self.current)
            child = node.add(label, data=row.run_id, expand=True, allow_expand=bool(kids))
            for kid in kids:
                add(child, kid)

        for r in rows:
            if not (r.ok and r.parent and r.parent.run_id in self.rows):
                add(tree.root, r)
        if not rows:
            tree.root.add_leaf("no saved runs")

    def _selected(self) -> RunListing | None:
        node = self.query_one(Tree).cursor_node
        if node is None or node.data is None:
            return None
        return self.rows.get(node.data)

    def say(self, message: str) -> None:
        """An inline message under the tree."""
        self.query_one("#message", Label).update(message)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        row = self.rows.get(event.node.data) if event.node.data else None
        if row is None:
            return
        if not row.ok:
            self.say(f"Cannot open {row.run_id}: {row.reason}")
            return
        if row.run_id == self.current:
            self.dismiss(None)
            return
        try:
            sim = Simulation.resume(row.run_id, self.store)
        except SocialsimError as err:
            self.say(str(err))
            return
        self.dismiss(sim)

    def action_branch(self) -> None:
        row = self._selected()
        if row is None or not row.ok:
            self.say("Choose a readable run to branch.")
            return

        def submit(text: str) -> str | None:
            try:
                at = int(text.strip())
            except ValueError:
                return f"Round must be a number from 0 to {row.rounds_done}."
            try:
                child = self.store.branch(row.run_id, at)
            except SocialsimError as err:
                return str(err)
            self.reload()
            self.say(f"Created {child.run_id}; Enter opens it.")
            return None

        self.app.push_screen(
            TextForm(
                f"Branch {row.run_id}",
                submit,
                value=str(row.rounds_done),
                hint=f"Fork after which round? (0..{row.rounds_done})",
            )
        )

    def action_delete(self) -> None:
        row = self._selected()
        if row is None:
            return
        if row.run_id == self.current:
            self.say("This run is open; open another run before deleting it.")
            return

        def submit() -> str | None:
            try:
                self.store.delete(row.run_id)
            except SocialsimError as err:
                return str(err)
            self.reload()
            self.say(f"Deleted {row.run_id}.")
            return None

        self.app.push_screen(
            ConfirmForm(f"Delete run {row.run_id}? Its branches keep their copies.", submit)
        )
