"""Redis, for what several processes or hosts that use one credential share.

The rate limiter's buckets (``_ratelimit/_redis.py``) and the OAuth token (``_auth.py``)
are shared through one :class:`SharedRedis`: a redis-py asyncio client with short timeouts
and no retries of its own, a namespace, and a health flag.

Invariants:

* Redis failing is never the service failing. Every call has a timeout and every error of
  redis-py (or of a Redis that answers nonsense) becomes :class:`RedisUnavailableError`,
  which the callers catch and answer by working alone; nothing of Redis reaches a caller
  of the SDK.
* The timeout is ``timeout`` (0.25 s by default), or more for a Redis measured far away:
  twice the smoothed time a call takes plus four times its spread (TCP's retransmission
  timer, RFC 6298), up to ``MAX_TIMEOUT``. Until a call has been measured it is
  ``MAX_TIMEOUT``: the first calls also connect, three round trips, and a Redis 70 ms
  away outlasted 0.25 s doing that, so it was never shared.
* One warning per outage: the first failure logs a warning and marks Redis down; calls made
  while it is down fail at once (no timeout paid per request). Every ``rejoin_after``
  seconds a PING in the background (up to ``MAX_TIMEOUT``, on no caller's path) looks for
  it; once one answers (a fresh connection made, its round trip measured), the next call
  tries, and its success marks Redis up and logs that.
* Keys live under ``contractsdk:{<hash>}:``, where the hash is of the environment's base
  URL and the credential's identity: the API key's own hash, or the OAuth client id. No
  secret is ever part of a key, and every key expires. The braces are a Redis Cluster hash
  tag: a script's keys must lie in one slot.
* The OAuth token is stored sealed (:func:`seal`): encrypted and authenticated with a key
  derived from the client secret, so a reader of Redis learns nothing, and a writer to it
  cannot make a client send a token of its choosing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import secrets
import ssl
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ._exceptions import ConfigurationError

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster

__all__ = [
    "RedisUnavailableError",
    "SharedRedis",
    "namespace",
    "open_seal",
    "seal",
]

logger = logging.getLogger("contractsdk.redis")

T = TypeVar("T")

#: Seconds one Redis call may take before Redis counts as away.
DEFAULT_TIMEOUT: Final = 0.25
#: The most a call may take however far Redis is measured to be, and what a PING looking
#: for a Redis that is away may take: past it, Redis counts as too slow to wait for.
MAX_TIMEOUT: Final = 0.5
#: Seconds between attempts to reach a Redis that is away.
REJOIN_AFTER: Final = 1.0
_INSTALL_HINT: Final = "sharing through Redis needs redis-py: pip install 'contractsdk[redis]'"
_UNREADABLE_URL: Final = (
    "redis URL not understood: check its host, port, database number and options, and "
    "percent-encode any '/', '#', '?' or '@' in the password (the URL is not shown: it "
    "may hold the password)"
)


class RedisUnavailableError(Exception):
    """Redis did not answer in time, or answered with an error (internal, never raised out)."""


def namespace(base_url: str, identity: str) -> str:
    """Return the key prefix shared by every client of one environment and credential.

    Args:
        base_url: The environment's base URL. Spellings of one origin name one namespace:
            the host's case, the scheme's default port and a trailing slash do not count
            (a URL already spelt without them is hashed as it is).
        identity: What identifies the credential without being it (a hash of an API key,
            or an OAuth client id).
    """
    digest = hashlib.sha256(f"{_origin(base_url)}\0{identity}".encode()).hexdigest()[:24]
    # The braces are a hash tag: in a Redis Cluster every key of the namespace lands in one
    # slot, as a script's keys must (elsewhere they are two characters of the name).
    return f"contractsdk:{{{digest}}}:"


def _origin(base_url: str) -> str:
    """``https://API.example:443/`` as ``https://api.example``: one spelling per origin."""
    try:
        parts = urllib.parse.urlsplit(base_url)
        port = parts.port
    except ValueError:  # not a URL a client takes (check_base_url): hashed as given
        return base_url
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if port is not None and port != {"https": 443, "http": 80}.get(parts.scheme.lower()):
        host = f"{host}:{port}"
    return f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/')}"


class SharedRedis:
    """A Redis connection for one client, with timeouts, a namespace and a health flag.

    Args:
        redis: A ``redis://`` (or ``rediss://``, ``unix://``) URL, or a
            ``redis.asyncio.Redis`` or ``RedisCluster`` the caller owns (it is then not
            closed here).
        prefix: The key prefix (:func:`namespace`).
        timeout: Seconds each call may take, at least (more for a Redis measured far:
            :attr:`call_timeout`).
        rejoin_after: Seconds between looks for a Redis that is away.
        clock: Monotonic seconds (injected for tests).

    Raises:
        ConfigurationError: redis-py is not installed, or the URL is not a Redis URL.
    """

    def __init__(
        self,
        redis: str | Redis | RedisCluster,
        *,
        prefix: str,
        timeout: float = DEFAULT_TIMEOUT,
        rejoin_after: float = REJOIN_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
        except ImportError:  # pragma: no cover - the extra is installed in the test env
            raise ConfigurationError(_INSTALL_HINT) from None
        self.prefix = prefix
        self.timeout = timeout
        self._longest = max(timeout, MAX_TIMEOUT)  # a call's timeout, far or not yet measured
        self._rejoin_after = rejoin_after
        self._clock = clock
        self._down_since: float | None = None
        self._next_try = 0.0
        self._closed = False  # after aclose(): every call fails at once, nothing reconnects
        self._trip: float | None = None  # seconds a call takes, smoothed (RFC 6298's SRTT)
        self._spread = 0.0  # how far calls stray from it (RTTVAR)
        self._looking: asyncio.Task[None] | None = None  # the PING for a Redis away
        self._found = False  # it answered: the next call tries
        if isinstance(redis, str):
            if not redis.lower().startswith(("redis://", "rediss://", "unix://")):
                raise ConfigurationError(
                    "redis must be a redis://, rediss:// or unix:// URL, or a "
                    "redis.asyncio.Redis or RedisCluster"
                )
            # Our own timeout and fallback decide; redis-py's ten retries with backoff
            # would hold a request for seconds on a dead Redis.
            # Each call's own timeout (call_timeout) is the one that counts.
            self._options: dict[str, Any] = {
                "socket_timeout": self._longest,
                "socket_connect_timeout": self._longest,
                "retry": Retry(NoBackoff(), 0),
                "max_connections": 32,
            }
            client: Redis | None
            try:
                client = aioredis.Redis.from_url(redis, **self._options)
            except Exception:  # redis-py's own, whose words may quote the URL
                client = None
            if client is not None and not _readable(redis, client):
                client = None
            if client is None:
                # redis-py's message quotes the part it could not read, which may be the
                # password (one with a "/" or "#" reads as the port): say where to look.
                # Raised here, not in the except clause, where redis-py's ValueError would
                # stay as its __context__ ("from None" only hides it from tracebacks).
                raise ConfigurationError(_UNREADABLE_URL)
            self.client: Redis | RedisCluster = client
            self._owned = True
            self._url: str | None = redis  # for a cluster client, if it turns out to be one
        elif isinstance(redis, aioredis.Redis | aioredis.RedisCluster):
            self.client = redis
            self._owned = False
            self._url = None
        else:
            raise ConfigurationError(
                "redis must be a URL, a redis.asyncio.Redis or a redis.asyncio.RedisCluster"
            )
        self._scripts: dict[str, _Script] = {}
        self._retired: list[Any] = []  # clients replaced while calls may still use them

    def __repr__(self) -> str:
        return f"<SharedRedis prefix={self.prefix!r} up={self.up}>"

    @property
    def up(self) -> bool:
        """Whether the last call reached Redis."""
        return self._down_since is None

    def key(self, *parts: str) -> str:
        """Return the full name of a key of this namespace."""
        return self.prefix + ":".join(parts)

    @property
    def call_timeout(self) -> float:
        """Seconds the next call may take: ``timeout``, or more for a Redis measured far."""
        if self._trip is None:  # nothing measured: it may be far, and the call connects
            return self._longest
        return min(self._longest, max(self.timeout, 2 * self._trip + 4 * self._spread))

    def script(self, name: str, lua: str) -> _Script:
        """Return the script ``name``: called as ``script(keys=[...], args=[...])``."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = _Script(self.client, lua)
        return script

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run one Redis call under the timeout; any failure is :class:`RedisUnavailableError`.

        While Redis is marked down, fail at once, and look for it in the background every
        ``rejoin_after`` seconds; the first call after it answered tries.
        """
        if self._closed:  # redis-py's pool would open a connection again, and leave it open
            raise RedisUnavailableError("closed")
        if self._down_since is not None:
            if not self._found:
                if self._looking is None and self._clock() >= self._next_try:
                    self._looking = asyncio.ensure_future(self._look())
                raise RedisUnavailableError("redis is away")
            self._found = False  # this call is the one that tries
        started = self._clock()
        try:
            result = await _within(make(), self.call_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # redis-py's errors, timeouts, nonsense from a proxy
            if not self._cluster_redirect(exc):
                self._failed(exc)
            raise RedisUnavailableError(type(exc).__name__) from None
        self._took(self._clock() - started)
        if self._down_since is not None:
            logger.warning(
                "Redis is back after %.1f s: rate limits and tokens are shared again",
                self._clock() - self._down_since,
            )
            self._down_since = None
        return result

    def _took(self, seconds: float) -> None:
        """Count one call's duration into the smoothed round trip and its spread."""
        trip = self._trip
        if trip is None:
            self._trip, self._spread = seconds, seconds / 2
        else:
            self._spread = 0.75 * self._spread + 0.25 * abs(seconds - trip)
            self._trip = 0.875 * trip + 0.125 * seconds

    async def _look(self) -> None:
        """PING a Redis that is away, on no caller's path; if it answers, let a call try.

        Its connection stays in the pool for that call, and its round trip (a reconnect
        included: two or three round trips) sets the timeout anew: Redis may be back
        further away than it was.
        """
        started = self._clock()
        try:
            await _within(self.client.ping(), self._longest)
        except Exception:  # still away (a cancellation by aclose is a BaseException)
            self._next_try = self._clock() + self._rejoin_after
        else:
            self._trip = None
            self._took(self._clock() - started)
            self._found = True
        finally:
            self._looking = None

    def _cluster_redirect(self, exc: BaseException) -> bool:
        """A URL that names one node of a Redis Cluster: use a cluster client of it from now.

        The node answers MOVED for keys in another node's slots (a namespace's keys share
        one slot, so two of three credentials, with three nodes). Not an outage: this call
        goes on alone, the next ones through the cluster. True if ``exc`` was that.
        """
        from redis.asyncio import RedisCluster

        if not _redirected(exc):
            return False
        if self._url is None or isinstance(self.client, RedisCluster):
            return isinstance(self.client, RedisCluster)  # a call begun before the switch
        self._retired.append(self.client)
        self.client = RedisCluster.from_url(self._url, **self._options)
        self._scripts.clear()
        logger.info("Redis is a cluster: the namespace's keys are reached through its nodes")
        return True

    def _failed(self, exc: BaseException) -> None:
        now = self._clock()
        self._next_try = now + self._rejoin_after
        if self._down_since is None:
            self._down_since = now
            # The exception's text may hold the URL and its password: name its type only.
            # Its share as it last saw the others: the whole limit if it never reached
            # Redis (a wrong password: "until it is back" never came, and the fleet ran
            # at K times the limit, with nothing said).
            refused = _refused(exc)
            described = _described(exc)
            if self._trip is None and _timed_out(exc) and _tls(self.client):
                # A Redis without TLS reads the handshake as the start of a command and
                # waits for the rest: it looks like a Redis that is not there.
                described += ", TLS: no handshake answer; check that this port serves TLS"
            logger.warning(
                "Redis %s (%s): this process paces alone at its share of the rate limit "
                "(all of it if it never reached Redis) until Redis %s",
                "refused this client" if refused else "is unreachable",
                described,
                "accepts it" if refused else "is back",
            )

    async def aclose(self) -> None:
        """Stop looking for Redis; close the connection pool if this object made it."""
        self._closed = True
        looking = self._looking
        if looking is not None:
            looking.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await looking
        if self._owned:
            for client in [*self._retired, self.client]:
                with contextlib.suppress(Exception):  # a dead connection: nothing to say
                    await client.aclose()


class _Script:
    """A Lua script: EVAL on its first call, EVALSHA after, EVAL again if Redis forgot it.

    redis-py's own scripts start with EVALSHA, and on NOSCRIPT load the script and call
    again: three round trips where one does, and with connecting (two more), past a call's
    timeout once a round trip to Redis takes 50 ms.
    """

    __slots__ = ("_client", "_known", "_lua", "_sha")

    def __init__(self, client: Redis | RedisCluster, lua: str) -> None:
        self._client = client
        self._lua = lua
        self._sha = hashlib.sha1(lua.encode(), usedforsecurity=False).hexdigest()
        self._known = False  # EVAL'd once: Redis caches it by its SHA1

    async def __call__(self, *, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import NoScriptError

        if self._known:
            try:
                return await self._client.evalsha(self._sha, len(keys), *keys, *args)
            except NoScriptError:  # a restarted or flushed Redis, or another node
                self._known = False
        result = await self._client.eval(self._lua, len(keys), *keys, *args)
        self._known = True
        return result


# --------------------------------------------------------------------------------------
# Sealing the shared token: HMAC-SHA256 in counter mode, then HMAC over the ciphertext.

_NONCE: Final = 16
_TAG: Final = 32


def _keys(secret: str) -> tuple[bytes, bytes]:
    root = hashlib.sha256(b"contractsdk token seal\0" + secret.encode()).digest()
    return (
        hmac.new(root, b"encrypt", hashlib.sha256).digest(),
        hmac.new(root, b"authenticate", hashlib.sha256).digest(),
    )


def _stream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = (length + 31) // 32
    return b"".join(
        hmac.new(key, nonce + index.to_bytes(4, "big"), hashlib.sha256).digest()
        for index in range(blocks)
    )[:length]


def seal(secret: str, plaintext: bytes) -> bytes:
    """Encrypt and authenticate ``plaintext`` with a key derived from ``secret``."""
    encrypt, authenticate = _keys(secret)
    nonce = secrets.token_bytes(_NONCE)
    body = _xor(plaintext, _stream(encrypt, nonce, len(plaintext)))
    tag = hmac.new(authenticate, nonce + body, hashlib.sha256).digest()
    return nonce + body + tag


def open_seal(secret: str, sealed: bytes) -> bytes | None:
    """Return what :func:`seal` sealed, or None if it was not sealed with this secret."""
    if len(sealed) < _NONCE + _TAG:
        return None
    encrypt, authenticate = _keys(secret)
    nonce, body, tag = sealed[:_NONCE], sealed[_NONCE:-_TAG], sealed[-_TAG:]
    expected = hmac.new(authenticate, nonce + body, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, expected):
        return None
    return _xor(body, _stream(encrypt, nonce, len(body)))


def _readable(url: str, client: Redis) -> bool:
    """Whether redis-py read all of a URL it took: a database number, options it knows.

    It takes ``/notanumber`` as database 0, and an option it does not know (a misspelt
    ``?ssl_ca_cert=``) fails only when it connects, as a ``TypeError`` that reads as Redis
    being unreachable; so do ``unix://name.sock`` (no path: the name is the host part) and
    ``?ssl_min_version=99``. A connection object is made here, not connected, to find out.
    """
    lowered = url.lower()
    if lowered.startswith(("redis://", "rediss://")):
        database = urllib.parse.unquote(urllib.parse.urlsplit(url).path).replace("/", "")
        if database and not (database.strip().isascii() and database.strip().isdigit()):
            return False
    pool = client.connection_pool
    options = pool.connection_kwargs
    if lowered.startswith("unix:") and not options.get("path"):
        return False  # unix://name.sock: the name read as a host, and no socket path
    try:
        pool.connection_class(**options)
        if options.get("ssl_min_version") is not None:
            ssl.TLSVersion(options["ssl_min_version"])  # taken as any number until it connects
    except Exception:  # an option it does not take, or a value it refuses
        return False
    return True


def _redirected(exc: BaseException) -> bool:
    """A cluster node's MOVED or ASK (redis-py 5.0 raises them as a plain ResponseError)."""
    from redis.exceptions import AskError, MovedError, ResponseError

    if isinstance(exc, MovedError | AskError):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(("MOVED ", "ASK "))


#: redis-py's errors for an answer that refuses the client: a wrong password or user
#: (AuthenticationError, a ConnectionError in redis-py), a user without the commands, a
#: database number the server does not have (ResponseError). Redis is there.
_REFUSALS: Final = frozenset({"ResponseError", "AuthenticationError", "AuthorizationError"})


def _refused(exc: BaseException) -> bool:
    """Redis answered, and refused this client: a setting to fix, not an outage."""
    return any(kind.__name__ in _REFUSALS for kind in type(exc).__mro__)


def _timed_out(exc: BaseException) -> bool:
    """The call timed out: ours (two kinds before 3.11), or redis-py's own connect timeout.

    Before any call was measured, both are ``MAX_TIMEOUT``, and on a loaded machine
    redis-py's fired first now and then: a TLS client of a plain Redis was then not told
    of the handshake that got no answer.
    """
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return isinstance(exc, (TimeoutError, asyncio.TimeoutError, RedisTimeoutError))


def _tls(client: Redis | RedisCluster) -> bool:
    """Whether the client speaks TLS to Redis (a ``rediss://`` URL, or ``ssl=True``)."""
    from redis.asyncio import RedisCluster
    from redis.asyncio.connection import SSLConnection

    if isinstance(client, RedisCluster):  # the settings of its nodes' connections
        kind = client.nodes_manager.connection_kwargs.get("connection_class")
    else:
        kind = client.connection_pool.connection_class
    return isinstance(kind, type) and issubclass(kind, SSLConnection)


def _described(exc: BaseException) -> str:
    """The error's type, and for a failed TLS handshake OpenSSL's reason (never the text).

    A rediss:// URL to a Redis whose certificate the system does not trust fails with a
    bare ConnectionError; what OpenSSL says (``self-signed certificate in certificate
    chain``) is one of its own fixed phrases, no part of the URL.
    """
    from redis.exceptions import OutOfMemoryError

    if _redirected(exc):  # a plain Redis object of the caller's, on a cluster node
        return f"{type(exc).__name__}: a Redis Cluster node; pass redis= a RedisCluster"
    if isinstance(exc, OutOfMemoryError):  # not the URL's fault: said so, not "check it"
        return f"{type(exc).__name__}: Redis is at its maxmemory and evicts none of our keys"
    if _refused(exc):
        return (
            f"{type(exc).__name__}: Redis answered but refused the client; check the URL's "
            "user, password and database number"
        )
    cause: BaseException | None = exc
    for _ in range(5):  # redis-py chains the ssl module's error under its own
        if cause is None:
            break
        if isinstance(cause, ssl.SSLError):
            reason = getattr(cause, "verify_message", None) or cause.reason
            if isinstance(reason, str) and reason.isprintable() and len(reason) < 100:
                return f"{type(exc).__name__}, TLS: {reason}"
            break
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__


def _xor(data: bytes, stream: bytes) -> bytes:
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


async def _within(awaitable: Awaitable[T], seconds: float) -> T:
    """Await under a timeout, without the task ``asyncio.wait_for`` wraps it in before 3.12.

    Every Redis call takes this path: the extra task cost a third of its CPU (3.11).
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover (3.10)
