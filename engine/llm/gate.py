"""A gate in front of a simulation's LLM calls: held, no new call goes out.

:meth:`Gate.hold` and :meth:`Gate.release` may be called from any thread (the app's UI
thread pauses a round played on the engine thread); :meth:`Gate.passage` is awaited on the
loop that plays the round, before each exchange is sent. Holding never touches a call
already sent: it runs on and finishes (and is journaled, as any answered exchange is).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


class Gate:
    """Open until held; a held gate keeps every new call waiting until released."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._held = False
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._on_change = on_change

    @property
    def held(self) -> bool:
        """True while no new call may go out."""
        return self._held

    def hold(self) -> None:
        """No new call goes out from now on (any thread); calls in flight run on."""
        with self._lock:
            changed, self._held = not self._held, True
        if changed and self._on_change is not None:
            self._on_change()

    def release(self) -> None:
        """Let the waiting calls go, and new ones after them (any thread)."""
        with self._lock:
            changed, self._held = self._held, False
            waiting, self._waiting = self._waiting, []
        for loop, future in waiting:
            loop.call_soon_threadsafe(_open, future)
        if changed and self._on_change is not None:
            self._on_change()

    async def passage(self) -> None:
        """Return at once while open; while held, when released (cancellable)."""
        while True:
            with self._lock:
                if not self._held:
                    return
                future = asyncio.get_running_loop().create_future()
                self._waiting.append((asyncio.get_running_loop(), future))
            await future


def _open(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
