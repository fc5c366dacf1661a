"""How much of an answer the aiohttp transport reads: a real server over loopback.

A hostile or broken server may answer with an endless body, or a gzip bomb (a small body
that inflates a thousandfold): the transport reads at most ``max_response_bytes``,
decompressed, and stops.
"""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from contractsdk import (
    AiohttpTransport,
    ConfigurationError,
    ContractClient,
    Request,
    ResponseValidationError,
    ServerError,
)
from contractsdk.bulk._failures import classify

LIMIT = 1 << 20  # 1 MiB, for these tests
MEBIBYTE = b"0" * (1 << 20)


class Answers:
    """A loopback aiohttp server whose routes answer with more than the limit."""

    async def sized(self, request: web.Request) -> web.Response:
        status = int(request.query.get("status", "200"))
        return web.Response(status=status, body=b"x" * int(request.query["bytes"]))

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


def test_a_limit_must_be_positive() -> None:
    """Zero or less is refused when the transport is made."""
    with pytest.raises(ConfigurationError, match="max_response_bytes"):
        AiohttpTransport(max_response_bytes=0)


def test_a_create_whose_answer_was_too_large_is_reconciled() -> None:
    """The contract may exist: a bulk job counts the row as unknown, and looks it up."""
    error = ResponseValidationError("too large", errors=["$: more than 1 bytes"])
    assert classify(error, fixed_target=True) == "unknown"
