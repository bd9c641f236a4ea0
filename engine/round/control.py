"""What a run takes between rounds, as methods of :class:`RunControl` (which
:class:`~engine.round.simulation.Simulation` is): a forced action or an injected event
queued for the next round, taken off the queue, a snapshot, the people who play, a task's
outcome; each saved with the run's metadata at once."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from ..core.scenario import Scenario
from ..core.state import ForcedAction, Pending, ScenarioEvent
from ..errors import InterventionError, RunFinishedError, SocialsimError
from ..minds.human import check_players
from ..saves.runmeta import RunMeta, Snapshot, TaskOutcome, now_iso
from ..saves.store import SaveStore
from .interventions import forced_action, injected_event, without


class RunControl(ABC):
    """The interventions and bookmarks of a run (a mixin of the simulation)."""

    meta: RunMeta
    store: SaveStore | None
    #: The interventions a round in flight took (``None`` between rounds).
    _taken: Pending | None
    #: The total of rounds the save records (an extension is written with its first round).
    _saved_total: int

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    @property
    def scenario(self) -> Scenario:
        return self.meta.scenario

    @property
    @abstractmethod
    def round(self) -> int:
        """Rounds finished so far."""

    @property
    def total_rounds(self) -> int:
        return self.meta.total_rounds

    @property
    def pending(self) -> Pending:
        """Interventions queued for the next round."""
        return self.meta.pending

    def force(self, action: ForcedAction) -> None:
        """Behaviour control: replace an agent's action in the next round."""
        action = forced_action(action, self.scenario.names)
        kept = [f for f in self.pending.forced if f.agent != action.agent]
        self._queue(self.pending.model_copy(update={"forced": [*kept, action]}))

    def inject(
        self,
        text: str,
        private_to: Sequence[str] | None = None,
        *,
        valence: float | None = None,
        about: Sequence[str] = (),
        implicates: Sequence[str] | None = None,
    ) -> None:
        """Scenario branching: add an event to the next round. Its meaning (``valence``
        -1..1, whom it is ``about`` and whom it ``implicates``) is read from the text where
        not given (:func:`~engine.core.meaning.meaning_of`)."""
        names = self.scenario.names
        event = injected_event(text, names, private_to, valence, about, implicates)
        self._queue(self.pending.model_copy(update={"events": [*self.pending.events, event]}))

    def record_outcome(self, outcome: TaskOutcome) -> None:
        """Save a task episode's outcome with the run."""
        self.meta = self.meta.model_copy(update={"outcome": outcome})
        self._save_meta()

    def snapshot(self, name: str) -> Snapshot:
        """Bookmark the current round under a name."""
        if not name.strip():
            raise SocialsimError("snapshot: the name is empty")
        snap = Snapshot(name=name.strip(), round=self.round, created=now_iso())
        self.meta = self.meta.model_copy(update={"snapshots": [*self.meta.snapshots, snap]})
        self._save_meta()
        return snap

    def play(self, players: Mapping[str, str]) -> None:
        """Who plays which agent from the next round on (agent -> player's name; the name
        defaults to the agent's); every other agent is the mind's. Saved with the run, and
        kept by its branches."""
        checked = check_players(players, self.scenario.names)
        self.meta = self.meta.model_copy(update={"players": checked})
        self._save_meta()

    @property
    def queue(self) -> list[ForcedAction | ScenarioEvent]:
        """The interventions queued for the next round: forced turns, then events."""
        return [*self.pending.forced, *self.pending.events]

    def unqueue(self, index: int) -> ForcedAction | ScenarioEvent:
        """Remove the queued intervention at ``index`` of :attr:`queue` and return it."""
        queue = self.queue
        if not 0 <= index < len(queue):
            raise InterventionError(
                f"unqueue: no queued intervention {index + 1} (there are {len(queue)})"
            )
        item = queue[index]
        self._set_pending(without(self.pending, [item]))
        return item

    def _queue(self, pending: Pending) -> None:
        """Queue ``pending`` for the next round, which a finished run does not have (nor a
        run playing its last round: what is queued then waits for the round after it)."""
        after = self.round + 1 + (self._taken is not None)  # the round it would apply to
        if after > self.meta.total_rounds:
            raise RunFinishedError(
                f"run {self.run_id!r} ends at round {self.total_rounds}: nothing can be "
                f"queued for round {after}; extend it (resume --rounds N) or branch it"
            )
        self._saved_total = self.meta.total_rounds  # an extension is saved with its queue
        self._set_pending(pending)

    def _set_pending(self, pending: Pending) -> None:
        self.meta = self.meta.model_copy(
            update={"pending": pending, "pending_round": self.round + 1}
        )
        self._save_meta()

    def _save_meta(self) -> None:
        """Write the metadata, with the total of rounds the save already records."""
        if self.store is not None:
            self.store.write_meta(self.meta.model_copy(update={"total_rounds": self._saved_total}))

