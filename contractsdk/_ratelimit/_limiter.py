"""The rate limiter: a read and a write bucket, each a FIFO queue in front of a store.

The client calls ``grant = await limiter.acquire(method)`` before each HTTP request and
``await limiter.record(grant, status, headers)`` after its answer. The grant is the one
object that carries what the two calls share (which bucket, at which epoch of the learning
it was granted), so nothing passes through hidden context variables.

Three parts, each replaceable on its own:

* the queue (``_queue.py``): FIFO waiters, deadlines, cancellation, and the grants;
* the store (``_store.py`` in this process, ``_redis.py`` through Redis): the GCRA
  schedule that hands out slots, and the learning state;
* the learning policy (``_control.py``): pure, ``(state, observation, now) -> decision``.

This module is the limiter itself: the two queues, what an answer teaches (``record``,
``note`` and ``learn``), and the snapshots of its state. Invariants of one bucket's queue
(they hold whenever no code of the limiter runs):

1. FIFO: requests are granted in arrival order. The fast path (no await before the grant)
   is taken only when nobody is queued, so a newcomer never overtakes a waiter.
2. One timer: only the head of the queue sleeps (on the injected ``sleep``,
   interruptibly), on its reservation; every other waiter awaits its own future, resolved
   when it becomes the head. The event loop is never blocked, nothing polls. Through a
   store a round trip away, the queue also holds slots reserved ahead for the waiters
   behind the head (``_queue.py``'s header); they are the queue's, taken in order.
3. A waiter cancelled at any point leaves the queue; if it held a reservation it gives the
   slot back (or, reserved ahead, leaves it to the next head), and the next waiter becomes
   the head at once. Nothing it started outlives it.
4. A pause or a lower rate wakes the head, which reserves again (its old slot and those
   reserved ahead no longer hold: they are given back), and fails queued waiters whose
   projected grant now falls past their deadline, at once rather than at the deadline.
5. ``record()`` never raises: unreadable headers are ignored one by one, and a store that
   fails (Redis away) is the store's problem, not the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping

import attrs

from contractsdk._headers import (
    _NO_HINTS,
    RateLimitHints,
    has_rate_limit_headers,
    parse_rate_limit_headers,
)

from . import _control
from ._control import Control, Observation
from ._limits import DEFAULT_MAX_PAUSE, BucketName, RateLimits, bucket_name
from ._queue import Grant, _burst_cap, _Queue
from ._store import IDLE_GAP, LocalStore, Store

__all__ = ["BucketState", "Grant", "RateLimiter", "RateLimiterState"]

#: The learning's turns (a decrease, a pause, a new phase), at DEBUG: what a client slower
#: than expected is doing. Never a header value: no credential reaches it.
logger = logging.getLogger("contractsdk.ratelimit")

#: Through a shared store, a learnt rate is written when it moved by more than this share.
PUBLISH_STEP = 0.02
#: Through a shared store, how many times a learning step is decided again on what another
#: process wrote first (each a compare-and-set).
_CAS_TRIES = 3
#: How much earlier than the longest reset read lately a later answer may say its counter
#: resets before that reading is void (``RateLimiter._reset_seen``): a reset in whole
#: seconds is up to one off, and answers are taken in late by different amounts.
RESET_SLACK = 2.0


@attrs.frozen(kw_only=True)
class BucketState:
    """A snapshot of one bucket of a client's rate limiter.

    Attributes:
        name: ``"read"`` or ``"write"``.
        rate: The rate it paces at now, requests per second; None when it does not pace.
            (A learnt rate's schedule runs up to 15 % faster on a busy event loop, by
            what the loop's late timers lose, so that this is the rate that is sent.)
        limit: The known ceiling: the configured rate, or the service's declared policy
            if lower; None when unknown.
        learning: True while the limit is unknown and the rate still rising (slow start).
        capacity: The most requests it lets go at once after an idle spell.
        tokens: Requests it could grant right now.
        paused_until: The monotonic time the bucket is paused until, or None.
        paused_for: Seconds of pause left (0.0 when not paused).
        waiting: Requests queued now (in this process).
        granted: Requests granted so far (by this process).
        throttles: 429 answers seen so far (by this process).
        waited: Seconds requests have spent queued, summed.
        server_limit: The last limit the service's headers declared, if any.
        server_remaining: The last remaining count the service's headers gave, if any.
        shared: Whether the bucket is shared with other processes through Redis now.
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
    shared: bool = False


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


class RateLimiter:
    """A client's rate limiter: a read and a write bucket shared by all its tasks.

    Args:
        limits: The limits to start from.
        store: Where the buckets live; a :class:`LocalStore` (this process only) by default.
        max_pause: The longest any answer may pause a bucket (``limits.max_pause`` wins).
        clock: Monotonic seconds (injected for tests).
        wall_clock: Wall-clock seconds since the epoch, for HTTP dates and epoch resets.
        sleep: The async sleep the queue's head waits on (injected for tests).
        random: Uniform [0, 1) numbers, to spread the pause after a bare 429 over half to
            one and a half of its length (injected for tests).
    """

    def __init__(
        self,
        limits: RateLimits,
        *,
        store: Callable[[dict[BucketName, Control]], Store] | None = None,
        max_pause: float = DEFAULT_MAX_PAUSE,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._random = random
        self._max_pause = limits.max_pause if limits.max_pause is not None else max_pause
        self._queues: dict[BucketName, _Queue] = {
            "read": _Queue("read", self),
            "write": _Queue("write", self),
        }
        # Every request's path: the usual methods' queues without bucket_name().
        self._by_method = {
            method: self._queues[bucket_name(method)]
            for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
        }
        initial = {name: self._initial(queue) for name, queue in self._queues.items()}
        self._store: Store = LocalStore(clock, initial) if store is None else store(initial)
        self._store.max_pause = self._max_pause  # what it reads from shared state is cut to it
        # The store, when it is this process's memory: the fast paths call it directly.
        self._local = self._store if isinstance(self._store, LocalStore) else None
        for name, queue in self._queues.items():
            queue.reschedule(initial[name])
            if self._local is not None:
                queue._bucket = self._local.bucket(name)

    def __repr__(self) -> str:
        return f"RateLimiter({self.limits!r}, store={self._store!r})"

    def _initial(self, queue: _Queue) -> Control:
        return _control.initial(
            queue.ceiling(), adaptive=self.limits.adaptive, now=queue.busy_clock
        )

    def _projected_wait(self, queue: _Queue, position: int) -> float:
        store = self._store
        if isinstance(store, LocalStore):
            return store.projected_wait(queue.name, queue.schedule, position)
        _, _, paused_until = store.snapshot(queue.name)
        return queue.shared_wait(position, max(0.0, paused_until - self._clock()))

    def set_limits(self, limits: RateLimits) -> None:
        """Change the limits at runtime; the new rates apply at once, to waiters too."""
        self.limits = limits
        if limits.max_pause is not None:
            self._max_pause = self._store.max_pause = limits.max_pause
        for queue in self._queues.values():
            control = self._initial(queue)
            self._store.set_control(queue.name, control)
            queue.reschedule(control)
            queue._invalidate()

    async def acquire(self, method: str, *, timeout: float | None = None) -> Grant:
        """Wait for the turn of a request of ``method`` and return its grant.

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
        return await self._queues[bucket_name(method)].acquire(timeout)

    def try_acquire(self, method: str) -> Grant | None:
        """Grant a request of ``method`` at once if it can go without waiting, else None.

        Never suspends: the hot path of a client under its limit (the buckets in this
        process, nobody queued, a slot free now). Otherwise call :meth:`acquire`.
        """
        try:  # a subscript, not .get(): no method call on every request's path
            queue = self._by_method[method]
        except KeyError:  # a method beyond the usual ones
            queue = self._queues[bucket_name(method)]
        return queue.try_now()

    async def record(self, grant: Grant, status_code: int, headers: Mapping[str, str]) -> None:
        """Learn from the answer to a granted request; never raises.

        A 429 pauses the whole bucket (every waiting and later task, in every process that
        shares it) until its ``Retry-After`` or briefly, and lowers the rate once per
        overload; a success that says the server's counter ran out empties the bucket and
        stops the climb; other answers let the rate climb back. Every pause is cut to
        ``max_pause``.

        Args:
            grant: What :meth:`acquire` returned for the request.
            status_code: The response status.
            headers: The response headers (a case-insensitive mapping).
        """
        hints = self.note(grant, status_code, headers)
        if hints is not None:
            await self.learn(grant, status_code, hints)

    def note(
        self, grant: Grant, status_code: int, headers: Mapping[str, str]
    ) -> RateLimitHints | None:
        """Count an answer; return its hints if :meth:`learn` has more to do, else None.

        The synchronous half of :meth:`record`: a success without rate-limit headers, at a
        known limit, teaches nothing, and the client's hot path stops here.
        """
        queue = self._queues[grant.bucket]
        throttled = status_code == 429
        if grant.epoch == queue.epoch:
            queue.answered += 1
            if throttled:
                queue.refused += 1
        if throttled:
            queue.overloaded(grant)
        elif queue.streak and grant.overloads == queue.overloads:  # granted since the 429
            queue.streak = 0
            queue.probe_over(grant)  # a probe admitted: the run of 429s is over
        paced = queue.schedule_phase == "paced" and not throttled
        if not has_rate_limit_headers(headers):  # most answers: no clock read, nothing parsed
            return None if paced else _NO_HINTS
        hints = parse_rate_limit_headers(headers, now=self._wall_clock())
        return None if paced and self._paced_answer(queue, status_code, hints) else hints

    def _paced_answer(self, queue: _Queue, status_code: int, hints: RateLimitHints) -> bool:
        """Take a paced bucket's answer (not a 429) here if it repeats what is known.

        The same limit and policy, a reset no longer than seen, and a remaining count that
        does not raise the known burst: all :meth:`learn` would do is cap the tokens this
        client holds at the server's count, done here. A client paced at its limit sees one
        of these per request. Returns whether it was taken.
        """
        if hints.retry_after is not None and status_code >= 500:
            return False
        if hints.limit is not None and hints.limit != queue.server_limit:
            return False
        declared = hints.rate
        if declared is not None and declared != queue.server_rate:
            return False
        reset = hints.reset
        if reset is not None:
            if reset > queue.max_reset:
                return False
            if reset > queue.reset_longest:  # kept for the span (_reset_seen)
                queue.reset_longest = reset
        remaining = hints.remaining
        if remaining is None:
            return True
        if remaining + 1 > queue.server_burst and queue.server_burst < _burst_cap(queue):
            return False
        local = self._local
        if local is None:  # through a shared store only an empty counter is written
            if remaining < 1:
                return False
        else:
            local.cap_tokens(queue.name, queue.schedule, remaining, self._clock())
        queue.server_remaining = remaining
        return True

    def _reset_seen(self, queue: _Queue, reset: float, now: float) -> None:
        """Take a counter's reset into the window a limit named alone is read per.

        The window is at least the longest reset the server shows (a fixed window's
        counter resets its length after it starts, a token bucket fills in its limit's
        worth of refill), but only the longest shown lately: in this span of readings and
        the one before, a span lasting the window taken (at least a second), so that a
        window's own length comes round again in every two. One reset read wrong (an
        epoch against a wall clock off for a moment, ours or the server's; an absurd
        value, cut to ``max_pause``) would otherwise hold the learning at limit / that
        reset for the rest of the client's life. And no counter resets sooner than it said
        (a window's end, a bucket's time to full and a log's oldest entry only move
        later): an answer whose counter resets more than ``RESET_SLACK`` before the one
        that last raised the window said voids that one at once.
        """
        reset = min(reset, self._max_pause)
        until = now + reset
        if until < queue.reset_at - RESET_SLACK:  # the longest read lately was wrong
            queue.reset_longest = 0.0
            queue.max_reset = 1.0
            queue.reset_at = until  # this answer's word stands instead
            queue.reset_span_end = now + max(1.0, reset)
        elif now >= queue.reset_span_end:  # a new span: the one before the last is forgotten
            queue.max_reset = max(1.0, queue.reset_longest)
            queue.reset_longest = 0.0
            queue.reset_span_end = now + queue.max_reset
        if reset > queue.reset_longest:
            queue.reset_longest = reset
        if reset > queue.max_reset:
            queue.max_reset = reset
            queue.reset_at = until

    def abandon(self, grant: Grant) -> None:
        """The request of ``grant`` ended without an answer (an error, or cancelled).

        Nothing is learnt from it; if it was a probe in a run of 429s (``_queue.py``), the
        bucket grants again at once instead of waiting for an answer that will not come.
        """
        self._queues[grant.bucket].probe_over(grant)

    async def learn(self, grant: Grant, status_code: int, hints: RateLimitHints) -> None:
        """Take one learning step from an answer :meth:`note` counted (never raises)."""
        try:
            await self._learn(grant, status_code, hints)
        finally:
            if status_code == 429:
                # A probe refused: the bucket grants again, after the pause just set.
                self._queues[grant.bucket].probe_over(grant)

    async def _learn(self, grant: Grant, status_code: int, hints: RateLimitHints) -> None:
        queue = self._queues[grant.bucket]
        throttled = status_code == 429
        fresh = grant.epoch == queue.epoch
        if hints.limit is not None:
            queue.server_limit = hints.limit
        now = self._clock()
        if hints.reset is not None:
            self._reset_seen(queue, hints.reset, now)
        if hints.remaining is not None:
            queue.server_remaining = hints.remaining
            if hints.remaining + 1 > queue.server_burst and not throttled:
                queue.server_burst = min(hints.remaining + 1, _burst_cap(queue))
        store = self._store
        control, version, _ = store.snapshot(grant.bucket)
        # Through a shared store another process may have moved the epoch on already.
        fresh = fresh and grant.epoch == control.epoch
        start = control
        declared = hints.rate
        if (
            declared is not None
            and declared != queue.server_rate
            and declared * self._max_pause >= 1  # absurdly slow policies are not believed
        ):
            queue.server_rate = declared  # the server's declared policy: a ceiling
            control = attrs.evolve(self._initial(queue), epoch=control.epoch)
        if isinstance(store, LocalStore):
            busy = store.advance(grant.bucket, queue.schedule.rate, now)
        else:  # the shared busy clock, as of the last grant, moved on by local time
            busy = queue.busy + min(now - queue.busy_at, IDLE_GAP)
        if not throttled:
            queue.admitted_meter.add(busy)
            queue.second_meter.add(busy)
        observation = Observation(
            status=status_code,
            admitted_rate=queue.admitted_meter.rate(busy),
            admitted_second=queue.second_meter.rate(busy),
            scale=float(store.live) if store.shared else 1.0,
            epoch_age=busy - queue.epoch_start,
            hint=None if hints.limit is None else _named_rate(hints.limit, queue.max_reset),
            hints=hints,
            fresh=fresh,
            sent=queue.sent if self._local is None else self._local.sent(grant.bucket),
            answered=queue.answered,
            admitted=queue.answered - queue.refused,
            backlogged=queue.backlogged,
            streak=queue.streak if throttled else 0,
            refused_for=now - queue.refused_since if throttled and queue.streak else 0.0,
            paused=queue.pauses.share(busy),
        )
        queue.make_up_lost(busy, control)
        decision = self._decide(queue, control, observation, busy)
        if throttled:  # the busy time the bucket stands still for, counted once
            calm = busy + decision.pause
            if calm > queue.calm_from:
                queue.pauses.add(max(busy, queue.calm_from), calm)
                queue.calm_from = calm
        new = decision.control
        tokens = decision.tokens
        if not store.synchronous:
            # Through Redis, a round trip per answer would cost more than it teaches: only
            # what changes the schedule for everyone (a new epoch or phase, a rate moved by
            # more than PUBLISH_STEP, a pause, an empty counter) is written.
            if tokens is not None and tokens >= 1:
                tokens = None
            if not decision.pause and tokens is None and not _significant(start, new):
                return
        if new is start and not decision.pause and tokens is None:
            return
        old_schedule = queue.schedule
        ours = True  # the step written is this process's own (not another's it lost to)
        for attempt in range(_CAS_TRIES):
            replaced = True
            with contextlib.suppress(Exception):  # invariant 5: the store's failure is not ours
                replaced = await store.update(
                    grant.bucket,
                    new,
                    version,
                    schedule=queue.schedule_for(new),
                    pause=decision.pause if attempt == 0 else 0.0,
                    tokens=tokens,
                )
            if replaced:
                queue.reschedule(new)
                break
            # Lost to another process's write: decided again on what that process wrote,
            # unless that moved the epoch on (a 429 is then an echo of the overload it
            # answered). A lost decrease would leave the fleet's rate where it overloaded
            # the server; a lost rise, this process pacing at a rate nobody else knows
            # while the fleet's stays where it was (a slow start of eight processes kept
            # one rise in eight and doubled a second late).
            control, version, _ = store.snapshot(grant.bucket)
            if grant.epoch == control.epoch:
                decision = self._decide(queue, control, observation, busy)
                new = decision.control
                if new.epoch != control.epoch or _significant(control, new):
                    continue  # write what was decided again
            # The other write moved the epoch on, or went as far as this step would.
            new = control
            queue.reschedule(new)
            ours = False
            break
        else:
            queue.reschedule(new)  # lost every time: this process paces as it decided
        if ours and _turned(start, new, decision.pause) and logger.isEnabledFor(logging.DEBUG):
            _log_step(grant.bucket, status_code, start, new, decision.pause)
        if new.epoch != queue.epoch:
            # The epoch is measured from the end of its pause: waiting out a Retry-After
            # is not sending at the new rate. The busy clock counts no more of a pause
            # than of any gap between events: started a whole 1-s pause ahead of it, an
            # epoch read 0.75 s younger than it was, and its 429s did not lower the rate.
            queue.new_epoch(new.epoch, busy + min(decision.pause, queue.schedule.busy_cap))
        if decision.pause > 0 or (
            queue.schedule.rate is not None
            and old_schedule.rate is not None
            and queue.schedule.rate < old_schedule.rate
        ):
            queue._invalidate()

    def _decide(
        self, queue: _Queue, control: Control, observation: Observation, busy: float
    ) -> _control.Decision:
        """One step of the learning policy for ``queue``, held to its ceiling."""
        ceiling = queue.ceiling()
        if ceiling is not None and (control.rate or 0.0) > ceiling * _control.PACING:
            control = attrs.evolve(control, rate=ceiling * _control.PACING)
        return _control.step(
            control,
            observation,
            busy,
            ceiling=ceiling,
            adaptive=self.limits.adaptive,
            max_pause=self._max_pause,
            jitter=0.5 + self._random() if observation.throttled else 1.0,
        )

    @property
    def state(self) -> RateLimiterState:
        """A frozen snapshot of both buckets."""
        return RateLimiterState(
            limits=self.limits,
            read=self._bucket_state(self._queues["read"]),
            write=self._bucket_state(self._queues["write"]),
        )

    def _bucket_state(self, queue: _Queue) -> BucketState:
        now = self._clock()
        store = self._store
        control, _, paused_until = store.snapshot(queue.name)
        paused = paused_until > now
        schedule = queue.schedule
        if schedule.rate is None:
            tokens = math.inf
        elif isinstance(store, LocalStore):
            tokens = store.tokens(queue.name, schedule)
        else:
            tokens = 0.0
        return BucketState(
            name=queue.name,
            rate=control.rate,
            limit=queue.ceiling(),
            learning=control.phase == "slow",
            capacity=queue.capacity,
            tokens=tokens,
            paused_until=paused_until if paused else None,
            paused_for=paused_until - now if paused else 0.0,
            waiting=queue.waiting,
            granted=queue.granted,
            throttles=queue.throttles,
            waited=queue.waited,
            server_limit=queue.server_limit,
            server_remaining=queue.server_remaining,
            shared=store.shared,
        )

    def close(self, error: Callable[[], BaseException]) -> None:
        """Fail every request waiting for its turn, and every later one, with ``error()``."""
        for queue in self._queues.values():
            queue.close(error)

    async def aclose(self) -> None:
        """Stop reserving ahead and release the store's connections."""
        for queue in self._queues.values():
            await queue.stop()
        await self._store.aclose()


def _named_rate(limit: float, window: float) -> float:
    """The rate a limit the server named allows, for the learning to pace at PACING of it.

    One request of each window is left spare, if that is more than PACING leaves: a
    sliding log of 25 per second refuses the 26th in any second, and 1 % of 25 is not a
    margin against a request that arrives early.
    """
    spare = min(limit, (limit - 1) / _control.PACING) if limit > 1 else limit
    return spare / window


def _log_step(bucket: BucketName, status: int, old: Control, new: Control, pause: float) -> None:
    """Log a learning step that turned, at DEBUG."""
    logger.debug(
        "%s bucket, after a %d: %s -> %s/s, %s -> %s, W %s/s, epoch %d, paused %.3f s",
        bucket,
        status,
        _per_second(old.rate),
        _per_second(new.rate),
        old.phase,
        new.phase,
        _per_second(new.w_max or None),
        new.epoch,
        pause,
    )


def _turned(old: Control, new: Control, pause: float) -> bool:
    """Whether a learning step turned: a decrease, a pause or a new phase (not a climb)."""
    return new.epoch != old.epoch or new.phase != old.phase or pause > 0


def _per_second(rate: float | None) -> str:
    """A rate for a log line: one decimal, or ``-`` for none."""
    return "-" if rate is None else f"{rate:.1f}"


def _significant(old: Control, new: Control) -> bool:
    """Whether a learning step is worth writing to a shared store."""
    if (old.epoch, old.phase, old.hinted) != (new.epoch, new.phase, new.hinted):
        return True
    if old.rate is None or new.rate is None:
        return old.rate != new.rate
    return abs(new.rate - old.rate) > PUBLISH_STEP * old.rate
