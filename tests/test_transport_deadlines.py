"""The transport's per-timeout deadline queues: kept while attempts use them, not after."""

from __future__ import annotations

import asyncio
import contextlib

from aioresponses import aioresponses

import tests._aioresponses_compat  # noqa: F401  # aiohttp 3.14 support, see the module
from contractsdk import AiohttpTransport, Request
from contractsdk._transport import _Deadlines

BASE = "https://sandbox.legislate.tech/v1"


def empty_queues(deadlines: _Deadlines) -> int:
    """How many of the timeouts' queues hold no attempt."""
    return sum(1 for queue in deadlines._queues.values() if not queue)


async def test_calls_of_a_timeout_each_leave_no_queue_behind() -> None:
    """200 calls, each with a timeout of its own (a budget's time left), keep no queues.

    Only the newest queue may stay empty, for the next call of its timeout; before, every
    timeout's empty queue stayed until the first deadline passed.
    """
    transport = AiohttpTransport()
    deadlines = transport._deadlines
    budget_ends = asyncio.get_running_loop().time() + 30.0

    async def worker(calls: int) -> None:
        for _ in range(calls):
            left = budget_ends - asyncio.get_running_loop().time()
            request = Request(method="GET", url=f"{BASE}/users/1", timeout=left)
            response = await transport.handle_async_request(request)
            assert response.status_code == 200

    try:
        with aioresponses() as mocked:
            mocked.get(f"{BASE}/users/1", payload={"id": 1}, repeat=True)
            await worker(100)
            await asyncio.gather(*(worker(25) for _ in range(4)))
        assert len(deadlines._queues) <= 1 and empty_queues(deadlines) <= 1
    finally:
        await transport.aclose()


async def test_an_emptied_queue_goes_unless_it_is_the_newest() -> None:
    """A queue goes when its last attempt ends; the newest waits for a queue of another."""
    deadlines = _Deadlines()
    task = asyncio.current_task()
    assert task is not None
    try:
        first, second = deadlines.start(task, 10.0), deadlines.start(task, 10.0)
        other = deadlines.start(task, 20.0)
        assert not deadlines.end(first)
        assert list(deadlines._queues) == [10.0, 20.0]  # second still uses it
        assert not deadlines.end(second)
        assert list(deadlines._queues) == [20.0]
        assert not deadlines.end(other)
        assert list(deadlines._queues) == [20.0]  # the newest: kept for the next attempt
        assert not deadlines.end(deadlines.start(task, 20.0))
        assert not deadlines.end(deadlines.start(task, 30.0))
        assert list(deadlines._queues) == [30.0]
    finally:
        deadlines.close()


async def test_an_attempt_ended_after_close_leaves_the_new_queue_of_its_timeout() -> None:
    """An attempt started before close() ends without dropping the queue made since."""
    deadlines = _Deadlines()
    task = asyncio.current_task()
    assert task is not None
    try:
        before = deadlines.start(task, 10.0)
        deadlines.close()
        after = deadlines.start(task, 10.0)
        deadlines.start(task, 20.0)  # so that the new 10 s queue is not the newest
        assert not deadlines.end(after)
        again = deadlines.start(task, 10.0)
        assert not deadlines.end(before)
        assert list(deadlines._queues[10.0]) == [again]
        assert not deadlines.end(again)
    finally:
        deadlines.close()


async def test_an_attempt_still_times_out_when_another_of_its_timeout_ended() -> None:
    """The timer still cancels an attempt whose queue another attempt's end left in place."""
    deadlines = _Deadlines()
    current = asyncio.current_task()
    assert current is not None
    timed_out: list[bool] = []

    async def attempt() -> None:
        task = asyncio.current_task()
        assert task is not None
        deadline = deadlines.start(task, 0.05)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            timed_out.append(deadlines.end(deadline))

    try:
        waiting = asyncio.create_task(attempt())
        await asyncio.sleep(0)
        assert not deadlines.end(deadlines.start(current, 0.05))
        await asyncio.wait_for(waiting, 5)
        assert timed_out == [True]
        assert deadlines._queues == {}
    finally:
        deadlines.close()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting


def test_aiohttp_timeouts_made_per_value_are_not_all_kept() -> None:
    """A timeout of its own per attempt (a deadline's time left): the dict stays small."""
    transport = AiohttpTransport()
    made = [transport._total(0.5 + n / 1000) for n in range(200)]
    assert [timeout.total for timeout in made] == [0.5 + n / 1000 for n in range(200)]
    assert len(transport._timeouts) <= 16
