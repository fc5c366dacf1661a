"""Shared helpers of the limiter tests: a limiter on a fake clock, answers, grant times."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

from contractsdk._ratelimit import Grant, RateLimiter, RateLimits, bucket_name
from tests._fakeclock import FakeClock


def make_limiter(
    clock: FakeClock, limits: RateLimits, *, max_pause: float = 60.0, draw: float = 0.5
) -> RateLimiter:
    """A limiter on ``clock``; ``draw`` is every random number (0.5: no jitter on pauses)."""
    return RateLimiter(
        limits,
        max_pause=max_pause,
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
        random=lambda: draw,
    )


async def answer(
    limiter: RateLimiter,
    method: str,
    status: int,
    headers: Mapping[str, str],
    grant: Grant | None = None,
) -> None:
    """Record an answer; without a grant, one for a request granted just now."""
    if grant is None:
        name = bucket_name(method)
        grant = Grant(name, limiter._queues[name].epoch, 0.0)
    await limiter.record(grant, status, headers)


async def grant_times(
    clock: FakeClock, limiter: RateLimiter, count: int, method: str = "POST"
) -> list[float]:
    """Start ``count`` acquires, each queued before the next; return when each was granted."""
    times: list[float] = [math.nan] * count

    async def one(index: int) -> None:
        await limiter.acquire(method)
        times[index] = clock()

    tasks = []
    for index in range(count):
        tasks.append(asyncio.ensure_future(one(index)))
        await clock.settle()
    await clock.run(asyncio.gather(*tasks))
    return times
