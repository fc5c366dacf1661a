"""The rate limiter on a fake clock: configuration, the FIFO queue, fast failure, its state."""

from __future__ import annotations

import asyncio
import itertools
import math
import random

import attrs
import pytest

from contractsdk import ConfigurationError, RateLimiterTimeoutError
from contractsdk._ratelimit import (
    PACING,
    RateLimiter,
    RateLimiterState,
    RateLimits,
    bucket_name,
)
from contractsdk._ratelimit._queue import IDLE_SPREAD
from tests._fakeclock import FakeClock
from tests._limiterkit import answer, grant_times, make_limiter

# --------------------------------------------------------------------------------------
# Configuration


def test_rate_limits_default_is_unknown_and_adaptive() -> None:
    """RateLimits() knows no rate and learns."""
    limits = RateLimits()
    assert (limits.read, limits.write, limits.burst, limits.adaptive) == (None, None, None, True)


def test_environment_defaults() -> None:
    """The documented limits: sandbox 25/25, production 100/100."""
    assert RateLimits.sandbox() == RateLimits(read=25, write=25)
    assert RateLimits.production() == RateLimits(read=100, write=100)
    assert RateLimits.for_environment("sandbox") == RateLimits.sandbox()
    assert RateLimits.for_environment("production") == RateLimits.production()


def test_unknown_environment_has_no_defaults() -> None:
    """An environment without documented limits is refused."""
    with pytest.raises(ConfigurationError, match="no documented rate limits"):
        RateLimits.for_environment("staging")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"read": 0},
        {"write": -1},
        {"read": math.inf},
        {"write": math.nan},
        {"burst": 0},
        {"burst": 2.5},
        {"burst": True},
    ],
)
def test_bad_limits_are_refused(kwargs: dict[str, object]) -> None:
    """Rates must be positive and finite, the burst a positive int."""
    with pytest.raises(ConfigurationError):
        RateLimits(**kwargs)  # type: ignore[arg-type]  # wrong on purpose


@pytest.mark.parametrize(
    ("method", "bucket"),
    [
        ("GET", "read"),
        ("get", "read"),
        ("HEAD", "read"),
        ("OPTIONS", "read"),
        ("POST", "write"),
        ("PATCH", "write"),
        ("PUT", "write"),
        ("DELETE", "write"),
    ],
)
def test_bucket_of_method(method: str, bucket: str) -> None:
    """GET, HEAD and OPTIONS read; every other method writes."""
    assert bucket_name(method) == bucket


async def test_record_never_raises_on_garbage() -> None:
    """The limiter learns nothing from garbage headers, and does not raise."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10))
    garbage = {"Retry-After": "\x00", "RateLimit": '";;"', "X-RateLimit-Reset": "9" * 400}
    await answer(limiter, "GET", 200, garbage)
    await answer(limiter, "GET", 503, garbage)
    assert limiter.state.read.paused_for == 0.0


# --------------------------------------------------------------------------------------
# Buckets on a fake clock


async def test_first_request_goes_at_once() -> None:
    """A new limiter grants its first request without waiting or sleeping."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    assert (await limiter.acquire("POST")).waited == 0.0
    assert clock.sleeps == []


async def test_no_initial_burst() -> None:
    """A new limiter holds one token: even with burst=5 the first requests are paced."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, burst=5))
    start = clock()
    times = await grant_times(clock, limiter, 4)
    step = 1 / (10 * PACING)
    assert times == pytest.approx([start, start + step, start + 2 * step, start + 3 * step])


async def test_burst_cap_after_idle() -> None:
    """After idling, a burst stops a request and IDLE_SPREAD's worth short of ``burst``.

    The burst queues in the event loop on its way out, so the server's refill starts late;
    the margin keeps the request after the burst from meeting an empty server bucket.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, burst=5))
    await limiter.acquire("POST")
    await clock.advance(60)
    start = clock()
    times = await grant_times(clock, limiter, 7)
    rate = 10 * PACING
    step = 1 / rate
    at_once = 5 - 1 - rate * IDLE_SPREAD  # 3.9: three at once, the fourth 0.1 step later
    expected = [start + max(0.0, k - (at_once - 1)) * step for k in range(7)]
    assert times == pytest.approx(expected)
    assert times[:3] == [start] * 3 and times[3] > start


async def test_unknown_server_burst_means_no_burst_after_idle() -> None:
    """With burst=None an idle bucket lets one request go at once, not a saved-up burst."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    assert limiter.state.write.capacity == 1
    await limiter.acquire("POST")
    await clock.advance(60)
    start = clock()
    times = await grant_times(clock, limiter, 3)
    step = 1 / (100 * PACING)
    assert times == pytest.approx([start, start + step, start + 2 * step])


async def test_remaining_headers_teach_the_server_burst() -> None:
    """The most a server's Remaining has shown (plus the request it answered) is its burst."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    grant = await limiter.acquire("POST")
    await answer(limiter, "POST", 200, {"X-RateLimit-Remaining": "9"}, grant)
    assert limiter.state.write.capacity == 10
    await clock.advance(60)
    start = clock()
    times = await grant_times(clock, limiter, 11)
    assert times[:8] == pytest.approx([start] * 8)  # 10 less the idle margin (test above)
    assert times[8] > start


async def test_steady_rate() -> None:
    """Under load, grants are evenly spaced at 99 % of the configured rate."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=50))
    times = await grant_times(clock, limiter, 101)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert gaps == pytest.approx([1 / (50 * PACING)] * 100)
    assert (times[-1] - times[0]) == pytest.approx(100 / (50 * PACING))


async def test_a_timer_that_fires_early_neither_grants_early_nor_spins() -> None:
    """A head woken up to a millisecond early (uvloop's timers) waits for its slot.

    It sleeps on for the rest (and a millisecond more): no grant before its slot,
    and two naps a grant at most, not one per pass of the event loop until the slot.
    """
    clock = FakeClock()
    naps: list[float] = []

    async def early(seconds: float) -> None:  # as uvloop's: up to a millisecond early
        naps.append(seconds)
        await clock.sleep(max(0.0, seconds - 0.001))

    limiter = RateLimiter(
        RateLimits(write=200, burst=1), clock=clock, wall_clock=clock.wall, sleep=early
    )
    times = await grant_times(clock, limiter, 21)
    interval = 1 / (200 * PACING)
    assert all(later - earlier >= interval - 1e-9 for earlier, later in itertools.pairwise(times))
    assert len(naps) <= 2 * 20, naps


async def test_arrival_order_is_served_first() -> None:
    """Waiters are granted in arrival order (FIFO)."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=20))
    order: list[int] = []

    async def one(index: int) -> None:
        await limiter.acquire("POST")
        order.append(index)

    arrival = random.Random(7).sample(range(40), 40)
    tasks = []
    for index in arrival:
        tasks.append(asyncio.ensure_future(one(index)))
        await clock.settle()  # it is queued before the next one starts
    await clock.run(asyncio.gather(*tasks))
    assert order == arrival


async def test_newcomer_does_not_overtake_a_waiter() -> None:
    """A token freed while someone waits goes to the waiter, not to a newcomer."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, burst=1))
    await limiter.acquire("POST")
    order: list[str] = []

    async def one(name: str) -> None:
        await limiter.acquire("POST")
        order.append(name)

    first = asyncio.ensure_future(one("waiter"))
    await clock.settle()
    clock.now += 1.0  # a token is due, but the waiter's sleep has not returned yet
    late = asyncio.ensure_future(one("newcomer"))
    await clock.run(asyncio.gather(first, late))
    assert order == ["waiter", "newcomer"]


async def test_read_and_write_buckets_are_independent() -> None:
    """A busy or paused write bucket does not hold reads back."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10, write=10))
    await limiter.acquire("POST")
    writers = [asyncio.ensure_future(limiter.acquire("POST")) for _ in range(5)]
    await clock.settle()
    await answer(limiter, "POST", 429, {"Retry-After": "30"})
    assert (await limiter.acquire("GET")).waited == 0.0
    state = limiter.state
    assert state.write.paused_for == 30.0
    assert state.read.paused_for == 0.0
    assert state.write.waiting == 5
    await clock.run(asyncio.gather(*writers))


async def test_cancelled_head_gives_its_place_to_the_next() -> None:
    """Cancelling the waiting head: the next waiter gets the same token at the same time."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    start = clock()
    await limiter.acquire("POST")
    times: dict[str, float] = {}

    async def one(name: str) -> None:
        await limiter.acquire("POST")
        times[name] = clock()

    tasks = {}
    for name in "abc":
        tasks[name] = asyncio.ensure_future(one(name))
        await clock.settle()
    tasks["a"].cancel()
    await clock.run(asyncio.gather(tasks["b"], tasks["c"]))
    step = 1 / (10 * PACING)
    assert times == pytest.approx({"b": start + step, "c": start + 2 * step})
    assert tasks["a"].cancelled()
    assert limiter.state.write.waiting == 0
    assert clock.pending == 0  # the cancelled head's timer is gone


async def test_cancelled_middle_waiter_leaves_the_queue() -> None:
    """Cancelling a queued waiter moves those behind it up; its token is not lost."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    start = clock()
    await limiter.acquire("POST")
    times: dict[str, float] = {}

    async def one(name: str) -> None:
        await limiter.acquire("POST")
        times[name] = clock()

    tasks = {}
    for name in "abcd":
        tasks[name] = asyncio.ensure_future(one(name))
        await clock.settle()
    tasks["b"].cancel()
    tasks["c"].cancel()
    await clock.run(asyncio.gather(tasks["a"], tasks["d"]))
    step = 1 / (10 * PACING)
    assert times == pytest.approx({"a": start + step, "d": start + 2 * step})
    assert limiter.state.write.granted == 3
    assert clock.pending == 0


async def test_cancel_after_promotion_loses_no_token() -> None:
    """A waiter cancelled after its promotion to head, before it ran, passes the token on."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    start = clock()
    await limiter.acquire("POST")
    times: dict[str, float] = {}
    tasks: dict[str, asyncio.Future[None]] = {}

    async def one(name: str) -> None:
        await limiter.acquire("POST")
        times[name] = clock()
        if name == "a":
            tasks["b"].cancel()  # b was just promoted: its wake-up is scheduled, not yet run

    for name in "abc":
        tasks[name] = asyncio.ensure_future(one(name))
        await clock.settle()
    await clock.run(asyncio.gather(tasks["a"], tasks["c"]))
    step = 1 / (10 * PACING)
    assert times == pytest.approx({"a": start + step, "c": start + 2 * step})
    assert tasks["b"].cancelled()
    assert limiter.state.write.granted == 3
    assert clock.pending == 0


async def test_fast_fail_raises_at_once() -> None:
    """timeout=0 when no token is free raises RateLimiterTimeoutError without waiting."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await limiter.acquire("POST")
    with pytest.raises(RateLimiterTimeoutError) as caught:
        await limiter.acquire("POST", timeout=0)
    assert caught.value.bucket == "write"
    assert caught.value.wait == pytest.approx(1 / (10 * PACING))
    assert isinstance(caught.value, TimeoutError)
    assert clock.sleeps == []
    assert limiter.state.write.waiting == 0


async def test_fast_fail_counts_the_queue() -> None:
    """The projected wait includes everyone queued ahead."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10))
    await limiter.acquire("GET")
    queued = [asyncio.ensure_future(limiter.acquire("GET")) for _ in range(3)]
    await clock.settle()
    with pytest.raises(RateLimiterTimeoutError) as caught:
        await limiter.acquire("GET", timeout=0.35)
    assert caught.value.bucket == "read"
    assert caught.value.wait == pytest.approx(4 / (10 * PACING))
    waited = (await clock.run(limiter.acquire("GET", timeout=0.6))).waited
    assert waited == pytest.approx(4 / (10 * PACING))
    assert all(task.done() for task in queued)


async def test_fast_fail_when_a_pause_pushes_waiters_past_their_deadline() -> None:
    """A pause fails queued waiters whose deadline it overruns at once, not at the deadline."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await limiter.acquire("POST")
    start = clock()
    head = asyncio.ensure_future(limiter.acquire("POST", timeout=1))
    middle = asyncio.ensure_future(limiter.acquire("POST", timeout=1))
    patient = asyncio.ensure_future(limiter.acquire("POST"))
    await clock.settle()
    await answer(limiter, "POST", 429, {"Retry-After": "5"})
    await clock.settle()
    for task in (head, middle):
        assert task.done()
        error = task.exception()
        assert isinstance(error, RateLimiterTimeoutError)
        assert error.wait >= 5
    assert clock() == start
    assert (await clock.run(patient)).waited >= 5


async def test_unknown_and_not_adaptive_does_not_pace() -> None:
    """Unknown limits without learning: no pacing at all."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(adaptive=False))
    assert [(await limiter.acquire("POST")).waited for _ in range(1000)] == [0.0] * 1000
    assert limiter.state.write.rate is None
    assert limiter.state.write.tokens == math.inf


async def test_rate_change_applies_to_waiters_at_once() -> None:
    """set_limits takes effect immediately, also for a task already waiting."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=0.1))
    start = clock()
    await limiter.acquire("POST")
    waiter = asyncio.ensure_future(limiter.acquire("POST"))
    await clock.settle()
    limiter.set_limits(RateLimits(write=100))
    assert (await clock.run(waiter)).waited == pytest.approx(1 / (100 * PACING))
    assert clock() == pytest.approx(start + 1 / (100 * PACING))
    assert limiter.limits == RateLimits(write=100)
    limiter.set_limits(RateLimits(write=1))
    times = await grant_times(clock, limiter, 2)
    assert times[1] - times[0] == pytest.approx(1 / PACING)


async def test_state_snapshot() -> None:
    """The state is a frozen snapshot of rate, capacity, tokens, pause and counters."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10, write=20, burst=4))
    await grant_times(clock, limiter, 3, method="GET")
    await answer(limiter, "GET", 429, {"Retry-After": "2"})
    state = limiter.state
    assert isinstance(state, RateLimiterState)
    assert state.limits == RateLimits(read=10, write=20, burst=4)
    read = state["read"]
    assert read is state.read
    assert read.name == "read"
    assert read.capacity == 4
    assert read.tokens == 0
    assert read.granted == 3
    assert read.throttles == 1
    assert read.waited == pytest.approx(3 / (10 * PACING))  # 1/r for the 2nd + 2/r for the 3rd
    assert read.paused_until == clock() + 2
    assert read.paused_for == 2
    assert read.waiting == 0
    write = state.write
    assert (write.rate, write.limit, write.granted, write.paused_until) == (
        20 * PACING,
        20,
        0,
        None,
    )
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        read.rate = 1.0  # type: ignore[misc]  # frozen on purpose
    await clock.advance(5)
    assert limiter.state.read.paused_for == 0.0
    assert "RateLimits" in repr(limiter)
