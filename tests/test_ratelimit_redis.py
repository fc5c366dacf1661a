"""The buckets and the OAuth token shared through a real redis-server.

Every test starts from an empty Redis (the ``redis_server`` fixture, ``tests/conftest.py``).
Durations appear only as lower bounds the limiter guarantees (it never lets more through
than the rate allows, however fast the machine), and as upper bounds far beyond what the
behaviour needs (a test that hangs fails instead of stalling CI).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from contractsdk import (
    ClientCredentials,
    ConfigurationError,
    ContractClient,
    RateLimiterTimeoutError,
    RateLimits,
    Request,
    Response,
)
from contractsdk._auth import TokenAuth
from contractsdk._config import Environment
from contractsdk._ratelimit import Grant, RateLimiter, Slot, _queue
from contractsdk._ratelimit._control import Control
from contractsdk._ratelimit._redis import TTL, RedisStore, _decode, _encode
from contractsdk._ratelimit._store import Schedule
from contractsdk._redis import SharedRedis, namespace
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import json_response
from tests._redisserver import RedisClusterNodes, RedisServer, key_name

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "contractsdk:test:"


def shared_limiter(
    redis: str | aioredis.Redis | aioredis.RedisCluster,
    limits: RateLimits,
    *,
    prefix: str = PREFIX,
    rejoin_after: float = 1.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> RateLimiter:
    shared = SharedRedis(redis, prefix=prefix, rejoin_after=rejoin_after)
    return RateLimiter(limits, store=lambda initial: RedisStore(shared, initial), sleep=sleep)


def shared_now(limiter: RateLimiter) -> bool:
    return limiter.state.write.shared


async def grant_times(limiter: RateLimiter, count: int) -> list[float]:
    times: list[float] = []

    async def one() -> None:
        grant = await limiter.acquire("POST")
        times.append(time.monotonic())
        await limiter.record(grant, 200, {})

    await asyncio.wait_for(asyncio.gather(*(one() for _ in range(count))), 30)
    return times


class Workers:
    """``python -m tests._redisworker serve``: forks the client processes a test asks for.

    One interpreter imports the SDK once for the module; each process a test runs is
    forked from it (its own process, event loop and connections; see the worker's header).
    """

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests._redisworker", "serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # its children with it in one group, killed together
        )

    async def run(self, mode: str, args: list[str], processes: int) -> list[dict[str, Any]]:
        """Run ``mode`` in ``processes`` processes at once; each one's result, in order."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps({"mode": mode, "args": args, "processes": processes}).encode())
        stdin.write(b"\n")
        stdin.flush()
        line = await asyncio.wait_for(asyncio.to_thread(stdout.readline), 60)
        answer = json.loads(line)
        assert answer["codes"] == [0] * processes, answer
        results: list[dict[str, Any]] = answer["results"]
        return results

    def stop(self) -> None:
        """Kill it and any child still running (nothing to lose: it keeps no state)."""
        os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait(timeout=10)
        for pipe in (self._process.stdin, self._process.stdout):
            assert pipe is not None
            pipe.close()


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    started = Workers()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
async def limiters(redis_server: RedisServer) -> AsyncIterator[list[RateLimiter]]:
    made: list[RateLimiter] = []
    yield made
    for limiter in made:
        await limiter.aclose()


async def _early_sleep(seconds: float) -> None:
    """Sleep as uvloop's timers do: they count whole milliseconds, and wake up to one early."""
    await asyncio.sleep(max(0.0, seconds - 0.0008))


@pytest.mark.parametrize("sleep", [asyncio.sleep, _early_sleep], ids=["on time", "early"])
async def test_two_clients_share_one_schedule_in_turn(
    redis_server: RedisServer,
    limiters: list[RateLimiter],
    sleep: Callable[[float], Awaitable[None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two clients of one credential stay within one rate together, and take turns (FIFO).

    Each holds one reservation at a time, its queue's head's, as with a Redis near enough
    (pinned: on a loaded test machine a slot can come back due within a round trip, and
    then a client reserves ahead): a client whose grant came reserves its next slot behind
    the other's, so their grants alternate.
    (One event loop, so that a process the machine puts to sleep cannot reorder them.)
    A timer that fires early does not give the slot back (lost, as the other process's
    reservation is already behind it: on uvloop two clients ran at 0.76 of the rate).
    """
    monkeypatch.setattr(_queue, "PIPELINE_FROM", math.inf)
    limits = RateLimits(write=200, burst=1)
    limiters += [shared_limiter(redis_server.url, limits, sleep=sleep) for _ in range(2)]
    start = time.monotonic()
    first, second = await asyncio.gather(*(grant_times(limiter, 10) for limiter in limiters))
    merged = sorted([(when, 0) for when in first] + [(when, 1) for when in second])
    # 20 grants at 198/s with no burst: at least 19 intervals, together (9 each alone).
    assert merged[-1][0] - start >= 19 / 200 * 0.95
    assert all(limiter.state.write.shared for limiter in limiters)
    # Taking turns, neither is ever more than a grant ahead: two, with two wake-ups that
    # came in one pass of the event loop in the other order.
    ahead = list(itertools.accumulate(1 if index else -1 for _, index in merged))
    assert max(map(abs, ahead)) <= 2, [index for _, index in merged]


async def test_processes_share_one_bucket(redis_server: RedisServer, workers: Workers) -> None:
    """Three processes sharing a bucket are paced together: one rate for all three.

    Which process gets which slot depends on when the machine runs each one; the turns
    they take are asserted in one event loop (``test_two_clients_share_one_schedule_in_turn``).
    """
    count, rate = 8, 100.0
    args = [redis_server.url, str(count), str(rate), "1", "3"]  # 3: start together
    outputs = await workers.run("acquire", args, processes=3)
    grants = [output["grants"] for output in outputs]
    assert [len(times) for times in grants] == [count] * 3
    merged = sorted(when for times in grants for when in times)
    assert merged[-1] - merged[0] >= (3 * count - 1) / rate * 0.9  # not 3 × 100/s


async def test_a_fresh_shared_bucket_grants_the_known_burst(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Nobody used the credential for a TTL: the server's bucket is full, and so is ours.

    Full less the idle margin: 5 - 1 - 0.1 = 3.9, so the sixth grant is due 2.1 intervals
    after the first (0.21 s at 10/s); from one request, as a client alone starts, it
    would be due after five (0.5 s).
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=10, burst=5))
    limiters.append(limiter)
    store, schedule = shared_store(limiter), limiter._queues["write"].schedule
    slots: list[Slot] = []
    for _ in range(6):
        slot = await reserve_one(store, schedule)
        slots.append(slot)
    # Redis's clock places the slots. Each wait counts from its own reservation, so a
    # machine slow between them can only shorten the later waits, never lengthen them.
    assert max(slot.wait for slot in slots[:3]) == 0  # three at once
    assert slots[-1].wait < 0.3  # about 0.21 s; from one request, 5 intervals: 0.5 s


async def test_a_pause_holds_every_process(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A 429's Retry-After seen by one client pauses the others too."""
    limits = RateLimits(write=100, burst=1, adaptive=False)
    first, second = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, second]
    grant = await first.acquire("POST")
    start = time.monotonic()  # before the pause begins: it ends 0.1 s after this at the least
    await first.record(grant, 429, {"retry-after-ms": "100"})
    await asyncio.wait_for(second.acquire("POST"), 10)
    assert time.monotonic() - start >= 0.09  # its own bucket would grant at once


async def test_a_wait_past_the_timeout_fails_at_once_when_others_share_the_rate(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A newcomer's wait counts the turns other processes take between this one's.

    Another client of the credential keeps the schedule full, so each of this client's
    waiters waits two intervals, not one. Of 30 calls with a 0.3 s timeout at 50/s, those
    whose turn would come past it (from about the eighth) fail on arrival; counted at one
    interval a waiter, the eighth to the fifteenth queued and failed only at their turn.
    """
    limits = RateLimits(write=50, burst=1, adaptive=False)
    mine, other = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [mine, other]
    busy = asyncio.ensure_future(grant_times(other, 400))
    try:
        await grant_times(mine, 10)  # in turn with the other: the gap between turns is seen
        assert not busy.done()

        async def call() -> None:
            grant = await mine.acquire("POST", timeout=0.3)
            await mine.record(grant, 201, {})

        calls = [asyncio.ensure_future(call()) for _ in range(30)]
        await asyncio.sleep(0)  # each call's first step: a wait past the timeout raises there
        at_once = {index for index, task in enumerate(calls) if task.done()}
        await asyncio.wait(calls, timeout=10)
        failed = {
            index
            for index, task in enumerate(calls)
            if isinstance(task.exception(), RateLimiterTimeoutError)
        }
        assert not busy.done()  # the other client kept the schedule full throughout
    finally:
        busy.cancel()
    assert at_once <= failed
    assert len(at_once) >= 15, sorted(failed)
    # An average of gaps projects each turn: a call or two near the edge may miss it late.
    assert len(failed - at_once) <= 2, sorted(failed - at_once)


async def test_a_quiet_spell_is_not_taken_for_other_processes_turns(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A waiter that left before its turn, then a quiet spell: later calls are not refused.

    The queue measures the gap between its own turns only while waiters follow each
    other. A cancelled waiter left the last turn behind, and the first turn after the
    quiet spell counted the whole spell as one gap: for seconds after it, every call
    that found another waiting failed on arrival, though nobody else used the bucket.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=40, burst=1, adaptive=False))
    limiters.append(limiter)
    await grant_times(limiter, 1)  # connected
    await asyncio.sleep(0.1)  # a slot free: the first of three goes at once
    calls = [asyncio.ensure_future(limiter.acquire("POST")) for _ in range(3)]
    await asyncio.sleep(0.005)  # the first granted, the second the head, the third behind
    calls[2].cancel()
    for call in calls[:2]:
        await limiter.record(await asyncio.wait_for(call, 10), 201, {})
    await asyncio.sleep(3.0)
    for _ in range(3):  # three at once need 0.05 s at 40/s: none is refused
        grants = await asyncio.gather(*(limiter.acquire("POST", timeout=0.5) for _ in range(3)))
        for grant in grants:
            await limiter.record(grant, 201, {})
        await asyncio.sleep(0.3)


async def test_a_pause_another_process_met_is_not_taken_for_its_turns(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A pause that another process's 429 set is counted once, not into every later turn."""
    limits = RateLimits(write=40, burst=1, adaptive=False)
    mine, other = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [mine, other]
    store = shared_store(mine)
    reserve = store.reserve_many
    reservations = itertools.count()
    other_grant = await other.acquire("POST")

    async def reserve_after_a_pause(*args: Any, **kwargs: Any) -> list[Slot] | float:
        # Between two of this client's turns (its head granted, the next not yet
        # reserved), the other meets a 429: this one learns of it from its reservation.
        if next(reservations) == 5:
            await other.record(other_grant, 429, {"retry-after-ms": "600"})
        return await reserve(*args, **kwargs)

    store.reserve_many = reserve_after_a_pause  # type: ignore[method-assign]
    await grant_times(mine, 7)  # the turn after the pause is among the last
    # Alone but for one grant of the other: a waiter behind one other waits one or two
    # intervals (0.025-0.05 s), not the pause again.
    wait = mine._queues["write"].shared_wait(1, 0.0)
    assert wait < 0.075, wait


async def test_one_overload_lowers_the_shared_rate_once(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Two processes answered 429 for the same overload: the shared rate drops once.

    At the told limit a first 429 is a strike that only pauses and starts an epoch; it is
    shared too. The overload after it lowers the rate, once: the epoch moves by one.
    """
    limits = RateLimits(write=100, burst=2)
    first, second = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, second]
    await first.record(await first.acquire("POST"), 429, {})
    assert first.state.write.rate == 99
    grants = [await first.acquire("POST"), await second.acquire("POST")]
    assert [grant.epoch for grant in grants] == [1, 1]
    await first.record(grants[0], 429, {})
    await second.record(grants[1], 429, {})
    lowered = first.state.write.rate
    assert lowered < 99
    assert second.state.write.rate == lowered
    assert (await first.acquire("POST")).epoch == (await second.acquire("POST")).epoch == 2


async def test_through_redis_a_probe_in_a_run_of_429s_goes_alone(
    redis_server: RedisServer, limiters: list[RateLimiter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue's head waits for the probe's answer through a shared store too.

    Each process probes for itself (the run of 429s is its own count); the pause the run
    set is the fleet's.
    """
    monkeypatch.setattr(_queue, "PROBE_WAIT", 60.0)  # only the answer frees it here
    limiter = shared_limiter(redis_server.url, RateLimits(write=100, burst=2))
    limiters.append(limiter)
    for _ in range(_queue.PROBE_STREAK):
        await limiter.record(await limiter.acquire("POST"), 429, {})
    probe = await asyncio.wait_for(limiter.acquire("POST"), 10)
    follower = asyncio.ensure_future(limiter.acquire("POST"))
    await asyncio.sleep(0.3)  # a bare 429's pause at this rate is 0.06 s at the most
    assert not follower.done()
    await limiter.record(probe, 200, {})
    await asyncio.wait_for(follower, 10)


async def test_a_strike_that_goes_on_is_shared(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A run of 429s after a strike at the told limit moves the strike's end for all.

    The fleet's next 429 is judged by when the run ended (within STRIKE_WINDOW of it, a
    second strike), not by the run's first 429.
    """
    limits = RateLimits(write=400, burst=1)
    first, second = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, second]
    await grant_times(first, 210)  # over half a second of the told rate, admitted
    await first.record(await first.acquire("POST"), 429, {})
    await grant_times(second, 1)
    struck = shared_store(second).snapshot("write")[0]
    assert (struck.phase, struck.strike_run) == ("paced", True)
    await first.record(await first.acquire("POST"), 429, {})  # the same run
    await grant_times(second, 1)
    goes_on = shared_store(second).snapshot("write")[0]
    assert (goes_on.phase, goes_on.rate, goes_on.epoch) == ("paced", 400 * 0.99, struck.epoch)
    assert goes_on.t_fail > struck.t_fail


async def reserve_one(store: RedisStore, schedule: Schedule) -> Slot:
    """One write slot, reserved as a queue's head does (no ``max_wait``: never refused)."""
    slots = await store.reserve_many("write", schedule, 1, max_wait=None)
    assert isinstance(slots, list)
    return slots[0]


def shared_store(limiter: RateLimiter) -> RedisStore:
    store = limiter._store
    assert isinstance(store, RedisStore)
    return store


async def test_a_slot_is_stamped_with_the_busy_time_it_falls_at(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Its wait is busy time: the fleet's schedule is booked until then.

    Stamped at the reservation instead, eight processes each holding a slot 0.4 s ahead
    measured every answer 0.4 s early, and a slow start doubled a second late.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=10, burst=1))
    limiters.append(limiter)
    store, schedule = shared_store(limiter), limiter._queues["write"].schedule
    slots = [await reserve_one(store, schedule) for _ in range(3)]
    busy = [slot.busy - slot.wait for slot in slots]
    assert busy == pytest.approx([busy[0]] * 3, abs=0.05)  # reserved at once: wait is busy
    assert slots[-1].wait >= 0.15


async def test_a_slot_given_back_in_redis_is_undone(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """The last slot given back is the next one reserved, not an interval lost.

    Redis's Lua printed the schedule's time with 14 digits (a tenth of a millisecond of an
    epoch time), so the release never matched it and every slot given back was lost.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=10, burst=1))
    limiters.append(limiter)
    store, schedule = shared_store(limiter), limiter._queues["write"].schedule
    await reserve_one(store, schedule)
    second = await reserve_one(store, schedule)
    await store.release("write", second)
    again = await reserve_one(store, schedule)
    assert again.wait < 0.15  # the second's slot, 0.1 s after the first; lost, 0.2 s
    assert again.tat == pytest.approx(second.tat, abs=1e-6)


async def test_a_slot_given_back_is_not_counted_as_sent(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Even when the schedule moved on since and its time cannot be given back.

    Counted, the fleet's send rate read 130/s while 85/s went out, and the learning,
    held to a multiple of it, climbed to twice the limit.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=10, burst=1))
    limiters.append(limiter)
    store, schedule = shared_store(limiter), limiter._queues["write"].schedule
    first = await reserve_one(store, schedule)
    await reserve_one(store, schedule)
    await store.release("write", first)  # not the last one: its time stays booked
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        (key,) = [key for key in await client.keys("*write*") if b"clients" not in key]
        assert int(await client.hget(key, "m0") or -1) == 1
    finally:
        await client.aclose()


async def test_a_rate_written_paces_every_process_at_once(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """The new rate applies to the time already booked, and to processes behind it.

    A process that has not seen the write yet reserves at the rate it knows: at a slow
    start's old rate it booked the fleet's schedule twice as far ahead, and undid the
    rescaling of everyone's debt.
    """
    limits = RateLimits(write=10, burst=1)
    first, behind = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, behind]
    store, slow = shared_store(first), first._queues["write"].schedule
    for _ in range(5):  # half a second booked at 10/s
        await reserve_one(store, slow)
    control, version, _ = store.snapshot("write")
    faster = attrs.evolve(control, rate=100.0)
    fast = first._queues["write"].schedule_for(faster)
    replaced = await store.update("write", faster, version, schedule=fast, pause=0.0, tokens=None)
    assert replaced
    slot = await reserve_one(shared_store(behind), slow)
    assert slot.interval == pytest.approx(0.01)
    assert slot.wait < 0.25  # 0.4 s of debt at 10/s is 0.04 s at 100/s
    assert behind.state.write.rate == 100.0  # and it has the new state with the answer


async def test_limits_set_at_runtime_are_every_process_s(
    redis_server: RedisServer, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """``set_limits`` in one process paces the shared bucket, and so every process, at it.

    It changed only that process's schedule: the shared state (its TTL renewed by every
    reservation) paced the fleet, that process too, at the old limit for as long as any
    process used the credential (a new user's audit: 10.0/s after set_rate_limits(22)).
    """
    told = RateLimits(write=10, burst=1)
    first, other = (shared_limiter(redis_server.url, told) for _ in range(2))
    limiters += [first, other]
    await grant_times(first, 2)
    await grant_times(other, 2)
    assert first.state.write.rate == other.state.write.rate == pytest.approx(9.9)
    first.set_limits(RateLimits(write=20, burst=1))
    assert first.state.write.rate == pytest.approx(19.8)  # at once, here
    with caplog.at_level(logging.WARNING, logger="contractsdk"):
        await grant_times(first, 1)  # written over the shared state with this reservation
        await grant_times(other, 2)  # read with the next
    assert first.state.write.rate == other.state.write.rate == pytest.approx(19.8)
    told_otherwise = [r.getMessage() for r in caplog.records if "was told" in r.getMessage()]
    assert len(told_otherwise) == 1 and "paces at 20/s" in told_otherwise[0]
    await grant_times(first, 2)  # written once: its own state is not written again
    assert first.state.write.rate == pytest.approx(19.8)


async def test_a_faster_rate_keeps_the_head_s_place(
    redis_server: RedisServer, limiters: list[RateLimiter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shared, a rate rise shrinks the sleeping head's wait; its slot is not given back.

    Given back, a slot in a schedule other processes booked past since is a slot lost:
    eight processes, their heads woken by every rise of a slow start, sent 85/s of a rate
    of 140/s.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=0.05, burst=1))
    limiters.append(limiter)
    store = shared_store(limiter)
    released: list[Slot] = []
    give_back = store.release

    async def release(bucket: Any, slot: Slot, count: int = 1) -> None:
        released.append(slot)
        await give_back(bucket, slot, count)

    monkeypatch.setattr(store, "release", release)
    await limiter.acquire("POST")
    start = time.monotonic()
    second = asyncio.create_task(limiter.acquire("POST"))  # due 20 s later at 0.05/s
    await asyncio.sleep(0.05)
    control, _, _ = store.snapshot("write")
    limiter._queues["write"].reschedule(attrs.evolve(control, rate=100.0))  # as learnt
    await asyncio.wait_for(second, 30)
    assert time.monotonic() - start < 10  # its wait shrank with the rate (from 20 s)
    assert released == []


async def test_a_slot_placed_at_the_shared_rate_is_not_shrunk_again(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A process behind the shared state is paced at its rate; learning it shrinks nothing.

    Its slot was placed at the written rate already: shrunk again by the rate it knew
    before, the request would go ten times too early.
    """
    limits = RateLimits(write=10, burst=1)
    writer, behind = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [writer, behind]
    store, slow = shared_store(writer), writer._queues["write"].schedule
    start = time.monotonic()  # before the first slot, which the one awaited is 0.1 s after
    for _ in range(10):  # a second booked at 10/s
        await reserve_one(store, slow)
    control, version, _ = store.snapshot("write")
    faster = attrs.evolve(control, rate=100.0)
    fast = writer._queues["write"].schedule_for(faster)
    assert await store.update("write", faster, version, schedule=fast, pause=0.0, tokens=None)
    waiting = asyncio.create_task(behind.acquire("POST"))  # 0.1 s at 100/s
    await asyncio.sleep(0.01)
    behind._queues["write"].reschedule(faster)  # as it learns the rate it was paced at
    await asyncio.wait_for(waiting, 10)
    assert time.monotonic() - start >= 0.9 * 0.1  # never before its slot


async def test_keys_are_namespaced_and_expire(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Every key lives under the namespace and has a time to live."""
    limiter = shared_limiter(redis_server.url, RateLimits(write=100))
    limiters.append(limiter)
    await grant_times(limiter, 2)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        keys = await client.keys("*")
        assert keys
        for key in keys:
            assert key_name(key).startswith(PREFIX)
            ttl = await client.pttl(key)
            assert 0 < ttl <= TTL * 1000
    finally:
        await client.aclose()


async def test_redis_killed_mid_run_falls_back_and_rejoins(
    redis_server: RedisServer, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """Redis dies: calls go on alone (no hang, no error, none lost); it returns: rejoined."""
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    limiter = shared_limiter(redis_server.url, RateLimits(write=200), rejoin_after=0.1)
    limiters.append(limiter)
    await grant_times(limiter, 5)
    assert shared_now(limiter)
    redis_server.kill()
    times = await grant_times(limiter, 10)  # bounded by wait_for: no call hangs
    assert len(times) == 10
    assert not shared_now(limiter)
    redis_server.start()
    await asyncio.sleep(0.12)  # past rejoin_after since the last failed try
    for _ in range(100):  # a PING finds it in the background; the call after it rejoins
        await grant_times(limiter, 1)
        if shared_now(limiter):
            break
    assert shared_now(limiter)
    warnings = [record.getMessage() for record in caplog.records]
    assert sum("unreachable" in message for message in warnings) == 1  # one per outage
    assert any("back" in message for message in warnings)
    assert all("redis://" not in message for message in warnings)


async def test_redis_killed_under_three_busy_processes(
    redis_server: RedisServer, workers: Workers
) -> None:
    """Redis dies while three processes reserve slots, and comes back: none hangs or loses one.

    Each goes on alone at its share, and shares again once Redis is back.
    """
    count, rate = 60, 60.0  # a second and more shared; about three alone at a third each
    args = [redis_server.url, str(count), str(rate), "1", "3", "0.1"]
    running = asyncio.create_task(workers.run("acquire", args, processes=3))
    bucket = "contractsdk:test-workers:bucket:write"
    await _until(lambda: bucket in list(redis_server.keys()))
    await asyncio.sleep(0.3)  # some grants shared
    redis_server.kill()
    await asyncio.sleep(0.5)  # some alone
    redis_server.start()
    outputs = await running  # bounded by Workers.run's timeout: none hangs
    for output in outputs:
        assert len(output["grants"]) == count  # none lost
        through = output["shared"]
        assert not all(through), through  # some alone…
        alone = through.index(False)
        assert any(through[:alone]) and any(through[alone:]), through  # …between shared


async def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait (bounded) until ``condition()`` holds, looking every 10 ms."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.01)


async def test_redis_away_from_the_start_is_not_an_error(limiters: list[RateLimiter]) -> None:
    """A Redis that never answers: every call still goes, at this process's share."""
    limiter = shared_limiter("redis://127.0.0.1:9/0", RateLimits(write=100))  # port 9: closed
    limiters.append(limiter)
    times = await grant_times(limiter, 5)
    assert len(times) == 5
    assert not limiter.state.write.shared


async def warnings_going_alone(
    url: str, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> list[str]:
    """Three grants through a Redis that will not take the client: none lost, none shared.

    Returns the warnings about Redis that were logged.
    """
    limiter = shared_limiter(url, RateLimits(write=100))
    limiters.append(limiter)
    with caplog.at_level(logging.WARNING, logger="contractsdk"):
        assert len(await grant_times(limiter, 3)) == 3  # unshared, but nothing lost
    assert not limiter.state.write.shared
    return [r.getMessage() for r in caplog.records if "Redis" in r.getMessage()]


async def test_a_database_redis_does_not_have_is_said_so(
    redis_server: RedisServer, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """A database number the server does not have: the warning says Redis refused the client.

    It said "unreachable", which sent one looking for a network problem.
    """
    url = f"redis://127.0.0.1:{redis_server.port}/99"
    warned = await warnings_going_alone(url, limiters, caplog)
    assert warned and "Redis answered but refused the client" in warned[0], warned
    assert "/99" not in warned[0]  # the URL is never shown


async def test_a_wrong_password_is_said_so(
    redis_server: RedisServer, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong password or user: the warning says Redis refused the client, not unreachable.

    redis-py raises its AuthenticationError, a ConnectionError, for it: the warning said
    "Redis is unreachable", which sent one looking for a network problem.
    """
    url = f"redis://nobody:wrong-pw-4f1a@127.0.0.1:{redis_server.port}/0"  # WRONGPASS
    warned = await warnings_going_alone(url, limiters, caplog)
    assert len(warned) == 1, warned
    assert warned[0].startswith("Redis refused this client (AuthenticationError: "), warned
    assert "unreachable" not in warned[0]
    # It never reached Redis: alone at the whole limit, until Redis takes the client (it
    # said "falls back to its share ... until it is back", neither of which was so).
    assert "(all of it if it never reached Redis) until Redis accepts it" in warned[0]
    assert "wrong-pw-4f1a" not in caplog.text


async def test_a_tls_redis_is_shared_through_a_rediss_url(
    limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """rediss:// with the CA named in the URL shares; without it, the warning says why.

    A Redis whose certificate the system does not trust fails with a bare ConnectionError;
    the warning names OpenSSL's reason (never the URL), and the client goes on alone.
    """
    server = RedisServer(tls=True)
    server.start()
    try:
        url = f"rediss://127.0.0.1:{server.tls_port}/0"
        trusted = shared_limiter(f"{url}?ssl_ca_certs={server.ca_file}", RateLimits(write=100))
        limiters.append(trusted)
        await grant_times(trusted, 3)
        assert trusted.state.write.shared
        warned = await warnings_going_alone(url, limiters, caplog)
        assert warned and "unreachable" in warned[0], warned
        assert "TLS: self-signed certificate" in warned[0], warned
    finally:
        for limiter in limiters:
            await limiter.aclose()
        limiters.clear()
        server.stop()


async def test_a_redis_that_hangs_never_makes_a_call_go_past_its_timeout() -> None:
    """A call whose slot comes from a Redis that hung past the call's timeout fails.

    The Redis call took its own timeout (0.25 s), and the fallback then had a slot free:
    the call went out anyway, 0.25 s after it came with a timeout of 0.1 s.
    """
    server = RedisServer()
    server.start()
    limiter = shared_limiter(server.url, RateLimits(write=20, adaptive=False))
    try:
        await grant_times(limiter, 1)
        assert limiter.state.write.shared
        server.pause()
        with pytest.raises(RateLimiterTimeoutError) as caught:
            await asyncio.wait_for(limiter.acquire("POST", timeout=0.1), 10)
        assert caught.value.wait > 0.1
    finally:
        server.pause(False)
        await limiter.aclose()
        server.stop()


async def test_a_call_fails_at_its_timeout_however_long_redis_may_take() -> None:
    """A hung Redis call is not waited out: the call fails at its own timeout.

    The Redis call's timeout here is 5 s, the call's 0.1 s; the call failed once the Redis
    call did, 5 s after it came. The Redis call goes on: answered once Redis resumes, it
    leaves the client shared (not taken for down over one caller's short timeout).
    """
    server = RedisServer()
    server.start()
    shared = SharedRedis(server.url, prefix=PREFIX, timeout=5.0)
    limiter = RateLimiter(
        RateLimits(write=20, adaptive=False), store=lambda initial: RedisStore(shared, initial)
    )
    try:
        await grant_times(limiter, 1)
        server.pause()
        with pytest.raises(RateLimiterTimeoutError):
            await asyncio.wait_for(limiter.acquire("POST", timeout=0.1), 2.5)
        server.pause(False)
        await grant_times(limiter, 2)
        assert limiter.state.write.shared
    finally:
        server.pause(False)
        await limiter.aclose()
        server.stop()


async def test_a_unix_socket_url_shares(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """``unix:///path/redis.sock`` shares as a ``redis://`` URL does.

    ``unix://redis.sock`` names no path (the name reads as the host part): redis-py took
    it and failed on every call, reported as Redis unreachable; it is refused when the
    client is made now, as any URL it cannot read is.
    """
    limiter = shared_limiter(redis_server.socket_url, RateLimits(write=100))
    limiters.append(limiter)
    await grant_times(limiter, 3)
    assert limiter.state.write.shared
    with pytest.raises(ConfigurationError, match="redis URL not understood"):
        SharedRedis("unix://redis.sock", prefix=PREFIX)


async def test_rediss_to_a_redis_without_tls_says_so(
    redis_server: RedisServer, limiters: list[RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """A plain Redis reads the TLS handshake as the start of a command and waits for more.

    The call times out as if nothing listened: the warning names the TLS handshake that
    got no answer, and the client goes on alone.
    """
    url = f"rediss://127.0.0.1:{redis_server.port}/0"
    warned = await warnings_going_alone(url, limiters, caplog)
    assert warned and "is unreachable (TimeoutError, TLS: no handshake answer" in warned[0], warned


async def test_fallback_paces_at_this_process_share(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """Two live clients seen, then Redis gone: each goes on at half the rate."""
    limits = RateLimits(write=100, burst=1)
    first, second = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, second]
    await asyncio.gather(grant_times(first, 2), grant_times(second, 2))
    await grant_times(first, 1)  # after both were seen: it counts two live clients
    assert first._store.live == 2
    redis_server.kill()
    start = time.monotonic()
    times = await grant_times(first, 5)
    assert times[-1] - start >= 4 / 50 * 0.9  # 50/s: its share of 100/s (alone: 4 / 100)


async def test_garbage_in_redis_is_ignored(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A learning state that is not ours (hostile, or another version's) is not adopted."""
    limiter = shared_limiter(redis_server.url, RateLimits(write=200))
    limiters.append(limiter)
    await grant_times(limiter, 1)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        key = f"{PREFIX}bucket:write"
        wrong_type = attrs.asdict(Control(rate=5.0, phase="paced", strike_run=True))
        wrong_type["strike_run"] = "yes"
        garbages = ('{"rate": -1}', "[" * 10_000, "not json", '{"rate": 1e400}')
        for version, garbage in enumerate((*garbages, json.dumps(wrong_type)), start=99):
            await client.hset(key, mapping={"ctl": garbage, "ver": version})
            await grant_times(limiter, 2)
            assert limiter.state.write.rate == pytest.approx(200 * 0.99)
    finally:
        await client.aclose()


def test_a_state_another_version_wrote_is_read_with_the_fields_this_one_knows() -> None:
    """A fleet upgraded one process at a time goes on sharing what it learnt, both ways.

    ``left_slow`` came later: a state without it is read with its default, 0.0 (no slow
    start left). A field this version does not know (a newer version's) is left out, and
    the rest is read; a ``left_slow`` out of range, or a known field missing, is not
    adopted.
    """
    control = Control(rate=80.0, phase="cubic", w_max=90.0, t_fail=3.0, k=2.0, epoch=2)
    older = {key: value for key, value in attrs.asdict(control).items() if key != "left_slow"}
    assert _decode(json.dumps(older)) == control
    assert _decode(_encode(attrs.evolve(control, left_slow=1.5))) == attrs.evolve(
        control, left_slow=1.5
    )
    assert _decode(json.dumps({**older, "newer": [1, {"x": 2}], "left_slow": 1.5})) == (
        attrs.evolve(control, left_slow=1.5)
    )
    assert (
        _decode(json.dumps({key: value for key, value in older.items() if key != "w_max"})) is None
    )
    assert _decode(json.dumps({**older, "left_slow": 1e300})) is None
    assert _decode(json.dumps({**older, "left_slow": True})) is None


@pytest.mark.parametrize(
    "hostile",
    [
        {"pause": "1e12"},
        {"tat": "1e15"},
        {"ctl": json.dumps(attrs.asdict(Control(rate=1e-9, phase="cubic"))), "ver": "999"},
        {"pause": "inf"},
        {"tat": "nan", "busy": "nan"},
    ],
    ids=["pause 1e12", "tat 1e15", "rate 1e-9", "pause inf", "tat and busy nan"],
)
async def test_whoever_writes_to_redis_cannot_stall_the_clients(
    redis_server: RedisServer, limiters: list[RateLimiter], hostile: dict[str, str]
) -> None:
    """Values written into a bucket's hash hold a request no longer than max_pause.

    The reserve script used what it read as it was: a pause of 1e12 made every client of
    the credential wait 1e12 s, and the key never expired as each try renewed it. NaN or
    inf sent the client to its fallback for good, with nothing logged.
    """
    limiter = shared_limiter(redis_server.url, RateLimits(write=200, max_pause=1))
    limiters.append(limiter)
    await grant_times(limiter, 1)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        await client.hset(f"{PREFIX}bucket:write", mapping=dict(hostile))  # type: ignore[arg-type]
    finally:
        await client.aclose()
    for _ in range(2):
        try:
            grant = await limiter.acquire("POST", timeout=1.5)
        except RateLimiterTimeoutError as exc:  # the wait it would have taken
            pytest.fail(f"held {exc.wait:.3g} s, past max_pause (1 s)")
        await limiter.record(grant, 201, {})
    assert limiter.state.write.shared  # still through Redis, not sent to its fallback


def test_a_bad_redis_setting_is_refused() -> None:
    """redis= takes a redis:// URL or a redis.asyncio.Redis; anything else is refused."""
    with pytest.raises(ConfigurationError, match="redis://"):
        ContractClient(api_key="k", redis="http://localhost:6379")
    with pytest.raises(ConfigurationError):
        ContractClient(api_key="k", redis=42)  # type: ignore[arg-type]  # wrong on purpose


async def test_client_reads_the_redis_url_from_the_environment(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTRACTSDK_REDIS_URL turns sharing on; redis=None turns it off."""
    monkeypatch.setenv("CONTRACTSDK_REDIS_URL", redis_server.url)
    async with ContractClient(api_key="k") as client:
        assert client.rate_limits is not None and client.rate_limits.write.shared
        assert client._shared is not None
    async with ContractClient(api_key="k", redis=None) as client:
        assert client._shared is None


async def test_a_caller_owned_redis_is_used_and_not_closed(redis_server: RedisServer) -> None:
    """redis= may be a redis.asyncio.Redis the caller owns: used, and left open.

    One Redis object serves the clients of several credentials (a service with a client
    per tenant): each shares under its own namespace, through the one connection pool.
    """
    owned = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        async with SandboxServer(seed=0) as server:
            key, other_key = server.api_keys[:2]
            async with (
                ContractClient(api_key=key, base_url=server.url, redis=owned) as client,
                ContractClient(api_key=other_key, base_url=server.url, redis=owned) as other,
            ):
                for each in (client, other):
                    await each.users.get(server.users[0].id)
                    assert each.rate_limits is not None and each.rate_limits.read.shared
            namespaces = {key_name(k).split("}")[0] for k in await owned.keys("contractsdk:*")}
            assert len(namespaces) == 2
        assert await owned.ping()
    finally:
        await owned.aclose()


def test_every_key_of_a_namespace_lies_in_one_cluster_slot() -> None:
    """A Redis Cluster runs a script only on keys of one hash slot: the prefix's hash tag."""
    prefix = namespace("https://api.example", "key-id")
    shared = SharedRedis("redis://127.0.0.1:9/0", prefix=prefix)
    names = [shared.key(*parts) for parts in (("write",), ("read",), ("live",), ("token",))]
    names.append(shared.key("token", "lock"))
    assert len({key_slot(name.encode()) for name in names}) == 1, names
    other = SharedRedis("redis://127.0.0.1:9/0", prefix=namespace("https://api.example", "b"))
    assert other.key("write") != shared.key("write")


def test_spellings_of_one_origin_share_one_namespace() -> None:
    """Processes configured with ``API.`` or ``:443/`` share with those spelt plainly.

    A URL spelt plainly keeps the namespace it always had (its hash is of the URL as
    given), so processes of an older version share with newer ones through an upgrade.
    """
    plain = namespace("https://api.legislate.tech", "id")
    digest = hashlib.sha256(b"https://api.legislate.tech\0id").hexdigest()[:24]
    assert plain == f"contractsdk:{{{digest}}}:"
    for spelling in ("https://API.Legislate.tech", "https://api.legislate.tech:443/"):
        assert namespace(spelling, "id") == plain, spelling
    assert namespace("http://127.0.0.1:80", "id") == namespace("http://127.0.0.1/", "id")
    assert namespace("http://[::1]:8080/", "id") == namespace("http://[::1]:8080", "id")
    for other in ("https://api.legislate.tech:8443", "https://sandbox.legislate.tech"):
        assert namespace(other, "id") != plain, other
    assert namespace("https://api.legislate.tech", "other") != plain


async def test_a_redis_cluster_shares_one_schedule(redis_cluster: RedisClusterNodes) -> None:
    """Clients sharing through a RedisCluster client stay shared and within one rate.

    Before the hash tag every script failed (CROSSSLOT) and each client fell back to its
    own limiter; before that, a RedisCluster was refused outright.
    """
    clusters = [aioredis.RedisCluster(host="127.0.0.1", port=redis_cluster.port) for _ in "ab"]
    prefix = namespace("https://api.example", "key-id")
    limits = RateLimits(write=200, burst=1)
    limiters = [shared_limiter(cluster, limits, prefix=prefix) for cluster in clusters]
    try:
        start = time.monotonic()
        first, second = await asyncio.gather(*(grant_times(limiter, 10) for limiter in limiters))
        assert all(limiter.state.write.shared for limiter in limiters)  # never fell back
        # 20 grants at 198/s with no burst between them: at least 19 intervals together.
        assert max(first + second) - start >= 19 / 200 * 0.95
    finally:
        for limiter in limiters:
            await limiter.aclose()
        for cluster in clusters:
            await cluster.aclose()


async def test_a_url_to_one_cluster_node_reaches_the_whole_cluster(
    redis_cluster: RedisClusterNodes, caplog: pytest.LogCaptureFixture
) -> None:
    """A URL may name any node of a cluster: every credential is shared through it.

    A MOVED answer turns the client into a cluster client. Before, a namespace whose slot was on another node fell back to its own limiter with a
    warning (MovedError): two of three credentials, with three nodes.
    """
    url = f"redis://127.0.0.1:{redis_cluster.port}/0"
    limiters = [
        shared_limiter(url, RateLimits(write=200, burst=1), prefix=namespace("https://x", name))
        for name in "abcdef"
    ]
    try:
        with caplog.at_level(logging.WARNING, logger="contractsdk"):
            for limiter in limiters:
                await grant_times(limiter, 3)
        assert all(limiter.state.write.shared for limiter in limiters)
        assert not [r for r in caplog.records if "unreachable" in r.getMessage()]
    finally:
        for limiter in limiters:
            await limiter.aclose()


async def test_a_client_takes_a_redis_cluster_it_does_not_own(
    redis_cluster: RedisClusterNodes,
) -> None:
    """redis= may be a redis.asyncio.RedisCluster the caller owns: used, and left open."""
    owned = aioredis.RedisCluster(host="127.0.0.1", port=redis_cluster.port)
    try:
        async with (
            SandboxServer(seed=0) as server,
            ContractClient(api_key=server.api_key, base_url=server.url, redis=owned) as client,
        ):
            await client.users.get(server.users[0].id)
            await client.users.get(server.users[0].id)
            assert client.rate_limits is not None and client.rate_limits.read.shared
        assert await owned.ping()
    finally:
        await owned.aclose()


def token_auths(
    shared: SharedRedis, requests: list[Request], count: int, *, expires_in: float
) -> list[TokenAuth]:
    """``count`` processes' token caches sharing ``shared``, one token endpoint for all.

    The endpoint appends each request to ``requests`` and answers ``at-1``, ``at-2``...
    """

    async def token_endpoint(request: Request) -> Response:
        requests.append(request)
        body = {"access_token": f"at-{len(requests)}", "expires_in": expires_in}
        return json_response(200, body)

    credentials = ClientCredentials(client_id="cid", client_secret="s3cr3t-client-secret")
    return [
        TokenAuth(credentials, Environment.SANDBOX, token_endpoint, shared=shared)
        for _ in range(count)
    ]


async def test_the_token_is_fetched_once_for_every_process(
    redis_server: RedisServer, workers: Workers
) -> None:
    """Four processes with one OAuth credential: one token request between them."""
    async with SandboxServer(seed=0, read_rate=None, write_rate=None) as server:
        user = server.users[0].id
        args = [redis_server.url, server.url, server.client_id, server.client_secret, str(user)]
        assert await workers.run("token", args, processes=4) == [{"ok": True}] * 4
        counters = server.counters()
    routes = counters["by_route"]
    assert isinstance(routes, dict)
    assert routes["POST /oauth/token"] == 1


async def test_a_token_stored_while_taking_the_lock_is_not_fetched_again(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process finds no token, and before it takes the lock another stores one and lets go.

    The lock is then free, but the token is there: one token request, not two.
    """
    shared = SharedRedis(redis_server.url, prefix="contractsdk:test-token:", timeout=10.0)
    requests: list[Request] = []
    first, second = token_auths(shared, requests, 2, expires_in=3600)
    script = shared.script

    def lock_after_the_other_process(name: str, lua: str) -> Any:
        taken = script(name, lua)
        if name != "token-lock":
            return taken

        async def take_lock(*, keys: list[str], args: list[Any]) -> Any:
            monkeypatch.setattr(shared, "script", script)
            await first.token()  # reads no token, locks, fetches, stores, unlocks
            return await taken(keys=keys, args=args)

        return take_lock

    monkeypatch.setattr(shared, "script", lock_after_the_other_process)
    try:
        assert await second.token() == await first.token() == "at-1"
    finally:
        await shared.aclose()
    assert len(requests) == 1


async def test_the_shared_token_is_sealed(redis_server: RedisServer) -> None:
    """What Redis holds is neither the token nor readable without the client secret."""
    async with SandboxServer(seed=0) as server:
        credentials = ClientCredentials(
            client_id=server.client_id, client_secret=server.client_secret
        )
        async with ContractClient(
            credentials=credentials, base_url=server.url, redis=redis_server.url
        ) as client:
            await client.users.get(server.users[0].id)
            token = await client._auth.token()
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        keys = [key for key in await raw.keys("*") if key_name(key).endswith(":token")]
        assert len(keys) == 1
        stored = await raw.get(keys[0])
        assert await raw.pttl(keys[0]) > 0  # it expires, as every key does
        assert not [key for key in await raw.keys("*") if key_name(key).endswith(":lock")]
    finally:
        await raw.aclose()
    assert stored is not None
    assert token.encode() not in stored
    assert server.client_secret.encode() not in stored


async def test_grant_is_fresh_only_in_its_epoch(
    redis_server: RedisServer, limiters: list[RateLimiter]
) -> None:
    """A grant taken before another process lowered the rate is an echo there too."""
    limits = RateLimits(write=100, burst=3)
    first, second = (shared_limiter(redis_server.url, limits) for _ in range(2))
    limiters += [first, second]
    old = await second.acquire("POST")
    await first.record(await first.acquire("POST"), 429, {})
    lowered = first.state.write.rate
    await grant_times(second, 1)  # second learns the new epoch with its next grant
    await second.record(Grant("write", old.epoch, 0.0), 429, {})
    assert second.state.write.rate == lowered


async def test_a_closed_client_reserves_nothing_more_and_reopens_no_connection(
    redis_server: RedisServer,
) -> None:
    """Calls queued at aclose() fail at once: none takes a slot of the shared bucket after.

    They used to reserve a slot each when their turn came, then throw it away: another
    client of the credential ran at half the shared rate for 19 s, and redis-py's pool,
    closed, opened a connection again and left it open.
    """
    from contractsdk import ConfigurationError, ContractClient
    from contractsdk.testing import MockTransport

    async def forever(seconds: float) -> None:
        await asyncio.Event().wait()

    client = ContractClient(
        api_key="Kq7-key-0123456789",
        transport=MockTransport(lambda request: json_response(200, {"id": 1})),
        rate_limits=RateLimits(read=1),
        redis=redis_server.url,
        retries=None,
        sleep=forever,
    )
    await client.users.get(1)
    waiting = [asyncio.ensure_future(client.users.get(2 + n)) for n in range(10)]
    for _ in range(1_000):  # bounded: the calls queue within a few loop turns
        if client.rate_limits is not None and client.rate_limits.read.waiting == 10:
            break
        await asyncio.sleep(0.001)
    inspector = aioredis.Redis.from_url(redis_server.url)
    try:
        before = await inspector.info("commandstats")
        await client.aclose()
        await asyncio.wait(waiting, timeout=5)
        after = await inspector.info("commandstats")
        clients = (await inspector.info("clients"))["connected_clients"]
    finally:
        await inspector.aclose()
    for task in waiting:
        assert task.done()
        with pytest.raises(ConfigurationError, match="closed"):
            task.result()
    scripts = ("cmdstat_evalsha", "cmdstat_eval")
    calls = [before.get(name, {}).get("calls", 0) for name in scripts]
    assert [after.get(name, {}).get("calls", 0) for name in scripts] == calls
    assert clients == 1  # the inspector only


async def test_a_shared_token_lives_as_long_as_redis_says_whatever_the_wall_clocks(
    redis_server: RedisServer,
) -> None:
    """A host whose wall clock runs behind does not use the shared token past its end.

    Its life was the expiry sealed in by the fetching host's wall clock, read against the
    reader's: 16 s behind, a host sent the token 16 s past its end (four times the 401s).
    Now it is the key's TTL, which Redis counts.
    """
    shared = SharedRedis(redis_server.url, prefix="contractsdk:test-token-clock:", timeout=10.0)

    async def token_endpoint(request: Request) -> Response:
        return json_response(200, {"access_token": "at-1", "expires_in": 60})

    credentials = ClientCredentials(client_id="cid", client_secret="s3cr3t-client-secret")
    fetcher = TokenAuth(credentials, Environment.SANDBOX, token_endpoint, shared=shared)
    behind = TokenAuth(
        credentials,
        Environment.SANDBOX,
        token_endpoint,
        shared=shared,
        wall_clock=lambda: time.time() - 1000,
    )
    try:
        assert await fetcher.token() == "at-1"
        assert await behind.token() == "at-1"  # read from Redis, not fetched again
        cached = behind._cached
        assert cached is not None
        assert 50 < cached.expires_at - time.monotonic() <= 60
    finally:
        await shared.aclose()


async def test_a_shared_token_is_refreshed_its_margin_before_its_end(
    redis_server: RedisServer,
) -> None:
    """A process that reads the shared token late in its life refreshes it, once, for all.

    Its margin was taken from the life it had left, halved at each read: every process
    used the token to its end, and each token's end brought a 401 per process in flight
    (36 in a 20 s run of three processes with tokens of 6 s). The seal now carries the
    token's whole life: a token of 4 s is refreshed 2 s (and up to 0.4 s of jitter)
    before its end, whoever read it.
    """
    shared = SharedRedis(redis_server.url, prefix="contractsdk:test-token-late:", timeout=10.0)
    requests: list[Request] = []
    fetcher, early, late, later = token_auths(shared, requests, 4, expires_in=4)
    try:
        assert await fetcher.token() == "at-1"
        assert await early.token() == "at-1"  # read early in its life: used
        await asyncio.sleep(2.5)  # 1.5 s left: within the margin of a 4 s token
        assert await late.token() == "at-2"  # refreshed, and stored for the others
        assert await later.token() == "at-2"
    finally:
        await shared.aclose()
    assert len(requests) == 2


def test_redis_pys_own_timeout_says_tls_got_no_handshake_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """redis-py's connect timeout, which may fire before ours, is a timeout too.

    Both are half a second before any call was measured; on a loaded machine redis-py's
    came first, and the TLS client of a plain Redis was told only "unreachable".
    """
    from redis.exceptions import TimeoutError as RedisTimeoutError

    shared = SharedRedis("rediss://127.0.0.1:1/0", prefix=PREFIX)
    with caplog.at_level(logging.WARNING, logger="contractsdk.redis"):
        shared._failed(RedisTimeoutError("Timeout connecting to server"))
    assert "is unreachable (TimeoutError, TLS: no handshake answer" in caplog.text
