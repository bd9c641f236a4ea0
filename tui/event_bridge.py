"""Engine events to Textual messages.

An :class:`EventBridge` listens to one run (``Simulation.subscribe``). It turns each engine
event the screen shows into a message of :mod:`tui.messages` and posts it. Token streams are
coalesced: tokens are buffered per speaker and posted at most once per ``interval`` (and
whenever a turn or a round ends), so a fast model cannot flood the message queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.message import Message

from engine import Simulation, events

from . import messages

#: The screen redraws at most 30 times a second; more token messages would be wasted.
TOKEN_INTERVAL = 1 / 30


def to_message(event: events.SimEvent) -> Message | None:
    """The message for an engine event, or ``None`` for events the screen does not show."""
    match event:
        case events.RoundStarted():
            return messages.RoundStarted(event.round, event.events)
        case events.AgentSpoke():
            return messages.Spoke(event.round, event.action)
        case events.RoundEnded():
            return messages.RoundEnded(event.record)
        case events.RunPaused():
            return messages.RunPaused(event.round, event.reason)
        case events.EngineError():
            return messages.RoundFailed(event.message)
    return None


class EventBridge:
    """Post the engine events of ``sim`` through ``post``, token streams coalesced."""

    def __init__(
        self,
        sim: Simulation,
        post: Callable[[Message], object],
        interval: float = TOKEN_INTERVAL,
    ) -> None:
        self._post = post
        self._interval = interval
        self._tokens: dict[str, list[str]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe = sim.subscribe(self._on_event)

    def _on_event(self, event: events.SimEvent) -> None:
        if isinstance(event, events.TokenStreamed):
            self._tokens.setdefault(event.agent, []).append(event.text)
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)
            return
        message = to_message(event)
        if message is not None:
            self.flush()  # the tokens before the turn or round that ends
            self._post(message)

    def flush(self) -> None:
        """Post the buffered tokens now, one message per speaker."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        tokens, self._tokens = self._tokens, {}
        for agent, pieces in tokens.items():
            self._post(messages.TokensArrived(agent, "".join(pieces)))

    def close(self) -> None:
        """Stop listening; what is buffered is dropped."""
        self._unsubscribe()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._tokens = {}
