"""Sociodrama Tab. 1 metrics for every round of the run, from the run's index (no round
is read); rounds that end while the table is open are added to it."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from engine import Metrics, Simulation

from .. import messages
from ..event_bridge import EventBridge

COLUMNS = ("round", "Fav", "S", "recip", "E-I", "balance %", "repair %")


def _cell(value: float | None) -> str:
    """Two decimals; what rounds to zero is ``0.00``, never ``-0.00``."""
    return "–" if value is None else f"{round(value, 2) + 0.0:.2f}"


class MetricsScreen(ModalScreen[None]):
    """A table with one row per round (round 0 = the start)."""

    DEFAULT_CSS = """
    MetricsScreen { align: center middle; }
    MetricsScreen > DataTable { width: 80; max-width: 100%; height: 1fr; border: thick $primary; }
    MetricsScreen > Static { width: 80; max-width: 100%; height: auto; }
    """
    BINDINGS = [Binding("escape,q,m", "dismiss", "Close")]

    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim
        self._bridge: EventBridge | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"Metrics per round — {self.sim.scenario.title} ({self.sim.run_id})")
        yield DataTable(zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        for m in self.sim.history.metrics_series():
            self._add(m)
        table.move_cursor(row=table.row_count - 1)
        self._bridge = EventBridge(self.sim, self.post_message)

    def on_unmount(self) -> None:
        if self._bridge is not None:
            self._bridge.close()

    @on(messages.RoundEnded)
    def _round_ended(self, message: messages.RoundEnded) -> None:
        """Add the rounds not in the table yet (the cursor follows if it was on the last)."""
        table = self.query_one(DataTable)
        following = table.cursor_row == table.row_count - 1
        for r in range(table.row_count, message.view.round + 1):
            self._add(self.sim.history.metrics(r))
        if following:
            table.move_cursor(row=table.row_count - 1)

    def _add(self, m: Metrics) -> None:
        self.query_one(DataTable).add_row(
            str(m.round),
            _cell(m.mean_fav),
            _cell(m.mean_emotion),
            _cell(m.reciprocity),
            _cell(m.ei_index),
            _cell(m.balance),
            _cell(m.repair),
        )
