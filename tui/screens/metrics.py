"""Sociodrama Tab. 1 metrics for every round of the run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from engine import Simulation
from engine.metrics import metrics_series

COLUMNS = ("round", "Fav", "S", "recip", "E-I", "balance %", "repair %")


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


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

    def compose(self) -> ComposeResult:
        yield Static(f"Metrics per round — {self.sim.scenario.title} ({self.sim.run_id})")
        yield DataTable(zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        states = [r.state for r in self.sim.records]
        for m in metrics_series(self.sim.scenario, states):
            table.add_row(
                str(m.round),
                _cell(m.mean_fav),
                _cell(m.mean_emotion),
                _cell(m.reciprocity),
                _cell(m.ei_index),
                _cell(m.balance),
                _cell(m.repair),
            )
        table.move_cursor(row=self.sim.round)
