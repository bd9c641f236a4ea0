"""A run whose rounds a study plays itself (a debate's turns): saved, listed, shown and
exported as any run's."""

from __future__ import annotations

from ..core.changes import RoundChanges
from ..core.played import PlayedRound
from ..core.state import Action, RoundRecord, ScenarioEvent
from .events import RoundEnded, RoundStarted
from .simulation import Simulation


class StudyRun(Simulation):
    """A simulation that also saves rounds played outside the engine's phases."""

    def record(self, events: list[ScenarioEvent], actions: list[Action]) -> RoundRecord:
        """Save the next round as the study played it: ``events`` and ``actions`` as given,
        the mind's exchanges since the last round, no change to the state. Listeners see it
        start and end as any round."""
        t = self.round + 1
        self._emit(RoundStarted(run_id=self.run_id, round=t, events=events))
        changes = RoundChanges.none(t, self.scenario.names)
        played = PlayedRound(t, events, actions, changes, self._columns.apply(changes))
        self._record_round(played)
        self._emit(RoundEnded(run_id=self.run_id, round=t, played=played))
        return played.record()
