"""Client-side rate limiting: a read and a write token bucket that learn from the server.

The service limits reads and writes separately (production 100/s each, sandbox 25/s each)
and answers 429 past them, with no documented rate-limit headers
(``reference/service-api.md`` §3). Each client therefore keeps two buckets, ``read``
(GET, HEAD, OPTIONS) and ``write`` (everything else), shared by all of its tasks.

Invariants of one bucket (they hold whenever no code of this module is running):

1. Tokens: ``0 <= tokens <= capacity``; they accrue at ``rate`` from ``stamp``, which is
   never earlier than ``paused_until``: no token accrues and none is granted during a pause.
   A new bucket holds ONE token, so a new client never bursts (aiolimiter#200): a burst of
   ``capacity`` is earned by idling, exactly when the server's own bucket has refilled too.
2. FIFO: requests are granted in arrival order. The fast path (grant at once, no await) is
   taken only when nobody is queued, so a newcomer never overtakes a waiter.
3. One timer: only the head of the queue sleeps (on the injected ``sleep``, interruptibly);
   every other waiter awaits its own future, resolved when it becomes the head. No thread
   primitive, no polling: the event loop is never blocked.
4. A token is taken in the same synchronous step that grants it, after the last ``await``.
   A waiter cancelled at any point has taken nothing: it leaves the queue, and if it was the
   head the next waiter is promoted at once. Nothing it started outlives it.
5. Pauses only extend (``paused_until`` = the latest end asked for) and empty the bucket:
   a 429 means the server's bucket is empty, so tokens saved up here are fiction.
6. Rate: ``rate <= ceiling * PACING`` when a ceiling (configured, or declared by
   ``RateLimit-Policy``) is known, and learning never sets it under ``MIN_RATE`` (unless
   the ceiling is lower). ``rate is None`` only when limits are unknown and ``adaptive`` is
   off: no pacing at all, but pauses still apply.
7. One decrease per overload: a 429 lowers the rate only if its request was granted after
   the last decrease (``epoch``). 429s for requests already in flight at the decrease are
   echoes of the same overload; cutting again for each would collapse the rate (TCP's one
   window reduction per round trip). They are counted, nothing more.
8. ``record()`` never raises: unreadable header values are ignored one by one.
9. Fast fail: ``acquire(timeout=t)`` raises :class:`RateLimiterTimeoutError` at once when the
   projected wait exceeds ``t``, and later (also at once, not at the deadline) if a pause or
   a lower rate pushes a queued waiter's projected grant past its deadline.

Learning: CUBIC (botocore's adaptive mode: beta = 0.7, C = 0.4) rather than AIMD. After a
429 the rate drops to beta*W and climbs back along ``C*(t - K)**3 + W`` with
``K = (W*(1 - beta)/C) ** (1/3)``: fast while far below W, flat around W, then probing above
it. A token-bucket server (the service and the sandbox) admits exactly its rate R once its
burst is spent, so W is close to R, and CUBIC's long plateau at W keeps the learned rate
just under R with one 429 every several seconds. AIMD's constant slope crosses R again
every ``(1 - beta)*R/step`` seconds, trading either throughput (small step) or 429s (large
step). Three changes to botocore:

* W is the lowest of the rate in use, the measured send rate and the measured *admitted*
  rate (non-429 answers per second). When overdriven the server admits R/s, so W lands near
  R instead of near the overshoot, and the rate settles instead of oscillating.
* The server's counter running out (``remaining`` 0 on a success) is a throttle one
  request early, like TCP's ECN: it lowers the rate (once per overload, as a 429 does) and
  empties the bucket, but does not pause it. The request went through, and how long the
  counter stays empty is unknown: ``X-RateLimit-Reset`` is a window's end for some servers
  and a token bucket's time to full for others (the sandbox: rounded up, so at least 1 s
  where one token is back after 1/R). Pausing until it on every exhausted success halved
  the throughput of a client learning a limit from those headers. A 429 that says
  remaining 0 still pauses until the reset, and so does a bucket that does not pace.
* Unknown limits start with a slow start, not unthrottled: with 64 concurrent tasks an
  unthrottled first wave meets a server burst of 20 with 44 429s before any feedback
  arrives. The rate starts at ``SLOW_START_RATE`` and doubles about every
  ``SLOW_START_DOUBLING`` seconds while the client uses it all; the first 429 ends the slow
  start and CUBIC takes over. Increases are clamped to twice the measured send rate
  (botocore), so an idle client does not bank a huge rate.

A configured rate is a ceiling, paced at ``PACING`` (99 %) of it: arrivals at the server only
lag sends, so pacing at or under R leaves the server's bucket a margin that grows by 1 % of R
per second against timing noise. A 429 still pauses and lowers it (the real limit may be
lower than configured), and CUBIC climbs back up to the ceiling.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, Literal

import attrs

from ._exceptions import ConfigurationError, RateLimiterTimeoutError
from ._headers import RateLimitHints, parse_rate_limit_headers

__all__ = [
    "BucketState",
    "RateLimiter",
    "RateLimiterState",
    "RateLimits",
    "bucket_name",
]

BucketName = Literal["read", "write"]

#: Documented limits, requests per second for reads and for writes (service-api.md §3).
SANDBOX_RATE: Final = 25.0
PRODUCTION_RATE: Final = 100.0

#: The fraction of a known limit the bucket is paced at (see the module docstring).
PACING: Final = 0.99
#: Default capacity, in seconds' worth of the rate: 200 ms absorbs the event loop's timer
#: lateness without losing rate, and stays within the burst of common server buckets.
BURST_SECONDS: Final = 0.2
#: CUBIC's multiplicative decrease and scale constant (botocore adaptive.py).
BETA: Final = 0.7
SCALE: Final = 0.4
#: The lowest rate the learning ever sets (botocore's minimum fill rate).
MIN_RATE: Final = 0.5
#: Slow start for unknown limits: the first rate, and how fast it doubles while in use.
SLOW_START_RATE: Final = 20.0
SLOW_START_DOUBLING: Final = 0.25
#: When the slow start ends, W is the admitted rate over this many seconds: long enough to
#: dilute the server's burst, short enough not to reach back into the slow ramp.
SLOW_START_WINDOW: Final = 0.5
#: The pause after a 429 that says nothing, in seconds, when no rate is known.
DEFAULT_PAUSE: Final = 0.1
#: Without the acquire's context, a 429 this soon after a decrease counts as an echo.
ECHO_WINDOW: Final = 0.1

_READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_EPSILON: Final = 1e-9
_KICK_RATIO: Final = 1.05
_METER_WINDOW: Final = 1.0
_METER_BINS: Final = 10
_METER_BIN: Final = _METER_WINDOW / _METER_BINS


def bucket_name(method: str) -> BucketName:
    """Return the bucket a request of this method draws on: ``"read"`` or ``"write"``."""
    return "read" if method.upper() in _READ_METHODS else "write"


def _check_rate(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ConfigurationError(f"RateLimits.{attribute.name} must be a positive number or None")


def _check_burst(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise ConfigurationError("RateLimits.burst must be a positive integer or None")


@attrs.frozen(kw_only=True)
class RateLimits:
    """The client's rate limits: how fast it may read and write.

    ``ContractClient(rate_limits=None)`` turns the limiter off; a ``RateLimits`` whose rates
    are None starts cautiously and learns the limits from the service's 429s and headers.

    Attributes:
        read: Requests per second for GET, HEAD and OPTIONS; None = unknown, learn it.
        write: Requests per second for POST, PATCH, PUT and DELETE; None = unknown.
        burst: How many requests may go at once after an idle spell (the bucket's
            capacity); None = 0.2 s worth of the rate, at least 1.
        adaptive: Learn from the service: a 429 pauses the bucket and lowers its rate,
            which then climbs back (never above a configured rate). When False the rates
            stay as given; a 429's ``Retry-After`` still pauses the bucket.
    """

    read: float | None = attrs.field(default=None, validator=_check_rate)
    write: float | None = attrs.field(default=None, validator=_check_rate)
    burst: int | None = attrs.field(default=None, validator=_check_burst)
    adaptive: bool = True

    @classmethod
    def sandbox(cls) -> RateLimits:
        """Return the sandbox's documented limits: 25 reads/s and 25 writes/s."""
        return cls(read=SANDBOX_RATE, write=SANDBOX_RATE)

    @classmethod
    def production(cls) -> RateLimits:
        """Return production's documented limits: 100 reads/s and 100 writes/s."""
        return cls(read=PRODUCTION_RATE, write=PRODUCTION_RATE)

    @classmethod
    def for_environment(cls, name: str) -> RateLimits:
        """Return the documented limits of ``"sandbox"`` or ``"production"``.

        Raises:
            ConfigurationError: Another name; its limits are unknown.
        """
        if name == "sandbox":
            return cls.sandbox()
        if name == "production":
            return cls.production()
        raise ConfigurationError(
            f"no documented rate limits for environment {name!r}; "
            "give RateLimits(read=..., write=...) or RateLimits() to learn them"
        )

    def rate(self, bucket: BucketName) -> float | None:
        """Return the configured rate of ``"read"`` or ``"write"``."""
        return self.read if bucket == "read" else self.write


# --------------------------------------------------------------------------------------
# Pure: measurement and CUBIC


class _RateMeter:
    """Events per second over the last second, counted in 0.1 s bins (constant memory).

    botocore smooths 0.5 s bins with an EMA, which lags several bins behind a rate that
    doubles every quarter second (the slow start); a sliding window does not.
    """

    __slots__ = ("_bins", "_since")

    def __init__(self, now: float) -> None:
        self._bins: deque[list[int]] = deque()  # [bin index, count], oldest first
        self._since = now

    def add(self, now: float) -> None:
        index = math.floor(now / _METER_BIN)
        if self._bins and self._bins[-1][0] == index:
            self._bins[-1][1] += 1
        else:
            self._bins.append([index, 1])
            self._drop(index)

    def rate(self, now: float, window: float = _METER_WINDOW) -> float:
        index = math.floor(now / _METER_BIN)
        self._drop(index)
        first = index - round(window / _METER_BIN)
        span = min(window, max(now - self._since, _METER_BIN))
        return sum(count for i, count in self._bins if i > first) / span

    def _drop(self, index: int) -> None:
        while self._bins and self._bins[0][0] <= index - _METER_BINS:
            self._bins.popleft()


@attrs.frozen
class _Cubic:
    """The CUBIC curve after a throttle at rate ``w_max`` at time ``t_fail``."""

    w_max: float
    t_fail: float
    k: float

    @classmethod
    def after_throttle(cls, w_max: float, now: float) -> _Cubic:
        return cls(w_max, now, (w_max * (1 - BETA) / SCALE) ** (1 / 3))

    def rate_at(self, now: float) -> float:
        return SCALE * (now - self.t_fail - self.k) ** 3 + self.w_max


# --------------------------------------------------------------------------------------
# Public snapshots


@attrs.frozen(kw_only=True)
class BucketState:
    """A snapshot of one bucket of a client's rate limiter.

    Attributes:
        name: ``"read"`` or ``"write"``.
        rate: The rate it paces at now, requests per second; None when it does not pace.
        limit: The known ceiling: the configured rate, or the service's declared policy
            if lower; None when unknown.
        learning: True while the limit is unknown and the rate still rising (slow start).
        capacity: The most requests it lets go at once.
        tokens: Requests it could grant right now.
        paused_until: The monotonic time the bucket is paused until, or None.
        paused_for: Seconds of pause left (0.0 when not paused).
        waiting: Requests queued now.
        granted: Requests granted so far.
        throttles: 429 answers seen so far.
        waited: Seconds requests have spent queued, summed.
        server_limit: The last limit the service's headers declared, if any.
        server_remaining: The last remaining count the service's headers gave, if any.
    """

    name: BucketName
    rate: float | None
    limit: float | None
    learning: bool
    capacity: float
    tokens: float
    paused_until: float | None
    paused_for: float
    waiting: int
    granted: int
    throttles: int
    waited: float
    server_limit: float | None
    server_remaining: float | None


@attrs.frozen(kw_only=True)
class RateLimiterState:
    """A snapshot of a client's rate limiter (``client.rate_limits``).

    Attributes:
        limits: The limits it was configured with.
        read: The read bucket (GET, HEAD, OPTIONS).
        write: The write bucket (every other method).
    """

    limits: RateLimits
    read: BucketState
    write: BucketState

    def __getitem__(self, name: BucketName) -> BucketState:
        return self.read if name == "read" else self.write


# --------------------------------------------------------------------------------------
# The bucket


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Waiter:
    __slots__ = ("arrived", "deadline", "future")

    def __init__(self, arrived: float, deadline: float | None) -> None:
        self.arrived = arrived
        self.deadline = deadline
        # Set only for a waiter that is not the head on arrival; resolved on promotion.
        self.future: asyncio.Future[None] | None = None


#: The bucket and epoch of the current task's last grant, so that ``record()`` can tell a
#: 429 for a request sent after the last decrease from an echo (invariant 7).
_last_grant: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar(
    "contractsdk_last_grant"
)
_serials = itertools.count()


class _Bucket:
    """One token bucket and its queue. Not public: :class:`RateLimiter` drives it."""

    def __init__(
        self,
        name: BucketName,
        limits: RateLimits,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        now = clock()
        self.name: BucketName = name
        self._clock = clock
        self._sleep = sleep
        self._serial = next(_serials)
        self._configured: float | None = None
        self._burst: int | None = None
        self._adaptive = True
        self._server_rate: float | None = None
        self.server_limit: float | None = None
        self.server_remaining: float | None = None
        self.rate: float | None = None
        self._slow_start = False
        self._cubic: _Cubic | None = None
        self.tokens = 1.0
        self._stamp = now
        self.paused_until = -math.inf
        self.epoch = 0
        self._last_decrease = -math.inf
        self._sent = _RateMeter(now)
        self._admitted = _RateMeter(now)
        self._queue: deque[_Waiter] = deque()
        self._deadlines = 0  # waiters in the queue with a deadline
        self._wake: asyncio.Future[None] | None = None
        self.granted = 0
        self.throttles = 0
        self.waited = 0.0
        self.configure(limits)

    # -- limits ------------------------------------------------------------------------

    @property
    def ceiling(self) -> float | None:
        """The known limit: the configured rate or the server's declared one, the lower."""
        configured, server = self._configured, self._server_rate
        if configured is None or server is None:
            return server if configured is None else configured
        return min(configured, server)

    @property
    def capacity(self) -> float:
        if self._burst is not None:
            return float(self._burst)
        basis = self.ceiling or self.rate
        return max(1.0, basis * BURST_SECONDS) if basis else 1.0

    def configure(self, limits: RateLimits) -> None:
        """Apply new limits now; a known rate takes effect at once, also for waiters."""
        self._configured = limits.rate(self.name)
        self._burst = limits.burst
        self._adaptive = limits.adaptive
        self._rebase()

    def _rebase(self) -> None:
        """Set the rate from the ceiling after the limits changed."""
        now = self._clock()
        ceiling = self.ceiling
        if ceiling is not None:
            self._set_rate(ceiling * PACING, now)
            self._slow_start = False
            self._cubic = None
        elif not self._adaptive:
            self._set_rate(None, now)
            self._slow_start = False
            self._cubic = None
        elif self.rate is None:
            self._set_rate(SLOW_START_RATE, now)
            self._slow_start = True

    def _set_rate(self, rate: float | None, now: float) -> None:
        self._refill(now)  # what accrued so far accrued at the old rate
        old, self.rate = self.rate, rate
        self.tokens = min(self.tokens, self.capacity)
        # Wake the head only for a real speed-up: CUBIC nudges the rate at every response.
        if rate is None or (old is not None and rate > old * _KICK_RATIO):
            self._kick()
        elif old is None or rate < old:
            self._expire(now)

    # -- token arithmetic (pure given `now`) -------------------------------------------

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            if self.rate is not None:
                self.tokens = min(self.capacity, self.tokens + (now - self._stamp) * self.rate)
            self._stamp = now

    def _tokens_at(self, when: float) -> float:
        if self.rate is None:
            return math.inf
        return min(self.capacity, self.tokens + max(0.0, when - self._stamp) * self.rate)

    def _ready(self, now: float) -> bool:
        return now >= self.paused_until and self._tokens_at(now) >= 1 - _EPSILON

    def _eta(self, position: int, now: float) -> float:
        """Seconds until the waiter at ``position`` in the queue could be granted."""
        start = max(now, self.paused_until)
        if self.rate is None:
            return start - now
        missing = position + 1 - self._tokens_at(start)
        return start - now + (missing / self.rate if missing > _EPSILON else 0.0)

    def _grant(self, now: float) -> None:
        self._refill(now)
        if self.rate is not None:
            self.tokens = max(0.0, self.tokens - 1)
        self.granted += 1
        self._sent.add(now)
        _last_grant.set((self._serial, self.epoch))

    def _pause(self, until: float, now: float) -> None:
        if until <= self.paused_until or until <= now:
            return
        self._refill(now)
        self.paused_until = until
        self.tokens = 0.0
        self._stamp = max(self._stamp, until)
        self._expire(now)

    # -- waiting -----------------------------------------------------------------------

    async def acquire(self, timeout: float | None) -> float:
        now = self._clock()
        if not self._queue and self._ready(now):
            self._grant(now)
            return 0.0
        wait = self._eta(len(self._queue), now)
        if timeout is not None and wait > timeout + _EPSILON:
            raise self._timeout_error(wait, timeout)
        waiter = _Waiter(now, None if timeout is None else now + timeout)
        self._queue.append(waiter)
        if waiter.deadline is not None:
            self._deadlines += 1
        try:
            if len(self._queue) > 1:
                waiter.future = asyncio.get_running_loop().create_future()
                await waiter.future
            while True:
                now = self._clock()
                if self._ready(now):
                    break
                wait = self._eta(0, now)
                if waiter.deadline is not None and now + wait > waiter.deadline + _EPSILON:
                    raise self._timeout_error(now + wait - waiter.arrived, timeout)
                await self._nap(wait)
        except BaseException:
            self._leave(waiter)
            raise
        # No await since the check above: the token is ours (invariant 4).
        self._pop_head()
        self._grant(now)
        waited = now - waiter.arrived
        self.waited += waited
        return waited

    async def _nap(self, seconds: float) -> None:
        """Sleep as the head for ``seconds``, or until :meth:`_kick` wakes it earlier."""
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        sleeper = asyncio.ensure_future(self._sleep(seconds))
        sleeper.add_done_callback(lambda _: _resolve(wake))
        self._wake = wake
        try:
            await wake
        finally:
            self._wake = None
            if sleeper.done():
                if not sleeper.cancelled():
                    sleeper.result()  # an error of the injected sleep surfaces here
            else:
                sleeper.cancel()

    def _kick(self) -> None:
        """Make the sleeping head look again now (its wait got shorter, or a deadline)."""
        if self._wake is not None:
            _resolve(self._wake)

    def _pop_head(self) -> None:
        """Remove the head and promote the next waiter, whose future wakes it."""
        if self._queue.popleft().deadline is not None:
            self._deadlines -= 1
        if self._queue and (future := self._queue[0].future) is not None:
            _resolve(future)

    def _leave(self, waiter: _Waiter) -> None:
        """Take a waiter that gives up (cancelled, timed out) out of the queue."""
        if self._queue and self._queue[0] is waiter:
            self._pop_head()
        elif waiter in self._queue:  # not if _expire took it out already
            self._queue.remove(waiter)
            if waiter.deadline is not None:
                self._deadlines -= 1

    def _expire(self, now: float) -> None:
        """Fail, at once, queued waiters whose projected grant now falls past their deadline.

        Called when waits grow (a pause, a lower rate). The head is only woken: it checks
        its own deadline. Free when nobody set a timeout.
        """
        if not self._deadlines:
            return
        if self._queue[0].deadline is not None:
            self._kick()
        kept: deque[_Waiter] = deque([self._queue[0]])
        for waiter in itertools.islice(self._queue, 1, None):
            wait = self._eta(len(kept), now)
            if waiter.deadline is not None and now + wait > waiter.deadline + _EPSILON:
                if waiter.future is not None and not waiter.future.done():
                    error = self._timeout_error(
                        now + wait - waiter.arrived, waiter.deadline - waiter.arrived
                    )
                    waiter.future.set_exception(error)
                self._deadlines -= 1
                continue
            kept.append(waiter)
        self._queue.clear()
        self._queue.extend(kept)

    def _timeout_error(self, wait: float, timeout: float | None) -> RateLimiterTimeoutError:
        return RateLimiterTimeoutError(
            f"the {self.name} rate limit would hold this request {wait:.3f} s, "
            f"more than its timeout of {timeout or 0.0:.3f} s",
            bucket=self.name,
            wait=wait,
        )

    # -- learning ----------------------------------------------------------------------

    def record(self, status: int, hints: RateLimitHints, now: float, fresh: bool | None) -> None:
        """Learn from one response (see :meth:`RateLimiter.record`)."""
        if fresh is None:  # the request was not granted in this task: guess by time
            fresh = now >= self._last_decrease + ECHO_WINDOW
        if hints.rate is not None and hints.rate != self._server_rate:
            self._server_rate = hints.rate
            self._rebase()
        if hints.limit is not None:
            self.server_limit = hints.limit
        throttled = status == 429
        paused = False
        if hints.retry_after is not None and (throttled or status >= 500):
            self._pause(now + hints.retry_after, now)
            paused = True
        exhausted = hints.remaining is not None and hints.remaining < 1
        if hints.remaining is not None:
            self.server_remaining = hints.remaining
            if exhausted and hints.reset and (throttled or self.rate is None):
                self._pause(now + hints.reset, now)
                paused = True
            elif self.rate is not None:
                self._refill(now)
                self.tokens = min(self.tokens, hints.remaining)
        if throttled:
            self.throttles += 1
            if fresh:
                if self._adaptive:
                    self._decrease(now)
                if not paused:
                    self._pause(now + (1 / self.rate if self.rate else DEFAULT_PAUSE), now)
        else:
            self._admitted.add(now)
            if self._adaptive:
                if exhausted and fresh:
                    self._decrease(now)
                else:
                    self._increase(now)

    def _decrease(self, now: float) -> None:
        # W: the lowest of the rate in use and what was measured (module docstring).
        if self._slow_start:
            measured = [self._admitted.rate(now, SLOW_START_WINDOW)]
        else:
            measured = [self._sent.rate(now), self._admitted.rate(now)]
        measured = [rate for rate in measured if rate > 0]
        in_use = self.rate if self.rate is not None else max(measured, default=SLOW_START_RATE)
        w_max = max(MIN_RATE, min([in_use, *measured]))
        self._cubic = _Cubic.after_throttle(w_max, now)
        self._slow_start = False
        self.epoch += 1
        self._last_decrease = now
        self._set_rate(self._clamp(w_max * BETA), now)

    def _clamp(self, rate: float) -> float:
        """Keep a learned rate at or above MIN_RATE and at or under the known ceiling."""
        ceiling = self.ceiling
        rate = max(MIN_RATE, rate)
        return rate if ceiling is None else min(rate, ceiling * PACING)

    def _increase(self, now: float) -> None:
        rate = self.rate
        if rate is None:
            return
        if self._slow_start:
            if not self._queue and self._tokens_at(now) >= 1:
                return  # not using the rate it has: no reason to raise it
            target = rate + math.log(2) / SLOW_START_DOUBLING
        elif self._cubic is not None:
            target = self._cubic.rate_at(now)
            if target > rate:  # botocore's clamp: at most twice the measured send rate
                target = min(target, max(rate, 2 * self._sent.rate(now)))
        else:
            return
        target = self._clamp(target)
        if target != rate:
            self._set_rate(target, now)

    def state(self, now: float) -> BucketState:
        paused = self.paused_until > now
        return BucketState(
            name=self.name,
            rate=self.rate,
            limit=self.ceiling,
            learning=self._slow_start,
            capacity=self.capacity,
            tokens=min(self._tokens_at(now), self.capacity) if self.rate is not None else math.inf,
            paused_until=self.paused_until if paused else None,
            paused_for=self.paused_until - now if paused else 0.0,
            waiting=len(self._queue),
            granted=self.granted,
            throttles=self.throttles,
            waited=self.waited,
            server_limit=self.server_limit,
            server_remaining=self.server_remaining,
        )


# --------------------------------------------------------------------------------------
# The limiter


class RateLimiter:
    """A client's rate limiter: a read and a write token bucket shared by all its tasks.

    The client calls :meth:`acquire` before each HTTP request and :meth:`record` after each
    response, in the same task (``record`` uses the task's context to tell a fresh 429 from
    one for a request sent before the rate was lowered).

    Args:
        limits: The limits to start from.
        clock: Monotonic seconds (injected for tests).
        wall_clock: Wall-clock seconds since the epoch, for HTTP dates and epoch resets.
        sleep: The async sleep the queue's head waits on (injected for tests).
    """

    def __init__(
        self,
        limits: RateLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._wall_clock = wall_clock
        self._buckets: dict[BucketName, _Bucket] = {
            name: _Bucket(name, limits, clock=clock, sleep=sleep) for name in ("read", "write")
        }

    def __repr__(self) -> str:
        return f"RateLimiter({self._limits!r})"

    @property
    def limits(self) -> RateLimits:
        """The limits in force (set :meth:`set_limits` to change them)."""
        return self._limits

    def set_limits(self, limits: RateLimits) -> None:
        """Change the limits at runtime; the new rates apply at once, to waiters too."""
        self._limits = limits
        for bucket in self._buckets.values():
            bucket.configure(limits)

    async def acquire(self, method: str, *, timeout: float | None = None) -> float:
        """Wait for the turn of a request of ``method`` and return the seconds waited.

        Requests are granted in arrival order. Cancelling the waiting task gives its place
        up; nothing is consumed.

        Args:
            method: The HTTP method; GET, HEAD and OPTIONS draw on the read bucket.
            timeout: The most seconds to wait; None waits as long as it takes, 0 only
                takes a request that can go at once.

        Raises:
            RateLimiterTimeoutError: The wait would exceed ``timeout``; raised as soon as
                that is known, without waiting for the deadline.
        """
        return await self._buckets[bucket_name(method)].acquire(timeout)

    def record(self, method: str, status_code: int, headers: Mapping[str, str]) -> None:
        """Learn from the response to a request of ``method``; never raises.

        A 429 pauses the whole bucket (every waiting and later task) until its
        ``Retry-After`` or briefly, and lowers the rate; a success that says the server's
        counter ran out (remaining 0) lowers the rate and empties the bucket without a
        pause; other answers let it climb back. Rate-limit headers adjust the bucket
        whatever the status.

        Args:
            method: The request's HTTP method.
            status_code: The response status.
            headers: The response headers (a case-insensitive mapping).
        """
        bucket = self._buckets[bucket_name(method)]
        now = self._clock()
        hints = parse_rate_limit_headers(headers, now=self._wall_clock())
        grant = _last_grant.get(None)
        fresh = None if grant is None or grant[0] != bucket._serial else grant[1] == bucket.epoch
        bucket.record(status_code, hints, now, fresh)

    @property
    def state(self) -> RateLimiterState:
        """A frozen snapshot of both buckets."""
        now = self._clock()
        return RateLimiterState(
            limits=self._limits,
            read=self._buckets["read"].state(now),
            write=self._buckets["write"].state(now),
        )
