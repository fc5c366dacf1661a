"""The in-memory GCRA schedule (``LocalStore``), pure: slots never break the rate."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contractsdk._ratelimit import Control, LocalStore, Schedule, Slot
from contractsdk._ratelimit._control import PACING
from contractsdk._ratelimit._store import Meter, PauseSpans, RingMeter


def store_at(now: list[float]) -> LocalStore:
    return LocalStore(lambda: now[0], {"write": Control(rate=10.0, phase="paced")})


def _gap(rng: random.Random, interval: float) -> float:
    """Seconds to the next reservation: at once, within a few intervals, idle, or any."""
    roll = rng.random()
    if roll < 0.4:
        return 0.0  # a burst
    if roll < 0.8:
        return rng.uniform(0, 2) * interval  # paced, early or late
    if roll < 0.9:
        return rng.uniform(2, 100) * interval  # idle: the bucket refills
    return rng.uniform(0, 2)


@given(seed=st.integers(0, 2**64 - 1))
@settings(max_examples=150, deadline=None)
def test_slots_never_exceed_burst_plus_rate(seed: int) -> None:
    """In any window of t seconds at most burst + 1 + rate x t slots fall (releases too).

    Hypothesis draws a seed; the rate (0.5 to 2,000/s, log-uniform), the burst (1 to 50,
    small ones often) and up to 80 reservations, a fifth given back at once, are drawn
    from it: bursts, paced runs and idle spells, the shapes in which a slot too many
    shows. A failure names the seed, which replays it.
    """
    rng = random.Random(seed)
    rate = math.exp(rng.uniform(math.log(0.5), math.log(2000)))
    burst = rng.choice((1, 1, 2, 3, rng.randint(1, 50)))
    interval = 1 / rate
    now = [1000.0]
    store = store_at(now)
    tau = (burst - 1 + (1 - PACING)) / rate
    schedule = Schedule(rate=rate, tau=tau, burst=float(burst))
    slots: list[float] = []
    for _ in range(rng.randint(1, 80)):
        now[0] += _gap(rng, interval)
        slot = store.take("write", schedule, now[0], max_wait=None)
        assert isinstance(slot, Slot)
        if rng.random() < 0.2:
            store.give_back("write", slot)
        else:
            slots.append(now[0] + slot.wait)
    slots.sort()
    for i, j in itertools.combinations(range(len(slots)), 2):
        window = slots[j] - slots[i]
        assert j - i + 1 <= burst + 1 + rate * window * (1 + 1e-9) + 1e-6, (rate, burst, i, j)


def test_a_new_bucket_holds_one_request_then_earns_its_burst() -> None:
    """Alone, a new client cannot know the server's bucket is full: one at once, then paced."""
    now = [1000.0]
    store = store_at(now)
    schedule = Schedule(rate=10.0, tau=4.0 / 10, burst=5.0)
    waits = [store.take("write", schedule, now[0], max_wait=None) for _ in range(3)]
    assert [slot.wait for slot in waits if isinstance(slot, Slot)] == pytest.approx([0, 0.1, 0.2])
    now[0] += 60
    later = [store.take("write", schedule, now[0], max_wait=None) for _ in range(6)]
    assert [round(slot.wait, 9) for slot in later if isinstance(slot, Slot)] == [0.0] * 5 + [0.1]


def test_a_refused_reservation_changes_nothing() -> None:
    """max_wait exceeded: the wait comes back and the schedule is as it was."""
    now = [1000.0]
    store = store_at(now)
    schedule = Schedule(rate=10.0, tau=0.001, burst=1.0)
    store.take("write", schedule, now[0], max_wait=None)
    assert store.take("write", schedule, now[0], max_wait=0.0) == pytest.approx(0.1)
    slot = store.take("write", schedule, now[0], max_wait=None)
    assert isinstance(slot, Slot)
    assert slot.wait == pytest.approx(0.1)


def test_a_slot_is_stamped_with_the_busy_time_it_falls_at() -> None:
    """Its wait is busy time (the schedule is booked until then); a pause's wait is not.

    Stamped at the reservation instead, eight processes each holding a slot 0.4 s ahead
    measured every answer 0.4 s early, and a slow start doubled a second late.
    """
    now = [1000.0]
    store = store_at(now)
    schedule = Schedule(rate=10.0, tau=0.001, burst=1.0)
    slots = [store.take("write", schedule, now[0], max_wait=None) for _ in range(3)]
    assert all(isinstance(slot, Slot) for slot in slots)
    busy = [slot.busy for slot in slots if isinstance(slot, Slot)]
    assert [b - busy[0] for b in busy] == pytest.approx([0.0, 0.1, 0.2])
    control, version, _ = store.snapshot("write")
    store.apply("write", control, version, schedule=schedule, pause=2.0, tokens=None, now=now[0])
    paused = store.take("write", schedule, now[0], max_wait=None)
    assert isinstance(paused, Slot)
    assert paused.wait >= 2.0
    assert paused.busy - busy[0] < 0.5  # two seconds' wait, but not busy ones


def test_a_slot_given_back_is_not_counted_as_sent() -> None:
    """Even when a later reservation keeps its time booked (as through Redis)."""
    now = [1000.0]
    store = store_at(now)
    schedule = Schedule(rate=10.0, tau=0.001, burst=1.0)
    first = store.take("write", schedule, now[0], max_wait=None)
    store.take("write", schedule, now[0], max_wait=None)
    assert isinstance(first, Slot)
    sent = store.sent("write")
    store.give_back("write", first)  # not the last one: the schedule keeps its time
    assert store.sent("write") == pytest.approx(sent / 2)
    third = store.take("write", schedule, now[0], max_wait=None)
    assert isinstance(third, Slot)
    assert third.wait == pytest.approx(0.2)  # the first slot's time stayed booked


def test_the_admitted_meter_spans_a_second() -> None:
    """A fixed window's quota, admitted at once each second, reads as its rate.

    Over the 0.5 to 1 s of two half-second bins it read as up to twice that: measured as
    the limit, it had the client overrun every window. Over 1 to 1.1 s (eleven bins, the
    current one part way) it read as down to 0.91 of it, and the client settled under it.
    """
    second, halves = RingMeter(0.1, 11), Meter()
    for window in range(3):
        for n in range(100):  # 100 answers in the first 50 ms of each second
            second.add(window + n * 0.0005)
            halves.add(window + n * 0.0005)
    assert second.rate(2.5) == pytest.approx(100.0)
    assert halves.rate(2.5) == pytest.approx(200.0)
    for busy in (2.91, 2.95, 2.999):
        assert second.rate(busy) == pytest.approx(100.0)


def test_the_ring_meter_counts_the_oldest_bin_for_its_share_of_the_span() -> None:
    """Answers spread evenly read as their rate wherever in its bin the meter is read."""
    for busy in (2.9, 2.93, 2.96, 2.999):
        meter = RingMeter(0.1, 11)
        for n in range(round(busy * 100)):  # 100/s, between the bins' edges, to `busy`
            meter.add(n * 0.01 + 0.005)
        assert meter.rate(busy) == pytest.approx(100.0, abs=0.5)


def test_the_ring_meter_forgets_what_is_older_than_its_span() -> None:
    """Bins a quiet spell passed are emptied, however long the spell."""
    meter = RingMeter(0.1, 11)
    for n in range(50):
        meter.add(n * 0.01)  # 0 to 0.49 s
    assert meter.rate(0.5) == pytest.approx(50 / 1.0)
    meter.add(1.55)  # 0 to 0.49 s are out of its span (0.5 to 1.6 s) now
    assert meter.rate(1.55) == pytest.approx(1 / 1.0)
    meter.add(100.0)
    assert meter.rate(100.0) == pytest.approx(1 / 1.0)


def test_pause_spans_count_what_has_passed_within_the_span() -> None:
    """A pause counts for its part already passed and inside the span; overlaps once."""
    spans = PauseSpans()
    spans.add(10.0, 10.2)
    assert spans.share(10.05) == pytest.approx(0.05)  # 50 ms of it have passed
    assert spans.share(10.5) == pytest.approx(0.2)
    assert spans.share(11.1) == pytest.approx(0.1)  # begun before the span: its tail
    spans.add(11.15, 11.3)
    spans.add(11.2, 11.4)  # overlaps the last: one span, 11.15 to 11.4
    assert spans.share(11.5) == pytest.approx(0.25)  # the pause at 10 s has left the span
    assert len(spans.spans) == 1  # the first was dropped once over before the span
    assert spans.share(12.5) == 0.0 and not spans.spans
    spans.add(5.0, 5.0)  # empty: nothing
    assert spans.share(5.5) == 0.0


@given(st.lists(st.tuples(st.floats(0, 20), st.floats(0, 2)), max_size=12), st.floats(0, 25))
def test_pause_spans_share_is_a_share(pauses: list[tuple[float, float]], busy: float) -> None:
    """Whatever the pauses, the share is within [0, 1] and never over the time paused."""
    spans = PauseSpans()
    for start, length in sorted(pauses):
        spans.add(start, start + length)
    share = spans.share(busy)
    assert 0.0 <= share <= 1.0
    assert share <= sum(length for _, length in pauses) + 1e-9
