"""A client process for the multi-process tests: ``python -m tests._redisworker MODE ...``.

Modes (each prints one JSON line on stdout and exits 0):

* ``acquire REDIS_URL N RATE BURST [PARTIES]``: take N write grants from a limiter sharing
  its buckets through Redis, once PARTIES workers (default 1) are ready (a barrier in
  Redis, so a worker slow to start does not run alone); prints
  ``{"grants": [wall-clock times]}``.
* ``token REDIS_URL BASE_URL CLIENT_ID CLIENT_SECRET USER_ID``: one ``users.get`` with OAuth
  client credentials sharing the token through Redis; prints ``{"ok": true}``.

The secret comes in on the command line only between a test and its own child processes
on one machine.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import redis.asyncio as aioredis

from contractsdk import ClientCredentials, ContractClient, RateLimits
from contractsdk._ratelimit import RateLimiter
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redis import SharedRedis

BARRIER_TIMEOUT = 30.0


async def barrier(url: str, parties: int) -> None:
    """Wait until ``parties`` workers reached this point (bounded: BARRIER_TIMEOUT)."""
    client = aioredis.Redis.from_url(url)
    try:
        await client.incr("test-workers:ready")
        deadline = time.monotonic() + BARRIER_TIMEOUT
        while int(await client.get("test-workers:ready") or 0) < parties:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{parties} workers never got ready")
            await asyncio.sleep(0.01)
    finally:
        await client.aclose()


async def acquire(
    url: str, count: int, rate: float, burst: int, parties: int = 1
) -> dict[str, object]:
    shared = SharedRedis(url, prefix="contractsdk:test-workers:")
    limiter = RateLimiter(
        RateLimits(write=rate, burst=burst),
        store=lambda initial: RedisStore(shared, initial),
    )
    grants: list[float] = []
    await barrier(url, parties)
    try:

        async def one() -> None:
            grant = await limiter.acquire("POST")
            grants.append(time.time())
            await limiter.record(grant, 200, {})

        await asyncio.gather(*(one() for _ in range(count)))
    finally:
        await limiter.aclose()
    return {"grants": grants}


async def token(
    url: str, base_url: str, client_id: str, secret: str, user: int
) -> dict[str, object]:
    credentials = ClientCredentials(client_id=client_id, client_secret=secret)
    async with ContractClient(
        credentials=credentials, base_url=base_url, redis=url, rate_limits=None
    ) as client:
        await client.users.get(user)
    return {"ok": True}


def main(argv: list[str]) -> int:
    mode, *args = argv
    if mode == "acquire":
        parties = int(args[4]) if len(args) > 4 else 1
        result = asyncio.run(acquire(args[0], int(args[1]), float(args[2]), int(args[3]), parties))
    elif mode == "token":
        result = asyncio.run(token(args[0], args[1], args[2], args[3], int(args[4])))
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)  # noqa: T201  # a test helper's CLI
        return 2
    print(json.dumps(result))  # noqa: T201  # the result goes to the parent test
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
