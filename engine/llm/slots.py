"""The slots a local server decodes at once, where it says them (engine/llm/server.py): asked
once before the first call to it, or taken from the saved run that asked before; the
in-flight limit starts there."""

from __future__ import annotations

from .limit import AdaptiveLimit
from .server import ServerInfo


class ServerSlots:
    """What ``api_base``'s server said of its slots (a hosted provider: nothing to ask)."""

    def __init__(self, api_base: str | None, limit: AdaptiveLimit, api_key: str | None) -> None:
        self.api_base = api_base
        self.limit = limit
        self._api_key = api_key
        self._unasked = bool(api_base)
        #: What the server said of itself (None: not asked yet).
        self.info: ServerInfo | None = None

    async def ask(self, model: str) -> None:
        """Once, before the first call to a local server: start at the slots it says it
        has (llama.cpp's ``/props``)."""
        if not self._unasked:
            return
        self._unasked = False
        from .server import describe

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._start_at(await describe(model, self.api_base, headers))

    def _start_at(self, info: ServerInfo) -> None:
        self.info = info
        if info.slots:
            self.limit.limit = float(min(info.slots, self.limit.ceiling))

    def said(self) -> dict[str, int]:
        """endpoint -> the slots its server said it has (0: it did not say), once asked."""
        if not self.api_base or self.info is None:
            return {}
        return {self.api_base: self.info.slots or 0}

    def settle(self, slots: dict[str, int]) -> None:
        """Start from the slots a saved run's server said it has: not asked again (only
        llama.cpp's server says its slots)."""
        found = slots.get(self.api_base or "")
        if found is not None and self._unasked:
            self._unasked = False
            self._start_at(
                ServerInfo(None, found, "llama.cpp", "--ctx-size") if found else ServerInfo()
            )
