"""Textual messages of the app: a run's engine events, and the main screen telling the app
that the engine stopped advancing.

The events only the run's view shows do not bubble, and those that arrive together come as
one :class:`Burst`: each message a widget posts goes through its pump and, bubbling, through
the screen's and the app's, ~600 a round at 300 agents."""

from __future__ import annotations

from textual.message import Message

from engine import Action, Decision, ScenarioEvent
from engine.core.view import RoundView


class RoundStarted(Message, bubble=False):
    """A round began with these scenario events."""

    def __init__(self, round_no: int, events: list[ScenarioEvent]) -> None:
        super().__init__()
        self.round = round_no
        self.events = events


class Decided(Message, bubble=False):
    """An agent's decision arrived (phase 1)."""

    def __init__(self, round_no: int, agent: str, decision: Decision, forced: bool) -> None:
        super().__init__()
        self.round = round_no
        self.agent = agent
        self.decision = decision
        self.forced = forced


class Judged(Message, bubble=False):
    """The round's judgements were applied: how many moods and ties they changed."""

    def __init__(self, round_no: int, emotions: int, ties: int) -> None:
        super().__init__()
        self.round = round_no
        self.emotions = emotions
        self.ties = ties


class TokensArrived(Message, bubble=False):
    """More of the utterance ``agent`` is generating (several tokens coalesced)."""

    def __init__(self, agent: str, text: str) -> None:
        super().__init__()
        self.agent = agent
        self.text = text


class Spoke(Message, bubble=False):
    """A speaker finished its turn."""

    def __init__(self, round_no: int, action: Action) -> None:
        super().__init__()
        self.round = round_no
        self.action = action


class RoundEnded(Message, bubble=False):
    """A round finished and was saved: ``view``, the round as the screen draws it."""

    def __init__(self, view: RoundView) -> None:
        super().__init__()
        self.view = view


class RunPaused(Message):
    """The run stopped at a round boundary: a pause was asked for, or a cap was reached."""

    def __init__(self, round_no: int, reason: str) -> None:
        super().__init__()
        self.round = round_no
        self.reason = reason


class Notice(Message):
    """A line the engine says the user must read at once (about the run's models)."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class RoundFailed(Message):
    """Round ``round`` failed; the run stays at the last saved round."""

    def __init__(self, round_no: int, message: str) -> None:
        super().__init__()
        self.round = round_no
        self.message = message


class RunStopped(Message):
    """The engine stopped advancing the open run (done, paused or failed)."""


class Burst(Message, bubble=False):
    """Messages of :data:`BURSTABLE` kinds that arrived together, in order."""

    def __init__(self, items: list[Message]) -> None:
        super().__init__()
        self.items = items


#: The engine events' messages only the run's view reads, which a :class:`Burst` carries.
BURSTABLE = (RoundStarted, Decided, Judged, TokensArrived, Spoke)
