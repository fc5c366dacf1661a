"""In a run of 429s, one request at a time: the next grant is a probe (``_queue.py``)."""

from __future__ import annotations

import asyncio

import pytest

from contractsdk import (
    ConnectError,
    ContractClient,
    RateLimitError,
    RateLimits,
    Request,
    Response,
    Retries,
)
from contractsdk._ratelimit import Grant, RateLimiter
from contractsdk._ratelimit._queue import PROBE_STREAK, PROBE_WAIT
from contractsdk.testing import MockTransport, json_response
from tests._fakeclock import FakeClock
from tests._limiterkit import make_limiter


async def _refused(clock: FakeClock, limiter: RateLimiter, times: int) -> None:
    """``times`` 429s in a row, each for a request granted after the last was answered."""
    for _ in range(times):
        grant = await clock.run(limiter.acquire("GET"))
        await limiter.record(grant, 429, {})


async def _probe_and_follower() -> tuple[FakeClock, RateLimiter, Grant, asyncio.Future[Grant]]:
    """A limiter after a run of 429s, its next grant, and the request queued behind it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=100, burst=10))
    await _refused(clock, limiter, PROBE_STREAK)
    probe = await clock.run(limiter.acquire("GET"))
    follower = asyncio.ensure_future(limiter.acquire("GET"))
    await clock.run(clock.sleep(PROBE_WAIT / 2))  # far past the pause and the interval
    return clock, limiter, probe, follower


async def test_after_429s_in_a_row_the_next_request_goes_alone_until_answered() -> None:
    clock, limiter, probe, follower = await _probe_and_follower()
    assert not follower.done()  # held, though its slot fell due long ago
    assert limiter.try_acquire("GET") is None  # no way round it: not the fast path either
    answered = clock.now
    await limiter.record(probe, 200, {})
    await clock.run(follower)
    assert clock.now == pytest.approx(answered, abs=0.02)  # at once: within an interval
    assert not limiter._queues["read"]._probing  # the run is over


async def test_a_refused_probe_is_followed_by_another_probe() -> None:
    clock, limiter, probe, follower = await _probe_and_follower()
    await limiter.record(probe, 429, {})  # still refusing: a pause, then one more probe
    second = await clock.run(follower)
    third = asyncio.ensure_future(limiter.acquire("GET"))
    await clock.run(clock.sleep(PROBE_WAIT / 2))
    assert not third.done()
    assert second.overloads == probe.overloads + 1
    await limiter.record(second, 200, {})
    await clock.run(third)


async def test_an_unanswered_probe_holds_the_queue_no_longer_than_probe_wait() -> None:
    clock, _, _, follower = await _probe_and_follower()
    assert not follower.done()
    held_from = clock.now - PROBE_WAIT / 2
    await clock.run(follower)
    assert clock.now - held_from <= PROBE_WAIT + 0.02


async def test_a_probe_that_ended_without_an_answer_frees_the_queue_at_once() -> None:
    clock, limiter, probe, follower = await _probe_and_follower()
    assert not follower.done()
    ended = clock.now
    limiter.abandon(probe)
    await clock.run(follower)
    assert clock.now == pytest.approx(ended, abs=0.02)


async def test_an_answer_to_an_older_request_is_not_the_probes() -> None:
    """A request granted before the run's last 429 was answered does not free the queue."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=100, burst=10))
    await _refused(clock, limiter, PROBE_STREAK - 1)
    older = await clock.run(limiter.acquire("GET"))  # out when the run's last 429 comes
    await _refused(clock, limiter, 1)
    probe_taken = await clock.run(limiter.acquire("GET"))
    waiting = asyncio.ensure_future(limiter.acquire("GET"))
    await clock.run(clock.sleep(PROBE_WAIT / 2))
    await limiter.record(older, 200, {})
    await clock.run(clock.sleep(0.05))
    assert not waiting.done()
    await limiter.record(probe_taken, 200, {})
    await clock.run(waiting)


async def test_a_waiter_cancelled_while_the_probe_is_out_leaves_the_next_to_wait() -> None:
    clock, limiter, probe, follower = await _probe_and_follower()
    behind = asyncio.ensure_future(limiter.acquire("GET"))
    await clock.settle()
    follower.cancel()
    await clock.run(clock.sleep(0.05))
    assert follower.cancelled() and not behind.done()
    await limiter.record(probe, 200, {})
    await clock.run(behind)


async def test_through_the_client_a_probe_that_failed_frees_the_queue() -> None:
    """The send path tells the limiter when a request ends without an answer."""
    answers: list[Response | Exception] = [
        *[json_response(429, {"message": "slow down"})] * PROBE_STREAK,
        ConnectError("connection refused"),
        json_response(200, {"id": 1, "name": "Acme"}),
    ]

    def handler(request: Request) -> Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async with ContractClient(
        api_key="key",
        base_url="https://api.example",
        transport=MockTransport(handler),
        rate_limits=RateLimits(read=1000, burst=10),
        retries=Retries(attempts=1, rate_limited_attempts=1),
    ) as client:
        queue = client._limiter._queues["read"]  # type: ignore[union-attr]
        for _ in range(PROBE_STREAK):
            with pytest.raises(RateLimitError):
                await client.teams.get(1)
        with pytest.raises(ConnectError):
            await client.teams.get(1)  # the probe: it ended without an answer
        assert not queue._probing
        assert (await client.teams.get(1)).id == 1
