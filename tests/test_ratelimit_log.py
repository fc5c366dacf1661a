"""The learning's turns are logged at DEBUG on ``contractsdk.ratelimit`` (``_limiter.py``)."""

from __future__ import annotations

import logging

import pytest

from contractsdk._ratelimit import RateLimits
from tests._fakeclock import FakeClock
from tests._limiterkit import make_limiter

LOGGER = "contractsdk.ratelimit"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


async def test_a_slow_start_logs_nothing_until_a_429_ends_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits())  # nothing told: the rate is learnt
    for _ in range(40):  # the rate doubles on the way: no turn
        grant = await clock.run(limiter.acquire("POST"))
        await limiter.record(grant, 201, {})
    assert _lines(caplog) == []
    before = limiter.state.write.rate
    assert before is not None
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {})
    (line,) = _lines(caplog)
    assert line.startswith(f"write bucket, after a 429: {before:.1f} -> ")
    assert "slow -> cubic" in line and "epoch 1" in line
    after = limiter.state.write.rate
    assert after is not None and f"-> {after:.1f}/s" in line


async def test_a_pause_at_a_told_limit_is_logged_with_its_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, burst=1))
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {"Retry-After": "2"})
    (line,) = _lines(caplog)
    assert line.startswith("write bucket, after a 429: 9.9 -> ")
    assert line.endswith("paused 2.000 s")


async def test_nothing_is_formatted_when_debug_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = FakeClock()
    limiter = make_limiter(clock, RateLimits(write=10, burst=1))
    grant = await clock.run(limiter.acquire("POST"))
    await limiter.record(grant, 429, {"Retry-After": "2"})
    assert _lines(caplog) == []
    assert limiter.state.write.paused_for == pytest.approx(2.0)
