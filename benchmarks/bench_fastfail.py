"""Fast fail through Redis: how long a call with ``limiter_timeout`` takes to fail.

K processes (K = 1, and 4 for a fleet) share one write bucket told R/s with no burst
through a real redis-server; each keeps C calls going for D seconds, every call with a
limiter timeout of T seconds (a call that fails sleeps 50 ms before its next try, as a
service shedding load would answer its own caller first). Far more calls want to go than
the rate allows, so most fail. A call that fails should fail on arrival, as it does
without Redis: the wait it would take is known then. ``on arrival`` counts failures
raised within 10 ms of the call; ``fail after`` is the median, 90th percentile and
longest time a failing call took. ``÷ R`` is grants per second ÷ 0.99 R. Figures are
printed, never asserted.

Run ``python -m benchmarks fastfail --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._harness import environment_line, table
from benchmarks._redis import RedisServer, redis_binary
from contractsdk import RateLimiterTimeoutError, RateLimits
from contractsdk._ratelimit import PACING, RateLimiter
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redis import SharedRedis

#: A failure this soon after the call is a failure on arrival.
AT_ONCE = 0.01


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks fastfail", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--processes", default="1,4", help="K, processes sharing (list)")
    parser.add_argument("--rate", type=float, default=40.0, help="R, grants per second")
    parser.add_argument("--calls", type=int, default=32, help="C, calls kept going per process")
    parser.add_argument("--timeout", type=float, default=0.5, help="T, limiter_timeout in s")
    parser.add_argument("--seconds", type=float, default=6.0, help="D, seconds per row")
    return parser


def _worker(args: dict[str, Any], results: Any) -> None:
    """One process: C calls kept going; puts (grants, seconds each failure took)."""

    async def main() -> tuple[int, list[float]]:
        limiter = RateLimiter(
            RateLimits(write=args["rate"], burst=1, adaptive=False),
            store=lambda initial: RedisStore(
                SharedRedis(args["url"], prefix=args["prefix"]), initial
            ),
        )
        grants, failures = 0, []
        try:
            # Connect and load the script before the common start.
            await limiter.record(await limiter.acquire("POST"), 201, {})
            await asyncio.sleep(max(0.0, args["start"] - time.time()))
            end = time.monotonic() + args["seconds"]

            async def calls() -> None:
                nonlocal grants
                while time.monotonic() < end:
                    called = time.monotonic()
                    try:
                        grant = await limiter.acquire("POST", timeout=args["timeout"])
                    except RateLimiterTimeoutError:
                        failures.append(time.monotonic() - called)
                        await asyncio.sleep(0.05)
                        continue
                    grants += time.monotonic() <= end  # not the calls that waited past it
                    await limiter.record(grant, 201, {})

            await asyncio.gather(*(calls() for _ in range(args["calls"])))
        finally:
            await limiter.aclose()
        return grants, failures

    results.put(asyncio.run(main()))


def _row(url: str, processes: int, args: argparse.Namespace) -> list[str]:
    context = multiprocessing.get_context("spawn")  # a fresh interpreter each: no shared loop
    results = context.Queue()
    job = {
        "url": url,
        "prefix": f"bench:{{{time.time_ns()}}}:",
        "rate": args.rate,
        "calls": args.calls,
        "timeout": args.timeout,
        "seconds": args.seconds,
        "start": time.time() + 3.0,  # after every process has started and connected
    }
    workers = [context.Process(target=_worker, args=(job, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60 + args.seconds) for _ in workers]
    for worker in workers:
        worker.join(timeout=10)
    grants = sum(grants for grants, _ in outcomes)
    failures = sorted(seconds for _, each in outcomes for seconds in each)
    at_once = sum(seconds < AT_ONCE for seconds in failures)
    if failures:
        p90 = failures[int(0.9 * (len(failures) - 1))]
        after = f"{statistics.median(failures):.3f} / {p90:.3f} / {failures[-1]:.3f}"
    else:
        after = "-"
    share = f"{at_once / len(failures):.1%}" if failures else "-"
    return [
        str(processes),
        f"{grants / args.seconds / (args.rate * PACING):.3f}",
        f"{len(failures):,}",
        f"{at_once:,} ({share})",
        after,
    ]


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its table."""
    args = _parser().parse_args(list(argv))
    if redis_binary() is None:
        print("fastfail: redis-server is not installed; skipped.")
        return
    print(f"# Fast fail through Redis — {environment_line()}")
    print()
    print(
        f"R = {args.rate:g}/s, no burst, shared through Redis; {args.calls} calls kept going "
        f"per process, limiter_timeout={args.timeout:g} s, {args.seconds:g} s per row"
    )
    processes = [int(item) for item in args.processes.split(",") if item]
    with RedisServer() as redis:
        rows = [_row(redis.url, count, args) for count in processes]
    headers = ["K", "÷ R", "timeouts", "on arrival", "fail after s: median / p90 / max"]
    print(table(headers, rows))
