"""The main screen: the open run, with the keys that drive it.

Step, run/pause, intervene (force, inject), name snapshots, branch, open other runs,
overlay the relational prior on the matrix, and open the plots, metrics, export, recast, diff and
help screens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import WorkerState

from engine import DegradedRunError, Simulation, SocialsimError
from engine.core.textsafe import strip_controls

from .. import heap, messages
from ..background import in_background
from ..keymap import keys_shown
from ..seat import Seat, TurnAsked
from ..session import Session
from ..warm import WARM_AFTER, warm_imports
from ..widgets.deck import AgentDeck
from ..widgets.footer import KeyFooter
from ..widgets.run_view import RunView

if TYPE_CHECKING:
    from engine import Archetype, ForcedAction
    from engine.minds.human import Turn
    from engine.studies.tasks.diagnosis import RunDiagnosis

# The dialogs, other screens and what only they use are imported by the action that opens
# them: the first frame waits for nothing it does not draw.

MIN_SIZE = (80, 24)


def fork_point(text: str, last: int, plans: list[str]) -> tuple[int, str | None]:
    """``"3"`` or ``"3 curfew"``: the round to fork after and an optional intervention."""
    first, _, rest = text.strip().partition(" ")
    try:
        at = int(first)
    except ValueError:
        raise ValueError(f"Round must be a number from 0 to {last}.") from None
    if not 0 <= at <= last:
        raise ValueError(f"Round must be between 0 and {last}.")
    plan = rest.strip() or None
    if plan is not None and plan not in plans:
        raise ValueError(f"Unknown intervention {plan!r}; known: {', '.join(plans) or 'none'}.")
    return at, plan


class MainScreen(Screen[None]):
    """Drive the open run: step, run/pause, intervene, branch, open, export."""

    DEFAULT_CSS = """
    MainScreen #too-small {
        display: none; content-align: center middle; height: 1fr; text-style: bold;
    }
    MainScreen.too-small #too-small { display: block; }
    MainScreen.too-small RunView { display: none; }
    """
    BINDINGS = [
        # In the footer's order: it shows what fits, and always ? (help) and q.
        Binding("n", "step", "Step", id="step"),
        Binding("space", "step", "Step", show=False, id="step-alt"),
        Binding("r", "run_pause", "Run/Pause", id="run"),
        Binding(
            "f", "force", "Force", tooltip="force an agent's action in the next round", id="force"
        ),
        Binding("e", "inject", "Event", tooltip="inject an event into the next round", id="inject"),
        Binding("b", "branch", "Branch", tooltip="branch the run from a round (fork)", id="branch"),
        Binding("o", "open_runs", "Open", id="open"),
        Binding("z", "focus_agent", "Focus", tooltip="one agent full-size, or all", id="focus"),
        Binding("slash", "jump", "Find", tooltip="jump to an agent by name", id="find"),
        Binding("s", "snapshot", "Save", tooltip="save a named snapshot of this round", id="save"),
        Binding("p", "plots", "Plots", id="plots"),
        Binding("m", "metrics", "Metrics", id="metrics"),
        Binding("x", "export", "Export", tooltip="export the run to CSV (or Parquet)", id="export"),
        Binding(
            "w",
            "report",
            "Report",
            show=False,
            tooltip="write the run's HTML report (one file, opens in any browser)",
            id="report",
        ),
        Binding(
            "c",
            "recast",
            "Recast",
            tooltip="recast the personas (trajectory-guided persona recasting)",
            id="recast",
        ),
        Binding("d", "diff", "Diff", id="diff"),
        Binding("P", "toggle_prior", "Prior", id="prior"),
        Binding(
            "F",
            "filter_matrix",
            "Filter",
            tooltip="the matrix for one agent or faction, or all",
            id="filter",
        ),
        Binding("i", "toggle_events", "Events", tooltip="the event strip in full", id="events"),
        Binding(
            "u",
            "queue",
            "Queue",
            show=False,
            tooltip="list what is queued for the next round and remove items",
            id="queue",
        ),
        Binding(
            "t",
            "turn",
            "Turn",
            show=False,
            tooltip="answer the turn an agent you play waits for",
            id="turn",
        ),
        Binding(
            "pageup",
            "scroll(-1)",
            "Scroll",
            key_display="PgUp",
            tooltip="scroll the transcripts back",
            priority=True,
            id="scroll-back",
        ),
        Binding(
            "pagedown",
            "scroll(1)",
            "Scroll",
            key_display="PgDn",
            show=False,
            tooltip="scroll the transcripts on",
            priority=True,
            id="scroll-on",
        ),
        Binding("v", "toggle_needs", "Needs on/off", show=False, id="needs"),
        Binding("left_square_bracket", "page(-1)", "Prev agents", show=False, id="prev"),
        Binding("right_square_bracket", "page(1)", "Next agents", show=False, id="next"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "app.quit_safely", "Quit", id="quit"),
    ]
    AUTO_FOCUS = "#matrix-grid"  # the arrow keys move the matrix cursor
    running: var[bool] = var(False)
    """A round is in flight (the engine worker is advancing the run)."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self._turns: list[Turn] = []  # turns waiting for their person, oldest first
        self._form: Screen[bool] | None = None  # the turn form shown, if any

    def on_mount(self) -> None:
        self.sim.seat(Seat(self))
        # idle work, a while after the first screen is drawn: it waits for none of them
        self.call_after_refresh(self.set_timer, WARM_AFTER, self._warm)
        self.call_after_refresh(heap.settle_under, self)  # the first screen's widgets
        self._reclaimed = heap.frozen()
        self.set_interval(heap.IDLE_EVERY, self._reclaim)

    def _reclaim(self) -> None:
        """Walk the whole heap once (tui/heap.py) when the app is idle: no key for a while,
        no round and no work in flight."""
        app = self.app
        quiet = time.monotonic() - getattr(app, "last_input", 0.0) >= heap.IDLE_FOR
        working = any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)
        if quiet and not self.running and not working and heap.reclaim(self._reclaimed):
            self._reclaimed = heap.frozen()

    def _warm(self) -> None:
        def warm() -> None:
            warm_imports()
            self.app.call_from_thread(heap.settle_under, self)  # modules live on

        self.run_worker(warm, thread=True, group="warm", exit_on_error=False)

    @property
    def sim(self) -> Simulation:
        """The open run."""
        return self.session.sim

    def compose(self) -> ComposeResult:
        yield Static(
            f"Enlarge the terminal to at least {MIN_SIZE[0]}×{MIN_SIZE[1]} to use socialsim.",
            id="too-small",
        )
        pacer = self.session.engine.pacer
        yield RunView(self.sim, pacer, id="main").data_bind(MainScreen.running)
        yield KeyFooter()

    def on_screen_resume(self) -> None:
        self._fit(self.app.size.width, self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        # Also sent while a dialog is on top, so the notice is right when it closes.
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        too_small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        if too_small != self.has_class("too-small"):
            self.set_class(too_small, "too-small")
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Under the "enlarge the terminal" notice no key acts (but quit, an app action).
        return not self.has_class("too-small")

    def open_run(self, sim: Simulation) -> None:
        """Show another run (a branch, or a run opened from the browser)."""
        self.session.open(sim)
        sim.seat(Seat(self))
        self.query_one(RunView).show(sim)

    # -- running ------------------------------------------------------------------------------

    @work(exclusive=True, group="engine", exit_on_error=False)
    async def _advance(self, rounds: int | None) -> None:
        """Play rounds on the engine thread (:mod:`tui.engine_thread`): this worker only
        waits, so keys are answered while a round is in flight."""
        sim, engine = self.sim, self.session.engine
        self.app.clear_notifications()  # "Paused after round 3." is stale once it runs again
        self.running = True
        from engine.studies.tasks.episode import finish_task_run

        try:
            await engine.call(sim.run(rounds))
            outcome = await engine.call(finish_task_run(sim))
            if outcome is not None:
                from ..widgets.header import task_score

                self.notify(f"Task finished: {task_score(outcome)}.", timeout=10)
                self.query_one(RunView).refresh_view()
        except DegradedRunError as err:  # the round is saved: a notice that stays
            self.query_one(RunView).stopped_degraded(str(err))
        except SocialsimError as err:
            self.notify(str(err), title="socialsim", severity="error", timeout=10)
        finally:
            self.running = False
            sim.release()  # a hold ends with the rounds it held
            self._drop_turns()  # a failed round's: never asked again
            self.post_message(messages.RunStopped())

    def action_step(self) -> None:
        """Play one round (while a round waits for a person: their form again)."""
        if self.running and self._turns:
            self._show_turn()
        elif self.running and self.sim.held:
            self.notify("The round is paused between its calls: r goes on.")
        elif self.running:
            self.notify("A round is already running.", severity="warning")
        elif self.sim.finished:
            self._go_on(self.action_step, plays=True)
        else:
            self._advance(1)

    def action_run_pause(self) -> None:
        """Run to the end, or pause: an LLM round between its calls (the calls in flight
        finish; ``r`` again goes on), an offline one at its end."""
        if self.running and self.withdraw_turns():
            return
        if self.running and self.sim.held:
            self.sim.release()
            self.app.clear_notifications()
        elif self.running and self.sim.meta.llm is not None:
            self.sim.hold()
            self.notify("Pausing: no new call is sent; r goes on, q quits keeping the answers.")
        elif self.running:
            self.sim.request_pause()
            self.notify("Pausing after this round…")
        elif self.sim.finished:
            self._go_on(self.action_run_pause, plays=True)
        else:
            self._advance(None)

    # -- turns of the agents people play ------------------------------------------------------

    @on(TurnAsked)
    def _turn_asked(self, message: TurnAsked) -> None:
        if not self.running:  # asked just before its round failed: the round is gone
            message.turn.withdraw()
            return
        self._turns.append(message.turn)
        self._show_turn()

    def _show_turn(self) -> None:
        """Show the oldest waiting turn's form (unless one is shown)."""
        if self._form is not None or not self._turns:
            return
        turn = self._turns[0]

        def closed(answered: bool | None) -> None:
            self._form = None
            if answered:
                self._turns.remove(turn)
                self._show_turn()
            elif turn in self._turns:
                self.notify(
                    f"Round {turn.ctx.round} waits for {turn.player} ({turn.agent}): "
                    "t answers, r stops the round."
                )

        from .play import turn_form

        self._form = turn_form(turn)
        self.app.push_screen(self._form, closed)

    def action_turn(self) -> None:
        """Answer the turn an agent you play is waiting for."""
        if self._turns:
            self._show_turn()
        else:
            self.notify("No agent you play is waiting for a turn.")

    def withdraw_turns(self) -> bool:
        """Stop a round that waits for a person: it is not saved, and is played again from
        its start (asking again) when the run goes on. True if a round was waiting."""
        turns = self._drop_turns()
        if not turns:
            return False
        who = ", ".join(dict.fromkeys(t.player for t in turns))
        self.notify(
            f"Round {turns[0].ctx.round} stopped while it waited for {who}; the save holds "
            f"round {self.sim.round}, and the round is played again from its start."
        )
        return True

    def _drop_turns(self) -> list[Turn]:
        """Withdraw the waiting turns (their round ends unsaved) and close a turn form."""
        turns, self._turns = self._turns, []
        for turn in turns:
            turn.withdraw()
        form = self._form
        if form is not None:

            def close() -> None:
                if self.app.screen is form:
                    form.dismiss(False)

            form.call_later(close)  # on the form's queue: after it has mounted
        return turns

    @on(messages.Notice)
    def _notice(self, message: messages.Notice) -> None:
        text = strip_controls(message.message)
        self.notify(text, title="Model server", severity="warning", timeout=15, markup=False)

    @on(messages.RunPaused)
    def _run_paused(self, message: messages.RunPaused) -> None:
        if message.reason:
            self.notify(
                f"{message.reason}; the save holds round {message.round}.",
                title="Run stopped",
                severity="warning",
                timeout=10,
            )
        else:
            self.app.clear_notifications()  # "Pausing after this round…"
            self.notify(f"Paused after round {message.round}.")

    def action_toggle_needs(self) -> None:
        """Hide or show the need bars, giving the transcripts the room (small terminals)."""
        deck = self.query_one(AgentDeck)
        deck.set_class(not deck.has_class("no-needs"), "no-needs")

    def action_toggle_prior(self) -> None:
        """Overlay the run's relational prior (the fixed signs its prompts state) on the
        matrix, or go back to favorability."""
        self.query_one(RunView).toggle_prior()

    def action_filter_matrix(self) -> None:
        """Show one agent's row and column of the matrix, or one faction's; filtered
        already: every agent again."""
        from ..relations import Selection, parse_selection
        from ..widgets.matrix import FavMatrix
        from .forms import TextForm

        scenario = self.sim.scenario
        view = self.query_one(RunView)
        if self.query_one(FavMatrix).selection != Selection():
            view.select_matrix(Selection())
            return

        def submit(text: str) -> str | None:
            try:
                selection = parse_selection(text, scenario.names, scenario.factions)
            except ValueError as err:
                return str(err)
            view.select_matrix(selection)
            return None

        factions = ", ".join(scenario.factions) or "none"
        self.app.push_screen(
            TextForm(
                "Filter the matrix",
                submit,
                placeholder="an agent or a faction (empty: every agent)",
                hint=f"An agent's name shows its row and column; a faction its members. "
                f"Factions: {factions}.",
                value=self.query_one(AgentDeck).current_agent() or "",
            )
        )

    def action_page(self, step: int) -> None:
        """Show the previous or next page of agent panes (in focus mode: agent)."""
        self.query_one(AgentDeck).turn(step)

    def action_focus_agent(self) -> None:
        """One agent full-size (the one found with /, else the first shown), or all again."""
        self.query_one(RunView).toggle_focus()

    def action_jump(self) -> None:
        """Find an agent by (part of) its name and show it."""
        from .jump import JumpScreen

        deck = self.query_one(AgentDeck)

        def chosen(name: str | None) -> None:
            if name is not None:
                deck.show_agent(name)

        self.app.push_screen(JumpScreen(self.sim.scenario.names), chosen)

    def action_toggle_events(self) -> None:
        """Expand the event strip to every line, or fold it again."""
        self.query_one(RunView).toggle_events()

    def action_scroll(self, step: int) -> None:
        """Scroll the transcripts on screen a page back (or on)."""
        self.query_one(AgentDeck).scroll_transcripts(step)

    # -- interventions ------------------------------------------------------------------------

    def _applied(self, fn, *args) -> str | None:
        """Run an engine call for a dialog (on the engine thread, the run's one writer):
        ``None`` when it worked, else the message."""
        try:
            self.session.engine.run_sync(fn, *args)
        except SocialsimError as err:
            return str(err)
        self.query_one(RunView).refresh_view()
        return None

    def _go_on(self, then: Callable[[], None], plays: bool = False) -> None:
        """A finished run: offer to extend it or branch it by some rounds, then ``then``
        (the force or event dialog the user asked for, or the round when the run was
        extended: ``plays``) on the run that goes on."""
        from .forms import GoOnForm

        sim = self.sim
        extended = False

        def submit(how: str, rounds: int) -> str | None:
            nonlocal extended
            if self.running:
                return "Pause the run first."
            if how == "extend":
                error = self._applied(sim.extend, rounds)
                extended = error is None
                return error
            at, doing = sim.round, f"Branching {sim.run_id} at round {sim.round}"
            if plays:  # the branch's first round waits for n
                switch = partial(self._switch, at, said="; n plays its rounds")
            else:
                switch = partial(self._switch, at, then=then)
            in_background(self, doing, partial(sim.branch, rounds=rounds), switch, "branch")
            return None

        def done(ok: bool | None) -> None:
            if ok and extended:
                then()

        self.app.push_screen(GoOnForm(sim.round, submit), done)

    def _switch(
        self, at: int, child: Simulation, then: Callable[[], None] | None = None, said: str = ""
    ) -> None:
        """Show ``child``, branched at round ``at`` off the UI thread (``said`` ends the
        notice), then ``then`` on it; a round started meanwhile keeps its run on screen (the
        branch waits in ``o``)."""
        if self.running:
            child.close()
            self.notify(f"Branched at round {at} as {child.run_id} (o opens it).")
            return
        self.open_run(child)
        self.notify(f"Branched at round {at}: now on {child.run_id}{said}.")
        if then is not None:
            then()

    def action_queue(self) -> None:
        """List what is queued for the next round; the ticked items are removed."""
        from ..queued import queue_lines
        from .forms import QueueForm

        sim = self.sim
        if not sim.queue:
            self.notify(f"Nothing is queued for round {sim.round + 1}.")
            return

        def submit(indices: list[int]) -> str | None:
            for k in indices:  # the later first: the numbers hold
                error = self._applied(sim.unqueue, k)
                if error:
                    return error
            return None

        lines = queue_lines(sim.queue, sim.scenario.names)
        self.app.push_screen(QueueForm(lines, sim.round + 1, submit))

    def action_force(self) -> None:
        """Open the behaviour-control form."""
        from .forms import ForceForm

        if self.sim.finished:
            self._go_on(self.action_force)
            return

        current = self.query_one(AgentDeck).current_agent()

        def submit(action: ForcedAction) -> str | None:
            if self.running:
                return "Wait for the round in flight to finish (or pause)."
            return self._applied(self.sim.force, action)

        self.app.push_screen(ForceForm(self.sim.scenario.names, submit, current))

    def action_inject(self) -> None:
        """Open the inject-event form (its meaning asked for, read from the text unless
        chosen)."""
        from .forms import InjectForm

        if self.sim.finished:
            self._go_on(self.action_inject)
            return
        sim = self.sim

        def submit(
            text: str,
            who: list[str] | None,
            valence: float | None,
            about: list[str],
            implicates: list[str] | None,
        ) -> str | None:
            inject = partial(sim.inject, valence=valence, about=about, implicates=implicates)
            return self._applied(inject, text, who)

        self.app.push_screen(InjectForm(sim.scenario.names, submit))

    def action_snapshot(self) -> None:
        """Name the current round (the save itself is already up to date)."""
        from .forms import TextForm

        def submit(name: str) -> str | None:
            error = self._applied(self.sim.snapshot, name)
            if error is None:
                self.notify(f"Saved snapshot {name.strip()!r} at round {self.sim.round}.")
            return error

        self.app.push_screen(
            TextForm(
                "Save a named snapshot",
                submit,
                placeholder="e.g. before the vote",
                hint=f"Every round is autosaved; this names round {self.sim.round}.",
            )
        )

    def action_branch(self) -> None:
        """Fork the run at the current or an earlier round (optionally with one of the
        scenario's ready-made interventions) and switch to the branch."""
        from .forms import TextForm
        from .play import take_over

        sim = self.sim
        snaps = ", ".join(f"{s.name}@{s.round}" for s in sim.meta.snapshots)
        plans = list(sim.scenario.interventions)

        def submit(text: str) -> str | None:
            if self.running:
                return "Pause the run first."
            rest, players = take_over(text, sim.scenario.names, sim.meta.players)
            at, plan = fork_point(rest, sim.round, plans)  # a ValueError is shown inline

            def branch() -> Simulation:
                child = sim.branch(at, intervention=plan)
                if players != child.meta.players:
                    child.play(players)
                return child

            switch = partial(self._switch, at)
            in_background(self, f"Branching {sim.run_id} at round {at}", branch, switch, "branch")
            return None

        hint = f"Fork after which round? (0..{sim.round})"
        if plans:
            hint += f" Optionally add an intervention: {', '.join(plans)}."
        hint += " play NAME[=PLAYER] takes an agent over from the fork, ai NAME hands it back."
        if snaps:
            hint += f"  Snapshots: {snaps}"
        self.app.push_screen(TextForm("Branch the run", submit, default=str(sim.round), hint=hint))

    def action_export(self) -> None:
        """Write the run's CSVs to a folder, by default ``<saves>/exports/<run>`` (its
        rounds so far: not while one is played), and any other export format named after it
        as on the command line (``--graphml``)."""
        if self.running:
            self.notify("Pause the run before exporting.", severity="warning")
            return
        from engine.reports.export import FORMATS, export_run, formats_of

        from .forms import TextForm

        sim, store = self.sim, self.session.store

        def submit(text: str) -> str | None:
            folder, *options = text.split(" --")
            out = Path(folder.strip()).absolute()
            try:
                formats_of(options)  # a wrong option is said in the form
            except SocialsimError as err:
                return str(err)

            def export() -> list[Path]:
                measured = store.read_measurements(sim.run_id)
                return export_run(sim.meta, sim.history, out, measured, formats=options)

            def exported(paths: list[Path]) -> None:
                self.notify(f"Exported {len(paths)} files to {out}.")

            in_background(self, f"Exporting {sim.run_id} to {out}", export, exported, "export")
            return None

        here = Path.cwd()  # where socialsim was started: relative folders are under it
        others = " or ".join(f"--{name}" for name, f in FORMATS.items() if not f.default)
        self.app.push_screen(
            TextForm(
                "Export the run to CSV",
                submit,
                default=str(store.export_dir(sim.run_id).absolute()),
                hint=f"A relative folder is under {here}; add {others} for more formats",
            )
        )

    def action_report(self) -> None:
        """Write the run's HTML report (its rounds so far: not while one is played)."""
        if self.running:
            self.notify("Pause the run before writing its report.", severity="warning")
            return
        from .forms import TextForm

        sim = self.sim

        def submit(file: str) -> str | None:
            out = Path(file).absolute()

            def report() -> None:
                from engine.reports.html import run_report, write_html  # ~0.3 s: not here

                write_html(out, run_report(sim.meta, sim.history)[0])

            def written(_: None) -> None:
                self.notify(f"Wrote the report to {out}.")

            in_background(self, f"Writing the report of {sim.run_id}", report, written, "report")
            return None

        here = Path.cwd()
        default = self.session.store.export_dir(sim.run_id).with_suffix(".html")
        self.app.push_screen(
            TextForm(
                "Write the run's HTML report",
                submit,
                default=str(default.absolute()),
                hint=f"A relative path is under {here}",
            )
        )

    # -- other screens ------------------------------------------------------------------------

    def action_open_runs(self) -> None:
        """Browse saved runs as a lineage tree; the run chosen there is opened."""
        if self.running:
            self.notify("Pause the run before opening another.", severity="warning")
            return
        from .runs import RunBrowser

        def opened(sim: Simulation | None) -> None:
            if sim is not None:
                self.open_run(sim)

        self.app.push_screen(RunBrowser(self.session.store, self.sim.run_id), opened)

    def action_plots(self) -> None:
        """Plots of emotion, favorability and needs over time."""
        from .plots import PlotsScreen

        self.app.push_screen(PlotsScreen(self.sim, self.session.store))

    def action_metrics(self) -> None:
        """Per-round metrics table."""
        from .metrics import MetricsScreen

        self.app.push_screen(MetricsScreen(self.sim))

    def action_recast(self) -> None:
        """Diagnose the run and offer a recast that reruns it from the start."""
        if self.running:
            self.notify("Pause the run before recasting.", severity="warning")
            return
        sim = self.sim

        def diagnose() -> RunDiagnosis:
            from engine.studies.tasks.diagnosis import diagnose_run  # off the UI thread too

            return diagnose_run(sim)

        in_background(  # the diagnosis reads every round: the notice stays until it ends
            self,
            f"Diagnosing {sim.run_id}: reading its {sim.round} rounds",
            diagnose,
            partial(self._offer_recast, sim),
            "recast",
        )

    def _offer_recast(self, sim: Simulation, diagnosis: RunDiagnosis) -> None:
        """Show the diagnosis of ``sim`` and apply the recast chosen as a branch of it."""
        from engine.studies.tasks.episode import recast_scenario

        from .recast import RecastScreen

        if sim is not self.sim:  # another run was opened meanwhile
            return

        def apply(casting: dict[str, Archetype]) -> str | None:
            if self.running:
                return "Pause the run first."
            try:
                scenario = recast_scenario(sim, casting)
            except SocialsimError as err:
                return str(err)
            branch = partial(sim.branch, 0, scenario=scenario, name=f"recast of {sim.run_id}")
            doing = f"Recasting {sim.run_id}: a branch that reruns it from the start"
            in_background(self, doing, branch, recast, "branch")
            return None

        def recast(child: Simulation) -> None:
            if self.running:  # a round was started meanwhile: the recast waits in o
                self._switch(0, child)
                return
            self.open_run(child)
            self.notify("Recast applied: a branch reruns the run from the start.")
            self.call_after_refresh(self.action_run_pause)

        self.app.push_screen(RecastScreen(diagnosis.proposals, diagnosis.headline, apply))

    def action_diff(self) -> None:
        """Compare this run with its parent, or with a run chosen from the list."""
        from .diff import open_diff

        open_diff(self, self.session.store, self.sim.meta)

    def action_help(self) -> None:
        """Every key binding. The help is built once and kept (installed) while what it
        says holds: a second ``?`` shows it without composing it again."""
        from .help import HelpScreen

        app, says = self.app, (self.bindings_table(), self.sim.mind.label)
        if app.is_screen_installed(HELP):
            if cast(HelpScreen, app.get_screen(HELP)).says == says:
                app.push_screen(HELP)
                return
            app.uninstall_screen(HELP)
        app.install_screen(HelpScreen(*says), HELP)
        app.push_screen(HELP)

    def bindings_table(self) -> list[tuple[str, str]]:
        """(keys, description) for every binding, after the user's keymap."""
        rows: dict[str, list[str]] = {}
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            label = binding.description or binding.action
            if binding.tooltip:
                label = f"{label}: {binding.tooltip}" if binding.description else binding.tooltip
            rows.setdefault(label, []).extend(keys_shown(self.app, binding, self.session.keymap))
        return [(", ".join(keys), label) for label, keys in rows.items()]


#: The name the help screen is kept under.
HELP = "help"


def binding_ids() -> list[str]:
    """The ids a keymap file may remap."""
    return [b.id for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.id]
