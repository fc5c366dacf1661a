"""What every group of the emulator's routes shares: its view of the emulator, and a router.

Each group (``/v1``, the parties' endpoints, the token and admin API) lists its routes as
``(method, path, handler)`` triples; :meth:`RouteGroup.register` adds them to the app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from ._emulator import Emulator

__all__ = ["Handler", "RouteGroup"]

#: A request handler.
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RouteGroup:
    """A group of handlers over one emulator's state.

    Args:
        emulator: The emulator whose data the handlers serve.
    """

    def __init__(self, emulator: Emulator) -> None:
        self._emulator = emulator
        self._state = emulator.state
        self._catalog = emulator.state.catalog
        self._origin = emulator.origin

    def routes(self) -> Iterable[tuple[str, str, Handler]]:
        """The group's ``(method, path, handler)`` triples."""
        raise NotImplementedError

    def register(self, router: web.UrlDispatcher) -> None:
        """Add every route of the group to a router.

        Args:
            router: The application's router.
        """
        for method, path, handler in self.routes():
            router.add_route(method, path, handler)
