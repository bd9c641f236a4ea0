"""Typed progress events the engine emits while a run advances."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, InstanceOf

from ..core.changes import RoundChanges
from ..core.played import PlayedRound
from ..core.state import Action, Decision, EmotionChange, RelationChange, RoundRecord, ScenarioEvent
from ..core.view import RoundView


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    round: int


class RoundStarted(_Event):
    """A round began; ``events`` are its scenario events."""

    kind: Literal["round_started"] = "round_started"
    events: list[ScenarioEvent]


class AgentDecided(_Event):
    """Phase 1 finished for one agent."""

    kind: Literal["decided"] = "decided"
    agent: str
    decision: Decision
    forced: bool = False


class TokenStreamed(_Event):
    """A piece of an utterance being generated in phase 2."""

    kind: Literal["token"] = "token"
    agent: str
    text: str


class AgentSpoke(_Event):
    """Phase 2 finished for one speaker: its action, silent (no utterance, no order) when
    its words were empty or not speech (they may have streamed before they were judged)."""

    kind: Literal["spoke"] = "spoke"
    action: Action


class StateUpdated(_Event):
    """Emotion and relation updates of the round were applied (their models are built for
    the listener that reads them)."""

    kind: Literal["state_updated"] = "state_updated"
    changes: InstanceOf[RoundChanges]

    @property
    def emotions(self) -> list[EmotionChange]:
        return self.changes.emotions

    @property
    def relations(self) -> list[RelationChange]:
        return self.changes.relation_changes()


class RoundEnded(_Event):
    """A round finished and was saved; its record is built for the listener that reads it."""

    kind: Literal["round_ended"] = "round_ended"
    played: InstanceOf[PlayedRound]

    @property
    def record(self) -> RoundRecord:
        return self.played.record()

    @property
    def view(self) -> RoundView:
        """The round as a screen draws it (no model an edge)."""
        return self.played.view()


class RunPaused(_Event):
    """A run stopped at a safe point because a pause was requested."""

    kind: Literal["paused"] = "paused"
    reason: str = ""


class RunFinished(_Event):
    """A run reached its last planned round."""

    kind: Literal["finished"] = "finished"


class Notice(_Event):
    """Something the user must know at once about the run's models (a server that drops
    the system message, a prompt cut short)."""

    kind: Literal["notice"] = "notice"
    message: str


class EngineError(_Event):
    """A round failed; the run stays at the last saved round."""

    kind: Literal["error"] = "error"
    message: str


SimEvent = (
    RoundStarted
    | AgentDecided
    | TokenStreamed
    | AgentSpoke
    | StateUpdated
    | RoundEnded
    | RunPaused
    | RunFinished
    | Notice
    | EngineError
)
