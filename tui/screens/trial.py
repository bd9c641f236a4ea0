"""A trial (``socialsim trial``): its arms with one outcome each — the mean over the complete
seeds and the paired difference from the reference arm, with 95% intervals — and the runs of
the highlighted arm. Enter opens a run; ``d`` compares it with the reference arm's run of
the same seed (the diff view); ``m`` makes the highlighted arm the reference; ``[`` and ``]``
choose the outcome; ``r`` plays the runs still missing, with a progress line (``s`` stops
after the runs in flight); ``w`` writes the trial's HTML report."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from functools import partial

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from engine import SaveStore, Simulation
from engine.studies.experiments.stats import Estimate, estimate_text
from engine.studies.experiments.trial import (
    ArmSummary,
    TrialResult,
    TrialSpec,
    collect,
    load_spec,
    run_trial,
    summarize,
)

from ..background import in_background
from ..outside import shown
from .diff import DiffScreen, compare


def outcome_name(metric: str, agent: str) -> str:
    return f"{metric}:{agent}" if agent else metric


class TrialScreen(Screen[Simulation | None]):
    """One trial; dismissed with the run opened from it, or ``None``."""

    DEFAULT_CSS = """
    TrialScreen #title { height: auto; padding: 0 1; text-style: bold; }
    TrialScreen #outcome { height: auto; padding: 0 1; background: $boost; }
    TrialScreen #arms { height: auto; max-height: 50%; }
    TrialScreen #runs { height: 1fr; }
    TrialScreen #progress { height: 1; padding: 0 1; color: $accent; }
    """
    BINDINGS = [
        Binding("escape,q", "dismiss", "Back"),
        Binding("d", "diff", "Diff"),
        Binding("m", "mark", "Reference"),
        Binding("left_square_bracket", "outcome(-1)", "Outcome", key_display="[ ]"),
        Binding("right_square_bracket", "outcome(1)", "Outcome", show=False),
        Binding("r", "play", "Play missing"),
        Binding("s", "stop", "Stop"),
        Binding("w", "report", "Report", show=False),
    ]

    def __init__(self, store: SaveStore, trial_id: str, current: str = "") -> None:
        super().__init__()
        self.store = store
        self.trial_id = trial_id
        self.current = current
        self.spec: TrialSpec = load_spec(store, trial_id)
        self.result = TrialResult(self.spec)
        self.missing = 0
        self.summaries: list[ArmSummary] = []
        self.outcomes: list[tuple[str, str]] = []
        self.chosen = 0
        self.reference = self.spec.control.name
        self.stopping: threading.Event | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(id="outcome")
        yield DataTable(id="arms", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static(id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#arms", DataTable).add_columns(
            "arm", "what", "finished", "mean [95% CI]", "Δ [95% CI]"
        )
        self.query_one("#runs", DataTable).add_columns("seed", "run", "status")
        self.reload()

    # -- loading ----------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the trial's finished runs and summarise them (in a thread), saying so
        meanwhile."""
        spec = self.spec
        runs = len(spec.seeds) * (len(spec.arms) + 1)
        self.query_one("#title", Static).update(
            f"{spec.trial_id}: reading its {runs} runs and bootstrapping the intervals…"
        )
        self.query_one("#arms", DataTable).loading = True
        self.load()

    @work(thread=True, exclusive=True, group="trial-load", exit_on_error=False)
    def load(self) -> None:
        result, prefixes, arms = collect(self.store, self.spec)
        summaries = summarize(result)
        self.app.call_from_thread(self.show, result, len(prefixes) + len(arms), summaries)

    def show(self, result: TrialResult, missing: int, summaries: list[ArmSummary]) -> None:
        self.result, self.missing, self.summaries = result, missing, summaries
        self.query_one("#arms", DataTable).loading = False
        keys = list(dict.fromkeys((s.metric, s.agent) for s in summaries))
        if keys and not self.outcomes:  # first load: the first survey score, else emotion
            surveys = [k for k in keys if k[0].startswith("survey.")]
            first = surveys[0] if surveys else ("mean_emotion", "")
            self.chosen = keys.index(first) if first in keys else 0
        self.outcomes = keys
        spec = self.spec
        done = len(result.complete_seeds)
        self.query_one("#title", Static).update(
            f"{spec.trial_id}: {spec.scenario.title}, {len(spec.seeds)} seeds × "
            f"{len(spec.arms)} arms, fork at round {spec.fork_at} of {spec.rounds}, "
            f"{spec.mind.model}; {done} seed{'s' * (done != 1)} complete"
            + (f", {missing} run{'s' * (missing != 1)} missing (r plays them)" if missing else "")
        )
        self.fill_arms()

    def fill_arms(self) -> None:
        table = self.query_one("#arms", DataTable)
        row = table.cursor_row
        table.clear()
        outcome = self.outcomes[self.chosen] if self.outcomes else None
        name = outcome_name(*outcome) if outcome else "no finished seed yet"
        self.query_one("#outcome", Static).update(
            f"outcome {name} after round {self.spec.rounds} ([ ] another) · reference "
            f"{self.reference} (m) · 95% percentile bootstrap, seed-level, paired"
        )
        by_arm = {s.arm: s for s in self.summaries if outcome == (s.metric, s.agent)}
        means = self.means(outcome)
        for arm in self.spec.arms:
            finished = sum((seed, arm.name) in self.result.rows for seed in self.spec.seeds)
            summary = by_arm.get(arm.name)
            diff = self.versus(arm.name, means)
            label = Text(arm.name, style="bold" if arm.name == self.reference else "")
            table.add_row(
                label,
                arm.describe(),
                f"{finished}/{len(self.spec.seeds)}",
                estimate_text(summary.estimate if summary else None),
                estimate_text(diff, signed=True),
                key=arm.name,
            )
        table.move_cursor(row=min(row, len(self.spec.arms) - 1))
        self.fill_runs()

    def means(self, outcome: tuple[str, str] | None) -> dict[str, list[float]]:
        """The chosen outcome's final values per arm over the complete seeds."""
        if outcome is None:
            return {}
        from engine.studies.experiments.trial import final_values

        return final_values(self.result).get(outcome, {})

    def versus(self, arm: str, values: dict[str, list[float]]) -> Estimate | None:
        """The paired difference of ``arm`` from the reference arm (none for itself)."""
        if arm == self.reference or arm not in values or self.reference not in values:
            return None
        import numpy as np

        from engine.studies.experiments.stats import paired_differences

        (diff,) = paired_differences(
            np.array([values[arm]]), np.array([values[self.reference]]), self.spec.resamples
        )
        return diff

    def selected_arm(self) -> str:
        table = self.query_one("#arms", DataTable)
        return self.spec.arms[min(table.cursor_row, len(self.spec.arms) - 1)].name

    def fill_runs(self) -> None:
        arm = next(a for a in self.spec.arms if a.name == self.selected_arm())
        table = self.query_one("#runs", DataTable)
        table.clear()
        for seed in self.spec.seeds:
            run_id = self.spec.arm_id(seed, arm)
            state = "finished" if (seed, arm.name) in self.result.rows else "missing"
            if state == "missing" and self.store.exists_quietly(run_id):
                state = "unfinished"
            table.add_row(str(seed), run_id, state, key=run_id)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "arms":
            self.fill_runs()

    # -- actions ------------------------------------------------------------------------------

    def selected_run(self) -> tuple[int, str] | None:
        """The (seed, run id) under the runs table's cursor."""
        table = self.query_one("#runs", DataTable)
        if not table.row_count:
            return None
        seed = self.spec.seeds[table.cursor_row]
        arm = next(a for a in self.spec.arms if a.name == self.selected_arm())
        return seed, self.spec.arm_id(seed, arm)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        chosen = self.selected_run()
        if event.data_table.id != "runs" or chosen is None:
            return
        run_id = chosen[1]
        if run_id == self.current:
            self.dismiss(None)
            return
        resume = partial(Simulation.resume, run_id, self.store)
        in_background(self, f"Opening {run_id}", resume, self._opened, "open")

    def _opened(self, sim: Simulation) -> None:
        if self.is_attached:
            self.dismiss(sim)
        else:  # the screen was closed meanwhile: the run is not opened
            sim.close()

    def action_diff(self) -> None:
        """The diff view: the reference arm's run (A) and the highlighted one (B), one seed."""
        chosen = self.selected_run()
        if chosen is None:
            return
        seed, run_id = chosen
        if self.selected_arm() == self.reference:
            self.notify("Highlight another arm than the reference (m sets it).")
            return
        reference = next(a for a in self.spec.arms if a.name == self.reference)
        other = self.spec.arm_id(seed, reference)
        if not self.store.exists_quietly(other) or not self.store.exists_quietly(run_id):
            self.notify(f"Seed {seed} lacks a run of one of the two arms.", severity="warning")
            return
        compare(
            self,
            self.store,
            other,
            run_id,
            lambda comparison, first: self.app.push_screen(DiffScreen(comparison, first, run_id)),
        )

    def action_mark(self) -> None:
        """The highlighted arm becomes the reference of the differences and the diff."""
        self.reference = self.selected_arm()
        self.fill_arms()

    def action_outcome(self, step: int) -> None:
        if self.outcomes:
            self.chosen = (self.chosen + step) % len(self.outcomes)
            self.fill_arms()

    def action_play(self) -> None:
        """Play the runs still missing, in worker processes, with a progress line."""
        if self.stopping is not None:
            return
        if not self.missing:
            self.notify("Every run of this trial is finished.")
            return
        self.stopping = threading.Event()
        self.play(self.stopping)

    def action_report(self) -> None:
        """Write the trial's HTML report (one file: `socialsim report --arm-reports` adds each
        arm run's)."""
        from pathlib import Path

        from engine.reports.html import write_trial_report

        from .forms import TextForm

        def submit(file: str) -> str | None:
            out = Path(file).absolute()

            def written(paths: list[Path]) -> None:
                self.notify(f"Wrote the report to {paths[-1]}.")

            write = partial(write_trial_report, self.store, self.trial_id, out)
            in_background(self, f"Writing the report of {self.trial_id}", write, written, "report")
            return None

        here = Path.cwd()
        self.app.push_screen(
            TextForm(
                "Write the trial's HTML report",
                submit,
                default=str(self.store.export_dir(self.trial_id).with_suffix(".html")),
                hint=f"A relative path is under {here}",
            )
        )

    def action_stop(self) -> None:
        if self.stopping is not None:
            self.stopping.set()
            self.progress("stopping after the runs in flight…")

    def on_unmount(self) -> None:
        """A closed screen (or an exiting app) stops its trial after the runs in flight."""
        if self.stopping is not None:
            self.stopping.set()

    def progress(self, text: str) -> None:
        if self.is_attached:
            self.query_one("#progress", Static).update(shown(text))

    def tell(self, app: App[object], callback: Callable[[str], None], line: str) -> None:
        """``callback(line)`` on the app's thread, unless the app or this screen is gone."""
        if not app.is_running or not self.is_attached:
            return
        with contextlib.suppress(RuntimeError):  # the app's loop closed meanwhile
            app.call_from_thread(callback, line)

    @work(thread=True, exclusive=True, group="trial-play", exit_on_error=False)
    def play(self, stop: threading.Event) -> None:
        from engine.studies.experiments.executor import Interrupted, LocalExecutor

        app = self.app
        counts = {"done": 0, "total": 0}

        def begun(total: int) -> None:
            counts["total"] = total
            self.tell(app, self.progress, f"playing 0/{total} runs · s stops")

        def advanced(run_id: str) -> None:
            counts["done"] += 1
            line = f"playing {counts['done']}/{counts['total']} runs ({run_id}) · s stops"
            self.tell(app, self.progress, line)

        executor = LocalExecutor()
        try:
            run_trial(self.spec, self.store, executor, progress=advanced, stop=stop, begun=begun)
            line = f"played {counts['done']} runs; the trial is complete"
        except Interrupted:
            line = f"stopped: {counts['done']} of {counts['total']} runs played"
        except Exception as err:  # a failed job: said on the progress line
            line = f"stopped: {type(err).__name__}: {err}"
        self.tell(app, self.finished_playing, line)

    def finished_playing(self, line: str) -> None:
        self.stopping = None
        if not self.is_attached:
            return
        self.progress(line)
        self.reload()
