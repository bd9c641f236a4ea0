"""The adaptive in-flight limit (engine/llm/limit.py): slow start, additive increase while
latency holds, a step down when calls queue, halving on overload, and its ceiling. Latencies
are given, not timed, so nothing here depends on the machine's speed."""

from __future__ import annotations

import asyncio

from engine.llm.limit import AdaptiveLimit


async def test_slow_start_grows_by_one_per_answer_while_latency_holds() -> None:
    limit = AdaptiveLimit(1, 64)
    for _ in range(9):
        await limit.answered(1.0, 0, 99)
    assert limit.limit == 9  # the first answer only sets the baseline


async def test_calls_that_queue_end_slow_start_and_step_the_limit_down() -> None:
    limit = AdaptiveLimit(4, 64)
    for _ in range(4):
        await limit.answered(1.0, 0, 99)
    for _ in range(16):  # three times the best latency per token: the server queues them
        await limit.answered(3.0, 0, 99)
    assert limit.limit < limit.peak - 1
    settled = limit.limit
    for _ in range(8):
        await limit.answered(1.0, 0, 99)
    # Additive now (about one call per limit's worth of answers), not one per answer.
    assert settled < limit.limit < settled + 3


async def test_a_long_reply_is_not_mistaken_for_a_busy_server() -> None:
    limit = AdaptiveLimit(2, 64)
    await limit.answered(1.0, 0, 99)
    await limit.answered(10.0, 0, 999)  # ten times the tokens in ten times the time
    assert limit.limit == 3


async def test_overload_halves_and_the_ceiling_holds() -> None:
    limit = AdaptiveLimit(1, 5)
    for _ in range(20):
        await limit.answered(1.0, 0, 99)
    assert limit.limit == 5 and limit.peak == 5
    limit.overloaded()
    assert limit.limit == 2.5 and limit.decreases == 1
    limit.overloaded()
    limit.overloaded()
    limit.overloaded()
    assert limit.limit == 1  # never below one call


async def test_acquire_waits_at_the_limit_and_growth_wakes_waiters() -> None:
    limit = AdaptiveLimit(1, 8)
    first = await limit.acquire()
    waiting = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0)
    assert not waiting.done() and limit.in_flight == 1
    await limit.answered(1.0, 0, 9)
    await limit.answered(1.0, 0, 9)  # the limit is now 2: the waiter goes in
    second = await asyncio.wait_for(waiting, 1)
    assert limit.in_flight == 2 and limit.oldest_age >= 0
    await limit.release(first)
    await limit.release(second)
    assert limit.in_flight == 0 and limit.oldest_age == 0


async def test_a_provider_limit_that_does_not_adapt_keeps_its_value() -> None:
    limit = AdaptiveLimit(1024, 1024, adaptive=False)
    await limit.answered(1.0, 0, 9)
    await limit.answered(50.0, 0, 9)
    assert limit.limit == 1024
