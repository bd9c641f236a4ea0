"""The Textual app. :func:`build_app` is the one factory the CLI and the tests share."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.geometry import Size
from textual.keys import format_key
from textual.screen import Screen
from textual.widgets import Footer, Static

from engine import (
    ForcedAction,
    SaveStore,
    Simulation,
    SocialsimError,
    make_mind,
    resolve_scenario,
)
from engine.events import (
    AgentSpoke,
    EngineError,
    RoundEnded,
    RoundStarted,
    RunPaused,
    SimEvent,
    TokenStreamed,
)
from engine.export import export_run
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients
from engine.priors import parse_prior
from engine.tasks.episode import finish_task_run

from .keymap import load_keymap
from .report import metrics_block
from .screens.forms import ForceForm, InjectForm, TextForm
from .widgets.agent_pane import AgentPane
from .widgets.deck import AgentDeck
from .widgets.header import EventBar, RunHeader, event_text, header_text
from .widgets.matrix import FavMatrix

DEFAULT_SCENARIO = "tavern"
MIN_SIZE = (80, 24)

CSS = """
#too-small { display: none; content-align: center middle; height: 1fr; text-style: bold; }
Screen.too-small #too-small { display: block; }
Screen.too-small #main { display: none; }
#main { height: 1fr; }
#body { height: 1fr; }
#side { width: 40; border: round $secondary-darken-1; padding: 0; overflow-x: auto; }
#side-title { text-style: bold; }
#metrics-line { height: auto; margin-top: 1; }
"""


class SocialsimApp(App[None]):
    """Drive one run at a time: step, run/pause, intervene, branch, open, export."""

    TITLE = "socialsim"
    CSS = CSS
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("n", "step", "Step", id="step"),
        Binding("space", "step", "Step", show=False, id="step-alt"),
        Binding("r", "run_pause", "Run/Pause", id="run"),
        Binding("s", "snapshot", "Save", id="save"),
        Binding("b", "branch", "Branch", id="branch"),
        Binding("f", "force", "Force", id="force"),
        Binding("e", "inject", "Event", id="inject"),
        Binding("o", "open_runs", "Open", id="open"),
        Binding("p", "plots", "Plots", id="plots"),
        Binding("m", "metrics", "Metrics", id="metrics"),
        Binding("x", "export", "Export", id="export"),
        Binding("c", "recast", "Recast", id="recast"),
        Binding("v", "toggle_needs", "Needs on/off", show=False, id="needs"),
        Binding("left_square_bracket", "page(-1)", "Prev agents", show=False, id="prev"),
        Binding("right_square_bracket", "page(1)", "Next agents", show=False, id="next"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit_safely", "Quit", id="quit"),
    ]

    def __init__(
        self,
        sim: Simulation,
        store: SaveStore,
        keymap: dict[str, str] | None = None,
        export_root: Path | None = None,
    ) -> None:
        super().__init__()
        self.sim = sim
        self.store = store
        self.export_root = export_root or Path("exports")
        self.running = False
        self._quitting = False
        self._streams: dict[str, str] = {}
        self._unsubscribe = sim.subscribe(self._on_engine_event)
        self.keymap = keymap or {}
        if keymap:
            self.set_keymap(keymap)

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(
            f"Enlarge the terminal to at least {MIN_SIZE[0]}×{MIN_SIZE[1]} to use socialsim.",
            id="too-small",
        )
        with Vertical(id="main"):
            yield RunHeader(id="header")
            yield EventBar(id="event")
            with Horizontal(id="body"):
                yield self._deck()
                with ScrollableContainer(id="side"):
                    yield Static("favorability  row → column", id="side-title")
                    yield FavMatrix(self.sim.state, id="matrix")
                    yield Static(id="metrics-line")
        yield Footer()

    def _deck(self) -> AgentDeck:
        panes = [
            AgentPane(spec, self.sim.state.agents[spec.name], id=f"pane-{k}")
            for k, spec in enumerate(self.sim.scenario.agents)
        ]
        return AgentDeck(panes, id="deck")

    def on_mount(self) -> None:
        self._check_size(self.size)
        self._replay_transcripts()
        self.refresh_view()

    def on_resize(self, event: events.Resize) -> None:
        # Runs before App._on_resize updates self.size, so use the event's size.
        self._check_size(event.size)
        self._size_side(event.size.width)

    def _size_side(self, width: int) -> None:
        """The side panel takes the matrix's width, up to half the terminal."""
        natural = self.query_one(FavMatrix).natural_width() + 3
        self.query_one("#side").styles.width = min(natural, max(38, width // 2))

    def _check_size(self, size: Size) -> None:
        small = size.width < MIN_SIZE[0] or size.height < MIN_SIZE[1]
        # The main screen, even while a dialog is on top of it.
        self.default_screen.set_class(small, "too-small")

    # -- engine events ----------------------------------------------------------------------

    def _on_engine_event(self, event: SimEvent) -> None:
        """Engine callback (same event loop as the app): update widgets directly."""
        if isinstance(event, TokenStreamed):
            text = self._streams.get(event.agent, "") + event.text
            self._streams[event.agent] = text
            self._pane(event.agent).stream(text)
        elif isinstance(event, AgentSpoke):
            self._streams.pop(event.action.speaker, None)
            self._write_turn(event.round, event.action)
        elif isinstance(event, RoundStarted):
            for e in event.events:
                for name in e.private_to or []:
                    self._pane(name).add_event(event.round, e)
            self.query_one(EventBar).update(
                f"Round {event.round} under way… " + " ".join(e.text for e in event.events)
            )
        elif isinstance(event, RoundEnded):
            silent = [a for a in event.record.actions if a.order is None]
            for action in silent:
                self._pane(action.speaker).add_turn(event.round, action)
            self.refresh_view()
        elif isinstance(event, EngineError):
            self.notify(event.message, title="Round failed", severity="error", timeout=10)
        elif isinstance(event, RunPaused):
            if event.reason:
                self.notify(
                    f"{event.reason}; the save holds round {event.round}.",
                    title="Run stopped",
                    severity="warning",
                    timeout=10,
                )
            else:
                self.notify(f"Paused after round {event.round}.")

    def _pane(self, name: str) -> AgentPane:
        index = self.sim.scenario.names.index(name)
        return self.query_one(f"#pane-{index}", AgentPane)

    def _write_turn(self, round_no: int, action) -> None:
        self._pane(action.speaker).add_turn(round_no, action)
        if action.mode.value == "private" and action.target:
            self._pane(action.target).add_turn(round_no, action)

    def _replay_transcripts(self) -> None:
        """Fill the transcripts from the saved rounds (a resumed or branched run)."""
        for record in self.sim.records[1:]:
            for e in record.events:
                for name in e.private_to or []:
                    self._pane(name).add_event(record.round, e)
            for action in sorted(record.actions, key=lambda a: (a.order is None, a.order or 0)):
                self._write_turn(record.round, action)

    def refresh_view(self) -> None:
        """Redraw header, event bar, panes, matrix and metrics from the engine state."""
        sim = self.sim
        self.query_one(RunHeader).update(header_text(sim, self.running))
        self.query_one(EventBar).update(event_text(sim))
        record = sim.records[-1]
        deltas = {c.agent: c.delta for c in record.emotion_changes}
        for spec in sim.scenario.agents:
            self._pane(spec.name).show_state(sim.state.agents[spec.name], deltas.get(spec.name))
        changed = {
            (c.source, c.target)
            for c in record.relation_changes
            if abs(c.delta) >= 0.005 or c.status != c.previous_status
        }
        matrix = self.query_one(FavMatrix)
        matrix.show(sim.state, changed)
        self._size_side(self.size.width)
        self.query_one("#metrics-line", Static).update(metrics_block(sim.metrics()))
        self.query_one(AgentDeck).refresh_strip()

    # -- running ------------------------------------------------------------------------------

    @work(exclusive=True, group="engine", exit_on_error=False)
    async def _advance(self, rounds: int | None) -> None:
        self.running = True
        self.refresh_view()
        try:
            await self.sim.run(rounds)
            outcome = await finish_task_run(self.sim)
            if outcome is not None:
                self.notify(f"Task finished: utility {outcome.utility:g}.", timeout=10)
        except SocialsimError as err:
            self.notify(str(err), title="socialsim", severity="error", timeout=10)
        finally:
            self.running = False
            self.refresh_view()
            if self._quitting:
                self.exit()

    def action_step(self) -> None:
        """Play one round."""
        if self.running:
            self.notify("A round is already running.", severity="warning")
        elif self.sim.finished:
            self.notify(
                f"The run finished at round {self.sim.round}. Branch it (b) to go on.",
                severity="warning",
            )
        else:
            self._advance(1)

    def action_run_pause(self) -> None:
        """Run to the end, or pause at the end of the round in flight."""
        if self.running:
            self.sim.request_pause()
            self.notify("Pausing after this round…")
        elif self.sim.finished:
            self.notify("The run is finished.", severity="warning")
        else:
            self._advance(None)

    def action_toggle_needs(self) -> None:
        """Hide or show the need bars, giving the transcripts the room (small terminals)."""
        deck = self.query_one(AgentDeck)
        deck.set_class(not deck.has_class("no-needs"), "no-needs")

    def action_page(self, step: int) -> None:
        """Show the previous or next page of agent panes."""
        self.query_one(AgentDeck).turn(step)

    # -- interventions ----------------------------------------------------------------------

    def _applied(self, fn, *args) -> str | None:
        """Run an engine call for a dialog: ``None`` when it worked, else the message."""
        try:
            fn(*args)
        except SocialsimError as err:
            return str(err)
        self.refresh_view()
        return None

    def action_force(self) -> None:
        """Open the behaviour-control form."""
        visible = self.query_one(AgentDeck).visible()

        def submit(action: ForcedAction) -> str | None:
            if self.running:
                return "Wait for the round in flight to finish (or pause)."
            return self._applied(self.sim.force, action)

        self.push_screen(
            ForceForm(self.sim.scenario.names, submit, visible[0] if visible else None)
        )

    def action_inject(self) -> None:
        """Open the inject-event form."""
        self.push_screen(
            InjectForm(
                self.sim.scenario.names, lambda text, who: self._applied(self.sim.inject, text, who)
            )
        )

    def action_snapshot(self) -> None:
        """Name the current round (the save itself is already up to date)."""

        def submit(name: str) -> str | None:
            error = self._applied(self.sim.snapshot, name)
            if error is None:
                self.notify(f"Saved snapshot {name.strip()!r} at round {self.sim.round}.")
            return error

        self.push_screen(
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
        snaps = ", ".join(f"{s.name}@{s.round}" for s in self.sim.meta.snapshots)
        plans = list(self.sim.scenario.interventions)

        def submit(text: str) -> str | None:
            if self.running:
                return "Pause the run first."
            first, _, plan = text.strip().partition(" ")
            try:
                at = int(first)
            except ValueError:
                return f"Round must be a number from 0 to {self.sim.round}."
            if not 0 <= at <= self.sim.round:
                return f"Round must be between 0 and {self.sim.round}."
            plan = plan.strip() or None
            if plan is not None and plan not in plans:
                return f"Unknown intervention {plan!r}; known: {', '.join(plans) or 'none'}."
            try:
                child = self.sim.branch(at, intervention=plan)
            except SocialsimError as err:
                return str(err)
            self.switch_run(child)
            self.notify(f"Branched at round {at}: now on {child.run_id}.")
            return None

        hint = f"Fork after which round? (0..{self.sim.round})"
        if plans:
            hint += f" Optionally add an intervention: {', '.join(plans)}."
        if snaps:
            hint += f"  Snapshots: {snaps}"
        self.push_screen(TextForm("Branch the run", submit, value=str(self.sim.round), hint=hint))

    def action_export(self) -> None:
        """Write the run's CSVs to a folder."""

        def submit(folder: str) -> str | None:
            if not folder.strip():
                return "Give a folder."
            try:
                paths = export_run(
                    self.sim.meta,
                    self.sim.records,
                    Path(folder.strip()),
                    self.store.read_measurements(self.sim.run_id),
                )
            except SocialsimError as err:
                return str(err)
            self.notify(f"Exported {len(paths)} CSV files to {folder.strip()}.")
            return None

        default = str(self.export_root / self.sim.run_id)
        self.push_screen(TextForm("Export the run to CSV", submit, value=default))

    # -- other screens ------------------------------------------------------------------------

    def action_open_runs(self) -> None:
        """Browse saved runs as a lineage tree."""
        from .screens.runs import RunBrowser

        if self.running:
            self.notify("Pause the run before opening another.", severity="warning")
            return
        self.push_screen(RunBrowser(self))

    def action_plots(self) -> None:
        """Plots of emotion, favorability and needs over time."""
        from .screens.plots import PlotsScreen

        self.push_screen(PlotsScreen(self.sim, self.store))

    def action_metrics(self) -> None:
        """Per-round metrics table."""
        from .screens.metrics import MetricsScreen

        self.push_screen(MetricsScreen(self.sim))

    def action_recast(self) -> None:
        """Diagnose the run and offer a recast that reruns it from the start."""
        from engine.tasks.controller import target
        from engine.tasks.diagnosis import diagnose_offline
        from engine.tasks.episode import recast_scenario, task_of

        from .screens.recast import RecastScreen

        if self.running:
            self.notify("Pause the run before recasting.", severity="warning")
            return
        sim = self.sim
        outcome = sim.meta.outcome
        task = task_of(sim.meta.scenario_ref)
        reached = outcome is not None and task is not None and outcome.utility >= target(task)
        proposals = diagnose_offline(sim.scenario, sim.records, outcome, reached)
        result = "" if outcome is None else f" — utility {outcome.utility:g}"
        headline = (
            f"Diagnosis of {sim.run_id} after round {sim.round}{result} "
            "(rule-based, from the S and R trajectories)"
        )

        def apply(casting) -> str | None:
            try:
                child = sim.branch(
                    0, scenario=recast_scenario(sim, casting), name=f"recast of {sim.run_id}"
                )
            except SocialsimError as err:
                return str(err)
            self.switch_run(child)
            self.notify("Recast applied: a branch reruns the run from the start.")
            self.call_after_refresh(self.action_run_pause)
            return None

        self.push_screen(RecastScreen(proposals, headline, apply))

    def action_help(self) -> None:
        """Every key binding."""
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen(self.active_bindings_table(), self.sim.mind.label))

    def active_bindings_table(self) -> list[tuple[str, str]]:
        """(keys, description) for every app binding, after the user's keymap."""
        rows: dict[str, list[str]] = {}
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            keys = self.keymap.get(binding.id or "", binding.key)
            label = binding.description or binding.action
            rows.setdefault(label, []).extend(format_key(k.strip()) for k in keys.split(","))
        return [(", ".join(keys), label) for label, keys in rows.items()]

    def action_quit_safely(self) -> None:
        """Quit; a round in flight is finished and saved first."""
        if self.running:
            self._quitting = True
            self.sim.request_pause()
            self.notify("Finishing the current round, then quitting…")
        else:
            self.exit()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.show:
                action = binding.action
                yield SystemCommand(
                    binding.description,
                    f"key: {binding.key}",
                    lambda action=action: self.run_action(action),
                )

    # -- switching runs --------------------------------------------------------------------

    def switch_run(self, sim: Simulation) -> None:
        """Show another run (a branch or a run opened from the browser)."""
        self._unsubscribe()
        if sim is not self.sim:
            self.sim.close()
        self.sim = sim
        self._unsubscribe = sim.subscribe(self._on_engine_event)
        body = self.query_one("#body", Horizontal)
        old = self.query_one(AgentDeck)
        self.call_after_refresh(self._swap_deck, body, old)

    async def _swap_deck(self, body: Horizontal, old: AgentDeck) -> None:
        await old.remove()
        await body.mount(self._deck(), before=0)
        self._replay_transcripts()
        self.refresh_view()

    async def on_unmount(self) -> None:
        self.sim.close()
        await close_clients()  # litellm's shared HTTP clients, if an LLM was used


def build_app(
    target: str | None = None,
    *,
    model: str = "offline",
    seed: int = 0,
    saves: Path | None = None,
    keymap_file: Path | None = None,
    llm: LLMSettings | None = None,
    prior: str | None = None,
) -> SocialsimApp:
    """The app for a scenario (a new run) or a saved run id (resumed where it stopped).

    Raises :class:`engine.SocialsimError` with a clear message for bad input.
    """
    # Read the keymap first: a bad file must not leave a new, empty run behind.
    keymap = load_keymap([b.id for b in SocialsimApp.BINDINGS if b.id], keymap_file)
    store = SaveStore(saves)
    target = target or DEFAULT_SCENARIO
    if store.exists_quietly(target):
        sim = Simulation.resume(target, store)
    else:
        scenario = resolve_scenario(target)
        sim = Simulation.new(
            scenario,
            seed=seed,
            model=model,
            mind=make_mind(model, seed, llm),
            llm=llm,
            prior=parse_prior(prior, scenario.names) if prior else None,
            store=store,
            scenario_ref=target,
        )
    return SocialsimApp(sim, store, keymap)
