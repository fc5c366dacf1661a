"""Retries: which failures to try again, how long to wait, and a budget against storms.

The decision matrix (DESIGN.md §5), applied by the pure :func:`should_retry`::

    failure                                   retried when
    CertificateVerificationError              never: the request was not sent, and the same
                                              certificate fails the same way
    ConnectError, ConnectTimeoutError         always: the request was never sent
    ReadTimeoutError, ReadError               the call is replayable: it may have been processed
                                              (a POST only with ``Call.trust_key``: below),
                                              and not one aclose() cut (``client_closed``)
    APIError 408, 429                         always: the service says it did not process it
                                              (429s up to ``rate_limited_attempts``: below)
    APIError 500, 502, 503, 504               the call is replayable (as above)
    any other status (400, 401, 403, 404,     never: the same request would fail the same way
      409, 422, ...)
    AuthenticationError, TokenRequestError    never (as azure-core): a token endpoint that
                                              fails, whatever its status, is not retried
    TermValidationError, ConfigurationError,  never: nothing was sent, or retrying cannot help
      RateLimiterTimeoutError,
      ResponseValidationError
    asyncio.CancelledError and every other    never, and without delay: a cancelled task stops
      BaseException that is not an Exception  at once (tenacity#529)
    any other Exception                       never (a bug is not transient)

How long to wait before retry n (n = 1, 2, ...):

* the error's ``wait`` (a 429's ``Retry-After``, or the finer reset of the empty counter it
  rounds up to whole seconds), exactly: no jitter below it. If it is longer than
  ``Retries.retry_after_max``, or would end past the call's deadline, the error is raised
  at once instead. A wait of 0 (or a date already past) names no wait: the failure is
  retried as one without it.
* a 429 without one, when a rate limiter paces the calls (``Retrier(paced=True)``): no
  wait of the retrier's own. The limiter pauses its bucket after every 429 (longer for
  each in a row, spread so that clients refused together do not return together) and
  holds the retry in its queue until then; a backoff on top only left the call idle while
  the bucket sent others.
* otherwise full jitter, ``U(0, min(wait_max, wait_initial * 2**(n-1)))`` (AWS's "full
  jitter": the least synchronised retries for the least total wait).
* no wait or attempt starts past the deadline (``Retries.timeout`` after the call began).

How many attempts: ``Retries.attempts``, or ``Retries.rate_limited_attempts`` when the
last failure was a 429. A 429 is the one failure that is certainly harmless to retry (the
service did not process the request) and that the client's own limiter answers (it slows
down or pauses before the next attempt), so a burst of them while the limiter finds the
limit, or while other processes without shared state crowd the same key, does not fail
the call. Any other failure stops the call once it has made ``attempts``.

The budget (botocore's RetryQuota): one :class:`RetryBudget` per client. A retry costs 5,
or 10 after a timeout; when the budget cannot pay, the call stops retrying and raises its
error at once. A first-try success refunds 1 and a success after retries refunds its last
retry's cost, up to the capacity. In an outage ~100 retries drain a budget of 500 and the
client fails fast with one attempt per call instead of tripling the load on a service that
is already down; successes refill it.

Replayable: GET, HEAD, OPTIONS, PUT and DELETE always; a POST (or PATCH) only when it
carries an ``Idempotency-Key`` and ``Call.trust_key`` is set, which the client does only
under ``Retries(trust_idempotency_keys=True)``. The service does not document
Idempotency-Key (reference/service-api.md): if it ignores the key, a POST replayed after
its answer was lost makes a second contract. So by default an ambiguous failure of a POST
is raised at once (``outcome_unknown``) for the caller to resolve, while failures that
were certainly not processed (connect errors, 408, 429) are still retried. The bulk job
resolves them itself: its journal reconciles unknown outcomes by listing the team's
contracts before anything is sent again.

Every attempt gets the same :class:`~contractsdk._http.Call`, so its request's
``Idempotency-Key`` (made once per logical call by the client, or given by the caller)
never changes, and its deadline bounds every layer below (the rate limiter's wait too).
tenacity runs the retries but never shows: its RetryError is not raised (the last real
error is, with ``attempts`` set), and tenacity's ~60 µs of set-up is paid only by calls
whose first attempt failed.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random as _random
import time
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from ._exceptions import (
    APIError,
    AuthenticationError,
    CertificateVerificationError,
    ConfigurationError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    ReadError,
    ReadTimeoutError,
    TransportError,
)
from ._http import READ_METHODS, Call, Response

__all__ = [
    "RetryBudget",
    "RetryEvent",
    "Retrier",
    "Retries",
    "backoff",
    "retry_cost",
    "should_retry",
]

#: Statuses that say the request was not processed: retried for any method.
RETRY_ALWAYS_STATUSES: Final = frozenset({408, 429})
#: Statuses after which the request may have been processed: retried when idempotent.
RETRY_IDEMPOTENT_STATUSES: Final = frozenset({500, 502, 503, 504})

#: What a retry takes from the budget, and what a success gives back (botocore quota.py).
RETRY_COST: Final = 5
TIMEOUT_RETRY_COST: Final = 10
NO_RETRY_REFUND: Final = 1
_TIMEOUT_STATUSES: Final = frozenset({408, 504})
_MAX_EXPONENT: Final = 64


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigurationError(f"Retries: {message}")


@attrs.frozen(kw_only=True)
class Retries:
    """How a client retries a failed call.

    Attributes:
        attempts: Attempts per call, the first included; 1 turns retries off (429s too).
        rate_limited_attempts: Attempts per call while its failures are 429s (the
            service did not process the request, and the rate limiter slows down for
            it): a 429 is retried until the call has made this many, or ``attempts`` if
            that is more. Another failure stops the call once it has made ``attempts``.
        wait_initial: The cap of the first backoff, in seconds; each retry doubles it.
        wait_max: The largest backoff cap, in seconds.
        timeout: Seconds one call may spend across all its attempts and waits; no wait or
            attempt starts past it, and an attempt under way ends with it
            (``ReadTimeoutError``). None: no deadline.
        budget: The capacity of the retry budget shared by all calls of a client (a retry
            costs 5, 10 after a timeout; successes refund). None: no budget.
        retry_after_max: The longest ``Retry-After`` a call waits out; a longer one raises
            the error at once.
        trust_idempotency_keys: Replay a POST after a failure it may have been processed
            by (a lost answer, a reset, a 500, 502, 503 or 504), under the same
            ``Idempotency-Key``. Safe only against a service that honours the key, as the
            sandbox emulator does: the Contract Service does not document that it does,
            and one that ignores it would make the contract twice. False (the default):
            such a failure is raised at once, ``outcome_unknown`` set, for you to check
            before you send the call again.
    """

    attempts: int = 3
    rate_limited_attempts: int = 10
    wait_initial: float = 0.5
    wait_max: float = 8.0
    timeout: float | None = None
    budget: int | None = 500
    retry_after_max: float = 60.0
    trust_idempotency_keys: bool = False

    def __attrs_post_init__(self) -> None:
        _check(type(self.attempts) is int and self.attempts >= 1, "attempts must be an int >= 1")
        _check(
            type(self.rate_limited_attempts) is int and self.rate_limited_attempts >= 1,
            "rate_limited_attempts must be an int >= 1",
        )
        _check(0 <= self.wait_initial < math.inf, "wait_initial must be >= 0 and finite")
        _check(self.wait_initial <= self.wait_max < math.inf, "wait_max must be >= wait_initial")
        _check(self.timeout is None or 0 < self.timeout < math.inf, "timeout must be > 0 or None")
        _check(
            self.budget is None or (type(self.budget) is int and self.budget >= 0),
            "budget must be an int >= 0 or None",
        )
        _check(self.retry_after_max >= 0, "retry_after_max must be >= 0")
        trusts = self.trust_idempotency_keys
        _check(type(trusts) is bool, "trust_idempotency_keys must be True or False")

    @classmethod
    def none(cls) -> Retries:
        """Return a policy that never retries."""
        return cls(attempts=1, rate_limited_attempts=1)


class RetryBudget:
    """The retry quota shared by every call of one client (botocore's ``RetryQuota``).

    Args:
        capacity: The most it holds; it starts full.
    """

    def __init__(self, capacity: int = 500) -> None:
        if capacity < 0:
            raise ConfigurationError("RetryBudget capacity must be >= 0")
        self.capacity = capacity
        self.available = capacity

    def __repr__(self) -> str:
        return f"RetryBudget({self.available}/{self.capacity})"

    def take(self, cost: int) -> bool:
        """Take ``cost`` if the budget holds it; return whether it did."""
        if cost > self.available:
            return False
        self.available -= cost
        return True

    def refund(self, amount: int) -> None:
        """Give ``amount`` back, up to the capacity."""
        available = self.available + amount  # every successful call: no min() call
        self.available = available if available < self.capacity else self.capacity


@attrs.frozen(kw_only=True)
class RetryEvent:
    """A retry about to happen, for the client's ``retry`` hook and DEBUG log.

    Attributes:
        attempt: The number of the attempt that failed (1 for the first).
        error: Why it failed.
        wait: Seconds until the next attempt.
        method: The request's HTTP method.
        path: The request's URL path (no query, no host).
    """

    attempt: int
    error: Exception
    wait: float
    method: str
    path: str

    def __str__(self) -> str:
        return (
            f"{self.method} {self.path}: attempt {self.attempt} failed "
            f"({type(self.error).__name__}: {self.error}); retrying in {self.wait:.2f} s"
        )


def should_retry(error: BaseException, *, call: Call) -> bool:
    """Return whether a failed attempt may be tried again (the matrix in the module header).

    Args:
        error: What the attempt raised.
        call: The call it was made for (its request's method and Idempotency-Key, and its
            ``trust_key``, decide the ambiguous cases).
    """
    if not isinstance(error, Exception):  # CancelledError, KeyboardInterrupt, SystemExit
        return False
    if isinstance(error, CertificateVerificationError):
        return False
    if isinstance(error, ConnectError | ConnectTimeoutError):
        return True
    if isinstance(error, ReadTimeoutError | ReadError | TransportError):
        return call.replayable and not error.client_closed
    if isinstance(error, AuthenticationError):
        return False
    if isinstance(error, APIError):
        if error.status_code in RETRY_ALWAYS_STATUSES:
            return True
        if error.status_code in RETRY_IDEMPOTENT_STATUSES:
            return call.replayable
    return False


def retry_cost(error: BaseException) -> int:
    """Return what retrying after ``error`` takes from the budget: 10 for a timeout, else 5."""
    if isinstance(error, TimeoutError) or (
        isinstance(error, APIError) and error.status_code in _TIMEOUT_STATUSES
    ):
        return TIMEOUT_RETRY_COST
    return RETRY_COST


def backoff(retry: int, *, initial: float, maximum: float, random: Callable[[], float]) -> float:
    """Return the full-jitter wait before retry number ``retry`` (1 for the first).

    ``U(0, min(maximum, initial * 2**(retry - 1)))``, with ``random()`` in [0, 1).
    """
    cap = min(maximum, initial * 2.0 ** min(retry - 1, _MAX_EXPONENT))
    return random() * cap


def _is_429(error: BaseException) -> bool:
    return isinstance(error, APIError) and error.status_code == 429


def _retry_after(error: BaseException) -> float | None:
    """The wait the error names, if any: 0 (or a date already past) names none.

    A 429's ``wait``: its Retry-After, or the finer reset it rounds up. As openai's
    client: a 429 that says "now" is retried as a bare one, behind a backoff or the
    limiter's pause, not at once up to ``rate_limited_attempts`` times.
    """
    value = getattr(error, "wait", None)
    if isinstance(value, int | float) and math.isfinite(value) and value > 0:
        return float(value)
    return None


@attrs.define
class _Attempts:
    """The retry state of one logical call while tenacity retries it."""

    replay: BaseException | None  # the first attempt's error, fed to tenacity once
    last_cost: int = 0
    # Taken from the budget for a retry not sent yet: given back if the call is cancelled
    # in its backoff (a retry never sent costs nothing).
    unsent: int = 0
    # An attempt failed after it may have been processed: the call's last error says so,
    # whatever it is (a 429 or 409 to the replay of a create whose answer was lost).
    unknown: bool = False


class Retrier:
    """Runs a call's attempts under a :class:`Retries` policy.

    Args:
        config: The policy.
        budget: The client's shared budget, or None for none.
        clock: Monotonic seconds (injected for tests).
        sleep: The async sleep between attempts (injected for tests).
        random: Uniform [0, 1) numbers for the jitter (injected for tests).
        paced: A rate limiter paces every attempt and pauses after a 429: a 429 without
            ``Retry-After`` is retried with no backoff of the retrier's own.
    """

    def __init__(
        self,
        config: Retries,
        *,
        budget: RetryBudget | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
        paced: bool = False,
    ) -> None:
        self.config = config
        self.budget = budget
        self.paced = paced
        self._clock = clock
        self._sleep = sleep
        self._random = random

    def __repr__(self) -> str:
        return f"Retrier({self.config!r}, budget={self.budget!r})"

    async def call(
        self,
        call: Call,
        attempt: Callable[[Call], Awaitable[Response]],
        *,
        on_retry: Callable[[RetryEvent], Awaitable[None] | None] | None = None,
    ) -> Response:
        """Run ``attempt(call)`` until it succeeds or may not be retried.

        Sets ``call.deadline`` from ``Retries.timeout`` (keeping an earlier one) and counts
        ``call.attempts``.

        Args:
            call: The call; every attempt gets this same object, and so the same request.
            attempt: Sends it once; returns the response on success and raises the mapped
                error otherwise.
            on_retry: Called (and awaited, if it returns an awaitable) before each wait.

        Returns:
            The successful response.

        Raises:
            ContractSDKError: The last attempt's error, with ``attempts`` set to the number
                of attempts made. Cancellation propagates at once, never retried.
        """
        self.start(call)
        try:
            response = await attempt(call)
        except Exception as error:
            first = error  # handled outside this block: later errors do not chain to it
        else:
            self.succeeded_at_once()
            return response
        return await self.retry(call, first, attempt, on_retry=on_retry)

    def start(self, call: Call) -> None:
        """Begin a call: set ``call.deadline`` (keeping an earlier one) and count its attempt.

        :meth:`call` in three steps, for a caller that makes the first attempt itself (the
        client: most calls succeed at once, and an awaited layer less is felt per call):
        ``start``, the attempt, then :meth:`succeeded_at_once` or :meth:`retry`.
        """
        timeout = self.config.timeout
        if timeout is not None:
            deadline = self._clock() + timeout
            call.deadline = deadline if call.deadline is None else min(deadline, call.deadline)
        call.attempts += 1

    def succeeded_at_once(self) -> None:
        """A call's first attempt succeeded: the budget gets its refund."""
        budget = self.budget
        if budget is not None:
            budget.refund(NO_RETRY_REFUND)

    async def retry(
        self,
        call: Call,
        first: Exception,
        attempt: Callable[[Call], Awaitable[Response]],
        *,
        on_retry: Callable[[RetryEvent], Awaitable[None] | None] | None = None,
    ) -> Response:
        """Go on with a call whose first attempt raised ``first``, as :meth:`call` does.

        Returns:
            The successful response of a later attempt.

        Raises:
            ContractSDKError: ``first``, or the last attempt's error, with ``attempts`` set.
        """
        if self.config.attempts == 1 or not should_retry(first, call=call):
            if isinstance(first, ContractSDKError):
                first.attempts = call.attempts
            raise first
        state = _Attempts(replay=first, unknown=_may_be_processed(first, call))

        async def run() -> Response:
            if state.replay is not None:
                error, state.replay = state.replay, None
                raise error
            state.unsent = 0
            call.attempts += 1
            try:
                return await attempt(call)
            except Exception as error:
                state.unknown = state.unknown or _may_be_processed(error, call)
                raise

        async def before_sleep(retry_state: RetryCallState) -> None:
            if on_retry is None:
                return
            event = RetryEvent(
                attempt=retry_state.attempt_number,
                error=_exception(retry_state),
                wait=retry_state.upcoming_sleep,
                method=call.request.method,
                path=call.request.path,
            )
            result = on_retry(event)
            if inspect.isawaitable(result):
                await result

        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda error: should_retry(error, call=call)),
            wait=lambda retry_state: self._wait(retry_state),
            stop=lambda retry_state: self._stop(retry_state, call, state),
            sleep=self._sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            response: Response = await retrying(run)
        except ContractSDKError as error:
            error.attempts = call.attempts
            if state.unknown:
                error.outcome_unknown = True
            raise
        except BaseException:  # cancelled (in a backoff: the retry paid for is not sent)
            if self.budget is not None and state.unsent:
                self.budget.refund(state.unsent)
            raise
        if self.budget is not None:
            self.budget.refund(state.last_cost)
        return response

    def _wait(self, state: RetryCallState) -> float:
        error = _exception(state)
        retry_after = _retry_after(error)
        if retry_after is not None:
            return retry_after
        if self.paced and _is_429(error):
            return 0.0  # the limiter's pause is the backoff
        config = self.config
        return backoff(
            state.attempt_number,
            initial=config.wait_initial,
            maximum=config.wait_max,
            random=self._random,
        )

    def _stop(self, state: RetryCallState, call: Call, attempts: _Attempts) -> bool:
        """Decide, after the wait is known, whether to give up now (True) or retry."""
        config = self.config
        error = _exception(state)
        limit = config.attempts
        if _is_429(error):
            limit = max(limit, config.rate_limited_attempts)
        if state.attempt_number >= limit:
            return True
        retry_after = _retry_after(error)
        if retry_after is not None and retry_after > config.retry_after_max:
            return True
        if call.deadline is not None and self._clock() + state.upcoming_sleep >= call.deadline:
            return True
        if self.budget is not None:
            cost = retry_cost(error)
            if not self.budget.take(cost):
                return True
            attempts.last_cost = attempts.unsent = cost
        return False


def _may_be_processed(error: BaseException, call: Call) -> bool:
    """Whether a failed attempt of a write (not a read) may have been processed."""
    return (
        isinstance(error, ContractSDKError)
        and error.outcome_unknown
        and call.request.method not in READ_METHODS
    )


def _exception(state: RetryCallState) -> Exception:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    if not isinstance(error, Exception):  # tenacity only retries what should_retry accepted
        raise TypeError("no retryable exception in this retry state")  # pragma: no cover
    return error
