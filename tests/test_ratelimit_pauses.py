"""The rate limiter's pauses on a fake clock: Retry-After, exhausted counters, max_pause."""

from __future__ import annotations

import asyncio
import email.utils

import pytest

from contractsdk._ratelimit import PACING, SLOW_START_RATE, RateLimits
from contractsdk._ratelimit._queue import IDLE_SPREAD
from tests._fakeclock import NOW_WALL, FakeClock
from tests._limiterkit import answer, grant_times, make_limiter


async def test_pause_holds_every_waiter() -> None:
    """A 429 with Retry-After pauses the whole bucket, including tasks already waiting."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    start = clock()
    await limiter.acquire("POST")
    waiting = [asyncio.ensure_future(limiter.acquire("POST")) for _ in range(3)]
    await clock.settle()
    await answer(limiter, "POST", 429, {"Retry-After": "2"})
    times = await grant_times(clock, limiter, 1)
    await clock.run(asyncio.gather(*waiting))
    step = 1 / (10 * PACING)
    # The pause empties the bucket: the first goes when it ends, the rest one interval apart.
    assert [start + task.result().waited for task in waiting] == pytest.approx(
        [start + 2, start + 2 + step, start + 2 + 2 * step]
    )
    assert times == pytest.approx([start + 2 + 3 * step])


async def test_pause_only_extends() -> None:
    """A shorter Retry-After does not cut a longer pause short."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    await answer(limiter, "POST", 429, {"Retry-After": "10"})
    await answer(limiter, "POST", 429, {"Retry-After": "1"})
    assert limiter.state.write.paused_for == 10.0


async def test_retry_after_on_503_pauses_but_not_on_200() -> None:
    """Retry-After pauses on 429 and 5xx answers; on a success it means nothing."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await answer(limiter, "POST", 200, {"Retry-After": "3"})
    assert limiter.state.write.paused_for == 0.0
    await answer(limiter, "POST", 503, {"Retry-After": "3"})
    assert limiter.state.write.paused_for == 3.0
    assert limiter.state.write.throttles == 0


async def test_retry_after_date_and_ms_pause() -> None:
    """Retry-After as an HTTP-date and retry-after-ms set the pause."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(read=10, write=10))
    await answer(
        limiter, "GET", 429, {"Retry-After": email.utils.formatdate(clock.wall() + 4, usegmt=True)}
    )
    await answer(limiter, "POST", 429, {"retry-after-ms": "1500"})
    assert limiter.state.read.paused_for == pytest.approx(4.0)
    assert limiter.state.write.paused_for == pytest.approx(1.5)


async def test_429_without_retry_after_pauses_briefly() -> None:
    """A bare 429 pauses one interval; at the told limit the first only pauses.

    A second fresh 429 within STRIKE_WINDOW means the limit is lower than told: the rate
    drops, and the pause is one interval of the lowered rate.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await limiter.acquire("POST")
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.rate == 10 * PACING
    assert state.paused_for == pytest.approx(1 / state.rate)
    assert state.throttles == 1
    await clock.advance(0.2)
    await answer(limiter, "POST", 429, {})
    state = limiter.state.write
    assert state.rate is not None
    assert state.rate < 10 * PACING
    assert state.paused_for == pytest.approx(1 / state.rate)
    assert state.throttles == 2


async def test_clients_refused_together_do_not_come_back_together() -> None:
    """Two clients of one key, without shared state, each draw their bare 429's pause.

    Both told 10/s, both refused at the same moment: their pauses are one interval times
    half to one and a half, drawn apart (0.6 and 1.4 here), so they do not meet again at
    the same instant; a named Retry-After stays exact for both.
    """
    clock = FakeClock()
    low, high = (make_limiter(clock, RateLimits(write=10), draw=draw) for draw in (0.1, 0.9))
    for limiter in (low, high):
        await limiter.acquire("POST")
        await answer(limiter, "POST", 429, {})
    interval = 1 / (10 * PACING)
    assert low.state.write.paused_for == pytest.approx(0.6 * interval)
    assert high.state.write.paused_for == pytest.approx(1.4 * interval)
    for limiter in (low, high):
        await answer(limiter, "POST", 429, {"Retry-After": "3"})
        assert limiter.state.write.paused_for == 3.0


@pytest.mark.parametrize("headers", [{"Retry-After": "0"}, {"retry-after-ms": "0"}])
async def test_a_retry_after_of_zero_pauses_as_a_bare_429(headers: dict[str, str]) -> None:
    """A 429 that says to retry now pauses one interval, as one that says nothing.

    Taken for a pause of 0, it let every retry go back to back.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await limiter.acquire("POST")
    await answer(limiter, "POST", 429, headers)
    assert limiter.state.write.paused_for == pytest.approx(1 / (10 * PACING))


async def test_not_adaptive_keeps_its_rate_but_obeys_retry_after() -> None:
    """adaptive=False: a 429 does not change the rate; its Retry-After still pauses."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, adaptive=False))
    await limiter.acquire("POST")
    await answer(limiter, "POST", 429, {"Retry-After": "1"})
    state = limiter.state.write
    assert state.rate == 10 * PACING
    assert state.paused_for == 1.0


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"},
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) + 3)},
        {"RateLimit-Remaining": "0", "RateLimit-Reset": "3"},
        {"RateLimit": '"default";r=0;t=3'},
    ],
)
async def test_exhausted_counter_on_a_429_pauses_until_reset(headers: dict[str, str]) -> None:
    """A 429 with remaining 0 pauses the bucket until the counter's reset."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10))
    await answer(limiter, "POST", 429, headers)
    assert limiter.state.write.paused_for == pytest.approx(3.0)
    assert limiter.state.write.server_remaining == 0


async def test_a_whole_second_retry_after_gives_way_to_the_finer_reset() -> None:
    """Retry-After: 1 and an empty counter resetting in 0.19 s: the bucket pauses 0.19 s.

    A sliding log's oldest entry leaves in 0.19 s; HTTP's Retry-After can only say 1. One
    leaving in 0.3 ms says ``Reset: 0.000``: no pause at all. A reset for another counter
    (longer, or more than a second shorter) is not taken.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100, adaptive=False))
    finer = {"Retry-After": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "0.190"}
    await answer(limiter, "POST", 429, finer)
    assert limiter.state.write.paused_for == pytest.approx(0.19)
    await clock.advance(1)
    rounded = {"Retry-After": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "0.000"}
    await answer(limiter, "POST", 429, rounded)
    assert limiter.state.write.paused_for == 0
    await clock.advance(1)
    other = {"Retry-After": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "0.5"}
    await answer(limiter, "POST", 429, other)
    assert limiter.state.write.paused_for == pytest.approx(2.0)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"},
        {"RateLimit": '"default";r=0;t=3'},
    ],
)
async def test_exhausted_counter_on_a_success_empties_but_does_not_lower(
    headers: dict[str, str],
) -> None:
    """A success with remaining 0 empties the bucket, with no pause and no decrease.

    The reset may be a window's end or a token bucket's time to full: only a refusal
    says that nothing passes until then, and the request itself went through.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100, burst=20))
    await clock.advance(10)
    grant = await limiter.acquire("POST")
    await limiter.record(grant, 200, headers)
    state = limiter.state.write
    assert state.paused_for == 0.0
    assert state.tokens == pytest.approx(0.0, abs=1e-9)
    assert state.throttles == 0
    assert state.rate == 100 * PACING


async def test_remaining_zero_on_every_success_never_collapses_the_rate() -> None:
    """A burst-1 server says remaining 0 after every request: the rate holds.

    It once fell from 4.95/s to 0.5/s in eight requests.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=5))
    for _ in range(50):
        grant = await clock.run(limiter.acquire("POST"))
        await limiter.record(grant, 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"})
    assert limiter.state.write.rate == 5 * PACING
    learner = make_limiter(clock, RateLimits())
    for _ in range(50):
        grant = await clock.run(learner.acquire("POST"))
        await learner.record(grant, 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"})
    rate = learner.state.write.rate
    assert rate is not None
    assert rate >= SLOW_START_RATE  # a hint never lowers the rate


async def test_exhausted_counter_pauses_a_bucket_that_does_not_pace() -> None:
    """Without a rate to pace at (unknown limits, not adaptive), remaining 0 pauses."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(adaptive=False))
    await answer(limiter, "POST", 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3"})
    assert limiter.state.write.paused_for == pytest.approx(3.0)


async def test_remaining_caps_the_tokens() -> None:
    """Remaining N caps the tokens at N: the bucket will not burst past the server's count."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=100, burst=20))
    await clock.advance(10)
    assert limiter.state.write.tokens == pytest.approx(20 - 1 - 100 * PACING * IDLE_SPREAD)
    await answer(limiter, "POST", 200, {"RateLimit": "d;r=3;t=1"})
    assert limiter.state.write.tokens == 3


# --------------------------------------------------------------------------------------
# No answer bricks a client: every pause is cut to max_pause, absurd values ignored


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "1e9"},
        {"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"},
        {"retry-after-ms": "1e15"},
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) + 10**8)},
        {"RateLimit": '"d";r=0;t=99999999'},
    ],
)
async def test_no_answer_pauses_past_max_pause(headers: dict[str, str]) -> None:
    """An absurd Retry-After or reset pauses the bucket max_pause at most; then it goes on."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=30)
    grant = await limiter.acquire("POST")
    await limiter.record(grant, 429, headers)
    assert 0 < limiter.state.write.paused_for <= 30
    start = clock()
    later = await clock.run(limiter.acquire("POST"))
    assert clock() - start <= 30 + 1
    assert later.waited <= 31


@pytest.mark.parametrize(
    ("limits", "paused"),
    [(RateLimits(write=10), 0.0), (RateLimits(adaptive=False), 30.0)],
    ids=["paced: no pause", "unpaced: up to max_pause"],
)
async def test_a_success_with_a_reset_a_year_away_pauses_no_longer(
    limits: RateLimits, paused: float
) -> None:
    """Remaining 0 on a success with its reset a year away pauses max_pause at most.

    A paced bucket does not pause at all (the request went through); one with no rate to
    pace at waits for the reset, cut to max_pause.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, limits, max_pause=30)
    reset = str(int(NOW_WALL) + 365 * 86400)
    await answer(limiter, "POST", 200, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    assert limiter.state.write.paused_for == pytest.approx(paused)
    start = clock()
    await clock.run(limiter.acquire("POST"))
    assert clock() - start <= paused + 1


async def test_max_pause_of_the_limits_wins() -> None:
    """RateLimits(max_pause=...) sets the cap, whatever the retry policy says."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, max_pause=2), max_pause=60)
    await answer(limiter, "POST", 429, {"Retry-After": "3600"})
    assert limiter.state.write.paused_for == 2


async def test_an_absurdly_slow_policy_is_not_believed() -> None:
    """RateLimit-Policy w=1000000 would pace one request a fortnight: ignored."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=60)
    await answer(limiter, "POST", 200, {"RateLimit-Policy": '"p";q=1;w=1000000'})
    assert limiter.state.write.limit == 10
    assert limiter.state.write.rate == 10 * PACING
    times = await grant_times(clock, limiter, 3)
    assert times[-1] - times[0] < 1


async def test_a_long_lived_client_is_usable_after_any_answer() -> None:
    """Whatever one answer said, the next minutes of calls are paced normally again."""
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10), max_pause=60)
    await answer(limiter, "POST", 429, {"Retry-After": "99999999"})
    await clock.advance(61)
    times = await grant_times(clock, limiter, 5)
    assert times[-1] - times[0] < 1.0


@pytest.mark.parametrize(
    ("status", "headers", "most"),
    [
        (200, {"RateLimit-Policy": '"d";q=1;w=10', "RateLimit": '"d";r=0;t=10'}, 10.5),
        (200, {"RateLimit-Policy": '"d";q=1;w=2', "RateLimit": '"d";r=0;t=2'}, 2.5),
        (429, {"Retry-After": "1", "RateLimit-Policy": '"d";q=1;w=5'}, 5.5),
        (
            200,
            {"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"},
            1.5,
        ),
    ],
    ids=["1 per 10 s, none left", "1 per 2 s, none left", "429 and 1 per 5 s", "legacy, 1 left 0"],
)
async def test_a_slow_limit_named_by_one_answer_holds_the_next_request_for_its_window(
    status: int, headers: dict[str, str], most: float
) -> None:
    """The next request waits the window the answer names, not minutes or hours.

    A pause or an emptied bucket wrote ``tat`` in the new schedule's terms while the bucket
    stayed on the old one; the next reservation then rescaled that by the ratio of the
    intervals: 1 per 10 s after a learnt 20/s held the next request 2,061 s.
    """
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(), max_pause=60)
    grant = await clock.run(limiter.acquire("GET"))  # on the slow start's 20/s
    await answer(limiter, "GET", status, headers, grant)
    start = clock()
    await clock.run(limiter.acquire("GET"))
    assert clock() - start <= most
