"""What the offline mind reads of a scenario, worked out once while its agents play."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from ...core.scenario import Scenario

T = TypeVar("T")


def per_scenario(work: Callable[[Scenario], T]) -> Callable[[Scenario], T]:
    """``work(scenario)`` kept for the last scenario it was asked of: a round asks the same
    scenario once an agent, and more than once. Safe across threads playing two scenarios:
    each call reads the held pair once, and a replaced pair is only worked out again."""
    held: tuple[Scenario | None, Any] = (None, None)

    @wraps(work)
    def read(scenario: Scenario) -> T:
        nonlocal held
        last = held
        if last[0] is not scenario:
            last = held = (scenario, work(scenario))
        result: T = last[1]
        return result

    return read
