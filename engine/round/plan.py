"""The model calls a round is expected to make, from its own plan: who decides, who speaks,
which edges are judged, each known from its phase on. Before a phase the round does not know
yet (its speakers, its edges), the calls that phase made in the round before stand in, and
in a run's first round a bound (every decider speaks; no edge is judged).

The round loop tells :meth:`engine.llm.progress.Calls.phase` what each phase and the later
ones are expected to take; ``socialsim run``'s bar and the app's header read it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.rules import read_acts, triggers_among
from ..core.state import Action, Decision, Mode
from ..minds import Mind
from ..minds.base import PlansCalls


@dataclass(frozen=True)
class CallPlan:
    """The calls left in a round of ``names``, by ``mind``; ``last``: the calls each phase
    of the round before made; ``judges``: the round is judged (not an ablation)."""

    mind: Mind
    names: Sequence[str]
    last: Mapping[str, int]
    judges: bool = True
    #: The mind if it plans its calls (a protocol's check, made once a round), else None.
    planner: PlansCalls | None = field(init=False)

    def __post_init__(self) -> None:
        planner = self.mind if isinstance(self.mind, PlansCalls) else None
        object.__setattr__(self, "planner", planner)

    def _calls(self, purpose: str, agents: Sequence[str], edges: int = 0) -> int:
        if self.planner is None:
            return 0
        return self.planner.planned_calls(purpose, agents, edges)

    def _later(self, phase: str, deciders: Sequence[str] | None = None) -> int:
        """A later phase's calls: as in the round before, else the bound."""
        if phase in self.last:
            return self.last[phase]
        if phase == "speak":
            return self._calls("speak", deciders or ())
        return self._calls("judge", self.names) if self.judges else 0

    def narrate(self, narrates: bool, deciders: Sequence[str]) -> int:
        """From the narration on (``narrates``: the model tells it)."""
        told = self._calls("narrate", ()) if narrates else 0
        return told + self.decide(deciders)

    def decide(self, deciders: Sequence[str]) -> int:
        """From phase 1 on, ``deciders`` deciding (the agents not forced)."""
        return (
            self._calls("decide", deciders) + self._later("speak", deciders) + self._later("judge")
        )

    def speak(self, decisions: Mapping[str, Decision], forced: Mapping[str, object]) -> int:
        """From phase 2 on: the agents that decided to speak, but for the forced ones."""
        speakers = [
            n for n, d in decisions.items() if d.mode is not Mode.SILENT and n not in forced
        ]
        return self._calls("speak", speakers) + self._later("judge")

    def judge(self, actions: Mapping[str, Action]) -> int:
        """Phase 3: every agent judges; each edge the round's utterances triggered."""
        if not self.judges or self.planner is None:
            return 0
        acts = read_acts(a for a in actions.values() if a.order)
        edges = sum(len(triggers_among(n, acts)) for n in self.names)
        return self._calls("judge", self.names, edges)
