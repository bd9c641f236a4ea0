"""Plots (plotext): emotion per agent, mean favorability, one edge, needs over time;
optionally the same series for a second run (a branch) side by side."""

from __future__ import annotations

import plotext as plt
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Select, Static

from engine import RoundRecord, SaveStore, Simulation, SocialsimError
from engine.metrics import mean_fav
from engine.needs import NEEDS, need_label

KINDS = (
    ("emotion per agent", "emotion"),
    ("mean favorability", "fav"),
    ("one edge (from → to)", "edge"),
    ("needs of one agent", "needs"),
)
Series = dict[str, tuple[list[int], list[float]]]


def series(records: list[RoundRecord], kind: str, agent: str, other: str, need: str) -> Series:
    """Named (rounds, values) lines for one plot kind."""
    rounds = [r.round for r in records]
    if kind == "emotion":
        return {
            n: (rounds, [r.state.agents[n].emotion for r in records])
            for n in records[0].state.agents
        }
    if kind == "fav":
        return {"mean fav": (rounds, [mean_fav(r.state) for r in records])}
    if kind == "edge":
        if agent == other:
            return {}
        return {
            f"{agent}→{other}": (
                rounds,
                [r.state.agents[agent].relations[other].fav for r in records],
            )
        }
    names = NEEDS if need == "*" else (need,)
    return {
        need_label(n): (rounds, [r.state.agents[agent].needs[n].current for r in records])
        for n in names
    }


def fit_title(title: str, width: int) -> str:
    """plotext drops a title wider than the chart: shorten it, keeping its end (the run id)."""
    room = max(10, width - 10)
    return title if len(title) <= room else "…" + title[-(room - 1) :]


def render_plot(title: str, lines: Series, width: int, height: int, kind: str) -> Text:
    """A plotext chart as rich Text."""
    width = max(30, width)
    plt.clf()
    plt.plotsize(width, max(10, height))
    plt.theme("pro")
    plt.title(fit_title(title, width))
    plt.xlabel("round")
    for label, (xs, ys) in lines.items():
        plt.plot(xs, ys, label=label, marker="braille")
    if kind == "emotion":
        plt.ylim(0, 1)
    elif kind in ("fav", "edge"):
        plt.ylim(-1, 1)
    else:
        plt.ylim(0, 10)
    if not lines:
        plt.title(fit_title(f"{title} (choose two different agents)", width))
    return Text.from_ansi(plt.build())


class PlotsScreen(Screen[None]):
    """Choose a series with the selectors; Esc returns to the run."""

    DEFAULT_CSS = """
    PlotsScreen #controls { height: auto; }
    PlotsScreen Select { width: 1fr; margin-right: 1; }
    PlotsScreen #charts { height: 1fr; }
    PlotsScreen .chart { width: 1fr; height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,p", "app.pop_screen", "Back")]

    def __init__(self, sim: Simulation, store: SaveStore) -> None:
        super().__init__()
        self.sim = sim
        self.store = store

    def compose(self) -> ComposeResult:
        names = self.sim.scenario.names
        others = [
            (f"{r.run_id} ({r.rounds_done}/{r.total_rounds})", r.run_id)
            for r in self.store.list_runs()
            if r.ok and r.run_id != self.sim.run_id and r.scenario_id == self.sim.scenario.id
        ]
        with Horizontal(id="controls"):
            yield Select(KINDS, value="emotion", allow_blank=False, id="kind", compact=True)
            yield Select(
                [(n, n) for n in names], value=names[0], allow_blank=False, id="agent", compact=True
            )
            yield Select(
                [(n, n) for n in names], value=names[1], allow_blank=False, id="other", compact=True
            )
            yield Select(
                [("all needs", "*")] + [(need_label(n), n) for n in NEEDS],
                value="*",
                allow_blank=False,
                id="need",
                compact=True,
            )
            yield Select(others, prompt="compare with run…", id="compare", compact=True)
        with Horizontal(id="charts"):
            yield Static(classes="chart", id="left")
            yield Static(classes="chart", id="right")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def on_select_changed(self) -> None:
        self.redraw()

    def _value(self, widget_id: str) -> str:
        select = self.query_one(f"#{widget_id}", Select)
        return "" if select.is_blank() else str(select.value)

    def redraw(self) -> None:
        """Render the chosen series for this run and, if chosen, the comparison run."""
        kind, agent, other, need = (self._value(k) for k in ("kind", "agent", "other", "need"))
        compare = self._value("compare")
        runs: list[tuple[str, list[RoundRecord]]] = [(self.sim.run_id, self.sim.records)]
        right = self.query_one("#right", Static)
        if compare:
            try:
                runs.append((compare, self.store.read_rounds(compare)))
            except SocialsimError as err:
                self.notify(str(err), severity="error")
        right.display = len(runs) > 1
        charts = self.query_one("#charts")
        width = (charts.size.width // len(runs)) - 1
        height = charts.size.height - 1
        for widget_id, (run_id, records) in zip(("left", "right"), runs, strict=False):
            lines = series(records, kind, agent, other, need)
            title = f"{dict((v, k) for k, v in KINDS)[kind]} — {run_id}"
            self.query_one(f"#{widget_id}", Static).update(
                render_plot(title, lines, width, height, kind)
            )
