"""FetchedOnce: one fetch per key for concurrent callers; failures and cancellations not kept."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

import pytest

from contractsdk import ConfigurationError
from contractsdk._once import FetchedOnce


def gated(gate: asyncio.Event) -> Callable[[], Awaitable[str]]:
    """A fetch of "terms" that answers once ``gate`` is set."""

    async def fetch() -> str:
        await gate.wait()
        return "terms"

    return fetch


async def test_concurrent_callers_share_one_fetch_and_later_ones_need_no_await() -> None:
    calls = 0
    gate = asyncio.Event()

    async def fetch() -> str:
        nonlocal calls
        calls += 1
        await gate.wait()
        return "terms"

    cache: FetchedOnce[int, str] = FetchedOnce()
    waiting = [asyncio.ensure_future(cache.get(1, fetch)) for _ in range(10)]
    await asyncio.sleep(0)
    assert cache.ready(1) is None
    gate.set()
    assert await asyncio.gather(*waiting) == ["terms"] * 10
    assert calls == 1
    assert cache.ready(1) == "terms"
    assert await cache.get(1, fetch, refresh=True) == "terms" and calls == 2


async def test_a_failed_fetch_is_not_kept() -> None:
    attempts = 0

    async def fetch() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("down")
        return "terms"

    cache: FetchedOnce[int, str] = FetchedOnce()
    with pytest.raises(ConnectionError):
        await cache.get(1, fetch)
    assert cache.ready(1) is None
    assert await cache.get(1, fetch) == "terms"


async def test_a_cancelled_caller_does_not_cancel_the_fetch_for_the_others() -> None:
    gate = asyncio.Event()
    fetch = gated(gate)
    cache: FetchedOnce[int, str] = FetchedOnce()
    first = asyncio.ensure_future(cache.get(1, fetch))
    second = asyncio.ensure_future(cache.get(1, fetch))
    await asyncio.sleep(0)
    first.cancel()
    gate.set()
    assert await second == "terms"
    assert first.cancelled()


async def test_cancel_stops_fetches_under_way_and_they_are_fetched_again() -> None:
    gate = asyncio.Event()
    fetch = gated(gate)
    cache: FetchedOnce[int, str] = FetchedOnce()
    waiter = asyncio.ensure_future(cache.get(1, fetch))
    await asyncio.sleep(0)
    cache.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert cache.ready(1) is None
    gate.set()
    assert await cache.get(1, fetch) == "terms"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tasks count cancellations from 3.11")
async def test_fetched_once_cancel_with_an_error() -> None:
    """Every waiter gets its own error; one cancelled itself gets CancelledError."""
    cache: FetchedOnce[int, str] = FetchedOnce()
    fetch = gated(asyncio.Event())
    first = asyncio.ensure_future(cache.get(1, fetch))
    second = asyncio.ensure_future(cache.get(1, fetch))
    own = asyncio.ensure_future(cache.get(1, fetch))
    await asyncio.sleep(0)
    own.cancel()
    cache.cancel(error=lambda: ConfigurationError("closed"))
    results = await asyncio.gather(first, second, own, return_exceptions=True)
    assert [type(result) for result in results[:2]] == [ConfigurationError] * 2
    assert results[0] is not results[1]
    assert isinstance(results[2], asyncio.CancelledError)
