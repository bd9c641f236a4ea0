"""Run state and round records: the persisted structures of a simulation."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .exchanges import LLMCall, RoundUsage
from .scenario import Status

ALL = "all"


class Mode(StrEnum):
    """Visibility of an action (Sociodrama Eq. 3): public, private or silence."""

    PUBLIC = "public"
    PRIVATE = "private"
    SILENT = "silent"


Stance = Literal["support", "oppose", "neutral"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class MemoryEntry(_Model):
    """One remembered event of a relationship (Sociodrama Sec. 3.3)."""

    round: int
    summary: str
    importance: Annotated[int, Field(ge=1, le=10)]


class Relation(_Model):
    """R_ij = (fav, status, memory): how one agent regards another."""

    fav: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.0
    status: Status = Status.NEUTRAL
    memory: list[MemoryEntry] = []


class NeedState(_Model):
    """Current and expected value of a need (0-10)."""

    current: Annotated[float, Field(ge=0.0, le=10.0)]
    expected: Annotated[float, Field(ge=0.0, le=10.0)]


class AgentState(_Model):
    """The dynamic state of one agent: emotion, needs, outgoing relations and, for
    value-driven agents, the social orientation theta (degrees, Eq. 2 of EduMirror)."""

    emotion: Annotated[float, Field(ge=0.0, le=1.0)]
    needs: dict[str, NeedState]
    relations: dict[str, Relation]
    theta: float | None = None


class WorldState(_Model):
    """Every agent's state after ``round`` rounds (round 0 is the start)."""

    round: int = 0
    agents: dict[str, AgentState]


class ScenarioEvent(_Model):
    """A round's event: scripted by the scenario or injected by the user."""

    text: str = Field(min_length=1)
    private_to: list[str] | None = None
    source: Literal["scripted", "injected", "narrator"] = "scripted"
    tone: Literal["neutral", "supportive", "protective", "punitive", "hostile"] = "neutral"
    about: list[str] = []

    def visible_to(self, name: str) -> bool:
        """Whether the named agent observes this event."""
        return self.private_to is None or name in self.private_to


class Decision(_Model):
    """Phase 1 output: whether, how and to whom an agent will speak."""

    urgency: Annotated[float, Field(ge=0.0, le=10.0)]
    mode: Mode
    target: str | None = None
    intent: str = ""
    stance: Stance = "neutral"
    theta: float | None = None


class Action(_Model):
    """A taken action: the decision plus the utterance spoken in phase 2."""

    speaker: str
    urgency: float
    mode: Mode
    target: str | None = None
    intent: str = ""
    stance: Stance = "neutral"
    utterance: str = ""
    order: int | None = None
    forced: bool = False
    theta: float | None = None
    #: Who chose the action: the run's mind, or a person playing the agent (``player``).
    actor: Literal["model", "human"] = "model"
    player: str = ""


class ForcedAction(_Model):
    """Behaviour control: the user's action for an agent in the next round."""

    agent: str
    mode: Mode
    target: str | None = None
    utterance: str = ""
    urgency: Annotated[float, Field(ge=0.0, le=10.0)] = 10.0
    stance: Stance | None = None


class RelationChange(_Model):
    """One U_R outcome applied to the edge source -> target."""

    source: str
    target: str
    delta: float
    fav: float
    status: Status
    previous_status: Status
    override: Status | None = None
    summary: str = ""
    importance: int = 1


class EmotionChange(_Model):
    """One U_S outcome: the clipped delta and the new emotion."""

    agent: str
    delta: float
    emotion: float


class Pending(_Model):
    """Interventions queued for the next round."""

    forced: list[ForcedAction] = []
    events: list[ScenarioEvent] = []


class RoundLog(_Model):
    """Everything that happened in one round: what a round file holds, minus the state."""

    round: int
    events: list[ScenarioEvent] = []
    actions: list[Action] = []
    emotion_changes: list[EmotionChange] = []
    relation_changes: list[RelationChange] = []
    need_deltas: dict[str, dict[str, float]] = {}
    llm_calls: list[LLMCall] = []
    usage: RoundUsage | None = None


class RoundRecord(RoundLog):
    """Everything that happened in one round and the state after it."""

    state: WorldState
