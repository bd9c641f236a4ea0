"""The diff view: two runs side by side (a branch and its parent, or two arms of a trial).

Where they part, the favorability difference as a heatmap (exact values under the cursor),
each agent's emotion and need differences, and both transcripts of a round; ``[`` and
``]`` move the round, ``g`` goes to the first divergence, ``o`` compares with another run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, OptionList, Static
from textual.widgets.option_list import Option

from engine import RunListing, RunMeta, SaveStore, SocialsimError
from engine.studies.diff import RoundDiff, RunComparison

from ..background import in_background
from ..diff_text import (
    LEGEND,
    TALK_LEGEND,
    divergence_text,
    edge_cell,
    edge_line,
    emotion_cells,
    needs_text,
    only_lines,
    profile_line,
    side_text,
    transcript_text,
)


def run_label(row: RunListing) -> Text:
    """One run in the picker: id, scenario, progress, fork round, name."""
    label = Text(row.run_id, style="bold")
    label.append(f"  {row.scenario_id}  {row.rounds_done}/{row.total_rounds}", style="cyan")
    if row.parent:
        label.append(f"  from {row.parent.run_id}@{row.parent.round}", style="dim")
    if row.name:
        label.append(f"  {row.name}", style="italic")
    return label


#: The picker's option that shows the runs of other scenarios.
OTHERS = "\0others"


def other_runs(
    store: SaveStore, current: str, scenario_id: str
) -> tuple[list[RunListing], list[RunListing]]:
    """Readable runs to compare with, newest first: those of the same scenario, and those
    of other scenarios (offered only behind a choice: their agents match by name alone)."""
    rows = [r for r in store.list_runs() if r.ok and r.run_id != current]
    rows.sort(key=lambda r: r.created, reverse=True)
    return (
        [r for r in rows if r.scenario_id == scenario_id],
        [r for r in rows if r.scenario_id != scenario_id],
    )


class RunPicker(ModalScreen[str | None]):
    """Choose the run to compare with (Enter), or Esc. Runs of other scenarios are one
    choice away, with a warning."""

    DEFAULT_CSS = """
    RunPicker { align: center middle; }
    RunPicker > Vertical { width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1; }
    RunPicker .title { text-style: bold; }
    RunPicker OptionList { height: auto; max-height: 16; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(
        self, rows: list[RunListing], current: str, others: list[RunListing] | None = None
    ) -> None:
        super().__init__()
        self.rows = rows
        self.current = current
        self.others = others or []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                f"Compare {self.current} with… (Enter chooses, Esc cancels)", classes="title"
            )
            if not self.rows:
                yield Static("No other run of this scenario.", id="picker-note")
            else:
                yield Static("Runs of the same scenario:", id="picker-note")
            options = [Option(run_label(r), id=r.run_id) for r in self.rows]
            if self.others:
                options.append(
                    Option(
                        Text(
                            f"other scenarios… ({len(self.others)} runs; agents are matched "
                            "by name)",
                            style="italic",
                        ),
                        id=OTHERS,
                    )
                )
            yield OptionList(*options)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id != OTHERS:
            self.dismiss(event.option.id)
            return
        self.query_one("#picker-note", Static).update(
            Text(
                "Runs of other scenarios: agents are matched by id (their name), and a "
                "name shared by two scenarios may be two different people.",
                style="bold yellow",
            )
        )
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(run_label(r), id=r.run_id) for r in self.others])
        options.highlighted = 0


#: Below this width the agents table shows Δ S alone and wraps the needs.
NARROW_AGENTS = 50


class DiffScreen(Screen[None]):
    """A comparison of run A (the reference) and run B; every difference is B − A."""

    DEFAULT_CSS = """
    DiffScreen #summary { height: auto; padding: 0 1; }
    DiffScreen #round { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    DiffScreen #top { height: 1fr; }
    DiffScreen #heatmap { height: 1fr; width: auto; max-width: 60%; margin-right: 1; }
    DiffScreen #agents { width: 1fr; height: 1fr; }
    DiffScreen #cell, DiffScreen #legend { height: auto; padding: 0 1; }
    DiffScreen #talk { height: 1fr; }
    DiffScreen #talk > VerticalScroll { width: 1fr; border: round $primary-darken-1; }
    DiffScreen #talk > VerticalScroll:focus { border: round $accent; }
    """
    BINDINGS = [
        Binding("escape,q,d", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "move(-1)", "Earlier"),
        Binding("right_square_bracket", "move(1)", "Later"),
        Binding("g", "first", "First diff"),
        Binding("o", "other", "Other run"),
    ]

    def __init__(self, comparison: RunComparison, first: RoundDiff, current: str) -> None:
        super().__init__()
        self.comparison = comparison
        self.current = current
        self.diff = first
        self._narrow = False

    @property
    def round(self) -> int:
        """The round shown."""
        return self.diff.round

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        yield Static(id="round")
        with Horizontal(id="top"):
            yield DataTable(id="heatmap", cursor_type="cell", fixed_columns=1)
            yield DataTable(id="agents", cursor_type="row", zebra_stripes=True)
        yield Static(id="cell")
        yield Static(Text(LEGEND, style="dim"), id="legend")
        with Horizontal(id="talk"):
            yield VerticalScroll(Static(id="talk-a-text"), id="talk-a")
            yield VerticalScroll(Static(id="talk-b-text"), id="talk-b")
        yield Footer()

    def on_mount(self) -> None:
        self._agent_columns(narrow=False)
        self.load(self.comparison, self.diff)

    def load(self, comparison: RunComparison, rd: RoundDiff) -> None:
        """Show a (new) comparison, starting at the round ``rd``."""
        self.comparison = comparison
        heatmap = self.query_one("#heatmap", DataTable)
        heatmap.clear(columns=True)
        heatmap.add_column("from \\ to", key="_from_")
        for name in comparison.agents:
            heatmap.add_column(name, key=name)
        for name in comparison.agents:
            heatmap.add_row(Text(name, style="bold"), *("" for _ in comparison.agents), key=name)
        self.query_one("#talk-a").border_title = f"A {comparison.run_a}"
        self.query_one("#talk-b").border_title = f"B {comparison.run_b}"
        self._summary(None)
        self._fit_top()
        self.show(rd)
        self._profile(comparison)
        if largest := rd.largest():
            (source, target), _ = largest  # start on the edge that differs most
            names = list(comparison.agents)
            heatmap.move_cursor(row=names.index(source), column=names.index(target) + 1)

    def on_resize(self) -> None:
        self._fit_top()
        self.call_after_refresh(self.show, self.diff)  # the needs column fits the new width

    def _agent_columns(self, narrow: bool) -> None:
        """The agents table's columns: every one, or (``narrow``) Δ S alone of the emotion,
        the needs column given the rest of the width to wrap in."""
        agents = self.query_one("#agents", DataTable)
        self._narrow = narrow
        agents.clear(columns=True)
        if not narrow:
            agents.add_columns("agent", "S A", "S B", "Δ S", "needs Δ")
            return
        agents.add_columns("agent", "Δ S")
        width = 4 + max((len(n) for n in self.comparison.agents), default=5) + 5
        agents.add_column("needs Δ", width=max(12, agents.size.width - width - 2))

    def _fit_top(self) -> None:
        """The matrix and agents get the rows they need, up to half the screen; the
        transcripts get the rest."""
        rows = len(self.comparison.agents) + 2  # header and a horizontal scroll bar
        half = max(5, (self.size.height - 8) // 2)
        self.query_one("#top").styles.height = min(rows, half)

    def _summary(self, profile: list[tuple[int, float, float]] | None) -> None:
        """Who A and B are, where they part; the profile once read (None: still reading)."""
        c = self.comparison
        reading = Text("|Δ fav| by round: reading…", style="dim")
        same = c.meta_a.scenario.id == c.meta_b.scenario.id  # else name both scenarios
        lines = [
            Text.assemble(
                side_text("A", c.meta_a, c.done_a, detail=not same),
                " ⇄ ",
                side_text("B", c.meta_b, c.done_b, detail=not same),
            ),
            Text.assemble(
                (c.lineage(), "dim"),
                " · ",
                divergence_text(c),
                " · ",
                reading if profile is None else profile_line(profile),
            ),
            *only_lines(c),
        ]
        if (warning := c.scenario_warning()) is not None:
            lines.append(Text(warning, style="bold yellow"))
        self.query_one("#summary", Static).update(Group(*lines))

    @work(thread=True, exclusive=True, group="diff-profile", exit_on_error=False)
    def _profile(self, comparison: RunComparison) -> None:
        """Mean |Δ fav| per round, read off the UI thread (one round of each run at a time)."""
        try:
            profile = list(comparison.profile())
        except SocialsimError as err:
            self.app.call_from_thread(self.notify, str(err), severity="error")
            return
        if comparison is self.comparison:
            self.app.call_from_thread(self._summary, profile)

    @work(thread=True, exclusive=True, group="diff-round", exit_on_error=False)
    def show_round(self, n: int) -> None:
        """Read round ``n`` of both runs (off the UI thread) and show its differences."""
        comparison = self.comparison
        try:
            rd = comparison.round_diff(n)
        except SocialsimError as err:
            self.app.call_from_thread(self.notify, str(err), severity="error")
            return
        if comparison is self.comparison:
            self.app.call_from_thread(self.show, rd)

    def show(self, rd: RoundDiff) -> None:
        """Show one round's differences."""
        self.diff = rd
        n, c = rd.round, self.comparison
        where = "first divergence" if n == c.first_divergence else ""
        if c.first_divergence is not None and n < c.first_divergence:
            where = "before the runs part"
        head = Text.assemble(f"Round {n}", (f" of 0..{c.last_common}", "dim"), "  Δ = B − A")
        if where:
            head.append(f"  ({where})", style="italic")
        self.query_one("#round", Static).update(head)
        heatmap = self.query_one("#heatmap", DataTable)
        for i in rd.agents:
            for j in rd.agents:
                cell = Text("—", style="dim") if i == j else edge_cell(rd.edges[(i, j)])
                heatmap.update_cell(i, j, cell)
        heatmap.refresh()
        self._show_cell(heatmap.cursor_coordinate)
        agents = self.query_one("#agents", DataTable)
        agents.clear()
        # Narrow (80 columns): S in A and B give way, and the needs wrap in what is left.
        narrow = 0 < agents.size.width < NARROW_AGENTS
        if narrow != self._narrow:
            self._agent_columns(narrow)
        for name, person in rd.people.items():
            emotion = emotion_cells(person)
            cells = (
                Text(name, style="bold"),
                *(emotion[2:] if narrow else emotion),
                needs_text(person, 2, short=narrow),
            )
            agents.add_row(*cells, height=None if narrow else 1)
        for side, mine, theirs in (
            ("a", rd.transcript_a, rd.transcript_b),
            ("b", rd.transcript_b, rd.transcript_a),
        ):
            lines = transcript_text(mine, theirs) or [Text("(nothing happened)", style="dim")]
            self.query_one(f"#talk-{side}-text", Static).update(Group(*lines))
        self.query_one("#talk").border_subtitle = TALK_LEGEND

    def _show_cell(self, coordinate: Coordinate) -> None:
        rd = self.diff
        cell = self.query_one("#cell", Static)
        if coordinate.column == 0:
            cell.update(Text("move the cursor onto a cell for its exact values", style="dim"))
            return
        source = rd.agents[coordinate.row]
        target = rd.agents[coordinate.column - 1]
        if source == target:
            cell.update(Text(f"{source}: no edge to itself", style="dim"))
        else:
            cell.update(edge_line(source, target, rd.edges[(source, target)]))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        if event.data_table.id == "heatmap":
            self._show_cell(event.coordinate)

    def action_move(self, step: int) -> None:
        """Show the previous or next round both runs have."""
        n = self.round + step
        if 0 <= n <= self.comparison.last_common:
            self.show_round(n)
        else:
            self.notify(f"Both runs have rounds 0..{self.comparison.last_common}.")

    def action_first(self) -> None:
        """Go to the first round where the runs part."""
        first = self.comparison.first_divergence
        if first is None:
            self.notify("The runs do not part: identical over every round both have.")
        else:
            self.show_round(first)

    def action_other(self) -> None:
        """Compare the current run with another saved run (the saves listed off the UI
        thread)."""
        store, scenario = self.comparison.store, self.comparison.meta_b.scenario.id

        def chosen(other: str) -> None:
            compare(self, store, other, self.current, self.load)

        in_background(
            self,
            "Listing the saved runs",
            partial(other_runs, store, self.current, scenario),
            lambda found: pick_run(self, found[0], self.current, chosen, found[1]),
            "diff-find",
        )


def pick_run(
    screen: Screen,
    rows: list[RunListing],
    current: str,
    chosen: Callable[[str], None],
    others: list[RunListing] | None = None,
) -> None:
    """Ask which run to compare with (``others``: runs of other scenarios, behind a
    choice); ``chosen`` gets its id (nothing when cancelled)."""
    if not rows and not others:
        screen.notify("No other saved run to compare with: branch this one first (b).")
        return

    def done(run_id: str | None) -> None:
        if run_id:
            chosen(run_id)

    screen.app.push_screen(RunPicker(rows, current, others), done)


def compare(
    screen: Screen,
    store: SaveStore,
    other: str,
    current: str,
    done: Callable[[RunComparison, RoundDiff], object],
) -> None:
    """Compare ``other`` (A) with ``current`` (B) off the UI thread, a notice saying so at
    once, then hand the comparison and its first round to ``done``; a problem is a
    notification."""

    def work() -> tuple[RunComparison, RoundDiff]:
        comparison = RunComparison(store, other, current)
        return comparison, comparison.round_diff(comparison.default_round())

    in_background(
        screen, f"Comparing {current} with {other}", work, lambda got: done(*got), "diff-open"
    )


def _partner(store: SaveStore, meta: RunMeta) -> str | tuple[list[RunListing], list[RunListing]]:
    """The run ``meta``'s run is compared with: its parent while it is saved, else the
    runs to choose from (of its scenario, of others)."""
    if meta.parent is not None and store.exists_quietly(meta.parent.run_id):
        return meta.parent.run_id
    return other_runs(store, meta.run_id, meta.scenario.id)


def open_diff(screen: Screen, store: SaveStore, meta: RunMeta) -> None:
    """Compare the open run (``meta``, as held: its run.json is not read again) with its
    parent, or with a run chosen from the list; the saves are read off the UI thread (a
    listing takes seconds at hundreds of agents), a notice saying so."""
    current = meta.run_id

    def show(other: str) -> None:
        compare(
            screen,
            store,
            other,
            current,
            lambda comparison, first: screen.app.push_screen(
                DiffScreen(comparison, first, current)
            ),
        )

    def found(partner: str | tuple[list[RunListing], list[RunListing]]) -> None:
        if isinstance(partner, str):
            show(partner)
        else:
            pick_run(screen, partner[0], current, show, partner[1])

    in_background(
        screen,
        f"Finding the run to compare {current} with",
        partial(_partner, store, meta),
        found,
        "diff-find",
    )
