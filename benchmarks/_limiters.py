"""The limits and algorithms of ``python -m benchmarks._servers``: buckets, windows, GCRA.

:class:`Limits` is a server's configuration (its command-line options, and ``PUT
/__bench/limits``). Each algorithm is a :class:`Bucket`, one object per principal and
class (reads, writes), exact and deterministic on ``time.monotonic()``;
:func:`rate_headers` writes an answer's rate-limit headers from one. ``_servers.py``'s
docstring says how each algorithm limits and what its headers say.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import asdict, dataclass

__all__ = ["ALGORITHMS", "BUCKETS", "HEADERS", "Bucket", "Limits", "rate_headers"]

ALGORITHMS = ("token-bucket", "fixed-window", "sliding-log", "sliding-window", "gcra")
HEADERS = ("none", "x", "ietf")


@dataclass(frozen=True)
class Limits:
    """A server's limits: the ``--algorithm``, ``--rate`` … options, and ``PUT /__bench/limits``.

    ``read_rate`` None reads at ``rate`` too; ``latency`` is the most milliseconds of
    uniform random delay before each answer.
    """

    algorithm: str = "token-bucket"
    rate: float = 100.0
    burst: float = 20.0
    headers: str = "x"
    window: float = 1.0
    read_rate: float | None = None
    latency: float = 0.0

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {self.algorithm!r}")
        if self.headers not in HEADERS:
            raise ValueError(f"headers must be one of {HEADERS}, not {self.headers!r}")
        rates = (self.rate, self.read_rate or self.rate, self.window)
        if not all(math.isfinite(v) and v > 0 for v in rates) or self.burst < 1:
            raise ValueError(f"rates and the window must be positive, burst >= 1: {self}")
        if not 0 <= self.latency < math.inf:
            raise ValueError(f"latency must be >= 0 ms, not {self.latency!r}")

    @property
    def label(self) -> str:
        """What a reader needs to know, e.g. ``token-bucket/x 100/s B=20``."""
        headers = "bare" if self.algorithm == "gcra" else self.headers
        burst = f" B={self.burst:g}" if self.algorithm in ("token-bucket", "gcra") else ""
        window = "" if self.window == 1 else f" W={self.window:g}s"
        return f"{self.algorithm}/{headers} {self.rate:g}/s{burst}{window}"

    def argv(self) -> list[str]:
        """The command-line options that give these limits."""
        out = []
        for name, value in asdict(self).items():
            if value is not None:
                out += [f"--{name.replace('_', '-')}", str(value)]
        return out


# --------------------------------------------------------------------------------------
# The algorithms: one object per principal and class (reads, writes)


def _number(value: float) -> str:
    """``100`` for 100.0, ``2.5`` for 2.5: header numbers without a useless ``.0``."""
    return str(int(value)) if value == int(value) else f"{value:.3f}".rstrip("0")


class Bucket:
    """One principal's limit. ``take(now)`` admits a request or not; the rest feeds headers.

    Subclasses keep their state in slots and decide in a few float operations: the server
    must sustain ~1,500 requests/s on one core.
    """

    __slots__ = ("burst", "quota", "rate", "window")
    quota: float

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        self.rate = rate
        self.burst = limits.burst
        self.window = limits.window
        self.quota = max(1, math.floor(rate * limits.window))

    def take(self, now: float) -> bool:
        """Admit one request arriving at ``now`` (taking its share), or refuse it."""
        raise NotImplementedError

    def remaining(self) -> int:
        """Requests that would pass right now."""
        raise NotImplementedError

    def reset(self, now: float) -> float:
        """Seconds until the limit is wholly available again."""
        raise NotImplementedError

    def retry_after(self, now: float) -> str:
        """``Retry-After`` for a refused request."""
        return str(math.ceil(self.reset(now)))


class TokenBucket(Bucket):
    """Continuous refill at ``rate``, capacity ``burst``, starts full."""

    __slots__ = ("stamp", "tokens")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.quota = rate * limits.window
        self.tokens = self.burst
        self.stamp = time.monotonic()

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def remaining(self) -> int:
        return math.floor(self.tokens)

    def reset(self, now: float) -> float:
        return (self.burst - self.tokens) / self.rate

    def retry_after(self, now: float) -> str:
        # Up to the millisecond: a client that waits this long finds a whole token.
        return f"{math.ceil((1 - self.tokens) / self.rate * 1000) / 1000:.3f}"


class FixedWindow(Bucket):
    """At most ``quota`` requests per window, windows aligned to the server's start."""

    __slots__ = ("count", "index", "origin")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.origin = origin
        self.index = -1
        self.count = 0

    def take(self, now: float) -> bool:
        index = math.floor((now - self.origin) / self.window)
        if index != self.index:
            self.index, self.count = index, 0
        if self.count < self.quota:
            self.count += 1
            return True
        return False

    def remaining(self) -> int:
        return int(self.quota - self.count)

    def reset(self, now: float) -> float:
        return max(0.0, self.origin + (self.index + 1) * self.window - now)


class SlidingLog(Bucket):
    """At most ``quota`` requests in any trailing window: a log of admitted timestamps."""

    __slots__ = ("log",)

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.log: deque[float] = deque()

    def take(self, now: float) -> bool:
        log, cutoff = self.log, now - self.window
        while log and log[0] <= cutoff:
            log.popleft()
        if len(log) < self.quota:
            log.append(now)
            return True
        return False

    def remaining(self) -> int:
        return int(self.quota - len(self.log))

    def reset(self, now: float) -> float:
        return max(0.0, self.log[0] + self.window - now) if self.log else 0.0


class SlidingWindow(Bucket):
    """A sliding-window counter (Cloudflare's rate limiting, Upstash's ``slidingWindow``).

    It counts requests per window aligned to the server's start, and estimates the
    trailing window's count as this window's plus the last one's weighted by the share of
    it the trailing window still covers; refused when that reaches ``quota``.
    """

    __slots__ = ("count", "estimate", "index", "origin", "previous")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.origin = origin
        self.index = 0
        self.count = 0
        self.previous = 0
        self.estimate = 0.0  # the trailing window's count at the last request, it included

    def take(self, now: float) -> bool:
        position = (now - self.origin) / self.window
        index = math.floor(position)
        if index != self.index:
            self.previous = self.count if index == self.index + 1 else 0
            self.index, self.count = index, 0
        self.estimate = self.previous * (1 - (position - index)) + self.count
        if self.estimate < self.quota:
            self.count += 1
            self.estimate += 1
            return True
        return False

    def remaining(self) -> int:
        return max(0, math.floor(self.quota - self.estimate))

    def reset(self, now: float) -> float:
        # The estimate has left every request of the last window by this one's end.
        return max(0.0, self.origin + (self.index + 1) * self.window - now)


class Gcra(Bucket):
    """nginx ``limit_req`` (``ngx_http_limit_req_lookup``): excess in milli-requests.

    ``excess = max(0, excess - rate_milli * elapsed_ms / 1000 + 1000)``; refused when
    above ``burst * 1000`` (state untouched), else stored. A GCRA with emission interval
    1/R and tolerance B/R, on a millisecond clock like nginx's cached time.
    """

    __slots__ = ("burst_milli", "excess", "last", "rate_milli")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.rate_milli = int(rate * 1000)
        self.burst_milli = int(self.burst * 1000)
        self.excess = 0
        self.last: int | None = None

    def take(self, now: float) -> bool:
        ms = int(now * 1000)
        if self.last is None:  # a new node: admitted with no excess
            self.last = ms
            return True
        excess = max(0, self.excess - self.rate_milli * abs(ms - self.last) // 1000 + 1000)
        if excess > self.burst_milli:
            return False
        self.excess, self.last = excess, ms
        return True


BUCKETS: dict[str, type[Bucket]] = {
    "token-bucket": TokenBucket,
    "fixed-window": FixedWindow,
    "sliding-log": SlidingLog,
    "sliding-window": SlidingWindow,
    "gcra": Gcra,
}


def rate_headers(style: str, bucket: Bucket, ok: bool, now: float) -> dict[str, str] | None:
    """The rate-limit headers of one answer (None: none at all)."""
    if style == "none" or isinstance(bucket, Gcra):
        return None
    reset = bucket.reset(now)
    remaining = bucket.remaining()
    if style == "x":
        headers = {
            "X-RateLimit-Limit": _number(bucket.quota),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{reset:.3f}",
        }
    else:
        headers = {
            "RateLimit-Policy": f'"default";q={_number(bucket.quota)};w={_number(bucket.window)}',
            "RateLimit": f'"default";r={remaining};t={math.ceil(reset)}',
        }
    if not ok:
        headers["Retry-After"] = bucket.retry_after(now)
    return headers
