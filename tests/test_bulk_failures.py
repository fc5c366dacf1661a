"""The one table of what a failed create means for its row (bulk/_failures.py)."""

from __future__ import annotations

import pytest

from contractsdk._exceptions import (
    AuthenticationError,
    BadRequestError,
    CertificateVerificationError,
    ConflictError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RateLimiterTimeoutError,
    ReadError,
    ReadTimeoutError,
    ResponseValidationError,
    ServerError,
    UnprocessableEntityError,
)
from contractsdk.bulk._failures import KEY_SENT_BEFORE, classify, row_message


def api(kind: type[ContractSDKError], status: int, method: str = "") -> ContractSDKError:
    return kind(f"{status}", status_code=status, method=method)  # type: ignore[call-arg]


def replayed(error: ContractSDKError) -> ContractSDKError:
    """The error of a call whose earlier attempt may have been processed (set by a retry)."""
    error.outcome_unknown = True
    return error


CASES = [
    (ConnectError("refused"), "retry", "retry"),
    (ConnectTimeoutError("slow"), "retry", "retry"),
    (ReadError("reset"), "unknown", "unknown"),
    (ReadTimeoutError("slow"), "unknown", "unknown"),
    (api(RateLimitError, 429), "retry", "retry"),
    (api(ServerError, 500), "retry", "retry"),
    (api(ServerError, 503), "retry", "retry"),
    # A 5xx to the create itself may have been processed: as unknown as a lost answer.
    (api(ServerError, 500, "POST"), "unknown", "unknown"),
    (api(ServerError, 504, "POST"), "unknown", "unknown"),
    (api(ServerError, 501, "POST"), "retry", "retry"),
    (replayed(api(RateLimitError, 429, "POST")), "unknown", "unknown"),
    (RateLimiterTimeoutError("waited too long"), "retry", "retry"),
    (ResponseValidationError("unreadable 201"), "unknown", "unknown"),
    (api(ConflictError, 409), "unknown", "unknown"),
    (api(AuthenticationError, 401), "fatal", "fatal"),
    # The same certificate fails every row the same way (it was final, row by row).
    (CertificateVerificationError("self-signed certificate"), "fatal", "fatal"),
    (api(PermissionDeniedError, 403), "fatal", "final"),
    (api(NotFoundError, 404), "fatal", "final"),
    (api(BadRequestError, 400), "final", "final"),
    (api(UnprocessableEntityError, 422), "final", "final"),
]


@pytest.mark.parametrize(("error", "fixed", "per_row"), CASES, ids=lambda v: repr(v)[:40])
def test_each_error_has_one_meaning_for_its_row(
    error: ContractSDKError, fixed: str, per_row: str
) -> None:
    """Each error means retry, unknown, final or fatal; 403/404 are fatal only for a fixed target."""
    assert classify(error, fixed_target=True) == fixed
    assert classify(error, fixed_target=False) == per_row


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            UnprocessableEntityError(
                "This Idempotency-Key was used with a different request", status_code=422
            ),
            f"422: {KEY_SENT_BEFORE}",
        ),
        (
            BadRequestError(
                "Keys for idempotent requests can only be used with the same parameters",
                status_code=400,
            ),  # Stripe's idempotency_error
            f"400: {KEY_SENT_BEFORE}",
        ),
        (UnprocessableEntityError("contract_name is required", status_code=422), None),
        (ConflictError("This Idempotency-Key is in use", status_code=409), None),
    ],
)
def test_a_key_sent_before_with_other_values_is_explained(
    error: ContractSDKError, says: str | None
) -> None:
    """A 400/422 about the Idempotency-Key says what it means for the row; others as raised."""
    assert row_message(error) == (str(error) if says is None else says)
