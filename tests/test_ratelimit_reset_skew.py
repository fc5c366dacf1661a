"""The window a limit named alone is read per: the longest reset shown lately, not ever.

A server that names its limit (``X-RateLimit-Limit: 100``) but not its window has the
learning read it per the longest counter reset it has shown, at least a second. Sent as an
epoch (``X-RateLimit-Reset: <unix time>``, as GitHub's API does), a reset is turned into
seconds by a wall clock: read against one 30 s behind for a single second (an NTP step at
boot), a fixed window of 100/s read as 100 per 31 s, and the client paced at ~3/s for the
rest of its life. Every test here runs on a fake clock: no timing enters an assertion.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Callable

import pytest

from contractsdk._ratelimit import PACING, RateLimiter, RateLimits
from tests._fakeclock import FakeClock

LIMIT = 100


class FixedWindow:
    """``limit`` requests per aligned window of ``window`` s, on the server's wall clock.

    ``X-RateLimit-Reset`` is the window's end as an epoch in whole seconds (``form``
    ``"epoch"``), or the seconds to it, rounded up (``"delta"``) or to the millisecond
    (``"delta-ms"``). ``skew`` puts the server's clock ahead of the true one.
    """

    def __init__(
        self, clock: FakeClock, *, limit: int = LIMIT, window: float = 1.0, form: str = "epoch"
    ) -> None:
        self.clock = clock
        self.limit = limit
        self.window = window
        self.form = form
        self.skew = 0.0
        self.date = False  # send a Date header, by the server's clock
        self.index = -1
        self.count = 0
        self.refused = 0

    def answer(self) -> tuple[int, dict[str, str]]:
        now = self.clock.wall() + self.skew
        index = math.floor(now / self.window)
        if index != self.index:
            self.index, self.count = index, 0
        self.count += 1
        end = (index + 1) * self.window
        if self.form == "epoch":
            reset = f"{end:.0f}"
        elif self.form == "delta":
            reset = str(math.ceil(end - now))
        else:
            reset = f"{end - now:.3f}"
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(0, self.limit - self.count)),
            "X-RateLimit-Reset": reset,
        }
        if self.date:
            headers["Date"] = email.utils.formatdate(math.floor(now), usegmt=True)
        if self.count > self.limit:
            self.refused += 1
            return 429, headers
        return 200, headers


def learner(clock: FakeClock, wall: Callable[[], float], *, max_pause: float = 60.0) -> RateLimiter:
    """A limiter that learns (no limit told) on ``clock``, reading ``wall`` as its wall clock."""
    return RateLimiter(
        RateLimits(),
        max_pause=max_pause,
        clock=clock,
        wall_clock=wall,
        sleep=clock.sleep,
        random=lambda: 0.5,
    )


async def drive(
    clock: FakeClock,
    limiter: RateLimiter,
    server: FixedWindow,
    seconds: float,
    *,
    each: Callable[[], None] | None = None,
) -> int:
    """Send one request at a time for ``seconds`` of fake time; return how many went."""
    end = clock() + seconds
    sent = 0
    while clock() < end:
        grant = await clock.run(limiter.acquire("GET"))
        status, headers = server.answer()
        await limiter.record(grant, status, headers)
        sent += 1
        if each is not None:
            each()
    return sent


def read_rate(limiter: RateLimiter) -> float:
    rate = limiter.state.read.rate
    assert rate is not None
    return rate


@pytest.mark.parametrize("whose", ["ours behind", "the server's ahead"])
async def test_a_moment_of_wall_clock_skew_does_not_pin_the_learnt_rate(whose: str) -> None:
    """Epoch resets read 30 s off for one second, then right: the rate comes back at once.

    Either clock may be off: ours behind reads the server's epoch 30 s too far away, the
    server's ahead names an epoch 30 s too late. Once the answers are right again, the
    next few (a second's worth, well under one at the pinned rate) bring the rate back to
    the server's 100/s; it was read as 100 per 31 s for ever.
    """
    clock = FakeClock()
    skew = {"ours": 0.0}
    limiter = learner(clock, lambda: clock.wall() - skew["ours"])
    server = FixedWindow(clock)
    if whose == "ours behind":
        skew["ours"] = 30.0
    else:
        server.skew = 30.0
    await drive(clock, limiter, server, 1.0)
    assert read_rate(limiter) <= LIMIT / 30  # the skewed epoch was taken as the window
    skew["ours"] = server.skew = 0.0
    await drive(clock, limiter, server, 1.0)
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING
    sent = await drive(clock, limiter, server, 5.0)
    assert sent >= 5 * 0.95 * LIMIT * PACING
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING
    assert limiter.state.read.throttles == 0


@pytest.mark.parametrize("skew", [30.0, -30.0, 600.0])
async def test_a_server_clock_off_for_good_is_read_by_its_date(skew: float) -> None:
    """A server whose clock stays off ours, and says so in its Date: its epochs read by it.

    Every answer named the same wrong window (31 s for a server 30 s ahead), so no rule of
    the limiter's could tell it from a real one, and the client paced at ~3/s for good.
    """
    clock = FakeClock()
    limiter = learner(clock, clock.wall)
    server = FixedWindow(clock)
    server.skew, server.date = skew, True
    sent = await drive(clock, limiter, server, 6.0)
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING
    assert sent >= 5 * 0.95 * LIMIT * PACING
    assert limiter.state.read.throttles == 0


@pytest.mark.parametrize(
    "reset",
    [str(int(FakeClock().wall()) + 365 * 86400), "86400"],
    ids=["an epoch a year away", "a day in seconds"],
)
async def test_one_absurd_reset_does_not_pin_the_learnt_rate(reset: str) -> None:
    """A single answer with a reset a year or a day away: cut to max_pause, then forgotten.

    The answers after it say the counter resets within a second: a counter does not reset
    sooner than it said, so the absurd one is dropped, not kept as the window for good.
    """
    clock = FakeClock()
    limiter = learner(clock, clock.wall)
    server = FixedWindow(clock)
    await drive(clock, limiter, server, 1.0)
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING
    grant = await clock.run(limiter.acquire("GET"))
    absurd = {"X-RateLimit-Limit": str(LIMIT), "X-RateLimit-Remaining": "50"}
    await limiter.record(grant, 200, {**absurd, "X-RateLimit-Reset": reset})
    assert read_rate(limiter) <= LIMIT / 50  # read as 100 per max_pause (60 s)
    await drive(clock, limiter, server, 1.0)
    sent = await drive(clock, limiter, server, 3.0)
    assert sent >= 3 * 0.95 * LIMIT * PACING
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING


@pytest.mark.parametrize("skew", [0.3, 0.9, 3.0])
async def test_a_smaller_skew_is_outlived_too(skew: float) -> None:
    """A skew of a few seconds at most: the window comes back within seconds, the rate after.

    0.3 s or 0.9 s is too little to contradict (a reset 1.9 s away for a window of 1 s):
    the window is the longest reset of the last span or two of readings, a span lasting
    the window taken, and a longer reading that later answers never repeat is forgotten.
    3 s is contradicted at once. Either way the slow start had jumped to 100 per
    (1 + skew) s, a limit the server seemed to name, which the learning then probes past
    only slowly (CUBIC, as when a server raises its limit): the rate is back within 30 s,
    not at once, but no longer held there for the rest of the client's life.
    """
    clock = FakeClock()
    ours = {"skew": skew}
    limiter = learner(clock, lambda: clock.wall() - ours["skew"])
    server = FixedWindow(clock)
    queue = limiter._queues["read"]
    await drive(clock, limiter, server, 1.0)
    assert queue.max_reset >= 1 + skew - 0.05
    assert read_rate(limiter) <= LIMIT / (1 + skew - 0.05)
    ours["skew"] = 0.0
    await drive(clock, limiter, server, 5.0)
    assert queue.max_reset == 1.0
    await drive(clock, limiter, server, 25.0)
    assert read_rate(limiter) >= 0.95 * LIMIT * PACING
    assert server.refused == 0


@pytest.mark.parametrize("form", ["epoch", "delta", "delta-ms"])
async def test_a_real_long_window_is_kept(form: str) -> None:
    """A window of 10 s (1,000 per window) stays 10 s, however its resets are written.

    Its resets come down from 10 to 0 and back each window: the longest of lately is its
    length again in every span, and the rate stays under 100/s throughout (read per 1 s,
    the learning would aim at 1,000/s, and the window refuse most of each).
    """
    clock = FakeClock()
    limiter = learner(clock, clock.wall)
    server = FixedWindow(clock, limit=1000, window=10.0, form=form)
    queue = limiter._queues["read"]
    windows: list[float] = []
    rates: list[float] = []

    def look() -> None:
        windows.append(queue.max_reset)
        rates.append(read_rate(limiter))

    await drive(clock, limiter, server, 10.0)  # a window's end passes: its length is read
    assert queue.max_reset >= 9.5
    await drive(clock, limiter, server, 40.0, each=look)
    assert min(windows) >= 9.5
    assert max(windows) <= 10.0 + 1e-9
    assert max(rates) <= 1000 / 10
