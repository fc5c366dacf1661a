"""What a failed create means for its row: one table, built on the client's retry matrix.

The client's :func:`~contractsdk._retry.should_retry` already knows, for every error,
whether the request was certainly not processed (retried even without a trusted key) or
may have been (retried only when an Idempotency-Key is trusted). The bulk job does not
trust the key (the service documents none), so it reads the same matrix twice::

    should_retry(untrusted POST)  should_retry(trusted POST)  meaning for the row
    yes                           yes                         retry:   not processed
    no                            yes                         unknown: may have been processed
    no                            no                          the row's own table below

The row's own table comes first: it says what the retry matrix cannot know (what an
answer means for a *row*), and where the job's journal makes a case safer than the client
could (a 5xx is sent again only after the team was listed, journal invariant 3, and
one the service may have processed is unknown, as a lost answer is: listed only
``round_delay`` after it came, in this run or the next)::

    error                                             meaning for the row
    any error whose ``outcome_unknown`` is set        unknown: it may have been processed
      (a 500, 502, 503 or 504 to the create)
    ServerError (another 5xx)                         retry: listed before it is resent
    ResponseValidationError (a 2xx it cannot read)    unknown: it was processed
    ConflictError (409: the key is still in use)      unknown: a request is in progress
    RateLimiterTimeoutError (waited too long)         retry: nothing was sent
    AuthenticationError (401)                         fatal: no row can succeed
    CertificateVerificationError (TLS)                fatal: no row can succeed
    PermissionDeniedError, NotFoundError (403, 404)   fatal for a fixed target, else final
    anything else (400, 422, ...)                     final: the service refused this row

One refusal is told apart for its message: a 400 or 422 about the Idempotency-Key (the
emulator's 422, Stripe's ``idempotency_error``) says the service holds this row's key
for a request with other values. Each journal has keys of its own, so this job sent the
row before, from this journal, and the row has changed since (or, in a journal older
than its own keys, an earlier journal of the job sent it). That earlier request may have
created a contract, so the row stays final, and :func:`row_message` says so instead of
the service's "use a new key", which a bulk job's user cannot act on.
"""

from __future__ import annotations

from typing import Literal

from contractsdk._exceptions import (
    APIError,
    AuthenticationError,
    CertificateVerificationError,
    ConflictError,
    ContractSDKError,
    NotFoundError,
    PermissionDeniedError,
    RateLimiterTimeoutError,
    ResponseValidationError,
    ServerError,
)
from contractsdk._http import Call, Request
from contractsdk._retry import should_retry

__all__ = ["Failure", "classify", "row_message"]

Failure = Literal["unknown", "retry", "final", "fatal"]

_CREATE = Request(
    method="POST",
    url="https://example.invalid/v1/teams/0/contracts",
    headers={"Idempotency-Key": "bulk"},
)
#: The bulk job's own call: an ambiguous failure is not replayed under the key.
_UNTRUSTED = Call(request=_CREATE, trust_key=False)
#: The same call if the key were trusted: what may have been processed is retried too.
_TRUSTED = Call(request=_CREATE, trust_key=True)

#: What the retry matrix cannot say: the meaning of an answer for the row (first match).
_ROW_TABLE: tuple[tuple[type[ContractSDKError], Failure], ...] = (
    (ServerError, "retry"),
    (ResponseValidationError, "unknown"),
    (ConflictError, "unknown"),
    (RateLimiterTimeoutError, "retry"),
    (AuthenticationError, "fatal"),
    (CertificateVerificationError, "fatal"),
)


def classify(error: ContractSDKError, *, fixed_target: bool) -> Failure:
    """Decide what a failed create means for its row (the table in the module docstring).

    Args:
        error: What the create call raised.
        fixed_target: True when every row has the same team and template, so a 403 or 404
            means no row can succeed.

    Returns:
        ``retry`` (not processed: try later), ``unknown`` (may have been processed:
        reconcile before sending again), ``final`` (this row is refused) or ``fatal``
        (stop the job).
    """
    if error.outcome_unknown:
        # A 500, 502, 503 or 504 to the create (or a call whose earlier attempt may have
        # been processed): the service may be making the contract still. Treated as
        # "retry", it was listed as soon as the next run started, missed, and sent again.
        return "unknown"
    for kind, meaning in _ROW_TABLE:
        if isinstance(error, kind):
            return meaning
    if should_retry(error, call=_UNTRUSTED):
        return "retry"
    if should_retry(error, call=_TRUSTED):
        return "unknown"
    if isinstance(error, PermissionDeniedError | NotFoundError) and fixed_target:
        return "fatal"
    return "final"


#: What a failed row's record says when the service holds its key for other values.
KEY_SENT_BEFORE = (
    "this job sent this row before with other values (the row has changed since), and "
    "the service keeps that request's Idempotency-Key: nothing was created now, but that "
    "request may have created a contract. Look for it in the team's contracts; to create "
    "this row anew, give it a new key (its key column's value)"
)


def row_message(error: ContractSDKError) -> str:
    """What a failed create's record says about its row: the error, or why its key clashed."""
    if (
        isinstance(error, APIError)
        and error.status_code in (400, 422)
        and "idempot" in error.message.lower()  # Idempotency-Key, idempotent requests
    ):
        return f"{error.status_code}: {KEY_SENT_BEFORE}"
    return str(error)
