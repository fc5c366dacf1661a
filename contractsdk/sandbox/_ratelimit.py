"""The emulator's rate limits: one read and one write token bucket per principal.

The service documents 25 reads/s and 25 writes/s for the sandbox and 100/s each for
production, answered with 429 beyond that, with no window, algorithm or headers
documented (service-api.md §3). The emulator uses continuous-refill token buckets, the
[INFERRED] reading of "N operations per second".

Invariants:
- For a bucket, ``0 <= tokens <= burst`` after every refill; ``stamp`` is the
  ``time.monotonic()`` value at which ``tokens`` was last brought up to date.
- A request is admitted iff the refilled bucket holds at least one token, and then exactly
  one token is taken; a refused request takes nothing. Hence over any interval of length
  T at most ``burst + rate * T`` requests of a principal and class are admitted — the rate
  is enforced exactly, which the SDK's benchmark relies on (successes/s ÷ R).
- Changing the limits first settles every bucket at the old rate, so time that passed
  before the change is refilled at the rate that applied then.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import attrs

MIN_RATE = 1e-6
MAX_BURST = 1e9


@attrs.frozen
class RateLimits:
    """The current rate-limit settings.

    Args:
        read_rate: Reads (GET/HEAD) per second per principal; None means unlimited.
        write_rate: Writes (POST/PUT/PATCH/DELETE) per second per principal; None means
            unlimited.
        burst: Bucket capacity in requests for both classes; None means one second's
            worth of the rate (at least 1), so a fresh principal may send ``rate``
            requests at once and then ``rate`` per second.
        rate_headers: Whether to send ``Retry-After`` and ``X-RateLimit-*`` headers.

    Raises:
        ValueError: for a rate below :data:`MIN_RATE` (one request in about 11.6 days)
            or not finite, or a burst outside 1 to :data:`MAX_BURST`; beyond those
            bounds the headers' seconds, ``burst / rate``, overflow a float.
    """

    read_rate: float | None = 25.0
    write_rate: float | None = 25.0
    burst: float | None = None
    rate_headers: bool = True

    def __attrs_post_init__(self) -> None:
        for name in ("read_rate", "write_rate"):
            rate = getattr(self, name)
            if rate is not None and not (math.isfinite(rate) and rate >= MIN_RATE):
                raise ValueError(
                    f"{name} must be a number of at least {MIN_RATE:g} or None, got {rate!r}"
                )
        if self.burst is not None and not (1 <= self.burst <= MAX_BURST):
            raise ValueError(f"burst must be 1 to {MAX_BURST:g} or None, got {self.burst!r}")

    def capacity(self, rate: float) -> float:
        """Return the bucket capacity for a rate.

        Args:
            rate: Requests per second.

        Returns:
            ``burst`` if set, else ``max(1, rate)``.
        """
        return self.burst if self.burst is not None else max(1.0, rate)


@attrs.frozen
class Decision:
    """The outcome of asking a bucket for a token.

    Args:
        allowed: Whether the request is admitted.
        headers: The rate-limit headers to send (empty when switched off or unlimited).
    """

    allowed: bool
    headers: dict[str, str]


_UNLIMITED = Decision(True, {})


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


class RateLimiter:
    """Per-principal read and write token buckets.

    Args:
        limits: The initial settings.
        clock: The monotonic clock; injectable for tests.
    """

    def __init__(self, limits: RateLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits
        self._clock = clock
        self._buckets: dict[tuple[str, bool], _Bucket] = {}

    @property
    def limits(self) -> RateLimits:
        """The current settings."""
        return self._limits

    def set_limits(self, limits: RateLimits) -> None:
        """Replace the settings at run time.

        Args:
            limits: The new settings.
        """
        now = self._clock()
        for (_, write), bucket in self._buckets.items():
            self._refill(bucket, self._rate(write), now)
        self._limits = limits
        for (_, write), bucket in self._buckets.items():
            rate = self._rate(write)
            if rate is not None:
                bucket.tokens = min(bucket.tokens, limits.capacity(rate))

    def reset(self) -> None:
        """Forget every bucket (each principal starts full again)."""
        self._buckets.clear()

    def acquire(self, principal: str, write: bool) -> Decision:
        """Take a token for one request.

        Args:
            principal: Who is calling (one bucket pair per principal).
            write: True for the write bucket, False for the read bucket.

        Returns:
            Whether the request is admitted, and the headers to send with its response.
        """
        rate = self._rate(write)
        if rate is None:
            return _UNLIMITED
        limits = self._limits
        capacity = limits.capacity(rate)
        now = self._clock()
        key = (principal, write)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(capacity, now)
        else:
            self._refill(bucket, rate, now)
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        if not limits.rate_headers:
            return Decision(allowed, {})
        tokens = bucket.tokens
        headers = {
            "X-RateLimit-Limit": _number(rate),
            "X-RateLimit-Remaining": str(int(tokens)),
            # Seconds until the bucket is full again, i.e. until the full burst is back.
            "X-RateLimit-Reset": str(math.ceil((capacity - tokens) / rate)),
        }
        if not allowed:
            # Seconds until one token is back: the earliest a retry can succeed.
            headers["Retry-After"] = str(max(1, math.ceil((1.0 - tokens) / rate)))
        return Decision(allowed, headers)

    def _rate(self, write: bool) -> float | None:
        return self._limits.write_rate if write else self._limits.read_rate

    def _refill(self, bucket: _Bucket, rate: float | None, now: float) -> None:
        if rate is not None:
            capacity = self._limits.capacity(rate)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.stamp) * rate)
        bucket.stamp = now
