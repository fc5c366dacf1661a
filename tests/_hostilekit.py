"""What the hostile-server tests share: a client on a MockTransport, and a throwaway service."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from contractsdk import ContractClient, Request, Response
from contractsdk.testing import MockTransport

__all__ = ["mock_client", "serve"]


def mock_client(
    handler: Callable[[Request], Response | Awaitable[Response]], **options: Any
) -> ContractClient:
    """A client answered by ``handler``, limiter and retries off: one request per call.

    ``options`` give the credential (``api_key=`` or ``credentials=``) and any other option.
    """
    return ContractClient(
        base_url="http://127.0.0.1:9",
        transport=MockTransport(handler),
        **{"rate_limits": None, "retries": None, **options},
    )


@contextlib.asynccontextmanager
async def serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """An aiohttp service on 127.0.0.1 answering every path with ``handler``; its URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
