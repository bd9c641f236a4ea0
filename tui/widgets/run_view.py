"""The view of one run: header, warning strip, event strip, agent deck, favorability matrix
and metrics.

It listens to the run's engine events (as :mod:`tui.messages`) and keeps its widgets in
step with them; :meth:`RunView.show` switches it to another run. In focus mode the deck
shows one agent and the side panel steps aside.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import get_current_worker

from engine import Action, Metrics, Mode, Simulation, SocialsimError
from engine.core.state import RoundLog
from engine.core.view import RoundView

from .. import heap, messages
from ..engine_thread import Pacer
from ..event_bridge import EventBridge
from ..relations import Selection
from ..report import metrics_block, metrics_pair
from .agent_pane import AgentPane, event_line, turn_line
from .deck import PANE_WIDTH, AgentDeck
from .feed import FeedScroll, RoundFeed, decision_line, judged_line
from .header import (
    RunHeader,
    WarningStrip,
    event_lines,
    failed_text,
    fallback_text,
    started_lines,
    stopped_text,
)
from .matrix import FavMatrix, prior_title
from .statics import show_content

FAV_TITLE = "favorability  row → column"
#: Rounds whose turns a reopened run replays into the transcripts (the save holds them all).
REPLAYED_ROUNDS = 20
#: Below this many matrix rows in view the side panel goes compact (metrics on two lines, no
#: sticky note).
MIN_ROWS = 8
FULL_METRICS = 7  # a blank line and one line per metric
#: Seconds a round plays before the feed shows its latest lines in a taller strip.
LIVE_AFTER = 1.0
#: A matrix cell is marked changed when the round moved its favorability this much (or its
#: status).
CHANGED_AT = 0.005


class RunView(Vertical):
    """Everything the main screen shows of the open run."""

    DEFAULT_CSS = """
    RunView { height: 1fr; }
    RunView #body { height: 1fr; }
    RunView #side { width: 40; border: round $secondary-darken-1; padding: 0; overflow-x: auto; }
    RunView #side-title { text-style: bold; }
    RunView #metrics-line { height: auto; margin-top: 1; }
    RunView #metrics-line.-compact { margin-top: 0; }
    RunView.-focus #side { display: none; }
    RunView #side:focus-within { border: double $accent; }
    RunView AgentPane:focus-within { border: double $accent; }
    """
    running: var[bool] = var(False, init=False)

    def __init__(self, sim: Simulation, pacer: Pacer | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sim = sim
        self._pacer = pacer  # holds the engine thread while rounds wait to be drawn
        self._bridge: EventBridge | None = None
        self._stopped: Text | None = None  # why the run stopped or failed, until a round starts
        #: What each transcript had written when the round under way started (its lines
        #: are taken back if it fails: it is played again from its start).
        self._round_from: dict[str, int] = {}
        self._metrics: Metrics | None = None  # as of the round drawn
        #: The newest rounds' logs in the transcripts: a branch of this run carries them.
        self._logs: dict[int, RoundLog] = {}
        self._opening: Timer | None = None  # opens the feed's live strip if a round lasts
        self._turns_over: set[str] = set()  # the round's speakers whose turn has been written

    def compose(self) -> ComposeResult:
        state = self.sim.history.view().state
        yield RunHeader(self.sim, id="header").data_bind(RunView.running)
        yield WarningStrip(id="warning")
        with FeedScroll(id="feed"):
            yield RoundFeed(id="event")
        with Horizontal(id="body"):
            yield self._deck()
            with ScrollableContainer(id="side", can_focus=False):
                yield Static(FAV_TITLE, id="side-title")
                yield FavMatrix(state, self.sim.meta.prior, self.sim.scenario.factions, id="matrix")
                yield Static(id="metrics-line")

    def _deck(self, view: RoundView | None = None) -> AgentDeck:
        state = (view or self.sim.history.view()).state
        panes = [
            AgentPane(spec, state.agents[spec.name], id=f"pane-{k}")
            for k, spec in enumerate(self.sim.scenario.agents)
        ]
        return AgentDeck(panes, id="deck")

    def on_mount(self) -> None:
        self._bridge = EventBridge(self.sim, self.post_message, pacer=self._pacer)
        self._replay_transcripts()
        self.refresh_view()

    def on_unmount(self) -> None:
        if self._bridge is not None:
            self._bridge.close()

    def on_resize(self, event: events.Resize) -> None:
        self._size_side(event.size.width)

    def watch_running(self, running: bool) -> None:
        """The feed opens its live strip once a round has played :data:`LIVE_AFTER` seconds
        and folds it when the round ends: a quick round (an offline one) never resizes the
        screen twice, which at hundreds of agents costs more than the round."""
        if self._opening is not None:
            self._opening.stop()
            self._opening = None
        feed = self.query_one(RoundFeed)
        if running:
            self._opening = self.set_timer(LIVE_AFTER, partial(setattr, feed, "live", True))
        else:
            feed.live = False

    def show(self, sim: Simulation) -> None:
        """Switch to another run (a branch, or a run opened from the browser)."""
        if self._bridge is not None:
            self._bridge.close()
        self._logs = self._carried(sim)
        self.sim = sim
        self._stopped, self._round_from = None, {}
        self._bridge = EventBridge(sim, self.post_message, pacer=self._pacer)
        self.call_after_refresh(self._swap_deck)

    def _carried(self, child: Simulation) -> dict[int, RoundLog]:
        """The logs shown that ``child`` holds too: a branch of the run on screen has its
        rounds up to the fork (the same files), so its transcripts need not be read."""
        fork, sim = child.meta.parent, self.sim
        if fork is None or fork.run_id != sim.run_id or child.scenario.names != sim.scenario.names:
            return {}
        return {n: log for n, log in self._logs.items() if n <= fork.round}

    def _keep_log(self, sim: Simulation, log: RoundLog) -> None:
        """Keep round ``log`` of the run on screen (the newest :data:`REPLAYED_ROUNDS`)."""
        if sim is not self.sim:
            return
        # what a transcript shows: a real model's exchanges are not kept twice
        self._logs[log.round] = RoundLog.model_construct(
            round=log.round, events=log.events, actions=log.actions
        )
        if len(self._logs) > REPLAYED_ROUNDS:
            del self._logs[min(self._logs)]

    def toggle_focus(self) -> bool:
        """One agent full-size (the side panel steps aside), or the pages again."""
        deck = self.query_one(AgentDeck)
        focus = deck.toggle_focus()
        self.set_class(focus, "-focus")
        # The keys go where the eyes are: the agent's transcript, or the matrix again.
        if focus:
            deck.panes[deck.agent_index].transcript.focus()
        else:
            self.query_one(FavMatrix).grid.focus()
        return focus

    def select_matrix(self, selection: Selection) -> None:
        """Filter the matrix to one agent's row and column, or one faction, or show all."""
        matrix = self.query_one(FavMatrix)
        matrix.select(selection)
        self._size_side(self.app.size.width)
        matrix.grid.focus()

    def toggle_events(self) -> None:
        """Expand the feed to every line, or fold it again."""
        feed = self.query_one(RoundFeed)
        feed.expanded = not feed.expanded

    def toggle_prior(self) -> None:
        """Show the run's relational prior over the matrix, or favorability again."""
        self.query_one(FavMatrix).toggle_overlay()
        self._title()
        self._fit_side()  # the cursor's line and the notes may differ

    def _title(self) -> None:
        matrix = self.query_one(FavMatrix)
        title = prior_title(self.sim.meta.prior) if matrix.overlay else FAV_TITLE
        show_content(self.query_one("#side-title", Static), title)

    def stopped_degraded(self, message: str) -> None:
        """Keep the engine's line about a degraded stop in view until another round starts."""
        self._stopped = stopped_text(self.sim, message)
        self.refresh_view()

    @on(messages.RoundFailed)
    def _round_failed(self, message: messages.RoundFailed) -> None:
        """The round under way failed: the strip says so until another round starts, and
        the view goes back to the last saved round (the feed no longer says it is under way)."""
        self._stopped = failed_text(self.sim, message.round, message.message)
        for name, written in self._round_from.items():
            transcript = self._pane(name).transcript
            transcript.take_back(transcript.written - written)
        self._round_from = {}
        self.refresh_view()

    async def _swap_deck(self) -> None:
        await self.query_one(AgentDeck).remove()
        await self.query_one("#body", Horizontal).mount(self._deck(), before=0)
        self.set_class(False, "-focus")
        self._replay_transcripts()
        self.refresh_view()

    # -- drawing ------------------------------------------------------------------------------

    def _size_side(self, width: int) -> None:
        """The side panel takes the matrix's width, up to half the terminal; a little more
        when that fits the whole grid and leaves the deck as many panes."""
        matrix = self.query_one(FavMatrix)
        side = min(matrix.natural_width() + 3, max(38, width // 2))
        narrowest = matrix.narrowest_width() + 3
        panes = max(1, (width - side) // PANE_WIDTH)
        if side < narrowest <= width - panes * PANE_WIDTH:
            side = narrowest
        self.query_one("#side").styles.width = side

    @on(FavMatrix.Resized)
    def _fit_side(self) -> None:
        """Compact matrix and metrics when the full ones would leave fewer than ``MIN_ROWS``
        matrix rows (or than all of them, when fewer) in the side panel (the title takes a line
        too)."""
        matrix = self.query_one(FavMatrix)
        height = self.query_one("#side").scrollable_content_region.height
        rows = height - 1 - matrix.full_chrome() - FULL_METRICS
        compact = rows < min(MIN_ROWS, len(matrix.names))
        matrix.set_compact(compact)
        line = self.query_one("#metrics-line", Static)
        line.set_class(compact, "-compact")
        if self._metrics is not None:
            show_content(line, (metrics_pair if compact else metrics_block)(self._metrics))

    def _pane(self, name: str) -> AgentPane:
        return self.query_one(AgentDeck).pane(name)

    def _write_turn(self, round_no: int, action: Action) -> None:
        self._pane(action.speaker).add_turn(round_no, action)
        if action.mode is Mode.PRIVATE and action.target:
            self._pane(action.target).add_turn(round_no, action)

    def _replay_transcripts(self) -> None:
        """Fill the transcripts from the latest saved rounds (a resumed or branched run) on
        a worker thread, newest round first: the screen is drawn at once, each older round
        appears above the newer ones as it is read, and the keys are answered meanwhile."""
        sim = self.sim
        last = len(sim.history) - 1  # rounds played from now on arrive as messages
        first = max(1, last + 1 - REPLAYED_ROUNDS)
        self.workers.cancel_group(self, "history")
        read = partial(self._read_history, sim, first, last, dict(self._logs))
        # once the screen is drawn: the first frame waits for no round read
        self.call_after_refresh(
            self.run_worker, read, thread=True, group="history", exit_on_error=False
        )

    def _read_history(
        self, sim: Simulation, first: int, last: int, carried: dict[int, RoundLog]
    ) -> None:
        """Read rounds ``last`` down to ``first`` of ``sim`` (on a worker thread; those
        ``carried`` are not read again) and hand each one's transcript lines to the
        screen."""
        worker = get_current_worker()
        names = sim.scenario.names
        try:
            for n in range(last, first - 1, -1):
                if self._pacer is not None:
                    self._pacer.give_way()  # a key first: it waits for no round read
                if worker.is_cancelled:
                    return
                log = carried.get(n)
                if log is None:
                    (log,) = sim.history.logs(n, n + 1, relations=False)  # nothing rebuilt
                self.app.call_from_thread(self._write_older, sim, transcript_lines(log), log)
        except SocialsimError as err:
            self.app.call_from_thread(self.notify, f"Reading the transcripts: {err}")
            return
        if first > 1 and not worker.is_cancelled:
            note = Text(f"R1-R{first - 1}: socialsim show {sim.run_id} --round N")
            note.stylize("dim italic")
            self.app.call_from_thread(self._write_older, sim, {name: [note] for name in names})
        self.app.call_from_thread(heap.settle_under, self.screen)  # the transcripts read

    def _write_older(
        self, sim: Simulation, lines: dict[str, list[Text]], log: RoundLog | None = None
    ) -> None:
        """Put an older round's ``lines`` (of ``log``) above each pane's transcript (unless
        another run is shown now)."""
        if sim is not self.sim:
            return
        if log is not None:
            self._keep_log(sim, log)
        deck = self.query_one(AgentDeck)
        for name, texts in lines.items():
            deck.pane(name).transcript.write_older(texts)

    def refresh_view(self, view: RoundView | None = None) -> None:
        """Redraw header, event bar, panes, matrix and metrics as of ``view`` (default: the
        latest round). While rounds are played on the engine thread, the round a
        ``RoundEnded`` message brings is drawn: it never changes, whatever that thread does."""
        sim = self.sim
        view = view or sim.history.view()
        record = view.log
        self.query_one(RunHeader).show(sim)
        strip = self.query_one(WarningStrip)
        if self._stopped is not None:
            strip.set_notice(self._stopped, stopped=True)
        else:
            strip.set_notice(fallback_text(record))
        self.query_one(RoundFeed).show(event_lines(sim, record))
        deltas = {c.agent: c.delta for c in record.emotion_changes}
        state = view.state
        deck = self.query_one(AgentDeck)
        for spec in sim.scenario.agents:
            pane = deck.pane(spec.name)
            pane.show_state(state.agents[spec.name], deltas.get(spec.name), state)
        changed = view.moved(CHANGED_AT)
        self.query_one(FavMatrix).show(state, changed, sim.meta.prior, sim.scenario.factions)
        self._title()
        self._size_side(self.app.size.width)
        self._metrics = sim.history.metrics(view.round)
        self._fit_side()
        deck.refresh_strip()

    # -- engine events ------------------------------------------------------------------------

    @on(messages.RoundStarted)
    def _round_started(self, message: messages.RoundStarted) -> None:
        if self._stopped is not None:
            self._stopped = None
            self.query_one(WarningStrip).set_notice(None)
        panes = self.query_one(AgentDeck).panes
        self._round_from = {p.spec.name: p.transcript.written for p in panes}
        for e in message.events:
            for name in e.private_to or []:
                self._pane(name).add_event(message.round, e)
        self._turns_over = set()
        self.query_one(RoundFeed).start(message.round, started_lines(message.round, message.events))

    @on(messages.Decided)
    @on(messages.Spoke)
    @on(messages.Judged)
    def _calls_moved(self) -> None:
        """A reply arrived: the header's calls done move on now, not at its next tick."""
        self.query_one(RunHeader).refresh()

    @on(messages.Decided)
    def _decided(self, message: messages.Decided) -> None:
        line = decision_line(message.round, message.agent, message.decision, message.forced)
        self.query_one(RoundFeed).decided(message.agent, message.decision, line)
        self._pane(message.agent).decided(line)

    @on(messages.TokensArrived)
    def _tokens_arrived(self, message: messages.TokensArrived) -> None:
        self.query_one(RoundFeed).stream(message.agent, message.text)
        self._pane(message.agent).stream(message.text)

    @on(messages.Spoke)
    def _spoke(self, message: messages.Spoke) -> None:
        self.query_one(RoundFeed).spoke(message.action)
        self._write_turn(message.round, message.action)
        self._turns_over.add(message.action.speaker)

    @on(messages.Judged)
    def _judged(self, message: messages.Judged) -> None:
        self.query_one(RoundFeed).note(judged_line(message.round, message.emotions, message.ties))

    #: The handler of each kind of :data:`~tui.messages.BURSTABLE` message, for a burst's.
    BURST_HANDLERS: ClassVar[dict[type, Callable[[RunView, Any], None]]] = {
        messages.RoundStarted: _round_started,
        messages.Decided: _decided,
        messages.Judged: _judged,
        messages.TokensArrived: _tokens_arrived,
        messages.Spoke: _spoke,
    }

    @on(messages.Burst)
    def _burst(self, message: messages.Burst) -> None:
        """Each message of a burst as its own handler takes it; the header moves on once."""
        for item in message.items:
            self.BURST_HANDLERS[type(item)](self, item)
        self._calls_moved()

    @on(messages.RoundEnded)
    def _round_ended(self, message: messages.RoundEnded) -> None:
        view = message.view
        self._keep_log(self.sim, view.log)
        for action in view.log.actions:
            if action.order is None and action.speaker not in self._turns_over:  # never spoke
                self._pane(action.speaker).add_turn(view.round, action)
        self._turns_over = set()
        self._round_from = {}
        self.refresh_view(view)
        if self._bridge is not None:
            self._bridge.drawn()


def transcript_lines(log: RoundLog) -> dict[str, list[Text]]:
    """Each agent's transcript lines of round ``log``, in order: the private events it
    received, then the turns it took or was told in private."""
    lines: dict[str, list[Text]] = {}
    t = log.round
    for e in log.events:
        for name in e.private_to or []:
            lines.setdefault(name, []).append(event_line(t, e))
    for action in sorted(log.actions, key=lambda a: (a.order is None, a.order or 0)):
        lines.setdefault(action.speaker, []).append(turn_line(t, action, action.speaker))
        if action.mode is Mode.PRIVATE and action.target:
            lines.setdefault(action.target, []).append(turn_line(t, action, action.target))
    return lines
