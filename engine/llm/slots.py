"""The slots a local server decodes at once, where it says them (engine/llm/server.py): asked
once before the first call to it, or taken from the saved run that asked before; the
in-flight limit starts there."""

from __future__ import annotations

from .limit import AdaptiveLimit


class ServerSlots:
    """What ``api_base``'s server said of its slots (a hosted provider: nothing to ask)."""

    def __init__(self, api_base: str | None, limit: AdaptiveLimit, api_key: str | None) -> None:
        self.api_base = api_base
        self.limit = limit
        self._api_key = api_key
        self._unasked = bool(api_base)
        #: The slots the server said it has (0: none said; None: not asked yet).
        self.found: int | None = None

    async def ask(self, model: str) -> None:
        """Once, before the first call to a local server: start at the slots it says it
        has (llama.cpp's ``/props``)."""
        if not self._unasked:
            return
        self._unasked = False
        from .server import describe

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        info = await describe(model, self.api_base, headers)
        self._start_at(info.slots or 0)

    def _start_at(self, slots: int) -> None:
        self.found = slots
        if slots:
            self.limit.limit = float(min(slots, self.limit.ceiling))

    def said(self) -> dict[str, int]:
        """endpoint -> the slots its server said it has (0: it did not say), once asked."""
        return {self.api_base: self.found} if self.api_base and self.found is not None else {}

    def settle(self, slots: dict[str, int]) -> None:
        """Start from the slots a saved run's server said it has: not asked again."""
        found = slots.get(self.api_base or "")
        if found is not None and self._unasked:
            self._unasked = False
            self._start_at(found)
