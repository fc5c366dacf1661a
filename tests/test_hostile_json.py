"""Hostile JSON (nested far deeper than any real answer) ends in a ContractSDKError subclass."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from contractsdk import (
    APIError,
    ClientCredentials,
    ContractClient,
    ContractSDKError,
    NotFoundError,
    Request,
    Response,
    ResponseValidationError,
    ServerError,
    TokenRequestError,
    User,
)
from contractsdk._converter import structure
from contractsdk._exceptions import error_from_response
from contractsdk.models import Contract, Team
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

#: 100,000 nested arrays: json's C scanner runs out of recursion long before the end.
DEEP = b"[" * 100_000 + b"]" * 100_000
#: An object whose values are as deep.
DEEP_OBJECT = b'{"message": ' + DEEP + b', "error": ' + DEEP + b"}"
JSON = {"Content-Type": "application/json"}
GOOD_TOKEN = b'{"access_token": "token-1", "token_type": "Bearer", "expires_in": 3600}'


def nested(depth: int) -> list[Any]:
    """Return a list nested ``depth`` levels deep, built without recursion."""
    outer: list[Any] = []
    inner = outer
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return outer


def api_key_client(status: int, body: bytes) -> ContractClient:
    def handler(request: Request) -> Response:
        return Response(status_code=status, headers=JSON, content=body)

    return ContractClient(
        rate_limits=None,
        retries=None,
        api_key=API_KEY,
        environment="sandbox",
        transport=MockTransport(handler),
    )


def oauth_client(status: int, body: bytes) -> ContractClient:
    def handler(request: Request) -> Response:
        if request.path == "/oauth/token":
            return Response(status_code=status, headers=JSON, content=body)
        return json_response(200, {"id": 7, "first_name": "Ada"})

    credentials = ClientCredentials(client_id="cid", client_secret="s3cr3t-value")
    return ContractClient(
        rate_limits=None,
        retries=None,
        credentials=credentials,
        environment="sandbox",
        transport=MockTransport(handler),
    )


def check_bounded(error: ContractSDKError) -> None:
    """The error prints, pickles and stays small, whatever body it was made from."""
    assert len(str(error)) < 3000
    assert len(repr(error)) < 3000
    pickle.loads(pickle.dumps(error))


def test_response_json_of_deep_nesting_is_a_value_error() -> None:
    """Response.json() turns json's RecursionError into a ValueError, as for any bad JSON."""
    with pytest.raises(ValueError, match="deep"):
        Response(status_code=200, content=DEEP).json()
    with pytest.raises(ValueError, match="deep"):
        Request(method="POST", url="https://x.test/", content=DEEP).json()


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
async def test_deep_success_body_is_a_response_validation_error(body: bytes) -> None:
    """A 200 whose body is nested 100,000 deep raises ResponseValidationError."""
    async with api_key_client(200, body) as client:
        with pytest.raises(ResponseValidationError) as caught:
            await client.users.get(7)
    check_bounded(caught.value)


@pytest.mark.parametrize(("status", "cls"), [(404, NotFoundError), (500, ServerError)])
@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
async def test_deep_error_body_is_the_status_error(
    status: int, cls: type[APIError], body: bytes
) -> None:
    """A 4xx/5xx whose body is nested 100,000 deep raises its status's error, body as text."""
    async with api_key_client(status, body) as client:
        with pytest.raises(cls) as caught:
            await client.users.get(7)
    error = caught.value
    assert error.status_code == status
    assert len(error.service_message or "") <= 200  # unreadable JSON: its first line, cut
    assert error.body == body.decode()[:2000]
    check_bounded(error)


@pytest.mark.parametrize("status", [200, 400, 503])
@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
async def test_deep_token_answer_is_a_token_request_error(status: int, body: bytes) -> None:
    """A token endpoint answering JSON nested 100,000 deep raises TokenRequestError."""
    async with oauth_client(status, body) as client:
        with pytest.raises(TokenRequestError) as caught:
            await client.users.get(7)
    check_bounded(caught.value)


async def test_oauth_client_reads_a_good_token() -> None:
    """The token client above works with a well-formed answer (the tests' control)."""
    async with oauth_client(200, GOOD_TOKEN) as client:
        assert (await client.users.get(7)).first_name == "Ada"


def test_error_body_with_a_deep_but_readable_message() -> None:
    """An error body whose message is a deep (decodable) array is not stringified."""
    request = Request(method="GET", url="https://x.test/v1/users/7")
    body = b'{"message": ' + b"[" * 500 + b"]" * 500 + b', "error": "Not Found"}'
    error = error_from_response(
        Response(status_code=404, headers=JSON, content=body, request=request), now=0.0
    )
    assert isinstance(error, NotFoundError)
    assert error.service_message is None
    assert str(error) == "404 Not Found (GET /v1/users/7)"
    check_bounded(error)


@pytest.mark.parametrize("cls", [User, Team, Contract])
@pytest.mark.parametrize("key", ["id", "name", "first_name", "links", "_links", "fields"])
# 10,000 items: far past any cut in the message, at a tenth of 100,000's cost.
@pytest.mark.parametrize(
    "value", [nested(5000), list(range(10_000)), {str(i): i for i in range(10_000)}]
)
def test_model_with_a_deep_or_wide_field_is_a_typed_error(
    cls: type[Any], key: str, value: object
) -> None:
    """A field holding a 5,000-deep or huge value gives a model or a short typed error."""
    try:
        structure({key: value}, cls)
    except ResponseValidationError as error:
        caught = error
    else:
        return
    check_bounded(caught)
    assert all(len(line) < 1000 for line in caught.errors), caught.errors
    assert "recursion" not in str(caught)


def test_5000_deep_model_itself_is_a_typed_error() -> None:
    """A 5,000-deep array where a model is expected is a ResponseValidationError."""
    with pytest.raises(ResponseValidationError) as caught:
        structure(nested(5000), User)
    check_bounded(caught.value)


def test_a_validation_error_keeps_at_most_a_hundred_lines() -> None:
    """A million bad items make a hundred lines and a count, not a million lines."""
    from contractsdk import ResponseValidationError
    from contractsdk._exceptions import MAX_ERROR_LINES

    error = ResponseValidationError("bad", errors=[f"$[{n}]: bad" for n in range(1_000_000)])
    assert len(error.errors) == MAX_ERROR_LINES + 1
    assert error.errors[-1] == f"… and {1_000_000 - MAX_ERROR_LINES} more problems"
    assert error.errors[0] == "$[0]: bad"
