"""What the hostile-server tests share: a client, a throwaway service, an error's chain."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web

from contractsdk import ContractClient, ContractSDKError, Request, Response
from contractsdk.testing import MockTransport

__all__ = ["chain_shown", "mock_client", "serve"]


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


def chain_shown(error: BaseException) -> Iterator[tuple[str, str]]:
    """What shows each error chained to ``error``: its str, repr, args and attributes.

    Both links, ``__cause__`` and ``__context__``, are followed, recursively: ``raise ...
    from None`` only stops a traceback printing the context, which an error reporter (or
    ``vars``) still reads. A ``json.JSONDecodeError`` keeps the whole text it read as its
    ``doc``. An SDK error's ``headers`` are the server's, kept as sent, and not searched.
    """
    seen: set[int] = set()
    pending: list[tuple[str, BaseException]] = [("error", error)]
    while pending:
        where, current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield f"{where} str", str(current)
        yield f"{where} repr", repr(current)
        yield f"{where} args", repr(current.args)
        for name, value in getattr(current, "__dict__", {}).items():
            if not (name == "headers" and isinstance(current, ContractSDKError)):
                yield f"{where}.{name}", repr(value)
        for link in ("__cause__", "__context__"):
            linked = getattr(current, link)
            if linked is not None:
                pending.append((f"{where}.{link}", linked))
