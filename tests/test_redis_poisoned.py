"""Shared state in a real redis-server that the SDK did not write, or wrote otherwise.

Another version, a buggy or hostile writer with the password, a clock that went back, a
key of the wrong type: whatever Redis holds, a client waits no longer than its
``max_pause`` for it, raises nothing of it, keeps sharing, and is not stuck once the
value is gone or cut. Each test writes one such value beside a client that shares the
bucket, and bounds what the client may take with a timeout far beyond what the right
behaviour needs (never a measured duration).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest
import redis.asyncio as aioredis

from contractsdk import ClientCredentials, RateLimiterTimeoutError, RateLimits, Request, Response
from contractsdk._auth import TOKEN_LOCK_SECONDS, TokenAuth
from contractsdk._config import Environment
from contractsdk._ratelimit import RateLimiter
from contractsdk._ratelimit._control import Control
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redis import SharedRedis
from contractsdk.bulk._lease import InputLease
from contractsdk.testing import json_response
from tests._redisserver import RedisServer

PREFIX = "contractsdk:{poisoned}:"
BUCKET = f"{PREFIX}bucket:write"
#: The longest pause the clients here take from anything (RateLimits.max_pause).
MAX_PAUSE = 1.0
#: Seconds a step may take before the test fails rather than hangs.
BOUND = 5.0


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    """A plain connection to the test's Redis, to write what the SDK would not."""
    client = aioredis.Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture
async def make_limiter(redis_server: RedisServer) -> AsyncIterator[Callable[..., RateLimiter]]:
    """Limiters sharing the write bucket through the test's Redis; closed after the test."""
    made: list[RateLimiter] = []

    def make(limits: RateLimits | None = None) -> RateLimiter:
        shared = SharedRedis(redis_server.url, prefix=PREFIX)
        limits = limits or RateLimits(write=200, max_pause=MAX_PAUSE)
        limiter = RateLimiter(limits, store=lambda initial: RedisStore(shared, initial))
        made.append(limiter)
        return limiter

    yield make
    for limiter in made:
        await limiter.aclose()


async def go(limiter: RateLimiter, *, timeout: float = BOUND, status: int = 201) -> None:
    """One request's turn, within ``timeout``, and its answer taken in."""
    grant = await asyncio.wait_for(limiter.acquire("POST", timeout=timeout), BOUND + timeout)
    await limiter.record(grant, status, {})


async def redis_now(raw: aioredis.Redis) -> float:
    seconds, micros = await raw.time()
    return seconds + micros / 1e6


def store_of(limiter: RateLimiter) -> RedisStore:
    store = limiter._store
    assert isinstance(store, RedisStore)
    return store


def control_json(**fields: Any) -> str:
    return json.dumps(attrs.asdict(Control(**fields)))


# -- pauses and schedules ----------------------------------------------------------------


@pytest.mark.parametrize("pause", ["a year away", "inf"])
async def test_a_pause_past_max_pause_holds_one_request_not_every_one(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter], pause: str
) -> None:
    """Cut to max_pause once, and written so: it ends.

    Cut anew at each reservation (relative to Redis's now), the pause never ended: every
    request of every process waited max_pause, for as long as the key lived.
    """
    limiter = make_limiter()
    await go(limiter)
    until = await redis_now(raw) + 365 * 86400 if pause == "a year away" else pause
    await raw.hset(BUCKET, "pause", str(until))
    await go(limiter, timeout=MAX_PAUSE + BOUND)  # waits out max_pause at most
    for _ in range(3):
        await go(limiter, timeout=MAX_PAUSE / 2)  # the pause is over
    assert float(await raw.hget(BUCKET, "pause") or 0) <= await redis_now(raw)


async def test_a_pause_that_is_no_number_holds_nobody(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """NaN is no pause (it held every request max_pause, for as long as the key lived)."""
    limiter = make_limiter()
    await go(limiter)
    await raw.hset(BUCKET, "pause", "nan")
    for _ in range(3):
        await go(limiter, timeout=MAX_PAUSE / 2)


async def test_a_pause_of_inf_read_by_an_update_keeps_the_bucket_shared(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """A 429 answered while Redis holds an infinite pause: still shared, paused max_pause.

    The update returned the pause as 'inf', which no client reads: each went to its
    fallback, and came back at its next reservation only to leave again at the next 429.
    """
    limiter = make_limiter()
    grant = await limiter.acquire("POST", timeout=BOUND)
    await raw.hset(BUCKET, "pause", "inf")
    await limiter.record(grant, 429, {"Retry-After": "0.1"})
    state = limiter.state.write
    assert state.shared
    assert 0 < state.paused_for <= MAX_PAUSE


async def test_an_interval_of_1e_300_does_not_hold_the_head_for_ever(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """The schedule's debt rescaled from an absurd interval is not booked.

    A debt of five seconds at an interval of 1e-300, rescaled to the caller's 1/200 s, was
    a wait of 1e298 s: the head of the queue slept for ever, and every request behind it.
    """
    limiter = make_limiter()
    await go(limiter)
    await raw.hset(BUCKET, mapping={"iv": "1e-300", "tat": repr(await redis_now(raw) + 5)})
    try:
        await go(limiter, timeout=BOUND)
    except RateLimiterTimeoutError as exc:
        pytest.fail(f"held {exc.wait:.3g} s")


async def test_a_redis_clock_gone_back_holds_nobody(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """Redis's clock stepped back 300 s (a failover to a host behind): nobody waits 300 s.

    What it wrote ahead of its new now (the schedule, the last grant, the last event) was
    kept, and every client waited out the difference. Here the times are moved ahead
    instead: the scripts see the same.
    """
    limiter = make_limiter()
    for _ in range(3):
        await go(limiter)
    names = ["tat", "last", "seen"]
    written = await raw.hmget(BUCKET, names)
    moved = [repr(float(value or 0) + 300) for value in written]
    await raw.hset(BUCKET, mapping=dict(zip(names, moved, strict=True)))
    for _ in range(3):
        await go(limiter, timeout=MAX_PAUSE)


async def test_a_version_no_script_counted_to_is_replaced(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """A version of NaN, 1.5 or 1e300 is reset, and the clients' own rate paces again.

    It never equalled the one a client sent back: every client paced at the interval in
    Redis (here max_pause), and no update could ever replace the state.
    """
    limiter = make_limiter()
    await go(limiter)
    for version in ("nan", "1.5", "1e300"):
        await raw.hset(BUCKET, mapping={"ver": version, "iv": str(MAX_PAUSE), "ctl": "?"})
        for _ in range(3):
            await go(limiter, timeout=MAX_PAUSE / 2)
        assert float(await raw.hget(BUCKET, "ver") or "nan").is_integer()


# -- the learning state and the busy clock ------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"t_fail": -1e300},
        {"k": 1e300},
        {"k_base": 1e300},
        {"k_base": 1e-300},
        {"w_max": 1e300},
        {"rate": 1e300, "phase": "slow"},
    ],
    ids=["t_fail -1e300", "k 1e300", "k_base 1e300", "k_base 1e-300", "w_max 1e300", "rate 1e300"],
)
async def test_a_learning_state_of_absurd_sizes_is_not_adopted(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter], fields: dict[str, Any]
) -> None:
    """Finite but absurd numbers in the shared learning state are refused.

    A t_fail or K of 1e300 made the learning's cubic overflow: every call of every process
    raised OverflowError. A rate (or W) of 1e300 paced nothing, and the fleet's requests
    all went at once.
    """
    limiter = make_limiter(RateLimits(max_pause=MAX_PAUSE))  # no limit told: it learns
    await go(limiter)
    state = {"rate": 50.0, "phase": "cubic", "w_max": 100.0, "k": 2.0, **fields}
    version = int(await raw.hget(BUCKET, "ver") or 0)
    await raw.hset(BUCKET, mapping={"ctl": control_json(**state), "ver": version + 1})
    for _ in range(5):
        await go(limiter)  # record() raised OverflowError
    assert (limiter.state.write.rate or 0.0) < 1e6


async def test_a_busy_clock_of_1e300_is_reset(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """An absurd busy clock starts again from 0, as after a FLUSHALL.

    Kept (each reservation wrote it back), the learning's cubic overflowed on it: every
    answer's record() raised OverflowError to its caller.
    """
    limiter = make_limiter(RateLimits(max_pause=MAX_PAUSE))
    await go(limiter)
    version = int(await raw.hget(BUCKET, "ver") or 0)
    state = control_json(rate=50.0, phase="cubic", w_max=100.0, k=2.0)
    await raw.hset(BUCKET, mapping={"ctl": state, "ver": version + 1, "busy": "1e300"})
    for _ in range(5):
        await go(limiter)
    assert float(await raw.hget(BUCKET, "busy") or "inf") < 1e9


async def test_a_learning_state_not_in_utf8_is_ignored(
    raw: aioredis.Redis,
    make_limiter: Callable[..., RateLimiter],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Bytes that are not UTF-8 are an unreadable state, ignored as any other.

    They raised UnicodeDecodeError: every process went to its fallback at every
    reservation, with a warning each, for as long as the key lived.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    limiter = make_limiter()
    await go(limiter)
    await raw.hset(BUCKET, mapping={"ctl": b"\xff\xfe{", "ver": "7"})
    for _ in range(3):
        await go(limiter)
    assert limiter.state.write.shared
    assert not caplog.records


async def test_meter_counts_past_any_real_one_are_reset(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """Send-meter counts of 1e308 start again from 0 (their sum read 'inf': the fallback)."""
    limiter = make_limiter()
    await go(limiter)
    await raw.hset(BUCKET, mapping={"m0": "1e308", "m1": "1e308"})
    for _ in range(3):
        await go(limiter)
    assert limiter.state.write.shared


async def test_an_answer_that_cannot_be_read_is_warned_of_once(
    make_limiter: Callable[..., RateLimiter],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Redis that answers nonsense (here a busy clock of 'inf'): one warning, not one a call.

    The store marked itself shared again before it had read the whole answer, so each
    reservation that failed to read warned anew.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    limiter = make_limiter()
    await go(limiter)
    shared = store_of(limiter)._redis
    call = shared.call

    async def nonsense(make: Any) -> Any:
        answer = await call(make)
        if isinstance(answer, list) and len(answer) == 12:  # a reservation's
            answer[3] = b"inf"
        return answer

    monkeypatch.setattr(shared, "call", nonsense)
    for _ in range(4):
        await go(limiter)
    assert not limiter.state.write.shared
    assert len(caplog.records) == 1


# -- who is live ---------------------------------------------------------------------------


async def test_heartbeats_ahead_of_redis_s_clock_are_not_counted(
    raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """Live clients are those seen lately, not ones stamped an hour (or +inf) ahead.

    Written ahead (by a clock since gone back, or by no client), they counted as live for
    as long as they stayed ahead, and cut every process's share of the rate with Redis away.
    """
    limiter = make_limiter()
    await go(limiter)
    ahead = await redis_now(raw) + 3600
    ghosts = {f"ghost-{n}": ahead for n in range(1000)}
    await raw.zadd(f"{PREFIX}clients", {**ghosts, "ghost-inf": float("inf")})
    await go(limiter)
    assert store_of(limiter).live == 1


async def test_the_fallback_share_is_never_slower_than_one_request_per_max_pause(
    redis_server: RedisServer, raw: aioredis.Redis, make_limiter: Callable[..., RateLimiter]
) -> None:
    """10,000 live clients counted when Redis goes: this process still goes every max_pause.

    Its share, 200/s over 10,001, held each request 50 s until Redis came back.
    """
    limiter = make_limiter()
    now = await redis_now(raw)
    await raw.zadd(f"{PREFIX}clients", {f"client-{n}": now for n in range(10_000)})
    await go(limiter)
    assert store_of(limiter).live > 10_000
    redis_server.kill()
    for _ in range(3):
        await go(limiter, timeout=MAX_PAUSE + BOUND / 2)


# -- keys of another type -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["bucket:write", "clients"])
async def test_a_key_of_another_type_is_replaced(
    raw: aioredis.Redis,
    make_limiter: Callable[..., RateLimiter],
    caplog: pytest.LogCaptureFixture,
    key: str,
) -> None:
    """A string where the scripts keep a hash or a sorted set is dropped, and sharing goes on.

    Every reservation failed on it: Redis counted as away (its warning said to check the
    URL's password), every process paced alone, and the string, with no expiry, stayed.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    limiter = make_limiter()
    await go(limiter)
    await raw.delete(PREFIX + key)
    await raw.set(PREFIX + key, "not ours")
    for _ in range(3):
        await go(limiter)
    assert limiter.state.write.shared
    assert not caplog.records


async def test_a_full_redis_is_said_to_be_full(
    raw: aioredis.Redis,
    make_limiter: Callable[..., RateLimiter],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Redis at its maxmemory that evicts nothing: the warning says so, not 'password'."""
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    limiter = make_limiter()
    await raw.config_set("maxmemory-policy", "noeviction")
    await raw.config_set("maxmemory", "1")
    try:
        await go(limiter)
    finally:
        await raw.config_set("maxmemory", "0")
    assert not limiter.state.write.shared
    (record,) = caplog.records
    assert "maxmemory" in record.getMessage()
    assert "password" not in record.getMessage()


# -- the shared token, and a bulk job's lease ---------------------------------------------


def token_auth(shared: SharedRedis, requests: list[Request]) -> TokenAuth:
    async def token_endpoint(request: Request) -> Response:
        requests.append(request)
        return json_response(200, {"access_token": f"at-{len(requests)}", "expires_in": 3600})

    credentials = ClientCredentials(client_id="cid", client_secret="s3cr3t-client-secret")
    return TokenAuth(credentials, Environment.SANDBOX, token_endpoint, shared=shared)


@pytest.mark.parametrize("lock", ["a string", "a hash"])
async def test_a_token_lock_that_never_expires_is_taken(
    redis_server: RedisServer, raw: aioredis.Redis, lock: str
) -> None:
    """A lock left without an expiry is no lock of ours: the token is fetched at once.

    Waited for as a live holder, it held every process's first call, and each token
    refresh, TOKEN_LOCK_SECONDS, for as long as it stayed.
    """
    shared = SharedRedis(redis_server.url, prefix=PREFIX)
    key = f"{PREFIX}token:lock"
    if lock == "a string":
        await raw.set(key, "someone")
    else:
        await raw.hset(key, mapping={"holder": "someone"})
    requests: list[Request] = []
    try:
        token = await asyncio.wait_for(token_auth(shared, requests).token(), BOUND)
    finally:
        await shared.aclose()
    assert token == "at-1"
    assert len(requests) == 1
    assert BOUND < TOKEN_LOCK_SECONDS  # the bound above tells the lock was not waited for


async def test_a_token_key_of_another_type_holds_no_token(
    redis_server: RedisServer, raw: aioredis.Redis
) -> None:
    """A hash where the sealed token is kept: read as no token, and replaced by one.

    Reading it failed, and counted as Redis away: the rate limits went to their fallback.
    """
    shared = SharedRedis(redis_server.url, prefix=PREFIX)
    await raw.hset(f"{PREFIX}token", mapping={"access_token": "not sealed"})
    requests: list[Request] = []
    first, second = token_auth(shared, requests), token_auth(shared, requests)
    try:
        assert await asyncio.wait_for(first.token(), BOUND) == "at-1"
        assert await asyncio.wait_for(second.token(), BOUND) == "at-1"
        assert shared.up
    finally:
        await shared.aclose()
    assert len(requests) == 1


@pytest.mark.parametrize("value", ["a hash", "a string that never expires"])
async def test_a_lease_key_that_is_no_lease_is_taken(
    redis_server: RedisServer, raw: aioredis.Redis, value: str
) -> None:
    """What no run wrote (another type, or no expiry) does not hold a job's input.

    A hash read as Redis away: the run went on unseen by other hosts (and the rate limits
    to their fallback). A string with no expiry refused every run of the input for good.
    """
    shared = SharedRedis(redis_server.url, prefix=PREFIX)
    lease = InputLease(shared, "job", "f" * 64)
    if value == "a hash":
        await raw.hset(lease.key, mapping={"host": "nowhere"})
    else:
        await raw.set(lease.key, "not a lease")
    try:
        await asyncio.wait_for(lease.acquire("rows.csv"), BOUND)
        assert lease.held
        assert shared.up
        await lease.release()
    finally:
        await shared.aclose()
    assert not await raw.exists(lease.key)


# -- a credential's processes told different limits -----------------------------------------


async def test_a_process_told_another_limit_than_the_shared_one_is_warned_once(
    make_limiter: Callable[..., RateLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    """The bucket's state is its first writer's: a process told otherwise says so, once.

    (Told write=100 beside one told write=10, it paced at 9.9/s, and nothing said why.)
    A process told the same limit says nothing.
    """
    slow = make_limiter(RateLimits(write=10, max_pause=MAX_PAUSE))
    fast = make_limiter(RateLimits(write=100, max_pause=MAX_PAUSE))
    same = make_limiter(RateLimits(write=10, max_pause=MAX_PAUSE))
    with caplog.at_level(logging.WARNING, logger="contractsdk.redis"):
        await go(slow)  # the bucket's state is its, paced at 9.9/s
        for _ in range(3):
            await go(fast)
        await go(same)
    told = [record.getMessage() for record in caplog.records if "told" in record.getMessage()]
    assert told == [
        "the write bucket shared through Redis paces at 10/s (another process's told limit, "
        "or the service's); this one was told 100/s. Processes that share a credential "
        "share one limit: give them all the same rate_limits (a limit changed for all: "
        "set_rate_limits in one of them)"
    ]
