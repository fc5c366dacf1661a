"""The rate limiter's learning on a fake clock: slow start, decreases, policy headers."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import attrs
import pytest

from contractsdk._ratelimit import (
    PACING,
    SLOW_START_RATE,
    Control,
    LocalStore,
    RateLimiter,
    RateLimits,
    _control,
    bucket_name,
)
from contractsdk._ratelimit._control import BETA, FIRST_BETA, Observation
from contractsdk._ratelimit._limits import BucketName
from tests._fakeclock import FakeClock
from tests._limiterkit import answer, make_limiter


async def drive(
    clock: FakeClock,
    limiter: RateLimiter,
    seconds: float,
    *,
    method: str = "POST",
    status: int = 200,
    tasks: int = 8,
) -> list[float]:
    """Hammer the limiter from ``tasks`` tasks for ``seconds``; record ``status`` each time."""
    end = clock() + seconds
    rates: list[float] = []

    async def worker() -> None:
        while clock() < end:
            await limiter.acquire(method)
            await clock.sleep(0.01)  # the request's round trip
            await answer(limiter, method, status, {})
            rate = limiter.state[bucket_name(method)].rate
            assert rate is not None
            rates.append(rate)

    await clock.run(asyncio.gather(*(worker() for _ in range(tasks))))
    return rates


async def test_429_lowers_the_rate_and_it_climbs_back() -> None:
    """A 429 cuts the rate by about beta; without 429s it climbs back to the ceiling, not above."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await drive(clock, limiter, 2.0)
    await answer(limiter, "POST", 429, {})
    assert limiter.state.write.rate == 100 * PACING  # a first strike at the told limit
    await answer(limiter, "POST", 429, {})
    lowered = limiter.state.write.rate
    assert lowered is not None
    assert 0.6 * 100 * PACING <= lowered <= BETA * 100 * PACING + 1e-9
    rates = await drive(clock, limiter, 10.0)
    assert rates == sorted(rates)  # climbs steadily
    assert max(rates) == pytest.approx(100 * PACING)
    assert rates[0] < 100 * PACING


async def test_an_epoch_is_measured_from_the_end_of_its_retry_after_pause() -> None:
    """A 429 after half a second of sending that follows a 1-s pause lowers the rate.

    The busy clock counts no more of a pause than of any gap between events, and the
    epoch began the whole pause ahead of it: it read 0.75 s younger than it was, and its
    429s were taken for the last overload draining (a pause of 1 s each, the rate kept:
    a burst-1 server of 40/s that says ``Retry-After: 1`` held its client at 0.25 R).
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    await drive(clock, limiter, 1.0)
    await answer(limiter, "POST", 429, {"Retry-After": "1"})  # the slow start ends
    queue = limiter._queues["write"]
    assert (queue.epoch, limiter.state.write.paused_for) == (1, 1.0)
    await drive(clock, limiter, 1.5)  # the pause, then half a second of sending
    climbed = limiter.state.write.rate
    await answer(limiter, "POST", 429, {"Retry-After": "1"})
    assert queue.epoch == 2
    lowered = limiter.state.write.rate
    assert climbed is not None and lowered is not None and lowered < climbed


async def test_learning_never_exceeds_a_tiny_ceiling() -> None:
    """A configured rate under the learning's floor (0.5/s) still bounds the learned rate."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=0.2))
    await limiter.acquire("GET")
    await answer(limiter, "GET", 429, {})
    assert limiter.state.read.rate == 0.2 * PACING
    for _ in range(5):
        await clock.run(limiter.acquire("GET"))
        await answer(limiter, "GET", 200, {})
        assert limiter.state.read.rate == 0.2 * PACING


async def test_echoes_of_one_overload_lower_the_rate_once() -> None:
    """429s for requests granted before the decrease are counted, not acted on again.

    At the told limit the first overload is a strike (it only pauses); its echoes are not
    a second one. A request granted after it is fresh: its 429 lowers the rate. The next,
    in an epoch too young to measure, is the same overload draining: it backs off longer
    but does not lower the rate again.
    """
    clock = FakeClock()
    limiter = make_limiter(
        clock, RateLimits(write=100, burst=7)
    )  # five at once after the idle margin
    await clock.advance(1)
    go = asyncio.Event()
    rates: list[float | None] = []

    async def request() -> None:
        grant = await limiter.acquire("POST")
        await go.wait()
        await limiter.record(grant, 429, {})
        rates.append(limiter.state.write.rate)

    tasks = [asyncio.ensure_future(request()) for _ in range(5)]
    await clock.settle()
    before = limiter.state.write.rate
    assert before == 100 * PACING
    go.set()
    await clock.run(asyncio.gather(*tasks))
    assert limiter.state.write.throttles == 5
    assert rates == [before] * 5
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {})
    lowered = limiter.state.write.rate
    assert lowered is not None
    assert lowered < before
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {})
    again = limiter.state.write.rate
    assert again == lowered
    assert limiter.state.write.paused_for > 1.5 / lowered


def test_a_429_counts_in_a_row_only_for_requests_granted_after_the_last() -> None:
    """Requests granted at once before a 429 is answered echo it; one granted after is fresh.

    The requests a bucket grants at once share their grant: the count of 429s in a row
    must still tell the ones granted before an overload from the ones granted after it.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=100, burst=10))
    clock.now += 1.0  # idle: a burst to grant at once
    queue = limiter._queues["read"]
    first, second = limiter.try_acquire("GET"), limiter.try_acquire("GET")
    assert first is not None and second is not None
    assert limiter.note(first, 429, {}) is not None
    assert queue.streak == 1
    limiter.note(second, 429, {})  # out before the first 429 came back: an echo
    assert (queue.streak, queue.throttles) == (1, 2)
    third = limiter.try_acquire("GET")
    assert third is not None
    limiter.note(third, 429, {})
    assert queue.streak == 2
    fourth = limiter.try_acquire("GET")
    assert fourth is not None
    limiter.note(second, 200, {})  # a success of a request granted before: no reset
    assert queue.streak == 2
    limiter.note(fourth, 200, {})
    assert queue.streak == 0


def test_a_run_of_429s_is_timed_from_its_first() -> None:
    """The controller is told how long the run of 429s has lasted, to hold its pause to it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=100, burst=10))
    queue = limiter._queues["read"]
    first = limiter.try_acquire("GET")
    assert first is not None
    limiter.note(first, 429, {})
    started = queue.refused_since
    assert started == clock.now
    clock.now += 0.4
    second = limiter.try_acquire("GET")
    assert second is not None
    limiter.note(second, 429, {})
    assert (queue.streak, queue.refused_since) == (2, started)  # timed from its first
    clock.now += 0.4
    third = limiter.try_acquire("GET")
    assert third is not None
    limiter.note(third, 200, {})  # the run ends
    clock.now += 0.4
    fourth = limiter.try_acquire("GET")
    assert fourth is not None
    limiter.note(fourth, 429, {})
    assert (queue.streak, queue.refused_since) == (1, clock.now)  # a new run


def _spied_limiter(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> tuple[RateLimiter, list[Observation]]:
    """A learning limiter on ``clock``, and the observations its controller is given."""
    seen: list[Observation] = []
    step = _control.step

    def spy(control: Control, observation: Observation, now: float, **kwargs: Any) -> Any:
        seen.append(observation)
        return step(control, observation, now, **kwargs)

    monkeypatch.setattr(_control, "step", spy)
    return make_limiter(clock, RateLimits()), seen


async def _answer_three(
    limiter: RateLimiter, clock: FakeClock, statuses: tuple[int, int, int]
) -> list[float]:
    """Three reads out together, one slow-start interval apart, answered 1 ms apart.

    Returns the bucket's pause left after each answer.
    """
    grants = []
    for _ in range(3):
        grants.append(limiter.try_acquire("GET"))
        clock.now += 0.06
    pauses = []
    for grant, status in zip(grants, statuses, strict=True):
        assert grant is not None
        await limiter.record(grant, status, {})
        pauses.append(limiter.state.read.paused_for)
        clock.now += 0.001
    return pauses


async def test_the_controller_is_told_how_much_of_the_last_second_was_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``paused``: the share of the last busy second the bucket stood still after 429s.

    Only the part of a pause already passed counts: what it held back is missing from
    what was sent over the second. A pause counted whole when it began left the span
    while its tail was still in it, and the rate read as short of its own schedule (W
    16 % over a fixed window's quota).
    """
    clock = FakeClock()
    limiter, seen = _spied_limiter(clock, monkeypatch)
    pauses = await _answer_three(limiter, clock, (200, 429, 200))
    before, refused, during = seen
    assert before.paused == 0.0 and refused.paused == 0.0  # no 429 before them
    assert pauses[1] > 0.002
    assert during.paused == pytest.approx(0.001)  # a millisecond of it has passed
    refused_at = clock.now - 0.002  # _answer_three: 1 ms after each answer

    async def paused_at(moment: float) -> float:
        """What the controller is told of the last second's pause, answered at ``moment``."""
        held = None
        while held is None or clock.now + 0.05 < moment:  # busy: a request every 50 ms
            clock.now += 0.05
            grant = limiter.try_acquire("GET")
            if grant is not None:
                if held is not None:
                    await limiter.record(held, 200, {})
                held = grant
        clock.now = moment
        await limiter.record(held, 200, {})
        return seen[-1].paused

    # Over, and whole within the last second.
    assert await paused_at(refused_at + 0.5) == pytest.approx(pauses[1])
    # Begun over a second ago, ended within it: its tail still counts.
    tail = pauses[1] - 0.03
    assert await paused_at(refused_at + 1.03) == pytest.approx(tail, abs=1e-6)
    # A second after its end, it has left the span.
    assert await paused_at(refused_at + pauses[1] + 1.01) == 0.0
    # Two 429s answered a millisecond apart pause the bucket over one span, not two:
    # from the first one's answer to the later end (their sum read 0.143 s where the
    # bucket stood still for 0.072 s).
    clock = FakeClock()
    limiter, seen = _spied_limiter(clock, monkeypatch)
    pauses = await _answer_three(limiter, clock, (429, 429, 200))
    clock.now += 0.5
    grant = limiter.try_acquire("GET")
    assert grant is not None
    await limiter.record(grant, 200, {})
    assert seen[-1].paused == pytest.approx(max(pauses[0], 0.001 + pauses[1]))


@pytest.mark.parametrize("late", [0.0, 0.006, 0.015])
async def test_the_queue_counts_the_schedule_time_a_late_event_loop_loses(late: float) -> None:
    """``lost_meter``: the share of busy time whose slots fell due while requests waited.

    GCRA does not catch a late grant up: when the loop runs the next waiter after its slot
    fell due, the schedule restarts from then. At 100/s, timers 15 ms late lose 5 ms in
    every 25 (two grants, the second at once); 6 ms late lose nothing (the next slot is
    still ahead). What the queue counts is what the schedule fell short by.
    """
    clock = FakeClock()

    async def sleep(seconds: float) -> None:
        await clock.sleep(seconds + late)

    limiter = RateLimiter(
        RateLimits(write=100 / PACING), clock=clock, wall_clock=clock.wall, sleep=sleep
    )
    queue = limiter._queues["write"]
    granted: list[float] = []
    end = clock() + 3.0

    async def worker() -> None:
        while clock() < end:
            await limiter.acquire("POST")
            granted.append(clock())
            await clock.sleep(0.001)

    await clock.run(asyncio.gather(*(worker() for _ in range(8))))
    lost = queue.lost_meter.rate(queue.busy_clock)
    last_second = sum(1 for at in granted if at > granted[-1] - 1.0)
    assert lost == pytest.approx(1 - last_second / 100, abs=0.03)
    assert lost == pytest.approx(0.2 if late > 0.01 else 0.0, abs=0.02)


def test_a_learnt_rate_is_paced_faster_by_what_the_pacer_loses() -> None:
    """The schedule of a learnt rate is boosted; a told one, or a slow start, is not."""
    limiter = make_limiter(FakeClock(), RateLimits())
    queue = limiter._queues["write"]
    queue.boost = 1.1
    cubic = Control(rate=500.0, phase="cubic", w_max=520.0)
    assert queue.schedule_for(cubic).rate == pytest.approx(550.0)
    assert queue.schedule_for(attrs.evolve(cubic, phase="paced")).rate == 500.0
    assert queue.schedule_for(attrs.evolve(cubic, phase="slow")).rate == 500.0
    # Nor one the server's headers named: past it lie a window's 429s (a fixed window
    # of 1,000/s with X-RateLimit-* fell to 0.56 R).
    queue.server_limit = 1000.0
    assert queue.schedule_for(cubic).rate == 500.0
    queue.server_limit = None
    # Nor one under a known ceiling.
    limiter.set_limits(RateLimits(write=600.0))
    assert queue.schedule_for(cubic).rate == 500.0


@pytest.mark.parametrize(("lost", "boost"), [(0.0, 1.0), (0.05, 1 / 0.95), (0.2, 1.15)])
async def test_what_the_pacer_lost_over_the_last_second_sets_the_boost(
    lost: float, boost: float
) -> None:
    """Each learning step sets the boost to 1 / (1 - lost), up to MAX_SHORTFALL."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    queue = limiter._queues["write"]
    grant = limiter.try_acquire("POST")
    assert grant is not None
    queue.lost_meter.add(queue.busy_clock, lost)  # lost over the last busy second
    clock.now += 0.1
    await limiter.record(grant, 200, {})
    assert queue.boost == pytest.approx(boost)


async def test_unknown_limits_slow_start_then_learn() -> None:
    """Unknown limits: start at a modest rate, raise it while it is all used, lower on a 429."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    state = limiter.state.write
    assert (state.rate, state.learning, state.limit) == (SLOW_START_RATE, True, None)
    rates = await drive(clock, limiter, 1.0, tasks=64)
    assert rates[-1] > 4 * SLOW_START_RATE  # about doubling every quarter second
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.learning is False
    assert state.rate is not None
    assert state.rate < rates[-1]


async def test_slow_start_does_not_grow_while_idle() -> None:
    """A client that does not use its rate does not raise it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    for _ in range(50):
        await clock.run(limiter.acquire("GET"))
        await answer(limiter, "GET", 200, {})
        await clock.advance(1.0)
    rate = limiter.state.read.rate
    assert rate is not None
    assert rate < 1.2 * SLOW_START_RATE  # only the very first request used every token


async def test_policy_header_sets_the_rate() -> None:
    """RateLimit-Policy gives the service's rate: learning stops and the bucket paces under it."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    await answer(limiter, "GET", 200, {"RateLimit-Policy": '"default";q=50;w=1'})
    state = limiter.state.read
    assert (state.rate, state.limit, state.learning, state.server_limit) == (
        50 * PACING,
        50.0,
        False,
        50.0,
    )
    assert limiter.state.write.learning is True


async def test_policy_header_lowers_a_configured_rate() -> None:
    """A declared policy under the configured rate becomes the ceiling; one above is ignored."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await answer(limiter, "POST", 200, {"RateLimit-Policy": "p;q=600;w=60"})
    assert limiter.state.write.limit == 10.0
    assert limiter.state.write.rate == 10 * PACING
    await answer(limiter, "POST", 200, {"RateLimit-Policy": "p;q=1000;w=1"})
    assert limiter.state.write.limit == 100.0


@pytest.mark.parametrize("seed", range(6))
async def test_a_paced_bucket_takes_repeated_headers_as_learn_would(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers that repeat what a told bucket knows skip learn(), and end in the same state.

    Two limiters see the same answers at the same times; one is made to learn from every
    answer. Their buckets (tokens, pause, rate, what they know of the server) stay equal.
    """
    rng = random.Random(seed)
    clock = FakeClock()
    fast = make_limiter(clock, RateLimits(write=50, burst=10))
    slow = make_limiter(clock, RateLimits(write=50, burst=10))
    monkeypatch.setattr(slow, "_paced_answer", lambda *args: False)
    learnt = 0
    original = RateLimiter.learn

    async def counting(self: RateLimiter, *args: object) -> None:
        nonlocal learnt
        learnt += self is fast
        await original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RateLimiter, "learn", counting)
    for _ in range(60):
        headers = {"X-RateLimit-Limit": rng.choice(["50", "50", "50", "40"])}
        headers["X-RateLimit-Remaining"] = str(rng.choice([0, 1, 2, 5, 9, 9, 9, 30]))
        headers["X-RateLimit-Reset"] = str(rng.choice([1, 1, 2]))
        if rng.random() < 0.1:
            headers["Retry-After"] = "1"
        status = rng.choice([200, 200, 200, 201, 503])
        grants = await clock.run(asyncio.gather(fast.acquire("POST"), slow.acquire("POST")))
        for limiter, grant in zip((fast, slow), grants, strict=True):
            await limiter.record(grant, status, headers)
        assert fast.state == slow.state
        await clock.advance(rng.choice([0.0, 0.005, 0.02, 0.1, 1.0]))
    assert learnt < 60  # the fast path was taken


async def test_idle_time_never_enters_the_measured_rate() -> None:
    """A client that idled before a 429 keeps W near what it sent while busy.

    Counting the idle spell made a woken client measure a tiny rate and collapse to ~1/s.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100))
    await drive(clock, limiter, 2.0, tasks=16)
    busy_rate = limiter.state.write.rate
    assert busy_rate == 100 * PACING
    await clock.advance(30)  # idle
    grants = [await clock.run(limiter.acquire("POST")) for _ in range(3)]
    await limiter.record(grants[-1], 429, {})
    rate = limiter.state.write.rate
    assert rate is not None and rate >= 0.5 * 100


@pytest.mark.parametrize(("limit", "paced"), [("25", 24.0), ("100", 99.0), ("1000", 990.0)])
async def test_a_named_limit_leaves_a_request_of_each_window_spare(
    limit: str, paced: float
) -> None:
    """The learning paces a named limit at PACING of it, or one request a window under it.

    A sliding log of 25 a second refuses the 26th in any second: 1 % of 25 is no margin.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    headers = {"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "1"}
    await answer(limiter, "POST", 201, headers, await limiter.acquire("POST"))
    assert limiter.state.write.rate == pytest.approx(paced)


async def test_a_decrease_that_loses_a_race_is_decided_again() -> None:
    """A fresh 429's decrease is not lost when another process wrote the state first.

    Through Redis the state is compare-and-set: a process whose snapshot is stale loses.
    Lost, the decrease left the fleet's slow start doubling on past the limit (traced with
    four processes against nginx: a decrease from ``slow:208`` lost, and the next 429
    found ``slow:216``). It is decided again on what the other wrote, since that was still
    in the 429's epoch.
    """
    clock = FakeClock()
    races: list[LocalStore] = []

    def raced(initial: dict[BucketName, Control]) -> LocalStore:
        """Memory, where another process's rise lands just before this one's next update."""
        store = LocalStore(clock, initial)
        update = store.update

        async def racing(bucket: BucketName, control: Control, version: int, **kw: Any) -> bool:
            if not races:
                races.append(store)
                theirs, current, _ = store.snapshot(bucket)
                assert theirs.rate is not None
                risen = attrs.evolve(theirs, rate=theirs.rate * 1.5)  # same epoch: a rise
                options = {**kw, "pause": 0.0, "tokens": None}
                assert store.apply(bucket, risen, current, now=0.0, **options)
            return await update(bucket, control, version, **kw)

        store.update = racing  # type: ignore[method-assign]
        return store

    limiter = RateLimiter(
        RateLimits(), store=raced, clock=clock, wall_clock=clock.wall, sleep=clock.sleep
    )
    grant = await clock.run(limiter.acquire("POST"))
    before = limiter.state.write.rate
    assert before is not None
    await limiter.record(grant, 429, {})
    assert races  # the race happened
    shared, _, _ = races[0].snapshot("write")
    assert shared.epoch == grant.epoch + 1
    assert shared.phase == "cubic"
    assert shared.rate is not None and shared.rate < before * 1.5  # under the rise it lost to


async def _burst(limiter: RateLimiter, clock: FakeClock, count: int) -> float:
    """Seconds ``count`` requests at once take through ``limiter``, each answered 200."""
    start = clock()

    async def one() -> None:
        grant = await limiter.acquire("POST")
        await clock.sleep(0.01)
        await limiter.record(grant, 200, {})

    await clock.run(asyncio.gather(*(one() for _ in range(count))))
    return clock() - start


async def test_a_lone_429_does_not_set_the_limit_to_what_one_request_sent() -> None:
    """A learning client's only request refused: its rate keeps to the slow start's terms.

    One request over a busy half second reads as 2/s sent; taken for W, it set the rate
    to 1.4/s, and a burst of 50 an idle spell later took 9.9 s against a server that
    admitted them all. Too few answers measure nothing, what was sent included: the rate
    drops to FIRST_BETA of the slow start's, and the burst takes under four times what
    it takes a client that never met the 429.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())
    grant = await limiter.acquire("POST")
    await clock.advance(0.01)
    await limiter.record(grant, 429, {})
    assert limiter.state.write.rate == pytest.approx(SLOW_START_RATE * FIRST_BETA)
    await clock.advance(5.0)  # idle
    refused_once = await _burst(limiter, clock, 50)
    fresh = await _burst(make_limiter(clock, RateLimits()), clock, 50)
    assert refused_once < 4 * fresh  # 2.6 s against 0.9 s; it was 9.9 s
