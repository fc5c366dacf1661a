"""How far may Redis be? One process's grants per second through a Redis a network away.

Held to one reservation at a time, a client would take at most one slot per round trip
to Redis (plus its own work); while its round trips hold it back, its queue reserves
ahead for the waiters behind the head, several slots a round trip (``_queue.py``).
This measures what that keeps: K clients in one process (K = 1, and 4 for a fleet, each
its own queue) take N grants, all requested at once, from a shared limiter told R/s with
no burst, through ``_delayproxy.py``, which holds every chunk D ms in each direction; the
``PING ms`` column is the round trip that results (the proxy's own scheduling included).
``÷ R`` is grants per second ÷ 0.99 R (the pace a told limit is kept at); ``ms/grant`` is
the time between one client's grants (1/R at the limit; about a round trip when Redis is
what holds it back). Figures are printed, never asserted.

Run ``python -m benchmarks redislatency --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from benchmarks._delayproxy import DelayProxy, ping_ms
from benchmarks._harness import environment_line
from benchmarks._redis import RedisServer, redis_binary
from contractsdk import RateLimits
from contractsdk._ratelimit import PACING, RateLimiter
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redis import SharedRedis


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks redislatency", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--delays", default="0,0.5,2,5,10", help="ms added each way (list)")
    parser.add_argument("--rates", default="100,300,1000", help="R, grants per second (list)")
    parser.add_argument("--clients", default="1,4", help="K, clients in the process (list)")
    parser.add_argument("--seconds", type=float, default=1.0, help="grants per row: R × this")
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the event loop the clients run on (uvloop: pip install uvloop)",
    )
    return parser


def _floats(text: str) -> list[float]:
    return [float(item) for item in text.split(",") if item]


async def _grants_per_second(url: str, rate: float, clients: int, count: int) -> float:
    """``count`` grants by ``clients`` limiters sharing one key through ``url``, per second."""
    prefix = f"bench:{{{time.time_ns()}}}:"
    limiters = [
        RateLimiter(
            RateLimits(write=rate, burst=1),
            store=lambda initial: RedisStore(SharedRedis(url, prefix=prefix), initial),
        )
        for _ in range(clients)
    ]
    try:
        for limiter in limiters:  # connect, and load the script, before the clock starts
            await limiter.record(await limiter.acquire("POST"), 200, {})

        async def grant(limiter: RateLimiter) -> None:
            await limiter.record(await limiter.acquire("POST"), 200, {})

        started = time.perf_counter()
        await asyncio.gather(*(grant(limiters[index % clients]) for index in range(count)))
        return count / (time.perf_counter() - started)
    finally:
        for limiter in limiters:
            await limiter.aclose()


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its table."""
    args = _parser().parse_args(list(argv))
    if args.loop == "uvloop":
        import importlib

        uvloop = importlib.import_module("uvloop")
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    if redis_binary() is None:
        print("redislatency: redis-server is not installed; skipped.")
        return
    print(f"# Redis a network away — {environment_line()}, {args.loop} event loop")
    print()
    delays, rates = _floats(args.delays), _floats(args.rates)
    clients = [int(k) for k in _floats(args.clients)]
    header = f"{'ms each way':>11}  {'PING ms':>7}  {'R/s':>5}"
    header += "".join(f"  {f'K={k} ÷ R':>8}  {f'K={k} ms/grant':>14}" for k in clients)
    print(header)
    print("-" * len(header))
    with RedisServer() as redis:
        for delay in delays:
            with DelayProxy(redis.port, delay) as proxy:
                url = f"redis://127.0.0.1:{proxy.port}/0"
                ping = asyncio.run(ping_ms(url))
                for rate in rates:
                    line = f"{delay:>11g}  {ping:>7.2f}  {rate:>5g}"
                    for k in clients:
                        count = max(50, round(rate * args.seconds))
                        per_second = asyncio.run(_grants_per_second(url, rate, k, count))
                        line += f"  {per_second / (rate * PACING):>8.3f}"
                        line += f"  {1000 * k / per_second:>14.2f}"
                    print(line)
    print()
    print(
        "While its round trips hold it back, a client reserves ahead for the requests queued "
        "behind\nits next one: several slots a round trip, while it waits. Each row counts "
        "from the first\nrequest, so the first reservation's round trip is in it."
    )
