"""Client-side rate limiting: read and write buckets that pace requests and learn.

The service limits reads and writes separately (production 100/s each, sandbox 25/s each)
and answers 429 past them, with no documented rate-limit headers
(``reference/service-api.md`` §3). Each client keeps two buckets, ``read`` (GET, HEAD,
OPTIONS) and ``write`` (everything else), shared by all of its tasks and, through Redis,
by every process that uses the same credential.

The parts: :mod:`._limits` (what the client is told), :mod:`._control` (the learning
policy, pure), :mod:`._store` (the GCRA schedule in this process), :mod:`._redis` (the
same through Redis), :mod:`._limiter` (the FIFO queues and the glue).
"""

from ._control import MIN_RATE, PACING, SLOW_START_RATE, Control, Observation
from ._limiter import BucketState, Grant, RateLimiter, RateLimiterState
from ._limits import DEFAULT_MAX_PAUSE, DOCUMENTED_LIMITS, BucketName, RateLimits, bucket_name
from ._store import LocalStore, Schedule, Slot, Store

__all__ = [
    "DEFAULT_MAX_PAUSE",
    "DOCUMENTED_LIMITS",
    "MIN_RATE",
    "PACING",
    "SLOW_START_RATE",
    "BucketName",
    "BucketState",
    "Control",
    "Grant",
    "LocalStore",
    "Observation",
    "RateLimiter",
    "RateLimiterState",
    "RateLimits",
    "Schedule",
    "Slot",
    "Store",
    "bucket_name",
]
