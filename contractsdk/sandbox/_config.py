"""The emulator's start-up settings."""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from ._faults import FaultRule
from ._ratelimit import RateLimits

MIB = 1024 * 1024


def _rules(value: Iterable[FaultRule] | None) -> tuple[FaultRule, ...]:
    return tuple(value or ())


@attrs.frozen(kw_only=True)
class SandboxConfig:
    """How an emulator starts. Run-time changes (limits, faults) go through the admin API.

    Args:
        seed: Seed of the data, the credentials and (by default) the fault RNG; the same
            seed gives the same ids and data.
        read_rate: Reads per second per principal (sandbox default 25, service-api.md §3);
            None means unlimited.
        write_rate: Writes per second per principal; None means unlimited.
        burst: Bucket capacity in requests; None means one second's worth of each rate.
        rate_headers: Send ``Retry-After`` and ``X-RateLimit-*`` headers (the real service
            documents none).
        token_ttl: Lifetime of OAuth access tokens, in seconds.
        faults: Fault rules, tried in order.
        fault_seed: Seed of the fault RNG; None uses ``seed``.
        audience: The only OAuth ``audience`` accepted; None accepts any.
        base_url: The origin used in hrefs (``http://host:port``); None uses the origin
            of each request (``SandboxServer`` sets its own URL).
        max_body_size: The largest request body accepted, in bytes (413 beyond).
        idempotency_ttl: Seconds an Idempotency-Key is remembered.
        idempotency_capacity: The most Idempotency-Keys remembered.

    Raises:
        ValueError: for invalid rates, burst, TTLs or sizes.
    """

    seed: int = 0
    read_rate: float | None = 25.0
    write_rate: float | None = 25.0
    burst: float | None = None
    rate_headers: bool = True
    token_ttl: float = 3600.0
    faults: tuple[FaultRule, ...] = attrs.field(default=(), converter=_rules)
    fault_seed: int | None = None
    audience: str | None = None
    base_url: str | None = None
    max_body_size: int = MIB
    idempotency_ttl: float = 24 * 3600.0
    idempotency_capacity: int = 100_000

    def __attrs_post_init__(self) -> None:
        self.limits()  # validates rates and burst
        if not (math.isfinite(self.token_ttl) and self.token_ttl > 0):
            raise ValueError(f"token_ttl must be a positive number, got {self.token_ttl!r}")
        if self.max_body_size < 1024:
            raise ValueError("max_body_size must be at least 1024 bytes")
        if self.idempotency_ttl <= 0 or self.idempotency_capacity < 1:
            raise ValueError("idempotency_ttl and idempotency_capacity must be positive")

    def limits(self) -> RateLimits:
        """Return the rate-limit settings.

        Returns:
            The :class:`RateLimits` built from this config.
        """
        return RateLimits(self.read_rate, self.write_rate, self.burst, self.rate_headers)
