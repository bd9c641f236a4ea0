"""Plots (textual-plotext, redrawn at every size): emotion per agent, mean favorability,
one edge both ways, one agent's needs; optionally the same series of a second run of the
scenario (a branch, another arm) beside it on the same axes.

The legend is a list beside the charts, never drawn over the data: each series with its
colour and marker, ticked to show it (Space), so 13 needs or 30 agents stay readable.

The plots follow a run that is playing: each round that ends is added to the series (read
once from the run's index and round files, no state rebuilt: :mod:`tui.series`) and the
charts are redrawn at most every :data:`LIVE_EVERY` seconds. Every read of rounds (this run's,
the compared run's) is on a worker thread; the charts say ``reading the rounds…`` meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Select, SelectionList, Static
from textual_plotext import PlotextPlot

from engine import SaveStore, Simulation, SocialsimError
from engine.core.needs import NEEDS, need_label

from .. import messages
from ..event_bridge import EventBridge
from ..series import Lines, RunSeries, series_read
from .forms import TickList

KINDS = (
    ("emotion per agent", "emotion"),
    ("mean favorability", "fav"),
    ("one edge, both ways", "edge"),
    ("needs of one agent", "needs"),
)
TITLES = {value: label for label, value in KINDS}
Y_RANGE = {"emotion": (0.0, 1.0), "fav": (-1.0, 1.0), "edge": (-1.0, 1.0), "needs": (0.0, 10.0)}
#: Line colours (256-colour indices), chosen to differ from each other on dark and light.
PALETTE = (39, 208, 40, 199, 226, 129, 51, 160, 118, 214, 63, 87, 203, 34, 177, 250)
#: Markers drawn instead of colour when colour is off (NO_COLOR), one per series.
MARKERS = "ox+*#@%&=~^$sdvwz"
STACK_BELOW = 120  # compare: charts one above the other below this width
#: Seconds between redraws while rounds keep ending (a fast offline run ends several a second).
LIVE_EVERY = 0.5
READING = "reading the rounds…"


def integer_ticks(last: int, width: int) -> list[int]:
    """Whole rounds 0..``last`` spaced so their labels fit ``width`` columns."""
    room = max(2, width // max(4, len(str(last)) + 3))
    step = max(1, math.ceil(last / room))
    return list(range(0, last + 1, step))


def fit_title(what: str, run_id: str, width: int) -> str:
    """``what — run id``, or the run id alone where that is too wide for the chart (plotext
    drops a title wider than the chart), or the end of the run id."""
    room = max(10, width - 12)
    for title in (f"{what} — {run_id}", run_id):
        if len(title) <= room:
            return title
    return "…" + run_id[-(room - 1) :]


class Chart(PlotextPlot):
    """One run's plot, laid out for the size it has each time it is drawn."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run_id = ""
        self.note = ""
        self.kind = "emotion"
        self.last = 1
        self.lines: list[tuple[Sequence[int], Sequence[float], int, str]] = []

    def show(
        self,
        run_id: str,
        kind: str,
        last: int,
        lines: list[tuple[Sequence[int], Sequence[float], int, str]],
        note: str = "",
    ) -> None:
        """Plot ``lines`` (xs, ys, colour, marker) of run ``run_id``, x from 0 to ``last``;
        ``note`` stands in the title when there is nothing to plot."""
        self.run_id, self.kind, self.last, self.lines = run_id, kind, max(1, last), lines
        self.note = note
        self.refresh()

    def render(self) -> RenderResult:
        plt = self.plt
        plt.clear_figure()
        width = self.size.width
        plt.title(self.note or fit_title(TITLES[self.kind], self.run_id, width))
        plt.xlabel("round")
        ticks = integer_ticks(self.last, width - 8)
        plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
        plt.xlim(0, self.last)
        plt.ylim(*Y_RANGE[self.kind])
        for xs, ys, colour, marker in self.lines:
            plt.plot(list(xs), list(ys), marker=marker, color=colour)
        return super().render()


class Legend(TickList):
    """The series of the plot, each with its colour swatch (or marker); ticked ones are
    drawn. Space or Enter ticks."""

    BINDINGS = [Binding("enter", "select", "Show/hide", show=False)]


#: The compare selector's prompt while the saved runs are listed.
LISTING = "compare: listing the saved runs…"


class PlotsScreen(Screen[None]):
    """Choose a series with the selectors and the legend; Esc returns to the run."""

    DEFAULT_CSS = """
    PlotsScreen #controls, PlotsScreen #compare-row { height: auto; }
    PlotsScreen #controls Select { width: 1fr; margin-right: 1; }
    PlotsScreen #compare { width: 1fr; }
    PlotsScreen #body { height: 1fr; }
    PlotsScreen #charts { width: 1fr; height: 1fr; }
    PlotsScreen #charts.-stacked { layout: vertical; }
    PlotsScreen Chart { width: 1fr; height: 1fr; }
    PlotsScreen #legend-box { width: auto; max-width: 40%; height: 1fr; }
    PlotsScreen #legend-title { height: 1; padding: 0 1; text-style: bold; }
    PlotsScreen Legend { width: auto; height: 1fr; border: none; padding: 0; }
    """
    BINDINGS = [
        Binding("escape,q,p", "app.pop_screen", "Back"),
        Binding("a", "show_all", "All/none"),
    ]

    def __init__(self, sim: Simulation, store: SaveStore) -> None:
        super().__init__()
        self.sim = sim
        self.store = store
        self._legend_for: tuple[str, ...] = ()
        self._bridge: EventBridge | None = None
        self._stale = False  # rounds ended since the rounds were read
        # (run id, its series, how many rounds of it were read): this run, then the compared
        # one; filled on a worker thread (reading rounds takes seconds at hundreds of agents)
        self._read_runs: list[tuple[str, RunSeries, int]] = []

    def compose(self) -> ComposeResult:
        names = self.sim.scenario.names
        agents = [(n, n) for n in names]
        with Horizontal(id="controls"):
            yield Select(KINDS, value="emotion", allow_blank=False, id="kind", compact=True)
            yield Select(agents, value=names[0], allow_blank=False, id="agent", compact=True)
            yield Select(agents, value=names[1], allow_blank=False, id="other", compact=True)
            yield Select(
                [("all needs", "*")] + [(need_label(n), n) for n in NEEDS],
                value="*",
                allow_blank=False,
                id="need",
                compact=True,
            )
        with Horizontal(id="compare-row"):
            yield Select([], prompt=LISTING, id="compare", compact=True)
        with Horizontal(id="body"):
            with Horizontal(id="charts"):
                yield Chart(id="left")
                yield Chart(id="right")
            with Vertical(id="legend-box"):
                yield Static("series", id="legend-title")
                yield Legend(id="legend")
        yield Footer()

    def on_mount(self) -> None:
        self._bridge = EventBridge(self.sim, self.post_message)
        self.set_interval(LIVE_EVERY, self._read_if_stale)
        for chart in self.query(Chart):
            chart.show(self.sim.run_id, "emotion", 1, [], READING)
        self._read("")
        self._list_others()

    @work(thread=True, group="plots-list", exit_on_error=False)
    def _list_others(self) -> None:
        """The saved runs of this scenario to compare with, listed off the UI thread (every
        run's head and index: most of a second in a large saves folder)."""
        sim = self.sim
        try:
            listings = self.store.list_runs()
        except SocialsimError as err:
            self.app.call_from_thread(self.notify, str(err), severity="error")
            listings = []
        others = [
            (f"{r.run_id} ({r.rounds_done}/{r.total_rounds})", r.run_id)
            for r in listings
            if r.ok and r.run_id != sim.run_id and r.scenario_id == sim.scenario.id
        ]
        self.app.call_from_thread(self._listed, others)

    def _listed(self, others: list[tuple[str, str]]) -> None:
        if not self.is_attached:  # left before the listing ended
            return
        select = self.query_one("#compare", Select)
        select.prompt = "compare with run…" if others else "compare: no other run of this scenario"
        select.set_options(others)

    @work(thread=True, exclusive=True, group="plots-read", exit_on_error=False)
    def _read(self, compare: str) -> None:
        """Read the rounds of this run and of run ``compare`` (if any) not read yet into
        their series, off the UI thread (the keys stay answered), then draw."""
        sim, root = self.sim, str(self.store.root)
        names = sim.scenario.names
        try:
            runs = [series_read((root, sim.run_id), names, sim.history)]
        except SocialsimError as err:  # a damaged round: said, nothing drawn
            self.app.call_from_thread(self.notify, str(err), severity="error")
            return
        if compare:
            try:
                runs.append(series_read((root, compare), names, self.store.history(compare)))
            except SocialsimError as err:
                self.app.call_from_thread(self.notify, str(err), severity="error")
        self.app.call_from_thread(self._read_done, runs)

    def _read_done(self, runs: list[tuple[str, RunSeries, int]]) -> None:
        self._read_runs = runs
        self.redraw()

    def on_unmount(self) -> None:
        if self._bridge is not None:
            self._bridge.close()

    @on(messages.RoundEnded)
    def _round_ended(self) -> None:
        self._stale = True

    def _read_if_stale(self) -> None:
        if self._stale:
            self._stale = False
            self._read(self._value("compare"))

    def on_resize(self) -> None:
        self.redraw()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "compare":  # its chart says "reading the rounds…" meanwhile
            self._read(self._value("compare"))
        self.redraw()

    def on_selection_list_selected_changed(self) -> None:
        self.redraw()

    def action_show_all(self) -> None:
        """Tick every series, or none if all are ticked."""
        legend = self.query_one(Legend)
        if len(legend.selected) == legend.option_count:
            legend.deselect_all()
        else:
            legend.select_all()

    def _value(self, widget_id: str) -> str:
        select = self.query_one(f"#{widget_id}", Select)
        return "" if select.is_blank() else str(select.value)

    def choice(self) -> tuple[str, str, str, str]:
        """(kind, agent, other, need) as chosen."""
        kind, agent, other, need = (self._value(k) for k in ("kind", "agent", "other", "need"))
        return kind, agent, other, need

    def redraw(self) -> None:
        """Plot the chosen series for this run and, if chosen, the comparison run, on the
        same axes: x from round 0 to the later run's last round in whole rounds (from the
        rounds read so far: this reads none)."""
        if not self._read_runs:  # drawn when the rounds are read
            return
        kind, agent, other, need = self.choice()
        self.query_one("#agent").display = kind in ("edge", "needs")
        self.query_one("#other").display = kind == "edge"
        self.query_one("#need").display = kind == "needs"
        compare = self._value("compare")
        chosen = [self.sim.run_id] + ([compare] if compare else [])
        read = {run_id: (series, n) for run_id, series, n in self._read_runs}
        plotted: list[tuple[str, Lines | None]] = []
        for run_id in chosen:
            if run_id in read:
                series, n = read[run_id]
                whole = series.lines(kind, agent, other, need)
                plotted.append((run_id, {k: (xs[:n], ys[:n]) for k, (xs, ys) in whole.items()}))
            else:
                plotted.append((run_id, None))  # being read
        shown = self._legend(list(plotted[0][1] or ()))
        last = max(
            (int(xs[-1]) for _, lines in plotted for xs, _ in (lines or {}).values() if xs),
            default=1,
        )
        charts = self.query_one("#charts")
        charts.set_class(len(plotted) > 1 and self.size.width < STACK_BELOW, "-stacked")
        self.query_one("#right", Chart).display = len(plotted) > 1
        for chart, (run_id, lines) in zip(self.query(Chart), plotted, strict=False):
            if lines is None:
                chart.show(run_id, kind, last, [], READING)
                continue
            drawn = [
                (xs, ys, *self._style(k))
                for k, (label, (xs, ys)) in enumerate(lines.items())
                if label in shown and len(xs)
            ]
            note = "" if lines else "choose two different agents"
            chart.show(run_id, kind, last, drawn, note)

    def _style(self, k: int) -> tuple[int, str]:
        """(colour, marker) of the k-th series."""
        marker = MARKERS[k % len(MARKERS)] if self.app.no_color else "braille"
        return PALETTE[k % len(PALETTE)], marker

    def _legend(self, labels: list[str]) -> set[str]:
        """Fill the legend for these series (keeping what was ticked while the series are
        the same); returns the ticked labels."""
        legend = self.query_one(Legend)
        if tuple(labels) != self._legend_for:
            self._legend_for = tuple(labels)
            with self.prevent(SelectionList.SelectedChanged):
                legend.clear_options()
                for k, label in enumerate(labels):
                    colour, marker = self._style(k)
                    swatch = "━━" if marker == "braille" else f" {marker}"
                    prompt = Text.assemble((swatch, f"bold color({colour})"), " ", label)
                    legend.add_option((prompt, label, True))
                legend.highlighted = 0 if labels else None
        return set(legend.selected)
