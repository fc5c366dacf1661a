"""How much of an answer the aiohttp transport reads: a real server over loopback.

A hostile or broken server may answer with an endless body, or a gzip bomb (a small body
that inflates a thousandfold): the transport reads at most ``max_response_bytes``,
decompressed, and stops.
"""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from contractsdk import (
    AiohttpTransport,
    ConfigurationError,
    ContractClient,
    ReadError,
    Request,
    ResponseValidationError,
    ServerError,
)

LIMIT = 1 << 20  # 1 MiB, for these tests
MEBIBYTE = b"0" * (1 << 20)


def _packed(body: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(body) + packer.flush()


class Answers:
    """A loopback aiohttp server whose routes answer with more than the limit."""

    async def sized(self, request: web.Request) -> web.Response:
        status = int(request.query.get("status", "200"))
        return web.Response(status=status, body=b"x" * int(request.query["bytes"]))

    async def encoded(self, request: web.Request) -> web.Response:
        """The text "hello, " × 1000 in the ``encoding`` asked for (``corrupt``: not so)."""
        body = b"hello, " * 1000
        packed = {
            "gzip": lambda: _packed(body, 31),
            "deflate": lambda: _packed(body, 15),  # zlib-wrapped, as HTTP says
            "raw": lambda: _packed(body, -15),  # raw deflate, as some servers send it
            "corrupt": lambda: b"\x1f\x8b" + b"not gzip at all" * 10,
        }[request.query["as"]]()
        encoding = {"raw": "deflate", "corrupt": "gzip"}.get(request.query["as"])
        headers = {"Content-Encoding": encoding or request.query["as"]}
        return web.Response(body=packed, headers=headers)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """``mib`` mebibytes, chunked (no Content-Length), gzip-compressed if asked."""
        gzip = "gzip" in request.query
        answer = web.StreamResponse(headers={"Content-Encoding": "gzip"} if gzip else {})
        await answer.prepare(request)
        packer = zlib.compressobj(9, zlib.DEFLATED, 31) if gzip else None
        try:
            for _ in range(int(request.query["mib"])):
                chunk = packer.compress(MEBIBYTE) if packer else MEBIBYTE
                await answer.write(chunk)
            if packer:
                await answer.write(packer.flush())
            await answer.write_eof()
        except ConnectionError:
            pass  # the client stopped reading and closed the connection
        return answer


@pytest.fixture
async def answers() -> AsyncIterator[tuple[Answers, str]]:
    routes = Answers()
    app = web.Application()
    app.router.add_get("/v1/sized", routes.sized)
    app.router.add_get("/v1/stream", routes.stream)
    app.router.add_get("/v1/encoded", routes.encoded)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield routes, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def _get(url: str, *, limit: int | None = LIMIT) -> bytes:
    transport = AiohttpTransport(max_response_bytes=limit)
    try:
        response = await transport.handle_async_request(Request(method="GET", url=url))
    finally:
        await transport.aclose()
    return response.content


async def test_an_answer_within_the_limit_is_read_whole(answers: tuple[Answers, str]) -> None:
    """Exactly the limit, plain or inflated from gzip, and a streamed one: all of it."""
    _, base = answers
    assert len(await _get(f"{base}/sized?bytes={LIMIT}")) == LIMIT
    assert await _get(f"{base}/stream?mib=1&gzip") == MEBIBYTE
    assert await _get(f"{base}/stream?mib=1") == MEBIBYTE


@pytest.mark.parametrize(
    "query",
    [f"sized?bytes={LIMIT + 1}", "stream?mib=200", "stream?mib=200&gzip"],
    ids=["content-length", "chunked", "gzip bomb"],
)
async def test_a_success_past_the_limit_is_not_read(
    answers: tuple[Answers, str], query: str
) -> None:
    """A 2xx past the limit raises; the rest is not read (a gzip bomb of 200 MiB included)."""
    _, base = answers
    tracemalloc.start()
    try:
        with pytest.raises(ResponseValidationError, match="max_response_bytes") as caught:
            await _get(f"{base}/{query}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.method == "GET" and caught.value.url == f"/v1/{query.split('?')[0]}"
    # Memory held a few chunks past the limit (server's included), never the 200 MiB.
    assert peak < 32 * len(MEBIBYTE), f"{peak:,} bytes"


async def test_an_error_past_the_limit_keeps_its_status(answers: tuple[Answers, str]) -> None:
    """A 5xx with an endless body is still a ServerError; its body stops at the limit."""
    _, base = answers
    transport = AiohttpTransport(max_response_bytes=LIMIT)
    async with ContractClient(
        api_key="test-key-0123456789abcdef",
        base_url=base.removesuffix("/v1"),
        rate_limits=None,
        retries=None,
        transport=transport,
    ) as client:
        with pytest.raises(ServerError) as caught:
            await client._send_json("GET", f"/sized?status=503&bytes={3 * LIMIT}")
    assert caught.value.status_code == 503


async def test_no_limit_reads_everything(answers: tuple[Answers, str]) -> None:
    """``max_response_bytes=None`` reads whatever comes."""
    _, base = answers
    assert len(await _get(f"{base}/stream?mib=3&gzip", limit=None)) == 3 * len(MEBIBYTE)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw"])
async def test_each_content_encoding_is_inflated(
    answers: tuple[Answers, str], encoding: str
) -> None:
    """gzip, deflate as HTTP says (zlib-wrapped) and raw deflate all read as the text."""
    _, base = answers
    assert await _get(f"{base}/encoded?as={encoding}") == b"hello, " * 1000


async def test_a_body_that_does_not_inflate_is_a_read_error(
    answers: tuple[Answers, str],
) -> None:
    """A corrupt gzip body is a broken answer (ReadError), not bytes handed on."""
    _, base = answers
    with pytest.raises(ReadError, match="does not inflate"):
        await _get(f"{base}/encoded?as=corrupt")


async def test_a_callers_session_that_inflates_is_limited_too(
    answers: tuple[Answers, str],
) -> None:
    """A session of the caller's inflates for itself: what it gives is counted all the same."""
    _, base = answers
    async with aiohttp.ClientSession(auto_decompress=True) as session:
        transport = AiohttpTransport(session=session, max_response_bytes=LIMIT)
        request = Request(method="GET", url=f"{base}/stream?mib=3&gzip")
        with pytest.raises(ResponseValidationError, match="max_response_bytes"):
            await transport.handle_async_request(request)
        request = Request(method="GET", url=f"{base}/encoded?as=gzip")
        assert (await transport.handle_async_request(request)).content == b"hello, " * 1000


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "1000"])
def test_a_limit_must_be_a_positive_integer(limit: object) -> None:
    """Zero, a negative, a float, a bool or a string is refused when the transport is made."""
    with pytest.raises(ConfigurationError, match="max_response_bytes"):
        AiohttpTransport(max_response_bytes=limit)  # type: ignore[arg-type]
