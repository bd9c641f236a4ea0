"""How one model's exchanges went, for the line that says its server is slow."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .settings import LLMSettings


@dataclass
class Health:
    """How one model's exchanges went: for the line that says a server is slow."""

    calls: int = 0
    timeouts: int = 0
    latencies: list[float] = field(default_factory=list)

    def took(self, latency: float | None, timed_out: bool) -> None:
        """One more exchange: answered after ``latency`` seconds (None: not answered)."""
        self.calls += 1
        self.timeouts += timed_out
        if latency is not None:
            self.latencies.append(latency)

    def line(self, model: str, settings: LLMSettings) -> str | None:
        """``None`` unless calls timed out; else the figures and what to change."""
        if not self.timeouts:
            return None
        median = (
            f"median answered call {statistics.median(self.latencies):.0f} s"
            if self.latencies
            else "no call was answered"
        )
        where = settings.api_base or "its provider"
        return (
            f"{model} at {where}: {self.timeouts} of {self.calls} calls timed out after "
            f"{settings.retries + 1} attempts ({settings.timeout:g} s each; {median}); "
            "raise --timeout or lower --max-concurrency"
        )
