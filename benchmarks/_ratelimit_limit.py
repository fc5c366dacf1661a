"""Table 1 of ``bench_ratelimit`` (``--table limit``): N creates at the emulator's limit R.

contractsdk (limit configured; limit unknown with rate headers on and off) and what users
write instead (aiohttp + ``asyncio.gather``; aiohttp + tenacity on 429; aiolimiter +
tenacity), each row from a reset emulator. :func:`with_tenacity` is also the tenacity of
``_procs.py``'s aiolimiter workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiolimiter import AsyncLimiter
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_random_exponential

from benchmarks._harness import Drive, Emulator, drive, table, wakeup_cpu
from benchmarks._ratelimit_common import Setup, creator, elapsed_cpu
from contractsdk import ContractClient, RateLimits

# What each row runs. A row is a coroutine that drives N creates and returns its Drive,
# plus notes (the SDK's limiter state) for the lines under the table.


@dataclass
class Outcome:
    """A row's Drive and what the client says about it."""

    drive: Drive
    notes: list[str] = field(default_factory=list)


def _sdk(limits: RateLimits | None) -> Callable[[Setup], Coroutine[Any, Any, Outcome]]:
    async def row(setup: Setup) -> Outcome:
        target = setup.target
        async with ContractClient(
            api_key=setup.api_key, base_url=setup.url, rate_limits=limits
        ) as client:
            create = creator(client, target)

            samples: list[float] = []
            sampler = asyncio.ensure_future(_sample_rate(client, samples))
            try:
                result = await drive(setup.n, setup.concurrency, create)
            finally:
                sampler.cancel()
            stats = client.stats
            state = client.rate_limits
        notes = [f"retries {stats.retries}, limiter wait {stats.limiter_wait:.1f} s summed"]
        if state is not None:
            write = state.write
            notes.append(
                f"write bucket at the end: rate {_num(write.rate)}/s, limit {_num(write.limit)}, "
                f"{write.throttles} 429s seen, server limit {_num(write.server_limit)}"
            )
        if samples:
            notes.append("write rate every 0.5 s: " + " ".join(f"{rate:.0f}" for rate in samples))
        return Outcome(result, notes)

    return row


async def _sample_rate(client: ContractClient, samples: list[float]) -> None:
    while True:
        await asyncio.sleep(0.5)
        state = client.rate_limits
        if state is not None and state.write.rate is not None:
            samples.append(state.write.rate)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


# What a user writes instead: the same JSON body and bearer header, a 429 is an error.


def _is_429(exc: BaseException) -> bool:
    return isinstance(exc, aiohttp.ClientResponseError) and exc.status == 429


def with_tenacity(
    create: Callable[[int], Awaitable[Any]],
) -> Callable[[int], Awaitable[Any]]:
    decorate = retry(
        retry=retry_if_exception(_is_429),
        wait=wait_random_exponential(multiplier=0.5, max=8),
        stop=stop_after_attempt(5),
        reraise=True,
    )
    return decorate(create)


def _aiohttp(*, tenacity: bool, limiter: bool) -> Callable[[Setup], Coroutine[Any, Any, Outcome]]:
    async def row(setup: Setup) -> Outcome:
        target = setup.target
        url = f"{setup.url}/v1/teams/{target.team_id}/contracts"
        headers = {"Authorization": f"Bearer {setup.api_key}"}
        throttle = AsyncLimiter(setup.rate, 1) if limiter else None
        async with aiohttp.ClientSession() as session:

            async def post(i: int) -> Any:
                async with session.post(url, json=target.body(i), headers=headers) as response:
                    response.raise_for_status()
                    return await response.json()

            async def create(i: int) -> Any:
                if throttle is None:
                    return await post(i)
                async with throttle:
                    return await post(i)

            result = await drive(
                setup.n, setup.concurrency, with_tenacity(create) if tenacity else create
            )
        return Outcome(result)

    return row


@dataclass(frozen=True)
class Row:
    """One row of table 1."""

    name: str
    run: Callable[[Setup], Coroutine[Any, Any, Outcome]]
    rate_headers: bool = True
    target: str = ""  # the design target, printed beside the figures


def _rows(rate: float, burst: int) -> list[Row]:
    return [
        Row(
            f"contractsdk, RateLimits(write={rate:g}, burst={burst})",
            _sdk(RateLimits(write=rate, burst=burst)),
            target="configured",
        ),
        Row("contractsdk, RateLimits(), headers on", _sdk(RateLimits()), target="unknown"),
        Row(
            "contractsdk, RateLimits(), headers off",
            _sdk(RateLimits()),
            rate_headers=False,
            target="unknown",
        ),
        Row("aiohttp + gather (429 = failure)", _aiohttp(tenacity=False, limiter=False)),
        Row("aiohttp + tenacity on 429", _aiohttp(tenacity=True, limiter=False)),
        Row(
            f"aiolimiter AsyncLimiter({rate:g}, 1) + tenacity",
            _aiohttp(tenacity=True, limiter=True),
        ),
    ]


#: The design targets (DESIGN.md, "Numbers it is measured by"): min success rate ÷ R,
#: max share of requests answered 429, whether failures are allowed.
TARGETS = {"configured": (0.97, 0.005), "unknown": (0.90, 0.02)}


def _verdict(kind: str, speed: float, share_429: float, failed: int) -> str:
    if kind not in TARGETS:
        return ""
    low, most_429 = TARGETS[kind]
    met = speed >= low and share_429 <= most_429 and failed == 0
    return f"≥{low:.2f}, ≤{most_429:.1%}, 0 fail: {'met' if met else 'MISSED'}"


def limit_table(emulator: Emulator, setup: Setup) -> None:
    """Table 1: every row against the emulator's write limit, from a fresh reset each."""
    lines = []
    notes = []
    for number, row in enumerate(_rows(setup.rate, setup.burst), 1):
        emulator.set_limits(
            read_rate=None, write_rate=setup.rate, burst=setup.burst, rate_headers=row.rate_headers
        )
        emulator.reset()
        server_cpu = emulator.cpu_seconds()
        outcome = asyncio.run(row.run(setup))
        server_cpu = elapsed_cpu(emulator, server_cpu)
        counters = emulator.counters()
        result = outcome.drive
        requests = counters["requests"]
        throttled = counters["rate_limited"]
        created = counters["contracts_created"]
        failed = setup.n - created
        speed = created / result.wall / setup.rate
        share_429 = throttled / requests if requests else 0.0
        lines.append(
            [
                f"{number}. {row.name}",
                f"{speed:.3f}",
                f"{throttled} ({share_429:.1%})",
                str(failed),
                f"{result.cpu / requests * 1e6:.0f}",
                f"{result.wall:.1f}",
                _verdict(row.target, speed, share_429, failed),
            ]
        )
        server = "" if server_cpu is None else f"; emulator CPU {server_cpu / result.wall:.0%}"
        errors = ", ".join(f"{name} ×{count}" for name, count in result.errors.most_common())
        notes.append(
            f"{number}. {requests} requests, client CPU {result.cpu / result.wall:.0%}{server}"
            + (f"; errors: {errors}" if errors else "")
        )
        notes.extend(f"   {note}" for note in outcome.notes)
    print(
        table(
            ["client", "success/s ÷ R", "429s", "failed", "CPU µs/req", "wall s", "target"],
            lines,
        )
    )
    print()
    print(
        "success/s ÷ R: contracts created ÷ seconds from the first request to the last "
        "answer ÷ R (above 1 only\n  when a run is so short that the emulator's initial "
        f"burst of {setup.burst} counts).\n"
        "CPU µs/req: this process's CPU time ÷ HTTP requests sent. A paced client wakes up "
        "for about every request,\n  and one idle event-loop wakeup alone costs "
        f"{wakeup_cpu():.0f} µs of CPU on this machine."
    )
    print()
    print("\n".join(notes))
