"""What the client is told about the service's limits.

:class:`RateLimits` and the table of documented limits (``reference/service-api.md`` §3):
pure configuration, no behaviour.
"""

from __future__ import annotations

import math
from typing import Final, Literal

import attrs

from contractsdk._exceptions import ConfigurationError
from contractsdk._http import READ_METHODS

__all__ = ["DOCUMENTED_LIMITS", "DEFAULT_MAX_PAUSE", "BucketName", "RateLimits", "bucket_name"]

BucketName = Literal["read", "write"]

#: The service's documented limits, requests per second per credential: ``{environment:
#: (reads, writes)}`` (service-api.md §3). The one place these numbers are written.
DOCUMENTED_LIMITS: Final[dict[str, tuple[float, float]]] = {
    "sandbox": (25.0, 25.0),
    "production": (100.0, 100.0),
}

#: The longest a server's answer may pause a bucket when the client is not told otherwise:
#: the retry policy's ``retry_after_max`` when retries are on, else this.
DEFAULT_MAX_PAUSE: Final = 60.0


def bucket_name(method: str) -> BucketName:
    """Return the bucket a request of this method draws on: ``"read"`` or ``"write"``."""
    return "read" if method.upper() in READ_METHODS else "write"


def _check_rate(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    # A bool is an int to Python, never a rate to a reader.
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if value is not None and not (number and math.isfinite(value) and value > 0):
        raise ConfigurationError(f"RateLimits.{attribute.name} must be a positive number or None")


def _check_burst(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise ConfigurationError("RateLimits.burst must be a positive integer or None")


def _check_pause(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if value is not None and not (number and 0 <= value < math.inf):
        raise ConfigurationError("RateLimits.max_pause must be a number >= 0, or None")


@attrs.frozen(kw_only=True)
class RateLimits:
    """The client's rate limits: how fast it may read and write.

    ``ContractClient(rate_limits=None)`` turns the limiter off; a ``RateLimits`` whose rates
    are None starts cautiously and learns the limits from the service's 429s and headers.

    Attributes:
        read: Requests per second for GET, HEAD and OPTIONS; None = unknown, learn it.
        write: Requests per second for POST, PATCH, PUT and DELETE; None = unknown.
        burst: How many requests the service lets through at once after an idle spell (its
            bucket's size), if you know it. The client then bursts that far after idling;
            when it is None, it bursts only as far as the service's ``Remaining`` headers
            have shown, or not at all.
        adaptive: Learn from the service: a 429 pauses the bucket and lowers its rate,
            which then climbs back (never above a configured rate). When False the rates
            stay as given; a 429's ``Retry-After`` still pauses the bucket.
        max_pause: The longest, in seconds, one answer of the service may pause a bucket
            (``Retry-After``, a counter's reset). Longer values are cut to it, so no answer,
            however absurd, stalls the client for longer. None: the retry policy's
            ``retry_after_max`` (60 s by default).
    """

    read: float | None = attrs.field(default=None, validator=_check_rate)
    write: float | None = attrs.field(default=None, validator=_check_rate)
    burst: int | None = attrs.field(default=None, validator=_check_burst)
    adaptive: bool = True
    max_pause: float | None = attrs.field(default=None, validator=_check_pause)

    @classmethod
    def sandbox(cls) -> RateLimits:
        """Return the sandbox's documented limits: 25 reads/s and 25 writes/s."""
        return cls.for_environment("sandbox")

    @classmethod
    def production(cls) -> RateLimits:
        """Return production's documented limits: 100 reads/s and 100 writes/s."""
        return cls.for_environment("production")

    @classmethod
    def for_environment(cls, name: str) -> RateLimits:
        """Return the documented limits of ``"sandbox"`` or ``"production"``.

        Raises:
            ConfigurationError: Another name; its limits are unknown.
        """
        try:
            read, write = DOCUMENTED_LIMITS[name]
        except KeyError:
            raise ConfigurationError(
                f"no documented rate limits for environment {name!r}; "
                "give RateLimits(read=..., write=...) or RateLimits() to learn them"
            ) from None
        return cls(read=read, write=write)

    def rate(self, bucket: BucketName) -> float | None:
        """Return the configured rate of ``"read"`` or ``"write"``."""
        return self.read if bucket == "read" else self.write
