"""Rate-limited servers on a fake clock, and clients driving a limiter against them.

Each server model is exact and deterministic; they differ the way real servers do:

* ``token-bucket``: continuous refill at R, capacity B (the service [INFERRED], the
  emulator, AWS API Gateway). Headers, when on: ``X-RateLimit-Remaining`` (whole tokens),
  ``X-RateLimit-Reset`` (seconds until full), ``Retry-After`` on a 429. ``round`` rounds
  the times up to whole seconds, as the emulator does.
* ``fixed-window``: R*W requests per aligned window of W seconds (many API gateways). Its
  windows are aligned to its own clock, not to the client's start: ``learn(..., phase=)``
  says how much of its first window has gone when the client starts.
* ``sliding-log``: at most R*W requests in any trailing W seconds.
* ``sliding-window``: a sliding-window counter (Cloudflare's, Upstash's): this aligned
  window's count plus the last one's, weighted by the share of it the trailing W seconds
  still cover, under R*W. Its windows take ``phase`` as the fixed window's do.
* ``gcra``: nginx's ``limit_req rate=R burst=B nodelay``: bare 429s, no headers at all.

Nothing here shares code with the limiter: the models are the independent side.

A client may also run on a *busy event loop* (``learn(..., lag=)``): its limiter's timers
fire late, as they do on a loaded machine, and the load comes and goes.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from contractsdk import RateLimitError, Request, Response, Retries
from contractsdk._http import Call
from contractsdk._ratelimit import RateLimiter, RateLimits
from contractsdk._retry import Retrier
from tests._fakeclock import FakeClock


class Server:
    """A rate-limited server: ``admit()`` answers one request (status, headers)."""

    def __init__(self, clock: Callable[[], float], rate: float, burst: int) -> None:
        self.clock = clock
        self.rate = rate
        self.burst = burst
        self.ok = 0
        self.throttled = 0
        self.admitted_at: list[float] = []  # the time of every success

    def admit(self) -> tuple[int, dict[str, str]]:
        now = self.clock()
        ok, headers = self.decide(now)
        if ok:
            self.ok += 1
            self.admitted_at.append(now)
        else:
            self.throttled += 1
        return (200 if ok else 429), headers

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        raise NotImplementedError


class TokenBucket(Server):
    """Continuous refill at ``rate``, capacity ``burst``, full at the start."""

    def __init__(
        self,
        clock: Callable[[], float],
        rate: float,
        burst: int,
        *,
        headers: bool = False,
        round_up: bool = False,
    ) -> None:
        super().__init__(clock, rate, burst)
        self.tokens = float(burst)
        self.stamp = clock()
        self.headers = headers
        self.round_up = round_up

    def set_rate(self, rate: float) -> None:
        self.decide_refill(self.clock())
        self.rate = rate

    def decide_refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        self.decide_refill(now)
        ok = self.tokens >= 1
        if ok:
            self.tokens -= 1
        if not self.headers:
            return ok, {}

        def seconds(value: float) -> str:
            return str(math.ceil(value)) if self.round_up else f"{value:.3f}"

        headers = {
            "X-RateLimit-Limit": f"{self.rate:g}",
            "X-RateLimit-Remaining": str(int(self.tokens)),
            "X-RateLimit-Reset": seconds((self.burst - self.tokens) / self.rate),
        }
        if not ok:
            wait = (1 - self.tokens) / self.rate
            headers["Retry-After"] = (
                str(max(1, math.ceil(wait))) if self.round_up else f"{wait:.3f}"
            )
        return ok, headers


class FixedWindow(Server):
    """``rate * window`` requests per aligned window."""

    def __init__(
        self,
        clock: Callable[[], float],
        rate: float,
        burst: int,
        *,
        window: float = 1.0,
        headers: bool = False,
    ) -> None:
        super().__init__(clock, rate, burst)
        self.window = window
        self.start = clock()
        self.index = -1
        self.count = 0
        self.headers = headers

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        index = math.floor((now - self.start) / self.window)
        if index != self.index:
            self.index, self.count = index, 0
        limit = int(self.rate * self.window)
        ok = self.count < limit
        if ok:
            self.count += 1
        if not self.headers:
            return ok, {}
        reset = self.start + (index + 1) * self.window - now
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(limit - self.count),
            "X-RateLimit-Reset": f"{reset:.3f}",
        }
        if not ok:
            headers["Retry-After"] = str(math.ceil(reset))
        return ok, headers


class SlidingLog(Server):
    """At most ``rate * window`` requests in any trailing window."""

    def __init__(
        self, clock: Callable[[], float], rate: float, burst: int, *, window: float = 1.0
    ) -> None:
        super().__init__(clock, rate, burst)
        self.window = window
        self.log: deque[float] = deque()

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        while self.log and self.log[0] <= now - self.window:
            self.log.popleft()
        ok = len(self.log) < int(self.rate * self.window)
        if ok:
            self.log.append(now)
        return ok, {}


class SlidingWindow(Server):
    """A sliding-window counter (Cloudflare's, Upstash's ``slidingWindow``): bare 429s.

    The trailing window's count is estimated as this window's count plus the last one's,
    weighted by the share of it the trailing window still covers.
    """

    def __init__(
        self, clock: Callable[[], float], rate: float, burst: int, *, window: float = 1.0
    ) -> None:
        super().__init__(clock, rate, burst)
        self.window = window
        self.start = clock()
        self.index = 0
        self.count = 0
        self.previous = 0

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        position = (now - self.start) / self.window
        index = math.floor(position)
        if index != self.index:
            self.previous = self.count if index == self.index + 1 else 0
            self.index, self.count = index, 0
        estimate = self.previous * (1 - (position - index)) + self.count
        ok = estimate < int(self.rate * self.window)
        if ok:
            self.count += 1
        return ok, {}


class Gcra(Server):
    """nginx ``limit_req rate=R burst=B nodelay``: bare 429s."""

    def __init__(self, clock: Callable[[], float], rate: float, burst: int) -> None:
        super().__init__(clock, rate, burst)
        self.tat = clock()

    def decide(self, now: float) -> tuple[bool, dict[str, str]]:
        interval = 1 / self.rate
        tat = max(self.tat, now)
        ok = tat - now <= self.burst * interval + 1e-9
        if ok:
            self.tat = tat + interval
        return ok, {}


SERVERS: dict[str, Callable[[Callable[[], float], float, int], Server]] = {
    "token-bucket": lambda c, r, b: TokenBucket(c, r, b),
    "token-bucket+headers": lambda c, r, b: TokenBucket(c, r, b, headers=True),
    "token-bucket+emulator-headers": lambda c, r, b: TokenBucket(
        c, r, b, headers=True, round_up=True
    ),
    "fixed-window": lambda c, r, b: FixedWindow(c, r, b),
    "fixed-window+headers": lambda c, r, b: FixedWindow(c, r, b, headers=True),
    "sliding-log": lambda c, r, b: SlidingLog(c, r, b),
    "sliding-window": lambda c, r, b: SlidingWindow(c, r, b),
    "gcra": lambda c, r, b: Gcra(c, r, b),
}


@dataclass
class Answers:
    """The server's answers in a run: successes and 429s."""

    ok: int
    throttled: int

    @property
    def share_429(self) -> float:
        sent = self.ok + self.throttled
        return self.throttled / sent if sent else 0.0


@dataclass
class Run(Answers):
    """What a simulated run measured."""

    seconds: float
    rates: list[tuple[float, float | None]] = field(default_factory=list)  # (time, rate)
    admitted_at: list[float] = field(default_factory=list)  # from the start, each success
    # For each 429, the learning epoch its request was granted in: 0 the slow start, 1 the
    # epoch after it, and so on.
    refused_epochs: list[int] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    @property
    def steady_per_second(self) -> float:
        """Successes per second over the run's second half, once the learning settled."""
        half = self.seconds / 2
        late = sum(1 for at in self.admitted_at if at >= half)
        return late / half if half else 0.0


async def exchange(
    limiter: RateLimiter,
    clock: FakeClock,
    server: Server,
    trip: float,
    refused: list[int] | None = None,
) -> tuple[int, dict[str, str]]:
    """One request granted, sent on a round trip of ``trip`` (answered half way), recorded.

    A 429's grant epoch is appended to ``refused``, when given.
    """
    grant = await limiter.acquire("POST")
    await clock.sleep(trip / 2)
    status, headers = server.admit()
    await clock.sleep(trip / 2)
    await limiter.record(grant, status, headers)
    if status == 429 and refused is not None:
        refused.append(grant.epoch)
    return status, headers


async def simulate(
    limiter: RateLimiter,
    clock: FakeClock,
    server: Server,
    *,
    total: int,
    concurrency: int = 32,
    latency: float = 0.01,
    seed: int = 1,
    retry_after: bool = True,
) -> Run:
    """Drive ``total`` successful requests through the limiter at the server.

    Each of ``concurrency`` tasks loops: acquire, a round trip of ``latency`` to twice that
    (the server answers half way), record; a 429 is retried (after its Retry-After, as the
    client's retrier does, when ``retry_after``).
    """
    rng = random.Random(seed)
    remaining = [total]
    start = clock()
    last = [start]
    ok0, throttled0, admitted0 = server.ok, server.throttled, len(server.admitted_at)
    rates: list[tuple[float, float | None]] = []
    refused: list[int] = []

    async def worker() -> None:
        while remaining[0] > 0:
            remaining[0] -= 1
            while True:
                status, headers = await exchange(
                    limiter, clock, server, latency * (1 + rng.random()), refused
                )
                if status != 429:
                    last[0] = clock()
                    break
                if retry_after and "Retry-After" in headers:
                    await clock.sleep(float(headers["Retry-After"]))

    async def sampler() -> None:
        while remaining[0] > 0:
            rates.append((clock() - start, limiter.state.write.rate))
            await clock.sleep(0.1)

    sampling = asyncio.ensure_future(sampler())
    await clock.run(asyncio.gather(*(worker() for _ in range(concurrency))))
    sampling.cancel()
    return Run(
        ok=server.ok - ok0,
        throttled=server.throttled - throttled0,
        seconds=last[0] - start,
        rates=rates,
        admitted_at=[at - start for at in server.admitted_at[admitted0:]],
        refused_epochs=refused,
    )


#: A busy event loop's load comes and goes: it is on for every other span this long
#: (simulated seconds; not a divisor of a window's second, so the spans drift across them).
LOAD_PERIOD = 1.7


def busy_loop(clock: FakeClock, lag: float, seed: int) -> Callable[[float], Awaitable[None]]:
    """A sleep whose timers fire 0 to ``2 * lag`` s late in every other ``LOAD_PERIOD``.

    How an event loop on a loaded machine paces: a timer fires when the loop gets to it.
    Each late slot is lost to a pacer that does not catch up (at 1,000/s, 0.4 ms late on
    average is 30 % short), and when the load lifts the pacer sends at its full rate again.
    Its draws are seeded apart from the round trips'.
    """
    draws = random.Random(seed * 7919)
    start = clock()

    async def sleep(delay: float) -> None:
        loaded = int((clock() - start) / LOAD_PERIOD) % 2 == 1
        await clock.sleep(delay + (2 * lag * draws.random() if loaded else 0.0))

    return sleep


async def learn(
    kind: str,
    limits: RateLimits,
    *,
    rate: float = 100.0,
    burst: int = 20,
    seconds: float = 10.0,
    concurrency: int = 32,
    latency: float = 0.01,
    seed: int = 1,
    lag: float = 0.0,
    phase: float = 0.0,
) -> Run:
    """One client with ``limits`` against a fresh server of ``kind`` for ~``seconds``.

    ``lag``: on a busy event loop (:func:`busy_loop`), its timers this late on average
    while loaded. ``phase``: a window's share of its first window already gone when the
    client starts (fixed window and sliding-window counter; 0: its windows start with the
    client, as no real server's do).
    """
    clock = FakeClock()
    limiter = RateLimiter(
        limits,
        clock=clock,
        wall_clock=clock.wall,
        sleep=busy_loop(clock, lag, seed) if lag else clock.sleep,
        random=random.Random(-seed).random,  # its own draws: the round trips' stay as they were
    )
    server = SERVERS[kind](clock, rate, burst)
    if isinstance(server, (FixedWindow, SlidingWindow)):
        server.start -= phase * server.window
    return await simulate(
        limiter,
        clock,
        server,
        total=int(rate * seconds),
        concurrency=concurrency,
        latency=latency,
        seed=seed,
    )


@dataclass
class CrowdRun(Answers):
    """What a crowd of clients without shared state measured against one server."""

    calls: int
    failed: int  # calls that raised RateLimitError after their attempts
    seconds: float  # until the last call ended


async def crowd(
    kind: str,
    *,
    clients: int,
    calls: int,
    rate: float,
    burst: int,
    spread: bool = True,
    paced: bool = True,
    retries: Retries | None = None,
    latency: float = 0.002,
    seed: int = 1,
) -> CrowdRun:
    """``clients`` clients, each told the whole limit, make ``calls`` calls each, all at once.

    Each has its own limiter and retrier, as processes without Redis do. ``spread``: each
    limiter draws its pause after a bare 429 (else every draw is 0.5, the pause as
    computed, as before it was spread); ``paced``: a 429's only wait is the limiter's
    pause (else the retrier backs off on top, as before). ``retries`` is the policy
    (``Retries()`` by default).
    """
    clock = FakeClock()
    server = SERVERS[kind](clock, rate, burst)
    trips = random.Random(seed)
    start = clock()
    ends: list[float] = []
    failed = 0

    def client(index: int) -> tuple[RateLimiter, Retrier]:
        draws = random.Random(seed * 1000 + index)
        limiter = RateLimiter(
            RateLimits(write=rate, burst=max(1, burst)),  # a server of no burst: one at once
            clock=clock,
            wall_clock=clock.wall,
            sleep=clock.sleep,
            random=draws.random if spread else (lambda: 0.5),
        )
        policy = retries or Retries()
        retrier = Retrier(
            policy, budget=None, clock=clock, sleep=clock.sleep, random=draws.random, paced=paced
        )
        return limiter, retrier

    async def one(limiter: RateLimiter, retrier: Retrier) -> None:
        nonlocal failed

        async def attempt(call: Call) -> Response:
            trip = latency * (1 + trips.random())
            status, headers = await exchange(limiter, clock, server, trip)
            if status == 429:
                raise RateLimitError("429", status_code=429, headers=headers)
            return Response(status_code=200, content=b"{}")

        request = Request(method="POST", url="http://sim/v1/x", headers={"Idempotency-Key": "k"})
        try:
            await retrier.call(Call(request), attempt)
        except RateLimitError:
            failed += 1
        ends.append(clock())

    made = [client(index) for index in range(clients)]
    await clock.run(asyncio.gather(*(one(*made[c]) for c in range(clients) for _ in range(calls))))
    return CrowdRun(
        calls=clients * calls,
        ok=server.ok,
        throttled=server.throttled,
        failed=failed,
        seconds=max(ends) - start,
    )
