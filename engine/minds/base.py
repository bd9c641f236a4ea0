"""The small interface every mind implements, and the context it receives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from ..core.columns import AgentView
from ..core.exchanges import LLMCall
from ..core.priors import Prior
from ..core.rules import ReadAct
from ..core.scenario import AgentSpec, Scenario, Status
from ..core.state import Action, AgentState, Decision, ScenarioEvent
from .question import Question
from .spec import MindSpec

A = TypeVar("A", bound=BaseModel)
TokenSink = Callable[[str], None]


@dataclass(frozen=True)
class PastRound:
    """What one agent observed in an earlier round."""

    round: int
    events: list[ScenarioEvent]
    actions: list[Action]


@dataclass(frozen=True)
class AgentContext:
    """Context assembly (Sociodrama Sec. 3.3): all one agent may know right now."""

    scenario: Scenario
    persona: AgentSpec
    #: The agent's row of the state it acts in (:attr:`state` is its validated model).
    view: AgentView
    round: int
    events: list[ScenarioEvent]
    #: The run's total rounds (``--rounds`` may differ from the scenario's T).
    total_rounds: int = 0
    history: list[PastRound] = field(default_factory=list)
    heard: list[Action] = field(default_factory=list)
    #: The run's relational prior (Relational priors paper), rendered into the system prompt.
    prior: Prior | None = None

    @property
    def name(self) -> str:
        """The agent's name."""
        return self.persona.name

    @property
    def state(self) -> AgentState:
        """The agent's state as a validated model (built when first read)."""
        return self.view.state()

    @property
    def rounds(self) -> int:
        """T as the run plays it: the run's total, else the scenario's."""
        return self.total_rounds or self.scenario.rounds

    @property
    def others(self) -> list[str]:
        """Every other agent, in scenario order."""
        return [n for n in self.scenario.names if n != self.persona.name]


#: One edge's U_R as the round applies it: (delta, status override, summary, importance).
Edge = tuple[float, Status | None, str, int]


class RelationJudgement(BaseModel):
    """U_R output for one edge (Sociodrama Sec. 3.3, App. B)."""

    delta: float
    status: Status | None = None
    summary: str = ""
    importance: int = Field(default=1, ge=1, le=10)

    def edge(self) -> Edge:
        """The judgement as the round applies it."""
        return (self.delta, self.status, self.summary, self.importance)

    @classmethod
    def of_edge(cls, edge: Edge) -> RelationJudgement:
        """The judgement of an edge a rule judged."""
        delta, status, summary, importance = edge
        return cls(delta=delta, status=status, summary=summary, importance=importance)


class Judgements(NamedTuple):
    """What one observer judged of a round: U_S, U_R of each triggered edge, need deltas."""

    emotion: float
    relations: dict[str, Edge]
    needs: dict[str, float]


class Mind(Protocol):
    """Decides (phase 1), speaks (phase 2) and judges updates (U_S, U_R, needs)."""

    @property
    def spec(self) -> MindSpec:
        """Which mind this is (saved with the run)."""
        ...

    @property
    def label(self) -> str:
        """Plain name shown in the UI and CLI, e.g. "offline rule-based model"."""
        ...

    @property
    def judge_mode(self) -> str:
        """How relations are judged: "per-edge" (one U_R call per edge) or "batched"."""
        ...

    async def ask(self, question: Question[A]) -> A:
        """Any structured question outside the round loop: by rule, or of a model."""
        ...

    async def decide(self, ctx: AgentContext) -> Decision:
        """Phase 1: urgency, mode, target, stance and a one-sentence intent."""
        ...

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        """Phase 2: the utterance, streamed piece by piece into ``sink``."""
        ...

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        """U_S: a signed emotion delta from the events visible to the agent."""
        ...

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        """U_R for each triggered edge ctx.name -> j, from the events E_ij."""
        ...

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        """Signed need deltas after observing the round."""
        ...

    def take_calls(self) -> list[LLMCall]:
        """The model exchanges made since the last call (empty for rule-based minds)."""
        ...

    def stop_reason(self) -> str | None:
        """Why the run must stop after the current round (a call or budget cap), if any."""
        ...

    def structured_modes(self) -> dict[str, str]:
        """How each model is asked for structured replies (schema, json, text; none offline)."""
        ...

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        """Count a resumed run's recorded exchanges toward the caps."""
        ...

    async def narrate(self, scenario: Scenario, round_no: int, scene: str) -> str:
        """The game master's telling of a scene (scenarios with ``narrator = "llm"``)."""
        ...

    async def aclose(self) -> None:
        """Release network clients."""
        ...


@runtime_checkable
class TalksToServers(Protocol):
    """A mind whose models are served over HTTP (an LLM mind): lines the user must read at
    once, which the simulation emits as :class:`~engine.round.events.Notice`, and where each
    model's system text goes, which the run metadata records (see ``engine.llm.tokens``)."""

    def take_notices(self) -> list[str]:
        """The lines since the last call."""
        ...

    def system_roles(self) -> dict[str, str]:
        """model -> keep or merge, for the models whose first exchange showed it."""
        ...


@runtime_checkable
class DecidesAtOnce(Protocol):
    """A mind that decides for a round's agents in one call (the offline mind weighs their
    candidate acts together): phase 1 calls :meth:`decide_all` instead of gathering a
    :meth:`Mind.decide` coroutine per agent."""

    async def decide_all(self, ctxs: Sequence[AgentContext]) -> list[Decision]:
        """:meth:`Mind.decide` for each of ``ctxs``, in order."""
        ...


@runtime_checkable
class RuleJudge(Protocol):
    """A mind whose judges are rules that never wait (the offline mind): the round calls
    :meth:`judge_now` for each observer instead of gathering three coroutines per agent."""

    def judge_now(self, ctx: AgentContext, triggers: dict[str, list[ReadAct]]) -> Judgements:
        """U_S, U_R (of the edges ``triggers`` names, its acts read once a round:
        :func:`~engine.core.rules.triggers_among`) and need deltas of ``ctx``'s agent, from what
        it observed (``ctx.heard``)."""
        ...
