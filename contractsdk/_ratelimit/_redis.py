"""The buckets in Redis, shared by every process and host that uses one credential.

Each bucket is one Redis hash holding the same GCRA schedule, busy clock and learning
state as :class:`~._store.LocalStore` keeps in memory (its module header states the
invariants; they hold across processes here). Every operation is one Lua script, so one
round trip and atomic: ``reserve`` takes the caller's slot and says how long to wait
(FIFO across processes, no polling, no thundering herd), ``release`` gives back a slot
that nothing came after, ``update`` compares-and-sets the learning state and applies a
pause. Times inside the scripts are Redis's own clock (``TIME``), so hosts need no
synchronised clocks: only durations cross the wire. Floats leave Lua as strings (Lua
numbers returned to Redis are cut to integers).

Every reservation also refreshes a heartbeat in a sorted set of the clients that used the
bucket in the last ``LIVE_WINDOW`` seconds, and returns their number. When Redis is away
(:class:`~contractsdk._redis.RedisUnavailableError`), the store carries on with a local
schedule paced at ``rate / live clients`` (its share) and no burst, and rejoins the shared
schedule when Redis answers again: no call waits on Redis beyond its timeout, no Redis
error reaches the caller, no call is lost.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
import time
from collections.abc import Callable
from typing import Any, Final

import attrs

from contractsdk._redis import RedisUnavailableError, SharedRedis, logger

from ._control import PACING, Control
from ._limits import DEFAULT_MAX_PAUSE, BucketName
from ._store import IDLE_GAP, LATENESS, METER_BIN, LocalStore, Schedule, Slot, _booked

__all__ = ["RedisStore"]

#: Seconds a bucket's keys outlive its last use.
TTL: Final = 600.0
#: A client that reserved within this many seconds counts as live.
LIVE_WINDOW: Final = 5.0
#: The largest rate a learning state read from Redis may hold: the shared schedule's
#: times are epoch seconds, a quarter of a microsecond apart, and pace nothing faster.
MAX_RATE: Final = 1e6
#: The largest busy time or duration it may hold, in seconds (the busy clock in the
#: scripts is held under it too), and the shortest K (a CUBIC curve's time to W).
MAX_SECONDS: Final = 1e9
MIN_K: Final = 1e-3

# KEYS: bucket hash, clients zset.
# ARGV: rate ('' = unpaced), tau, burst, max_wait (-1 = none), idle gap, lateness, meter bin,
#       ttl ms, caller's version, initial control, client id, live window, slots to reserve,
#       the longest pause (max_pause: also the longest interval, as the limiter believes no
#       limit slower than one request per max_pause).
# Numbers that must round-trip exactly (tat, which a release compares) leave as %.17g:
# Lua's tostring keeps 14 digits, a tenth of a millisecond of an epoch time.
_RESERVE: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local h = KEYS[1]
local f = redis.pcall('HMGET', h, 'tat', 'tau', 'iv', 'pause', 'last', 'busy', 'seen',
                      'mbin', 'm0', 'm1', 'ver')
if f.err then
  -- A key of another type, which no script of ours wrote: dropped, as a key expired.
  -- (Left, every reservation failed and every process paced alone while it lived.)
  redis.call('DEL', h)
  f = {}
end
local ver = tonumber(f[11])
-- A version no script counted to (NaN, 1.5, 1e300) never equals the one a client sends
-- back: no update could replace the state, and every client paced at its interval.
if ver == nil or ver ~= math.floor(ver) or math.abs(ver) > 1e15 then
  ver = 0
  redis.call('HSET', h, 'ctl', ARGV[10], 'ver', 0)
end
local rate = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local iv = 0
if rate then iv = 1 / rate end
-- A key nobody used for a TTL: everyone shares it, so the server's bucket is full.
local tat = tonumber(f[1]) or (now - 1e9)
local old_tau = tonumber(f[2]) or tau
local old_iv = tonumber(f[3]) or 0
-- A caller behind the shared state paces at the rate its last writer set, not its own.
if rate and old_iv > 0 and tonumber(ARGV[9]) ~= ver then iv = old_iv end
local pause = tonumber(f[4]) or 0
local last = tonumber(f[5]) or (now - 1e9)
local busy = tonumber(f[6]) or 0
local seen = tonumber(f[7]) or now
local mbin = tonumber(f[8]) or 0
local m0 = tonumber(f[9]) or 0
local m1 = tonumber(f[10]) or 0
-- Redis's clock went back (stepped, or a failover to a host behind): the times written
-- ahead of it go back with it, or every client waited out the difference.
local back = seen - now
if back > 0 and back < 1e9 then
  tat, pause, last, seen = tat - back, pause - back, last - back, now
  redis.call('HSET', h, 'tat', tat, 'pause', pause, 'last', last, 'seen', seen)
end
-- Whoever can write to Redis must not stall every client of the credential: no pause
-- past max_pause, no interval past it either (the limiter believes no limit slower than
-- one request per max_pause), and no schedule booked further ahead than a key lives
-- unused. NaN (x ~= x) and inf are no numbers, and nothing counts past 1e9 (busy
-- seconds, slots: the learning's arithmetic overflows on such a busy clock).
local most = tonumber(ARGV[14])
if pause ~= pause then pause = 0 end
if pause > now + most then
  -- Cut once and written: cut anew at each reservation, it held every one max_pause.
  pause = now + most
  redis.call('HSET', h, 'pause', pause)
end
if old_iv ~= old_iv or old_iv < 0 or old_iv > most then old_iv = 0 end
if iv > most then iv = most end
local ahead = tonumber(ARGV[8]) / 1000 + most
if tat ~= tat or tat > now + ahead then tat = now end
if old_tau ~= old_tau or old_tau < 0 or old_tau > ahead then old_tau = tau end
if last ~= last or last > now + ahead then last = now - 1e9 end
if busy ~= busy or busy < 0 or busy > 1e9 then busy = 0 end
if seen ~= seen or seen > now or seen < now - 1e9 then seen = now end
if mbin ~= mbin or mbin < 0 or mbin == math.huge then mbin = 0 end
if m0 ~= m0 or m0 < 0 or m0 > 1e9 then m0 = 0 end
if m1 ~= m1 or m1 < 0 or m1 > 1e9 then m1 = 0 end
local gap = now - seen
if gap > 0 then
  local cap = tonumber(ARGV[5])
  if 2 * iv > cap then cap = 2 * iv end
  busy = busy + math.min(gap, cap)
  seen = now
end
local start = math.max(now, pause)
local wait = start - now
local backlogged = 0
local count = tonumber(ARGV[13])
local waits = {}
if rate then
  if old_iv > 0 and iv ~= old_iv then
    local debt = tat - old_tau - start
    if debt > 0 then tat = start + old_tau + debt * iv / old_iv end
    -- Scaled from an interval of 1e-300 read from Redis, a debt of seconds lay past
    -- any schedule, and the head of every queue slept for ever.
    if tat > now + ahead then tat = now end
  end
  tat = tat + tau - old_tau
  if now - last > iv + tonumber(ARGV[6]) then
    tat = math.max(tat, now + tau - (burst - 1) * iv)
  end
  if tat - tau > now then backlogged = 1 end
  local slot = math.max(start, tat - tau)
  wait = slot - now
  if max_wait < 0 or wait <= max_wait + 1e-9 then
    tat = math.max(tat, slot) + iv
    -- The caller's next slots, one after another (a batch for the waiters behind it).
    for i = 2, count do
      slot = math.max(start, tat - tau)
      waits[i - 1] = string.format('%.17g', slot - now)
      tat = math.max(tat, slot) + iv
    end
  end
else
  for i = 2, count do waits[i - 1] = string.format('%.17g', wait) end
end
if max_wait >= 0 and wait > max_wait + 1e-9 then
  redis.call('HSET', h, 'busy', busy, 'seen', seen)
  redis.call('PEXPIRE', h, tonumber(ARGV[8]))
  return {0, tostring(wait), tostring(math.max(0, pause - now))}
end
local bin = tonumber(ARGV[7])
local index = math.floor(busy / bin)
if index ~= mbin then
  if index == mbin + 1 then m1 = m0 else m1 = 0 end
  m0 = 0
  mbin = index
end
m0 = m0 + count
local sent = (m0 + m1) / (bin + math.max(busy - mbin * bin, 0))
local final = now + wait
if #waits > 0 then final = now + tonumber(waits[#waits]) end
redis.call('HSET', h, 'tat', tat, 'tau', tau, 'iv', iv, 'last', final, 'busy', busy,
           'seen', seen, 'mbin', mbin, 'm0', m0, 'm1', m1)
local ttl = tonumber(ARGV[8])
redis.call('PEXPIRE', h, ttl)
if type(redis.pcall('ZADD', KEYS[2], now, ARGV[11])) == 'table' then  -- another type
  redis.call('DEL', KEYS[2])
  redis.call('ZADD', KEYS[2], now, ARGV[11])
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[12]))
-- No client beats ahead of now: those are a clock's that went back, or no client's, and
-- counted they cut every process's share of the rate for as long as they stayed ahead.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '(' .. string.format('%.17g', now), '+inf')
local live = redis.call('ZCARD', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ttl)
local ctl = ''
if tonumber(ARGV[9]) ~= ver then ctl = redis.call('HGET', h, 'ctl') end
return {1, tostring(wait), tostring(math.max(0, pause - now)), tostring(busy),
        tostring(sent), backlogged, ver, ctl, live, string.format('%.17g', tat),
        string.format('%.17g', iv), waits}
"""

# KEYS: bucket hash. ARGV: tat after the last slot given back, its interval, how many slots
# (the last ones of one reservation).
_RELEASE: Final = """
local f = redis.call('HMGET', KEYS[1], 'tat', 'm0')
local tat = tonumber(f[1])
if not tat then return 0 end
local count = tonumber(ARGV[3])
-- The slots are not sent, whether or not they can be undone: the send meter forgets them.
redis.call('HSET', KEYS[1], 'm0', math.max(0, (tonumber(f[2]) or count) - count))
-- Nothing reserved since: any reservation moves tat by an interval. Within half of one,
-- not to the digit: tat is a sum of intervals, each rounded to a quarter microsecond.
if math.abs(tat - tonumber(ARGV[1])) < tonumber(ARGV[2]) / 2 then
  redis.call('HSET', KEYS[1], 'tat', tat - count * tonumber(ARGV[2]))
  return 1
end
return 0
"""

# KEYS: bucket hash. ARGV: expected version, control ('' = keep), rate ('' = unpaced),
#       pause seconds, tokens ('' = no cap), ttl ms, the longest pause (as _RESERVE's).
_UPDATE: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local h = KEYS[1]
local f = redis.call('HMGET', h, 'ver', 'tat', 'tau', 'pause', 'iv')
local ver = tonumber(f[1]) or 0
local replaced = 0
local rate = tonumber(ARGV[3])
local tat = tonumber(f[2]) or now
local tau = tonumber(f[3]) or 0
local pause = tonumber(f[4]) or 0
if pause ~= pause then pause = 0 end  -- NaN: no pause, and a 429's is written over it
if tonumber(ARGV[1]) == ver and ARGV[2] ~= '' then
  ver = ver + 1
  redis.call('HSET', h, 'ctl', ARGV[2], 'ver', ver)
  replaced = 1
  -- The new rate paces every process's next reservation, and the debt booked already.
  local old_iv = tonumber(f[5]) or 0
  if rate and old_iv > 0 then
    local iv = 1 / rate
    local start = math.max(now, pause)
    local debt = tat - tau - start
    if debt > 0 then tat = start + tau + debt * iv / old_iv end
    redis.call('HSET', h, 'iv', iv)
  end
end
local p = tonumber(ARGV[4])
if p > 0 and now + p > pause then
  pause = now + p
  redis.call('HSET', h, 'pause', pause)
  if rate then tat = math.max(tat, pause + tau) end
end
local tokens = tonumber(ARGV[5])
if tokens and rate then tat = math.max(tat, now + tau - (tokens - 1) / rate) end
if rate then redis.call('HSET', h, 'tat', tat) end
redis.call('PEXPIRE', h, tonumber(ARGV[6]))
local ctl = ''
if replaced == 0 then ctl = redis.call('HGET', h, 'ctl') or '' end
-- A pause past max_pause is cut as _RESERVE cuts it ('inf' read as no number at all).
return {replaced, ver, ctl, tostring(math.min(math.max(0, pause - now), tonumber(ARGV[7])))}
"""

_CONTROL_FIELDS: Final = {field.name for field in attrs.fields(Control)}
#: Fields a state written by an older contractsdk lacks, read with their defaults; and a
#: newer one's fields this version does not know are left out: a fleet upgraded one
#: process at a time goes on sharing what it learnt, both ways.
_NEWER_FIELDS: Final = {"left_slow"}


def _encode(control: Control) -> str:
    return json.dumps(attrs.asdict(control), separators=(",", ":"))


def _decode(text: Any) -> Control | None:
    """Read a learning state from Redis; anything malformed (a hostile Redis) is None."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            return None
        if not (_CONTROL_FIELDS - _NEWER_FIELDS).issubset(data):
            return None
        control = Control(**{name: data[name] for name in _CONTROL_FIELDS & set(data)})
    except (TypeError, ValueError, RecursionError):
        return None
    # JSON gives the types attrs does not check: a hostile value is refused, not trusted.
    # And the sizes: a t_fail or K of 1e300, finite, made the learning's cubic overflow,
    # and every call of every process raised OverflowError; a rate of 1e300 paced nothing.
    rates: tuple[object, ...] = (1.0 if control.rate is None else control.rate, control.w_max)
    seconds: tuple[object, ...] = (control.t_fail, control.k, control.stamp, control.left_slow)
    flags: tuple[object, ...] = (control.hinted, control.strike_run)
    valid = (
        control.phase in ("off", "paced", "slow", "cubic")
        and all(_within(value, MAX_RATE) for value in rates)
        and all(_within(value, MAX_SECONDS) for value in seconds)
        and _within(control.k_base, MAX_SECONDS)
        and control.k_base >= MIN_K
        and (control.rate is None or control.rate > 0)
        and control.w_max >= 0
        and type(control.epoch) is int
        and all(type(flag) is bool for flag in flags)
    )
    return control if valid else None


def _same_rate(shared: Control, own: Control) -> bool:
    """Both pace, within 1 % of ``own``'s rate: the same told limit, as far as pacing goes."""
    return (
        shared.rate is not None
        and own.rate is not None
        and abs(shared.rate - own.rate) <= own.rate * 0.01
    )


def _within(value: object, most: float) -> bool:
    """A number (not a bool), finite and no further from 0 than ``most``."""
    return type(value) in (int, float) and abs(value) <= most  # type: ignore[arg-type]  # checked


def _number(value: Any) -> float:
    number = float(value.decode() if isinstance(value, bytes) else value)
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _text(value: Any) -> str:
    # Not UTF-8 (no state of ours): unreadable, as any malformed state, not an error that
    # sent every process to its fallback at each reservation.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class RedisStore:
    """The buckets in Redis (see the module header); this process's share when it is away.

    Args:
        shared: The connection, namespace and health flag.
        initial: The learning state a bucket starts with when Redis has none.
        clock: Monotonic seconds.
    """

    synchronous = False
    #: The longest pause read from Redis (the limiter sets its ``max_pause``): a value
    #: someone wrote there past it is cut to it.
    max_pause: float = DEFAULT_MAX_PAUSE

    def __init__(
        self,
        shared: SharedRedis,
        initial: dict[BucketName, Control],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = shared
        self._clock = clock
        self._initial = initial
        self._client_id = secrets.token_hex(8)
        self._local = LocalStore(clock, initial)  # the fallback, and the cache of state
        self._versions: dict[BucketName, int] = {name: -1 for name in initial}
        self._paused_until: dict[BucketName, float] = {name: -math.inf for name in initial}
        self._fallback = False
        self._warned: set[BucketName] = set()  # buckets told otherwise (_told_otherwise)
        # Limits told at runtime (set_control), to write over the shared state.
        self._told: dict[BucketName, Control] = {}
        self.live = 1

    def __repr__(self) -> str:
        return f"RedisStore({self._redis!r}, live={self.live})"

    @property
    def shared(self) -> bool:
        """Whether the buckets are shared through Redis right now."""
        return not self._fallback

    def _key(self, bucket: BucketName) -> str:
        return self._redis.key("bucket", bucket)

    def snapshot(self, bucket: BucketName) -> tuple[Control, int, float]:
        """Return the last learning state seen, its version and the pause end."""
        control, _, _ = self._local.snapshot(bucket)
        if self._fallback:
            return self._local.snapshot(bucket)
        return control, self._versions[bucket], self._paused_until[bucket]

    def _adopt(self, bucket: BucketName, raw: Any, version: int) -> None:
        if _text(raw):
            control = _decode(_text(raw))
            # Nor a rate slower than one request per max_pause, which the limiter does not
            # believe of a server either: whoever wrote it could hold every request.
            rate = None if control is None else control.rate
            if rate is not None and rate * self.max_pause < 1:
                control = None
            if control is not None and self._replaces(bucket, control):
                control = None  # written over at the next reservation (_tell)
            if control is not None:
                self._told_otherwise(bucket, control)
                self._local.set_control(bucket, control)
        self._versions[bucket] = version

    def set_control(self, bucket: BucketName, control: Control) -> None:
        """The limits changed (``set_rate_limits``): pace at ``control``, and share it.

        Written over the shared state at the next reservation (compare-and-set, again
        until it is written): a limit told at runtime is every process's.
        """
        self._local.set_control(bucket, control)
        self._initial = {**self._initial, bucket: control}  # not the caller's dict
        self._told[bucket] = control
        self._warned.discard(bucket)

    def _replaces(self, bucket: BucketName, shared: Control) -> bool:
        """Whether a limit told at runtime is still to be written over the shared state.

        ``set_rate_limits`` changed only this process's schedule: the shared bucket, whose
        TTL every reservation renews, went on pacing the fleet (this process included) at
        the old limit. Not when the shared state already paces at it. (A process that
        only *starts* told another limit follows the shared one, and says so once: a
        paced state may be the service's declared limit, lower than anyone was told.)
        """
        told = self._told.get(bucket)
        if told is None:
            return False
        if shared.phase == told.phase and _same_rate(shared, told):
            self._told.pop(bucket, None)
            return False
        return True

    async def _tell(self, bucket: BucketName) -> None:
        """Write a told limit over the shared state (compare-and-set at the version read)."""
        told = self._told.get(bucket)
        if told is None or self._fallback:
            return
        schedule = Schedule(rate=told.rate, tau=0.0, burst=1.0)  # only its rate is written
        version = self._versions[bucket]
        if await self.update(
            bucket, told, version, schedule=schedule, pause=0.0, tokens=None, written=True
        ):
            self._told.pop(bucket, None)
            logger.info(
                "the %s bucket shared through Redis now paces at this process's told limit, %.4g/s",
                bucket,
                (told.rate or 0.0) / PACING,
            )

    def _told_otherwise(self, bucket: BucketName, control: Control) -> None:
        """Warn once when the shared bucket paces at a told limit other than this process's.

        Processes that share a credential share one bucket, and its state is the first
        writer's: one told ``write=10`` beside one told ``write=100`` paced both at 9.9/s,
        and nothing said why.
        """
        own = self._initial[bucket]
        if (
            bucket in self._warned
            or own.phase != "paced"
            or control.phase != "paced"
            or own.rate is None
            or control.rate is None
            or _same_rate(control, own)
        ):
            return
        self._warned.add(bucket)
        logger.warning(
            "the %s bucket shared through Redis paces at %.4g/s (another process's told "
            "limit, or the service's); this one was told %.4g/s. Processes that share a "
            "credential share one limit: give them all the same rate_limits (a limit "
            "changed for all: set_rate_limits in one of them)",
            bucket,
            control.rate / PACING,
            own.rate / PACING,
        )

    def _share(self, schedule: Schedule) -> Schedule:
        """This process's share of the rate while Redis is away: no burst either.

        Never slower than one request per ``max_pause`` (unless the rate itself is), which
        the limiter does not believe of a server: a count of live clients written into
        Redis (100,000) held each of this process's requests half an hour once Redis went.
        """
        rate = schedule.rate
        if rate is None:
            return schedule
        slowest = 1 / self.max_pause if self.max_pause > 0 else 0.0
        share = max(rate / max(1, self.live), min(rate, slowest))
        return Schedule(rate=share, tau=schedule.tau, burst=1.0)

    def _go_local(self) -> None:
        if not self._fallback:
            self._fallback = True

    async def reserve_many(
        self, bucket: BucketName, schedule: Schedule, count: int, *, max_wait: float | None
    ) -> list[Slot] | float:
        """Reserve ``count`` slots one after another in Redis, in one round trip.

        Redis away, one slot in this process's share (see :class:`Store`).
        """
        shared = self._redis
        rate = schedule.rate
        control, _, _ = self._local.snapshot(bucket)
        version = -1 if self._fallback else self._versions[bucket]
        script = shared.script("reserve", _RESERVE)
        args = [
            "" if rate is None else repr(rate),
            repr(schedule.tau),
            repr(schedule.burst),
            "-1" if max_wait is None else repr(max_wait),
            repr(IDLE_GAP),
            repr(LATENESS),
            repr(METER_BIN),
            str(int(TTL * 1000)),
            str(version),
            _encode(control),
            self._client_id,
            repr(LIVE_WINDOW),
            str(count),
            repr(self.max_pause),
        ]
        keys = [self._key(bucket), shared.key("clients")]
        asked = self._clock()
        try:
            answer = await shared.call(lambda: script(keys=keys, args=args))
            reserved = self._reserved(bucket, answer, count)
            if bucket in self._told:
                await self._tell(bucket)
            return reserved
        except (RedisUnavailableError, ValueError, TypeError, IndexError) as exc:
            if not isinstance(exc, RedisUnavailableError) and not self._fallback:
                # Redis answers, but not what the script returns: said once, not per call
                # (SharedRedis says when Redis itself is away).
                logger.warning(
                    "the shared rate-limit state in Redis could not be read (%s); pacing "
                    "at this process's share until it can",
                    type(exc).__name__,
                )
            self._go_local()
            now = self._clock()
            if max_wait is not None:  # a Redis that hung took its time out of the wait
                max_wait = max(0.0, max_wait - (now - asked))
            local = self._local.take(bucket, self._share(schedule), now, max_wait=max_wait)
            if isinstance(local, float):
                return local
            local.tat = math.nan  # never released to Redis
            local.sent = self._local.sent(bucket)
            return [local]  # one: the fallback is in this process, and never waits on it

    def _reserved(self, bucket: BucketName, answer: Any, count: int) -> list[Slot] | float:
        now = self._clock()
        granted = int(answer[0])
        wait = _number(answer[1])
        paused = _number(answer[2])
        self._paused_until[bucket] = now + paused
        if not granted:
            return wait
        waits = [wait, *map(_number, answer[11])]
        if len(waits) != count:
            raise ValueError("not the slots asked for")
        busy, sent, backlogged = _number(answer[3]), _number(answer[4]), bool(int(answer[5]))
        tat, interval = _number(answer[9]), _number(answer[10])
        version, live = int(answer[6]), int(answer[8])
        # Read whole before sharing again: an answer that cannot be read keeps the
        # fallback, and its warning is said once, not at every reservation.
        self._fallback = False
        self._adopt(bucket, answer[7], version)
        self.live = max(1, live)
        control, _, _ = self._local.snapshot(bucket)
        return [
            Slot(
                wait=max(0.0, each),
                busy=busy + _booked(each, paused),
                sent=sent,
                backlogged=backlogged or index > 0,
                control=control,
                version=version,
                interval=interval,
                # Each slot moved tat on by one interval: after slot i, the last's less the rest.
                tat=tat - (count - 1 - index) * interval,
            )
            for index, each in enumerate(waits)
        ]

    async def release(self, bucket: BucketName, slot: Slot, count: int = 1) -> None:
        """Give reserved slots back, in Redis if they were reserved there (see :class:`Store`)."""
        if math.isnan(slot.tat):
            self._local.give_back(bucket, slot, count)
            return
        if not slot.interval:
            return
        shared = self._redis
        script = shared.script("release", _RELEASE)
        args = [repr(slot.tat), repr(slot.interval), str(count)]
        # A slot not given back is one request's worth of rate, no more.
        with contextlib.suppress(RedisUnavailableError):
            await shared.call(lambda: script(keys=[self._key(bucket)], args=args))

    async def update(
        self,
        bucket: BucketName,
        control: Control,
        version: int,
        *,
        schedule: Schedule,
        pause: float,
        tokens: float | None,
        written: bool = False,
    ) -> bool:
        """Compare-and-set the shared learning state; apply the pause and token cap.

        ``written``: write ``control`` even if this process holds it already (a limit
        told at runtime, which this process paces at before Redis has it).
        """
        now = self._clock()
        current, _, _ = self._local.snapshot(bucket)
        if self._fallback:
            return self._local.apply(
                bucket,
                control,
                self._local.snapshot(bucket)[1],
                schedule=self._share(schedule),
                pause=pause,
                tokens=tokens,
                now=now,
            )
        shared = self._redis
        script = shared.script("update", _UPDATE)
        args = [
            str(version),
            "" if control == current and not written else _encode(control),
            "" if schedule.rate is None else repr(schedule.rate),
            repr(pause),
            "" if tokens is None else repr(tokens),
            str(int(TTL * 1000)),
            repr(self.max_pause),
        ]
        try:
            answer = await shared.call(lambda: script(keys=[self._key(bucket)], args=args))
            replaced = bool(int(answer[0]))
            new_version = int(answer[1])
            self._paused_until[bucket] = self._clock() + _number(answer[3])
        except (RedisUnavailableError, ValueError, TypeError, IndexError):
            self._go_local()
            self._local.set_control(bucket, control)
            return self._local.apply(
                bucket,
                control,
                self._local.snapshot(bucket)[1],
                schedule=self._share(schedule),
                pause=pause,
                tokens=tokens,
                now=now,
            )
        if replaced:
            self._local.set_control(bucket, control)
            self._versions[bucket] = new_version
        else:
            self._adopt(bucket, answer[2], new_version)
        return replaced

    async def aclose(self) -> None:
        """Close the Redis connection if the client made it."""
        await self._redis.aclose()
