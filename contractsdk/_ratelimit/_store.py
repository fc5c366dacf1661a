"""Where a bucket's state lives: this process (:class:`LocalStore`) or Redis (``_redis.py``).

Both keep, per bucket, a GCRA schedule and the learning state, behind one small async
interface (:class:`Store`); the limiter above them does not know which it talks to.

GCRA (the generic cell rate algorithm, as nginx's ``limit_req`` and redis-cell) keeps one
number, the *theoretical arrival time* ``tat``: the time at which the bucket would be empty
again. With the emission interval ``T = 1/rate`` and a tolerance ``tau``, a reservation at
``now`` gets the slot ``max(now, pause end, tat - tau)`` and moves ``tat`` on by ``T``.
A reservation is a promise: the caller waits until its slot and goes, so waiters are served
in the order they reserved, across every process that shares the store, with one round
trip and no polling.

Invariants of one bucket's schedule (they hold whenever no code of this module runs):

1. Slots are handed out in reservation order and never closer than ``T`` apart once the
   tolerance is used up; at most ``1 + tau / T`` go at once.
2. After an idle spell, at most ``burst`` requests go at once, where ``burst`` is what is
   known of the server's bucket (the configured burst, or the most the server's
   ``Remaining`` has shown, else 1): ``tat >= now + tau - (burst - 1) * T`` is restored
   whenever no grant happened for ``T + LATENESS``. While requests flow, the tolerance
   absorbs the event loop's lateness instead.
3. A pause until ``u`` empties the bucket: ``tat >= u + tau``, so nothing goes before ``u``
   and no burst at ``u``.
4. The busy clock advances by the time between two events of the bucket, but by at most
   ``IDLE_GAP`` (or two intervals of the rate) at once: idle time never enters it.
5. The learning state is replaced only by a writer that read the current version
   (compare and set), so two processes that see the same 429 decrease the rate once.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from typing import Final, Protocol

import attrs

from ._control import Control
from ._limits import BucketName

__all__ = [
    "IDLE_GAP",
    "LATENESS",
    "LocalStore",
    "Meter",
    "PauseSpans",
    "Schedule",
    "Slot",
    "Store",
]

#: The longest gap between two events of a bucket that still counts as busy time.
IDLE_GAP: Final = 0.25
#: How late a grant may be and still catch up with the schedule (the event loop's timers
#: fire late by a millisecond or two, more on a loaded machine).
LATENESS: Final = 0.02
#: The busy seconds per bin of the send-rate meter (two bins are kept).
METER_BIN: Final = 0.5
#: A wait up to this long is no wait (floating-point sums of intervals).
_EPSILON: Final = 1e-9


@attrs.frozen
class Schedule:
    """How a bucket hands out slots, derived from its learning state and limits.

    Attributes:
        rate: Slots per second; None: no pacing (every reservation goes at once).
        tau: The tolerance in seconds: how far a late grant may catch up.
        burst: How many requests may go at once after an idle spell.
    """

    rate: float | None
    tau: float
    burst: float
    # Worked out once, not per reservation: the interval ``1 / rate`` (0.0 unpaced); the
    # most busy time one gap between events adds (invariant 4); how long since the last
    # grant makes the bucket idle, and where an idle bucket's tat starts from (invariant 2).
    interval: float = attrs.field(init=False, repr=False, eq=False)
    busy_cap: float = attrs.field(init=False, repr=False, eq=False)
    idle_after: float = attrs.field(init=False, repr=False, eq=False)
    refill_lead: float = attrs.field(init=False, repr=False, eq=False)

    @interval.default
    def _interval(self) -> float:
        return 1 / self.rate if self.rate else 0.0

    @busy_cap.default
    def _busy_cap(self) -> float:
        return max(IDLE_GAP, 2 * self.interval)

    @idle_after.default
    def _idle_after(self) -> float:
        return self.interval + LATENESS

    @refill_lead.default
    def _refill_lead(self) -> float:
        return self.tau - (self.burst - 1) * self.interval


def _booked(wait: float, paused: float) -> float:
    """The busy seconds of a reservation's wait: all of it but what a pause holds back."""
    return max(0.0, wait - max(0.0, paused))


class Slot:
    """A reservation: when the caller may go, and what the store knew then.

    A plain slotted class, not attrs: one is made per request, on the hot path.

    Attributes:
        wait: Seconds from the reservation until the slot.
        busy: The bucket's busy clock at the slot: at the reservation, plus the part of
            the wait that is not a pause (the schedule is booked until the slot).
        sent: Slots granted per busy second lately, by every client of the store (-1.0:
            not measured here; ask the store).
        backlogged: Reservations were queued ahead: the rate, not the demand, set the pace.
        control: The bucket's learning state at the reservation.
        version: Its version, for :meth:`Store.update`.
        interval: How far the reservation moved the schedule (``1/rate``; 0 unpaced).
        tat: The schedule's ``tat`` right after it, so that a release undoes exactly this
            reservation and nothing later (NaN: reserved in this process's fallback).
        late: Seconds the slot was already due when it was reserved: schedule time lost,
            as GCRA does not catch a late grant up (0.0 through a shared store).
    """

    __slots__ = (
        "backlogged",
        "busy",
        "control",
        "interval",
        "late",
        "sent",
        "tat",
        "version",
        "wait",
    )

    def __init__(
        self,
        wait: float,
        busy: float,
        sent: float,
        backlogged: bool,
        control: Control,
        version: int,
        interval: float = 0.0,
        tat: float = 0.0,
        late: float = 0.0,
    ) -> None:
        self.wait = wait
        self.busy = busy
        self.sent = sent
        self.backlogged = backlogged
        self.control = control
        self.version = version
        self.interval = interval
        self.tat = tat
        self.late = late

    def __repr__(self) -> str:
        return f"Slot(wait={self.wait!r}, busy={self.busy!r}, version={self.version!r})"


class Store(Protocol):
    """What the limiter asks of the place that keeps its buckets."""

    #: The longest pause the store may hold a bucket for, whatever it reads from state
    #: others share (the limiter sets its ``max_pause``).
    max_pause: float

    @property
    def shared(self) -> bool:
        """Whether other processes share the buckets now (through Redis)."""
        ...

    @property
    def live(self) -> int:
        """How many clients used the buckets lately (1 for this process alone)."""
        ...

    @property
    def synchronous(self) -> bool:
        """Whether :meth:`reserve_many` completes without suspending.

        Then the limiter tries it before queueing, for free.
        """
        ...

    def snapshot(self, bucket: BucketName) -> tuple[Control, int, float]:
        """Return the last known learning state, its version and the pause end (monotonic)."""
        ...

    async def reserve_many(
        self, bucket: BucketName, schedule: Schedule, count: int, *, max_wait: float | None
    ) -> list[Slot] | float:
        """Reserve up to ``count`` slots one after another, in one round trip.

        ``max_wait`` bounds the first: past it, nothing is reserved and the wait (a float)
        comes back. The others follow it at the schedule's pace. Fewer than ``count`` may
        come back (never none).
        """
        ...

    async def release(self, bucket: BucketName, slot: Slot, count: int = 1) -> None:
        """Give reserved slots back (their holders gave up, or reserve again).

        ``slot`` is the last of ``count`` consecutive slots of one reservation. Undone only
        if no reservation came after them; otherwise they are lost (a request's worth of
        rate each). Either way they no longer count as sent.
        """
        ...

    async def update(
        self,
        bucket: BucketName,
        control: Control,
        version: int,
        *,
        schedule: Schedule,
        pause: float,
        tokens: float | None,
    ) -> bool:
        """Replace the learning state if it is still at ``version``; return whether it did.

        A pause and a cap on the tokens the bucket holds apply in any case.
        """
        ...

    def set_control(self, bucket: BucketName, control: Control) -> None:
        """Replace the learning state: the limits changed (shared: for every process)."""
        ...

    async def aclose(self) -> None:
        """Release connections and stop background work."""
        ...


class Meter:
    """Events per busy second over the last one to two bins of ``METER_BIN`` busy seconds.

    Two counters, so constant memory and time; busy time, so idle time never dilutes it.
    """

    __slots__ = ("bin", "current", "previous", "start", "until")

    def __init__(self) -> None:
        self.bin = 0
        self.start, self.until = 0.0, METER_BIN  # the busy times the current bin spans
        self.current = 0  # events in the current bin
        self.previous = 0  # events in the bin before it

    def add(self, busy: float) -> None:
        """Count one event at busy time ``busy``."""
        if not self.start <= busy < self.until:  # every grant's path: _roll only when it rolls
            self._roll(busy)
        self.current += 1

    def remove(self) -> None:
        """Uncount the last event (a reservation given back)."""
        self.current = max(0, self.current - 1)

    def rate(self, busy: float) -> float:
        """Events per busy second up to ``busy``."""
        self._roll(busy)
        into = busy - self.start
        return (self.current + self.previous) / (METER_BIN + max(into, 0.0))

    def _roll(self, busy: float) -> None:
        index = math.floor(busy / METER_BIN)
        if index != self.bin:
            self.previous = self.current if index == self.bin + 1 else 0
            self.current = 0
            self.bin = index
            self.start, self.until = index * METER_BIN, (index + 1) * METER_BIN


class RingMeter:
    """Events per busy second over the last ``bins - 1`` bins' span of ``width`` each.

    Like :class:`Meter` with finer bins, for a span of exactly a second: two half-second
    bins span 0.5 to 1 busy second, and a server that admits its quota of a second all at
    once (a fixed window) reads up to twice its rate over half of one, and down to 0.91 of
    it over 1.1 s. The oldest bin counts for the share of it still inside the span (its
    events taken as spread evenly over it).

    Args:
        width: Busy seconds per bin.
        bins: Bins kept, the current one included.
    """

    __slots__ = ("bin", "counts", "start", "until", "width")

    def __init__(self, width: float, bins: int) -> None:
        self.width = width
        self.bin = 0
        self.start, self.until = 0.0, width  # the busy times the current bin spans
        self.counts = [0.0] * bins  # events per bin; the current bin is counts[bin % bins]

    def add(self, busy: float, amount: float = 1.0) -> None:
        """Count ``amount`` (one event, or seconds of something) at busy time ``busy``."""
        if not self.start <= busy < self.until:
            self._roll(busy)
        self.counts[self.bin % len(self.counts)] += amount

    def rate(self, busy: float) -> float:
        """Events per busy second up to ``busy``."""
        self._roll(busy)
        kept = len(self.counts)
        into = min(max(busy - self.start, 0.0), self.width) / self.width
        oldest = self.counts[(self.bin + 1) % kept]
        return (sum(self.counts) - oldest * into) / ((kept - 1) * self.width)

    def _roll(self, busy: float) -> None:
        index = math.floor(busy / self.width)
        if index == self.bin:
            return
        kept = len(self.counts)
        if index < self.bin or index - self.bin >= kept:  # all gone (or the clock went back)
            self.counts = [0.0] * kept
        else:
            for passed in range(self.bin + 1, index + 1):
                self.counts[passed % kept] = 0.0
        self.bin = index
        self.start, self.until = index * self.width, (index + 1) * self.width


class PauseSpans:
    """The busy time a bucket stood paused after 429s, as spans of busy time.

    What counts of a pause over a span is the part of it that has passed and lies in
    the span: that is what held back the requests the span's sent rate misses. (Counted
    whole when it began, a pause left the span while its tail was still in it.)
    """

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: collections.deque[tuple[float, float]] = collections.deque(maxlen=16)

    def add(self, start: float, end: float) -> None:
        """Record a pause over busy times ``[start, end)`` (end may be ahead of now)."""
        if end <= start:
            return
        if self.spans and start <= self.spans[-1][1]:
            first, last = self.spans.pop()
            start, end = min(first, start), max(last, end)
        self.spans.append((start, end))

    def share(self, busy: float, span: float = 1.0) -> float:
        """The share of the ``span`` busy seconds up to ``busy`` that was paused."""
        since = busy - span
        spans = self.spans
        while spans and spans[0][1] <= since:  # over before the span began
            spans.popleft()
        if not spans:
            return 0.0
        paused = sum(max(0.0, min(end, busy) - max(start, since)) for start, end in spans)
        return min(1.0, paused / span)


class _Bucket:
    """One bucket's schedule and learning state, in memory."""

    __slots__ = (
        "backlogged",
        "busy",
        "control",
        "interval",
        "last_grant",
        "meter",
        "paused_until",
        "schedule",
        "seen",
        "tat",
        "tau",
        "version",
    )

    def __init__(self, control: Control, now: float) -> None:
        # A new bucket holds one request (tat = now, then moved by the tolerance): this
        # process cannot know whether others, or an earlier run, left the server's bucket
        # full (aiolimiter#200). A burst is earned by idling from here on.
        self.tat = now
        self.tau = 0.0  # the tolerance tat was last moved with
        self.interval = 0.0  # the interval tat was last moved with
        self.schedule: Schedule | None = None  # the schedule it was last moved by
        self.paused_until = -math.inf
        self.last_grant = now
        self.busy = 0.0
        self.seen = now
        self.meter = Meter()  # grants per busy second
        self.control = control
        self.version = 0
        self.backlogged = False  # the last reservation found others reserved ahead

    def take(self, schedule: Schedule, now: float, most: float) -> float:
        """Reserve the next slot and return its wait; a wait above ``most`` is not reserved.

        The GCRA step of every reservation (the module's invariants). What else a
        :class:`Slot` holds is read off the bucket after it: ``busy``, ``backlogged``,
        ``control``, ``version``, ``tat``.
        """
        # Every request's path: conditionals where max() and min() would be, which they
        # equal exactly (NaN included) at a third of the cost.
        busy = self.busy
        gap = now - self.seen
        if gap > 0:  # LocalStore.advance(), inlined
            cap = schedule.busy_cap
            self.busy = busy = busy + (cap if cap < gap else gap)
            self.seen = now
        paused_until = self.paused_until
        start = now if now > paused_until else paused_until
        interval = schedule.interval
        if interval:
            if schedule is not self.schedule:  # a new rate or tolerance since the last
                _rebase(self, schedule, interval, now)
                self.schedule = schedule
            tat = self.tat
            if now - self.last_grant > schedule.idle_after:  # idle: refill only to the burst
                refilled = now + schedule.refill_lead
                if refilled > tat:
                    tat = refilled
            earliest = tat - schedule.tau
            self.backlogged = earliest > now
            slot = earliest if earliest > start else start
            wait = slot - now
            if wait > most:
                return wait
            self.tat = (slot if slot > tat else tat) + interval
        else:  # unpaced: only a pause holds requests back
            wait = start - now
            self.backlogged = False
            if wait > most:
                return wait
        self.last_grant = now + wait
        meter = self.meter  # Meter.add(), inlined (the busy clock here never goes back)
        if busy >= meter.until:
            meter._roll(busy)
        meter.current += 1
        return wait


def _adopt(state: _Bucket, schedule: Schedule, now: float) -> None:
    """Carry the bucket over to ``schedule`` before ``tat`` is written in its terms.

    A pause or a token cap sets ``tat`` with the new schedule's tolerance and interval. Left
    on the old one, the next reservation rebased that ``tat`` as a debt of old intervals:
    a limit of 1 per 10 s named by the headers of one answer, after a learnt 20/s, held the
    next request for 34 minutes (scaled by 200, and shifted by the old tolerance).
    """
    if schedule is not state.schedule:
        _rebase(state, schedule, schedule.interval, now)
        state.schedule = schedule


def _rebase(state: _Bucket, schedule: Schedule, interval: float, now: float) -> None:
    """Carry the schedule over to a new rate or tolerance without moving what is owed.

    ``tat - now`` (after any pause) is a debt of slots at the old interval: at a new rate
    it is the same number of slots at the new interval (a waiter held back by a slow rate
    goes as soon as the new rate allows). A wider tolerance must not turn the lead into a
    burst, nor a narrower one into a gap.
    """
    if state.interval and interval != state.interval:
        base = max(now, state.paused_until)  # a pause is time, not slots: never rescaled
        debt = state.tat - state.tau - base
        if debt > 0:
            state.tat = base + state.tau + debt * interval / state.interval
    state.interval = interval
    if schedule.tau != state.tau:
        state.tat += schedule.tau - state.tau
        state.tau = schedule.tau


class LocalStore:
    """Buckets kept in this process: exact, synchronous underneath, shared by its tasks.

    Args:
        clock: Monotonic seconds.
        initial: The learning state a bucket starts with.
    """

    shared = False
    synchronous = True
    live = 1
    max_pause = math.inf  # every pause here comes from this limiter, already cut to its own

    def __init__(self, clock: Callable[[], float], initial: dict[BucketName, Control]) -> None:
        self._clock = clock
        now = self._clock()
        self._buckets = {name: _Bucket(control, now) for name, control in initial.items()}

    def __repr__(self) -> str:
        return "LocalStore()"

    # -- synchronous core, also used by the Redis store's fallback ----------------------

    def advance(self, bucket: BucketName, rate: float | None, now: float) -> float:
        """Move the busy clock to ``now`` and return it (invariant 4)."""
        state = self._buckets[bucket]
        gap = now - state.seen
        if gap > 0:
            cap = max(IDLE_GAP, 2 / rate) if rate else IDLE_GAP
            state.busy += min(gap, cap)
            state.seen = now
        return state.busy

    def take(
        self, bucket: BucketName, schedule: Schedule, now: float, *, max_wait: float | None
    ) -> Slot | float:
        """Reserve one slot synchronously (see :meth:`Store.reserve_many`)."""
        state = self._buckets[bucket]
        most = math.inf if max_wait is None else max_wait + _EPSILON
        due = state.tat - state.tau  # when the next slot fell due, as of the last grant
        wait = state.take(schedule, now, most)
        if wait > most:
            return wait
        late = now - due if wait <= 0 and schedule.interval and now > due else 0.0
        return Slot(
            wait,
            state.busy + _booked(wait, state.paused_until - now),
            -1.0,
            state.backlogged,
            state.control,
            state.version,
            schedule.interval,
            state.tat,
            late,
        )

    def bucket(self, bucket: BucketName) -> _Bucket:
        """The bucket's state itself, for a queue's fast path (:meth:`_Bucket.take`)."""
        return self._buckets[bucket]

    def sent(self, bucket: BucketName) -> float:
        """Grants per busy second lately."""
        state = self._buckets[bucket]
        return state.meter.rate(state.busy)

    def give_back(self, bucket: BucketName, slot: Slot, count: int = 1) -> None:
        """Undo reservations if nothing moved the schedule since (see :meth:`Store.release`)."""
        state = self._buckets[bucket]
        for _ in range(count):
            state.meter.remove()
        if slot.interval and state.tat == slot.tat:
            state.tat -= count * slot.interval

    def apply(
        self,
        bucket: BucketName,
        control: Control,
        version: int,
        *,
        schedule: Schedule,
        pause: float,
        tokens: float | None,
        now: float,
    ) -> bool:
        """Update synchronously (see :meth:`Store.update`)."""
        state = self._buckets[bucket]
        replaced = state.version == version
        if replaced and control != state.control:
            state.control = control
            state.version += 1
        rate = schedule.rate
        if pause > 0 and now + pause > state.paused_until:
            if rate is not None:
                _adopt(state, schedule, now)
            state.paused_until = now + pause
            if rate is not None:
                state.tat = max(state.tat, now + pause + schedule.tau)
        if tokens is not None:
            self.cap_tokens(bucket, schedule, tokens, now)
        return replaced

    def cap_tokens(self, bucket: BucketName, schedule: Schedule, tokens: float, now: float) -> None:
        """Let at most ``tokens`` requests go at once from now on (one interval apart at 0)."""
        rate = schedule.rate
        if rate is not None:
            state = self._buckets[bucket]
            _adopt(state, schedule, now)
            capped = now + schedule.tau - (tokens - 1) / rate
            if capped > state.tat:
                state.tat = capped

    def paused_until(self, bucket: BucketName) -> float:
        """The end of the bucket's pause (monotonic), or -inf."""
        return self._buckets[bucket].paused_until

    def projected_wait(self, bucket: BucketName, schedule: Schedule, ahead: int) -> float:
        """Seconds a newcomer would wait behind ``ahead`` queued waiters.

        The head of a queue holds its reservation already, so the newcomer's slot is the
        next free one plus an interval for every other waiter ahead.
        """
        state = self._buckets[bucket]
        now = self._clock()
        start = max(now, state.paused_until)
        if schedule.rate is None:
            return start - now
        interval = 1 / schedule.rate
        tat = state.tat
        if now - state.last_grant > interval + LATENESS and not ahead:
            tat = max(tat, now + schedule.tau - (schedule.burst - 1) * interval)
        return max(start, tat - schedule.tau + max(0, ahead - 1) * interval) - now

    def tokens(self, bucket: BucketName, schedule: Schedule) -> float:
        """Requests that could go at once right now."""
        state = self._buckets[bucket]
        now = self._clock()
        if schedule.rate is None:
            return math.inf
        if now < state.paused_until:
            return 0.0
        tat = state.tat
        if now - state.last_grant > 1 / schedule.rate + LATENESS:
            tat = max(tat, now + schedule.tau - (schedule.burst - 1) / schedule.rate)
        # Rounded: tat is a sum of floating-point intervals, and 2.9999999999 tokens is 3.
        return max(0.0, round((now + schedule.tau - tat) * schedule.rate + 1, 9))

    def set_control(self, bucket: BucketName, control: Control) -> None:
        """Replace the learning state unconditionally (the limits changed)."""
        state = self._buckets[bucket]
        state.control = control
        state.version += 1

    # -- the Store interface ------------------------------------------------------------

    def snapshot(self, bucket: BucketName) -> tuple[Control, int, float]:
        """Return the learning state, its version and the pause end."""
        state = self._buckets[bucket]
        return state.control, state.version, state.paused_until

    async def reserve_many(
        self, bucket: BucketName, schedule: Schedule, count: int, *, max_wait: float | None
    ) -> list[Slot] | float:
        """Reserve one slot (never suspends: a queue here needs no batch)."""
        slot = self.take(bucket, schedule, self._clock(), max_wait=max_wait)
        return slot if isinstance(slot, float) else [slot]

    async def release(self, bucket: BucketName, slot: Slot, count: int = 1) -> None:
        """Give reserved slots back (never suspends)."""
        self.give_back(bucket, slot, count)

    async def update(
        self,
        bucket: BucketName,
        control: Control,
        version: int,
        *,
        schedule: Schedule,
        pause: float,
        tokens: float | None,
    ) -> bool:
        """Compare-and-set the learning state; apply the pause and token cap (never suspends)."""
        return self.apply(
            bucket,
            control,
            version,
            schedule=schedule,
            pause=pause,
            tokens=tokens,
            now=self._clock(),
        )

    async def aclose(self) -> None:
        """Nothing to release."""
