"""The numbers of a state that tables show, rolled forward from round files without building
the state's models: each agent's emotion, each edge's favorability and status, each need's
current and expected value (memories and theta are left out).

Reading a long run for its tables (the export) applies each round file's changes to these
plain dicts in place, which costs a fraction of rebuilding every round's
:class:`~engine.core.state.WorldState`. Dicts keep the state's order (agents, their relations
and needs), so rows come out in the order the state would give them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.scenario import Status
from ..core.state import WorldState
from .roundfile import RoundFile


@dataclass(slots=True)
class StateValues:
    """What tables show of one state; :meth:`after` moves it on by one round."""

    round: int
    emotions: dict[str, float]
    #: (favorability, status) by source, then target.
    relations: dict[str, dict[str, tuple[float, Status]]]
    #: (current, expected) by agent, then need.
    needs: dict[str, dict[str, tuple[float, float]]]

    @classmethod
    def of(cls, state: WorldState) -> StateValues:
        agents = state.agents
        return cls(
            round=state.round,
            emotions={name: a.emotion for name, a in agents.items()},
            relations={
                name: {t: (r.fav, r.status) for t, r in a.relations.items()}
                for name, a in agents.items()
            },
            needs={
                name: {n: (v.current, v.expected) for n, v in a.needs.items()}
                for name, a in agents.items()
            },
        )

    def after(self, file: RoundFile) -> StateValues:
        """The values after ``file``'s round, the round after this one: these, changed in
        place as :meth:`RoundFile.apply` changes a state, or a keyframe's own."""
        if file.keyframe is not None:
            return StateValues.of(file.keyframe.state)
        self.round = file.round
        emotions = self.emotions
        for change in file.emotion_changes:
            emotions[change.agent] = change.emotion
        cols, relations = file.relations, self.relations
        for source, target, fav, status in zip(
            cols.source, cols.target, cols.fav, cols.status, strict=True
        ):
            relations[source][target] = (fav, status)
        for name, moved in file.needs.items():
            needs = self.needs[name]
            for need, current in moved.items():
                needs[need] = (current, needs[need][1])
        return self
