"""Per-principal read/write token buckets (§3): exact in unit tests, plausible end to end."""

from __future__ import annotations

import asyncio
import itertools

import aiohttp
import pytest

from contractsdk.sandbox import SandboxServer
from contractsdk.sandbox._ratelimit import RateLimiter, RateLimits

from ._helpers import Api, use_clock


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_exactly_rate_per_second() -> None:
    """Over T simulated seconds at most burst + rate*T requests are admitted, and that many are."""
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(read_rate=20.0, burst=5.0), clock)
    admitted = 0
    for _ in range(1000):  # 10 s of requests every 10 ms
        admitted += limiter.acquire("p", write=False).allowed
        clock.now += 0.01
    assert admitted == 5 + 20 * 10 - 1 or admitted == 5 + 20 * 10  # the last refill's edge


def test_default_burst_is_one_second_of_rate() -> None:
    """With burst=None a fresh principal gets `rate` requests at once, then none."""
    limiter = RateLimiter(RateLimits(read_rate=25.0, write_rate=25.0), FakeClock())
    results = [limiter.acquire("p", write=True).allowed for _ in range(30)]
    assert results == [True] * 25 + [False] * 5


def test_slow_rates_still_admit_one_request() -> None:
    """A rate below 1/s still has a bucket of one request."""
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(read_rate=0.5), clock)
    assert limiter.acquire("p", write=False).allowed
    assert not limiter.acquire("p", write=False).allowed
    clock.now += 2.0
    assert limiter.acquire("p", write=False).allowed


def test_headers_describe_the_bucket() -> None:
    """Limit, Remaining and Reset on success; Retry-After (ceil seconds) on refusal."""
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(read_rate=2.0, burst=2.0), clock)
    first = limiter.acquire("p", write=False)
    assert first.headers == {
        "X-RateLimit-Limit": "2",
        "X-RateLimit-Remaining": "1",
        "X-RateLimit-Reset": "1",
    }
    limiter.acquire("p", write=False)
    refused = limiter.acquire("p", write=False)
    assert not refused.allowed
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    clock.now += 0.5
    assert limiter.acquire("p", write=False).allowed


def test_headers_can_be_switched_off() -> None:
    """rate_headers=False sends no headers, even on a refusal."""
    limiter = RateLimiter(RateLimits(read_rate=1.0, rate_headers=False), FakeClock())
    assert limiter.acquire("p", write=False).headers == {}
    refused = limiter.acquire("p", write=False)
    assert not refused.allowed
    assert refused.headers == {}


def test_classes_and_principals_have_their_own_buckets() -> None:
    """Reads, writes and each principal are limited separately."""
    limiter = RateLimiter(RateLimits(read_rate=1.0, write_rate=1.0), FakeClock())
    assert limiter.acquire("a", write=False).allowed
    assert not limiter.acquire("a", write=False).allowed
    assert limiter.acquire("a", write=True).allowed
    assert limiter.acquire("b", write=False).allowed


def test_unlimited_class_is_never_refused() -> None:
    """A rate of None admits everything and sends no headers."""
    limiter = RateLimiter(RateLimits(read_rate=None, write_rate=1.0), FakeClock())
    assert all(limiter.acquire("p", write=False).allowed for _ in range(1000))
    assert limiter.acquire("p", write=False).headers == {}


def test_changing_limits_settles_at_the_old_rate() -> None:
    """Time before a change refills at the old rate; the bucket is clamped to the new burst."""
    clock = FakeClock()
    limiter = RateLimiter(RateLimits(read_rate=10.0, burst=10.0), clock)
    for _ in range(10):
        limiter.acquire("p", write=False)
    clock.now += 0.5  # 5 tokens back at the old rate
    limiter.set_limits(RateLimits(read_rate=1.0, burst=3.0))
    results = [limiter.acquire("p", write=False).allowed for _ in range(5)]
    assert results == [True, True, True, False, False]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"read_rate": 0.0},
        {"write_rate": -1.0},
        {"burst": 0.5},
        {"read_rate": float("nan")},
        {"read_rate": 5e-324},
        {"write_rate": 1e-7},
        {"burst": 1e308},
        {"burst": float("inf")},
    ],
)
def test_invalid_limits_are_refused(kwargs: dict[str, float]) -> None:
    """Rates below 1e-6 or NaN, and a burst outside 1..1e9, raise ValueError.

    A smaller rate or a larger burst made ``burst / rate`` infinite, and every request
    then answered 500 computing its rate-limit headers.
    """
    with pytest.raises(ValueError, match="must be"):
        RateLimits(**kwargs)  # type: ignore[arg-type]


def test_the_extreme_limits_still_give_integer_headers() -> None:
    """At the smallest rate and the largest burst the header seconds are finite integers."""
    limiter = RateLimiter(RateLimits(read_rate=1e-6, burst=1e9), FakeClock())
    for _ in range(3):
        headers = limiter.acquire("p", write=False).headers
        assert int(headers["X-RateLimit-Reset"]) <= 10**15


async def test_429_has_a_spring_body_and_headers(session: aiohttp.ClientSession) -> None:
    """Beyond the burst the service answers 429 with Retry-After and X-RateLimit-* headers."""
    async with SandboxServer(read_rate=1.0, burst=1.0) as server:
        api = Api(server, session)
        ok = await api.get("/v1/users")
        assert ok.status == 200
        assert ok.headers["X-RateLimit-Limit"] == "1"
        assert ok.headers["X-RateLimit-Remaining"] == "0"
        refused = await api.get("/v1/users")
        refused.spring(429)
        assert refused.headers["Retry-After"] == "1"
        assert refused.headers["X-RateLimit-Remaining"] == "0"
        assert "X-RateLimit-Reset" in refused.headers
        assert server.counters()["rate_limited"] == 1


async def test_429_without_headers_when_switched_off(session: aiohttp.ClientSession) -> None:
    """With rate_headers=False neither successes nor 429s carry rate-limit headers."""
    async with SandboxServer(read_rate=1.0, rate_headers=False) as server:
        api = Api(server, session)
        ok = await api.get("/v1/users")
        refused = await api.get("/v1/users")
        refused.spring(429)
        for reply in (ok, refused):
            assert not any(h.lower().startswith("x-ratelimit") for h in reply.headers)
            assert "Retry-After" not in reply.headers


async def test_reads_and_writes_are_limited_separately(session: aiohttp.ClientSession) -> None:
    """Exhausting the read bucket leaves writes (POST) admitted, and vice versa."""
    async with SandboxServer(read_rate=1.0, write_rate=1.0) as server:
        api = Api(server, session)
        user = server.users[0]
        assert (await api.get("/v1/users")).status == 200
        (await api.get("/v1/users")).spring(429)
        path = f"/v1/users/{user.id}/teams"
        assert (await api.post(path, {"name": "Written"})).status == 201
        (await api.post(path, {"name": "Again"})).spring(429)


async def test_each_api_key_has_its_own_buckets(session: aiohttp.ClientSession) -> None:
    """A second credential is not slowed down by the first one's traffic."""
    async with SandboxServer(read_rate=1.0) as server:
        first = Api(server, session, server.api_keys[0])
        second = Api(server, session, server.api_keys[1])
        await first.get("/v1/users")
        (await first.get("/v1/users")).spring(429)
        assert (await second.get("/v1/users")).status == 200


async def test_token_and_admin_endpoints_are_not_limited(session: aiohttp.ClientSession) -> None:
    """/oauth/token and /__sandbox/ answer however fast they are called."""
    async with SandboxServer(read_rate=1.0, write_rate=1.0) as server:
        api = Api(server, session)
        body = {
            "grant_type": "client_credentials",
            "client_id": server.client_id,
            "client_secret": server.client_secret,
        }
        for _ in range(5):
            assert (await api.post("/oauth/token", body, auth=False)).status == 200
            assert (await api.admin("GET", "/__sandbox/counters")).status == 200


async def test_concurrent_burst_admits_exactly_the_burst(
    session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 concurrent requests at 20/s with burst 5, in no time at all: 5 admitted, 55 are 429."""
    clock = FakeClock()
    async with SandboxServer(read_rate=20.0, burst=5.0) as server:
        use_clock(server, clock, monkeypatch)  # frozen: no token comes back meanwhile
        api = Api(server, session)
        replies = await asyncio.gather(*(api.get("/v1/users") for _ in range(60)))
        statuses = [r.status for r in replies]
        assert sorted(statuses) == [200] * 5 + [429] * 55
        assert server.counters()["rate_limited"] == 55


async def test_sustained_rate_is_enforced(
    session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request every 10 ms for 1.5 s at 20/s, burst 5: the burst, then one per 50 ms."""
    clock = FakeClock()
    async with SandboxServer(read_rate=20.0, burst=5.0, rate_headers=False) as server:
        use_clock(server, clock, monkeypatch)
        api = Api(server, session)
        start = clock.now
        admitted: list[int] = []
        for step in range(150):  # bounded: 1.5 simulated seconds
            clock.now = start + step * 0.01
            if (await api.get("/v1/users")).status == 200:
                admitted.append(step)
        # The first five at once (the burst), then each 50 ms of refill buys one more.
        assert admitted[:5] == [0, 1, 2, 3, 4]
        assert len(admitted) in (5 + 30 - 1, 5 + 30)  # 30 refilled; the last one at the edge
        gaps = {later - earlier for earlier, later in itertools.pairwise(admitted[5:])}
        assert gaps <= {4, 5, 6}  # one per 5 steps, give or take a float's rounding
        assert server.counters()["rate_limited"] == 150 - len(admitted)
