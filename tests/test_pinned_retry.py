"""The retry policy where no other test pinned it: 504s, bounds, edges, cancels.

Settings at their bounds, Retry-After at its edges, a retry cancelled in flight, and an
unknown outcome met by a middle attempt.
"""

from __future__ import annotations

import asyncio

import pytest

from contractsdk import (
    ConfigurationError,
    ConnectError,
    NotFoundError,
    RateLimitError,
    ReadError,
    Request,
    Response,
    ServerError,
)
from contractsdk._http import Call
from contractsdk._retry import Retrier, Retries, RetryBudget, should_retry
from tests._fakeclock import FakeClock
from tests._retrykit import KEY, URL, post, request, status_error

OK = Response(status_code=200, content=b"{}")


def make_retrier(
    clock: FakeClock, config: Retries | None = None, *, budget: RetryBudget | None = None
) -> Retrier:
    return Retrier(
        config or Retries(), budget=budget, clock=clock, sleep=clock.sleep, random=lambda: 0.5
    )


def rate_limited(retry_after: float | None) -> RateLimitError:
    return RateLimitError("429", status_code=429, retry_after=retry_after)


class Script:
    """An attempt function answering from a script, one outcome per attempt."""

    def __init__(self, outcomes: list[BaseException | Response]) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[Request] = []

    async def __call__(self, call: Call) -> Response:
        self.requests.append(call.request)
        outcome = self.outcomes[min(len(self.requests), len(self.outcomes)) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (Call(request()), True),
        (Call(request("PUT")), True),
        (Call(request("DELETE")), True),
        (Call(post(key=True), trust_key=True), True),
        (Call(post(key=True)), False),
        (Call(request("PATCH")), False),
    ],
    ids=["GET", "PUT", "DELETE", "trusted POST", "POST", "PATCH"],
)
def test_a_504_is_retried_when_the_call_is_replayable(call: Call, expected: bool) -> None:
    """A gateway timeout may follow processing: retried for a replayable call only."""
    assert should_retry(status_error(504), call=call) is expected


async def test_a_504_to_a_read_is_retried_until_it_succeeds() -> None:
    """A read answered 504 then 200 succeeds on its second attempt."""
    clock = FakeClock()
    script = Script([status_error(504), OK])
    assert await clock.run(make_retrier(clock).call(Call(request()), script)) is OK
    assert len(script.requests) == 2


async def test_a_budget_of_zero_is_accepted_and_pays_for_no_retry() -> None:
    """``Retries(budget=0)`` is a valid setting: every retryable failure is raised at once."""
    config = Retries(budget=0)
    assert config.budget == 0
    clock = FakeClock()
    script = Script([status_error(503), OK])
    retrier = make_retrier(clock, config, budget=RetryBudget(0))
    with pytest.raises(ServerError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 1
    assert clock.sleeps == []


async def test_a_retry_after_max_of_zero_waits_out_no_retry_after() -> None:
    """``retry_after_max=0``: a named wait raises at once; a bare 429 is still retried."""
    config = Retries(retry_after_max=0.0)
    clock = FakeClock()
    with pytest.raises(RateLimitError) as caught:
        await clock.run(
            make_retrier(clock, config).call(Call(request()), Script([rate_limited(1.0), OK]))
        )
    assert caught.value.attempts == 1
    bare = Script([rate_limited(None), OK])
    assert await clock.run(make_retrier(clock, config).call(Call(request()), bare)) is OK


def test_an_infinite_timeout_is_refused() -> None:
    """A deadline is finite or None: ``timeout=inf`` raises ConfigurationError."""
    with pytest.raises(ConfigurationError):
        Retries(timeout=float("inf"))


async def test_a_sub_second_retry_after_is_waited_exactly() -> None:
    """``Retry-After`` (as ``retry-after-ms`` gives it) of 0.5 s is the wait, not a backoff."""
    clock = FakeClock()
    script = Script([rate_limited(0.5), OK])
    await clock.run(make_retrier(clock).call(Call(request()), script))
    assert clock.sleeps == [0.5]


async def test_a_retry_after_equal_to_its_maximum_is_waited_out() -> None:
    """Only a Retry-After longer than ``retry_after_max`` is refused; one equal to it waits."""
    clock = FakeClock()
    script = Script([rate_limited(60.0), OK])
    assert await clock.run(make_retrier(clock).call(Call(request()), script)) is OK
    assert clock.sleeps == [60.0]


async def test_a_wait_that_ends_at_the_deadline_is_not_started() -> None:
    """A wait that would use up the call's whole deadline leaves no time to retry."""
    clock = FakeClock()
    script = Script([rate_limited(3.0), OK])
    retrier = make_retrier(clock, Retries(timeout=3.0))
    with pytest.raises(RateLimitError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 1
    assert clock.sleeps == []


async def test_a_retry_cancelled_while_in_flight_stays_paid_for() -> None:
    """Only a retry never sent is refunded: one cancelled while it was sent is not."""
    clock = FakeClock()
    budget = RetryBudget(50)
    attempts: list[int] = []

    async def attempt(call: Call) -> Response:
        attempts.append(call.attempts)
        if len(attempts) == 1:
            raise status_error(503)
        await clock.sleep(10.0)  # the retry is on the wire
        return OK

    task = asyncio.ensure_future(make_retrier(clock, budget=budget).call(Call(request()), attempt))
    await clock.advance()  # the backoff ends; the retry is sent
    assert attempts == [1, 2]
    assert clock.pending == 1
    task.cancel()
    await clock.settle()
    assert task.cancelled()
    assert budget.available == 45


async def test_an_unknown_outcome_of_a_middle_attempt_is_kept() -> None:
    """A write whose second attempt's answer was lost still says so after a 404 on the third."""
    clock = FakeClock()
    call = Call(Request(method="DELETE", url=URL, headers=KEY))
    script = Script([ConnectError("refused"), ReadError("reset"), status_error(404)])
    with pytest.raises(NotFoundError) as caught:
        await clock.run(make_retrier(clock).call(call, script))
    assert caught.value.attempts == 3
    assert caught.value.outcome_unknown
