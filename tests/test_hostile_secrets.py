"""A server that echoes a credential where the SDK cuts its text gets none of it shown.

Scrubbing finds whole secrets only. The SDK shortens what a server sends (a message to
500 characters, an ``error`` to 100, a title or a line to 200, the body to 2,000, an OAuth
reason to 200 and 300, a ``token_type``), so a server that places the credential across
one of those cuts had all but its last characters shown: each such place is tried here,
and so are the token a 401's replay fetches and aiohttp's parser errors, which quote the
raw bytes a server sent (and chained them, whole, as the error's ``__cause__``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import pickle
import threading
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest

from contractsdk import (
    ClientCredentials,
    ContractClient,
    ContractSDKError,
    ReadError,
    Request,
    Response,
    ResponseValidationError,
    TokenRequestError,
)
from contractsdk._redact import REDACTED, Secrets, scrub_cut
from contractsdk.cli import main
from contractsdk.testing import MockTransport, json_response
from tests._hostilekit import chain_shown, mock_client

API_KEY = "Kq7-api-key-placed-across-a-cut-0123456789"
#: With characters JSON escapes: its escaped form is what a JSON body holds.
QUOTED_KEY = 'Kq7-api"key\\placed-across-a-cut-0123456789'
CLIENT_SECRET = "Kq7-client-secret-across-a-cut-0123456789"
#: The longest start of a secret that may show: a few characters say nothing of it.
SHOWN_AT_MOST = 3


def _shown(text: str, secret: str) -> int:
    """How many characters of the start of ``secret`` show in ``text``."""
    return next((n for n in range(len(secret), 0, -1) if secret[:n] in text), 0)


def _outputs(error: BaseException) -> Iterator[tuple[str, str]]:
    """Everything that shows an error: str, repr, pickle, traceback and attributes."""
    yield "str", str(error)
    yield "repr", repr(error)
    yield "pickle", str(pickle.loads(pickle.dumps(error)))
    yield "pickled bytes", repr(pickle.dumps(error))
    yield "traceback", "".join(traceback.format_exception(error))
    yield from chain_shown(error)  # attributes, and what walks the chain (an error reporter)


def _assert_hidden(error: BaseException, secret: str) -> None:
    for where, text in _outputs(error):
        shown = _shown(text, secret)
        assert shown <= SHOWN_AT_MOST, f"{shown} characters of the secret show in {where}"


def _across(limit: int, secret: str, *, before: int = 0) -> str:
    """Padding, then ``secret`` across the ``limit``-th character (``before`` already used)."""
    return "x" * (limit - before - len(secret) + 2) + secret


def _json(body: dict[str, str]) -> str:
    return json.dumps(body)


def _escaped(secret: str) -> str:
    """``secret`` as a JSON string holds it (quotes and backslashes escaped)."""
    return json.dumps(secret)[1:-1]


_TRACE = '{"message": "m", "trace": "'
#: Each case: status, content type, and the body made of the echoed credential. A message
#: or an error is cut as decoded; a body as sent, with the credential JSON-escaped.
CASES: dict[str, tuple[int, str, Callable[[str], str]]] = {
    "message at 500": (400, "application/json", lambda s: _json({"message": _across(500, s)})),
    "error at 100": (
        409,
        "application/json",
        lambda s: _json({"message": "m", "error": _across(100, s)}),
    ),
    "title at 200": (
        502,
        "text/html",
        lambda s: f"<html><title>{_across(200, s)}</title></html>",
    ),
    "page text at 200": (502, "text/html", lambda s: f"<html><p>{_across(200, s)}</p></html>"),
    "line at 200": (403, "text/plain", lambda s: _across(200, s) + "\nmore"),
    "body at 2000": (500, "text/plain", lambda s: "\n" + _across(2000, s, before=1)),
    "json body at 2000": (
        500,
        "application/json",
        lambda s: _TRACE + _across(2000, _escaped(s), before=len(_TRACE)) + '"}',
    ),
}


@pytest.mark.parametrize("key", [API_KEY, QUOTED_KEY], ids=["plain key", "quoted key"])
@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_key_across_a_cut_shows_in_no_part(case: str, key: str) -> None:
    status, content_type, make = CASES[case]
    sent: list[str] = []

    def handler(request: Request) -> Response:
        bearer = request.headers["Authorization"].removeprefix("Bearer ")
        sent.append(bearer)
        return Response(
            status_code=status,
            headers={"Content-Type": content_type},
            content=make(bearer).encode(),
        )

    async with mock_client(handler, api_key=key) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
    assert sent == [key]
    _assert_hidden(caught.value, key)
    _assert_hidden(caught.value, _escaped(key))  # as a JSON body holds it


@pytest.mark.parametrize(
    "make",
    [
        lambda key: {"id": key, "first_name": "A"},
        lambda key: {"id": [key], "first_name": "A"},
        lambda key: {"id": "x" * 200 + key + "y" * 200, "first_name": "A"},
    ],
    ids=["the key as an id", "in a list", "inside a long text"],
)
async def test_a_key_where_a_value_should_be_shows_in_no_part(make: Any) -> None:
    """A 200 whose id is the echoed key: the error quotes the value, never the key's ends.

    reprlib shortened the value to its first and last characters before any redaction.
    """

    def handler(request: Request) -> Response:
        bearer = request.headers["Authorization"].removeprefix("Bearer ")
        return Response(
            status_code=200,
            headers={"Content-Type": "application/json"},
            content=json.dumps(make(bearer)).encode(),
        )

    async with mock_client(handler, api_key=API_KEY) as client:
        with pytest.raises(ResponseValidationError) as caught:
            await client.users.get(7)
    _assert_hidden(caught.value, API_KEY)
    assert "$.id" in str(caught.value)


def test_scrub_cut_scrubs_whole_then_cuts_without_a_secret_s_start() -> None:
    """The helper itself: whole secrets first, then the cut, then no start of one at the end."""
    # Clients earlier tests left in reference cycles (an error's traceback holds its
    # frames) take their secrets with them: a token "at-…" still registered cut "[reda".
    gc.collect()
    held = Secrets(API_KEY)
    text = "x" * 10 + API_KEY + " and more"
    assert scrub_cut(text, 1000) == "x" * 10 + REDACTED + " and more"
    # Cut inside the secret: scrubbed before the cut, so only "[redacted]" is cut.
    assert scrub_cut(text, 15) == ("x" * 10 + REDACTED)[:15]
    # A text already cut (the start of a longer one) loses a secret's start at its end.
    assert scrub_cut("x" * 10 + API_KEY[:20], 1000, cut=True) == "x" * 10
    assert scrub_cut("x" * 10 + API_KEY[:20], 1000) == "x" * 10 + API_KEY[:20]  # not a cut
    assert scrub_cut("plain text", 5) == "plain"
    del held


async def _token_error(answer: Callable[[dict[str, Any]], Response]) -> ContractSDKError:
    def handler(request: Request) -> Response:
        if request.path == "/oauth/token":
            assert request.content is not None
            return answer(json.loads(request.content))
        return json_response(200, {"id": 7})

    credentials = ClientCredentials(client_id="cid", client_secret=CLIENT_SECRET)
    async with mock_client(handler, credentials=credentials) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
    return caught.value


@pytest.mark.parametrize(
    "case",
    ["description at 200", "reason at 300", "token_type", "body at 2000"],
)
async def test_a_client_secret_across_a_cut_shows_in_no_part(case: str) -> None:
    """The token endpoint echoes the client secret where the SDK cuts its answer."""

    def answer(sent: dict[str, Any]) -> Response:
        secret = sent["client_secret"]
        if case == "description at 200":
            body = {"error": "invalid_client", "error_description": _across(200, secret)}
            return json_response(401, body)
        if case == "reason at 300":
            error = "e" * 150
            body = {"error": error, "error_description": _across(300, secret, before=152)}
            return json_response(401, body)
        if case == "token_type":  # reprlib showed its start and its end
            return json_response(200, {"access_token": "token-123456", "token_type": secret})
        return Response(status_code=400, content=("\n" + _across(2000, secret, before=1)).encode())

    error = await _token_error(answer)
    assert isinstance(error, TokenRequestError)
    _assert_hidden(error, CLIENT_SECRET)
    _assert_hidden(error, CLIENT_SECRET[::-1][:12][::-1])  # nor its end (reprlib's "...tail")


async def test_the_token_a_401_replay_fetches_is_never_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first token is refused; the replay's answer echoes the new one."""
    tokens = ["token-first-aaaaaaaaaa", "token-second-bbbbbbbbb"]
    issued: list[str] = []
    seen: list[str] = []

    def handler(request: Request) -> Response:
        if request.path == "/oauth/token":
            issued.append(tokens[len(issued)])
            return json_response(200, {"access_token": issued[-1], "expires_in": 3600})
        bearer = request.headers["Authorization"]
        if bearer.endswith(tokens[0]):
            return json_response(401, {"message": "expired"})
        return json_response(403, {"message": f"you sent {bearer}"}, headers={"X-Echo": bearer})

    def hook(response: Response) -> None:
        seen.append(response.text)
        seen.append(repr(response))

    caplog.set_level(logging.DEBUG, logger="contractsdk")
    credentials = ClientCredentials(client_id="cid", client_secret=CLIENT_SECRET)
    async with ContractClient(
        credentials=credentials,
        base_url="http://127.0.0.1:9",
        transport=MockTransport(handler),
        event_hooks={"response": [hook]},
        rate_limits=None,
        retries=None,
    ) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
    assert issued == tokens  # the replay did fetch and send the second token
    assert caught.value.body == f'{{"message": "you sent Bearer {REDACTED}"}}'  # type: ignore[attr-defined]
    for secret in tokens:
        for where, text in _outputs(caught.value):
            assert secret not in text, f"a token shows in the error's {where}"
        assert secret not in caplog.text
        for text in seen:
            assert secret not in text


# -- aiohttp's parser errors -----------------------------------------------------------

Answer = Callable[[bytes], bytes]


def _bad_status_line(authorization: bytes) -> bytes:
    """A status line aiohttp cannot read, quoting the request's Authorization header."""
    return b"HTTP/1.1 2x0 " + authorization + b"\r\nContent-Length: 2\r\n\r\n{}"


def _long_header(authorization: bytes) -> bytes:
    """A header past aiohttp's limit, the key where aiohttp cuts its quote of it (~100)."""
    key = authorization.split(b" ")[-1]
    return b"HTTP/1.1 200 OK\r\nX-Echo: " + b"A" * 70 + key + b"B" * 9000 + b"\r\n\r\n"


@contextlib.asynccontextmanager
async def _raw_server(answer: Answer) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 that answers each request with ``answer(its Authorization)``."""
    handlers: set[asyncio.Task[Any]] = set()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            auth = next(line for line in lines if line.lower().startswith(b"authorization:"))
            writer.write(answer(auth))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:  # closed on this loop, not left to the garbage collector after it
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
        await asyncio.gather(*handlers, return_exceptions=True)


@pytest.mark.parametrize("answer", [_bad_status_line, _long_header], ids=["status", "header"])
async def test_aiohttp_s_quote_of_the_server_s_bytes_is_not_shown(answer: Answer) -> None:
    async with (
        _raw_server(answer) as url,
        ContractClient(api_key=API_KEY, base_url=url, retries=None) as client,
    ):
        with pytest.raises(ReadError) as caught:
            await client.users.get(7)
    error = caught.value
    _assert_hidden(error, API_KEY)
    assert "ClientResponseError" in str(error)  # aiohttp's class is named, nothing it said
    # Still chained to aiohttp's class, as documented, through a stand-in that holds nothing.
    cause = error.__cause__
    assert isinstance(cause, aiohttp.ClientResponseError)
    assert cause.__cause__ is None and cause.__context__ is None
    assert error.__context__ is None or not isinstance(error.__context__, aiohttp.ClientError)
    assert isinstance(pickle.loads(pickle.dumps(cause)), aiohttp.ClientResponseError)


# -- the command line --------------------------------------------------------------------


@contextlib.contextmanager
def _server_thread(handler: Callable[[Any], Awaitable[Any]]) -> Iterator[str]:
    """An aiohttp server on 127.0.0.1 in a thread of its own (the CLI runs its own loop)."""
    from aiohttp import web

    loop = asyncio.new_event_loop()
    started: list[str] = []
    ready = threading.Event()
    runner: list[web.AppRunner] = []

    async def start() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        running = web.AppRunner(app, access_log=None)
        await running.setup()
        site = web.TCPSite(running, "127.0.0.1", 0)
        await site.start()
        runner.append(running)
        port = running.addresses[0][1]
        started.append(f"http://127.0.0.1:{port}")

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner[0].cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "the server did not start"
    try:
        yield started[0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def test_the_cli_shows_no_part_of_a_key_across_a_cut(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return web.json_response({"message": _across(500, bearer)}, status=400)

    with _server_thread(handler) as url:
        monkeypatch.setenv("CONTRACTSDK_API_KEY", API_KEY)
        monkeypatch.setenv("CONTRACTSDK_BASE_URL", url)
        code = main(["teams", "list", "1"])
    out, err = capsys.readouterr()
    assert code != 0
    assert "error" in err
    assert _shown(out + err, API_KEY) <= SHOWN_AT_MOST
