"""Client processes for the multi-process tests, forked from one that imported the SDK once.

``python -m tests._redisworker serve`` imports the SDK and redis (half a second of CPU a
fresh interpreter spends) and then, for each JSON line ``{"mode": MODE, "args": [...],
"processes": N}`` on its stdin, forks N children that each run MODE in a process (and
event loop, and Redis connection) of their own, waits for all of them and prints one JSON
line ``{"results": [...], "codes": [...]}``: each child's result (None if it failed) and
exit code, in order. It exits when its stdin closes. Children are forked while the server
runs no thread and no event loop, so each starts clean.

Modes:

* ``acquire REDIS_URL N RATE BURST [PARTIES [REJOIN_AFTER]]``: take N write grants from a
  limiter sharing its buckets through Redis, once PARTIES workers (default 1) are ready (a
  barrier in Redis, so a worker slow to start does not run alone); returns
  ``{"grants": [wall-clock times], "shared": [whether each was granted through Redis]}``.
* ``token REDIS_URL BASE_URL CLIENT_ID CLIENT_SECRET USER_ID``: one ``users.get`` with OAuth
  client credentials sharing the token through Redis; returns ``{"ok": true}``.

``python -m tests._redisworker MODE ARGS...`` runs one mode in this process and prints its
result. The secret comes in on stdin or the command line only between a test and its own
child processes on one machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import traceback
from typing import Any

import redis.asyncio as aioredis

from contractsdk import ClientCredentials, ContractClient, RateLimits, _client
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
    url: str, count: int, rate: float, burst: int, parties: int = 1, rejoin_after: float = 1.0
) -> dict[str, object]:
    shared = SharedRedis(url, prefix="contractsdk:test-workers:", rejoin_after=rejoin_after)
    limiter = RateLimiter(
        RateLimits(write=rate, burst=burst),
        store=lambda initial: RedisStore(shared, initial),
    )
    grants: list[float] = []
    through: list[bool] = []
    await barrier(url, parties)
    try:

        async def one() -> None:
            grant = await limiter.acquire("POST")
            grants.append(time.time())
            through.append(limiter.state.write.shared)
            await limiter.record(grant, 200, {})

        await asyncio.gather(*(one() for _ in range(count)))
    finally:
        await limiter.aclose()
    return {"grants": grants, "shared": through}


class _PatientSharedRedis(SharedRedis):
    """A shared Redis whose calls may take 2 s instead of 0.25.

    The token test is of single flight through Redis, not of the fallback: four workers
    starting at once on a loaded 2-core machine once timed Redis out, and the process
    that fell back fetched a token of its own (as documented), two in all.
    """

    def __init__(self, redis: str | aioredis.Redis, **options: Any) -> None:
        options.setdefault("timeout", 2.0)
        super().__init__(redis, **options)


async def token(
    url: str, base_url: str, client_id: str, secret: str, user: int
) -> dict[str, object]:
    credentials = ClientCredentials(client_id=client_id, client_secret=secret)
    names = vars(_client)  # the client module's own names: the one it builds from
    names["SharedRedis"], impatient = _PatientSharedRedis, names["SharedRedis"]
    try:
        async with ContractClient(
            credentials=credentials, base_url=base_url, redis=url, rate_limits=None
        ) as client:
            await client.users.get(user)
    finally:
        names["SharedRedis"] = impatient
    return {"ok": True}


def run(mode: str, args: list[str]) -> dict[str, object]:
    """Run one mode in this process and return its result."""
    if mode == "acquire":
        parties = int(args[4]) if len(args) > 4 else 1
        rejoin = float(args[5]) if len(args) > 5 else 1.0
        count, rate, burst = int(args[1]), float(args[2]), int(args[3])
        return asyncio.run(acquire(args[0], count, rate, burst, parties, rejoin))
    if mode == "token":
        return asyncio.run(token(args[0], args[1], args[2], args[3], int(args[4])))
    raise ValueError(f"unknown mode {mode!r}")


def _fork(mode: str, args: list[str]) -> tuple[int, int]:
    """Fork a child that runs ``mode`` and writes its JSON result to a pipe; (pid, fd)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the server's loop
        code = 0
        try:
            os.close(read)
            os.write(write, json.dumps(run(mode, args)).encode())
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> tuple[object, int]:
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return (json.loads(b"".join(chunks)) if code == 0 else None), code


def serve() -> int:
    """Fork the children each line on stdin asks for; print their results, one line each."""
    for line in sys.stdin:
        job = json.loads(line)
        children = [_fork(job["mode"], job["args"]) for _ in range(job["processes"])]
        results, codes = zip(*(_collect(pid, read) for pid, read in children), strict=True)
        answer = json.dumps({"results": results, "codes": codes})
        print(answer, flush=True)  # noqa: T201  # to the parent test
    return 0


def main(argv: list[str]) -> int:
    mode, *args = argv
    if mode == "serve":
        return serve()
    print(json.dumps(run(mode, args)))  # noqa: T201  # the result goes to the parent test
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
