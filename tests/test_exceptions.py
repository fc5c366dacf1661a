"""The error hierarchy: status mapping, body reading, pickling, no secrets."""

from __future__ import annotations

import pickle

import pytest

import contractsdk
from contractsdk import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ContractSDKError,
    Headers,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ReadError,
    ReadTimeoutError,
    Request,
    Response,
    ServerError,
    TokenRequestError,
    TransportError,
    UnprocessableEntityError,
)
from contractsdk._exceptions import error_from_response

REQUEST = Request(
    method="GET",
    url="https://sandbox.legislate.tech/v1/users/123?token=x",
    headers={"Authorization": "Bearer secret-token"},
)


def respond(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
    return Response(status_code=status, content=body, headers=headers or {}, request=REQUEST)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, ServerError),
        (502, ServerError),
        (503, ServerError),
        (408, APIError),
        (418, APIError),
    ],
)
def test_status_maps_to_class(status: int, cls: type[APIError]) -> None:
    """Each status family has its class; other statuses are plain APIError."""
    error = error_from_response(respond(status), now=0)
    assert type(error) is cls
    assert error.status_code == status


def test_spring_body_message_is_surfaced() -> None:
    """The message of a Spring-style error body becomes the error's message."""
    body = (
        b'{"timestamp":"2022-06-16T15:16:27.980+0000","status":404,"error":"Not Found",'
        b'"message":"User with id 123 not found","path":"/v1/users/123"}'
    )
    error = error_from_response(respond(404, body, {"Content-Type": "application/json"}), now=0)
    assert str(error) == "404 User with id 123 not found (GET /v1/users/123)"
    assert error.service_message == "User with id 123 not found"
    assert error.error == "Not Found"


def test_html_error_body() -> None:
    """An HTML error page (a proxy's 502) gives its title, not markup."""
    body = b"<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>"
    error = error_from_response(respond(502, body, {"Content-Type": "text/html"}), now=0)
    assert str(error).startswith("502 502 Bad Gateway")
    assert "<" not in str(error)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", "500 Internal Server Error"),
        (b"upstream timeout\nmore", "500 upstream timeout"),
        (b"{not json", "500 {not json"),
        (b'["a"]', '500 ["a"]'),
        (b'{"status": 500}', "500 Internal Server Error"),
    ],
)
def test_malformed_bodies(body: bytes, expected: str) -> None:
    """Empty, plain-text, broken and unexpected JSON bodies still give a readable message."""
    assert str(error_from_response(respond(500, body), now=0)).startswith(expected)


def test_oauth_style_body() -> None:
    """An OAuth error body's description is used."""
    error = error_from_response(
        respond(401, b'{"error":"invalid_token","error_description":"expired"}'), now=0
    )
    assert error.service_message == "expired" and error.error == "invalid_token"


def test_rate_limit_error_has_retry_after() -> None:
    """A 429's Retry-After is on the error."""
    error = error_from_response(respond(429, headers={"Retry-After": "2"}), now=0)
    assert isinstance(error, RateLimitError) and error.retry_after == 2.0
    assert error.wait == 2.0


@pytest.mark.parametrize(("reset", "wait"), [("0.190", 0.19), ("0.000", 0.0), ("0.5", 0.5)])
def test_a_429s_wait_is_the_finer_reset_its_retry_after_rounds_up(reset: str, wait: float) -> None:
    """``Retry-After: 1`` beside an empty counter resetting sooner: the error waits that.

    ``retry_after`` stays as the service said it; a counter with room, or resetting more
    than a second sooner than ``Retry-After`` says, leaves the wait at ``Retry-After``.
    """
    headers = {"Retry-After": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
    error = error_from_response(respond(429, headers=headers), now=0)
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 1.0 and error.wait == pytest.approx(wait)
    room = error_from_response(
        respond(429, headers={**headers, "X-RateLimit-Remaining": "3"}), now=0
    )
    assert isinstance(room, RateLimitError) and room.wait == 1.0
    other = {**headers, "Retry-After": "2"}
    assert error_from_response(respond(429, headers=other), now=0).wait == 2.0  # type: ignore[attr-defined]


def test_errors_never_show_credentials_or_query() -> None:
    """Errors keep method and path only: no Authorization header, no query string."""
    error = error_from_response(respond(404), now=0)
    assert error.url == "/v1/users/123"
    for text in (str(error), repr(error), pickle.dumps(error).decode("latin-1")):
        assert "secret-token" not in text and "token=x" not in text


def test_huge_bodies_are_truncated() -> None:
    """The kept body and the message are bounded."""
    error = error_from_response(respond(500, b"x" * 100_000), now=0)
    assert len(error.body) == 2000 and len(str(error)) < 300


@pytest.mark.parametrize(
    "error",
    [
        NotFoundError(
            "404 nope",
            status_code=404,
            method="GET",
            url="/v1/x",
            headers=Headers({"A": "1"}),
            request_id="r1",
        ),
        RateLimitError("429", status_code=429, retry_after=1.5),
        ReadTimeoutError("timed out", method="POST", url="/v1/teams/1/contracts"),
        contractsdk.ConfigurationError("bad"),
        contractsdk.ResponseValidationError("bad", model="Team", errors=["$.id: x"]),
        contractsdk.RateLimiterTimeoutError("busy", bucket="write", wait=3.0),
        contractsdk.TokenRequestError("token endpoint answered 500", status_code=500),
    ],
)
def test_errors_pickle(error: ContractSDKError) -> None:
    """Every error survives pickling with its attributes."""
    error.attempts = 3
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert copy.__dict__ == error.__dict__
    assert str(copy) == str(error)


def test_attempts_shown_in_message() -> None:
    """An error raised after retries says how many attempts were made."""
    error = ServerError("503 Service Unavailable", status_code=503, method="GET", url="/v1/x")
    error.attempts = 3
    assert "(after 3 attempts)" in str(error)


def test_outcome_unknown_is_said() -> None:
    """A read timeout says the request may have been processed."""
    error = ReadTimeoutError("timed out", method="POST", url="/v1/teams/1/contracts")
    assert error.outcome_unknown
    assert "may have been processed" in str(error)


@pytest.mark.parametrize("cls", [ReadTimeoutError, ReadError])
@pytest.mark.parametrize(
    ("method", "unknown"),
    [
        ("GET", False),
        ("HEAD", False),
        ("OPTIONS", False),
        ("POST", True),
        ("PATCH", True),
        ("PUT", True),
        ("DELETE", True),
    ],
)
def test_only_a_write_may_have_been_processed(
    cls: type[TransportError], method: str, unknown: bool
) -> None:
    """A lost answer to a read changes nothing: its message does not say it may have been done.

    A GET that timed out ended "; the request may have been processed".
    """
    error = cls("timed out", method=method, url="/v1/users/7")
    for seen in (error, pickle.loads(pickle.dumps(error))):
        assert seen.outcome_unknown is unknown
        assert str(seen).endswith("; the request may have been processed") is unknown
    error.outcome_unknown = not unknown  # as a retry or a token request sets it
    assert pickle.loads(pickle.dumps(error)).outcome_unknown is not unknown
    assert ("may have been processed" in str(error)) is not unknown


def test_every_error_descends_from_the_root() -> None:
    """All exported exception classes are ContractSDKError subclasses."""
    errors = [getattr(contractsdk, name) for name in contractsdk.__all__]
    classes = [e for e in errors if isinstance(e, type) and issubclass(e, BaseException)]
    assert len(classes) >= 20
    assert all(issubclass(cls, ContractSDKError) for cls in classes)


@pytest.mark.parametrize(
    ("error", "unknown"),
    [
        (ServerError("502 Bad Gateway", status_code=502, method="POST", url="/v1/x"), True),
        (ServerError("500", status_code=500, method="PATCH", url="/v1/x"), True),
        (ServerError("503", status_code=503, method="GET", url="/v1/x"), False),
        (ServerError("501", status_code=501, method="POST", url="/v1/x"), False),
        (APIError("400", status_code=400, method="POST", url="/v1/x"), False),
        (TokenRequestError("503", status_code=503, method="POST", url="/oauth/token"), False),
    ],
)
def test_a_5xx_to_a_write_says_it_may_have_been_processed(error: APIError, unknown: bool) -> None:
    """A 5xx to a POST or PATCH may follow its processing: the error says so, pickled too."""
    for seen in (error, pickle.loads(pickle.dumps(error))):
        assert seen.outcome_unknown is unknown
        assert str(seen).endswith("; the request may have been processed") is unknown


def test_term_error_with_identity_problems_lists_both_and_pickles() -> None:
    """A contract made with its parties: one error, both kinds of problem, kept by pickle."""
    from contractsdk.identity import IdentityProblem
    from contractsdk.validation import TermProblem

    term = TermProblem(kind="missing", path="contract_name", term="contract_name", message="no")
    party = IdentityProblem(kind="invalid", path="Email", field="Email", message="bad", party=1)
    error = contractsdk.TermValidationError([term], [party, party])
    assert str(error) == (
        "1 problem with the contract values:\n  - contract_name: no\n"
        f"and 2 problems with the identity values:\n  - {party}\n  - {party}"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert copy.identity_problems == (party, party) and str(copy) == str(error)
    assert contractsdk.TermValidationError([term]).identity_problems == ()
