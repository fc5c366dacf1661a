"""A hostile error answer costs a bounded amount to read, and what it shows can be printed.

An error answer is kept up to ``max_response_bytes`` (128 MiB), but its message and
``body`` come from its first :data:`~contractsdk._exceptions.ERROR_SCAN` bytes: the whole
of a 20 MB answer was decoded, split into lines or parsed as JSON (560 MB for one error).
Sizes here are small (5 MB), and the bound is shown by what is parsed and by the memory
Python allocates while the error is made (tracemalloc), not by the process's size.
"""

from __future__ import annotations

import json
import pickle
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from contractsdk import (
    APIError,
    ClientCredentials,
    Request,
    Response,
    ServerError,
    TokenRequestError,
    _exceptions,
)
from contractsdk._auth import _reason
from contractsdk._exceptions import ERROR_SCAN, error_from_response
from contractsdk._redact import Secrets
from contractsdk.testing import json_response
from tests._hostilekit import mock_client

#: A body far past the bound, small enough for a test.
BIG = 5 * 1024 * 1024
#: More than making an error from the first ERROR_SCAN bytes takes; less than decoding
#: (let alone splitting or parsing) a BIG body.
MOST_ALLOCATED = 1024 * 1024


REQUEST = Request(method="GET", url="http://127.0.0.1:9/v1/users/7")


def _answer(
    content: bytes, content_type: str, status: int = 500, headers: dict[str, str] | None = None
) -> Response:
    all_headers = {"Content-Type": content_type, **(headers or {})}
    return Response(status_code=status, headers=all_headers, content=content, request=REQUEST)


def _peak(make: Callable[[], Any]) -> int:
    """The most memory Python allocated while ``make()`` ran, in bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        make()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class _CountingJson:
    """Stands in for the json module in _exceptions: records the length of what it parses."""

    def __init__(self) -> None:
        self.parsed: list[int] = []

    def loads(self, text: str) -> Any:
        self.parsed.append(len(text))
        return json.loads(text)


BODIES: dict[str, tuple[bytes, str]] = {
    # A Spring error whose message comes first, padded to BIG: a small message, once read.
    "json": (
        b'{"message": "first", "pad": "' + b"x" * BIG + b'"}',
        "application/json",
    ),
    "json list": (b"[" + b"{}," * (BIG // 3) + b"{}]", "application/json"),
    "lines": (b"ab\n" * (BIG // 3), "text/plain"),
    "html": (b"<b>ab " * (BIG // 6), "text/html"),
}


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_large_error_body_is_read_only_as_far_as_the_bound(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    content, content_type = BODIES[case]
    counting = _CountingJson()
    monkeypatch.setattr(_exceptions, "json", counting)
    response = _answer(content, content_type)
    made: list[APIError] = []
    peak = _peak(lambda: made.append(error_from_response(response, now=0.0)))
    error = made[0]
    assert isinstance(error, ServerError)
    assert all(length <= ERROR_SCAN for length in counting.parsed), counting.parsed
    assert peak < MOST_ALLOCATED, f"{peak:,} bytes allocated for a {len(content):,}-byte body"
    assert len(error.body) == 2000
    assert len(str(error)) < 300
    pickle.loads(pickle.dumps(error))


def test_an_error_body_under_the_bound_is_read_as_before() -> None:
    """A JSON error just under the bound still gives its message and error."""
    body = {"message": "User with id 7 not found", "error": "Not Found", "pad": "x" * 60_000}
    content = json.dumps(body).encode()
    assert len(content) < ERROR_SCAN
    error = error_from_response(_answer(content, "application/json", 404), now=0.0)
    assert error.service_message == "User with id 7 not found"
    assert error.error == "Not Found"
    assert str(error) == "404 User with id 7 not found (GET /v1/users/7)"


def test_a_secret_across_the_bound_is_not_shown_in_part() -> None:
    """The bound is a cut too: text that ends there loses the start of a secret.

    Spaces collapse, so that the first line's message ends where the bound cuts.
    """
    secret = "Kq7-secret-across-the-bound-0123456789"
    held = Secrets(secret)
    content = ("a" + " " * (ERROR_SCAN - 1 - len(secret) + 2) + secret + " tail").encode()
    error = error_from_response(_answer(content, "text/plain"), now=0.0)
    assert error.service_message == "a"
    for text in (str(error), repr(error), error.body, str(pickle.loads(pickle.dumps(error)))):
        assert secret[:8] not in text
    del held


def test_an_html_page_of_unclosed_tags_still_gives_a_message() -> None:
    """Tags and titles are found in one pass (a page of "<" or "<title>" is not a trap)."""
    for content in (b"<" * 60_000, b"<title>" * 9_000, b"<title " * 9_000):
        error = error_from_response(_answer(content, "text/html", 502), now=0.0)
        assert error.status_code == 502
    page = b"<html><head><TITLE class='x'>Bad\n  Gateway</title></head></html>"
    assert error_from_response(_answer(page, "text/html", 502), now=0.0).service_message == (
        "Bad Gateway"
    )


async def test_a_large_token_error_is_read_only_as_far_as_the_bound() -> None:
    """The token endpoint's error answer: its reason and body from the first bytes too."""
    content = b'{"error": "invalid_client", "pad": "' + b"x" * BIG + b'"}'
    answer = Response(
        status_code=401, headers={"Content-Type": "application/json"}, content=content
    )

    def handler(request: Request) -> Response:
        return answer if request.path == "/oauth/token" else json_response(200, {"id": 7})

    credentials = ClientCredentials(client_id="cid", client_secret="Kq7-secret-0123456789")
    async with mock_client(handler, credentials=credentials) as client:
        with pytest.raises(TokenRequestError) as caught:
            await client.users.get(7)
        # What the call did, measured alone: the reason, then the error made of the answer.
        auth: Any = client._auth
        peak = _peak(lambda: auth._error(f"the answer {_reason(answer)}", answer))
    assert peak < MOST_ALLOCATED, f"{peak:,} bytes allocated for a {len(content):,}-byte body"
    error = caught.value
    assert len(error.body) <= 2000
    assert "the body is not a JSON error" in str(error)


# -- what an error shows can be printed ------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("id-\udcff\udcfe", "id-\\udcff\\udcfe"),  # bytes that are not UTF-8, as aiohttp reads them
        ("id-\x7f-\x1b[31m", "id-?-?[31m"),
        ("req-123", "req-123"),
    ],
)
def test_a_request_id_can_always_be_printed(sent: str, shown: str) -> None:
    response = _answer(b"{}", "application/json", headers={"X-Request-ID": sent})
    error = error_from_response(response, now=0.0)
    assert error.request_id == shown
    assert error.request_id is not None
    error.request_id.encode("utf-8")  # what print() does on a UTF-8 terminal
    assert pickle.loads(pickle.dumps(error)).request_id == shown
    # In what a service's logger.exception writes: str() and repr(), printable too.
    assert f", request id {shown})" in str(error)
    assert f"request_id={shown!r}" in repr(error)
    str(error).encode("utf-8")


def test_an_error_without_a_request_id_says_nothing_of_one() -> None:
    error = error_from_response(_answer(b"{}", "application/json"), now=0.0)
    assert "request id" not in str(error) and "request_id" not in repr(error)


def test_a_request_id_that_echoes_a_secret_does_not_show_it() -> None:
    secret = "Kq7-secret-in-a-request-id-0123456789"
    held = Secrets(secret)
    response = _answer(b"", "text/plain", headers={"X-Request-ID": "x" * 190 + secret})
    error = error_from_response(response, now=0.0)
    assert error.request_id is not None
    assert secret[:8] not in error.request_id
    del held
