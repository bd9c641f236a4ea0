"""The view of one run: header, warning strip, event strip, agent deck, favorability matrix
and metrics.

It listens to the run's engine events (as :mod:`tui.messages`) and keeps its widgets in
step with them; :meth:`RunView.show` switches it to another run. In focus mode the deck
shows one agent and the side panel steps aside.
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.reactive import var
from textual.widgets import Static

from engine import Action, Metrics, Mode, RoundRecord, Simulation

from .. import messages
from ..engine_thread import Pacer
from ..event_bridge import EventBridge
from ..relations import Selection
from ..report import metrics_block, metrics_pair
from .agent_pane import AgentPane
from .deck import PANE_WIDTH, AgentDeck
from .feed import FeedScroll, RoundFeed, decision_line, judged_line
from .header import (
    RunHeader,
    WarningStrip,
    event_lines,
    fallback_text,
    started_lines,
    stopped_text,
)
from .matrix import FavMatrix, prior_title

FAV_TITLE = "favorability  row → column"
#: Rounds whose turns a reopened run replays into the transcripts (the save holds them all).
REPLAYED_ROUNDS = 20
#: Below this many matrix rows in view the side panel goes compact (metrics on two lines, no
#: sticky note).
MIN_ROWS = 8
FULL_METRICS = 7  # a blank line and one line per metric


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
        self._stopped: str | None = None  # why the run stopped degraded, until a round starts
        self._metrics: Metrics | None = None  # as of the round drawn

    def compose(self) -> ComposeResult:
        yield RunHeader(self.sim, id="header").data_bind(RunView.running)
        yield WarningStrip(id="warning")
        with FeedScroll(id="feed"):
            yield RoundFeed(id="event").data_bind(live=RunView.running)
        with Horizontal(id="body"):
            yield self._deck()
            with ScrollableContainer(id="side", can_focus=False):
                yield Static(FAV_TITLE, id="side-title")
                yield FavMatrix(
                    self.sim.state, self.sim.meta.prior, self.sim.scenario.factions, id="matrix"
                )
                yield Static(id="metrics-line")

    def _deck(self) -> AgentDeck:
        panes = [
            AgentPane(spec, self.sim.state.agents[spec.name], id=f"pane-{k}")
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

    def show(self, sim: Simulation) -> None:
        """Switch to another run (a branch, or a run opened from the browser)."""
        if self._bridge is not None:
            self._bridge.close()
        self.sim = sim
        self._stopped = None
        self._bridge = EventBridge(sim, self.post_message, pacer=self._pacer)
        self.call_after_refresh(self._swap_deck)

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
        self.query_one("#side-title", Static).update(title)

    def stopped_degraded(self, message: str) -> None:
        """Keep the engine's line about a degraded stop in view until another round starts."""
        self._stopped = message
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
            line.update((metrics_pair if compact else metrics_block)(self._metrics))

    def _pane(self, name: str) -> AgentPane:
        return self.query_one(AgentDeck).pane(name)  # mounted or not yet

    def _write_turn(self, round_no: int, action: Action) -> None:
        self._pane(action.speaker).add_turn(round_no, action)
        if action.mode is Mode.PRIVATE and action.target:
            self._pane(action.target).add_turn(round_no, action)

    def _replay_transcripts(self) -> None:
        """Fill the transcripts from the latest saved rounds (a resumed or branched run)."""
        history = self.sim.history
        first = max(1, len(history) - REPLAYED_ROUNDS)
        if first > 1:
            note = Text(f"R1-R{first - 1}: socialsim show {self.sim.run_id} --round N")
            note.stylize("dim italic")
            for pane in self.query_one(AgentDeck).panes:
                pane.transcript.write(note)
        for record in history.logs(first, relations=False):  # what was said: nothing rebuilt
            for e in record.events:
                for name in e.private_to or []:
                    self._pane(name).add_event(record.round, e)
            for action in sorted(record.actions, key=lambda a: (a.order is None, a.order or 0)):
                self._write_turn(record.round, action)

    def refresh_view(self, record: RoundRecord | None = None) -> None:
        """Redraw header, event bar, panes, matrix and metrics as of ``record`` (default: the
        latest round). While rounds are played on the engine thread, the record a
        ``RoundEnded`` message brings is drawn: it never changes, whatever that thread does."""
        sim = self.sim
        record = record or sim.records[-1]
        self.query_one(RunHeader).show(sim)
        strip = self.query_one(WarningStrip)
        if self._stopped is not None:
            strip.set_notice(stopped_text(sim, self._stopped), stopped=True)
        else:
            strip.set_notice(fallback_text(record))
        self.query_one(RoundFeed).show(event_lines(sim, record))
        deltas = {c.agent: c.delta for c in record.emotion_changes}
        state = record.state
        for spec in sim.scenario.agents:
            pane = self._pane(spec.name)
            pane.show_state(state.agents[spec.name], deltas.get(spec.name), state)
        changed = {
            (c.source, c.target)
            for c in record.relation_changes
            if abs(c.delta) >= 0.005 or c.status != c.previous_status
        }
        self.query_one(FavMatrix).show(state, changed, sim.meta.prior, sim.scenario.factions)
        self._title()
        self._size_side(self.app.size.width)
        self._metrics = sim.history.metrics(record.round)
        self._fit_side()
        self.query_one(AgentDeck).refresh_strip()

    # -- engine events ------------------------------------------------------------------------

    @on(messages.RoundStarted)
    def _round_started(self, message: messages.RoundStarted) -> None:
        if self._stopped is not None:
            self._stopped = None
            self.query_one(WarningStrip).set_notice(None)
        for e in message.events:
            for name in e.private_to or []:
                self._pane(name).add_event(message.round, e)
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

    @on(messages.Judged)
    def _judged(self, message: messages.Judged) -> None:
        self.query_one(RoundFeed).note(judged_line(message.round, message.emotions, message.ties))

    @on(messages.RoundEnded)
    def _round_ended(self, message: messages.RoundEnded) -> None:
        record = message.record
        for action in record.actions:
            if action.order is None:  # silent: no Spoke message came for it
                self._pane(action.speaker).add_turn(record.round, action)
        self.refresh_view(record)
        if self._bridge is not None:
            self._bridge.drawn()
