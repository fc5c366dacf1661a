"""Client processes for the benchmarks: K workers on one credential, one common start.

:func:`run_fleet` starts one process per :class:`WorkerSpec` (``python -m benchmarks._procs
worker SPEC``). Each builds its client, fetches the template's terms and connects, says
``ready`` on stdout, and waits; once every worker is ready the parent sends them all one
wall-clock start instant. From it each worker creates NDA contracts from ``concurrency``
tasks through its phases (busy, idle, busy …), then prints one JSON line:

* ``ok``, ``errors`` (failed calls by exception type), ``throttled`` (429s it saw);
* ``first``/``last``: seconds from the start to its first request and its last answer;
* ``cpu``: its ``time.process_time()`` over the run;
* ``series``: its successes per :data:`STEP` seconds from the start;
* ``rates``: ``[t, client.rate_limits.write.rate]`` every :data:`SAMPLE` s (contractsdk);
* ``phases``: per busy phase, its start, last answer, successes, requests and 429s.

A worker is contractsdk (``ContractClient(api_key, base_url, rate_limits, redis=…)``, the
default retries) or what users write instead: aiohttp, an aiolimiter ``AsyncLimiter`` at
its share of the limit, and tenacity on 429 (``_ratelimit_limit``'s). :class:`Fleet` adds
the workers up: successes/s, per-process rates, Jain's fairness index, the summed series.

The workers that share their limiter through Redis get its URL from
:class:`benchmarks._redis.RedisServer`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._harness import START_TIMEOUT, Server, Target, stop_process
from benchmarks._redis import RedisServer

__all__ = [
    "SAMPLE",
    "STEP",
    "Fleet",
    "Measured",
    "WorkerResult",
    "WorkerSpec",
    "jain",
    "measure",
    "rate_line",
    "run_fleet",
    "settle_time",
    "verdict",
]

ROOT = Path(__file__).resolve().parents[1]
#: Seconds per point of the success series.
STEP = 0.5
#: Seconds between two samples of the client's own write rate.
SAMPLE = 0.1
#: Seconds between "every worker is ready" and the common start.
LEAD = 0.5
#: The note a row prints when the SDK cannot share through Redis yet.
NO_REDIS = "ContractClient has no redis= yet"


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker process does (sent to it as JSON).

    Attributes:
        kind: ``"sdk"`` (contractsdk) or ``"aiolimiter"`` (aiohttp + aiolimiter + tenacity).
        url: The server's base URL.
        api_key: The credential every worker shares.
        target: The user, team and template to create contracts with.
        concurrency: Tasks making calls in this process.
        phases: Seconds busy, idle, busy … (idle counts from the last answer of a phase).
        write: sdk: the ``RateLimits(write=…)`` it is told (None: learn it);
            aiolimiter: its ``AsyncLimiter`` rate.
        burst: sdk: ``RateLimits(burst=…)``.
        redis: sdk: share the limiter through this Redis URL (None: do not).
        name: A label for the worker (its ``X-Bench-Client`` header, aiolimiter only).
        turns: sdk: write the limiter's turns (the ``contractsdk.ratelimit`` logger at
            DEBUG) to this file, each line stamped with seconds from the common start.
    """

    kind: str
    url: str
    api_key: str
    target: Target
    concurrency: int
    phases: tuple[float, ...]
    write: float | None = None
    burst: int | None = None
    redis: str | None = None
    name: str = "worker"
    turns: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerSpec:
        data = json.loads(text)
        target = data.pop("target")
        fields = tuple(tuple(f) for f in target.pop("fields"))
        return cls(
            **{**data, "phases": tuple(data["phases"])},
            target=Target(**target, fields=fields),
        )


@dataclass
class Phase:
    """One busy phase of a worker; times in seconds from the common start."""

    start: float
    last: float
    ok: int
    requests: int
    throttled: int


@dataclass
class WorkerResult:
    """What one worker measured (see the module docstring)."""

    ok: int
    errors: dict[str, int]
    throttled: int
    requests: int
    first: float
    last: float
    cpu: float
    series: list[int]
    throttles: list[int]
    rates: list[list[float]]
    phases: list[Phase]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerResult:
        phases = [Phase(**phase) for phase in data.pop("phases")]
        return cls(**data, phases=phases)


# --------------------------------------------------------------------------------------
# The parent's side


@dataclass
class Fleet:
    """The workers of one run, and their sums. ``skipped`` says why a run did not happen."""

    workers: list[WorkerResult] = field(default_factory=list)
    skipped: str | None = None

    @property
    def ok(self) -> int:
        return sum(worker.ok for worker in self.workers)

    @property
    def span(self) -> float:
        """Seconds from the first request of any worker to the last answer of any."""
        first = min(worker.first for worker in self.workers)
        return max(worker.last for worker in self.workers) - first

    @property
    def rate(self) -> float:
        """Successes per second over :attr:`span`."""
        return self.ok / self.span if self.span > 0 else 0.0

    def per_process(self) -> list[float]:
        """Each worker's successes per second over the fleet's span."""
        return [worker.ok / self.span if self.span > 0 else 0.0 for worker in self.workers]

    @property
    def jain(self) -> float:
        """Jain's fairness index of the workers' successes."""
        return jain(worker.ok for worker in self.workers)

    def series(self) -> list[int]:
        """Successes of all workers per :data:`STEP` seconds from the start."""
        columns = itertools.zip_longest(*(worker.series for worker in self.workers), fillvalue=0)
        return [sum(column) for column in columns]

    def throttles(self) -> list[int]:
        """429s all workers saw per :data:`STEP` seconds from the start (to a sample's 0.1 s)."""
        columns = itertools.zip_longest(*(w.throttles for w in self.workers), fillvalue=0)
        return [sum(column) for column in columns]

    @property
    def errors(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for worker in self.workers:
            total.update(worker.errors)
        return total

    @property
    def cpu(self) -> float:
        """CPU seconds of all workers over the run."""
        return sum(worker.cpu for worker in self.workers)


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index, (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one has all."""
    values = list(values)
    squares = sum(value * value for value in values)
    return sum(values) ** 2 / (len(values) * squares) if squares else 1.0


def run_fleet(specs: Sequence[WorkerSpec], *, timeout: float = START_TIMEOUT) -> Fleet:
    """Start one process per spec, start them together once all are ready, gather them.

    Every process is stopped on the way out, whatever happens; a watchdog kills them all
    if the run overruns its phases by more than ``timeout`` seconds.
    """
    budget = timeout + max(sum(spec.phases) for spec in specs) + timeout
    processes: list[subprocess.Popen[str]] = []
    logs: list[Any] = []

    def kill_all() -> None:
        for process in processes:
            if process.poll() is None:
                process.kill()

    watchdog = threading.Timer(budget, kill_all)
    watchdog.start()
    try:
        for spec in specs:
            log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed below)
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "benchmarks._procs", "worker", spec.to_json()],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    cwd=ROOT,
                )
            )
        for process, log in zip(processes, logs, strict=True):
            hello = _read_json(process, log)
            if "skipped" in hello:
                return Fleet(skipped=str(hello["skipped"]))
        start_at = time.time() + LEAD
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(f"{start_at!r}\n")
            process.stdin.close()
        results = [_read_json(process, log) for process, log in zip(processes, logs, strict=True)]
        return Fleet(workers=[WorkerResult.from_json(result) for result in results])
    finally:
        watchdog.cancel()
        for process in processes:
            stop_process(process)
        for log in logs:
            log.close()


@dataclass
class Measured:
    """One row: what the workers did and what the server counted meanwhile."""

    fleet: Fleet
    counters: dict[str, Any]
    server_cpu: float | None

    @property
    def requests(self) -> int:
        return int(self.counters.get("requests", 0))

    @property
    def rate_limited(self) -> int:
        return int(self.counters.get("rate_limited", 0))

    @property
    def share_429(self) -> float:
        """The share of the server's requests it answered 429."""
        return self.rate_limited / self.requests if self.requests else 0.0

    def cpu_note(self) -> str:
        """CPU of the workers and of the server, as shares of one core over the run."""
        span = self.fleet.span
        server = "" if self.server_cpu is None else f", server {self.server_cpu / span:.0%}"
        return f"CPU: clients {self.fleet.cpu / span:.0%} of a core{server}"


def measure(
    server: Server, specs: Sequence[WorkerSpec], redis: RedisServer | None = None
) -> Measured:
    """Reset the server (and Redis), run the fleet, read the server's counters and CPU."""
    server.reset()
    if redis is not None:
        redis.flushall()
    cpu = server.cpu_seconds()
    fleet = run_fleet(specs)
    after = server.cpu_seconds()
    server_cpu = None if cpu is None or after is None else after - cpu
    counters = {} if fleet.skipped else server.counters()
    return Measured(fleet=fleet, counters=counters, server_cpu=server_cpu)


def _read_json(process: subprocess.Popen[str], log: Any) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    try:
        data: dict[str, Any] = json.loads(line)
    except ValueError:
        log.seek(0)
        raise RuntimeError(
            f"a worker answered {line!r} (exit status {process.poll()}):\n{log.read()}"
        ) from None
    return data


# --------------------------------------------------------------------------------------
# Reporting helpers shared by the benchmarks


def rate_line(series: Sequence[int]) -> str:
    """Counts per :data:`STEP` seconds as whole requests per second, space-separated."""
    return " ".join(f"{count / STEP:.0f}" for count in series)


def count_line(counts: Sequence[int]) -> str:
    """Counts per :data:`STEP` seconds, as they are (429s: each one matters)."""
    return " ".join(str(count) for count in counts)


def settle_time(
    rates: Sequence[Sequence[float]], target: float, band: float = 0.05
) -> float | None:
    """Seconds from the start until the sampled rate stays within ``band`` of ``target``.

    None when the last sample is still outside (or there are no samples).
    """
    settled: float | None = None
    for t, rate in rates:
        inside = not math.isnan(rate) and abs(rate - target) <= band * target
        if inside and settled is None:
            settled = t
        elif not inside:
            settled = None
    return settled


def verdict(checks: Sequence[tuple[str, bool]]) -> str:
    """``met`` or ``MISSED (what)`` for named pass/fail checks; empty when there are none."""
    if not checks:
        return ""
    missed = [name for name, ok in checks if not ok]
    return "MISSED " + ", ".join(missed) if missed else "met"


# --------------------------------------------------------------------------------------
# The worker's side

Create = Callable[[int], Awaitable[object]]


@dataclass
class _Client:
    """A worker's client, whichever kind: what to call, and what it can tell."""

    create: Create
    close: Callable[[], Awaitable[None]]
    rate: Callable[[], float | None] = lambda: None
    requests: Callable[[], int] = lambda: 0
    throttled: Callable[[], int] = lambda: 0


async def _sdk_client(spec: WorkerSpec) -> _Client:
    from contractsdk import ContractClient, RateLimits

    limits = RateLimits(write=spec.write, burst=spec.burst)
    extra: dict[str, Any] = {} if spec.redis is None else {"redis": spec.redis}
    try:
        client = ContractClient(
            api_key=spec.api_key, base_url=spec.url, rate_limits=limits, **extra
        )
    except TypeError as exc:
        if spec.redis is not None and "redis" in str(exc):
            raise _SkipError(NO_REDIS) from None
        raise
    target = spec.target
    await client.terms.list(target.template_id)  # fetched and kept: creates only write

    async def create(i: int) -> object:
        return await client.contracts.create(
            target.team_id,
            template_id=target.template_id,
            created_by=target.user_id,
            values=target.values(i),
        )

    def rate() -> float | None:
        state = client.rate_limits
        return None if state is None else state.write.rate

    return _Client(
        create=create,
        close=client.aclose,
        rate=rate,
        requests=lambda: client.stats.requests,
        throttled=lambda: client.stats.throttled,
    )


async def _aiolimiter_client(spec: WorkerSpec) -> _Client:
    import aiohttp
    from aiolimiter import AsyncLimiter

    from benchmarks._ratelimit_limit import with_tenacity

    target = spec.target
    headers = {"Authorization": f"Bearer {spec.api_key}", "X-Bench-Client": spec.name}
    session = aiohttp.ClientSession(headers=headers)
    terms_url = f"{spec.url}/v1/templates/{target.template_id}/terms"
    async with session.get(terms_url) as response:  # what a user's code fetches first
        response.raise_for_status()
        await response.read()
    url = f"{spec.url}/v1/teams/{target.team_id}/contracts"
    throttle = AsyncLimiter(spec.write or 1.0, 1)
    counts = Counter[str]()

    async def post(i: int) -> object:
        async with throttle, session.post(url, json=target.body(i)) as response:
            counts["requests"] += 1
            counts["429"] += response.status == 429
            response.raise_for_status()
            return await response.json()

    return _Client(
        create=with_tenacity(post),
        close=session.close,
        requests=lambda: counts["requests"],
        throttled=lambda: counts["429"],
    )


class _SkipError(Exception):
    """The worker cannot run as asked (said to the parent instead of ``ready``)."""


def _say(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)


class _SinceStart(logging.Formatter):
    """Stamps a log line with the seconds since the run's common start (once it began)."""

    origin = math.inf  # time.monotonic() at the common start

    def format(self, record: logging.LogRecord) -> str:
        since = max(0.0, time.monotonic() - self.origin)
        return f"{since:7.3f} {record.getMessage()}"


def _log_turns(path: str) -> _SinceStart:
    """Send the limiter's DEBUG turns to ``path``; the formatter takes the start later."""
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    formatter = _SinceStart()
    handler.setFormatter(formatter)
    logger = logging.getLogger("contractsdk.ratelimit")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return formatter


async def _worker(spec: WorkerSpec) -> None:
    turns = _log_turns(spec.turns) if spec.turns is not None and spec.kind == "sdk" else None
    try:
        client = await (_sdk_client(spec) if spec.kind == "sdk" else _aiolimiter_client(spec))
    except _SkipError as skip:
        _say({"skipped": str(skip)})
        return
    try:
        _say({"ready": True})
        start_at = float(await asyncio.to_thread(sys.stdin.readline))
        _say(await _run(spec, client, start_at, turns))
    finally:
        await client.close()


async def _run(
    spec: WorkerSpec, client: _Client, start_at: float, turns: _SinceStart | None = None
) -> dict[str, Any]:
    origin = time.monotonic() + (start_at - time.time())  # the common start, on this clock
    if turns is not None:
        turns.origin = origin
    await asyncio.sleep(max(0.0, origin - time.monotonic()))
    cpu = time.process_time()
    errors: Counter[str] = Counter()
    series: Counter[int] = Counter()
    throttles: Counter[int] = Counter()  # 429s seen per STEP, counted at each sample
    rates: list[list[float]] = []
    phases: list[Phase] = []
    numbers = itertools.count()

    async def sample() -> None:
        seen = client.throttled()
        while True:
            rate, now = client.rate(), time.monotonic() - origin
            rates.append([now, math.nan if rate is None else rate])
            throttled = client.throttled()
            throttles[int(now / STEP)] += throttled - seen
            seen = throttled
            await asyncio.sleep(SAMPLE)

    async def busy(seconds: float) -> Phase:
        start = time.monotonic()
        end = start + seconds
        requests, throttled = client.requests(), client.throttled()
        phase = Phase(start=start - origin, last=start - origin, ok=0, requests=0, throttled=0)

        async def task() -> None:
            while time.monotonic() < end:
                try:
                    await client.create(next(numbers))
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                else:
                    phase.ok += 1
                    series[int((time.monotonic() - origin) / STEP)] += 1
                phase.last = time.monotonic() - origin

        await asyncio.gather(*(task() for _ in range(spec.concurrency)))
        phase.requests = client.requests() - requests
        phase.throttled = client.throttled() - throttled
        return phase

    sampler = asyncio.ensure_future(sample())
    try:
        for index, seconds in enumerate(spec.phases):
            if index % 2:
                await asyncio.sleep(seconds)
            else:
                phases.append(await busy(seconds))
    finally:
        sampler.cancel()
    length = max(series, default=-1) + 1
    return {
        "ok": sum(phase.ok for phase in phases),
        "errors": dict(errors),
        "throttled": client.throttled(),
        "requests": client.requests(),
        "first": phases[0].start,
        "last": max(phase.last for phase in phases),
        "cpu": time.process_time() - cpu,
        "series": [series[i] for i in range(length)],
        "throttles": [throttles[i] for i in range(length)],
        "rates": [sample for sample in rates if not math.isnan(sample[1])],
        "phases": [asdict(phase) for phase in phases],
    }


def main(argv: Sequence[str]) -> None:
    """``python -m benchmarks._procs worker SPEC``: run one worker (see the docstring)."""
    if len(argv) != 2 or argv[0] != "worker":
        sys.exit("usage: python -m benchmarks._procs worker SPEC-JSON")
    asyncio.run(_worker(WorkerSpec.from_json(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
