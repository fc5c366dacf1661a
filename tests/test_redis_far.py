"""A Redis far away, or one that never answers (``contractsdk/_redis.py``).

A call's timeout follows the round trips measured (RFC 6298's timer, from 0.25 s up to
``MAX_TIMEOUT``, and that until one is measured), and a Redis that is away is looked for by
a PING in the background, never on a caller's path. The Redis is real; far away is a TCP proxy in its own process
(``benchmarks/_delayproxy.py``); one that never answers is a socket that accepts and stays
silent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from benchmarks._delayproxy import DelayProxy
from contractsdk import RateLimits
from contractsdk._ratelimit import RateLimiter
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redis import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    RedisUnavailableError,
    SharedRedis,
)
from tests._redisserver import RedisServer

PREFIX = "contractsdk:test-far:"


@pytest.fixture
async def silent_port() -> AsyncIterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()  # until the client goes

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_a_redis_70_ms_away_is_shared_from_the_first_call(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """35 ms each way: connecting and the first script outlast 0.25 s, and it was never shared.

    Until a call is measured the timeout is the longest; after, it follows the round trips.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    with DelayProxy(redis_server.port, 35) as proxy:
        shared = SharedRedis(f"redis://127.0.0.1:{proxy.port}/0", prefix=PREFIX)
        limiter = RateLimiter(
            RateLimits(write=100, burst=1), store=lambda initial: RedisStore(shared, initial)
        )
        try:
            await limiter.record(await limiter.acquire("POST"), 200, {})
            assert limiter.state.write.shared
            for _ in range(5):
                await limiter.record(await limiter.acquire("POST"), 200, {})
            assert limiter.state.write.shared
            assert shared.call_timeout > DEFAULT_TIMEOUT
        finally:
            await limiter.aclose()
    assert "unreachable" not in caplog.text


async def test_a_redis_that_never_answers_is_looked_for_off_the_callers_path(
    silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Only the first call waits on it (the longest timeout); then a PING looks, aside.

    Every later call fails at once, while the PINGs look in the background; one warning.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    shared = SharedRedis(f"redis://127.0.0.1:{silent_port}/0", prefix=PREFIX, rejoin_after=0.05)
    reached = 0

    async def ping() -> object:
        nonlocal reached
        reached += 1
        return await shared.client.ping()

    try:
        with pytest.raises(RedisUnavailableError):
            await shared.call(ping)  # nothing known of Redis yet: it may be far
        assert not shared.up
        for _ in range(30):  # past MAX_TIMEOUT, so that PINGs timed out and looked again
            with pytest.raises(RedisUnavailableError):
                await shared.call(ping)
            await asyncio.sleep(0.05)
    finally:
        await shared.aclose()
    assert reached == 1  # no call but the first waited on Redis
    assert caplog.text.count("unreachable") == 1


async def test_the_timeout_follows_the_round_trips_measured(redis_server: RedisServer) -> None:
    """Twice the smoothed round trip plus four times its spread, from 0.25 s to the cap."""
    now = 0.0
    shared = SharedRedis(redis_server.url, prefix=PREFIX, clock=lambda: now)

    def taking(seconds: float) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            nonlocal now
            await shared.client.ping()
            now += seconds

        return call

    try:
        assert shared.call_timeout == MAX_TIMEOUT  # nothing measured yet: it may be far
        for _ in range(40):
            await shared.call(taking(0.002))
        assert shared.call_timeout == DEFAULT_TIMEOUT  # near: the least
        for _ in range(40):
            await shared.call(taking(0.15))
        assert 0.3 <= shared.call_timeout < 0.32  # 2 × 0.15, and a spread that died down
        await shared.call(taking(0.3))
        assert shared.call_timeout > 0.45  # one slow call widens the spread at once
        for _ in range(40):
            await shared.call(taking(0.9))
        assert shared.call_timeout == MAX_TIMEOUT
    finally:
        await shared.aclose()
