"""One run of a job's input at a time across hosts: a lease in the client's Redis.

The file locks (:mod:`contractsdk.bulk._lock`) see one machine. The same file run on two
hosts at once (copied to both, each run with its own journal: two replicas of one batch
job) has each run list the team before the other created anything, and every row made
twice. So when the client shares Redis (``redis=``, ``--redis``), a run of a file also
holds a lease there, named by the job id and a hash of the file's *bytes*: a copy of the
file, wherever it is, is the same input; another file of the job (the other half of a
split file) is not.

* Taken and kept by one script (:data:`_HOLD`): the lease is this run's, or free and
  taken (a value that never expires, or not a string, is no lease), or another's, and
  then the run is refused before it sends anything, naming the holder (host, process
  id, since when: never a secret).
* Kept alive every ``ttl / 3`` seconds while the run goes on; a process killed lets it go
  ``ttl`` seconds later, unless the next run is on its machine: a holder whose process
  is not running there (same boot, same process namespace, so its id means the same) is
  taken over at once (:data:`_TAKE_OVER`), and ``kill -9`` then run again resumes as it
  does without Redis. Taken again if Redis forgot it (restarted without persistence).
  Found held by another run (this one was stopped longer than ``ttl``, or Redis was away
  while the other started), it stops this run: both are sending, and the rows this one
  has not sent stay pending.
* Redis away is not the job failing, as for the rate limits: the run goes on with one
  warning (the machine's own locks still hold), and the lease is taken when Redis answers:
  asked for every ``AWAY_POLL`` seconds while it is not held, not at the next renewal (a
  run unseen for ten more seconds after Redis came back let a copy started on another
  host then create 41 of its 200 rows twice). A copy started before the client finds
  Redis again (within its ``rejoin_after``, a second) is not seen: the first run stops
  when it finds the lease taken, but rows both sent meanwhile are made twice.
* Let go at the end only if it is still this run's (:data:`_LET_GO`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any, Final

from contractsdk._redis import RedisUnavailableError, SharedRedis
from contractsdk.bulk._schema import JournalError

__all__ = ["LEASE_TTL", "InputLease"]

logger = logging.getLogger("contractsdk.bulk")

#: Seconds a lease outlives the last time its run kept it alive.
LEASE_TTL: Final = 30.0
#: Seconds between attempts to take the lease while the run does not hold it (Redis away).
AWAY_POLL: Final = 0.25

#: Keep the lease if it is ours, take it if free; else return who holds it. A key of
#: another type, or one that never expires, is no run's lease (every lease is written
#: with an expiry): taken. Read as Redis away, the first ran every run unseen by the
#: others; read as a holder, the second refused every run for good.
_HOLD: Final = """
local held = redis.pcall('GET', KEYS[1])
if held == ARGV[1] or type(held) ~= 'string' or redis.call('PTTL', KEYS[1]) == -1 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return held
"""
#: Take the lease from a holder known dead, if it still holds it.
_TAKE_OVER: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return 1
end
return 0
"""
#: Let the lease go if it is still ours.
_LET_GO: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class InputLease:
    """A run's lease on its input, shared through Redis (see the module header).

    Args:
        shared: The client's Redis.
        job_id: The job's id.
        digest: The hash of the input file's bytes.
        name: The input file's name, as a run refused names this one's.
        ttl: Seconds the lease outlives its last renewal (``LEASE_TTL`` if None).
        clock: Wall-clock seconds, for the "since" a refused run is told.
    """

    def __init__(
        self,
        shared: SharedRedis,
        job_id: str,
        digest: str,
        *,
        name: str | None = None,
        ttl: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._shared = shared
        self.key = shared.key("bulk", job_id, digest[:32])
        ttl = LEASE_TTL if ttl is None else ttl
        self._ttl = ttl
        self._ttl_ms = max(1, round(ttl * 1000))
        self._every = ttl / 3
        self._node = _node()
        self._value = json.dumps(
            {
                "host": socket.gethostname(),
                "node": self._node,
                "pid": os.getpid(),
                "input": name,
                "since": round(clock()),
                "run": secrets.token_hex(8),
            },
            separators=(",", ":"),
        )
        self.held = False
        self._keeper: asyncio.Task[None] | None = None
        self._warned = False

    async def acquire(self, what: str) -> None:
        """Take the lease, or refuse the run; Redis away: go on without it (one warning).

        Args:
            what: The input, as the refusal names it.

        Raises:
            JournalError: Another run holds the lease.
        """
        holder = await self._hold()
        if holder is not None and _gone(holder, self._node) and await self._take_over(holder):
            holder = None
        if holder is not None:
            raise JournalError(
                f"another run of this job on the rows of {what} is under way "
                f"({_holder(holder)}, through the shared Redis) with another journal: two "
                "runs of one input (or copies of it) each create "
                "the rows the other is creating. Let it finish, or stop it, then run this "
                f"command again (a process killed on another host lets go {self._ttl:g} s "
                "after it last kept its lease)"
            )

    def keep(self, lost: Callable[[JournalError], None]) -> None:
        """Keep the lease alive while the run goes on; ``lost(error)`` if another takes it."""
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep(lost), name="bulk-lease")

    async def release(self) -> None:
        """Stop keeping the lease, and let it go if it is still this run's."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        if not self.held:
            return
        self.held = False
        script = self._shared.script("bulk-let-go", _LET_GO)
        with contextlib.suppress(RedisUnavailableError):  # it expires on its own
            await self._shared.call(lambda: script(keys=[self.key], args=[self._value]))

    async def _keep(self, lost: Callable[[JournalError], None]) -> None:
        while True:
            await asyncio.sleep(self._every if self.held else min(self._every, AWAY_POLL))
            holder = await self._hold()
            if holder is not None:
                lost(
                    JournalError(
                        f"another run of this job on the same input started ({_holder(holder)}) "
                        "while this run's lease in the shared Redis lapsed: this run stops, "
                        "and its rows not sent stay pending"
                    )
                )
                return

    async def _take_over(self, stale: object) -> bool:
        """Take the lease from a run whose process is gone from this machine; True if taken.

        Its value (``stale``) is read again and compared in the script: a holder that
        changed meanwhile (a live run took it) is left alone.
        """
        script = self._shared.script("bulk-take-over", _TAKE_OVER)
        try:
            taken = await self._shared.call(
                lambda: script(keys=[self.key], args=[stale, self._value, self._ttl_ms])
            )
        except RedisUnavailableError:
            return False
        if taken != 1:
            return False
        self.held = True
        logger.info("took over the lease of a run whose process is gone: %s", _holder(stale))
        return True

    async def _hold(self) -> object | None:
        """Take or keep the lease: None if this run holds it (or Redis is away).

        Else the holder's stored value (:func:`_holder` describes it).
        """
        script = self._shared.script("bulk-hold", _HOLD)
        try:
            answer: object = await self._shared.call(
                lambda: script(keys=[self.key], args=[self._value, self._ttl_ms])
            )
        except RedisUnavailableError:
            self.held = False
            if not self._warned:
                self._warned = True
                logger.warning(
                    "Redis is away: this run of the job is not seen by other hosts until it "
                    "is back (runs on this machine still are)"
                )
            return None
        if answer == 1:
            self.held = True
            return None
        self.held = False
        return answer


def _node() -> str | None:
    """This machine's boot and process namespace, where a process id names one process.

    (Linux; elsewhere None, and a dead holder's lease is waited out.) A host name alone
    is not enough: containers that share the host's network share its name, not its
    process ids.
    """
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            return f"{boot.read().strip()}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return None


_UNREADABLE: Final = "a holder this version cannot read"


def _read(value: object) -> dict[str, Any] | None:
    """A lease's stored value as written (a JSON object), or None if it is not one."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    try:
        data = json.loads(str(value))
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _gone(value: object, node: str | None) -> bool:
    """Whether a lease's holder is a process of this machine (``node``) no longer running."""
    data = _read(value)
    if node is None or data is None:
        return False
    try:
        pid = int(data["pid"])
    except (ValueError, KeyError, TypeError, OverflowError):
        return False
    if data.get("node") != node or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # another user's (it runs), or no process id at all
        return False
    return False


def _holder(value: object) -> str:
    """Describe the run holding a lease from its stored value (host, process, file, since).

    The file is the holder's: a copy of the input has another name (a lease written
    before names none).
    """
    data = _read(value)
    if data is None:
        return _UNREADABLE
    try:
        host, pid = str(data["host"]), int(data["pid"])
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(data["since"])))
    except (ValueError, KeyError, TypeError, OverflowError, OSError):
        return _UNREADABLE
    name = data.get("input")
    on = f", on {name[:128]!r}" if isinstance(name, str) and name else ""
    return f"host {host[:64]!r}, process {pid}{on}, since {when}"
