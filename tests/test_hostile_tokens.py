"""A token endpoint's answer that cannot be used is refused when it comes, never cached.

An access token that cannot go in an ``Authorization`` header (a line break, a NUL, any
character outside visible ASCII, RFC 6750 §2.1) was cached, and every call then failed
for its lifetime with aiohttp's untyped ValueError. The refusal never shows the token.
"""

from __future__ import annotations

import contextlib
import pickle
import traceback
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web

from contractsdk import (
    ClientCredentials,
    ContractClient,
    Request,
    Response,
    TokenRequestError,
    User,
)
from contractsdk._auth import TokenAuth
from contractsdk.testing import json_response
from tests._hostilekit import mock_client, serve

GOOD_TOKEN = "Kq7-good-token-0123456789"


@contextlib.asynccontextmanager
async def _service(next_token: Callable[[], str], sent: list[str]) -> AsyncIterator[str]:
    """A token endpoint and an API on 127.0.0.1; the API notes each Authorization."""

    async def handler(request: web.Request) -> web.Response:
        if request.path == "/oauth/token":
            return web.json_response({"access_token": next_token(), "expires_in": 3600})
        sent.append(request.headers.get("Authorization", ""))
        return web.json_response({"id": 7})

    async with serve(handler) as url:
        yield url


UNSENDABLE = {
    "line break": "Kq7-token\r\nX-Injected: 1",
    "nul": "Kq7-token\x00abcdef",
    "tab": "Kq7-token\tabcdef",
    "delete": "Kq7-token\x7fabcdef",
    "space": "Kq7 token abc def",
    "not ascii": "Kq7-tokén-ключ-123",
}


@pytest.mark.parametrize("case", sorted(UNSENDABLE))
async def test_a_token_that_cannot_be_sent_is_refused_and_not_cached(case: str) -> None:
    bad = UNSENDABLE[case]
    issued: list[str] = []
    sent: list[str] = []
    now = [0.0]

    def next_token() -> str:
        issued.append(bad if not issued else GOOD_TOKEN)
        return issued[-1]

    async with (
        _service(next_token, sent) as url,
        ContractClient(
            credentials=ClientCredentials(
                client_id="cid", client_secret="Kq7-secret-0123456789", auth_url=url
            ),
            base_url=url,
            rate_limits=None,
            retries=None,
            clock=lambda: now[0],
        ) as client,
    ):
        with pytest.raises(TokenRequestError, match="cannot be sent in a header") as caught:
            await client.users.get(7)
        error = caught.value
        shown = [
            str(error),
            repr(error),
            error.body,
            str(pickle.loads(pickle.dumps(error))),
            "".join(traceback.format_exception(error)),
        ]
        for text in shown:
            assert bad not in text
            assert "Injected" not in text
        assert "[redacted]" in error.body  # the answer is shown, its token redacted
        # Past the backoff that follows a failed token request, the next call asks again:
        # the refused token was not kept.
        now[0] += TokenAuth.BACKOFF_MAX + 1
        assert isinstance(await client.users.get(7), User)
    assert issued == [bad, GOOD_TOKEN]
    assert sent == [f"Bearer {GOOD_TOKEN}"]  # the refused one was never sent


async def test_a_token_error_names_the_path_as_every_error_does() -> None:
    """TokenRequestError.url is the path (docs/errors.md), not the scheme and host too."""

    def handler(request: Request) -> Response:
        return json_response(401, {"error": "invalid_client"})

    credentials = ClientCredentials(
        client_id="cid",
        client_secret="Kq7-secret-0123456789",
        auth_url="https://login.example.com/tenant-1",
    )
    async with mock_client(handler, credentials=credentials) as client:
        with pytest.raises(TokenRequestError) as caught:
            await client.users.get(7)
    error = caught.value
    assert error.url == "/tenant-1/oauth/token"
    assert error.method == "POST"
    assert str(error).endswith("(POST /tenant-1/oauth/token)")
    assert "login.example.com" not in str(error)


@pytest.mark.parametrize("case", sorted(UNSENDABLE))
def test_a_shared_token_that_cannot_be_sent_is_not_used(case: str) -> None:
    """A token read from Redis is held to the same rule (then this process fetches its own)."""
    client = ContractClient(
        credentials=ClientCredentials(client_id="cid", client_secret="Kq7-secret-0123456789"),
        base_url="http://127.0.0.1:9",
    )
    auth = client._auth
    assert isinstance(auth, TokenAuth)
    sealed = auth._seal(auth._token(UNSENDABLE[case], 3600.0, auth._clock()))
    assert auth._unseal(sealed) is None
    good = auth._unseal(auth._seal(auth._token(GOOD_TOKEN, 3600.0, auth._clock())))
    assert good is not None and good.value == GOOD_TOKEN
