"""The Retrier on a fake clock: attempts, Retry-After, deadlines, cancellation, the budget."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

import pytest
import tenacity

from contractsdk import (
    APIError,
    ConnectError,
    NotFoundError,
    RateLimitError,
    ReadError,
    ReadTimeoutError,
    Request,
    Response,
    ServerError,
)
from contractsdk._http import Call
from contractsdk._ratelimit import PACING, RateLimiter, RateLimits
from contractsdk._retry import Retrier, Retries, RetryBudget, RetryEvent
from tests._fakeclock import FakeClock
from tests._retrykit import KEY, URL, post, request, status_error

OK = Response(status_code=200, content=b"{}")


class Script:
    """An attempt function that raises or answers from a script, recording its calls."""

    def __init__(
        self, clock: FakeClock, outcomes: Sequence[BaseException | Response], *, trip: float = 0.0
    ) -> None:
        self.clock = clock
        self.outcomes = list(outcomes)
        self.trip = trip
        self.requests: list[Request] = []
        self.times: list[float] = []

    async def __call__(self, call: Call) -> Response:
        req = call.request
        self.requests.append(req)
        self.times.append(self.clock())
        if self.trip:
            await self.clock.sleep(self.trip)
        outcome = self.outcomes[min(len(self.requests), len(self.outcomes)) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def make_retrier(
    clock: FakeClock,
    config: Retries | None = None,
    *,
    budget: RetryBudget | None = None,
    random: Callable[[], float] = lambda: 0.5,
) -> Retrier:
    return Retrier(
        config or Retries(), budget=budget, clock=clock, sleep=clock.sleep, random=random
    )


async def test_first_try_success_refunds_one() -> None:
    """A first-try success returns the response and refunds 1 to the budget."""
    clock = FakeClock()
    budget = RetryBudget(500)
    budget.available = 400
    script = Script(clock, [OK])
    assert await make_retrier(clock, budget=budget).call(Call(request()), script) is OK
    assert len(script.requests) == 1
    assert budget.available == 401
    assert clock.sleeps == []


async def test_retries_then_succeeds() -> None:
    """A 503 then a 200: two attempts, one jittered wait, one retry event."""
    clock = FakeClock()
    events: list[RetryEvent] = []
    script = Script(clock, [status_error(503), OK])
    retrier = make_retrier(clock, random=lambda: 0.5)
    response = await clock.run(retrier.call(Call(request()), script, on_retry=events.append))
    assert response is OK
    assert len(script.requests) == 2
    assert clock.sleeps == [0.25]  # U(0, 0.5) drew 0.5
    assert len(events) == 1
    event = events[0]
    assert (event.attempt, event.wait, event.method, event.path) == (
        1,
        0.25,
        "GET",
        "/v1/users/1/contracts",
    )
    assert isinstance(event.error, ServerError)
    assert "retrying in 0.25 s" in str(event)


async def test_async_on_retry_is_awaited() -> None:
    """An async on_retry hook is awaited before each wait."""
    clock = FakeClock()
    seen: list[int] = []

    async def hook(event: RetryEvent) -> None:
        seen.append(event.attempt)

    script = Script(clock, [ConnectError("down"), ConnectError("down"), OK])
    await clock.run(make_retrier(clock).call(Call(request()), script, on_retry=hook))
    assert seen == [1, 2]


async def test_gives_up_after_the_attempts_with_the_last_real_error() -> None:
    """After the last attempt the last real error is raised, never tenacity's RetryError."""
    clock = FakeClock()
    errors = [status_error(502), ConnectError("reset"), status_error(503)]
    script = Script(clock, errors)
    with pytest.raises(ServerError) as caught:
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert caught.value is errors[2]
    assert not isinstance(caught.value, tenacity.RetryError)
    assert caught.value.attempts == 3
    assert "(after 3 attempts)" in str(caught.value)
    assert len(script.requests) == 3
    assert clock.sleeps == [0.25, 0.5]  # U(0, 0.5) and U(0, 1), both drew 0.5


async def test_not_retryable_is_raised_at_once() -> None:
    """A 404 is raised after one attempt, without waiting."""
    clock = FakeClock()
    script = Script(clock, [status_error(404), OK])
    with pytest.raises(NotFoundError) as caught:
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert caught.value.attempts == 1
    assert len(script.requests) == 1
    assert clock.sleeps == []


async def test_bug_in_attempt_is_not_retried() -> None:
    """An exception outside the SDK's tree is a bug: raised at once, untouched."""
    clock = FakeClock()
    script = Script(clock, [ValueError("oops"), OK])
    with pytest.raises(ValueError, match="oops"):
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert len(script.requests) == 1


async def test_post_is_replayed_after_a_read_timeout_only_under_a_trusted_key() -> None:
    """A POST whose outcome is unknown is replayed only with a key the client trusts."""
    clock = FakeClock()
    for call in (Call(post()), Call(post(key=True)), Call(post(), trust_key=True)):
        script = Script(clock, [ReadTimeoutError("slow"), OK])
        with pytest.raises(ReadTimeoutError) as caught:
            await clock.run(make_retrier(clock).call(call, script))
        assert caught.value.attempts == 1
        assert caught.value.outcome_unknown
    script = Script(clock, [ReadTimeoutError("slow"), OK])
    trusted = Call(post(key=True), trust_key=True)
    assert await clock.run(make_retrier(clock).call(trusted, script)) is OK


async def test_idempotency_key_unchanged_across_attempts() -> None:
    """Every attempt gets the same request, so the same Idempotency-Key."""
    clock = FakeClock()
    req = post(key=True)
    script = Script(clock, [status_error(503), ReadError("reset"), OK])
    await clock.run(make_retrier(clock).call(Call(req, trust_key=True), script))
    assert len(script.requests) == 3
    assert all(sent is req for sent in script.requests)
    assert {sent.headers["Idempotency-Key"] for sent in script.requests} == {"call-7f3a"}


async def test_single_attempt_policy_never_retries() -> None:
    """Retries(attempts=1) makes one attempt."""
    clock = FakeClock()
    script = Script(clock, [status_error(503), OK])
    with pytest.raises(ServerError) as caught:
        await clock.run(make_retrier(clock, Retries.none()).call(Call(request()), script))
    assert caught.value.attempts == 1


def rate_limited(retry_after: float | None) -> RateLimitError:
    return RateLimitError("429", status_code=429, retry_after=retry_after)


async def test_retry_after_is_honoured_exactly() -> None:
    """A 429's Retry-After is the wait, with no jitter below it."""
    clock = FakeClock()
    script = Script(clock, [rate_limited(3.0), OK])
    await clock.run(make_retrier(clock, random=lambda: 0.0).call(Call(request()), script))
    assert clock.sleeps == [3.0]
    assert script.times[1] - script.times[0] == 3.0


async def test_a_429_waits_the_finer_reset_its_retry_after_rounds_up() -> None:
    """The error's ``wait`` (an empty counter's reset, 0.19 s), not its whole-second 1 s.

    A wait of 0 (``Reset: 0.000``) names none: with a limiter, the retry waits on its
    pause alone; without one, a 429's usual backoff.
    """
    clock = FakeClock()
    finer = RateLimitError("429", status_code=429, retry_after=1.0, wait=0.19)
    script = Script(clock, [finer, OK])
    await clock.run(make_retrier(clock).call(Call(request()), script))
    assert clock.sleeps == [0.19]
    now = RateLimitError("429", status_code=429, retry_after=1.0, wait=0.0)
    paced = Retrier(Retries(), budget=None, clock=clock, sleep=clock.sleep, paced=True)
    await clock.run(paced.call(Call(request()), Script(clock, [now, OK])))
    assert clock.sleeps == [0.19, 0.0]
    await clock.run(make_retrier(clock).call(Call(request()), Script(clock, [now, OK])))
    assert clock.sleeps == [0.19, 0.0, 0.25]  # the backoff of a 429 without Retry-After


async def test_retry_after_beyond_the_deadline_fails_at_once() -> None:
    """A Retry-After that would end past the call's deadline raises at once, with attempts."""
    clock = FakeClock()
    script = Script(clock, [status_error(503), rate_limited(5.0), OK])
    retrier = make_retrier(clock, Retries(timeout=3.0, attempts=5))
    with pytest.raises(RateLimitError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 2
    assert clock.sleeps == [0.25]


async def test_retry_after_beyond_its_maximum_fails_at_once() -> None:
    """A Retry-After longer than retry_after_max is not waited out."""
    clock = FakeClock()
    script = Script(clock, [rate_limited(3600.0), OK])
    with pytest.raises(RateLimitError) as caught:
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert caught.value.attempts == 1
    assert clock.sleeps == []


async def test_no_wait_crosses_the_deadline() -> None:
    """A backoff that would end past the deadline stops the retrying."""
    clock = FakeClock()
    script = Script(clock, [ConnectError("down")] * 5, trip=0.6)
    retrier = make_retrier(clock, Retries(timeout=1.0, attempts=5), random=lambda: 0.9)
    with pytest.raises(ConnectError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 1  # 0.6 s spent + 0.45 s wait > 1.0 s
    assert clock.sleeps == [0.6]  # the attempt's own round trip, no backoff


async def test_cancelled_attempt_is_not_retried() -> None:
    """CancelledError from an attempt propagates at once: no retry, no wait."""
    clock = FakeClock()
    script = Script(clock, [asyncio.CancelledError(), OK])
    with pytest.raises(asyncio.CancelledError):
        await make_retrier(clock).call(Call(request()), script)
    assert len(script.requests) == 1
    assert clock.sleeps == []


async def test_cancelled_retry_attempt_is_not_retried() -> None:
    """CancelledError on a retry attempt (inside tenacity) propagates at once too."""
    clock = FakeClock()
    script = Script(clock, [status_error(503), asyncio.CancelledError(), OK])
    with pytest.raises(asyncio.CancelledError):
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert len(script.requests) == 2
    assert clock.sleeps == [0.25]


async def test_cancel_during_the_backoff_stops_everything() -> None:
    """Cancelling the task while it waits to retry ends the call: no further attempt."""
    clock = FakeClock()
    script = Script(clock, [status_error(503), OK])
    task = asyncio.ensure_future(make_retrier(clock).call(Call(request()), script))
    await clock.settle()
    assert clock.pending == 1  # waiting to retry
    task.cancel()
    await clock.settle()
    assert task.cancelled()
    assert len(script.requests) == 1
    assert clock.pending == 0


async def test_a_retry_cancelled_in_its_backoff_costs_the_budget_nothing() -> None:
    """The budget pays for a retry before its backoff; a cancel there gives it back.

    Ten reads cancelled while they waited to retry left a budget of 50 empty, and the next
    call that met one 503 was not retried.
    """
    clock = FakeClock()
    budget = RetryBudget(50)
    for _ in range(10):
        script = Script(clock, [status_error(503), OK])
        task = asyncio.ensure_future(
            make_retrier(clock, budget=budget).call(Call(request()), script)
        )
        await clock.settle()
        assert clock.pending == 1  # waiting to retry, the retry paid for
        task.cancel()
        await clock.settle()
        assert task.cancelled()
    assert budget.available == 50
    script = Script(clock, [status_error(503), OK])
    assert await clock.run(make_retrier(clock, budget=budget).call(Call(request()), script)) is OK


@pytest.mark.parametrize(
    ("method", "last", "unknown"),
    [
        ("POST", rate_limited(100.0), True),  # the replay's 429 is not the call's outcome
        ("POST", status_error(409), True),  # the first attempt is still being processed
        ("DELETE", status_error(404), True),  # gone: maybe by the first attempt
        ("GET", status_error(404), False),  # a read changes nothing
    ],
)
async def test_an_earlier_attempt_that_may_have_been_processed_is_not_forgotten(
    method: str, last: APIError, unknown: bool
) -> None:
    """A write whose answer was lost, replayed and then refused, still says it may exist.

    A create replayed under a trusted key after its answer was lost, and refused a 429,
    ended as a plain RateLimitError ("not processed"), though the contract was made; the
    caller who sent it again made a second one.
    """
    clock = FakeClock()
    call = Call(Request(method=method, url=URL, headers=KEY), trust_key=True)
    script = Script(clock, [ReadError("the connection broke"), last])
    config = Retries(attempts=2, rate_limited_attempts=2, retry_after_max=1.0)
    with pytest.raises(type(last)) as caught:
        await clock.run(make_retrier(clock, config).call(call, script))
    assert len(script.requests) == 2
    assert caught.value.outcome_unknown is unknown
    assert str(caught.value).endswith("; the request may have been processed") is unknown


async def test_429s_are_retried_past_the_attempts() -> None:
    """Five 429s then a 200 under the defaults: the call succeeds at its sixth attempt.

    A 429 was not processed and the limiter slows down for it: three of them in a row
    (the limiter finding the limit, processes crowding one key) no longer fail the call.
    """
    clock = FakeClock()
    script = Script(clock, [rate_limited(None)] * 5 + [OK])
    call = Call(post(key=True))
    assert await clock.run(make_retrier(clock).call(call, script)) is OK
    assert call.attempts == 6
    assert len(clock.sleeps) == 5


async def test_429s_stop_at_the_rate_limited_attempts() -> None:
    """429s every time: the call gives up after ``rate_limited_attempts``, with the 429."""
    clock = FakeClock()
    script = Script(clock, [rate_limited(None)])
    retrier = make_retrier(clock, Retries(rate_limited_attempts=4))
    with pytest.raises(RateLimitError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 4
    assert len(script.requests) == 4


@pytest.mark.parametrize(
    ("config", "made"),
    [
        (Retries(attempts=5, rate_limited_attempts=2), 5),  # the larger of the two
        (Retries(attempts=1), 1),  # one attempt turns every retry off
    ],
)
async def test_429s_get_at_least_the_attempts(config: Retries, made: int) -> None:
    """``rate_limited_attempts`` under ``attempts`` takes nothing away; attempts=1 is off."""
    clock = FakeClock()
    script = Script(clock, [rate_limited(None)])
    with pytest.raises(RateLimitError) as caught:
        await clock.run(make_retrier(clock, config).call(Call(request()), script))
    assert caught.value.attempts == made


async def test_another_failure_after_429s_stops_at_the_attempts() -> None:
    """Two 429s then a 503: the 503 is the third attempt, and ``attempts`` is 3."""
    clock = FakeClock()
    script = Script(clock, [rate_limited(None), rate_limited(None), status_error(503), OK])
    with pytest.raises(ServerError) as caught:
        await clock.run(make_retrier(clock).call(Call(request()), script))
    assert caught.value.attempts == 3


async def test_429_retries_pay_the_budget() -> None:
    """Each 429 retry is paid from the budget: an empty one stops them as any other."""
    clock = FakeClock()
    budget = RetryBudget(12)
    script = Script(clock, [rate_limited(None)])
    with pytest.raises(RateLimitError) as caught:
        await clock.run(make_retrier(clock, budget=budget).call(Call(request()), script))
    assert caught.value.attempts == 3  # two retries paid (5 each), the third unaffordable
    assert budget.available == 2


async def test_budget_stops_a_retry_storm() -> None:
    """200 concurrent calls against a dead service: the budget keeps attempts far below 600."""
    clock = FakeClock()
    budget = RetryBudget(500)
    retrier = make_retrier(clock, budget=budget)
    scripts = [Script(clock, [status_error(503)]) for _ in range(200)]

    async def call(script: Script) -> ServerError | None:
        try:
            await retrier.call(Call(request()), script)
        except ServerError as error:
            return error
        return None

    errors = await clock.run(asyncio.gather(*(call(script) for script in scripts)))
    attempts = sum(len(script.requests) for script in scripts)
    assert attempts == 200 + 500 // 5  # every first attempt, then 100 paid retries
    assert budget.available == 0
    assert all(isinstance(error, ServerError) for error in errors)
    assert sum(error is not None and error.attempts == 1 for error in errors) >= 100


async def test_empty_budget_fails_fast() -> None:
    """With nothing left in the budget, the first retryable error is raised at once."""
    clock = FakeClock()
    budget = RetryBudget(4)
    script = Script(clock, [status_error(503), OK])
    with pytest.raises(ServerError) as caught:
        await clock.run(make_retrier(clock, budget=budget).call(Call(request()), script))
    assert caught.value.attempts == 1
    assert clock.sleeps == []


async def test_success_after_retries_refunds_the_last_cost() -> None:
    """A success after a timeout retry gives its 10 back; a 503 retry gives 5 back."""
    clock = FakeClock()
    budget = RetryBudget(500)
    budget.available = 300
    retrier = make_retrier(clock, budget=budget)
    await clock.run(retrier.call(Call(request()), Script(clock, [ReadTimeoutError("slow"), OK])))
    assert budget.available == 300
    await clock.run(
        retrier.call(
            Call(request()), Script(clock, [ReadTimeoutError("slow"), status_error(503), OK])
        )
    )
    assert budget.available == 300 - 10  # paid 10 + 5, got the last 5 back
    failing = Script(clock, [status_error(503)])
    with pytest.raises(ServerError):
        await clock.run(retrier.call(Call(request()), failing))
    assert budget.available == 290 - 10  # two retries paid, nothing back


async def test_no_budget_means_unlimited_retries() -> None:
    """budget=None: every call may use all its attempts."""
    clock = FakeClock()
    retrier = make_retrier(clock, Retries(attempts=4, budget=None), budget=None)
    script = Script(clock, [status_error(503)])
    with pytest.raises(ServerError) as caught:
        await clock.run(retrier.call(Call(request()), script))
    assert caught.value.attempts == 4
    assert "Retrier(" in repr(retrier)


async def test_jitter_stays_within_its_bounds_with_any_random() -> None:
    """Whatever the random source draws in [0, 1), each wait is within [0, cap)."""
    for draw in (0.0, 0.1, 0.5, 0.999999):
        clock = FakeClock()
        retrier = make_retrier(clock, Retries(attempts=8), random=functools.partial(float, draw))
        script = Script(clock, [ConnectError("down")])
        with pytest.raises(ConnectError):
            await clock.run(retrier.call(Call(request()), script))
        caps = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
        assert clock.sleeps == pytest.approx([draw * cap for cap in caps])
        assert all(0 <= wait < cap for wait, cap in zip(clock.sleeps, caps, strict=True))


async def test_call_deadline_is_visible_to_the_attempt() -> None:
    """With a timeout, every attempt sees the call's deadline; an earlier one is kept."""
    clock = FakeClock()
    seen: list[float | None] = []

    async def attempt(call: Call) -> Response:
        seen.append(call.deadline)
        return OK

    await make_retrier(clock, Retries(timeout=30)).call(Call(request()), attempt)
    await make_retrier(clock).call(Call(request()), attempt)
    await make_retrier(clock, Retries(timeout=60)).call(
        Call(request(), deadline=clock() + 10), attempt
    )
    assert seen == [clock() + 30, None, clock() + 10]


async def test_attempts_are_counted_on_the_call() -> None:
    """The call counts its attempts, and the error raised says how many."""
    clock = FakeClock()
    call = Call(request())
    with pytest.raises(ServerError) as caught:
        await clock.run(make_retrier(clock).call(call, Script(clock, [status_error(503)])))
    assert call.attempts == 3 == caught.value.attempts


async def test_wiring_with_the_limiter() -> None:
    """The client's wiring: acquire, send, record, raise; a 429 pauses every caller."""
    clock = FakeClock()
    limiter = RateLimiter(
        RateLimits(write=10, burst=10), clock=clock, wall_clock=clock.wall, sleep=clock.sleep
    )
    retrier = make_retrier(clock, Retries(attempts=3), budget=RetryBudget())
    await clock.advance(5)  # a full burst saved up
    answers = iter([429] + [200] * 20)
    sent: list[float] = []

    async def attempt(call: Call) -> Response:
        deadline = call.deadline
        grant = await limiter.acquire(
            call.request.method, timeout=None if deadline is None else deadline - clock()
        )
        sent.append(clock())
        status = next(answers)
        headers = {"Retry-After": "2"} if status == 429 else {}
        await limiter.record(grant, status, headers)
        if status == 429:
            raise RateLimitError("429", status_code=429, retry_after=2.0)
        return OK

    start = clock()
    calls = [retrier.call(Call(post(key=True)), attempt) for _ in range(5)]
    assert await clock.run(asyncio.gather(*calls)) == [OK] * 5
    assert len(sent) == 6
    assert limiter.state.write.throttles == 1
    assert sent[0] == start
    assert all(when >= start + 2 for when in sent[1:])  # everyone waited out the pause


async def test_a_paced_retrier_leaves_a_bare_429s_wait_to_the_limiter() -> None:
    """Paced: a bare 429 is retried with no backoff of its own, a 503 still backs off.

    The limiter pauses its bucket after the 429 and holds the retry until then; the
    retrier's backoff on top left the call idle while the bucket sent others.
    """
    clock = FakeClock()
    paced = Retrier(
        Retries(), budget=None, clock=clock, sleep=clock.sleep, random=lambda: 0.5, paced=True
    )
    script = Script(clock, [rate_limited(None), status_error(503), OK])
    assert await clock.run(paced.call(Call(request()), script)) is OK
    assert clock.sleeps == [0.0, 0.5]  # none after the 429; U(0, 1) drew 0.5 after the 503
    unpaced = make_retrier(clock, random=lambda: 0.5)
    await clock.run(unpaced.call(Call(request()), Script(clock, [rate_limited(None), OK])))
    assert clock.sleeps[-1] == 0.25  # without a limiter, the 429 backs off as any failure
    named = Script(clock, [rate_limited(1.5), OK])
    await clock.run(paced.call(Call(request()), named))
    assert clock.sleeps[-1] == 1.5  # a Retry-After is still waited out exactly


async def test_a_bare_429_is_retried_when_the_limiters_pause_ends() -> None:
    """Through a limiter told 10/s: the retry goes one pause after the 429, no later."""
    clock = FakeClock()
    limiter = RateLimiter(
        RateLimits(write=10, burst=1),
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
        random=lambda: 0.5,  # the pause as computed, not spread
    )
    retrier = Retrier(Retries(), budget=None, clock=clock, sleep=clock.sleep, paced=True)
    answers = iter([429, 200])
    sent: list[float] = []

    async def attempt(call: Call) -> Response:
        grant = await limiter.acquire(call.request.method)
        sent.append(clock())
        status = next(answers)
        await limiter.record(grant, status, {})
        if status == 429:
            raise rate_limited(None)
        return OK

    assert await clock.run(retrier.call(Call(post(key=True)), attempt)) is OK
    assert sent[1] - sent[0] == pytest.approx(1 / (10 * PACING))  # one interval's pause


async def test_a_retry_after_of_zero_names_no_wait() -> None:
    """``Retry-After: 0`` (or a date already past) is retried as a bare 429, not at once.

    Taken as "now", ten attempts went back to back; as openai's client does, only a wait
    above 0 replaces the backoff (unpaced) or the limiter's pause (paced).
    """
    clock = FakeClock()
    script = Script(clock, [rate_limited(0.0), OK])
    await clock.run(make_retrier(clock, random=lambda: 0.5).call(Call(request()), script))
    assert clock.sleeps == [0.25]  # U(0, 0.5), as for a bare 429
