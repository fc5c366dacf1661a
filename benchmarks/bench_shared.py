"""Several processes, one credential: do K clients together run at the limit, and fairly?

K worker processes (``_procs.py``) share one API key against a server that limits that key
to R writes/s with a burst of B: ``_servers.py``'s token bucket with ``X-RateLimit-*``
headers and millisecond ``Retry-After``, and nginx's ``limit_req`` (bare 429s) when nginx
is installed. Together they run C tasks (C/K each) creating contracts for D seconds from
a common start. The rows, for each K:

  a. contractsdk, each told ``RateLimits(write=R, burst=B)``, no Redis: K limiters that
     each think they own the whole limit (the baseline that overloads the server);
  b. contractsdk told R and B, sharing one limiter through Redis;
  c. contractsdk ``RateLimits()``: the limit unknown, learnt together through Redis;
  d. aiohttp + aiolimiter ``AsyncLimiter(R/K, 1)`` per process (each tuned by hand to its
     share of the limit) + tenacity on 429, as users write it.

How to read the table: ``succ/s ÷ R`` is every worker's successes ÷ seconds from the first
request to the last answer ÷ R (a little above 1 for short runs: the server's bucket
starts full, B requests ahead); ``429 share`` is the server's count of 429 answers ÷ its
requests; ``Jain`` is Jain's fairness index of the per-process successes, (Σx)²/(n·Σx²),
1.0 when every process got the same and 1/K when one got all; ``min–max /s`` are the
slowest and fastest process. Targets: (b) ≥ 0.97 R and ≤ 0.5 % 429s; (c) ≥ 0.90 R,
≤ 1 % 429s and Jain ≥ 0.95; (a) and (d) are baselines. Under the table, every row's
summed success rate per 0.5 s (requests/s), to see the start, the oscillations and the end.

Every row starts from a reset server and an empty Redis. Figures are printed, never
asserted: the machine is shared and noisy, and K processes may outnumber its cores (the
CPU line says how busy clients and server were). ``--chart DIR`` writes
``shared-rates.png`` there: each row's summed successes/s ÷ R over time, one panel per
server and K (needs matplotlib; ``nox -s bench`` installs it and writes into docs/images/).

Run ``python -m benchmarks shared --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from benchmarks._charts import Line, Panel, command_line, rates_over_time, run_note
from benchmarks._delayproxy import DelayProxy
from benchmarks._harness import Server, environment_line, table
from benchmarks._limiters import Limits
from benchmarks._nginx import NginxServer, nginx_binary, nginx_rate
from benchmarks._procs import Measured, WorkerSpec, count_line, measure, rate_line, verdict
from benchmarks._redis import RedisServer, redis_binary
from benchmarks._servers import LimitServer


@dataclass(frozen=True)
class Row:
    """One way for K processes to share the credential.

    ``targets``: least succ/s ÷ R, most 429 share, least Jain index (None: a baseline).
    """

    key: str
    name: str
    kind: str
    told: bool
    redis: bool
    targets: tuple[float, float, float | None] | None = None


ROWS = (
    Row("a", "contractsdk told R,B, no Redis", "sdk", told=True, redis=False),
    Row(
        "b",
        "contractsdk told R,B, Redis",
        "sdk",
        told=True,
        redis=True,
        targets=(0.97, 0.005, None),
    ),
    Row(
        "c",
        "contractsdk RateLimits(), Redis",
        "sdk",
        told=False,
        redis=True,
        targets=(0.90, 0.01, 0.95),
    ),
    Row("d", "aiolimiter R/K per process + tenacity", "aiolimiter", told=True, redis=False),
)
#: ``python -m benchmarks --chart DIR`` passes ``--chart`` on to this module.
CHARTS = True


def _specs(
    row: Row, server: Server, redis: RedisServer | None, k: int, args: argparse.Namespace
) -> list[WorkerSpec]:
    if row.kind == "aiolimiter":
        write, burst = args.rate / k, None
    else:
        write, burst = (args.rate, args.burst) if row.told else (None, None)
    return [
        WorkerSpec(
            kind=row.kind,
            url=server.url,
            api_key=server.api_key,
            target=server.target(),
            concurrency=max(1, args.concurrency // k),
            phases=(args.duration,),
            write=write,
            burst=burst,
            redis=args.redis_url if row.redis and redis is not None else None,
            name=f"{row.key}{index}",
        )
        for index in range(k)
    ]


def _line(row: Row, k: int, result: Measured, rate: float) -> list[str]:
    fleet = result.fleet
    speed = fleet.rate / rate
    rates = fleet.per_process()
    checks = []
    if row.targets is not None:
        low, most_429, least_jain = row.targets
        checks = [(f"≥{low:.2f}", speed >= low), (f"≤{most_429:.1%}", result.share_429 <= most_429)]
        if least_jain is not None:
            checks.append((f"Jain≥{least_jain:.2f}", fleet.jain >= least_jain))
        checks.append(("0 fail", not fleet.errors))
    return [
        f"{row.key}. {row.name}",
        str(k),
        f"{speed:.3f}",
        f"{result.rate_limited} ({result.share_429:.1%})",
        f"{fleet.jain:.3f}",
        f"{min(rates):.1f}–{max(rates):.1f}",
        str(sum(fleet.errors.values())),
        verdict(checks),
    ]


def _servers(
    args: argparse.Namespace,
) -> Iterator[tuple[str, contextlib.AbstractContextManager[Server]]]:
    """The servers to run against (nginx only where installed)."""
    if args.server in ("token-bucket", "all"):
        limits = Limits(algorithm="token-bucket", rate=args.rate, burst=args.burst, headers="x")
        yield limits.label, LimitServer(limits)
    if args.server in ("nginx", "all"):
        if nginx_binary() is None:
            print("\nnginx is not installed: its rows are skipped.")
            return
        text, real = nginx_rate(args.rate)
        if real != args.rate:
            print(f"\nnginx takes whole requests per second or minute: {text} = {real:g}/s.")
        server = NginxServer(rate=args.rate, burst=args.burst)
        yield server.label, server


def _run_server(
    name: str, server: Server, redis: RedisServer | None, args: argparse.Namespace
) -> list[Panel]:
    """Run and print every row against one server; return the chart's panels (one per K)."""
    panels: dict[int, list[Line]] = {}
    lines: list[list[str]] = []
    notes: list[str] = []
    series: list[str] = []
    for k in args.processes:
        for row in ROWS:
            if row.key not in args.rows:
                continue
            label = f"{row.key} K={k}"
            if row.redis and redis is None:
                notes.append(f"{label}: skipped: redis-server is not installed")
                continue
            result = measure(server, _specs(row, server, redis, k, args), redis)
            if result.fleet.skipped:
                lines.append([f"{row.key}. {row.name}", str(k), f"skipped: {result.fleet.skipped}"])
                continue
            lines.append(_line(row, k, result, args.rate))
            errors = ", ".join(f"{n} ×{c}" for n, c in result.fleet.errors.most_common())
            notes.append(
                f"{label}: {result.requests} requests, {result.fleet.ok} created; "
                f"{result.cpu_note()}" + (f"; errors: {errors}" if errors else "")
            )
            series.append(f"{label}: {rate_line(result.fleet.series())}")
            series.append(f"{' ' * len(label)}  429s: {count_line(result.fleet.throttles())}")
            legend = f"{row.key}. {row.name}\n    {lines[-1][2]} R, {result.share_429:.1%} 429s"
            panels.setdefault(k, []).append(Line(legend, result.fleet.series()))
    print()
    print(f"Server: {name}")
    print()
    print(
        table(
            ["row", "K", "succ/s ÷ R", "429 share", "Jain", "min–max /s", "failed", "target"],
            lines,
            left=1,
        )
    )
    print()
    print("\n".join(notes))
    print()
    print("Summed successes per second, and 429s seen, every 0.5 s from the common start:")
    print("\n".join(f"  {line}" for line in series))
    return [Panel(f"{name}, K = {k} processes", args.rate, rows) for k, rows in panels.items()]


def _processes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks shared", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--processes", type=_processes, default=[4, 8], help="K, e.g. 4,8")
    parser.add_argument("--rate", type=float, default=100.0, help="the server's limit R, /s")
    parser.add_argument("--burst", type=int, default=20, help="the server's burst B")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per row")
    parser.add_argument("--concurrency", type=int, default=32, help="tasks in all processes")
    parser.add_argument("--server", choices=("token-bucket", "nginx", "all"), default="all")
    parser.add_argument("--rows", default="abcd", help="which rows, e.g. bc")
    parser.add_argument(
        "--redis-delay",
        type=float,
        default=0.0,
        metavar="MS",
        help="reach Redis through a proxy that holds each way MS ms (a Redis a network away)",
    )
    parser.add_argument(
        "--chart",
        metavar="DIR",
        type=Path,
        help="write shared-rates.png (successes/s ÷ R over time, per row) into DIR",
    )
    return parser


#: Grants per store in the round-trip table.
ROUND_TRIPS = 2000


async def _round_trip(url: str) -> None:
    """What one grant costs through Redis: wall time and this process's CPU, vs memory.

    One task takes ``ROUND_TRIPS`` grants one after the other (acquire, then record a 201)
    from a limiter whose rate never makes it wait: the difference is the store's cost.
    """
    from contractsdk import RateLimits
    from contractsdk._ratelimit import RateLimiter
    from contractsdk._ratelimit._redis import RedisStore
    from contractsdk._redis import SharedRedis

    limits = RateLimits(write=1e6, burst=1000)
    shared = SharedRedis(url, prefix="contractsdk:bench-rtt:")
    stores = {
        "this process (LocalStore)": None,
        "Redis on 127.0.0.1 (RedisStore)": lambda initial: RedisStore(shared, initial),
    }
    lines = []
    for label, store in stores.items():
        limiter = RateLimiter(limits, store=store)
        try:
            for _ in range(50):  # warm up: connections, scripts loaded
                await limiter.record(await limiter.acquire("POST"), 201, {})
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(ROUND_TRIPS):
                await limiter.record(await limiter.acquire("POST"), 201, {})
            wall = (time.perf_counter() - wall) / ROUND_TRIPS
            cpu = (time.process_time() - cpu) / ROUND_TRIPS
        finally:
            await limiter.aclose()
        lines.append([label, f"{wall * 1e6:.0f}", f"{cpu * 1e6:.0f}"])
    await shared.aclose()
    print(f"One grant (acquire + record), {ROUND_TRIPS} in a row, never paced:")
    print(table(["store", "wall µs/grant", "CPU µs/grant"], lines))
    print(
        "Through Redis a grant is one round trip (the reserve script); a 201 without rate "
        "headers writes nothing back. The wall time is the latency a request adds; the CPU "
        "is this process's (redis-py's encoding and parsing)."
    )


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its tables."""
    args = _parser().parse_args(list(argv))
    started = time.perf_counter()
    versions = f"aiolimiter {version('aiolimiter')}, tenacity {version('tenacity')}"
    print(f"# Several processes, one credential — {environment_line()}, {versions}")
    print()
    print(
        f"R = {args.rate:g} writes/s, B = {args.burst}, {args.concurrency} tasks in all "
        f"(C/K per process), {args.duration:g} s per row, K in {args.processes}"
    )
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(RedisServer()) if redis_binary() else None
        if redis is None:
            print("redis-server is not installed: the Redis rows are skipped.")
        elif args.redis_delay:
            proxy = stack.enter_context(DelayProxy(redis.port, args.redis_delay))
            args.redis_url = f"redis://127.0.0.1:{proxy.port}/0"
            print(f"Redis {args.redis_delay:g} ms away each way (through a delaying proxy)")
        else:
            args.redis_url = redis.url
        panels: list[Panel] = []
        for name, server in _servers(args):
            with server as running:
                panels += _run_server(name, running, redis, args)
        if redis is not None:
            redis.flushall()
            print()
            asyncio.run(_round_trip(redis.url))
    if args.chart is not None and panels:
        caption = (
            f"One run of `{command_line('shared', argv)}` ({run_note()}).\n"
            f"Every process's successes summed per 0.5 s, ÷ R (R = {args.rate:g}/s, "
            f"B = {args.burst}); in the legend, each row's succ/s ÷ R and 429 share."
        )
        print()
        rates_over_time(args.chart / "shared-rates.png", panels, caption)
    print()
    print(f"ran in {time.perf_counter() - started:.0f} s")
