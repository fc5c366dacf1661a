"""Values fetched once per key and kept: a template's terms, a party's identity fields.

Both never change once published, so a client asks for each once; concurrent first callers
share one request, a caller cancelled while waiting does not cancel it for the others, and
a failed fetch is not kept (the next caller asks again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

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


class FetchedOnce(Generic[K, V]):
    """A cache of fetches by key (single flight per key)."""

    def __init__(self) -> None:
        self._futures: dict[K, asyncio.Future[V]] = {}
        self._closed: Callable[[], Exception] | None = None

    def ready(self, key: K) -> V | None:
        """The value if it has been fetched, without awaiting (the usual case); else None."""
        future = self._futures.get(key)
        if future is None or not future.done() or future.cancelled() or future.exception():
            return None
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
        if future is None or refresh or (future.done() and self.ready(key) is None):
            future = asyncio.ensure_future(fetch())
            self._futures[key] = future
        elif future.done():
            return future.result()
        try:
            return await wait_shared(future, self._stopped)
        except Exception:
            if self._futures.get(key) is future:
                del self._futures[key]  # a failed fetch is not kept
            raise

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
