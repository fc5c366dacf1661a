"""Rate-limit benchmark: does contractsdk run at the service's limit, and at what CPU cost?

Table 1 (limit R): N contracts are created at a concurrency of C against the emulator's
write limit of R/s with a burst of B, by contractsdk (limit configured; limit unknown with
rate headers on and off) and by what users write instead (aiohttp + ``asyncio.gather``;
aiohttp + tenacity on 429; aiolimiter + tenacity). Table 2 (no limit): the client CPU per
request of contractsdk's full stack against plain aiohttp making the same calls.

The emulator runs in its own process, so ``time.process_time()`` here is the client's CPU
alone. Every row starts from a reset emulator: no contracts, zero counters, full buckets.
Requests, 429s and contracts created are the emulator's counts. Figures are printed, never
asserted: the machine is shared and noisy.

Run ``python -m benchmarks ratelimit --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import aiohttp
from aiolimiter import AsyncLimiter
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_random_exponential

from benchmarks._harness import (
    Drive,
    Emulator,
    Target,
    drive,
    environment_line,
    median,
    table,
    wakeup_cpu,
)
from contractsdk import ContractClient, RateLimits, Request, Response
from contractsdk.testing import MockTransport, json_response

# --------------------------------------------------------------------------------------
# What each row runs. A row is a coroutine that drives N creates and returns its Drive,
# plus notes (the SDK's limiter state) for the lines under the table.


@dataclass(frozen=True)
class Setup:
    """Everything a row needs to know."""

    url: str
    api_key: str
    target: Target
    rate: float
    burst: int
    n: int
    concurrency: int


@dataclass
class Outcome:
    """A row's Drive and what the client says about it."""

    drive: Drive
    notes: list[str] = field(default_factory=list)


def _creator(client: ContractClient, target: Any) -> Callable[[int], Coroutine[Any, Any, None]]:
    """The SDK's create call for row ``i``, as every contractsdk row of both tables makes it."""

    async def create(i: int) -> None:
        await client.contracts.create(
            target.team_id,
            template_id=target.template_id,
            created_by=target.user_id,
            values=target.values(i),
        )

    return create


def _sdk(limits: RateLimits | None) -> Callable[[Setup], Coroutine[Any, Any, Outcome]]:
    async def row(setup: Setup) -> Outcome:
        target = setup.target
        async with ContractClient(
            api_key=setup.api_key, base_url=setup.url, rate_limits=limits
        ) as client:
            create = _creator(client, target)

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


def _with_tenacity(
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
                setup.n, setup.concurrency, _with_tenacity(create) if tenacity else create
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
        server_cpu = _elapsed_cpu(emulator, server_cpu)
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


def _elapsed_cpu(emulator: Emulator, before: float | None) -> float | None:
    after = emulator.cpu_seconds()
    return None if before is None or after is None else after - before


# --------------------------------------------------------------------------------------
# Table 2: no limit in the way, CPU per request


async def _measure_sdk(setup: Setup, op: str, contract_id: int, limits: RateLimits | None) -> Drive:
    target = setup.target
    async with ContractClient(
        api_key=setup.api_key, base_url=setup.url, rate_limits=limits
    ) as client:
        create = _creator(client, target)

        async def get(i: int) -> None:
            await client.contracts.get(contract_id)

        call = create if op == "create" else get
        await drive(setup.concurrency, setup.concurrency, call)  # warm: connections, terms
        return await drive(setup.n, setup.concurrency, call)


async def _measure_aiohttp(setup: Setup, op: str, contract_id: int) -> Drive:
    target = setup.target
    create_url = f"{setup.url}/v1/teams/{target.team_id}/contracts"
    get_url = f"{setup.url}/v1/contracts/{contract_id}"
    headers = {"Authorization": f"Bearer {setup.api_key}"}
    async with aiohttp.ClientSession() as session:

        async def create(i: int) -> Any:
            async with session.post(create_url, json=target.body(i), headers=headers) as response:
                response.raise_for_status()
                return await response.json()

        async def get(i: int) -> Any:
            async with session.get(get_url, headers=headers) as response:
                response.raise_for_status()
                return await response.json()

        call = create if op == "create" else get
        await drive(setup.concurrency, setup.concurrency, call)  # warm: connections
        return await drive(setup.n, setup.concurrency, call)


async def _measure_stack(
    setup: Setup, op: str, answers: dict[str, Response], limits: RateLimits | None
) -> Drive:
    """contractsdk above its transport: the same calls answered by a MockTransport."""
    target = setup.target

    def answer(request: Request) -> Response:
        if request.method == "POST":
            return answers["create"]
        return answers["terms" if request.url.endswith("/terms") else "get"]

    async with ContractClient(
        api_key=setup.api_key,
        base_url=setup.url,
        rate_limits=limits,
        transport=MockTransport(answer),
    ) as client:
        create = _creator(client, target)

        async def get(i: int) -> None:
            await client.contracts.get(1)

        call = create if op == "create" else get
        await drive(setup.concurrency, setup.concurrency, call)
        return await drive(setup.n, setup.concurrency, call)


OPS = ("create", "get")
#: Calls per run of the MockTransport measurement: no network, so many calls are cheap.
STACK_CALLS = 10_000
#: The design target (DESIGN.md): CPU per request at most this times plain aiohttp's.
CPU_TARGET = 1.5


def nolimit_table(emulator: Emulator, setup: Setup, repeats: int) -> None:
    """Table 2: client CPU per request, no limit, each config measured ``repeats`` times."""
    emulator.set_limits(read_rate=None, write_rate=None)
    high = 1e6
    configs: list[tuple[str, Callable[[str, int], Coroutine[Any, Any, Drive]]]] = [
        ("aiohttp (plain)", lambda op, cid: _measure_aiohttp(setup, op, cid)),
        ("contractsdk, rate_limits=None", lambda op, cid: _measure_sdk(setup, op, cid, None)),
        (
            f"contractsdk, RateLimits(read={high:g}, write={high:g})",
            lambda op, cid: _measure_sdk(setup, op, cid, RateLimits(read=high, write=high)),
        ),
    ]
    cpu: dict[tuple[int, str], list[float]] = {}
    load: dict[str, list[float]] = {"client": [], "emulator": []}  # share of a core
    failures = 0
    for _ in range(repeats):
        for op in OPS:
            for index, (_, measure) in enumerate(configs):
                emulator.reset()
                contract_id = emulator.create_contract(setup.target)
                server_cpu = emulator.cpu_seconds()
                result = asyncio.run(measure(op, contract_id))
                server_cpu = _elapsed_cpu(emulator, server_cpu)
                failures += result.failed
                cpu.setdefault((index, op), []).append(result.cpu / result.calls * 1e6)
                load["client"].append(result.cpu / result.wall)
                if server_cpu is not None:
                    load["emulator"].append(server_cpu / result.wall)
    lines = []
    for index, (name, _) in enumerate(configs):
        row = [name]
        verdicts = []
        for op in OPS:
            mine, base = median(cpu[index, op]), median(cpu[0, op])
            spread = f"{min(cpu[index, op]):.0f}–{max(cpu[index, op]):.0f}"
            row += [f"{mine:.0f}", spread, f"{mine / base:.2f}×"]
            verdicts.append(f"{op} {'met' if mine / base <= CPU_TARGET else 'MISSED'}")
        lines.append([*row, ", ".join(verdicts) if index else ""])
    headers = ["client"]
    for op in OPS:
        headers += ["POST create µs" if op == "create" else "GET contract µs", "range", "÷ aiohttp"]
    print(table([*headers, f"target ≤ {CPU_TARGET:.2f}×"], lines))
    print()
    busy = ", ".join(f"{who} {median(shares):.0%}" for who, shares in load.items() if shares)
    print(
        f"Median and range of {repeats} interleaved runs; {failures} failed calls; "
        f"median CPU use: {busy} of a core."
    )
    # The same calls with the network replaced: contractsdk's own work, without the noise.
    contract_id = emulator.create_contract(setup.target)
    href = f"{emulator.url}/v1/contracts/{contract_id}"
    answers = {
        "create": json_response(201, {"rel": "self", "href": href}),
        "get": json_response(200, emulator.get_json(f"/v1/contracts/{contract_id}")),
        "terms": json_response(
            200, emulator.get_json(f"/v1/templates/{setup.target.template_id}/terms")
        ),
    }
    stack = _with_n(setup, STACK_CALLS)
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(3):
        for name, limits in (("off", None), ("on", RateLimits(read=high, write=high))):
            for op in OPS:
                result = asyncio.run(_measure_stack(stack, op, answers, limits))
                samples.setdefault((name, op), []).append(result.cpu / result.calls * 1e6)
    own = {key: median(values) for key, values in samples.items()}
    print(
        "contractsdk's own CPU above its transport (the same calls answered by a "
        f"MockTransport, median of 3 × {STACK_CALLS}):\n"
        f"  create {own['off', 'create']:.0f} µs and get {own['off', 'get']:.0f} µs per call "
        f"with rate_limits=None, {own['on', 'create']:.0f} and {own['on', 'get']:.0f} µs "
        "with the limiter."
    )


# --------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks ratelimit", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=100.0, help="write limit R, per second")
    parser.add_argument("--burst", type=int, default=20, help="the emulator's burst B")
    parser.add_argument("-n", type=int, default=1000, help="contracts per row of table 1")
    parser.add_argument("--concurrency", type=int, default=64, help="tasks making calls")
    parser.add_argument("--cpu-n", type=int, default=2000, help="calls per run of table 2")
    parser.add_argument("--repeats", type=int, default=5, help="runs per config in table 2")
    parser.add_argument("--table", choices=("limit", "nolimit", "both"), default="both")
    return parser


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its tables."""
    args = _parser().parse_args(list(argv))
    started = time.perf_counter()
    with Emulator(read_rate=None, write_rate=args.rate, burst=args.burst) as emulator:
        target = emulator.target()
        setup = Setup(
            url=emulator.url,
            api_key=emulator.api_key,
            target=target,
            rate=args.rate,
            burst=args.burst,
            n=args.n,
            concurrency=args.concurrency,
        )
        versions = f"tenacity {version('tenacity')}, aiolimiter {version('aiolimiter')}"
        print(f"# Rate-limit benchmark — {environment_line()}, {versions}")
        if args.table in ("limit", "both"):
            print()
            print(
                f"Limit R = {args.rate:g} writes/s, burst {args.burst}, reads unlimited; "
                f"N = {args.n} creates per row at concurrency {args.concurrency}; "
                "emulator in its own process, reset before each row"
            )
            print()
            limit_table(emulator, setup)
        if args.table in ("nolimit", "both"):
            print()
            print(
                f"No limit: client CPU per request (process_time ÷ requests), "
                f"N = {args.cpu_n} calls per run at concurrency {args.concurrency}, "
                "retries on"
            )
            print()
            nolimit_table(emulator, _with_n(setup, args.cpu_n), args.repeats)
    print()
    print(f"ran in {time.perf_counter() - started:.0f} s")


def _with_n(setup: Setup, n: int) -> Setup:
    return Setup(**{**setup.__dict__, "n": n})
