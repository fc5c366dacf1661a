"""Credentials, the token cache and the 401 replay."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import pickle
from typing import Any

import pytest

from contractsdk import (
    ApiKey,
    AuthenticationError,
    ClientCredentials,
    ConfigurationError,
    ContractClient,
    Request,
    Response,
    TokenRequestError,
)
from contractsdk._auth import TokenAuth
from contractsdk.testing import MockTransport, json_response
from tests._fakeservice import FakeService
from tests.conftest import API_KEY

SECRET = "s3cr3t-client-secret-value"


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.signature"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TokenServer:
    """Issues numbered tokens; the API accepts only tokens in ``valid``."""

    def __init__(self, expires_in: float = 3600, delay: float = 0.0) -> None:
        self.expires_in = expires_in
        self.delay = delay
        self.issued: list[str] = []
        self.valid: set[str] = set()
        self.token_bodies: list[dict[str, object]] = []
        self.api = FakeService()
        self.reject_all = False

    async def __call__(self, request: Request) -> Response:
        if request.path == "/oauth/token":
            self.token_bodies.append(request.json())
            await asyncio.sleep(self.delay)
            token = f"token-{len(self.issued) + 1}"
            self.issued.append(token)
            self.valid.add(token)
            return json_response(
                200, {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}
            )
        token = request.headers["Authorization"].removeprefix("Bearer ")
        if self.reject_all or token not in self.valid:
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return self.api(request)


def oauth_client(server: TokenServer, **kwargs: Any) -> ContractClient:
    credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
    return ContractClient(
        rate_limits=None, credentials=credentials, transport=MockTransport(server), **kwargs
    )


class TestCredentials:
    def test_reprs_hide_secrets(self) -> None:
        """Neither repr shows the key or the client secret."""
        assert API_KEY not in repr(ApiKey(API_KEY))
        assert SECRET not in repr(ClientCredentials(client_id="cid", client_secret=SECRET))

    async def test_client_repr_hides_key(self) -> None:
        """The client's repr names the environment, not the key."""
        async with ContractClient(rate_limits=None, api_key=API_KEY) as client:
            assert API_KEY not in repr(client) and "sandbox" in repr(client)

    @pytest.mark.parametrize("value", ["", "   ", "a\nb"])
    def test_blank_or_broken_keys_are_refused(self, value: str) -> None:
        """An empty key or one with a line break (header injection) is refused."""
        with pytest.raises(ConfigurationError):
            ApiKey(value)

    @pytest.mark.parametrize(
        ("bound", "environment"), [("sandbox", "production"), ("production", "sandbox")]
    )
    def test_key_for_another_environment_is_refused(self, bound: str, environment: str) -> None:
        """A key said to be for one environment is refused by a client for the other."""
        with pytest.raises(ConfigurationError, match=f"belongs to the {bound} environment"):
            ContractClient(
                rate_limits=None,
                api_key=ApiKey(API_KEY, environment=bound),
                environment=environment,
            )

    def test_jwt_audience_binds_the_key(self) -> None:
        """A JWT whose audience is the sandbox is refused by a production client."""
        key = jwt({"aud": ["https://sandbox.legislate.tech"], "sub": "x"})
        with pytest.raises(ConfigurationError, match="sandbox environment"):
            ContractClient(rate_limits=None, api_key=key, environment="production")
        ContractClient(
            rate_limits=None, api_key=key, environment="sandbox"
        )  # and accepted where it belongs

    def test_client_credentials_bound_to_environment(self) -> None:
        """Client credentials said to be for production are refused by a sandbox client."""
        credentials = ClientCredentials(
            client_id="cid", client_secret=SECRET, environment="production"
        )
        with pytest.raises(ConfigurationError, match="production environment"):
            ContractClient(rate_limits=None, credentials=credentials, environment="sandbox")

    def test_error_message_never_holds_the_key(self) -> None:
        """The wrong-environment error names environments, not the key."""
        with pytest.raises(ConfigurationError) as caught:
            ContractClient(
                rate_limits=None,
                api_key=ApiKey(API_KEY, environment="sandbox"),
                environment="production",
            )
        assert API_KEY not in str(caught.value) and API_KEY not in repr(caught.value)

    def test_both_api_key_and_credentials_is_ambiguous(self) -> None:
        """Giving both credential arguments is refused."""
        with pytest.raises(ConfigurationError, match="either"):
            ContractClient(rate_limits=None, api_key=API_KEY, credentials=ApiKey(API_KEY))


class TestTokenCache:
    async def test_token_request_body_and_bearer(self) -> None:
        """The token is requested with the client-credentials JSON body and then sent as bearer."""
        server = TokenServer()
        async with oauth_client(server) as client:
            await client.users.get(7)
        assert server.token_bodies == [
            {
                "grant_type": "client_credentials",
                "client_id": "cid",
                "client_secret": SECRET,
                "audience": "https://sandbox.legislate.tech",
            }
        ]
        assert client.stats.token_requests == 1

    async def test_auth_url_and_audience_override(self) -> None:
        """auth_url and audience override the environment's token host and audience."""
        server = TokenServer()
        credentials = ClientCredentials(
            client_id="cid",
            client_secret=SECRET,
            auth_url="https://login.example.com",
            audience="urn:contracts",
        )
        transport = MockTransport(server)
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=transport
        ) as client:
            await client.users.get(7)
        assert transport.requests[0].url == "https://login.example.com/oauth/token"
        assert server.token_bodies[0]["audience"] == "urn:contracts"

    async def test_hundred_concurrent_calls_make_one_token_request(self) -> None:
        """100 concurrent calls on an empty or expired cache cause exactly one token request."""
        server = TokenServer(expires_in=60, delay=0.01)
        clock = FakeClock()
        async with oauth_client(server, clock=clock) as client:
            await asyncio.gather(*(client.users.get(7) for _ in range(100)))
            assert len(server.issued) == 1
            clock.now += 3600  # expired
            await asyncio.gather(*(client.users.get(7) for _ in range(100)))
        assert len(server.issued) == 2

    async def test_token_refreshed_before_expiry(self) -> None:
        """The token is reused until shortly before expiry, then refreshed."""
        server = TokenServer(expires_in=3600)
        clock = FakeClock()
        async with oauth_client(server, clock=clock) as client:
            await client.users.get(7)
            clock.now += 3000  # 10 minutes left: still fine
            await client.users.get(7)
            assert len(server.issued) == 1
            clock.now += 350  # under the 300 s margin (+ at most 60 s jitter)
            await client.users.get(7)
        assert len(server.issued) == 2

    async def test_401_that_refresh_fixes(self) -> None:
        """A 401 drops the token, fetches a new one and replays the request once."""
        server = TokenServer()
        async with oauth_client(server) as client:
            await client.users.get(7)
            server.valid.clear()  # the service revoked token-1
            user = await client.users.get(7)
        assert user.id == 7
        assert server.issued == ["token-1", "token-2"]

    async def test_401_that_refresh_does_not_fix(self) -> None:
        """When the fresh token is refused too, AuthenticationError is raised after one replay."""
        server = TokenServer()
        server.reject_all = True
        transport = MockTransport(server)
        credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=transport
        ) as client:
            with pytest.raises(AuthenticationError) as caught:
                await client.users.get(7)
        assert caught.value.status_code == 401
        api_calls = [r for r in transport.requests if r.path.startswith("/v1")]
        assert len(api_calls) == 2 and len(server.issued) == 2
        message = str(caught.value)
        assert "CONTRACTSDK_CLIENT_ID, CONTRACTSDK_CLIENT_SECRET" in message
        assert "the sandbox service at https://" in message
        assert SECRET not in message and "token-2" not in message

    async def test_api_key_401_is_not_replayed(self, service: FakeService) -> None:
        """A static key refused with 401 raises at once: replaying it cannot help."""
        transport = MockTransport(lambda r: Response(status_code=401))
        async with ContractClient(rate_limits=None, api_key=API_KEY, transport=transport) as client:
            with pytest.raises(AuthenticationError) as caught:
                await client.users.get(7)
        assert len(transport.requests) == 1
        # The message says what to check, and where it was sent; never the key.
        assert str(caught.value) == (
            "401 Unauthorized; the sandbox service at "
            f"{client.environment.base_url} refused the API key: check that the key given "
            "(api_key= or CONTRACTSDK_API_KEY) is one it issued and has not been revoked "
            "(GET /v1/users/7)"
        )
        assert API_KEY not in repr(caught.value)

    async def test_invalidate_keeps_a_newer_token(self) -> None:
        """A 401 for an old token does not throw away a token refreshed in the meantime."""
        server = TokenServer()
        async with oauth_client(server) as client:
            auth = client._auth
            old = await auth.token()
            await auth.invalidate(old)
            new = await auth.token()
            await auth.invalidate(old)  # a late 401 for the old token
            assert await auth.token() == new
        assert server.issued == ["token-1", "token-2"]

    async def test_cancelled_waiter_does_not_cancel_the_refresh(self) -> None:
        """A caller cancelled while the token is fetched leaves the fetch to the others."""
        server = TokenServer(delay=0.05)
        async with oauth_client(server) as client:
            first = asyncio.ensure_future(client.users.get(7))
            second = asyncio.ensure_future(client.users.get(7))
            await asyncio.sleep(0.01)
            first.cancel()
            assert (await second).id == 7
            with pytest.raises(asyncio.CancelledError):
                await first
        assert len(server.issued) == 1

    async def test_failed_early_refresh_keeps_the_current_token(self) -> None:
        """If a refresh before expiry fails, the still-valid token keeps working."""
        server = TokenServer(expires_in=3600)
        clock = FakeClock()
        async with oauth_client(server, clock=clock) as client:
            await client.users.get(7)
            clock.now += 3500  # in the refresh window, not expired
            original = server.__call__

            async def failing(request: Request) -> Response:
                if request.path == "/oauth/token":
                    return json_response(500, {"error": "server_error"})
                return await original(request)

            client._transport.handler = failing  # type: ignore[attr-defined]
            assert (await client.users.get(7)).id == 7


class TestTokenEndpointFailures:
    @pytest.mark.parametrize(
        ("response", "reason"),
        [
            (
                json_response(500, {"error": "server_error", "error_description": "boom"}),
                "answered 500: server_error: boom",
            ),
            (Response(status_code=200, content=b"<html>oops</html>"), "not JSON"),
            (json_response(200, {"token_type": "Bearer"}), "no access_token"),
            (json_response(200, {"access_token": "t", "token_type": "mac"}), "token_type"),
            (json_response(200, {"access_token": "t", "expires_in": "soon"}), "expires_in"),
            (
                json_response(
                    401, {"error": "access_denied", "error_description": f"bad secret {SECRET}"}
                ),
                "access_denied",
            ),
        ],
    )
    async def test_token_failures_raise_authentication_error(
        self, response: Response, reason: str
    ) -> None:
        """A failing token endpoint gives TokenRequestError with the reason and no secret."""
        transport = MockTransport(lambda request: response)
        credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=transport
        ) as client:
            with pytest.raises(AuthenticationError) as caught:
                await client.users.get(7)
        error = caught.value
        assert isinstance(error, TokenRequestError)
        assert reason in str(error)
        for text in (str(error), repr(error), error.body, pickle.dumps(error).decode("latin-1")):
            assert SECRET not in text
        assert len(transport.requests) == 1  # the API was never called

    @pytest.mark.parametrize(
        ("response", "hinted"),
        [
            (
                json_response(401, {"error": "access_denied", "error_description": "Unauthorized"}),
                True,
            ),
            (json_response(401, {"error": "invalid_client"}), True),
            (Response(status_code=401), True),
            (json_response(400, {"error": "invalid_client"}), True),
            (json_response(400, {"error": "access_denied"}), True),
            (json_response(400, {"error": "invalid_request"}), False),
            (json_response(403, {"error": "access_denied"}), False),
            (json_response(500, {"error": "server_error"}), False),
        ],
    )
    async def test_a_refused_client_says_to_check_the_id_and_secret(
        self, response: Response, hinted: bool
    ) -> None:
        """A token endpoint that refuses the pair says which settings to check, never the secret.

        It said only "the token endpoint answered 401: access_denied: Unauthorized".
        """
        transport = MockTransport(lambda request: response)
        credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=transport, environment="sandbox"
        ) as client:
            with pytest.raises(TokenRequestError) as caught:
                await client.users.get(7)
        hint = (
            "; check the client id and secret given (client_id= and client_secret= of "
            "ClientCredentials, or CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET): they "
            "must be a pair the sandbox service issued (POST /oauth/token)"
        )
        assert str(caught.value).endswith(hint) is hinted, str(caught.value)
        assert str(caught.value).startswith(f"the token endpoint answered {response.status_code}")
        for text in (
            str(caught.value),
            repr(caught.value),
            pickle.dumps(caught.value).decode("latin-1"),
        ):
            assert SECRET not in text

    async def test_a_short_secret_does_not_cut_up_the_hint(self) -> None:
        """A secret that is also a word of the hint ("client"): the hint is whole.

        Scrubbed with the message, every registered secret of 6 characters or more was cut
        out of it: "check the [redacted] id and secret given ([redacted]_id= …".
        """
        transport = MockTransport(lambda request: json_response(401, {"error": "invalid_client"}))
        credentials = ClientCredentials(client_id="cid", client_secret="client")
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=transport, environment="sandbox"
        ) as client:
            with pytest.raises(TokenRequestError) as caught:
                await client.users.get(7)
        assert "check the client id and secret given (client_id= and client_secret=" in str(
            caught.value
        )

    async def test_next_call_retries_the_token_request(self) -> None:
        """A failed token request is not cached: the next call after the backoff asks again."""
        answers = [json_response(503, {}), None]
        server = TokenServer()
        clock = FakeClock()

        async def handler(request: Request) -> Response:
            if request.path == "/oauth/token" and answers and answers[0] is not None:
                return answers.pop(0)  # type: ignore[return-value]
            return await server(request)

        credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
        async with ContractClient(
            rate_limits=None, credentials=credentials, transport=MockTransport(handler), clock=clock
        ) as c:
            with pytest.raises(TokenRequestError):
                await c.users.get(7)
            answers.clear()
            clock.now += TokenAuth.BACKOFF_INITIAL  # the first backoff is at most this long
            assert (await c.users.get(7)).id == 7


async def test_debug_logs_hold_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    """At DEBUG level, nothing logged holds the key, the client secret or a token."""
    caplog.set_level(logging.DEBUG)
    server = TokenServer()
    async with oauth_client(server) as client:
        await client.users.get(7)
        server.valid.clear()
        await client.users.get(7)
    async with ContractClient(
        rate_limits=None, api_key=API_KEY, transport=MockTransport(FakeService())
    ) as client:
        await client.users.get(7)
    text = "\n".join(f"{r.getMessage()} {r.args}" for r in caplog.records)
    assert "→ GET /v1/users/7" in text  # the logs do say something
    for secret in (SECRET, API_KEY, "token-1", "token-2"):
        assert secret not in text


async def test_a_token_request_cut_short_does_not_say_the_call_may_have_run() -> None:
    """A reset on the token endpoint fails a create that was never sent: its error says so.

    The token request's ReadError reached the create as its own, "the request may have
    been processed" included, and a caller would have gone looking for a contract that
    could not exist.
    """
    from contractsdk import ReadError

    seen: list[str] = []

    async def handler(request: Request) -> Response:
        seen.append(request.path)
        if request.path == "/oauth/token":
            raise ReadError("the connection broke", method="POST", url=request.path)
        return json_response(201, {"href": "/v1/users/7"})

    credentials = ClientCredentials(client_id="cid", client_secret=SECRET)
    async with ContractClient(
        rate_limits=None, credentials=credentials, transport=MockTransport(handler), retries=None
    ) as client:
        with pytest.raises(ReadError) as caught:
            await client.users.create(email="a@example.com", first_name="A", last_name="B")
    assert seen == ["/oauth/token"]  # the create itself was never sent
    assert not caught.value.outcome_unknown
    assert "may have been processed" not in str(caught.value)
