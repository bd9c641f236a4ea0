"""Ray executor for sweeps: each cell is a Ray task; one rate-limit actor is shared by every
worker so LLM calls stay under one budget of calls per second across the cluster."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter

from .errors import SocialsimError
from .mind_spec import MindSpec
from .sweep import Condition, Outcome

#: Reads a cell's mind spec back from its JSON form in the worker.
_SPEC: TypeAdapter[MindSpec] = TypeAdapter(MindSpec)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SocialsimError(
            "--executor ray needs Ray: pip install -e '.[ray]' (or pip install ray)"
        ) from None
    return ray


class TokenBucket:
    """At most ``rate`` acquisitions per second on average (burst of one second)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self.lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)


def _play(cell: dict, questions: list[dict], seed: int, mind: dict, limiter: Any) -> dict:
    """Body of the Ray task: one cell, in the worker's own event loop."""
    from .debate import DebateQuestion
    from .minds.llm import share_rate_limit
    from .sweep import run_condition

    if limiter is not None:
        share_rate_limit(lambda: limiter.acquire.remote())
    outcome = asyncio.run(
        run_condition(
            Condition.model_validate(cell),
            [DebateQuestion.model_validate(q) for q in questions],
            seed,
            _SPEC.validate_python(mind),
        )
    )
    return outcome.model_dump(mode="json")


class RayExecutor:
    """Runs cells as Ray tasks on a local instance (``num_cpus``) or a cluster (``address``)."""

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        calls_per_second: float | None = None,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.calls_per_second = calls_per_second

    async def map(
        self, cells: Sequence[Condition], questions: Sequence[Any], seed: int, mind: MindSpec
    ) -> list[Outcome]:
        ray = _ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": "ERROR",
            }
            if self.address:
                options["address"] = self.address
            else:
                options["num_cpus"] = self.num_cpus
            ray.init(**options)
        limiter = None
        if self.calls_per_second:
            limiter = ray.remote(TokenBucket).remote(self.calls_per_second)
        task = ray.remote(_play)
        refs = [
            task.remote(
                c.model_dump(mode="json"),
                [q.model_dump(mode="json") for q in questions],
                seed,
                mind.model_dump(mode="json"),
                limiter,
            )
            for c in cells
        ]
        results = await asyncio.gather(*refs)
        return [Outcome.model_validate(r) for r in results]
