"""The rate limiter on a fake clock: configuration, the FIFO queue, pauses, learning."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import math
import random
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

from contractsdk import ConfigurationError, RateLimiterTimeoutError
from contractsdk._ratelimit import (
    PACING,
    SLOW_START_RATE,
    Control,
    Grant,
    LocalStore,
    RateLimiter,
    RateLimiterState,
    RateLimits,
    bucket_name,
)
from contractsdk._ratelimit._control import BETA
from contractsdk._ratelimit._limits import BucketName
from contractsdk._ratelimit._queue import IDLE_SPREAD
from tests._fakeclock import WALL_OFFSET, FakeClock

NOW_WALL = WALL_OFFSET + 1000.0  # FakeClock() starts at 1000.0


def make_limiter(clock: FakeClock, limits: RateLimits, *, max_pause: float = 60.0) -> RateLimiter:
    return RateLimiter(
        limits, max_pause=max_pause, clock=clock, wall_clock=clock.wall, sleep=clock.sleep
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


async def test_pause_holds_every_waiter() -> None:
    """A 429 with Retry-After pauses the whole bucket, including tasks already waiting."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    start = clock()
    await limiter.acquire("POST")
    waiting = [asyncio.ensure_future(limiter.acquire("POST")) for _ in range(3)]
    await clock.settle()
    await answer(limiter, "POST", 429, {"Retry-After": "2"})
    times = await grant_times(clock, limiter, 1)
    await clock.run(asyncio.gather(*waiting))
    step = 1 / (10 * PACING)
    # The pause empties the bucket: the first goes when it ends, the rest one interval apart.
    assert [start + task.result().waited for task in waiting] == pytest.approx(
        [start + 2, start + 2 + step, start + 2 + 2 * step]
    )
    assert times == pytest.approx([start + 2 + 3 * step])


async def test_pause_only_extends() -> None:
    """A shorter Retry-After does not cut a longer pause short."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    await answer(limiter, "POST", 429, {"Retry-After": "10"})
    await answer(limiter, "POST", 429, {"Retry-After": "1"})
    assert limiter.state.write.paused_for == 10.0


async def test_retry_after_on_503_pauses_but_not_on_200() -> None:
    """Retry-After pauses on 429 and 5xx answers; on a success it means nothing."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await answer(limiter, "POST", 200, {"Retry-After": "3"})
    assert limiter.state.write.paused_for == 0.0
    await answer(limiter, "POST", 503, {"Retry-After": "3"})
    assert limiter.state.write.paused_for == 3.0
    assert limiter.state.write.throttles == 0


async def test_retry_after_date_and_ms_pause() -> None:
    """Retry-After as an HTTP-date and retry-after-ms set the pause."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10, write=10))
    await answer(
        limiter, "GET", 429, {"Retry-After": email.utils.formatdate(clock.wall() + 4, usegmt=True)}
    )
    await answer(limiter, "POST", 429, {"retry-after-ms": "1500"})
    assert limiter.state.read.paused_for == pytest.approx(4.0)
    assert limiter.state.write.paused_for == pytest.approx(1.5)


async def test_429_without_retry_after_pauses_briefly() -> None:
    """A bare 429 pauses one interval; at the told limit the first only pauses.

    A second fresh 429 within STRIKE_WINDOW means the limit is lower than told: the rate
    drops, and the pause is one interval of the lowered rate.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await limiter.acquire("POST")
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.rate == 10 * PACING
    assert state.paused_for == pytest.approx(1 / state.rate)
    assert state.throttles == 1
    await clock.advance(0.2)
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.rate is not None
    assert state.rate < 10 * PACING
    assert state.paused_for == pytest.approx(1 / state.rate)
    assert state.throttles == 2


async def test_not_adaptive_keeps_its_rate_but_obeys_retry_after() -> None:
    """adaptive=False: a 429 does not change the rate; its Retry-After still pauses."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    await limiter.acquire("POST")
    await answer(limiter, "POST", 429, {"Retry-After": "1"})
    state = limiter.state.write
    assert state.rate == 10 * PACING
    assert state.paused_for == 1.0


async def test_unknown_and_not_adaptive_does_not_pace() -> None:
    """Unknown limits without learning: no pacing at all."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(adaptive=False))
    assert [(await limiter.acquire("POST")).waited for _ in range(1000)] == [0.0] * 1000
    assert limiter.state.write.rate is None
    assert limiter.state.write.tokens == math.inf


async def drive(
    clock: FakeClock,
    limiter: RateLimiter,
    seconds: float,
    *,
    method: str = "POST",
    status: int = 200,
    tasks: int = 8,
) -> list[float]:
    """Hammer the limiter from ``tasks`` tasks for ``seconds``; record ``status`` each time."""
    end = clock() + seconds
    rates: list[float] = []

    async def worker() -> None:
        while clock() < end:
            await limiter.acquire(method)
            await clock.sleep(0.01)  # the request's round trip
            await answer(limiter, method, status, {})
            rate = limiter.state[bucket_name(method)].rate
            assert rate is not None
            rates.append(rate)

    await clock.run(asyncio.gather(*(worker() for _ in range(tasks))))
    return rates


async def test_429_lowers_the_rate_and_it_climbs_back() -> None:
    """A 429 cuts the rate by about beta; without 429s it climbs back to the ceiling, not above."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await drive(clock, limiter, 2.0)
    await answer(limiter, "POST", 429, {})
    assert limiter.state.write.rate == 100 * PACING  # a first strike at the told limit
    await answer(limiter, "POST", 429, {})
    lowered = limiter.state.write.rate
    assert lowered is not None
    assert 0.6 * 100 * PACING <= lowered <= BETA * 100 * PACING + 1e-9
    rates = await drive(clock, limiter, 10.0)
    assert rates == sorted(rates)  # climbs steadily
    assert max(rates) == pytest.approx(100 * PACING)
    assert rates[0] < 100 * PACING


async def test_learning_never_exceeds_a_tiny_ceiling() -> None:
    """A configured rate under the learning's floor (0.5/s) still bounds the learned rate."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=0.2))
    await limiter.acquire("GET")
    await answer(limiter, "GET", 429, {})
    assert limiter.state.read.rate == 0.2 * PACING
    for _ in range(5):
        await clock.run(limiter.acquire("GET"))
        await answer(limiter, "GET", 200, {})
        assert limiter.state.read.rate == 0.2 * PACING


async def test_echoes_of_one_overload_lower_the_rate_once() -> None:
    """429s for requests granted before the decrease are counted, not acted on again.

    At the told limit the first overload is a strike (it only pauses); its echoes are not
    a second one. A request granted after it is fresh: its 429 lowers the rate. The next,
    in an epoch too young to measure, is the same overload draining: it backs off longer
    but does not lower the rate again.
    """
    clock = FakeClock()
    limiter = make_limiter(
        clock, RateLimits(write=100, burst=7)
    )  # five at once after the idle margin
    await clock.advance(1)
    go = asyncio.Event()
    rates: list[float | None] = []

    async def request() -> None:
        grant = await limiter.acquire("POST")
        await go.wait()
        await limiter.record(grant, 429, {})
        rates.append(limiter.state.write.rate)

    tasks = [asyncio.ensure_future(request()) for _ in range(5)]
    await clock.settle()
    before = limiter.state.write.rate
    assert before == 100 * PACING
    go.set()
    await clock.run(asyncio.gather(*tasks))
    assert limiter.state.write.throttles == 5
    assert rates == [before] * 5
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {})
    lowered = limiter.state.write.rate
    assert lowered is not None
    assert lowered < before
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {})
    again = limiter.state.write.rate
    assert again == lowered
    assert limiter.state.write.paused_for > 1.5 / lowered


def test_a_429_counts_in_a_row_only_for_requests_granted_after_the_last() -> None:
    """Requests granted at once before a 429 is answered echo it; one granted after is fresh.

    The requests a bucket grants at once share their grant: the count of 429s in a row
    must still tell the ones granted before an overload from the ones granted after it.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=100, burst=10))
    clock.now += 1.0  # idle: a burst to grant at once
    queue = limiter._queues["read"]
    first, second = limiter.try_acquire("GET"), limiter.try_acquire("GET")
    assert first is not None and second is not None
    assert limiter.note(first, 429, {}) is not None
    assert queue.streak == 1
    limiter.note(second, 429, {})  # out before the first 429 came back: an echo
    assert (queue.streak, queue.throttles) == (1, 2)
    third = limiter.try_acquire("GET")
    assert third is not None
    limiter.note(third, 429, {})
    assert queue.streak == 2
    fourth = limiter.try_acquire("GET")
    assert fourth is not None
    limiter.note(second, 200, {})  # a success of a request granted before: no reset
    assert queue.streak == 2
    limiter.note(fourth, 200, {})
    assert queue.streak == 0


async def test_unknown_limits_slow_start_then_learn() -> None:
    """Unknown limits: start at a modest rate, raise it while it is all used, lower on a 429."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    state = limiter.state.write
    assert (state.rate, state.learning, state.limit) == (SLOW_START_RATE, True, None)
    rates = await drive(clock, limiter, 1.0, tasks=64)
    assert rates[-1] > 4 * SLOW_START_RATE  # about doubling every quarter second
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.learning is False
    assert state.rate is not None
    assert state.rate < rates[-1]


async def test_slow_start_does_not_grow_while_idle() -> None:
    """A client that does not use its rate does not raise it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    for _ in range(50):
        await clock.run(limiter.acquire("GET"))
        await answer(limiter, "GET", 200, {})
        await clock.advance(1.0)
    rate = limiter.state.read.rate
    assert rate is not None
    assert rate < 1.2 * SLOW_START_RATE  # only the very first request used every token


async def test_policy_header_sets_the_rate() -> None:
    """RateLimit-Policy gives the service's rate: learning stops and the bucket paces under it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    await answer(limiter, "GET", 200, {"RateLimit-Policy": '"default";q=50;w=1'})
    state = limiter.state.read
    assert (state.rate, state.limit, state.learning, state.server_limit) == (
        50 * PACING,
        50.0,
        False,
        50.0,
    )
    assert limiter.state.write.learning is True


async def test_policy_header_lowers_a_configured_rate() -> None:
    """A declared policy under the configured rate becomes the ceiling; one above is ignored."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await answer(limiter, "POST", 200, {"RateLimit-Policy": "p;q=600;w=60"})
    assert limiter.state.write.limit == 10.0
    assert limiter.state.write.rate == 10 * PACING
    await answer(limiter, "POST", 200, {"RateLimit-Policy": "p;q=1000;w=1"})
    assert limiter.state.write.limit == 100.0


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"},
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) + 3)},
        {"RateLimit-Remaining": "0", "RateLimit-Reset": "3"},
        {"RateLimit": '"default";r=0;t=3'},
    ],
)
async def test_exhausted_counter_on_a_429_pauses_until_reset(headers: dict[str, str]) -> None:
    """A 429 with remaining 0 pauses the bucket until the counter's reset."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await answer(limiter, "POST", 429, headers)
    assert limiter.state.write.paused_for == pytest.approx(3.0)
    assert limiter.state.write.server_remaining == 0


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"},
        {"RateLimit": '"default";r=0;t=3'},
    ],
)
async def test_exhausted_counter_on_a_success_empties_but_does_not_lower(
    headers: dict[str, str],
) -> None:
    """A success with remaining 0 empties the bucket, with no pause and no decrease.

    The reset may be a window's end or a token bucket's time to full: only a refusal
    says that nothing passes until then, and the request itself went through.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100, burst=20))
    await clock.advance(10)
    grant = await limiter.acquire("POST")
    await limiter.record(grant, 200, headers)
    state = limiter.state.write
    assert state.paused_for == 0.0
    assert state.tokens == pytest.approx(0.0, abs=1e-9)
    assert state.throttles == 0
    assert state.rate == 100 * PACING


async def test_remaining_zero_on_every_success_never_collapses_the_rate() -> None:
    """A burst-1 server says remaining 0 after every request: the rate holds.

    It once fell from 4.95/s to 0.5/s in eight requests.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=5))
    for _ in range(50):
        grant = await clock.run(limiter.acquire("POST"))
        await limiter.record(grant, 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"})
    assert limiter.state.write.rate == 5 * PACING
    learner = make_limiter(clock, RateLimits())
    for _ in range(50):
        grant = await clock.run(learner.acquire("POST"))
        await learner.record(grant, 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"})
    rate = learner.state.write.rate
    assert rate is not None
    assert rate >= SLOW_START_RATE  # a hint never lowers the rate


async def test_exhausted_counter_pauses_a_bucket_that_does_not_pace() -> None:
    """Without a rate to pace at (unknown limits, not adaptive), remaining 0 pauses."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(adaptive=False))
    await answer(limiter, "POST", 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"})
    assert limiter.state.write.paused_for == pytest.approx(3.0)


async def test_remaining_caps_the_tokens() -> None:
    """Remaining N caps the tokens at N: the bucket will not burst past the server's count."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100, burst=20))
    await clock.advance(10)
    assert limiter.state.write.tokens == pytest.approx(20 - 1 - 100 * PACING * IDLE_SPREAD)
    await answer(limiter, "POST", 200, {"RateLimit": "d;r=3;t=1"})
    assert limiter.state.write.tokens == 3


@pytest.mark.parametrize("seed", range(6))
async def test_a_paced_bucket_takes_repeated_headers_as_learn_would(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers that repeat what a told bucket knows skip learn(), and end in the same state.

    Two limiters see the same answers at the same times; one is made to learn from every
    answer. Their buckets (tokens, pause, rate, what they know of the server) stay equal.
    """
    rng = random.Random(seed)
    clock = FakeClock()
    fast = make_limiter(clock, RateLimits(write=50, burst=10))
    slow = make_limiter(clock, RateLimits(write=50, burst=10))
    monkeypatch.setattr(slow, "_paced_answer", lambda *args: False)
    learnt = 0
    original = RateLimiter.learn

    async def counting(self: RateLimiter, *args: object) -> None:
        nonlocal learnt
        learnt += self is fast
        await original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RateLimiter, "learn", counting)
    for _ in range(60):
        headers = {"X-RateLimit-Limit": rng.choice(["50", "50", "50", "40"])}
        headers["X-RateLimit-Remaining"] = str(rng.choice([0, 1, 2, 5, 9, 9, 9, 30]))
        headers["X-RateLimit-Reset"] = str(rng.choice([1, 1, 2]))
        if rng.random() < 0.1:
            headers["Retry-After"] = "1"
        status = rng.choice([200, 200, 200, 201, 503])
        grants = await clock.run(asyncio.gather(fast.acquire("POST"), slow.acquire("POST")))
        for limiter, grant in zip((fast, slow), grants, strict=True):
            await limiter.record(grant, status, headers)
        assert fast.state == slow.state
        await clock.advance(rng.choice([0.0, 0.005, 0.02, 0.1, 1.0]))
    assert learnt < 60  # the fast path was taken


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


# --------------------------------------------------------------------------------------
# No answer bricks a client: every pause is cut to max_pause, absurd values ignored


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "1e9"},
        {"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"},
        {"retry-after-ms": "1e15"},
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) + 10**8)},
        {"RateLimit": '"d";r=0;t=99999999'},
    ],
)
async def test_no_answer_pauses_past_max_pause(headers: dict[str, str]) -> None:
    """An absurd Retry-After or reset pauses the bucket max_pause at most; then it goes on."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=30)
    grant = await limiter.acquire("POST")
    await limiter.record(grant, 429, headers)
    assert 0 < limiter.state.write.paused_for <= 30
    start = clock()
    later = await clock.run(limiter.acquire("POST"))
    assert clock() - start <= 30 + 1
    assert later.waited <= 31


async def test_max_pause_of_the_limits_wins() -> None:
    """RateLimits(max_pause=...) sets the cap, whatever the retry policy says."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, max_pause=2), max_pause=60)
    await answer(limiter, "POST", 429, {"Retry-After": "3600"})
    assert limiter.state.write.paused_for == 2


async def test_an_absurdly_slow_policy_is_not_believed() -> None:
    """RateLimit-Policy w=1000000 would pace one request a fortnight: ignored."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=60)
    await answer(limiter, "POST", 200, {"RateLimit-Policy": '"p";q=1;w=1000000'})
    assert limiter.state.write.limit == 10
    assert limiter.state.write.rate == 10 * PACING
    times = await grant_times(clock, limiter, 3)
    assert times[-1] - times[0] < 1


async def test_a_long_lived_client_is_usable_after_any_answer() -> None:
    """Whatever one answer said, the next minutes of calls are paced normally again."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=60)
    await answer(limiter, "POST", 429, {"Retry-After": "99999999"})
    await clock.advance(61)
    times = await grant_times(clock, limiter, 5)
    assert times[-1] - times[0] < 1.0


async def test_idle_time_never_enters_the_measured_rate() -> None:
    """A client that idled before a 429 keeps W near what it sent while busy.

    Counting the idle spell made a woken client measure a tiny rate and collapse to ~1/s.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await drive(clock, limiter, 2.0, tasks=16)
    busy_rate = limiter.state.write.rate
    assert busy_rate == 100 * PACING
    await clock.advance(30)  # idle
    grants = [await clock.run(limiter.acquire("POST")) for _ in range(3)]
    await limiter.record(grants[-1], 429, {})
    rate = limiter.state.write.rate
    assert rate is not None and rate >= 0.5 * 100


@pytest.mark.parametrize(("limit", "paced"), [("25", 24.0), ("100", 99.0), ("1000", 990.0)])
async def test_a_named_limit_leaves_a_request_of_each_window_spare(
    limit: str, paced: float
) -> None:
    """The learning paces a named limit at PACING of it, or one request a window under it.

    A sliding log of 25 a second refuses the 26th in any second: 1 % of 25 is no margin.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    headers = {"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "1"}
    await answer(limiter, "POST", 201, headers, await limiter.acquire("POST"))
    assert limiter.state.write.rate == pytest.approx(paced)


async def test_a_decrease_that_loses_a_race_is_decided_again() -> None:
    """A fresh 429's decrease is not lost when another process wrote the state first.

    Through Redis the state is compare-and-set: a process whose snapshot is stale loses.
    Lost, the decrease left the fleet's slow start doubling on past the limit (traced with
    four processes against nginx: a decrease from ``slow:208`` lost, and the next 429
    found ``slow:216``). It is decided again on what the other wrote, since that was still
    in the 429's epoch.
    """
    clock = FakeClock()
    races: list[LocalStore] = []

    def raced(initial: dict[BucketName, Control]) -> LocalStore:
        """Memory, where another process's rise lands just before this one's next update."""
        store = LocalStore(clock, initial)
        update = store.update

        async def racing(bucket: BucketName, control: Control, version: int, **kw: Any) -> bool:
            if not races:
                races.append(store)
                theirs, current, _ = store.snapshot(bucket)
                assert theirs.rate is not None
                risen = attrs.evolve(theirs, rate=theirs.rate * 1.5)  # same epoch: a rise
                options = {**kw, "pause": 0.0, "tokens": None}
                assert store.apply(bucket, risen, current, now=0.0, **options)
            return await update(bucket, control, version, **kw)

        store.update = racing  # type: ignore[method-assign]
        return store

    limiter = RateLimiter(
        RateLimits(), store=raced, clock=clock, wall_clock=clock.wall, sleep=clock.sleep
    )
    grant = await clock.run(limiter.acquire("POST"))
    before = limiter.state.write.rate
    assert before is not None
    await limiter.record(grant, 429, {})
    assert races  # the race happened
    shared, _, _ = races[0].snapshot("write")
    assert shared.epoch == grant.epoch + 1
    assert shared.phase == "cubic"
    assert shared.rate is not None and shared.rate < before
