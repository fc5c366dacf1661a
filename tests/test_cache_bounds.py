"""FetchedOnce's bound: the most recently used values kept, failures never, one fetch per key."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from contractsdk import ContractClient
from contractsdk._once import FetchedOnce

Fetch = Callable[[], Coroutine[Any, Any, str]]


def counting(calls: dict[int, int], key: int, gate: asyncio.Event | None = None) -> Fetch:
    """A fetch of ``key`` that counts its calls in ``calls`` (and waits for ``gate``)."""

    async def fetch() -> str:
        calls[key] = calls.get(key, 0) + 1
        if gate is not None:
            await gate.wait()
        return f"value {key}"

    return fetch


async def test_past_the_limit_the_least_recently_used_values_go() -> None:
    """After limit + k keys, limit values are kept: the most recently used, read or fetched."""
    calls: dict[int, int] = {}
    cache: FetchedOnce[int, str] = FetchedOnce(limit=4)
    for key in range(4):
        await cache.get(key, counting(calls, key))
    assert cache.ready(0) == "value 0"  # a read is a use: 0 is now the most recent
    await cache.get(1, counting(calls, 1))  # and so is a get of a kept value
    for key in range(4, 7):
        await cache.get(key, counting(calls, key))
    assert list(cache._futures) == [1, 4, 5, 6]
    assert [cache.ready(key) for key in (0, 2, 3)] == [None] * 3
    assert await cache.get(6, counting(calls, 6)) == "value 6" and calls[6] == 1
    assert await cache.get(2, counting(calls, 2)) == "value 2" and calls[2] == 2


async def test_a_refresh_makes_its_key_the_most_recently_used() -> None:
    """A refreshed key moves to the end: the next key in goes in place of an older one."""
    calls: dict[int, int] = {}
    cache: FetchedOnce[int, str] = FetchedOnce(limit=2)
    await cache.get(0, counting(calls, 0))
    await cache.get(1, counting(calls, 1))
    await cache.get(0, counting(calls, 0), refresh=True)
    await cache.get(2, counting(calls, 2))
    assert list(cache._futures) == [0, 2] and calls[0] == 2


async def test_a_fetch_under_way_is_never_dropped_for_room() -> None:
    """Fetches under way may outnumber the limit; as they end, the oldest values go."""
    calls: dict[int, int] = {}
    gate = asyncio.Event()
    cache: FetchedOnce[int, str] = FetchedOnce(limit=2)
    waiting = [
        asyncio.ensure_future(cache.get(key, counting(calls, key, gate))) for key in range(4)
    ]
    await asyncio.sleep(0)
    assert len(cache._futures) == 4
    gate.set()
    assert await asyncio.gather(*waiting) == [f"value {key}" for key in range(4)]
    await asyncio.sleep(0)  # the last fetch's end is seen
    assert list(cache._futures) == [2, 3]
    assert calls == {0: 1, 1: 1, 2: 1, 3: 1}


async def test_a_failed_fetch_nobody_waits_for_is_not_kept() -> None:
    """A fetch whose only caller timed out, and which then fails, is dropped as it ends.

    The next caller fetches again, and gets the value, not the old error.
    """
    attempts = 0
    failing = asyncio.Event()

    async def fetch() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await failing.wait()
            raise ConnectionError("down")
        return "terms"

    cache: FetchedOnce[int, str] = FetchedOnce(limit=4)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(cache.get(1, fetch), 0.01)
    assert 1 in cache._futures  # still under way, for the next caller to share
    failing.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert dict(cache._futures) == {}
    assert await cache.get(1, fetch) == "terms" and attempts == 2


async def test_a_failed_fetch_is_not_kept_when_its_callers_see_the_error() -> None:
    """Every caller sharing a failed fetch gets its error; the next caller fetches again."""
    attempts = 0
    gate = asyncio.Event()

    async def fetch() -> str:
        nonlocal attempts
        attempts += 1
        await gate.wait()
        if attempts == 1:
            raise ConnectionError("down")
        return "terms"

    cache: FetchedOnce[int, str] = FetchedOnce(limit=1)
    waiting = [asyncio.ensure_future(cache.get(1, fetch)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert [type(result) for result in results] == [ConnectionError] * 3
    assert dict(cache._futures) == {}
    assert await cache.get(1, fetch) == "terms" and attempts == 2


async def test_concurrent_callers_share_one_fetch_under_the_bound() -> None:
    """With more keys than the limit in flight, each key is still fetched once."""
    calls: dict[int, int] = {}
    gate = asyncio.Event()
    cache: FetchedOnce[int, str] = FetchedOnce(limit=1)
    waiting = [
        asyncio.ensure_future(cache.get(key, counting(calls, key, gate)))
        for _ in range(5)
        for key in range(3)
    ]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiting)
    assert results == [f"value {key}" for _ in range(5) for key in range(3)]
    assert calls == {0: 1, 1: 1, 2: 1}
    await asyncio.sleep(0)
    assert len(cache._futures) == 1


async def test_a_client_bounds_its_term_sets_and_identity_field_sets(
    client: ContractClient,
) -> None:
    """The client keeps 256 templates' terms and 1,024 identity-field sets, shared by copies."""
    assert client._term_sets._limit == 256
    assert client.identity_fields._sets._limit == 1024
    derived = client.with_options(timeout=5.0)
    assert derived._term_sets is client._term_sets
    assert derived.identity_fields._sets is client.identity_fields._sets
