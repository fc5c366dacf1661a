"""A Redis far away, or one that never answers (``contractsdk/_redis.py``).

A call's timeout follows the round trips measured (RFC 6298's timer, from 0.25 s up to
``MAX_TIMEOUT``), and a Redis that is away is looked for by a PING in the background, never
on a caller's path. The Redis is real; far away is a TCP proxy in its own process
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


async def _until(condition: Callable[[], bool], seconds: float) -> None:
    """Wait (at most ``seconds``) until ``condition()`` holds, looking every 10 ms."""
    for _ in range(round(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


async def test_a_redis_70_ms_away_is_shared_without_a_warning(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """35 ms each way: a first call that connects outlasts 0.25 s, and it was never shared.

    The first call's timeout is taken for distance, not absence: a PING in the background
    finds Redis and measures its round trip, and the calls after it wait long enough.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    with DelayProxy(redis_server.port, 35) as proxy:
        shared = SharedRedis(f"redis://127.0.0.1:{proxy.port}/0", prefix=PREFIX)
        limiter = RateLimiter(
            RateLimits(write=100, burst=1), store=lambda initial: RedisStore(shared, initial)
        )
        try:
            for _ in range(200):  # alone at first, at most a few seconds
                await limiter.record(await limiter.acquire("POST"), 200, {})
                if limiter.state.write.shared:
                    break
            assert limiter.state.write.shared
            assert shared.call_timeout > DEFAULT_TIMEOUT
        finally:
            await limiter.aclose()
    assert "unreachable" not in caplog.text


async def test_a_redis_that_never_answers_is_looked_for_off_the_callers_path(
    silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Only the first call waits on it; the others fail at once while a PING looks.

    The first timeout is not warned of until the PING (up to ``MAX_TIMEOUT``) finds nothing
    either; then once, and the looks go on in the background.
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
            await shared.call(ping)  # waits its 0.25 s: nothing known of Redis yet
        assert not shared.up
        assert "unreachable" not in caplog.text  # perhaps only far: looking
        for _ in range(20):
            with pytest.raises(RedisUnavailableError):
                await shared.call(ping)
            await asyncio.sleep(0.01)
        await _until(lambda: "unreachable" in caplog.text, MAX_TIMEOUT * 5)
        await asyncio.sleep(0.2)  # looks again, every 0.05 s, in the background
        for _ in range(5):
            with pytest.raises(RedisUnavailableError):
                await shared.call(ping)
    finally:
        await shared.aclose()
    assert reached == 1  # no call but the first waited on Redis
    assert caplog.text.count("unreachable") == 1


async def test_a_redis_found_again_that_still_fails_is_warned_of(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A PING answers but the call after it fails: the first timeout's warning is given.

    Without it, a Redis that answers PING and nothing else would go unsaid for good.
    """
    caplog.set_level(logging.WARNING, logger="contractsdk.redis")
    shared = SharedRedis("redis://127.0.0.1:9/0", prefix=PREFIX)  # port 9: nobody

    async def answers() -> bool:
        return True

    async def refused() -> None:
        raise ConnectionError("refused")

    monkeypatch.setattr(shared.client, "ping", answers)
    try:
        with pytest.raises(RedisUnavailableError):
            await shared.call(lambda: asyncio.sleep(10))  # no answer in time
        assert "unreachable" not in caplog.text
        calls: list[str] = []

        async def tried() -> None:
            calls.append("tried")
            await refused()

        for _ in range(100):  # the PING answers at once: the next call or so tries
            with pytest.raises(RedisUnavailableError):
                await shared.call(tried)
            if calls:
                break
            await asyncio.sleep(0.01)
    finally:
        await shared.aclose()
    assert calls == ["tried"]
    assert caplog.text.count("unreachable") == 1
    assert "ConnectionError" in caplog.text


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
        assert shared.call_timeout == DEFAULT_TIMEOUT  # nothing measured yet
        for _ in range(40):
            await shared.call(taking(0.002))
        assert shared.call_timeout == DEFAULT_TIMEOUT  # near: the least
        for _ in range(40):
            await shared.call(taking(0.15))
        assert 0.3 <= shared.call_timeout < 0.32  # 2 × 0.15, and a spread that died down
        await shared.call(taking(0.4))
        assert shared.call_timeout > 0.5  # one slow call widens the spread at once
        for _ in range(40):
            await shared.call(taking(0.9))
        assert shared.call_timeout == MAX_TIMEOUT
    finally:
        await shared.aclose()
