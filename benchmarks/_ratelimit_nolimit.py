"""Tables 2 and 3 of ``bench_ratelimit`` (``--table nolimit``): client CPU per request.

No limit in the way: contractsdk's full stack against plain aiohttp making the same calls,
over loopback to the emulator and without the network (``_fakenet.py``), timed; then
(:func:`instruction_table`, with valgrind installed) in instructions per call, each config
counted in its own process: ``python -m benchmarks._ratelimit_nolimit --count SPEC INDEX
OP N`` under valgrind (:func:`_count_child`). Last, contractsdk's own CPU above its
transport, the calls answered by a MockTransport.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp

from benchmarks._fakenet import Answer, FakeNetConnector
from benchmarks._harness import Drive, Emulator, Target, drive, median, table
from benchmarks._ratelimit_common import Setup, creator, elapsed_cpu
from contractsdk import ContractClient, RateLimits, Request, Response
from contractsdk._transport import AiohttpTransport
from contractsdk.testing import MockTransport, json_response

Call = Callable[[int], Awaitable[Any]]
OPS = ("create", "get")
#: The rows of table 2: plain aiohttp (the baseline), then contractsdk without and with a
#: limiter whose rates are too high to be in the way (its fast path on every request).
HIGH = 1e6
CONFIGS: list[tuple[str, RateLimits | None]] = [
    ("aiohttp (plain)", None),
    ("contractsdk, rate_limits=None", None),
    (f"contractsdk, RateLimits(read={HIGH:g}, write={HIGH:g})", RateLimits(read=HIGH, write=HIGH)),
]
#: The design target (issue 8, stricter than DESIGN.md's 1.5): CPU per request at most this
#: times plain aiohttp's.
CPU_TARGET = 1.3
#: Calls per run of the MockTransport measurement: no network, so many calls are cheap.
STACK_CALLS = 10_000


def _aiohttp_calls(
    session: aiohttp.ClientSession, setup: Setup, contract_id: int
) -> dict[str, Call]:
    """What a user writes with aiohttp alone: the same JSON body and bearer header."""
    target = setup.target
    create_url = f"{setup.url}/v1/teams/{target.team_id}/contracts"
    get_url = f"{setup.url}/v1/contracts/{contract_id}"
    headers = {"Authorization": f"Bearer {setup.api_key}"}

    async def create(i: int) -> Any:
        async with session.post(create_url, json=target.body(i), headers=headers) as response:
            response.raise_for_status()
            return await response.json()

    async def get(i: int) -> Any:
        async with session.get(get_url, headers=headers) as response:
            response.raise_for_status()
            return await response.json()

    return {"create": create, "get": get}


def _sdk_calls(client: ContractClient, setup: Setup, contract_id: int) -> dict[str, Call]:
    """The same two calls through contractsdk's full stack."""

    async def get(i: int) -> None:
        await client.contracts.get(contract_id)

    return {"create": creator(client, setup.target), "get": get}


async def _measure_network(setup: Setup, index: int, op: str, contract_id: int) -> Drive:
    """One run of config ``index`` against the emulator, after a warm-up."""
    async with contextlib.AsyncExitStack() as stack:
        if index == 0:
            session = await stack.enter_async_context(aiohttp.ClientSession())
            call = _aiohttp_calls(session, setup, contract_id)[op]
        else:
            client = await stack.enter_async_context(
                ContractClient(
                    api_key=setup.api_key, base_url=setup.url, rate_limits=CONFIGS[index][1]
                )
            )
            call = _sdk_calls(client, setup, contract_id)[op]
        await drive(setup.concurrency, setup.concurrency, call)  # warm: connections, terms
        return await drive(setup.n, setup.concurrency, call)


Samples = dict[tuple[int, str], list[float]]


def _interleaved(rounds: int) -> list[tuple[str, list[int]]]:
    """The order of the runs: every config in each round, A B C then C B A (drift cancels)."""
    forward = list(range(len(CONFIGS)))
    return [
        (op, forward if number % 2 == 0 else forward[::-1])
        for number in range(rounds)
        for op in OPS
    ]


def _cpu_table(samples: Samples, *, best: bool = False) -> str:
    """CPU µs per call and its ratio to plain aiohttp's, with the range of the ratios.

    Each round's ratio divides a run by aiohttp's run of the same round, made a moment
    before or after, so slow spells of the machine mostly cancel. With ``best`` the figures
    are each config's fastest run and the ratio of those (timeit's rule: noise only ever
    adds time); otherwise medians, and the median of the rounds' ratios.
    """
    pick = min if best else median
    lines = []
    for index, (name, _) in enumerate(CONFIGS):
        row = [name]
        verdicts = []
        for op in OPS:
            mine, base = samples[index, op], samples[0, op]
            ratios = [a / b for a, b in zip(mine, base, strict=True)]
            ratio = pick(mine) / pick(base) if best else median(ratios)
            row += [f"{pick(mine):.0f}", f"{ratio:.2f}×", f"{min(ratios):.2f}–{max(ratios):.2f}"]
            verdicts.append(f"{op} {'met' if ratio <= CPU_TARGET else 'MISSED'}")
        lines.append([*row, ", ".join(verdicts) if index else ""])
    figure = "best µs" if best else "µs"
    headers = ["client"]
    for op in OPS:
        headers += [f"{'POST create' if op == 'create' else 'GET contract'} {figure}", "÷ aiohttp"]
        headers.append("range")
    return table([*headers, f"target ≤ {CPU_TARGET:.2f}×"], lines)


def nolimit_table(
    emulator: Emulator,
    setup: Setup,
    repeats: int,
    memory_rounds: int,
    *,
    instructions: bool = False,
) -> None:
    """Table 2: client CPU per request, no limit, over the network and without it.

    With ``instructions``, also the instructions per call without the network (valgrind).
    """
    emulator.set_limits(read_rate=None, write_rate=None)
    samples: Samples = {}
    load: dict[str, list[float]] = {"client": [], "emulator": []}  # share of a core
    failures = 0
    for op, order in _interleaved(repeats):
        for index in order:
            emulator.reset()
            contract_id = emulator.create_contract(setup.target)
            server_cpu = emulator.cpu_seconds()
            result = asyncio.run(_measure_network(setup, index, op, contract_id))
            server_cpu = elapsed_cpu(emulator, server_cpu)
            failures += result.failed
            samples.setdefault((index, op), []).append(result.cpu / result.calls * 1e6)
            load["client"].append(result.cpu / result.wall)
            if server_cpu is not None:
                load["emulator"].append(server_cpu / result.wall)
    print(_cpu_table(samples))
    print()
    busy = ", ".join(f"{who} {median(shares):.0%}" for who, shares in load.items() if shares)
    print(
        f"Over loopback to the emulator: {repeats} rounds, each config once per round in "
        f"alternating order; {failures} failed calls;\nmedian CPU use: {busy} of a core. "
        "The verdict is on the median ratio."
    )

    # The same calls with aiohttp's sockets replaced by memory: no kernel, no other process.
    contract_id = emulator.create_contract(setup.target)
    target = setup.target
    answers = {
        "POST": emulator.raw_exchange(
            "POST", f"/v1/teams/{target.team_id}/contracts", target.body(0)
        ),
        "GET": emulator.raw_exchange("GET", f"/v1/contracts/{contract_id}"),
        "terms": emulator.raw_exchange("GET", f"/v1/templates/{target.template_id}/terms"),
    }

    def answer(method: str, path: str) -> bytes:
        return answers["terms" if path.endswith("/terms") else method]

    memory = asyncio.run(_measure_in_memory(setup, answer, contract_id, memory_rounds))
    print()
    print(
        "Without the network: aiohttp's connections answered in memory (benchmarks/_fakenet.py; "
        "aiohttp's own\nrequest and response code still runs, no socket does), "
        f"{memory_rounds} rounds of {setup.n // 4} calls per config, same order; the fastest "
        "run of each:"
    )
    print()
    print(_cpu_table(memory, best=True))

    if instructions:
        print()
        instruction_table(setup, answers, contract_id)

    # contractsdk above its transport, the same calls answered by a MockTransport.
    href = f"{emulator.url}/v1/contracts/{contract_id}"
    mock = {
        "create": json_response(201, {"rel": "self", "href": href}),
        "get": json_response(200, emulator.get_json(f"/v1/contracts/{contract_id}")),
        "terms": json_response(
            200, emulator.get_json(f"/v1/templates/{setup.target.template_id}/terms")
        ),
    }
    stack = dataclasses.replace(setup, n=STACK_CALLS)
    own: dict[tuple[str, str], list[float]] = {}
    for _ in range(3):
        for name, limits in (("off", None), ("on", RateLimits(read=HIGH, write=HIGH))):
            for op in OPS:
                result = asyncio.run(_measure_stack(stack, op, mock, limits))
                own.setdefault((name, op), []).append(result.cpu / result.calls * 1e6)
    mid = {key: median(values) for key, values in own.items()}
    print()
    print(
        "contractsdk's own CPU above its transport (the same calls answered by a "
        f"MockTransport, median of 3 × {STACK_CALLS}):\n"
        f"  create {mid['off', 'create']:.0f} µs and get {mid['off', 'get']:.0f} µs per call "
        f"with rate_limits=None, {mid['on', 'create']:.0f} and {mid['on', 'get']:.0f} µs "
        "with the limiter."
    )


async def _in_memory_calls(
    stack: contextlib.AsyncExitStack,
    setup: Setup,
    answer: Answer,
    contract_id: int,
    index: int,
) -> dict[str, Call]:
    """Config ``index``'s calls over a :class:`FakeNetConnector`, open until ``stack`` closes."""
    if index == 0:
        plain = aiohttp.ClientSession(connector=FakeNetConnector(answer))
        return _aiohttp_calls(await stack.enter_async_context(plain), setup, contract_id)
    # The session AiohttpTransport makes for itself, on the in-memory connector.
    session = aiohttp.ClientSession(
        connector=FakeNetConnector(answer),
        timeout=aiohttp.ClientTimeout(total=None),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    client = ContractClient(
        api_key=setup.api_key,
        base_url=setup.url,
        rate_limits=CONFIGS[index][1],
        transport=AiohttpTransport(session=await stack.enter_async_context(session)),
    )
    return _sdk_calls(await stack.enter_async_context(client), setup, contract_id)


async def _measure_in_memory(
    setup: Setup, answer: Answer, contract_id: int, rounds: int
) -> Samples:
    """Every config over a :class:`FakeNetConnector`, in one event loop, runs interleaved."""
    calls = max(1, setup.n // 4)
    async with contextlib.AsyncExitStack() as stack:
        configs = [
            await _in_memory_calls(stack, setup, answer, contract_id, index)
            for index in range(len(CONFIGS))
        ]
        for config in configs:
            for op in OPS:
                await drive(setup.concurrency * 2, setup.concurrency, config[op])  # warm
        samples: Samples = {}
        for op, order in _interleaved(rounds):
            for index in order:
                gc.collect()  # each run starts from the same heap
                result = await drive(calls, setup.concurrency, configs[index][op])
                samples.setdefault((index, op), []).append(result.cpu / result.calls * 1e6)
        return samples


# Instructions per call: the in-memory calls again, each config in its own process under
# valgrind (cachegrind, no cache simulation), once with N calls and once with none; the
# difference ÷ N is what one call costs, start-up and warm-up cancelled. Deterministic to a
# fraction of a percent, where CPU time on a shared virtual machine moves by tens.

#: ``valgrind`` prints the total as ``==pid== I   refs:      1,234,567``.
_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instruction_table(setup: Setup, answers: dict[str, bytes], contract_id: int) -> None:
    """Table 3: instructions per call, without the network, each config counted apart."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("Instructions per call: valgrind is not installed; skipped.")
        return
    spec = {
        "url": setup.url,
        "api_key": setup.api_key,
        "target": dataclasses.asdict(setup.target),
        "contract_id": contract_id,
        "concurrency": setup.concurrency,
        "answers": {key: raw.decode("latin-1") for key, raw in answers.items()},
    }
    calls = setup.n
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "spec.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)

        def count(job: tuple[int, str, int]) -> int:
            index, op, n = job
            argv = [valgrind, "--tool=cachegrind", "--cache-sim=no"]
            argv += ["--cachegrind-out-file=/dev/null", sys.executable, "-m", __name__]
            argv += ["--count", path, str(index), op, str(n)]
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            found = _I_REFS.search(done.stderr)
            if found is None:
                raise RuntimeError(f"no instruction count from valgrind:\n{done.stderr}")
            return int(found[1].replace(",", ""))

        jobs = [(index, op, n) for index in range(len(CONFIGS)) for op in OPS for n in (0, calls)]
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            totals = dict(zip(jobs, pool.map(count, jobs), strict=True))
    per_call = {
        (index, op): (totals[index, op, calls] - totals[index, op, 0]) / calls
        for index in range(len(CONFIGS))
        for op in OPS
    }
    lines = []
    for index, (name, _) in enumerate(CONFIGS):
        row = [name]
        verdicts = []
        for op in OPS:
            mine, base = per_call[index, op], per_call[0, op]
            row += [f"{mine / 1000:.0f}k", f"{mine / base:.2f}×"]
            verdicts.append(f"{op} {'met' if mine / base <= CPU_TARGET else 'MISSED'}")
        lines.append([*row, ", ".join(verdicts) if index else ""])
    headers = ["client"]
    for op in OPS:
        headers += ["POST create instr." if op == "create" else "GET contract instr.", "÷ aiohttp"]
    print(
        f"Instructions per call without the network (valgrind, N = {calls} calls against "
        "none, each config in its own process). The machine's load does not move these: "
        "the CPU verdict is on them."
    )
    print()
    print(table([*headers, f"target ≤ {CPU_TARGET:.2f}×"], lines))


def _count_child(argv: Sequence[str]) -> None:
    """In a process under valgrind: warm up config ``index``, then make ``n`` calls of ``op``."""
    path, index, op, n = argv
    with open(path, encoding="utf-8") as handle:
        spec = json.load(handle)
    raw: dict[str, bytes] = {key: text.encode("latin-1") for key, text in spec["answers"].items()}
    fields = tuple(tuple(field) for field in spec["target"].pop("fields"))
    setup = Setup(
        url=spec["url"],
        api_key=spec["api_key"],
        target=Target(**spec["target"], fields=fields),
        rate=0.0,
        burst=0,
        n=int(n),
        concurrency=spec["concurrency"],
    )

    def answer(method: str, path: str) -> bytes:
        return raw["terms" if path.endswith("/terms") else method]

    async def calls() -> None:
        async with contextlib.AsyncExitStack() as stack:
            config = await _in_memory_calls(stack, setup, answer, spec["contract_id"], int(index))
            await drive(setup.concurrency * 2, setup.concurrency, config[op])  # warm
            await drive(setup.n, setup.concurrency, config[op])

    asyncio.run(calls())


async def _measure_stack(
    setup: Setup, op: str, answers: dict[str, Response], limits: RateLimits | None
) -> Drive:
    """contractsdk above its transport: the same calls answered by a MockTransport."""

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
        call = _sdk_calls(client, setup, 1)[op]
        await drive(setup.concurrency, setup.concurrency, call)
        return await drive(setup.n, setup.concurrency, call)


if __name__ == "__main__" and sys.argv[1:2] == ["--count"]:  # a child of instruction_table
    _count_child(sys.argv[2:])
