"""A round as the engine holds it after playing it: what happened, what it changed and the
state after it as columns; its pydantic :class:`~engine.core.state.RoundRecord` (every
relation change and the whole state, validated) is built only when asked for, where the
round leaves the engine (the public API, the UI, a keyframe)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .changes import RoundChanges
from .columns import StateColumns
from .exchanges import LLMCall, RoundUsage
from .state import Action, RoundLog, RoundRecord, ScenarioEvent
from .view import RoundView


class PastActs(Protocol):
    """What context assembly reads of an earlier round (a record, or a round just played)."""

    @property
    def round(self) -> int: ...

    @property
    def events(self) -> list[ScenarioEvent]: ...

    @property
    def actions(self) -> list[Action]: ...


@dataclass(eq=False, slots=True)
class PlayedRound:
    """Round ``round`` as played: its events and actions, its LLM exchanges and usage, its
    :class:`RoundChanges` and the state after it (``after``)."""

    round: int
    events: list[ScenarioEvent]
    actions: list[Action]
    changes: RoundChanges
    after: StateColumns
    llm_calls: list[LLMCall] = field(default_factory=list)
    usage: RoundUsage | None = None
    _record: RoundRecord | None = None

    def log(self, relations: bool = True) -> RoundLog:
        """What happened in the round, without the state (the record's, once built);
        without its relation changes too unless ``relations`` (:attr:`changes` has them)."""
        if self._record is not None:
            return self._record
        return RoundLog(**self._log_fields(relations))

    def _log_fields(self, relations: bool = True) -> dict[str, Any]:
        changes = self.changes
        return {
            "round": self.round,
            "events": self.events,
            "actions": self.actions,
            "emotion_changes": changes.emotions,
            "relation_changes": changes.relation_changes() if relations else [],
            "need_deltas": changes.need_deltas,
            "llm_calls": self.llm_calls,
            "usage": self.usage,
        }

    def view(self) -> RoundView:
        """The round as a screen draws it (no model an edge)."""
        return RoundView.of(self.log(relations=False), self.after, self.changes)

    def record(self) -> RoundRecord:
        """The round's validated record, the state after it included (built once)."""
        if self._record is None:
            self._record = RoundRecord(**self._log_fields(), state=self.after.world())
        return self._record
