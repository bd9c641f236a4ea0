"""A person's seat at a run: the engine's :class:`~engine.minds.human.HumanMind` hands each
turn of an agent a person plays to a :class:`Seat` (on whichever thread plays the round),
which posts it to the main screen as a :class:`TurnAsked` message; the screen then shows the
turn's form (:mod:`tui.screens.play`, loaded when a turn first comes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from engine.minds.human import Turn


class TurnAsked(Message):
    """A played agent's turn waits for its person."""

    def __init__(self, turn: Turn) -> None:
        super().__init__()
        self.turn = turn


class Seat:
    """The ``ask`` of a run played in the app: each turn is posted to ``screen`` (posting is
    thread-safe, so the round may be played on another thread)."""

    def __init__(self, screen: MessagePump) -> None:
        self._screen = screen

    def __call__(self, turn: Turn) -> None:
        self._screen.post_message(TurnAsked(turn))
