"""Values fetched once per key and kept: a template's terms, a party's identity fields.

Both never change once published, so a client asks for each once; concurrent first callers
share one request, a caller cancelled while waiting does not cancel it for the others, and
a failed fetch is not kept (the next caller asks again).

Invariants of a :class:`FetchedOnce`: it maps each key to the one fetch under way for it or
to the value it fetched, least recently used first. A fetch that fails or is cancelled is
dropped as it ends, whether or not anyone still waits for it. Past ``limit`` entries, the
least recently used values go; a fetch under way is never dropped for room (callers share
it), so the entries may outnumber ``limit`` while more fetches than that are under way.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["FetchedOnce"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


async def wait_shared(future: asyncio.Future[V], closed: Callable[[], BaseException]) -> V:
    """Await a future other callers share, and its result, without ever cancelling it.

    Only this caller's own cancellation raises CancelledError here (on every Python: no
    count of cancellations needed). A future its owner cancelled (a client closing) raises
    ``closed()`` instead, not a cancellation nobody asked of the caller.
    """
    await asyncio.wait((future,))
    if future.cancelled():
        raise closed() from None
    return future.result()


def _failed(future: asyncio.Future[Any]) -> bool:
    """Whether a fetch that has ended failed or was cancelled (marks its error as seen)."""
    return future.cancelled() or future.exception() is not None


class FetchedOnce(Generic[K, V]):
    """A cache of fetches by key (single flight per key), of at most ``limit`` values.

    Args:
        limit: The most values kept; past it, the least recently used goes.
    """

    def __init__(self, *, limit: int = 256) -> None:
        # The default suits a client's template term sets: the real 43-term template's holds
        # ~277 KiB, so ~70 MiB at most, and a client uses a few template versions at a time
        # (a bulk job's targets are few): only a process that walks through hundreds of
        # templates ever drops one, and it fetches that one again if it comes back to it.
        self._limit = limit
        self._futures: OrderedDict[K, asyncio.Future[V]] = OrderedDict()
        self._closed: Callable[[], Exception] | None = None

    def ready(self, key: K) -> V | None:
        """The value if it has been fetched, without awaiting (the usual case); else None."""
        future = self._futures.get(key)
        if future is None or not future.done() or future.cancelled() or future.exception():
            return None
        self._futures.move_to_end(key)
        return future.result()

    async def get(self, key: K, fetch: Callable[[], Awaitable[V]], *, refresh: bool = False) -> V:
        """Return the value for ``key``, fetching it with ``fetch`` unless one is kept.

        Args:
            key: What is fetched.
            fetch: Makes the request (called at most once per kept value).
            refresh: Fetch again even if a value is kept.

        Raises:
            Exception: What :meth:`cancel`'s ``error`` makes, when it stopped the fetch
                this caller was waiting for (and the caller was not cancelled itself).
        """
        future = self._futures.get(key)
        if future is None or refresh or (future.done() and _failed(future)):
            future = asyncio.ensure_future(fetch())
            # Told when it ends, not by its callers: they may all have stopped waiting.
            future.add_done_callback(functools.partial(self._ended, key))
            self._futures[key] = future
            self._futures.move_to_end(key)  # a refresh's key was in its old place
            self._trim()
        else:
            self._futures.move_to_end(key)
            if future.done():
                return future.result()
        return await wait_shared(future, self._stopped)

    def _ended(self, key: K, future: asyncio.Future[V]) -> None:
        """Drop a fetch that failed or was cancelled; make room if fetches kept it over."""
        # _failed() marks the error as seen: one nobody waited for is not logged as lost.
        if _failed(future):
            if self._futures.get(key) is future:
                del self._futures[key]
        elif len(self._futures) > self._limit:
            self._trim()

    def _trim(self) -> None:
        """Drop the least recently used values past ``limit`` (never a fetch under way)."""
        excess = len(self._futures) - self._limit
        if excess <= 0:
            return
        dropped: list[K] = []
        for key, future in self._futures.items():
            if future.done():
                dropped.append(key)
                if len(dropped) == excess:
                    break
        for key in dropped:
            del self._futures[key]

    def _stopped(self) -> BaseException:
        """What a caller gets when cancel() stopped the fetch it waited for."""
        return asyncio.CancelledError() if self._closed is None else self._closed()

    def cancel(self, *, error: Callable[[], Exception] | None = None) -> None:
        """Cancel the fetches under way (the client is closing).

        Args:
            error: Makes the error raised to each caller waiting for one of them (a fresh
                one each), unless that caller's own task is being cancelled too. Without
                it, they get :class:`asyncio.CancelledError`.
        """
        if error is not None:
            self._closed = error
        for future in self._futures.values():
            future.cancel()
