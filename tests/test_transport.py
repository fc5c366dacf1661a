"""The aiohttp transport, under aioresponses: request mapping and error translation only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aioresponses import CallbackResult, aioresponses

import tests._aioresponses_compat  # noqa: F401  # aiohttp 3.14 support, see the module
from contractsdk import (
    AiohttpTransport,
    CertificateVerificationError,
    ConnectError,
    ConnectTimeoutError,
    ContractClient,
    NotFoundError,
    ReadError,
    ReadTimeoutError,
    Request,
    Response,
    Retries,
    TransportError,
)
from contractsdk._transport import headers_sender
from contractsdk.testing import MockTransport
from tests._fakeservice import load_terms
from tests.conftest import API_KEY

BASE = "https://sandbox.legislate.tech/v1"


async def test_request_is_mapped_and_response_read() -> None:
    """Method, URL, headers and body reach aiohttp; status, headers and body come back."""
    seen: dict[str, object] = {}

    def callback(url: object, **kwargs: object) -> CallbackResult:
        seen.update(kwargs)
        return CallbackResult(status=201, body=b'{"ok": true}', headers={"X-Request-Id": "r1"})

    transport = AiohttpTransport()
    try:
        with aioresponses() as mocked:
            mocked.post(f"{BASE}/users/1/teams", callback=callback)
            response = await transport.handle_async_request(
                Request(
                    method="POST",
                    url=f"{BASE}/users/1/teams",
                    headers={"Content-Type": "application/json"},
                    content=b'{"name":"a"}',
                )
            )
    finally:
        await transport.aclose()
    assert response.status_code == 201 and response.json() == {"ok": True}
    assert response.headers["x-request-id"] == "r1"
    assert seen["data"] == b'{"name":"a"}'
    # The session asks only for the encodings the transport inflates itself.
    assert dict(seen["headers"]) == {  # type: ignore[call-overload]
        "Content-Type": "application/json",
        "Accept-Encoding": "gzip, deflate",
    }
    assert seen["allow_redirects"] is False


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (
            aiohttp.ClientConnectorError(
                aiohttp.client_reqrep.ConnectionKey("h", 443, True, True, None, None, None),
                OSError(111, "refused"),
            ),
            ConnectError,
        ),
        (
            aiohttp.ClientConnectorCertificateError(
                aiohttp.client_reqrep.ConnectionKey("h", 443, True, True, None, None, None),
                ssl.SSLCertVerificationError(1, "certificate verify failed"),
            ),
            CertificateVerificationError,
        ),
        (aiohttp.ConnectionTimeoutError(), ConnectTimeoutError),
        (aiohttp.SocketTimeoutError(), ReadTimeoutError),
        (asyncio.TimeoutError(), ReadTimeoutError),
        (aiohttp.ServerDisconnectedError(), ReadError),
        (aiohttp.ClientPayloadError("truncated"), ReadError),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), ReadError),
        (aiohttp.ClientError("unexpected"), ReadError),
    ],
)
async def test_aiohttp_errors_are_translated(
    raised: BaseException, expected: type[TransportError]
) -> None:
    """Each aiohttp failure becomes the SDK error that says whether the request was sent."""
    transport = AiohttpTransport()
    try:
        with aioresponses() as mocked:
            mocked.get(f"{BASE}/users/1", exception=raised)
            with pytest.raises(expected) as caught:
                await transport.handle_async_request(Request(method="GET", url=f"{BASE}/users/1"))
    finally:
        await transport.aclose()
    error = caught.value
    assert type(error) is expected
    assert error.method == "GET" and error.url == "/v1/users/1"  # the path, as APIError's
    assert isinstance(error.__cause__, type(raised))  # chained, but not leaked as the type
    if isinstance(error, ConnectError | ConnectTimeoutError):
        # Where it tried: a mistyped base URL (or none set) said only "the service".
        assert f"{BASE.split('//')[1].split('/')[0]}:" in str(error)


async def test_a_connection_error_names_the_host_and_port_it_tried() -> None:
    """Connecting nowhere names the host and port, the default port when none is given."""
    for base, shown in [
        ("http://127.0.0.1:9", "could not connect to 127.0.0.1:9: "),
        ("http://[::1]:9", "could not connect to [::1]:9: "),
    ]:
        transport = AiohttpTransport()
        try:
            with pytest.raises(ConnectError) as caught:
                await transport.handle_async_request(Request(method="GET", url=f"{base}/v1/x"))
        finally:
            await transport.aclose()
        assert str(caught.value).startswith(shown), str(caught.value)


async def test_client_over_aioresponses_with_sample_terms() -> None:
    """The client reads sample-shaped terms and maps a 404 through the real transport."""
    with aioresponses() as mocked:
        mocked.get(
            f"{BASE}/templates/149/terms",
            body=json.dumps(load_terms()),
            content_type="application/json",
        )
        mocked.get(
            f"{BASE}/users/9",
            status=404,
            content_type="application/json",
            body=b'{"status":404,"error":"Not Found","message":"User with id 9 not found"}',
        )
        async with ContractClient(api_key=API_KEY) as client:
            terms = await client.terms.list(149)
            with pytest.raises(NotFoundError, match="User with id 9 not found"):
                await client.users.get(9)
    assert terms.find("contract_name") is not None
    call = mocked.requests[("GET", aiohttp.client.URL(f"{BASE}/templates/149/terms"))][0]  # type: ignore[attr-defined]
    assert dict(call.kwargs["headers"])["Authorization"] == f"Bearer {API_KEY}"


async def test_credential_is_sent_but_never_on_the_request_hooks_and_errors_see() -> None:
    """Over aiohttp the client adds its credential to what is sent, not to the request.

    The requests hooks see and the responses' requests go without the Authorization header,
    and the error shows no credential; aiohttp gets it on every request, a retried one too.
    """
    seen: list[Request] = []
    answers: list[Response] = []

    def on_response(response: Response) -> None:
        answers.append(response)

    with aioresponses() as mocked:
        mocked.get(f"{BASE}/users/1", payload={"id": 1})
        mocked.get(f"{BASE}/users/2", status=503, payload={})
        mocked.get(f"{BASE}/users/2", status=404, payload={"message": "no user 2"})
        async with ContractClient(
            api_key=API_KEY,
            retries=Retries(wait_initial=0.0),
            event_hooks={"request": [seen.append], "response": [on_response]},
        ) as client:
            await client.users.get(1)
            with pytest.raises(NotFoundError) as caught:
                await client.users.get(2)
    sent = [dict(call.kwargs["headers"]) for calls in mocked.requests.values() for call in calls]
    assert len(sent) == 3
    assert all(headers["Authorization"] == f"Bearer {API_KEY}" for headers in sent)
    requests = [*seen, *(answer.request for answer in answers)]
    assert len(requests) == 6
    for request in requests:
        assert request is not None and "authorization" not in request.headers
    assert API_KEY not in repr(caught.value) and API_KEY not in str(caught.value)


def test_only_the_plain_aiohttp_transport_sends_with_other_headers() -> None:
    """The client hands its credential as headers to AiohttpTransport, a copy to others.

    A subclass that changed how a request is handled gets the request itself, credential
    included, as any other transport does.
    """

    class Logging(AiohttpTransport):
        async def handle_async_request(self, request: Request) -> Response:
            return await super().handle_async_request(request)

    plain = AiohttpTransport()
    assert headers_sender(plain) == plain._send_with_headers
    assert headers_sender(Logging()) is None
    assert headers_sender(MockTransport(lambda request: Response(status_code=204))) is None


async def test_a_transport_subclass_sees_the_credential() -> None:
    """A subclass overriding handle_async_request is handed requests with the credential."""
    handled: list[Request] = []

    class Recording(AiohttpTransport):
        async def handle_async_request(self, request: Request) -> Response:
            handled.append(request)
            return await super().handle_async_request(request)

    with aioresponses() as mocked:
        mocked.get(f"{BASE}/users/1", payload={"id": 1})
        async with ContractClient(api_key=API_KEY, transport=Recording()) as client:
            user = await client.users.get(1)
    assert user.id == 1
    assert [request.headers["authorization"] for request in handled] == [f"Bearer {API_KEY}"]


async def test_session_is_closed_with_the_client() -> None:
    """Closing the client closes the aiohttp session it made (no unclosed-session warning)."""
    with aioresponses() as mocked:
        mocked.get(f"{BASE}/users/1", payload={"id": 1})
        client = ContractClient(api_key=API_KEY)
        async with client:
            await client.users.get(1)
            session = client._transport._session  # type: ignore[attr-defined]
        assert session is not None and session.closed


async def test_whole_flow_over_aioresponses() -> None:
    """The whole flow runs through the real aiohttp transport, answered by the fake service."""
    import re

    from contractsdk import Request as SDKRequest
    from tests._fakeservice import FakeService

    service = FakeService()

    def answering(method: str) -> Any:
        def answer(url: Any, **kwargs: Any) -> CallbackResult:
            data = kwargs.get("data")
            request = SDKRequest(
                method=method,
                url=str(url),
                headers=kwargs.get("headers") or {},
                content=data if isinstance(data, bytes) else None,
            )
            response = service(request)
            return CallbackResult(
                status=response.status_code, body=response.content, headers=dict(response.headers)
            )

        return answer

    pattern = re.compile(r"https://sandbox\.legislate\.tech/v1/.*")
    with aioresponses() as mocked:
        for method in ("GET", "POST", "PATCH", "DELETE"):
            mocked.add(pattern, method=method, callback=answering(method), repeat=True)
        async with ContractClient(api_key=API_KEY, rate_limits=None) as client:
            user = await client.users.get(FakeService.USER_ID)
            team = await client.teams.create(user.id, name="Over aiohttp")
            kind = (await client.contract_types.list(team.id))[0]
            template = await client.templates.latest(team.id, kind.id)
            terms = await client.terms.list(template.id)
            contract = await client.contracts.create(
                team.id,
                template_id=template.id,
                created_by=user.id,
                values={
                    "contract_name": "x",
                    "contract_rentFrequency": "month",
                    "contract_breakClause": "breakClauseYes",
                    "contract_breakClauseStart": "3 months",
                },
            )
            fetched = await client.contracts.get(contract.id or 0)
            await client.contracts.delete(contract.id or 0)
    assert terms.find("contract_breakClauseStart") is not None
    assert fetched.values["contract_breakClauseStart"] == "3 months"
    assert service.contracts == {}


async def test_a_server_that_trickles_its_answer_times_out() -> None:
    """``timeout`` bounds the whole answer: a byte every 20 ms never ends the wait alone.

    A read timeout per socket read would be reset by every byte; a hostile or broken
    server could hold the call for ever.
    """

    async def trickle(writer: asyncio.StreamWriter, stop: asyncio.Event) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(500):  # 10 s at most
            if stop.is_set():
                break
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.02)

    async with _server(trickle) as url:
        transport = AiohttpTransport()
        request = Request(method="GET", url=f"{url}/v1/x", timeout=0.1)
        try:
            with pytest.raises(ReadTimeoutError):
                await asyncio.wait_for(transport.handle_async_request(request), 5)
        finally:
            await transport.aclose()


Answer = Callable[[asyncio.StreamWriter, asyncio.Event], Awaitable[None]]


@contextlib.asynccontextmanager
async def _server(answer: Answer) -> AsyncIterator[str]:
    """A server that reads each request head, then ``answer(writer, stop)``; yields its URL."""
    stop = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await reader.readuntil(b"\r\n\r\n")
            await answer(writer, stop)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        server.close()
        await asyncio.wait_for(asyncio.gather(*handlers), 5)
        await server.wait_closed()


def _silent_server() -> contextlib.AbstractAsyncContextManager[str]:
    """A server that reads each request and never answers; yields its base URL."""

    async def silent(writer: asyncio.StreamWriter, stop: asyncio.Event) -> None:
        await stop.wait()

    return _server(silent)


async def test_a_read_that_times_out_does_not_say_it_may_have_been_processed() -> None:
    """A hung server: the GET's error counts its attempts, and claims nothing was changed.

    It ended "…; the request may have been processed", which only a write can be.
    """
    async with _silent_server() as url:
        fast = Retries(attempts=3, wait_initial=0.001, wait_max=0.001)
        async with ContractClient(
            api_key=API_KEY, base_url=url, timeout=0.05, retries=fast, rate_limits=None
        ) as client:
            with pytest.raises(ReadTimeoutError) as caught:
                await asyncio.wait_for(client.users.get(7917), 5)
    assert str(caught.value) == (
        "timed out waiting for the service's answer (after 3 attempts) (GET /v1/users/7917)"
    )
    assert not caught.value.outcome_unknown


async def test_each_attempt_times_out_at_its_own_deadline() -> None:
    """Attempts of different timeouts in flight together each end at their own deadline.

    The transport keeps every attempt's deadline on one timer: a shorter timeout started
    later still ends first, and an attempt without a timeout is not ended by the others'.
    """
    async with _silent_server() as url:
        transport = AiohttpTransport()
        loop = asyncio.get_running_loop()
        started = loop.time()

        async def timed(timeout: float | None, delay: float = 0.0) -> float:
            await asyncio.sleep(delay)
            request = Request(method="GET", url=f"{url}/v1/x", timeout=timeout)
            with pytest.raises(ReadTimeoutError):
                await transport.handle_async_request(request)
            return loop.time() - started

        untimed = asyncio.create_task(
            transport.handle_async_request(Request(method="GET", url=f"{url}/v1/x"))
        )
        try:
            long, short = await asyncio.wait_for(
                asyncio.gather(timed(0.6), timed(0.1, delay=0.1)), 5
            )
            # Timers may fire within the clock's resolution of their time: a little slack.
            assert 0.19 <= short < long
            assert 0.59 <= long < 2.0
            assert not untimed.done()
            # The timer goes on for attempts made after the others timed out.
            assert await asyncio.wait_for(timed(0.05), 5) > long
        finally:
            untimed.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await untimed
            await transport.aclose()


async def test_a_cancelled_attempt_is_cancelled_not_timed_out() -> None:
    """Cancelling a call in flight raises CancelledError, whatever its timeout."""
    async with _silent_server() as url:
        transport = AiohttpTransport()
        request = Request(method="GET", url=f"{url}/v1/x", timeout=5.0)
        task = asyncio.create_task(transport.handle_async_request(request))
        try:
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await transport.aclose()


async def test_a_timeout_leaves_the_task_as_it_was() -> None:
    """After a timeout the task goes on: no cancellation is left pending or counted.

    An enclosing ``asyncio.timeout`` (Python 3.11+) would otherwise see a cancellation that
    is not its own, and a later await would be cancelled.
    """
    async with _silent_server() as url:
        transport = AiohttpTransport()
        task = asyncio.current_task()
        assert task is not None
        request = Request(method="GET", url=f"{url}/v1/x", timeout=0.05)
        try:
            for _ in range(2):
                with pytest.raises(ReadTimeoutError):
                    await transport.handle_async_request(request)
                await asyncio.sleep(0.01)  # no cancellation left to land here
                if hasattr(task, "cancelling"):  # Python 3.11+, or a backport's task class
                    assert task.cancelling() == 0
        finally:
            await transport.aclose()


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no CA signed, and its key (made with openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    files = ["-keyout", str(key), "-out", str(cert), "-days", "2"]
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        ["openssl", "req", "-x509", *new_key, *files, *subject],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@contextlib.asynccontextmanager
async def _tls_server(cert: Path, key: Path) -> AsyncIterator[tuple[str, dict[str, int]]]:
    """An aiohttp server on 127.0.0.1 over TLS; yields its URL and its counts.

    ``connections`` counts the TCP connections accepted (a TLS handshake starts on each),
    ``requests`` the HTTP requests that arrived.
    """
    counts = {"connections": 0, "requests": 0}

    async def answer(request: web.BaseRequest) -> web.Response:
        counts["requests"] += 1
        return web.json_response({"id": 7917})

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    handler = web.Server(answer)

    def accepted() -> asyncio.BaseProtocol:
        counts["connections"] += 1
        return handler()

    loop = asyncio.get_running_loop()
    server = await loop.create_server(accepted, "127.0.0.1", 0, ssl=context)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}", counts
    finally:
        server.close()
        await handler.shutdown(1)
        await server.wait_closed()


async def test_a_certificate_that_cannot_be_verified_is_said_and_not_retried(
    self_signed: tuple[Path, Path],
) -> None:
    """One attempt, and a message that says the certificate failed, and how to trust a CA.

    It was retried as a connection failure: "could not connect to … [SSL:
    CERTIFICATE_VERIFY_FAILED] … (after 3 attempts)".
    """
    async with _tls_server(*self_signed) as (url, counts):
        retries = Retries(attempts=3, wait_initial=0.001, wait_max=0.001)
        async with ContractClient(
            api_key=API_KEY, base_url=url, retries=retries, rate_limits=None
        ) as client:
            with pytest.raises(CertificateVerificationError) as caught:
                await asyncio.wait_for(client.users.get(7917), 10)
    error = caught.value
    assert counts == {"connections": 1, "requests": 0}  # one handshake, nothing sent
    assert error.attempts == 1 and not error.outcome_unknown
    assert isinstance(error, ConnectError)  # not sent, as any ConnectError
    port = url.rsplit(":", 1)[1]
    assert str(error) == (
        f"the TLS certificate of 127.0.0.1:{port} could not be verified: self-signed "
        "certificate. If the service's certificate comes from a private CA, set SSL_CERT_FILE "
        "to a PEM file of that CA's certificates before the program starts "
        "(GET /v1/users/7917)"
    )


_TRUSTING = """
import asyncio, sys
from contractsdk import AiohttpTransport, Request

async def main() -> int:
    transport = AiohttpTransport()
    try:
        request = Request(method="GET", url=sys.argv[1] + "/v1/users/7917")
        response = await transport.handle_async_request(request)
    finally:
        await transport.aclose()
    return 0 if response.status_code == 200 else 1

sys.exit(asyncio.run(main()))
"""


async def test_ssl_cert_file_trusts_the_ca_the_message_names(
    self_signed: tuple[Path, Path],
) -> None:
    """The advice works: with SSL_CERT_FILE naming the certificate, the request goes through."""
    cert, _ = self_signed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SSL_CERT", "CONTRACTSDK_"))}
    async with _tls_server(*self_signed) as (url, counts):
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _TRUSTING,
            url,
            env={**env, "SSL_CERT_FILE": str(cert)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, (out + err).decode()
    assert counts["requests"] == 1
