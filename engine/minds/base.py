"""The small interface every mind implements, and the context it receives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from ..core.changes import note_table, override_codes
from ..core.columns import AgentView
from ..core.exchanges import LLMCall
from ..core.priors import Prior
from ..core.rounding import rounded
from ..core.rules import ReadAct
from ..core.scenario import AgentSpec, Scenario, Status
from ..core.state import Action, AgentState, Decision, ScenarioEvent
from .question import Question
from .spec import MindSpec

if TYPE_CHECKING:
    import numpy as np

    from ..llm.journal import Journal

A = TypeVar("A", bound=BaseModel)
TokenSink = Callable[[str], None]


def no_sink(piece: str) -> None:
    """The sink of words nobody reads (a mind may skip cutting its words for it)."""


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

    def hearing(self, heard: list[Action]) -> AgentContext:
        """This context with ``heard``, the acts of the round the agent heard so far (its
        fields copied as they are: a round copies every agent's context twice)."""
        ctx = object.__new__(AgentContext)
        ctx.__dict__.update(self.__dict__, heard=heard)
        return ctx

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


@dataclass(eq=False, slots=True)
class JudgedEdges:
    """A round's judged edges as columns, before the rules clip them: edge ``k`` is
    ``source[k] -> target[k]`` (agents' positions in the state's columns), each observer's
    edges together, in the order it judged them; its status override is a code
    (:data:`~engine.core.changes.NO_OVERRIDE`: none) and its summary ``notes[note[k]]``."""

    source: np.ndarray
    target: np.ndarray
    delta: np.ndarray
    override: np.ndarray
    notes: list[str]
    note: np.ndarray
    importance: np.ndarray

    @classmethod
    def of(cls, judged: Sequence[Judgements], index: dict[str, int]) -> JudgedEdges:
        """The edges of each agent's :class:`Judgements` (agents in ``index``'s order)."""
        import numpy as np

        sizes = [len(j.relations) for j in judged]
        edges = list(chain.from_iterable(j.relations.values() for j in judged))
        targets = chain.from_iterable(j.relations for j in judged)
        count = len(edges)
        notes, note = note_table([e[2] for e in edges])
        return cls(
            source=np.repeat(np.arange(len(judged), dtype=np.intp), sizes),
            target=np.fromiter(map(index.__getitem__, targets), np.intp, count=count),
            delta=np.array([e[0] for e in edges], float).reshape(count),
            override=override_codes([e[1] for e in edges]),
            notes=notes,
            note=note,
            importance=np.fromiter((e[3] for e in edges), np.int64, count=count),
        )

    def with_extra(
        self, extra: dict[int, dict[str, Edge]], rows: np.ndarray, index: dict[str, int]
    ) -> JudgedEdges:
        """These edges with ``extra``'s (by the position of their observer in ``rows``,
        targets by name, ``index`` their positions) merged in: an edge judged already gets
        the extra delta (rounded to 4 places) and keeps the more important note, a new one
        follows its observer's."""
        import numpy as np

        added = [
            (k, index[other], *edge)
            for k, more in sorted(extra.items())
            for other, edge in more.items()
        ]
        if not added:
            return self
        k_of, j, d, o, texts, imp = zip(*added, strict=True)
        row = rows[np.array(k_of, np.intp)]
        col = np.array(j, np.intp)
        notes = [*self.notes, *texts]
        codes = np.arange(len(self.notes), len(notes), dtype=np.intp)
        n = len(index)
        keys = self.source.astype(np.int64) * n + self.target
        order = np.argsort(keys, kind="stable")
        wanted = row.astype(np.int64) * n + col
        at = np.minimum(np.searchsorted(keys, wanted, sorter=order), max(len(keys) - 1, 0))
        m = order[at] if len(keys) else at
        found = keys[m] == wanted if len(keys) else np.zeros(len(wanted), bool)
        delta, note = self.delta.copy(), self.note.copy()
        importance = self.importance.copy()
        extra_delta = np.array(d, float)
        extra_importance = np.array(imp, np.int64)
        old, new = m[found], np.flatnonzero(found)
        delta[old] = rounded(delta[old] + extra_delta[new], 4)
        better = importance[old] < extra_importance[new]
        note[old[better]] = codes[new[better]]
        importance[old[better]] = extra_importance[new[better]]
        fresh = np.flatnonzero(~found)
        if not len(fresh):
            return JudgedEdges(
                self.source, self.target, delta, self.override, notes, note, importance
            )
        # after the last of its observer's edges (edges are grouped by observer, in order)
        where = np.searchsorted(self.source, row[fresh], side="right")
        return JudgedEdges(
            np.insert(self.source, where, row[fresh]),
            np.insert(self.target, where, col[fresh]),
            np.insert(delta, where, extra_delta[fresh]),
            np.insert(self.override, where, override_codes([o[f] for f in fresh.tolist()])),
            notes,
            np.insert(note, where, codes[fresh]),
            np.insert(importance, where, extra_importance[fresh]),
        )


class NeedRows(Sequence[dict[str, float]]):
    """Every agent's need deltas as one matrix, each agent's needs in the order ``names``:
    ``kept[i, k]`` where ``moved[i, k]`` (a row read as a dict, the dicts made when one is
    first read; the update step reads the matrix itself)."""

    __slots__ = ("_rows", "kept", "moved", "names")

    def __init__(self, names: Sequence[str], kept: np.ndarray, moved: np.ndarray) -> None:
        self.names, self.kept, self.moved = tuple(names), kept, moved
        self._rows: list[dict[str, float]] | None = None

    def __len__(self) -> int:
        return len(self.kept)

    def __getitem__(self, row: Any) -> Any:
        if self._rows is None:
            names = self.names
            self._rows = [
                dict(compress(zip(names, kept, strict=True), moved))
                for kept, moved in zip(self.kept.tolist(), self.moved.tolist(), strict=True)
            ]
        return self._rows[row]


class RoundJudgements(NamedTuple):
    """What every agent judged of a round, agents in the state's order: U_S, the need
    deltas (a :class:`NeedRows` from a judge that weighs them at once) and U_R of the
    edges (:class:`JudgedEdges`)."""

    emotions: list[float]
    needs: Sequence[dict[str, float]]
    edges: JudgedEdges

    @classmethod
    def of(cls, judged: Sequence[Judgements], index: dict[str, int]) -> RoundJudgements:
        return cls(
            [j.emotion for j in judged], [j.needs for j in judged], JudgedEdges.of(judged, index)
        )


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

    def server_slots(self) -> dict[str, int]:
        """endpoint -> the requests its server said it decodes at once (0: it did not say),
        once asked."""
        ...


@runtime_checkable
class PlansCalls(Protocol):
    """A mind whose turns are model calls: how many a part of a round takes, so the round's
    progress says the calls it expects from its own plan (a mind without: none)."""

    def planned_calls(self, purpose: str, agents: Sequence[str], edges: int = 0) -> int:
        """The calls ``purpose`` takes (``narrate``, ``decide`` and ``speak`` for ``agents``,
        ``judge`` with ``agents`` observing and ``edges`` relations triggered)."""
        ...


@runtime_checkable
class Resumable(Protocol):
    """A mind that takes a saved run up where it stopped: the journal of the round in play
    (``engine.llm.journal``), and what the run found its servers take."""

    def keep_journal(self, journal: Journal) -> bool:
        """Journal the exchanges in ``journal``, serving the ones it holds; False if this
        mind's exchanges are not journaled (a replay's)."""
        ...

    def settle(self, modes: dict[str, str], roles: dict[str, str], slots: dict[str, int]) -> None:
        """Use each model's saved structured mode and system role, and each endpoint's
        slots, from the first call."""
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
    :meth:`judge_round` once instead of gathering three coroutines per agent."""

    def judge_round(self, ctxs: Sequence[AgentContext], acts: list[ReadAct]) -> RoundJudgements:
        """U_S, U_R and need deltas of every one of ``ctxs``' agents (in the state's order;
        each context's ``heard`` is what it observed) of the round's ``acts``, read
        (:func:`~engine.core.rules.read_acts`)."""
        ...
