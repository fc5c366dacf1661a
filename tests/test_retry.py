"""The retry policy, pure: its settings, what is retried, what a retry costs, backoff, budget."""

from __future__ import annotations

import asyncio

import pytest

from contractsdk import (
    APIError,
    CertificateVerificationError,
    ConfigurationError,
    ConnectError,
    ConnectTimeoutError,
    RateLimitError,
    RateLimiterTimeoutError,
    ReadError,
    ReadTimeoutError,
    Request,
    ResponseValidationError,
    ServerError,
    TermValidationError,
)
from contractsdk._http import Call
from contractsdk._retry import Retries, RetryBudget, backoff, retry_cost, should_retry
from tests._retrykit import post, request, status_error

# --------------------------------------------------------------------------------------
# Configuration


def test_retries_defaults() -> None:
    """Three attempts (ten through 429s), 0.5 s doubling to 8 s, no deadline, a budget of 500."""
    config = Retries()
    assert (config.attempts, config.rate_limited_attempts) == (3, 10)
    assert (config.wait_initial, config.wait_max) == (0.5, 8.0)
    assert (config.timeout, config.budget, config.retry_after_max) == (None, 500, 60.0)
    assert config.trust_idempotency_keys is False  # the service does not document keys
    assert (Retries.none().attempts, Retries.none().rate_limited_attempts) == (1, 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attempts": 0},
        {"attempts": 2.0},
        {"rate_limited_attempts": 0},
        {"rate_limited_attempts": True},
        {"wait_initial": -1},
        {"wait_initial": 10, "wait_max": 1},
        {"wait_max": float("inf")},
        {"timeout": 0},
        {"timeout": -3},
        {"budget": -1},
        {"budget": 1.5},
        {"retry_after_max": -1},
        {"trust_idempotency_keys": 1},
        {"trust_idempotency_keys": "yes"},
    ],
)
def test_bad_retries_are_refused(kwargs: dict[str, object]) -> None:
    """Nonsense settings raise ConfigurationError."""
    with pytest.raises(ConfigurationError):
        Retries(**kwargs)  # type: ignore[arg-type]  # wrong on purpose


# --------------------------------------------------------------------------------------
# The matrix (pure)


MATRIX: list[tuple[str, BaseException, Request, bool]] = [
    # never sent: always
    ("connect GET", ConnectError("x"), request(), True),
    ("connect POST", ConnectError("x"), post(), True),
    ("connect timeout POST", ConnectTimeoutError("x"), post(), True),
    # never sent, but the same certificate fails the same way: never
    ("certificate GET", CertificateVerificationError("x"), request(), False),
    # outcome unknown: idempotent only (a key counts only when trusted: test below)
    ("read timeout GET", ReadTimeoutError("x"), request(), True),
    ("read timeout PUT", ReadTimeoutError("x"), request("PUT"), True),
    ("read timeout DELETE", ReadTimeoutError("x"), request("DELETE"), True),
    ("read timeout POST", ReadTimeoutError("x"), post(), False),
    ("read timeout POST+key", ReadTimeoutError("x"), post(key=True), False),
    ("read timeout PATCH", ReadTimeoutError("x"), request("PATCH"), False),
    ("read error GET", ReadError("x"), request(), True),
    ("read error POST", ReadError("x"), post(), False),
    ("read error POST+key", ReadError("x"), post(key=True), False),
    # not processed: always
    ("408 POST", status_error(408), post(), True),
    ("429 POST", status_error(429), post(), True),
    ("429 GET", status_error(429), request(), True),
    # may have been processed: idempotent only
    ("500 GET", status_error(500), request(), True),
    ("500 POST", status_error(500), post(), False),
    ("500 POST+key", status_error(500), post(key=True), False),
    ("502 POST", status_error(502), post(), False),
    ("502 POST+key", status_error(502), post(key=True), False),
    ("503 GET", status_error(503), request(), True),
    ("503 POST", status_error(503), post(), False),
    ("503 POST+key", status_error(503), post(key=True), False),
    ("504 PATCH", status_error(504), request("PATCH"), False),
    ("504 PATCH+key", status_error(504), request("PATCH", key=True), False),
    ("501 GET", status_error(501), request(), False),
    # never
    ("400", status_error(400), request(), False),
    ("401", status_error(401), request(), False),
    ("403", status_error(403), request(), False),
    ("404", status_error(404), request(), False),
    ("409", status_error(409), post(key=True), False),
    ("418", status_error(418), request(), False),
    ("422", status_error(422), request(), False),
    ("no status", APIError("token endpoint said nothing"), request(), False),
    ("term validation", TermValidationError([]), post(key=True), False),
    ("configuration", ConfigurationError("x"), request(), False),
    ("limiter timeout", RateLimiterTimeoutError("x", bucket="read", wait=3), request(), False),
    ("response validation", ResponseValidationError("x"), request(), False),
    ("cancelled", asyncio.CancelledError(), request(), False),
    ("keyboard interrupt", KeyboardInterrupt(), request(), False),
    ("system exit", SystemExit(1), request(), False),
    ("a bug", ValueError("x"), request(), False),
]


@pytest.mark.parametrize(
    ("error", "req", "expected"),
    [case[1:] for case in MATRIX],
    ids=[case[0] for case in MATRIX],
)
def test_retry_matrix(error: BaseException, req: Request, expected: bool) -> None:
    """should_retry follows DESIGN.md §5 for every kind of failure."""
    assert should_retry(error, call=Call(req)) is expected


@pytest.mark.parametrize(
    ("error", "cost"),
    [
        (ReadTimeoutError("x"), 10),
        (ConnectTimeoutError("x"), 10),
        (status_error(408), 10),
        (status_error(504), 10),
        (ConnectError("x"), 5),
        (ReadError("x"), 5),
        (status_error(429), 5),
        (status_error(503), 5),
    ],
)
def test_retry_cost(error: BaseException, cost: int) -> None:
    """A retry costs 5, or 10 after a timeout."""
    assert retry_cost(error) == cost


@pytest.mark.parametrize(
    ("retry", "cap"),
    [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 8.0), (10_000, 8.0)],
)
def test_backoff_is_full_jitter_within_bounds(retry: int, cap: float) -> None:
    """Retry n waits U(0, min(8, 0.5 * 2**(n-1))): 0 at the bottom, the cap at the top."""
    assert backoff(retry, initial=0.5, maximum=8.0, random=lambda: 0.0) == 0.0
    assert backoff(retry, initial=0.5, maximum=8.0, random=lambda: 1.0) == cap
    assert backoff(retry, initial=0.5, maximum=8.0, random=lambda: 0.25) == cap / 4


def test_budget_takes_and_refunds_up_to_capacity() -> None:
    """The budget pays while it can, and refunds never exceed its capacity."""
    budget = RetryBudget(12)
    assert budget.take(5)
    assert budget.take(5)
    assert not budget.take(5)
    assert budget.available == 2
    budget.refund(100)
    assert budget.available == 12
    assert repr(budget) == "RetryBudget(12/12)"
    with pytest.raises(ConfigurationError):
        RetryBudget(-1)


def test_token_request_errors_are_never_retried() -> None:
    """A failing token endpoint is not retried, even when it answered 503."""
    from contractsdk import TokenRequestError

    error = TokenRequestError("the token endpoint answered 503", status_code=503)
    assert not should_retry(error, call=Call(Request(method="GET", url="https://h/v1/x")))


@pytest.mark.parametrize(
    ("error", "inside"),
    [
        (ReadError("reset"), False),
        (ReadTimeoutError("slow"), False),
        (ServerError("500", status_code=500), False),
        (ServerError("503", status_code=503), False),
        (ConnectError("refused"), True),
        (RateLimitError("429", status_code=429), True),
    ],
)
def test_a_key_makes_a_post_replayable_only_when_trusted(error: Exception, inside: bool) -> None:
    """By default a keyed POST is replayed only after certainly-unprocessed failures."""
    post = Request(
        method="POST", url="https://h/v1/teams/1/contracts", headers={"Idempotency-Key": "k"}
    )
    get = Request(method="GET", url="https://h/v1/users/1")
    assert should_retry(error, call=Call(post, trust_key=True))  # the key trusted: replayed
    assert should_retry(error, call=Call(post)) is inside
    assert should_retry(error, call=Call(get))  # a GET is always replayable
