"""A transport that answers from a function: run the real client with no network."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from contractsdk._http import Headers, Request, Response

__all__ = ["Handler", "MockTransport", "json_response"]

#: What answers a :class:`MockTransport`'s requests: a function, or a coroutine function,
#: given each :class:`~contractsdk.Request` and returning its :class:`~contractsdk.Response`.
Handler = Callable[[Request], Response | Awaitable[Response]]


def json_response(
    status_code: int = 200, body: Any = None, *, headers: Mapping[str, str] | None = None
) -> Response:
    """Return a response with a JSON body (``None`` gives an empty body).

    Args:
        status_code: The HTTP status.
        body: Anything ``json.dumps`` accepts.
        headers: Extra headers.
    """
    content = b"" if body is None else json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return Response(status_code=status_code, headers=Headers(all_headers), content=content)


class MockTransport:
    """Answer every request by calling ``handler(request)`` (sync or async).

    The client runs exactly as against the network: auth, retries, rate limiting, hooks and
    error mapping all happen; only the HTTP exchange is replaced. Requests are recorded in
    :attr:`requests`, with their ``Authorization`` header, so tests can check what was sent.

    Args:
        handler: Returns a :class:`~contractsdk.Response` for a :class:`~contractsdk.Request`,
            or raises a :class:`~contractsdk.TransportError` to simulate a network failure.
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.closed = False

    async def handle_async_request(self, request: Request) -> Response:
        """Record the request and return the handler's response."""
        self.requests.append(request)
        result = self.handler(request)
        response = await result if inspect.isawaitable(result) else result
        return response if response.request is not None else response.for_request(request)

    async def aclose(self) -> None:
        """Mark the transport closed."""
        self.closed = True
