"""A Redis a round trip away: reserving ahead (``_queue.py``), and the first call.

The Redis is real; a TCP proxy in its own process (``benchmarks/_delayproxy.py``) holds
what it forwards 5 ms each way, as a Redis in another zone would. Every slot reserved is
counted: each must be granted or given back, none left behind or lost. Durations appear
only as the lower bound the limiter guarantees (never more than the rate).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
import pytest

from benchmarks._delayproxy import DelayProxy
from contractsdk import RateLimits
from contractsdk._ratelimit import Grant, RateLimiter, Slot
from contractsdk._ratelimit._queue import _Queue
from contractsdk._ratelimit._redis import RedisStore
from tests._redisserver import RedisServer
from tests.test_ratelimit_redis import reserve_one, shared_limiter, shared_now, shared_store


@pytest.fixture
def far_redis(redis_server: RedisServer) -> Iterator[str]:
    """The test's Redis, 5 ms away each way."""
    with DelayProxy(redis_server.port, 5) as proxy:
        yield f"redis://127.0.0.1:{proxy.port}/0"


@attrs.define
class Ledger:
    """Every slot a store reserved (per call) and gave back."""

    batches: list[int] = attrs.Factory(list)
    released: int = 0
    tats: list[float] = attrs.Factory(list)  # where the schedule ended after each slot
    released_tats: list[float] = attrs.Factory(list)  # the last of each run given back

    @property
    def reserved(self) -> int:
        return sum(self.batches)


def keep_ledger(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    ledger = Ledger()
    reserve_many, release = store.reserve_many, store.release

    async def counted_reserve(*args: Any, **kwargs: Any) -> list[Slot] | float:
        slots = await reserve_many(*args, **kwargs)
        if isinstance(slots, list):
            ledger.batches.append(len(slots))
            ledger.tats += [slot.tat for slot in slots]
        return slots

    async def counted_release(bucket: Any, slot: Slot, count: int = 1) -> None:
        ledger.released += count
        ledger.released_tats.append(slot.tat)
        await release(bucket, slot, count)

    monkeypatch.setattr(store, "reserve_many", counted_reserve)
    monkeypatch.setattr(store, "release", counted_release)
    return ledger


@pytest.fixture
async def far_limiter(far_redis: str, request: pytest.FixtureRequest) -> AsyncIterator[RateLimiter]:
    rate = request.param
    limiter = shared_limiter(far_redis, RateLimits(write=rate, burst=1))
    try:
        # Connected, and the script loaded (several round trips) before the test begins.
        await limiter.record(await limiter.acquire("POST"), 200, {})
        yield limiter
    finally:
        await limiter.aclose()


async def grant_all(limiter: RateLimiter, count: int) -> list[Grant]:
    async def one() -> Grant:
        grant = await limiter.acquire("POST")
        await limiter.record(grant, 200, {})
        return grant

    return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(count))), 30)


def write_queue(limiter: RateLimiter) -> _Queue:
    return limiter._queues["write"]


async def until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never came"
        await asyncio.sleep(0.001)


@pytest.mark.parametrize("far_limiter", [200.0], indirect=True)
async def test_a_far_redis_is_reserved_ahead_in_batches(
    far_limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slots for the waiters behind the head come several to a round trip; none is lost.

    One reservation at a time, a client 10 ms from Redis got at most 100 slots a second,
    whatever its rate. Reserved ahead, every slot is still granted: none more than the
    waiters need, none left over, and never faster than the rate.
    """
    ledger = keep_ledger(shared_store(far_limiter), monkeypatch)
    start = time.monotonic()
    await grant_all(far_limiter, 60)
    assert time.monotonic() - start >= 59 / 200 * 0.95
    assert shared_now(far_limiter)
    assert write_queue(far_limiter).round_trip >= 0.009  # 5 ms each way, measured
    assert max(ledger.batches) > 1
    assert len(ledger.batches) < 30  # fewer round trips than grants
    assert ledger.reserved == 60
    assert ledger.released == 0
    assert not write_queue(far_limiter)._held


@pytest.mark.parametrize("far_limiter", [200.0], indirect=True)
async def test_a_pause_gives_back_every_slot_reserved_ahead(
    far_limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429's pause voids the slots reserved ahead: each is given back, and reserved anew.

    Kept, they would send requests into the pause; left unreturned, each would be a slot
    of the fleet's schedule lost.
    """
    ledger = keep_ledger(shared_store(far_limiter), monkeypatch)
    queue = write_queue(far_limiter)
    waiting = asyncio.ensure_future(grant_all(far_limiter, 40))
    await until(lambda: len(queue._held) > 0)
    grant = Grant("write", queue.epoch, 0.0, queue.overloads)
    await far_limiter.record(grant, 429, {"retry-after-ms": "50"})
    grants = await waiting
    assert len(grants) == 40
    assert ledger.released >= 1
    assert ledger.reserved - ledger.released == 40  # each slot granted or given back
    assert not queue._held


@pytest.mark.parametrize("far_limiter", [200.0], indirect=True)
async def test_a_head_that_leaves_leaves_its_slot_to_the_next(
    far_limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while it sleeps, the head's slot goes to the waiter behind it.

    Given back, it would be lost: the slots reserved after it hold the schedule's end.
    A slot too many that leaves behind (reserved ahead for the waiter that took the
    head's) is the schedule's last, given back once nobody waits: undone, not lost.
    """
    ledger = keep_ledger(shared_store(far_limiter), monkeypatch)
    queue = write_queue(far_limiter)
    tasks = [asyncio.ensure_future(far_limiter.acquire("POST")) for _ in range(8)]
    # A head asleep on a slot reserved ahead, with more reserved behind it.
    await until(lambda: queue._wake is not None and len(queue._held) > 0)
    head = next(task for task in tasks if not task.done())  # FIFO: the first not granted
    head.cancel()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
    assert sum(isinstance(result, asyncio.CancelledError) for result in results) == 1
    await queue.stop()  # a slot left over is given back in the background
    assert ledger.reserved - ledger.released == 7
    # None given back, or (reserved for a waiter the head's slot went to) the last one.
    assert ledger.released_tats in ([], [max(ledger.tats)])


async def test_no_slot_is_reserved_ahead_while_the_schedule_is_ahead(
    far_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enough clients keep the shared schedule full: their slots come back well ahead.

    Eight, each a round trip (10 ms) per slot, could take 760 a second of a rate of 100:
    their round trips do not hold them back (each slot comes back behind the other
    seven's, 70 ms ahead), and slots reserved ahead would only sit further from the
    answers that move the rate (four processes learning against nginx through a Redis
    5 ms away fell from 0.95 to 0.77-0.88 of the limit). So each reserves one at a time,
    but for a few as the fleet starts.
    """
    limiters = [shared_limiter(far_redis, RateLimits(write=100, burst=1)) for _ in range(8)]
    refills: list[int] = []
    try:
        for limiter in limiters:  # connected, the script loaded
            await limiter.record(await limiter.acquire("POST"), 200, {})
        ledgers = [keep_ledger(shared_store(limiter), monkeypatch) for limiter in limiters]
        for limiter in limiters:
            queue = write_queue(limiter)
            monkeypatch.setattr(queue, "_fill", _counted(queue._fill, refills))
        await asyncio.gather(*(grant_all(limiter, 10) for limiter in limiters))
    finally:
        for limiter in limiters:
            await limiter.aclose()
    batches = [batch for ledger in ledgers for batch in ledger.batches]
    assert sum(batches) == 80  # none lost, none left over
    assert len(refills) <= len(batches) // 5, (len(refills), batches)


async def test_a_share_of_a_slot_a_round_trip_or_more_is_reserved_ahead_in_any_case(
    far_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four clients at 1,000/s, 10 ms from Redis: each one's share is 2.5 slots a round trip.

    One reservation a round trip cannot keep up with that, wherever the schedule is. Each
    dropped out of reserving ahead whenever the others' batches had filled the schedule
    a round trip ahead, and took a slot per round trip until it was behind again (0.88-0.91
    of the rate with Redis 21 ms away). Each now reserves in batches throughout; no slot
    is lost or left over.
    """
    limiters = [shared_limiter(far_redis, RateLimits(write=1000, burst=1)) for _ in range(4)]
    try:
        for limiter in limiters:  # connected, the script loaded, the others seen
            await limiter.record(await limiter.acquire("POST"), 200, {})
        for limiter in limiters:
            await limiter.record(await limiter.acquire("POST"), 200, {})
        ledgers = [keep_ledger(shared_store(limiter), monkeypatch) for limiter in limiters]
        await asyncio.gather(*(grant_all(limiter, 150) for limiter in limiters))
    finally:
        for limiter in limiters:
            await limiter.aclose()
    for ledger in ledgers:
        assert ledger.reserved - ledger.released == 150  # none lost, none left over
        singles = sum(1 for batch in ledger.batches if batch == 1)
        assert singles <= len(ledger.batches) // 4, ledger.batches


def _counted(fill: Any, calls: list[int]) -> Any:
    async def counted(*args: Any) -> None:
        calls.append(1)
        await fill(*args)

    return counted


async def test_a_pause_another_process_wrote_voids_what_was_reserved_ahead(
    far_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's 429 paused the bucket: the slots reserved before it are given back.

    They fall in the pause. The answer of the next reservation shows the pause; when this
    process then holds slots (or its head sleeps on one), they go back, with those the
    answer brought, and are reserved anew. (Whether it holds any at that moment is the
    machine's timing: the test checks what it did against what it held.)
    """
    limits = RateLimits(write=1000, burst=1)  # ten slots a round trip: it reserves ahead
    ahead, other = (shared_limiter(far_redis, limits) for _ in range(2))
    news: list[bool] = []  # for each answer showing the pause: whether it held slots then
    try:
        for limiter in (ahead, other):  # connected, the script loaded
            await limiter.record(await limiter.acquire("POST"), 200, {})
        ledger = keep_ledger(shared_store(ahead), monkeypatch)
        queue = write_queue(ahead)
        pause_news = queue._pause_news

        def watched(known: float, now: float) -> None:
            if queue._paused_until() > max(known, now):
                news.append(bool(queue._held) or queue._wake is not None)
            pause_news(known, now)

        monkeypatch.setattr(queue, "_pause_news", watched)
        waiting = asyncio.ensure_future(grant_all(ahead, 300))
        await until(lambda: len(queue._held) > 1)
        grant = await other.acquire("POST")
        await other.record(grant, 429, {"retry-after-ms": "200"})
        grants = await waiting
    finally:
        for limiter in (ahead, other):
            await limiter.aclose()
    assert len(grants) == 300
    assert news  # it heard of the pause, from a reservation's answer: it saw no 429
    if news[0]:
        assert ledger.released >= 1
    assert ledger.reserved - ledger.released == 300  # each slot granted or given back


async def test_a_redis_50_ms_away_is_shared_from_the_first_call(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Connecting and the first script take three round trips, within a call's 0.25 s.

    With EVALSHA first (NOSCRIPT, SCRIPT LOAD, EVALSHA again) they took five: every call
    timed out on a fresh connection, and each process went on alone for good.
    """
    with DelayProxy(redis_server.port, 25) as proxy:
        limiter = shared_limiter(
            f"redis://127.0.0.1:{proxy.port}/0", RateLimits(write=100, burst=1)
        )
        try:
            await limiter.record(await limiter.acquire("POST"), 200, {})
            assert shared_now(limiter)
            await grant_all(limiter, 5)
            assert shared_now(limiter)
        finally:
            await limiter.aclose()
    assert "unreachable" not in caplog.text


@pytest.mark.parametrize("far_limiter", [1000.0], indirect=True)
async def test_slots_reserved_ahead_fall_due_an_interval_apart(
    far_limiter: RateLimiter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch after batch, one client's next slot is never due sooner than the interval.

    A batch whose first slot was already due when its answer came moves on, to now, by up
    to half a round trip; the batches after it continue it in the store's schedule and
    move on as far. Placed as the store said instead, they fell due with the first's last
    slots, two at once for half a round trip: 51 ms away at 1,000/s, half the rate went.
    """
    queue = write_queue(far_limiter)
    placed_in_order: list[tuple[Slot, float]] = []
    placed = queue._placed

    def watched(*args: Any) -> list[tuple[Slot, float]]:
        result = placed(*args)
        placed_in_order.extend(result)
        return result

    monkeypatch.setattr(queue, "_placed", watched)
    await grant_all(far_limiter, 300)
    # Each grant's slot was placed; on a loaded machine a few more were: a held slot the
    # event loop reached more than LATENESS past its time is given back and reserved again.
    assert len(placed_in_order) >= 300
    interval = 1 / 1000
    follows = [
        (later - earlier, slot.tat - before.tat)
        for (before, earlier), (slot, later) in itertools.pairwise(placed_in_order)
        if abs(slot.tat - before.tat - interval) < interval / 2  # nothing between
    ]
    assert len(follows) > 200
    assert min(gap for gap, _ in follows) >= interval - 1e-6, follows


async def test_batches_given_back_together_are_undone_together(
    redis_server: RedisServer,
) -> None:
    """Two batches of a hundred slots given back leave the schedule where it was before them.

    Redis sums an interval per slot onto an epoch time, each sum rounded to a quarter of a
    microsecond: after a hundred, the batches' boundary missed a release's 1e-6 tolerance
    and the first batch stayed booked, a second of the rate lost at 100/s.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=100, burst=1))
    try:
        store, queue = shared_store(limiter), write_queue(limiter)
        first = await store.reserve_many("write", queue.schedule, 100, max_wait=None)
        second = await store.reserve_many("write", queue.schedule, 100, max_wait=None)
        assert isinstance(first, list) and isinstance(second, list)
        await queue._give_back(first + second)
        again = await reserve_one(store, queue.schedule)
    finally:
        await limiter.aclose()
    assert again.wait < 0.1  # 2 s with the first batch still booked
