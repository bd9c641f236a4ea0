"""The run browser: saved runs newest first, one row each (run, rounds, parent, scenario,
mind, created, name, snapshots), the open run marked, a trial's runs folded into one row
(Enter unfolds it); open, branch or delete them, or show the trial of one (t)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static
from textual.worker import get_current_worker

from engine import RunListing, SaveStore, Simulation, SocialsimError

from ..listing import TrialRuns, folded, short_parent, snapshot_names
from ..outside import shown
from .forms import ConfirmForm, TextForm

COLUMNS = ("", "run", "rounds", "parent", "scenario", "mind", "created", "name", "snapshots")
OPEN_MARK = "▶"


def local_time(created: str) -> str:
    """``2026-12-01 10:34`` in the local zone, from the save's UTC ISO time."""
    try:
        return datetime.fromisoformat(created).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return created


def listing_cells(row: RunListing, current: str) -> tuple[Text, ...]:
    """One table row, every name in full; the open run marked ``▶`` and bold, a broken
    entry in red with the reason in place of the details."""
    if not row.ok:
        return (
            Text("✗", style="red"),
            shown(row.run_id, "bold red"),  # any file name in the saves folder
            shown(row.reason, "red"),
            *(Text("") for _ in COLUMNS[3:]),
        )
    is_open = row.run_id == current
    return (
        Text(OPEN_MARK if is_open else "", style="bold"),
        Text(row.run_id, style="bold reverse" if is_open else "bold"),
        Text(f"{row.rounds_done}/{row.total_rounds}", justify="right"),
        Text(short_parent(row), style="dim" if not row.parent else ""),
        Text(row.scenario_id, style="cyan"),
        Text(row.model),
        Text(local_time(row.created), style="dim"),
        Text(row.name, style="italic"),
        Text(snapshot_names(row), style="italic"),
    )


def trial_cells(group: TrialRuns, unfolded: bool) -> tuple[Text, ...]:
    """The row of a trial's folded runs: ``▸`` folded, ``▾`` unfolded."""
    return (
        Text("▾" if unfolded else "▸", style="bold cyan"),
        Text(group.trial, style="bold cyan"),
        Text(f"{len(group.runs)} runs", justify="right"),
        Text("—", style="dim"),
        Text(group.scenario, style="cyan"),
        Text(group.model),
        Text(local_time(group.created), style="dim"),
        Text(f"trial: {group.about()}", style="italic"),
        Text(""),
    )


def describe(row: RunListing | TrialRuns, current: str) -> str:
    """The highlighted run in a sentence (under the table, in case a column is scrolled)."""
    if isinstance(row, TrialRuns):
        return f"trial {row.trial}: {row.about()} (Enter folds or unfolds them, t shows it)"
    if not row.ok:
        return f"{row.run_id}: cannot be opened: {row.reason}"
    text = f"{row.run_id}: {row.title}, round {row.rounds_done} of {row.total_rounds}, {row.model}"
    if row.parent:
        text += f"; branch of {row.parent.run_id} after round {row.parent.round}"
    if row.name:
        text += f"; {row.name!r}"
    if row.snapshots:
        text += f"; snapshots {snapshot_names(row)}"
    if row.trial:
        text += f"; trial {row.trial.trial} (t shows it)"
    return text + (" (open now)" if row.run_id == current else "")


class RunBrowser(ModalScreen[Simulation | None]):
    """Enter opens (resumes) a run, b branches it, d deletes it after confirmation.

    Dismissed with the opened run, or ``None`` when the current one stays open.
    """

    DEFAULT_CSS = """
    RunBrowser { align: center middle; background: $background; }
    RunBrowser > DataTable { width: 100%; height: 1fr; border: thick $primary; }
    RunBrowser > #detail { height: auto; width: 100%; padding: 0 1; }
    RunBrowser > #message { height: auto; width: 100%; color: $error; padding: 0 1; }
    RunBrowser > #message.-done { color: $success; }
    RunBrowser > Static { height: auto; width: 100%; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("home", "first", "First", show=False, priority=True),
        Binding("end", "last", "Last", show=False, priority=True),
        Binding("b", "branch", "Branch"),
        Binding("d", "delete", "Delete"),
        Binding("t", "trial", "Trial"),
    ]

    def __init__(self, store: SaveStore, current: str) -> None:
        super().__init__()
        self.store = store
        self.current = current
        #: By run id (a trial's fold: ``trial:<id>``), in the table's order.
        self.rows: dict[str, RunListing | TrialRuns] = {}
        self.listings: list[RunListing] = []
        #: The trials shown unfolded (the open run's trial starts so).
        self.unfolded: set[str] = set()
        self._said_for: str | None = None  # the row the message under the table is about

    def compose(self) -> ComposeResult:
        yield Static(
            f"Saved runs in {self.store.root.resolve()}, newest first "
            f"({OPEN_MARK} open now · Enter open, or unfold a trial ▸ · b branch · d delete "
            "· t trial · Esc close)",
            id="where",
        )
        # no Footer: the line above names the keys, and a Footer's key widgets were half
        # of the time the browser took to show (~100 ms at 160x48)
        yield DataTable(cursor_type="row", zebra_stripes=True, id="runs")
        yield Label("", id="detail")
        yield Label("", id="message")

    def on_mount(self) -> None:
        self.call_after_refresh(self.reload)  # the browser is drawn before the listing runs
        self.query_one(DataTable).focus()

    def reload(self, select: str | None = None, said: str = "") -> None:
        """Rebuild the table from the saves folder, read on a worker thread (a cold listing
        of large runs takes most of a second); the cursor on ``select`` (default: the open
        run), then ``said`` under it."""
        if not self.rows:
            self.say("Reading the saved runs…", done=True)
        self._list(select, said)

    @work(thread=True, exclusive=True, group="runs-list", exit_on_error=False)
    def _list(self, select: str | None, said: str) -> None:
        """List the runs (a closed browser stops its listing: round files not found sound
        before are read whole, seconds of a large run)."""
        worker = get_current_worker()
        empty = f"No saved runs in {self.store.root.resolve()}."
        cleaned = self.store.clean_leftovers()
        try:
            listings = self.store.list_runs(stop=lambda: worker.is_cancelled)
        except SocialsimError as err:  # the saves folder itself unreadable
            listings, empty = [], str(err)
        if worker.is_cancelled:
            return
        self.app.call_from_thread(self._listed, listings, select, said, empty, cleaned)

    def _listed(
        self,
        listings: list[RunListing],
        select: str | None,
        said: str,
        empty: str,
        cleaned: list[Path],
    ) -> None:
        if not self.is_attached:
            return
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns(*COLUMNS)
        self.listings = listings
        self.unfolded |= {r.trial.trial for r in listings if r.trial and r.run_id == self.current}
        self._fill(select)
        if not self.rows:
            self.say(empty)
        elif cleaned:
            names = ", ".join(p.name for p in cleaned)
            self.say(f"Removed {len(cleaned)} leftover(s) of interrupted writes: {names}")
        else:
            self.say(said, done=True)  # or clear "Reading the saved runs…"

    def _fill(self, select: str | None = None) -> None:
        """The table from the listings read last, trials folded but those unfolded; the
        cursor on ``select`` (default: the open run)."""
        table = self.query_one(DataTable)
        table.clear()
        self.rows = {}
        for row in folded(self.listings, self.unfolded):
            if isinstance(row, TrialRuns):
                key = f"trial:{row.trial}"
                cells = trial_cells(row, row.trial in self.unfolded)
            else:
                key, cells = row.run_id, listing_cells(row, self.current)
                if row.ok and row.trial is not None:  # inside its unfolded trial
                    cells = (cells[0], Text("  ") + cells[1], *cells[2:])
            self.rows[key] = row
            table.add_row(*cells, key=key)
        ids = list(self.rows)
        target = select if select in ids else self.current
        if target in ids:
            table.move_cursor(row=ids.index(target))
        self._describe()

    def _key(self) -> str | None:
        """The highlighted row's key: a run id, or ``trial:<id>`` for a trial's fold."""
        if not self.rows:
            return None
        return list(self.rows)[self.query_one(DataTable).cursor_row]

    def _selected(self) -> RunListing | TrialRuns | None:
        key = self._key()
        return None if key is None else self.rows[key]

    def _selected_run(self) -> RunListing | None:
        row = self._selected()
        return row if isinstance(row, RunListing) else None

    def _describe(self) -> None:
        row = self._selected()
        self.query_one("#detail", Label).update(
            "" if row is None else shown(describe(row, self.current))
        )

    def on_data_table_row_highlighted(self) -> None:
        self._describe()
        if self._key() != self._said_for:
            self.say("")  # a refusal or a result was about another row

    def action_first(self) -> None:
        """The newest run (Home), not the table's first column."""
        self.query_one(DataTable).move_cursor(row=0)

    def action_last(self) -> None:
        """The oldest run (End): the table scrolls down, never sideways."""
        table = self.query_one(DataTable)
        table.move_cursor(row=max(0, table.row_count - 1))

    def say(self, message: str, done: bool = False) -> None:
        """An inline message under the table (``done``: a result, not a refusal)."""
        label = self.query_one("#message", Label)
        label.update(shown(message))
        label.set_class(done, "-done")
        self._said_for = self._key() if message else None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self._selected()
        if isinstance(row, TrialRuns):
            self.unfolded ^= {row.trial}
            self._fill(select=f"trial:{row.trial}")
            return
        if row is None:
            return
        if not row.ok:
            self.say(f"Cannot open {row.run_id}: {row.reason}")
            return
        if row.run_id == self.current:
            self.dismiss(None)
            return
        self.say(f"Opening {row.run_id}…", done=True)
        self._open(row.run_id)

    @work(thread=True, exclusive=True, group="runs-open", exit_on_error=False)
    def _open(self, run_id: str) -> None:
        """Resume ``run_id`` off the UI thread (seconds at hundreds of agents), then open
        it (or say why not)."""
        try:
            sim = Simulation.resume(run_id, self.store)
        except SocialsimError as err:
            self.app.call_from_thread(self.say, str(err))
            return
        self.app.call_from_thread(self._opened, sim)

    def _opened(self, sim: Simulation) -> None:
        if self.is_attached:
            self.dismiss(sim)
        else:  # the browser was closed meanwhile: the run is not opened
            sim.close()

    def action_branch(self) -> None:
        row = self._selected_run()
        if row is None or not row.ok:
            self.say("Choose a readable run to branch.")
            return

        def submit(text: str) -> str | None:
            try:
                at = int(text.strip())
            except ValueError:
                return f"Round must be a number from 0 to {row.rounds_done}."
            if not 0 <= at <= row.rounds_done:
                return f"Round must be a number from 0 to {row.rounds_done}."
            self.say(f"Branching {row.run_id} at round {at}…", done=True)
            self._branch(row.run_id, at)
            return None

        self.app.push_screen(
            TextForm(
                f"Branch {row.run_id}",
                submit,
                default=str(row.rounds_done),
                hint=f"Fork after which round? (0..{row.rounds_done})",
            )
        )

    @work(thread=True, group="runs-branch", exit_on_error=False)
    def _branch(self, run_id: str, at: int) -> None:
        """Branch ``run_id`` at round ``at`` off the UI thread (seconds at hundreds of
        agents: the fork round's state is rebuilt), then list the branch (or say why not)."""
        try:
            child = self.store.branch(run_id, at)
        except SocialsimError as err:
            self.app.call_from_thread(self.say, str(err))
            return
        self.app.call_from_thread(self._branched, child.run_id)

    def _branched(self, run_id: str) -> None:
        if not self.is_attached:  # the browser was closed meanwhile: listed next time
            return
        self.reload(select=run_id, said=f"Created {run_id}; Enter opens it.")

    def action_trial(self) -> None:
        """The trial the highlighted run belongs to; a run opened there is opened here."""
        from .trial import TrialScreen

        row = self._selected()
        trial = (
            row.trial
            if isinstance(row, TrialRuns)
            else row.trial.trial
            if row and row.trial
            else None
        )
        if trial is None:
            self.say("This run belongs to no trial (socialsim trial makes them).")
            return
        try:
            screen = TrialScreen(self.store, trial, self.current)
        except SocialsimError as err:
            self.say(str(err))
            return

        def opened(sim: Simulation | None) -> None:
            if sim is not None:
                self.dismiss(sim)

        self.app.push_screen(screen, opened)

    def action_delete(self) -> None:
        row = self._selected_run()
        if row is None:
            self.say("Choose a run to delete (unfold a trial with Enter to choose one of its).")
            return
        if row.run_id == self.current:
            self.say("This run is open; open another run before deleting it.")
            return

        try:
            damage = self.store.damage(row.run_id)
        except SocialsimError as err:
            self.say(str(err))
            return

        def submit() -> str | None:
            try:
                self.store.delete(row.run_id, damaged=damage is not None)
            except SocialsimError as err:
                return str(err)
            self.reload(said=f"Deleted {row.run_id}.")
            return None

        question = f"Delete run {row.run_id}? Its branches keep their copies."
        if damage is not None:
            question = f"Delete damaged run {row.run_id}? {damage}."
        self.app.push_screen(ConfirmForm(question, submit))
