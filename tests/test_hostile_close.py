"""aclose() while other tasks' calls are under way: each ends typed, nothing is sent after it.

A call that waited in the rate limiter was sent after aclose() through a new aiohttp
session that nobody closed; a call that waited for the OAuth token got a bare
CancelledError although its own task was never cancelled. Each now gets the closed
client's ConfigurationError; a caller whose own task is cancelled still gets its
CancelledError; a request under way gets a ReadError that says the client closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from contractsdk import (
    AiohttpTransport,
    ClientCredentials,
    ConfigurationError,
    ContractClient,
    RateLimits,
    ReadError,
    Request,
    Response,
    User,
)
from contractsdk.testing import json_response
from tests._hostilekit import mock_client, serve

CLOSED = "this client is closed; make a new one"


@contextlib.asynccontextmanager
async def _server(seen: list[str]) -> AsyncIterator[str]:
    """A service on 127.0.0.1 that answers every GET with a user, noting each path."""

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.json_response({"id": 1})

    async with serve(handler) as url:
        yield url


async def _until(condition: object, what: str) -> None:
    """Let the loop run until ``condition()`` holds (no clock: a bounded number of turns)."""
    for _ in range(10_000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


async def test_a_call_waiting_in_the_limiter_is_not_sent_after_aclose() -> None:
    seen: list[str] = []
    async with _server(seen) as url:
        client = ContractClient(
            api_key="Kq7-key-0123456789", base_url=url, rate_limits=RateLimits(read=2, write=2)
        )
        try:
            await client.users.get(1)  # the bucket's one slot: the next call waits
            waiting = asyncio.ensure_future(client.users.get(2))
            await _until(lambda: client.rate_limits.read.waiting == 1, "the call waits")  # type: ignore[union-attr]
        finally:
            await client.aclose()
        with pytest.raises(ConfigurationError, match=CLOSED):
            await waiting
        transport = client._transport
        assert isinstance(transport, AiohttpTransport)
        assert transport._session is None  # not reopened
    assert seen == ["/v1/users/1"]


async def test_a_closed_transport_refuses_and_never_reopens() -> None:
    """Whoever calls it after aclose(): nothing is sent, no session is made."""
    seen: list[str] = []
    async with _server(seen) as url:
        transport = AiohttpTransport()
        await transport.handle_async_request(Request(method="GET", url=f"{url}/v1/users/1"))
        await transport.aclose()
        with pytest.raises(ConfigurationError, match=CLOSED):
            await transport.handle_async_request(Request(method="GET", url=f"{url}/v1/users/2"))
        assert transport._session is None
        # A session the caller owns stays theirs (open), but the transport sends no more.
        async with aiohttp.ClientSession() as session:
            borrowed = AiohttpTransport(session=session)
            await borrowed.aclose()
            with pytest.raises(ConfigurationError, match=CLOSED):
                await borrowed.handle_async_request(Request(method="GET", url=f"{url}/v1/users/3"))
            assert not session.closed
    assert seen == ["/v1/users/1"]


def _token_client(gate: asyncio.Event, asked: list[str]) -> ContractClient:
    """A client whose token endpoint answers only once ``gate`` is set."""

    async def handler(request: Request) -> Response:
        asked.append(request.path)
        if request.path == "/oauth/token":
            await gate.wait()
            return json_response(200, {"access_token": "Kq7-token-0123456789"})
        return json_response(200, {"id": 1})

    credentials = ClientCredentials(client_id="cid", client_secret="Kq7-secret-0123456789")
    return mock_client(handler, credentials=credentials)


async def test_a_call_waiting_for_the_token_gets_the_closed_client_s_error() -> None:
    gate, asked = asyncio.Event(), list[str]()
    client = _token_client(gate, asked)
    waiting = [asyncio.ensure_future(client.users.get(n)) for n in (1, 2)]
    await _until(lambda: asked == ["/oauth/token"], "the token is asked for")
    await client.aclose()
    for call in waiting:
        with pytest.raises(ConfigurationError, match=CLOSED):
            await call
        assert not call.cancelled()
    assert asked == ["/oauth/token"]  # no call went on without a token


async def test_a_caller_cancelled_itself_still_gets_its_cancellation() -> None:
    """Its own task cancelled, as the client closes: CancelledError, not the closed error."""
    gate, asked = asyncio.Event(), list[str]()
    client = _token_client(gate, asked)
    alone = asyncio.ensure_future(client.users.get(1))
    both = asyncio.ensure_future(client.users.get(2))
    others = asyncio.ensure_future(client.users.get(3))
    await _until(lambda: asked == ["/oauth/token"], "the token is asked for")
    alone.cancel()  # cancelled, the client still open: the others go on
    with pytest.raises(asyncio.CancelledError):
        await alone
    assert not others.done()
    both.cancel()  # cancelled, and the client closes in the same turn
    await client.aclose()
    with pytest.raises(asyncio.CancelledError):
        await both
    with pytest.raises(ConfigurationError, match=CLOSED):
        await others


async def test_the_token_answered_in_time_is_used() -> None:
    """The shared token request is unchanged when nothing closes: every waiter gets it."""
    gate, asked = asyncio.Event(), list[str]()
    client = _token_client(gate, asked)
    async with client:
        calls = [asyncio.ensure_future(client.users.get(n)) for n in (1, 2)]
        await _until(lambda: asked == ["/oauth/token"], "the token is asked for")
        gate.set()
        assert all(isinstance(user, User) for user in await asyncio.gather(*calls))


@pytest.mark.parametrize("kind", ["get", "delete"])
async def test_a_request_under_way_when_the_client_closes_says_so(kind: str) -> None:
    """Its connection closed under it: a ReadError that says why (a DELETE may have been done).

    Not retried, though the method is idempotent: the retry found the client closed, and a
    DELETE the service had carried out ended as ConfigurationError, "nothing was sent".
    """
    arrived, done, handled = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            arrived.set()
            await done.wait()
        finally:  # closed on this loop, not left to the garbage collector after it
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            handled.set()

    server = await asyncio.start_server(never_answers, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        client = ContractClient(api_key="Kq7-key-0123456789", base_url=url)
        call = asyncio.ensure_future(
            client.users.get(1) if kind == "get" else client.contracts.delete(5)
        )
        await arrived.wait()
        await client.aclose()
        with pytest.raises(ReadError, match="closed while the request was under way") as caught:
            await call
        assert caught.value.outcome_unknown is (kind == "delete")  # a GET changes nothing
        assert caught.value.client_closed
        assert caught.value.attempts == 1
    finally:
        done.set()
        await handled.wait()
        server.close()
        await server.wait_closed()


async def _forever(seconds: float) -> None:
    """A sleep that never ends: only aclose() can end a wait here."""
    await asyncio.Event().wait()


async def test_calls_queued_in_the_limiter_fail_at_once_on_aclose() -> None:
    """Twenty calls waiting their turn all end with the closed client's error, none sent.

    They used to end only when their turn came, at the paced rate (the last 9.4 s after
    aclose() at 5/s), and through Redis each first took a slot of the shared bucket: a
    client closing with 100 calls queued held another at half of a shared rate for 19 s.
    """
    sent: list[str] = []

    def handler(request: Request) -> Response:
        sent.append(request.path)
        return json_response(200, {"id": 1})

    client = mock_client(
        handler, api_key="Kq7-key-0123456789", rate_limits=RateLimits(read=1), sleep=_forever
    )
    await client.users.get(1)  # the bucket's one slot: the others wait, for ever here
    waiting = [asyncio.ensure_future(client.users.get(2 + n)) for n in range(20)]
    await _until(lambda: client.rate_limits.read.waiting == 20, "the calls wait")  # type: ignore[union-attr]
    await client.aclose()
    await _until(lambda: all(task.done() for task in waiting), "every waiting call ends")
    for task in waiting:
        with pytest.raises(ConfigurationError, match=CLOSED):
            task.result()
    assert sent == ["/v1/users/1"]


async def test_a_retry_waiting_out_its_backoff_ends_on_aclose() -> None:
    """A call waiting to retry (here a 503's backoff) ends with the closed client's error."""
    from contractsdk import Retries

    tried: list[str] = []

    def handler(request: Request) -> Response:
        tried.append(request.path)
        return json_response(503, {"message": "busy"})

    client = mock_client(
        handler, api_key="Kq7-key-0123456789", retries=Retries(attempts=3), sleep=_forever
    )
    call = asyncio.ensure_future(client.users.get(1))
    await _until(lambda: len(client._backoffs) == 1, "the call waits to retry")
    await client.aclose()
    await _until(call.done, "the call ends")
    with pytest.raises(ConfigurationError, match=CLOSED):
        call.result()
    assert tried == ["/v1/users/1"]  # the retry was not sent


async def test_a_caller_cancelling_its_call_in_a_backoff_still_gets_its_cancellation() -> None:
    """Cancelled by its own task while it waits to retry: CancelledError, not an error."""
    from contractsdk import Retries

    client = mock_client(
        lambda request: json_response(503, {"message": "busy"}),
        api_key="Kq7-key-0123456789",
        retries=Retries(attempts=3),
        sleep=_forever,
    )
    call = asyncio.ensure_future(client.users.get(1))
    await _until(lambda: len(client._backoffs) == 1, "the call waits to retry")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert not client._backoffs
    await client.aclose()
