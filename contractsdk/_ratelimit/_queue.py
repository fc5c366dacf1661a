"""One bucket's queue: FIFO waiters in front of the store, and the grants it hands out.

The head of the queue holds a reservation in the store and sleeps until its slot; every
other waiter awaits a future of its own. What the limiter learns from answers reaches the
queue as a new schedule (:meth:`_Queue.reschedule`). The invariants are listed in
``_limiter.py``'s docstring.

Through a store a round trip away (Redis), one reservation at a time would cap a client at
one slot per round trip: 90 % of 100/s at 11 ms. While its round trips are what hold it
back (a slot of its own came back due within one, with waiters behind the head), the
queue reserves ahead for those waiters (*pipelined*): two round trips' worth of its share
of the rate in one call, and the next ones while the head sleeps. When a batch comes back
a round trip or more after the last slot held, others took the slots between: the
schedule is ahead of this process, and it goes back to one at a time (slots reserved
ahead then only sit further from the answers that move the rate). The slots reserved
ahead belong to the queue, not to a waiter: each head takes the first; a waiter that
leaves takes none with it; a pause or a slower rate voids them all, and they are given
back; left over when nobody waits, they are given back too.

In a run of 429s (``PROBE_STREAK`` in a row), the next grant is a *probe*: the queue grants
nothing more until its answer has been taken in (or ``PROBE_WAIT`` has passed, or its
request ended without one). A server that refuses everything for a while (a window until it
ends) then refuses one request per pause, not every request that one round trip of the rate
puts on the way: a fixed window at 1,000/s, 10 ms away, refused a dozen after each pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from contractsdk._exceptions import RateLimiterTimeoutError

from . import _control
from ._control import Control
from ._limits import BucketName
from ._store import LATENESS, Meter, PauseSpans, RingMeter, Schedule, Slot, _Bucket

if TYPE_CHECKING:
    from ._limiter import RateLimiter


__all__ = ["IDLE_SPREAD", "Grant"]

_EPSILON = 1e-9
#: What a head woken early by its timer adds to the rest of its wait: uvloop's timers count
#: whole milliseconds.
_TIMER_SLACK = 0.001
#: After an idle spell, a burst stops this many seconds' worth of requests (and one more)
#: short of the server's known burst.
IDLE_SPREAD = 0.01
#: A rate rise this large wakes the sleeping head to reserve again sooner.
_KICK_RATIO = 1.05
#: A shared queue reserves ahead, when behind, once this many slots of its share of the
#: rate fall due during one round trip.
PIPELINE_FROM = 0.05
#: The most slots one reservation takes ahead.
MAX_BATCH = 128
#: 429s in a row after which the next grant goes alone, a probe (the module's header). A
#: lone 429 (a probe of the learning, a server paced to the millisecond) is the usual case,
#: and a sliding log refuses every other request for a while after an overload: holding
#: the queue a round trip after each of those cost throughput (in the simulator, after
#: one 429 the sliding log's steady half at 1,000/s fell from 0.98 to 0.94 R; after two,
#: 50 ms away, from 0.950 to 0.947 R at 100/s). A window refusing until it ends gets to
#: three within its first few pauses.
PROBE_STREAK = 3
#: The longest the queue waits for a probe's answer: a request that hangs holds no one
#: for longer.
PROBE_WAIT = 1.0
#: Through a shared store, the weights of each new gap between this process's turns in the
#: moving average a newcomer's wait is projected by (:meth:`_Queue.shared_wait`): a longer
#: gap moves it slowly (a projection too long fails calls that would have made it), a
#: shorter one fast (the others went quiet).
GAP_RISE = 0.25
GAP_FALL = 0.5


class Grant:
    """A request's permission to go, handed back to :meth:`RateLimiter.record`.

    A plain slotted class, not attrs, and never changed once made: the requests a bucket
    grants at once, in one epoch and between the same two overloads, share one grant
    (nothing tells them apart), so the hot path makes none.

    Attributes:
        bucket: ``"read"`` or ``"write"``.
        epoch: The learning epoch it was granted in (a 429 for it is fresh when the
            bucket is still in this epoch).
        waited: Seconds it spent waiting.
        overloads: The 429s this process's bucket had counted as fresh (not echoes) when
            it was granted. A 429 for a request granted before the last 429 was answered
            is an echo of that one, not one more in a row; -1 (a grant made by hand)
            echoes.
    """

    __slots__ = ("bucket", "epoch", "overloads", "waited")

    def __init__(self, bucket: BucketName, epoch: int, waited: float, overloads: int = -1) -> None:
        self.bucket: BucketName = bucket
        self.epoch = epoch
        self.waited = waited
        self.overloads = overloads

    def __repr__(self) -> str:
        return f"Grant({self.bucket!r}, epoch={self.epoch}, waited={self.waited:.3f})"


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


class _Queue:
    """One bucket: its waiters, what this process measured, and its view of the limits."""

    def __init__(self, name: BucketName, limiter: RateLimiter) -> None:
        self.name: BucketName = name
        self._limiter = limiter
        self._queue: deque[_Waiter] = deque()
        self._deadlines = 0  # waiters in the queue with a deadline
        self._wake: asyncio.Future[None] | None = None
        self._kicked = False  # the head's last nap ended by _kick, not by its timer
        # Set by close(): what every waiter, and every later arrival, raises.
        self._closed: Callable[[], BaseException] | None = None
        # The head was woken by a faster rate, and nothing since invalidated its slot.
        self._risen = False
        # What this process measured in the current epoch (for the admitted share).
        self.epoch = 0
        self.answered = 0
        self.refused = 0  # the answers that were 429 (the others were admitted)
        self.epoch_start = 0.0  # busy time this process saw the epoch begin
        # The window taken for a limit named without one: the longest counter reset seen
        # lately (RateLimiter._reset_seen), at least a second. The reset instant (clock)
        # the reading that last raised it named; the longest reset read in the current
        # span of readings, and when that span ends.
        self.max_reset = 1.0
        self.reset_at = -math.inf
        self.reset_longest = 0.0
        self.reset_span_end = -math.inf
        self.admitted_meter = Meter()  # answers that were not 429, per busy second
        # The same over exactly the last busy second: in a window of that span, every
        # kind of server that keeps refusing admits its limit.
        self.second_meter = RingMeter(0.1, 11)
        # Schedule seconds lost per busy second: slots that fell due while a waiter was
        # queued, and were reserved late (the event loop ran the waiter late).
        self.lost_meter = RingMeter(0.1, 11)
        # What a learnt rate is multiplied by in the schedule, for the share of it the
        # pacer loses to a late event loop.
        self.boost = 1.0
        # Busy time paused after 429s: the schedule stood still.
        self.pauses = PauseSpans()
        self.busy = 0.0
        self.busy_at = 0.0  # the local clock when `busy` was read from the store
        self.sent = 0.0
        self.backlogged = False
        self.server_rate: float | None = None
        self.server_burst = 1.0
        self.server_limit: float | None = None
        self.server_remaining: float | None = None
        self.granted = 0
        self.throttles = 0
        self.streak = 0  # 429s in a row (echoes not counted: see Grant.overloads)
        self.refused_since = 0.0  # when the first of them was answered
        self.calm_from = -math.inf  # the busy time the last 429's pause ends
        self.overloads = 0  # fresh 429s counted so far (Grant.overloads)
        self.waited = 0.0
        self.schedule = Schedule(rate=None, tau=0.0, burst=1.0)
        self.schedule_phase = "off"  # the phase of the learning state the schedule is from
        self._clock = limiter._clock
        # The bucket in this process's memory, for the fast path (None through a shared
        # store; set by the limiter once its store exists), and the version of its
        # learning state the schedule follows.
        self._bucket: _Bucket | None = None
        self._version = 0
        # The grant every request granted at once shares until the epoch or the count
        # of overloads moves (None: make it anew).
        self._shared_grant: Grant | None = None
        # Pipelined (the module's header): the slots reserved ahead, each with the local
        # time it falls due and the generation it was reserved in; the reservation making
        # more; and the round trip to the store, a moving average (0.0: not measured yet).
        self._held: deque[tuple[Slot, float, int]] = deque()
        self._generation = 0  # moved by every pause and slower rate: older slots are void
        self._refill: asyncio.Task[None] | None = None
        self._returning: set[asyncio.Task[None]] = set()  # slots left over, being given back
        # Reservations a waiter gave up on at its deadline, still out (their slots go back).
        self._late: set[asyncio.Future[list[Slot] | float]] = set()
        self._trips = 0
        self.round_trip = 0.0
        self._behind = False  # the last reservation found the shared schedule behind us
        # The head's slot and when it falls due; what the last batch's slots were moved
        # on by (see _placed).
        self._head: tuple[Slot, float] | None = None
        # Shared: the intervals between this process's turns while waiters queued (others
        # take theirs between), a moving average from 1, and when it was last measured; the
        # last head's slot that left waiters behind it (when it fell due, its generation).
        self._turns = 1.0
        self._turns_at = -math.inf
        self._last_turn: tuple[float, int] | None = None
        self._shift = 0.0
        # A probe out (the module's header), with the count of overloads it was granted
        # at (its grant carries it); and what the head waiting for its answer awaits.
        self._probing = False
        self._probe_overloads = 0
        self._probe_answer: asyncio.Future[None] | None = None

    # -- the schedule the store hands slots out by ---------------------------------------

    def schedule_for(self, control: Control) -> Schedule:
        """The schedule of a learning state, given what is known of the server."""
        rate = control.rate
        burst = self.capacity
        if rate is None:
            return Schedule(rate=None, tau=0.0, burst=burst)
        if control.phase == "cubic" and self.server_limit is None and self.ceiling() is None:
            # A learnt rate is what should reach the server: its schedule makes up what
            # the event loop's late timers lose. Not a limit told or named by the
            # server's headers: past it lie a window's 429s, and a burst-1 server at it
            # would meet intervals under 1/R.
            rate *= self.boost
        # The tolerance: the known burst, plus what pacing at PACING of the limit leaves
        # spare per interval. More (to catch up with a late event loop) would meet a
        # strict server (burst 1: nginx's limit_req without burst) with 429s.
        tau = (burst - 1 + (1 - _control.PACING)) / rate
        # After an idle spell a burst of exactly B would empty the server's bucket, and the
        # next request, one interval later, would meet it with nothing to spare: the burst
        # itself queues in this event loop and on the way, so its first request reaches the
        # server late (7 ms for 20 requests, measured) and the server's refill starts late.
        # A request plus IDLE_SPREAD seconds' worth of margin absorbs that.
        at_once = max(1.0, burst - 1.0 - rate * IDLE_SPREAD)
        return Schedule(rate=rate, tau=tau, burst=at_once)

    def make_up_lost(self, busy: float, control: Control) -> None:
        """Set the boost from the schedule time lost over the last busy second.

        1 / (1 - lost), up to ``MAX_SHORTFALL``; moved by more than 1 %, it reschedules.
        A shared store reports no lateness: its boost stays 1.
        """
        if self._bucket is None:
            return
        lost = min(self.lost_meter.rate(busy), 0.5)
        boost = min(1 / (1 - lost), _control.MAX_SHORTFALL)
        if abs(boost - self.boost) > 0.01 * self.boost:
            self.boost = boost
            self.reschedule(control)

    def reschedule(self, control: Control) -> None:
        """Take on the schedule of a learning state; a slower one invalidates reservations."""
        old = self.schedule.rate
        self.schedule_phase = control.phase
        self.schedule = self.schedule_for(control)
        rate = self.schedule.rate
        if rate is None:
            return
        if old is not None and rate < old:
            self._invalidate()
        elif old is None or rate > old * _KICK_RATIO:
            self._risen = True
            self._kick()

    @property
    def busy_clock(self) -> float:
        """The bucket's busy clock: as of the last grant, or now in this process's store."""
        return self.busy if self._bucket is None else self._bucket.busy

    @property
    def capacity(self) -> float:
        """The server's known burst: the configured one, or the most its headers showed."""
        return float(self._limiter.limits.burst or self.server_burst)

    def ceiling(self) -> float | None:
        """The known limit: the configured rate or the server's declared one, the lower."""
        configured = self._limiter.limits.rate(self.name)
        server = self.server_rate
        if configured is None or server is None:
            return server if configured is None else configured
        return min(configured, server)

    # -- waiting -----------------------------------------------------------------------

    def try_now(self) -> Grant | None:
        """Grant at once, without suspending, if nobody waits and a slot is free now.

        Every request's path under the limit: one reservation on the bucket in this
        process's memory and a few counts, nothing awaited, no slot object.
        """
        bucket = self._bucket
        # A shared store, others waiting, or a probe out.
        if bucket is None or self._queue or self._probing:
            return None
        if bucket.take(self.schedule, self._clock(), _EPSILON) > _EPSILON:
            return None
        self.granted += 1
        self.backlogged = bucket.backlogged
        if self.streak >= PROBE_STREAK:
            self._send_probe()
        if bucket.version != self._version:  # the learning state moved since: catch up
            self._follow(bucket.control, bucket.busy, bucket.version)
        return self._shared_grant or self._share_grant()

    def _share_grant(self) -> Grant:
        grant = self._shared_grant = Grant(self.name, self.epoch, 0.0, self.overloads)
        return grant

    def new_epoch(self, epoch: int, start: float) -> None:
        """Enter learning epoch ``epoch``, which began at busy time ``start``."""
        self.epoch = epoch
        self.answered = self.refused = 0
        self.epoch_start = start
        self._shared_grant = None

    def overloaded(self, grant: Grant) -> None:
        """Count a 429 for ``grant``: one more in a row, unless it echoes the last one."""
        self.throttles += 1
        if grant.overloads == self.overloads:  # granted after the last 429 was answered
            if not self.streak:
                self.refused_since = self._clock()
            self.streak += 1
            self.overloads += 1  # every grant out now answers an overload already counted
            self._shared_grant = None

    async def acquire(self, timeout: float | None) -> Grant:
        grant = self.try_now()
        if grant is not None:
            return grant
        if self._closed is not None:
            raise self._closed()
        limiter = self._limiter
        now = limiter._clock()
        waiter = _Waiter(now, None if timeout is None else now + timeout)
        if timeout is not None:
            wait = limiter._projected_wait(self, len(self._queue))
            if wait > timeout + _EPSILON:
                raise self._timeout_error(wait, timeout)
        self._queue.append(waiter)
        if waiter.deadline is not None:
            self._deadlines += 1
        if self._wake is not None:  # behind a head that holds its slot
            self._reserve_ahead()
        try:
            if len(self._queue) > 1:
                waiter.future = asyncio.get_running_loop().create_future()
                await waiter.future
            slot = await self._reserve_and_sleep(waiter)
        except BaseException:
            self._leave(waiter)
            raise
        self._pop_head()
        if self._held and not self._queue:  # waiters left before their turn: nobody takes these
            self._return_held()
        waited = limiter._clock() - waiter.arrived
        self.waited += waited
        return self._grant(slot, waited)

    async def _reserve_and_sleep(self, waiter: _Waiter) -> Slot:
        """As the head: take a slot and sleep until it.

        Woken early (a pause, a slower rate), the slot no longer says when to go: the head
        gives it back and reserves again under the new schedule. Woken by a faster rate in
        a shared store, it keeps its place and what is left of its wait shrinks.
        """
        limiter = self._limiter
        store = limiter._store
        shared = self._bucket is None
        while True:
            if self._probing:
                await self._await_probe(waiter)
            if self._closed is not None:
                raise self._closed()
            schedule = self.schedule
            self._risen = False
            generation = self._generation
            slot, due = await self._take_slot(waiter, schedule)
            now = limiter._clock()
            if shared and waiter.deadline is not None and now > waiter.deadline + _EPSILON:
                # The store's answer came past the deadline (within a timer's slack of
                # it: :meth:`_reserve` gives up at the deadline itself): the slot goes
                # back, and the call fails instead of going late (before the store's call
                # was given up on, granted 0.456 s after it came, with a timeout of 0.3 s).
                await _quietly(self._give_back([slot]))
                raise self._timeout_error(now - waiter.arrived, waiter)
            if shared:
                self._measure_turn(due, generation)
            if len(self._queue) == 1:
                self._behind = False  # nobody waits behind: nothing to reserve ahead for
            if due <= now + _EPSILON:
                if slot.late > 0:  # due while this waiter waited: lost to a late loop
                    self.lost_meter.add(slot.busy, min(slot.late, now - waiter.arrived))
                return slot
            self._head = (slot, due)
            self._reserve_ahead()
            # The rate the slot was placed at: the store's, which a shared one may have
            # set faster than the schedule this process knew.
            rate = 1.0 / slot.interval if slot.interval > 0 else schedule.rate
            slack = 0.0
            try:
                while True:
                    new_rate = self.schedule.rate
                    if self._risen and shared and rate and new_rate and new_rate > rate:
                        # Shared, a faster rate keeps the reservation's place: what is left
                        # of its wait shrinks as the store shrinks everyone's (given back, a
                        # slot in a schedule other processes moved on is a slot lost).
                        self._risen = False
                        now = limiter._clock()
                        due = self._shrink(due, now, rate / new_rate)
                        rate = new_rate
                        if now >= due - _EPSILON:
                            return slot
                    kicked = await self._nap(due - now + slack)
                    if self._closed is not None:
                        raise self._closed()
                    now = limiter._clock()
                    if now >= due - _EPSILON:
                        return slot
                    if not kicked:
                        # The timer fired early: uvloop's timers count whole milliseconds
                        # and wake up to one early. Sleep on, past the millisecond it may
                        # round away (else a nap per loop pass until due: 9 a grant at
                        # 1,000/s). Given back, a shared slot is lost: two uvloop clients
                        # of one key ran at 0.76 of the rate.
                        slack = _TIMER_SLACK
                        continue
                    if not (self._risen and shared):
                        break
            except BaseException:
                if self._closed is not None:
                    raise  # the store closes too: a slot given back now would reopen it
                if shared and len(self._queue) > 1 and generation == self._generation:
                    # Still good: the next head takes it (given back, a slot with others
                    # reserved after it is lost).
                    self._held.appendleft((slot, due, generation))
                else:
                    await _quietly(store.release(self.name, slot))
                raise
            # Those reserved ahead are void too: reserved before the pause or slower rate.
            await _quietly(self._give_back([slot, *self._drop_held()]))

    def _measure_turn(self, due: float, generation: int) -> None:
        """Shared: average in the gap since the last head's slot, if it left waiters behind.

        The next head reserves when that one is granted: the gap is what the other
        processes took between, plus an interval, counted in intervals (so a new rate
        keeps it). Not across a pause, or a slower rate (a new generation): the
        projection adds the pause on its own (a pause another process met comes to this
        one only through the store, with a reservation). The last turn is forgotten when
        the queue empties (:meth:`_pop_head`): the next gap would hold the idle time.
        """
        last = self._last_turn
        rate = self.schedule.rate
        if (
            last is not None
            and last[1] == generation
            and rate
            and self._paused_until() <= self._clock()  # the reservation met no pause
        ):
            # A pause that ended before the reservation is in the gap still: no more
            # than two turns a process that shares the bucket counts.
            most = 2.0 * max(1, self._limiter._store.live)
            turns = min(max(0.0, due - last[0]) * rate, most)
            if not self._turns_fresh(due, 1.0 / rate):  # none yet, or from before a quiet spell
                self._turns = 1.0
            weight = GAP_RISE if turns > self._turns else GAP_FALL
            self._turns += (turns - self._turns) * weight
            self._turns_at = due
        self._last_turn = (due, generation) if len(self._queue) > 1 else None

    def _turns_fresh(self, now: float, interval: float) -> bool:
        """The turns measured still hold: within a second, or two turns, of the last."""
        return now - self._turns_at <= max(1.0, 2 * self._turns * interval)

    def shared_wait(self, position: int, paused: float) -> float:
        """Through a shared store, the seconds a newcomer behind ``position`` waiters would wait.

        Args:
            position: The waiters ahead of it in this process's queue.
            paused: Seconds the bucket's pause has left.

        Each waiter ahead takes a turn, and other processes take theirs between: a turn is
        the gap measured lately between this process's turns (never less than an
        interval; after a quiet spell of a second, or two turns, an interval again). The
        first waiters behind a head that sleeps on its slot follow it, or the slots held
        for them. Without this, a newcomer was projected at one interval a waiter, the
        whole rate's; with three other processes busy it waited four times that, and a
        call with ``limiter_timeout`` failed only when its turn came, near its deadline.
        """
        rate = self.schedule.rate
        if rate is None or not position:
            return paused
        now = self._clock()
        interval = 1.0 / rate
        turn = interval
        if self._turns_fresh(now, interval):
            turn = max(1.0, self._turns) * interval
        start = paused
        if self._wake is not None and self._head is not None:  # the head sleeps on its slot
            start = max(start, self._head[1] - now)
            held = [due for _, due, generation in self._held if generation == self._generation]
            if position <= len(held):
                return max(start, held[position - 1] - now)
            if held:
                start = max(start, held[-1] - now)
                position -= len(held)
        return start + position * turn

    async def _take_slot(self, waiter: _Waiter, schedule: Schedule) -> tuple[Slot, float]:
        """The head's slot and the local time it falls due: one reserved ahead, or a new one."""
        limiter = self._limiter
        while self._held or self._refill is not None:
            if not self._held and self._refill is not None:
                # Its slots, or none: then reserve. Not past the deadline (a Redis hung).
                await self._by_deadline(self._refill, waiter)
                continue
            slot, due, generation = self._held[0]
            if generation != self._generation or due < limiter._clock() - LATENESS:
                # Void (a pause, a slower rate), or past (every waiter behind left): those
                # after it were reserved with it.
                await _quietly(self._give_back(self._drop_held()))
                continue
            if waiter.deadline is not None and due > waiter.deadline + _EPSILON:
                raise self._timeout_error(due - waiter.arrived, waiter)
            self._held.popleft()
            return slot, due
        now = limiter._clock()
        max_wait = None if waiter.deadline is None else max(0.0, waiter.deadline - now)
        generation = self._generation
        count = self._batch(len(self._queue))
        paused = self._paused_until()
        slots = await self._reserve(waiter, schedule, count, max_wait)
        after = limiter._clock()
        self._pause_news(paused, after)
        if isinstance(slots, float):
            raise self._timeout_error(after + slots - waiter.arrived, waiter)
        (first, due), *rest = self._placed(slots, now, after)
        self._held.extend((slot, when, generation) for slot, when in rest)
        # Due within a round trip with others waiting: the shared schedule had free slots
        # (nobody took them) or nearly, so this process, a round trip per slot, is what
        # holds them back.
        self._behind = first.wait < self.round_trip and len(self._queue) > 1
        return first, due

    async def _reserve(
        self, waiter: _Waiter, schedule: Schedule, count: int, max_wait: float | None
    ) -> list[Slot] | float:
        """The store's reservation for the head; shared, given up at the waiter's deadline.

        A Redis that hangs holds a call for the call's own timeout (up to half a second,
        or what the client was configured with): a waiter with a shorter deadline failed
        that much late. The call goes on, so a Redis slow for one caller's short deadline
        is not taken for down, and what it reserves goes back when it comes.
        """
        store = self._limiter._store
        reserving = store.reserve_many(self.name, schedule, count, max_wait=max_wait)
        if store.synchronous or waiter.deadline is None:
            return await reserving
        task = asyncio.ensure_future(reserving)
        try:
            await self._by_deadline(task, waiter)
        except RateLimiterTimeoutError:
            self._late.add(task)
            task.add_done_callback(self._late_reservation)
            raise
        except BaseException:
            task.cancel()
            raise
        return task.result()

    async def _by_deadline(self, task: asyncio.Future[Any], waiter: _Waiter) -> None:
        """Wait for ``task``, or fail the waiter at its deadline (``task`` goes on)."""
        if waiter.deadline is None:
            await asyncio.wait((task,))
            return
        clock = self._limiter._clock
        slack = _EPSILON
        while True:
            left = waiter.deadline - clock()
            done, _ = await asyncio.wait((task,), timeout=max(0.0, left) + slack)
            if done:
                return
            if clock() >= waiter.deadline:
                raise self._timeout_error(clock() - waiter.arrived, waiter)
            # The timer fired early (uvloop's count whole milliseconds): failed then, the
            # call said it would wait longer than its timeout, and had not yet.
            slack = _TIMER_SLACK

    def _late_reservation(self, task: asyncio.Future[list[Slot] | float]) -> None:
        """A reservation given up on came back: its slots go back (nobody waits for them)."""
        self._late.discard(task)
        if task.cancelled() or task.exception() is not None:
            return
        slots = task.result()
        if isinstance(slots, list):
            self._give_back_later(slots)

    def _lead(self) -> float:
        """Slots that fall due during one round trip to the store, when it holds us back.

        0.0 in this process's store, and while the shared schedule is ahead of this
        process (its slots come back in the future: its own, on a late event loop, or
        other processes keep it full), unless others share it and this process's share of
        a round trip is a slot or more.
        """
        if self._bucket is not None or not self.round_trip:
            return 0.0
        rate = self.schedule.rate
        if rate is None:
            return math.inf if self._behind else 0.0
        # This process's share of the rate: processes that share it reserve ahead for
        # their part each, not for all of it.
        live = max(1, self._limiter._store.live)
        lead = self.round_trip * rate / live
        if not self._behind and (lead < 1 or live == 1):
            return 0.0
        # Shared, a share of a slot or more per round trip: one reservation a round trip
        # falls short of it wherever the schedule is. Dropping out of reserving ahead
        # whenever the others' reservations had filled the schedule a round trip ahead
        # left a process at a slot per round trip until it was behind again (four
        # processes at 1,000/s with Redis 21 ms away: 0.88-0.91 R; 71 ms away: 0.79-0.88 R).
        return lead if lead >= PIPELINE_FROM else 0.0

    def _batch(self, waiting: int) -> int:
        """How many slots to reserve at once for ``waiting`` waiters without one."""
        lead = self._lead()
        if not lead:
            return 1
        # Two round trips' worth: the next reservation, made as the held slots run low,
        # comes back before they run out.
        ahead = MAX_BATCH if math.isinf(lead) else 1 + int(2 * lead)
        return max(1, min(waiting, ahead, MAX_BATCH))

    def _placed(
        self,
        slots: list[Slot],
        before: float,
        after: float,
        follows: tuple[Slot, float] | None = None,
    ) -> list[tuple[Slot, float]]:
        """The local time each of a reservation's slots falls due; the round trip averaged in.

        The store's clock placed them about halfway through the round trip. Slots already
        due when the answer came (the store's schedule had fallen behind) move on together,
        the first to now: one after another, never at once. A batch that ``follows`` the
        last one's last slot (and when it falls due) with nothing between moves on as far
        as that one did, and at least an interval after it: else its first slots would
        fall due with that one's last (and round trips that differ move the halfway mark).
        """
        if self._bucket is None:
            self._trips += 1
            if self._trips > 1:  # the first loads the script, or connects
                trip = after - before
                self.round_trip += (trip - self.round_trip) * (0.2 if self.round_trip else 1.0)
        at = (before + after) / 2
        shift = max(0.0, after - at - slots[0].wait) if len(slots) > 1 else 0.0
        first = slots[0]
        if follows is not None and _between(follows[0], first) < first.interval / 2:
            shift = max(shift, self._shift, follows[1] + first.interval - at - first.wait)
        self._shift = shift
        return [(slot, at + slot.wait + shift) for slot in slots]

    def _reserve_ahead(self) -> None:
        """Pipelined, start reserving for the waiters behind the head when held slots run low."""
        if self._refill is not None:
            return
        lead = self._lead()
        wanted = len(self._queue) - 1 - len(self._held)  # behind the head, without a slot
        if not lead or wanted <= 0 or len(self._held) > 2 * lead:
            return
        count = self._batch(wanted)
        tail = self._held[-1][:2] if self._held else self._head
        self._refill = asyncio.get_running_loop().create_task(
            self._fill(count, self.schedule, self._generation, tail)
        )

    async def _fill(
        self, count: int, schedule: Schedule, generation: int, tail: tuple[Slot, float] | None
    ) -> None:
        """Reserve ``count`` slots ahead of the last one held (``tail``, and when it is due).

        Void by the time they come, they are given back. When others took a round trip's
        worth of slots between ``tail`` and them, the schedule is ahead of this process,
        and it stops reserving ahead.
        """
        limiter = self._limiter
        try:
            before = limiter._clock()
            paused = self._paused_until()
            slots = await limiter._store.reserve_many(self.name, schedule, count, max_wait=None)
            if isinstance(slots, float):  # no max_wait: never
                return
            placed = self._placed(slots, before, limiter._clock(), tail)
            self._pause_news(paused, limiter._clock())
            if generation != self._generation or not self._queue:  # void, or nobody left
                await self._give_back(slots)
                return
            self._held.extend((slot, when, generation) for slot, when in placed)
            if tail is not None and _between(tail[0], slots[0]) >= self.round_trip:
                self._behind = False
        except Exception:  # best effort: the head reserves for itself instead
            pass
        finally:
            self._refill = None

    def _paused_until(self) -> float:
        return self._limiter._store.snapshot(self.name)[2]

    def _pause_news(self, known: float, now: float) -> None:
        """Void what is reserved ahead if the store's answer shows a pause it did not know of.

        Another process's 429 paused the bucket: the slots this one reserved before then
        fall in the pause (the store placed the new ones after it, but reserved with them
        they are given back too: simpler, and the pause costs more than a round trip).
        """
        if (self._held or self._wake is not None) and self._paused_until() > max(known, now):
            self._invalidate()

    def _shrink(self, due: float, now: float, ratio: float) -> float:
        """Shrink what is left of the waits, the head's and the held slots', by ``ratio``."""
        if self._held:
            self._held = deque(
                (slot, now + max(0.0, held - now) * ratio, generation)
                for slot, held, generation in self._held
            )
        return now + (due - now) * ratio

    def _drop_held(self) -> list[Slot]:
        slots = [slot for slot, _, _ in self._held]
        self._held.clear()
        return slots

    async def _give_back(self, slots: list[Slot]) -> None:
        """Release slots, the latest first, each run of consecutive ones in one call."""
        store = self._limiter._store
        runs: list[tuple[Slot, int, Slot]] = []  # the last slot, how many, the first
        for slot in sorted(slots, key=lambda slot: 0.0 if math.isnan(slot.tat) else -slot.tat):
            if runs:
                last, count, first = runs[-1]
                step = first.tat - slot.tat  # an interval, to rounding, when consecutive
                if slot.interval == last.interval and abs(step - slot.interval) < slot.interval / 2:
                    runs[-1] = (last, count + 1, slot)
                    continue
            runs.append((slot, 1, slot))
        for last, count, _ in runs:
            await store.release(self.name, last, count)

    def _return_held(self) -> None:
        """Give the slots reserved ahead back in the background: nobody is left to take them."""
        self._give_back_later(self._drop_held())

    def _give_back_later(self, slots: list[Slot]) -> None:
        """Give ``slots`` back in the background (:meth:`stop` waits for it)."""
        task = asyncio.get_running_loop().create_task(_quietly(self._give_back(slots)))
        self._returning.add(task)
        task.add_done_callback(self._returning.discard)

    def close(self, error: Callable[[], BaseException]) -> None:
        """Fail every waiter now with ``error()``, and every later one (the client closes).

        The head wakes from its nap (or its wait for a probe's answer) and raises too: no
        waiter is granted after it, and none reserves a slot of a shared bucket (a closed
        client's queued calls took half a shared rate for as long as they took to drain).
        """
        self._closed = error
        for waiter in self._queue:
            if waiter.future is not None and not waiter.future.done():
                waiter.future.set_exception(error())
        self._kick()
        if self._probe_answer is not None:
            _resolve(self._probe_answer)

    async def stop(self) -> None:
        """Stop reserving ahead, and finish giving back what was left (the limiter closes)."""
        refill = self._refill
        if refill is not None:
            refill.cancel()
            await asyncio.wait((refill,))
        late = tuple(self._late)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
        if self._returning:
            await asyncio.wait(self._returning)

    async def _nap(self, seconds: float) -> bool:
        """Sleep as the head for ``seconds``; True if :meth:`_kick` woke it earlier."""
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        sleeper = asyncio.ensure_future(self._limiter._sleep(seconds))
        sleeper.add_done_callback(lambda _: _resolve(wake))
        self._wake = wake
        self._kicked = False
        try:
            await wake
        finally:
            self._wake = None
            if sleeper.done():
                if not sleeper.cancelled():
                    sleeper.result()  # an error of the injected sleep surfaces here
            else:
                sleeper.cancel()
        return self._kicked

    def _kick(self) -> None:
        """Make the sleeping head look again now."""
        if self._wake is not None:
            self._kicked = True
            _resolve(self._wake)

    def _invalidate(self) -> None:
        """Reservations no longer hold (a pause, a slower rate): the head reserves again."""
        self._risen = False
        self._generation += 1
        self._kick()
        self._expire()

    def _pop_head(self) -> None:
        """Remove the head and promote the next waiter, whose future wakes it."""
        if self._queue.popleft().deadline is not None:
            self._deadlines -= 1
        if not self._queue:
            self._last_turn = None  # no next turn follows it (see _measure_turn)
        elif (future := self._queue[0].future) is not None:
            _resolve(future)

    def _leave(self, waiter: _Waiter) -> None:
        """Take a waiter that gives up (cancelled, timed out) out of the queue."""
        if self._queue and self._queue[0] is waiter:
            self._pop_head()
        elif waiter in self._queue:  # not if _expire took it out already
            self._queue.remove(waiter)
            if waiter.deadline is not None:
                self._deadlines -= 1

    def _expire(self) -> None:
        """Fail, at once, queued waiters whose projected grant now falls past their deadline.

        The head is only woken: it checks its own deadline. Free when nobody set a timeout.
        """
        if not self._deadlines or len(self._queue) < 2:
            return
        limiter = self._limiter
        now = limiter._clock()
        kept: deque[_Waiter] = deque([self._queue[0]])
        for waiter in itertools.islice(self._queue, 1, None):
            wait = limiter._projected_wait(self, len(kept))
            if waiter.deadline is not None and now + wait > waiter.deadline + _EPSILON:
                if waiter.future is not None and not waiter.future.done():
                    error = self._timeout_error(now + wait - waiter.arrived, waiter)
                    waiter.future.set_exception(error)
                self._deadlines -= 1
                continue
            kept.append(waiter)
        self._queue.clear()
        self._queue.extend(kept)

    def _timeout_error(
        self, wait: float, timeout: float | _Waiter | None
    ) -> RateLimiterTimeoutError:
        if isinstance(timeout, _Waiter):
            timeout = None if timeout.deadline is None else timeout.deadline - timeout.arrived
        return RateLimiterTimeoutError(
            f"the {self.name} rate limit would hold this request {wait:.3f} s, "
            f"more than its timeout of {timeout or 0.0:.3f} s",
            bucket=self.name,
            wait=wait,
        )

    def _grant(self, slot: Slot, waited: float) -> Grant:
        """Count a reserved slot as granted and return the grant."""
        if self.streak >= PROBE_STREAK:
            self._send_probe()
        self.granted += 1
        self.busy = slot.busy
        self.busy_at = self._clock()
        if slot.sent >= 0:
            self.sent = slot.sent
        self.backlogged = slot.backlogged or bool(self._queue)
        self._follow(slot.control, slot.busy, slot.version)
        return Grant(self.name, slot.control.epoch, waited, self.overloads)

    # -- probes in a run of 429s (the module's header) ------------------------------------

    def _send_probe(self) -> None:
        """The grant being made is a probe: nothing more is granted until its answer."""
        if not self._probing:
            self._probing = True
            self._probe_overloads = self.overloads

    def probe_over(self, grant: Grant) -> None:
        """The request of ``grant`` was answered, or ended without one: a probe's frees all."""
        if self._probing and grant.overloads == self._probe_overloads:
            self._probing = False
            if self._probe_answer is not None:
                _resolve(self._probe_answer)

    async def _await_probe(self, waiter: _Waiter) -> None:
        """As the head: wait for the probe's answer, up to ``PROBE_WAIT`` and the deadline."""
        wait = PROBE_WAIT
        if waiter.deadline is not None:
            wait = max(0.0, min(wait, waiter.deadline - self._clock()))
        answer = self._probe_answer = asyncio.get_running_loop().create_future()
        sleeper = asyncio.ensure_future(self._limiter._sleep(wait))
        try:
            await asyncio.wait((answer, sleeper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            self._probe_answer = None
        if not answer.done():  # no answer in time: the queue grants again
            self._probing = False

    def _follow(self, control: Control, busy: float, version: int) -> None:
        """Take the store's learning state on (another process may have moved it)."""
        self._version = version
        if control.epoch != self.epoch:  # another process lowered the shared rate
            self.new_epoch(control.epoch, busy)
        if control.rate != self.schedule.rate or control.phase != self.schedule_phase:
            self.reschedule(control)

    @property
    def waiting(self) -> int:
        return len(self._queue)


def _between(earlier: Slot, later: Slot) -> float:
    """Seconds of the store's schedule others reserved between two slots (NaN: unknown).

    Read off the schedule's ``tat`` after each: one interval apart when nothing came between.
    """
    return later.tat - earlier.tat - later.interval


async def _quietly(awaitable: Awaitable[None]) -> None:
    """Await best-effort work (giving a slot back) whose failure changes nothing."""
    with contextlib.suppress(Exception):  # a slot not given back is a slot lost, no more
        await awaitable


def _burst_cap(queue: _Queue) -> float:
    """The most a server's ``Remaining`` may raise the known burst: a second's worth."""
    rate = queue.schedule.rate or queue.ceiling()
    return max(1.0, rate) if rate else 1.0
