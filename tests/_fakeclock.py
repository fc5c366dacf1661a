"""A virtual clock for the limiter and retry tests: instant, deterministic, many tasks.

``FakeClock`` gives the code under test a ``clock()``, a ``wall()`` and an async ``sleep``.
Sleeping tasks park on futures keyed by their deadline; nothing moves until the test
drives time with :meth:`FakeClock.run` (run a coroutine to the end, advancing time to the
next deadline each time every task is blocked) or :meth:`FakeClock.advance`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable
from typing import TypeVar

import pytest

T = TypeVar("T")

#: The fake wall clock's offset from the fake monotonic clock (2026-01-01T00:00:00Z).
WALL_OFFSET = 1_767_225_600.0
#: What ``FakeClock().wall()`` reads at the start (its monotonic clock starts at 1000.0).
NOW_WALL = WALL_OFFSET + 1000.0


def _settling_loop() -> asyncio.AbstractEventLoop:
    """The running loop, if the fake clock can tell when its tasks are all blocked."""
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "_ready"):
        # uvloop keeps its queue of runnable callbacks out of Python's reach: nothing
        # says when every task is blocked, so these tests run on CPython's loop only.
        pytest.skip("the fake clock settles on CPython's own event loop only")
    return loop


def _retrieve(future: asyncio.Future[object]) -> None:
    """Mark a cancelled future's outcome seen, so the loop logs no unretrieved error."""
    if not future.cancelled():
        future.exception()


class DeadlockError(AssertionError):
    """Every task is blocked and no sleeper would ever wake them."""


class FakeClock:
    """Monotonic time that moves only when the test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.sleeps: list[float] = []  # every delay asked for, in order

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        """The fake wall-clock time (seconds since the epoch)."""
        return WALL_OFFSET + self.now

    async def sleep(self, delay: float) -> None:
        """Park the caller until the fake time reaches now + ``delay``."""
        self.sleeps.append(delay)
        if delay <= 0:
            await asyncio.sleep(0)
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + delay, next(self._order), future))
        await future

    @property
    def pending(self) -> int:
        """Sleepers still parked (cancelled ones excluded)."""
        return sum(1 for *_, future in self._sleepers if not future.done())

    async def settle(self) -> None:
        """Let every task that can run, run, until all are blocked."""
        loop = _settling_loop()
        for _ in range(10_000):
            await asyncio.sleep(0)
            ready = getattr(loop, "_ready", None)  # CPython's queue of runnable callbacks
            if ready is not None and not ready:
                return
        raise AssertionError("the tasks never settled")

    async def advance(self, seconds: float | None = None) -> None:
        """Move time to the next deadline (or by ``seconds``) and wake who is due."""
        await self.settle()
        self._move(seconds)
        await self.settle()

    def _move(self, seconds: float | None) -> None:
        """Move time to the next deadline (or by ``seconds``); resolve the due sleepers."""
        sleepers = self._sleepers
        while sleepers and sleepers[0][2].done():
            heapq.heappop(sleepers)
        if seconds is None:
            if not sleepers:
                raise DeadlockError("nothing is sleeping: advancing time would change nothing")
            target = sleepers[0][0]
        else:
            target = self.now + seconds
        self.now = max(self.now, target)
        while sleepers and sleepers[0][0] <= self.now:
            _, _, future = heapq.heappop(sleepers)
            if not future.done():
                future.set_result(None)

    async def run(self, awaitable: Awaitable[T], *, limit: float = 1e6) -> T:
        """Await ``awaitable`` in a task, advancing time whenever everything is blocked.

        One settle per step of time: the tasks woken run in the loop's next pass.
        """
        try:
            _settling_loop()  # skipped before the task starts, not with it left running
        except BaseException:
            if asyncio.isfuture(awaitable):
                awaitable.cancel()
                awaitable.add_done_callback(_retrieve)
            elif asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise
        task = asyncio.ensure_future(awaitable)
        start = self.now
        while True:
            await self.settle()
            if task.done():
                return task.result()
            if self.now - start > limit:
                task.cancel()
                raise AssertionError(f"still running after {limit} fake seconds")
            try:
                self._move(None)
            except DeadlockError:
                task.cancel()
                raise
