"""The token endpoint as an unlucky user or an attacker meets it (issue 9).

A token endpoint that never answers, one that refuses connections, answers with absurd
lifetimes, and the token exchange as hooks and logs see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import socket
from collections.abc import Callable
from types import TracebackType
from typing import Any

import pytest

from contractsdk import (
    ClientCredentials,
    ConnectError,
    ContractClient,
    ReadTimeoutError,
    Request,
    Response,
    TokenRequestError,
)
from contractsdk._auth import MAX_TOKEN_LIFETIME, TOKEN_TIMEOUT, TokenAuth
from contractsdk._config import Environment
from contractsdk.testing import MockTransport, json_response
from tests._fakeclock import FakeClock
from tests._fakeservice import FakeService
from tests._hostilekit import chain_shown, mock_client

SECRET = "s3cr3t-client-secret-value"
ACCESS_TOKEN = "at-5f0c1e9d2b7a4c38-access"


def credentials(auth_url: str | None = None) -> ClientCredentials:
    return ClientCredentials(client_id="cid", client_secret=SECRET, auth_url=auth_url)


def token_answer(expires_in: object = 3600) -> Response:
    return json_response(
        200, {"access_token": ACCESS_TOKEN, "token_type": "Bearer", "expires_in": expires_in}
    )


class TokenEndpoint:
    """A send function for TokenAuth: counts requests, answers or raises as told."""

    def __init__(self, answer: Callable[[], Response]) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        return self.answer()


def token_auth(endpoint: TokenEndpoint, clock: FakeClock, rng: float = 1.0) -> TokenAuth:
    return TokenAuth(credentials(), Environment.SANDBOX, endpoint, clock=clock, rng=lambda: rng)


class SilentServer:
    """A loopback TCP server that accepts connections and never answers.

    On exit it closes every connection and waits for its handlers, so no socket is left
    for the garbage collector to warn about in a later test.
    """

    async def __aenter__(self) -> SilentServer:
        self._release = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port: int = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._release.wait()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.close()
        self._release.set()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class FrozenClock:
    """Monotonic time that never moves: a backoff window, once open, stays open."""

    def __call__(self) -> float:
        return 1000.0


async def loop_turns(delay: float) -> None:
    """A sleep of a loop turn per millisecond asked: retries spread out, time stands still."""
    for _ in range(min(int(delay * 1000), 2000)):
        await asyncio.sleep(0)


class TestTokenRequestTimeout:
    async def test_silent_token_endpoint_times_out(self) -> None:
        """A token endpoint that accepts and never answers fails the call at the timeout."""
        async with (
            SilentServer() as server,
            ContractClient(
                credentials=credentials(f"http://127.0.0.1:{server.port}"),
                rate_limits=None,
                retries=None,
                timeout=0.1,
            ) as client,
        ):
            with pytest.raises(ReadTimeoutError):
                # The bound only keeps a hang from stalling the suite; never reached.
                await asyncio.wait_for(client.users.get(7), 10)

    @pytest.mark.parametrize(
        ("timeout", "expected"),
        [(5.0, 5.0), (None, TOKEN_TIMEOUT), (TOKEN_TIMEOUT * 4, TOKEN_TIMEOUT)],
    )
    async def test_token_request_carries_a_timeout(
        self, timeout: float | None, expected: float
    ) -> None:
        """The token request takes the client's timeout, at most TOKEN_TIMEOUT."""
        service = FakeService()

        def handler(request: Request) -> Response:
            return token_answer() if request.path == "/oauth/token" else service(request)

        transport = MockTransport(handler)
        async with ContractClient(
            credentials=credentials(), rate_limits=None, timeout=timeout, transport=transport
        ) as client:
            await client.users.get(7)
        assert transport.requests[0].path == "/oauth/token"
        assert transport.requests[0].timeout == expected


class TestTokenRequestBackoff:
    async def test_refused_connections_make_few_token_requests(self) -> None:
        """100 calls, retried, against a closed port: one token request, not one per retry."""
        async with ContractClient(
            credentials=credentials(f"http://127.0.0.1:{closed_port()}"),
            rate_limits=None,
            clock=FrozenClock(),
            sleep=loop_turns,
        ) as client:
            results = await asyncio.gather(
                *(client.users.get(7) for _ in range(100)), return_exceptions=True
            )
        assert all(isinstance(result, ConnectError) for result in results), results[:3]
        assert client.stats.token_requests <= 3

    async def test_retry_storm_on_a_fake_clock(self) -> None:
        """With time moving, 100 retried calls make at most 3 token requests (one per window).

        The retries wait at most 0.5 s then 1 s; the windows last at least 0.25, 0.5 and 1 s,
        so a third window outlasts every retry.
        """
        clock = FakeClock()

        def refuse(request: Request) -> Response:
            raise ConnectError("connection refused", method=request.method, url=request.url)

        async with ContractClient(
            credentials=credentials(),
            rate_limits=None,
            transport=MockTransport(refuse),
            clock=clock,
            sleep=clock.sleep,
        ) as client:
            calls = asyncio.gather(
                *(client.users.get(7) for _ in range(100)), return_exceptions=True
            )
            results = await clock.run(calls)
        assert all(isinstance(result, ConnectError) for result in results)
        assert client.stats.retries > 0  # the calls were retried...
        assert client.stats.token_requests <= 3  # ...without a token request each

    @pytest.mark.parametrize(
        "failure",
        [
            pytest.param(ConnectError("refused", method="POST", url="/oauth/token"), id="connect"),
            pytest.param(ReadTimeoutError("slow", method="POST", url="/oauth/token"), id="timeout"),
            pytest.param(json_response(503, {"error": "unavailable"}), id="5xx"),
            pytest.param(Response(status_code=200, content=b"<html>"), id="not-json"),
            pytest.param(token_answer(math.nan), id="nan-lifetime"),
        ],
    )
    async def test_failures_back_off_exponentially(self, failure: Exception | Response) -> None:
        """However it fails, no new token request starts before the window ends; it doubles."""

        def answer() -> Response:
            if isinstance(failure, Exception):
                raise failure
            return failure

        endpoint = TokenEndpoint(answer)
        clock = FakeClock()
        auth = token_auth(endpoint, clock)  # rng 1.0: each window is its full length
        expected = type(failure) if isinstance(failure, Exception) else TokenRequestError
        for window in (0.5, 1.0, 2.0, 4.0):
            with pytest.raises(expected):
                await auth.token()
            requests = len(endpoint.requests)
            for _ in range(10):  # the same error at once, no request
                with pytest.raises(expected):
                    await auth.token()
            clock.now += window / 2  # halves: exact in binary, so the edge is exact too
            with pytest.raises(expected):
                await auth.token()
            assert len(endpoint.requests) == requests
            clock.now += window / 2
        assert len(endpoint.requests) == 4

    async def test_backoff_is_capped_and_success_resets_it(self) -> None:
        """The window stops growing at BACKOFF_MAX, and a success closes it."""
        failing = True

        def answer() -> Response:
            return json_response(503, {}) if failing else token_answer(3600)

        endpoint = TokenEndpoint(answer)
        clock = FakeClock()
        auth = token_auth(endpoint, clock)
        for attempt in range(1, 21):  # 20 failures in a row, each after the longest window
            with pytest.raises(TokenRequestError):
                await auth.token()
            assert len(endpoint.requests) == attempt
            clock.now += 30.0  # the documented cap (a literal: the test checks the constant)
        failing = False
        assert await auth.token() == ACCESS_TOKEN
        clock.now += 3600  # expired
        failing = True
        with pytest.raises(TokenRequestError):
            await auth.token()
        clock.now += TokenAuth.BACKOFF_INITIAL  # back to the first, shortest window
        with pytest.raises(TokenRequestError):
            await auth.token()
        assert len(endpoint.requests) == 23

    async def test_failed_refresh_backs_off_while_the_token_is_valid(self) -> None:
        """A refresh that fails before expiry keeps the current token and is not repeated."""
        failing = False

        def answer() -> Response:
            return json_response(500, {}) if failing else token_answer(3600)

        endpoint = TokenEndpoint(answer)
        clock = FakeClock()
        auth = token_auth(endpoint, clock)
        assert await auth.token() == ACCESS_TOKEN
        clock.now += 3500  # in the refresh window, not expired
        failing = True
        for _ in range(10):
            assert await auth.token() == ACCESS_TOKEN
        assert len(endpoint.requests) == 2

    async def test_concurrent_callers_share_one_failed_request(self) -> None:
        """Callers waiting on a fetch that fails all get its error; one request in all."""
        gate = asyncio.Event()

        async def send(request: Request) -> Response:
            await gate.wait()
            raise ConnectError("refused", method="POST", url="/oauth/token")

        clock = FakeClock()
        auth = TokenAuth(credentials(), Environment.SANDBOX, send, clock=clock)
        callers = [asyncio.ensure_future(auth.token()) for _ in range(50)]
        await asyncio.sleep(0)
        gate.set()
        results = await asyncio.gather(*callers, return_exceptions=True)
        late = await asyncio.gather(auth.token(), return_exceptions=True)
        assert all(isinstance(r, ConnectError) for r in [*results, *late])
        assert auth.requests == 1


class TestTokenLifetime:
    @pytest.mark.parametrize(
        ("expires_in", "reason"),
        [
            (math.nan, "not finite"),
            (math.inf, "not finite"),
            (-math.inf, "not finite"),
            (-5, "not positive"),
            (0, "not positive"),
            ("3600", "not a number"),
            (True, "not a number"),
            (None, "not a number"),
        ],
    )
    async def test_unusable_expires_in_is_a_token_error(self, expires_in: Any, reason: str) -> None:
        """NaN, infinite, negative, zero or non-number expires_in: a TokenRequestError."""
        endpoint = TokenEndpoint(lambda: token_answer(expires_in))
        auth = token_auth(endpoint, FakeClock())
        with pytest.raises(TokenRequestError) as caught:
            await auth.token()
        error = caught.value
        assert f"expires_in is {reason}" in str(error)
        for text in (str(error), repr(error), error.body):
            assert SECRET not in text and ACCESS_TOKEN not in text

    @pytest.mark.parametrize("expires_in", [1e300, 10**400, 400 * 86_400, MAX_TOKEN_LIFETIME + 1])
    async def test_absurd_lifetime_is_cut_to_the_maximum(self, expires_in: float) -> None:
        """A lifetime over a day is used as a day: cached, then refreshed, not kept for ever."""
        endpoint = TokenEndpoint(lambda: token_answer(expires_in))
        clock = FakeClock()
        auth = token_auth(endpoint, clock)
        assert await auth.token() == ACCESS_TOKEN
        clock.now += MAX_TOKEN_LIFETIME - TokenAuth.REFRESH_MARGIN - TokenAuth.REFRESH_JITTER - 1
        assert await auth.token() == ACCESS_TOKEN
        assert len(endpoint.requests) == 1  # cached until near the day's end
        clock.now += TokenAuth.REFRESH_MARGIN + TokenAuth.REFRESH_JITTER + 2  # past it
        assert await auth.token() == ACCESS_TOKEN
        assert len(endpoint.requests) == 2

    async def test_short_lifetime_is_cached(self) -> None:
        """A small positive lifetime is cached for its length, not fetched per call."""
        endpoint = TokenEndpoint(lambda: token_answer(60))
        clock = FakeClock()
        auth = token_auth(endpoint, clock)
        for _ in range(10):
            assert await auth.token() == ACCESS_TOKEN
        assert len(endpoint.requests) == 1


class TestTokenExchangeShown:
    async def test_hooks_and_logs_never_see_the_tokens(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Response hooks and DEBUG logs see the token answer with its tokens redacted."""
        caplog.set_level(logging.DEBUG)
        service = FakeService()
        # This test's own tokens: none another test's client may have registered for scrubbing.
        access, refresh, identity = (
            f"{kind}-{secrets.token_hex(8)}" for kind in ("at", "rt", "it")
        )

        def handler(request: Request) -> Response:
            if request.path == "/oauth/token":
                return json_response(
                    200,
                    {
                        "access_token": access,
                        "refresh_token": refresh,
                        "id_token": identity,
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "scope": "contracts",
                        "note": f"issued {access}",  # an echo in another field
                    },
                )
            return service(request)

        shown: list[str] = []

        def on_response(response: Response) -> None:
            shown.extend([repr(response), response.text, repr(response.content)])
            with contextlib.suppress(ValueError):
                shown.append(repr(response.json()))

        def on_request(request: Request) -> None:
            shown.extend([repr(request), repr(request.content)])

        transport = MockTransport(handler)
        async with ContractClient(
            credentials=credentials(),
            rate_limits=None,
            transport=transport,
            event_hooks={"response": [on_response], "request": [on_request]},
        ) as client:
            assert (await client.users.get(7)).id == 7
        # TokenAuth read the real answer: the API call carried the real token.
        assert transport.requests[1].headers["Authorization"] == f"Bearer {access}"
        assert any('"scope": "contracts"' in text for text in shown)  # the rest is shown
        logged = "\n".join(f"{r.getMessage()} {r.args}" for r in caplog.records)
        for secret in (access, refresh, identity, SECRET):
            for text in [*shown, logged]:
                assert secret not in text

    async def test_token_error_body_hides_the_token(self) -> None:
        """A refused token answer's error body does not carry the token it held."""
        access = f"at-{secrets.token_hex(8)}"  # registered by no other test's client
        answer = json_response(200, {"access_token": access, "token_type": "mac"})
        auth = token_auth(TokenEndpoint(lambda: answer), FakeClock())
        with pytest.raises(TokenRequestError) as caught:
            await auth.token()
        assert "token_type" in str(caught.value)
        assert access not in caught.value.body
        assert "[redacted]" in caught.value.body

    async def _token_failure(
        self, answer: Response, hooked: list[str] | None = None
    ) -> TokenRequestError:
        """The error of a call whose token answer is ``answer``; hooks add what they see."""

        def handler(request: Request) -> Response:
            return answer if request.path == "/oauth/token" else json_response(200, {"id": 7})

        def hook(response: Response) -> None:
            if hooked is not None:
                hooked.extend([repr(response), response.text, repr(response.headers.pairs())])

        async with mock_client(
            handler, credentials=credentials(), event_hooks={"response": [hook]}
        ) as client:
            with pytest.raises(TokenRequestError) as caught:
                await client.users.get(7)
        return caught.value

    @staticmethod
    def _shown(error: TokenRequestError) -> list[str]:
        """The error as anything may show it: its chain, body and headers included."""
        return [text for _, text in chain_shown(error)] + [error.body, repr(error.headers)]

    async def test_a_token_a_header_echoes_is_hidden_from_hooks(self) -> None:
        """The answer's own tokens are registered before the hooks see its headers."""
        access, refresh = f"at-{secrets.token_hex(8)}", f"rt-{secrets.token_hex(8)}"
        answer = json_response(
            200,
            {"access_token": access, "refresh_token": refresh, "expires_in": 3600},
            headers={"X-Debug-Token": access, "X-Debug-Refresh": f"kept {refresh}"},
        )
        hooked: list[str] = []

        def handler(request: Request) -> Response:
            return answer if request.path == "/oauth/token" else json_response(200, {"id": 7})

        def hook(response: Response) -> None:
            hooked.extend([repr(response), response.text, repr(response.headers.pairs())])

        async with mock_client(
            handler, credentials=credentials(), event_hooks={"response": [hook]}
        ) as client:
            assert (await client.users.get(7)).id == 7
        assert any("X-Debug-Token" in text for text in hooked)  # the header is shown
        for text in hooked:
            assert access not in text and refresh not in text, text

    async def test_a_refresh_token_echoed_in_the_reason_is_hidden(self) -> None:
        """A refused answer's error_description quoting its refresh token: not in the message."""
        refresh = f"rt-{secrets.token_hex(8)}"
        answer = json_response(
            500,
            {
                "error": "server_error",
                "error_description": f"could not persist refresh_token {refresh}",
                "refresh_token": refresh,
            },
        )
        hooked: list[str] = []
        error = await self._token_failure(answer, hooked)
        assert "could not persist refresh_token" in str(error)  # the reason, as sent
        for text in [*self._shown(error), *hooked]:
            assert refresh not in text, text

    async def test_a_token_type_or_header_that_echoes_the_token_is_hidden(self) -> None:
        """token_type "<the token>x", and the token in a header: neither shows it."""
        access = f"at-{secrets.token_hex(8)}"
        answer = json_response(
            200,
            {"access_token": access, "token_type": f"{access}x", "expires_in": 3600},
            headers={"X-Debug-Token": access},
        )
        hooked: list[str] = []
        error = await self._token_failure(answer, hooked)
        assert "unsupported token_type" in str(error)
        assert "X-Debug-Token" in error.headers
        for text in [*self._shown(error), *hooked]:
            assert access not in text, text

    async def test_a_token_answer_that_is_not_json_is_not_kept_in_the_chain(self) -> None:
        """An answer that is not JSON, echoing the secret: no chained error holds its text."""
        body = f"not json, for {SECRET}: access_token=at-{secrets.token_hex(8)}"
        error = await self._token_failure(Response(status_code=200, content=body.encode()))
        assert "is not JSON" in str(error)
        assert error.__context__ is None and error.__cause__ is None
        for text in self._shown(error):
            assert SECRET not in text and "access_token=at-" not in text, text
