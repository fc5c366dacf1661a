"""Authentication: the bearer credential of each request, and the OAuth token cache.

A static :class:`~contractsdk.ApiKey` is sent as it is (:class:`StaticAuth`); OAuth 2.0
:class:`~contractsdk.ClientCredentials` (``_credentials.py``) are exchanged at
``{auth_url}/oauth/token`` for a bearer token (DESIGN.md §3; the body and answer follow
RFC 6749 §4.4 and Auth0, since the service documents no token endpoint).

Invariants of :class:`TokenAuth` (the token cache):

* At most one token request is in flight per credential (single flight). It runs as its own
  task, so a caller that is cancelled while waiting does not cancel it for the others.
* A cached token is used until its refresh time, which lies a margin (with jitter, so that
  many clients do not refresh together) before its expiry. Between the refresh time and the
  expiry, one caller refreshes while the others keep using the still-valid token; after the
  expiry, every caller waits for the refresh.
* ``invalidate(token)`` drops the cache only if it still holds that token, so a 401 that
  raced a refresh never throws away the new token.
* A failed token request, however it failed (no connection, a timeout, a 5xx, an answer
  that cannot be used), opens a backoff window: until it ends no new request starts, and
  callers get a copy of the same error at once (or the current token while it is still
  valid). The window starts at ``BACKOFF_INITIAL`` s, doubles with each failure in a row up
  to ``BACKOFF_MAX`` s, is jittered down by up to half, and a success closes it. Without it,
  each retry of each waiting call started a request of its own: 100 calls against a token
  endpoint that refused connections made over 80 requests in half a second.
* A token request is bounded in time (the client's ``timeout``, else ``TOKEN_TIMEOUT``),
  and a token lives at most ``MAX_TOKEN_LIFETIME``, whatever its ``expires_in`` says.
* Secrets (the key, the client secret, tokens) never reach a repr, a log line or an error.
  A token answer's secret fields (``SECRET_FIELDS``) are registered for scrubbing by the
  client before a hook or an error sees the answer (:func:`token_secrets`), and messages
  quote the answer with them replaced.
* Shared through Redis (``redis=``), the token is fetched once for every process that uses
  the credential: a process that needs one reads the shared token; if there is none fit
  for use, it takes a lock (:data:`_TAKE_LOCK`: free, or held by no lock of ours, as one
  without an expiry), asks the token endpoint, and stores the answer sealed
  (``_redis.seal``: encrypted and authenticated with a key derived from the client
  secret) until shortly before it expires; the others wait for it and read it. Redis
  away, or a lock holder that never delivers, and each process fetches its own, as
  without Redis.
* An access token is one that can be sent in a header (RFC 6750 §2.1: visible ASCII), or
  the answer is refused: a token with a line break or a NUL was cached, and every call
  failed with aiohttp's ValueError for as long as it lived.
* Closed (``aclose``), a call that waited for the token gets the closed client's
  ConfigurationError, not a CancelledError its own task was never asked for; no new token
  request starts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import logging
import math
import random
import re
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ._config import ENV_VARS
from ._credentials import ApiKey, ClientCredentials
from ._exceptions import (
    ERROR_SCAN,
    ContractSDKError,
    TokenRequestError,
    TransportError,
    client_closed,
    error_text,
)
from ._http import Headers, Request, Response
from ._once import wait_shared
from ._redact import REDACTED, Secrets, scrub, scrub_cut
from ._redis import RedisUnavailableError, SharedRedis, open_seal, seal

if TYPE_CHECKING:
    from ._config import Environment

__all__ = [
    "ApiKey",
    "Auth",
    "ClientCredentials",
    "StaticAuth",
    "TokenAuth",
    "redacted_token_response",
    "token_secrets",
]

logger = logging.getLogger("contractsdk.auth")


Send = Callable[[Request], Awaitable[Response]]


class Auth(Protocol):
    """What the client's send sequence asks of a credential."""

    def ready_token(self) -> str | None:
        """Return the token to send now if it is at hand, without waiting; else None."""
        ...

    async def token(self) -> str:
        """Return the bearer token to send now."""
        ...

    async def invalidate(self, token: str) -> bool:
        """Forget ``token`` after a 401; return whether a replay could succeed."""
        ...

    async def aclose(self) -> None:
        """Stop any work in flight."""
        ...


class StaticAuth:
    """An API key: the same token every time, and a 401 is final."""

    def __init__(self, credential: ApiKey) -> None:
        self._key = credential.key

    def ready_token(self) -> str:
        """Return the key."""
        return self._key

    async def token(self) -> str:
        """Return the key."""
        return self._key

    async def invalidate(self, token: str) -> bool:
        """A static key cannot be refreshed: never replay."""
        return False

    async def aclose(self) -> None:
        """Nothing to stop."""

    def __repr__(self) -> str:
        return "StaticAuth(key='[redacted]')"


@attrs.frozen
class _Token:
    value: str = attrs.field(repr=False)
    refresh_at: float
    expires_at: float
    sealed: str | None = attrs.field(default=None, repr=False)  # as stored in Redis
    started: float = 0.0  # when its life began, on this process's clock


#: Seconds a token request may take at most (less when the client's ``timeout`` is less).
TOKEN_TIMEOUT = 30.0
#: Seconds a process may hold the shared token lock: its token request's limit, and a
#: margin, so that the others wait for its answer instead of all asking at once.
TOKEN_LOCK_SECONDS = TOKEN_TIMEOUT + 5.0
#: The lifetime of a token whose answer gives no ``expires_in`` (RFC 6749 §5.1: optional).
DEFAULT_TOKEN_LIFETIME = 3600.0
#: The longest a token is used, whatever its ``expires_in`` says (24 h): a token cached for
#: ever would outlive its revocation.
MAX_TOKEN_LIFETIME = 86_400.0
#: The fields of a token answer (RFC 6749 §5.1, OpenID Connect) or request that are secret.
SECRET_FIELDS = frozenset({"access_token", "refresh_token", "id_token", "client_secret"})
#: The shared token and its life left in milliseconds (PTTL), in one round trip. A key of
#: another type holds no token (an error there counted as Redis away, for the limiter too).
_READ_TOKEN = """
local token = redis.pcall('GET', KEYS[1])
if type(token) == 'table' then token = false end
return {token, redis.call('PTTL', KEYS[1])}
"""
#: Take the token lock if it is free, or held by what is no lock of ours: one without an
#: expiry, or longer than a lock's (a lock left so made every token request of every
#: process wait TOKEN_LOCK_SECONDS for ever). ARGV: owner, milliseconds.
_TAKE_LOCK = """
local left = redis.call('PTTL', KEYS[1])
if left == -2 or left == -1 or left > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
#: Seconds between looks at the shared token while another process fetches it.
TOKEN_POLL = 0.05
#: What an access token may hold to be sent in a header: visible ASCII (RFC 6750 §2.1's
#: b64token is a part of it). aiohttp refuses control characters with a ValueError, and
#: sends other text as UTF-8, which a server reads as it likes.
_SENDABLE = re.compile(r"[\x21-\x7e]+")
_DELETE_IF_SAME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _secret_values(answer: object) -> list[str]:
    """The values of a token answer's secret fields (:data:`SECRET_FIELDS`), if it has any."""
    if not isinstance(answer, dict):
        return []
    return [v for k, v in answer.items() if k in SECRET_FIELDS and isinstance(v, str) and v]


def token_secrets(response: Response) -> list[str]:
    """Return the secrets a token endpoint's answer holds: its secret fields' values.

    The client registers them for scrubbing before a hook or an error sees the answer:
    its headers (an ``X-Debug-Token``) or other fields may echo them, and the access token
    is otherwise registered only once it is used.
    """
    if not any(name.encode() in response.content for name in SECRET_FIELDS):
        return []
    try:
        return _secret_values(response.json())
    except (ValueError, RecursionError):  # RecursionError: hostile nesting
        return []


def _hidden(text: str, values: Sequence[str]) -> str:
    """Return ``text`` with each of ``values`` (a token answer's secrets) replaced."""
    for value in values:
        text = text.replace(value, REDACTED)
    return text


def _reason(response: Response) -> str:
    """Say why a token response is unusable, from RFC 6749 §5.2 fields when present.

    Quoted as the redacted answer holds them: the answer's own secret fields (a refresh
    token an ``error_description`` quotes) replaced. Each field is scrubbed whole, then
    shortened: a secret cut short is not found. A body longer than ``ERROR_SCAN`` is not
    read.
    """
    try:
        body = None if len(response.content) > ERROR_SCAN else response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        hidden = _secret_values(body)
        # Only a scalar is a reason: str() of a hostile array may be huge, or recurse.
        parts = [
            scrub_cut(_hidden(str(body[k]), hidden), 200)
            for k in ("error", "error_description", "message")
            if body.get(k) and isinstance(body[k], str | int | float)
        ]
        if parts:
            return scrub_cut(": ".join(parts), 300)
    return "the body is not a JSON error" if response.content else "the body is empty"


#: The ``error`` codes of a token endpoint that refused the client itself (RFC 6749 §5.2;
#: Auth0 answers a wrong secret 401 ``access_denied``).
_CLIENT_REFUSED = frozenset({"invalid_client", "access_denied"})


def _refused_client(response: Response) -> bool:
    """Whether a token endpoint's error answer refuses the client id and secret.

    A 401 does (RFC 6749 §5.2: the client's authentication failed), whatever its body; a
    400 does when its ``error`` says so. Any other failure (a 5xx, an unknown audience) is
    not the pair's, and gets no hint to check it.
    """
    if response.status_code == 401:
        return True
    if response.status_code != 400 or len(response.content) > ERROR_SCAN:
        return False
    try:
        body = response.json()
    except (ValueError, RecursionError):
        return False
    return isinstance(body, dict) and body.get("error") in _CLIENT_REFUSED


def _client_hint(environment: Environment) -> str:
    """What a refused client id and secret tells the user to check (never the secret).

    Named as a Python caller gives them; the command line rewords it (``cli/_errors.py``)
    to the options or variables the user gave.
    """
    name = "this" if environment.name == "custom" else f"the {environment.name}"
    return (
        "check the client id and secret given (client_id= and client_secret= of "
        f"ClientCredentials, or {ENV_VARS['client_id']} and {ENV_VARS['client_secret']}): "
        f"they must be a pair {name} service issued"
    )


def _lifetime(expires_in: object) -> float:
    """Return the seconds a token may be used, from its answer's ``expires_in``.

    A lifetime over :data:`MAX_TOKEN_LIFETIME` is cut to it; one under a second counts as
    a second.

    Raises:
        ValueError: ``expires_in`` is not a finite positive number (NaN, infinite, zero,
            negative, a string, a bool); the message says which, after "expires_in".
    """
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float):
        raise ValueError("is not a number")
    # Python's json reads NaN and Infinity. An int is finite however large (10**400 is too
    # large for float(), so compare it as an int).
    if isinstance(expires_in, float) and not math.isfinite(expires_in):
        raise ValueError("is not finite")
    if expires_in <= 0:
        raise ValueError("is not positive")
    return max(1.0, float(min(expires_in, MAX_TOKEN_LIFETIME)))


def redacted_token_response(response: Response) -> Response:
    """Return a token endpoint's answer as hooks, logs and errors may show it.

    A JSON object keeps its other fields; the values of :data:`SECRET_FIELDS` become
    ``[redacted]``, and so does any copy of them elsewhere in the body. A body that is not a
    JSON object but names a secret field (a form-encoded answer, say) is dropped; any other
    body (an error page) is kept as it is.

    Args:
        response: The answer as the token endpoint sent it.

    Returns:
        A copy with the secrets removed (``response`` itself when it holds none).
    """
    content = response.content
    if not any(name.encode() in content for name in SECRET_FIELDS):
        return response
    try:
        answer = response.json()
    except (ValueError, RecursionError):  # RecursionError: hostile nesting
        answer = None
    shown = b""
    if isinstance(answer, dict):
        hidden = _secret_values(answer)
        fields = {k: "[redacted]" if k in SECRET_FIELDS else v for k, v in answer.items()}
        with contextlib.suppress(ValueError, RecursionError):
            text = json.dumps(fields)
            for value in hidden:  # an echo of a secret in another field
                text = text.replace(json.dumps(value)[1:-1], "[redacted]")
            shown = text.encode()
    return attrs.evolve(response, content=shown)


def _again(error: BaseException) -> BaseException:
    """Return a copy of a token request's failure, to raise to one more caller.

    Raising the one stored object to every caller during a backoff would add each caller's
    frames to its traceback, which would grow for as long as the failures last.
    """
    try:
        again = copy.copy(error)  # our errors pickle, and so copy (ContractSDKError.__reduce__)
    except Exception:  # a class that cannot be rebuilt from its state: the original, then
        return error
    again.__cause__ = error.__cause__
    return again


@attrs.frozen
class _Failure:
    """The last token request's failure, raised again to callers until ``retry_at``."""

    error: BaseException
    retry_at: float


class TokenAuth:
    """OAuth client credentials with a cached, single-flight, refreshed-early token.

    Failed token requests back off (see the module's invariants), and a token request is
    bounded by ``TOKEN_TIMEOUT`` unless the client sets its own ``timeout``.
    """

    #: Refresh this long before expiry at most (azure-core uses 300 s).
    REFRESH_MARGIN = 300.0
    #: Spread refreshes over up to this many seconds (azure-core #43720 uses 60 s).
    REFRESH_JITTER = 60.0
    #: Seconds without a token request after a first failure; doubled per failure in a row.
    BACKOFF_INITIAL = 0.5
    #: The longest backoff after failed token requests.
    BACKOFF_MAX = 30.0

    def __init__(
        self,
        credential: ClientCredentials,
        environment: Environment,
        send: Send,
        *,
        shared: SharedRedis | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._shared = shared
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._client_id = credential.client_id
        self._secret = credential.client_secret
        # Held for as long as this is: whatever an answer echoes, the secret is scrubbed.
        self._secrets = Secrets(credential.client_secret)
        self._token_url = (credential.auth_url or environment.auth_url).rstrip("/") + "/oauth/token"
        self._token_path = urllib.parse.urlsplit(self._token_url).path  # errors show the path
        self._audience = credential.audience or environment.audience
        self._refused = _client_hint(environment)
        self._send = send
        self._clock = clock
        self._rng = rng
        self._cached: _Token | None = None
        self._refresh: asyncio.Task[_Token] | None = None
        self._failure: _Failure | None = None  # the last request's, while backing off
        self._failures = 0  # failed requests in a row
        self._closed = False
        self.requests = 0  # token requests made, for tests and diagnostics

    def __repr__(self) -> str:
        return f"TokenAuth(client_id={self._client_id!r}, token_url={self._token_url!r})"

    def ready_token(self) -> str | None:
        """Return the cached token if it is not yet due for a refresh, else None."""
        cached = self._cached
        if cached is not None and self._clock() < cached.refresh_at:
            return cached.value
        return None

    async def token(self) -> str:
        """Return a valid token, refreshing it (once, for all callers) when due."""
        now = self._clock()
        cached = self._cached
        if cached is not None and now < cached.refresh_at:
            return cached.value
        if self._refresh is None:
            if self._closed:
                raise client_closed()
            failure = self._failure
            if failure is not None and now < failure.retry_at:
                # Backing off after a failed request: no new one yet, whoever asks.
                if cached is not None and now < cached.expires_at:
                    return cached.value
                raise _again(failure.error)
            self._refresh = asyncio.ensure_future(self._fetch())
            self._refresh.add_done_callback(self._refresh_done)
        elif cached is not None and now < cached.expires_at:
            # Advisory window: someone is refreshing; the current token is still good.
            return cached.value
        try:
            # A cancelled caller does not cancel the refresh the others wait on; one that
            # aclose() cancelled tells its waiters the client is closed.
            token = await wait_shared(self._refresh, client_closed)
        except ContractSDKError as exc:
            if not self._closed and cached is not None and self._clock() < cached.expires_at:
                # botocore's advisory window: a failed early refresh is not fatal.
                logger.warning("token refresh failed, using the current token: %s", exc)
                return cached.value
            raise
        return token.value

    def _refresh_done(self, task: asyncio.Task[_Token]) -> None:
        """Cache the fetched token, or open the backoff window after a failure."""
        if self._refresh is task:
            self._refresh = None
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self._cached = task.result()
            self._failure, self._failures = None, 0
            return
        self._failures += 1
        delay = self._backoff(self._failures)
        self._failure = _Failure(error, self._clock() + delay)
        logger.debug(
            "token request failed (%s); the next one in %.1f s at the earliest",
            type(error).__name__,
            delay,
        )

    def _backoff(self, failures: int) -> float:
        """Seconds without a token request after ``failures`` failed ones in a row.

        Exponential from ``BACKOFF_INITIAL`` to ``BACKOFF_MAX``, jittered down by up to half
        so that many clients that failed together do not all come back together; never
        less than half, so that a window always holds off the retries that follow.
        """
        cap = min(self.BACKOFF_MAX, self.BACKOFF_INITIAL * 2.0 ** min(failures - 1, 32))
        return cap * (0.5 + self._rng() / 2)

    async def invalidate(self, token: str) -> bool:
        """Drop ``token`` if it is still the cached one; a fresh one may then succeed.

        Shared through Redis, the shared copy goes too, if it is still that token.
        """
        cached = self._cached
        if cached is not None and cached.value == token:
            self._cached = None
            shared = self._shared
            if shared is not None and cached.sealed is not None:
                script = shared.script("token-delete", _DELETE_IF_SAME)
                key, sealed = shared.key("token"), cached.sealed
                with contextlib.suppress(RedisUnavailableError):
                    await shared.call(lambda: script(keys=[key], args=[sealed]))
        return True

    async def aclose(self) -> None:
        """Cancel a token request in flight; its waiters get the closed client's error."""
        self._closed = True
        task, self._refresh = self._refresh, None
        if task is not None and not task.done():
            task.cancel()
            # Closing: the refresh's outcome no longer matters.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _fetch(self) -> _Token:
        if self._shared is not None:
            token = await self._fetch_shared(self._shared)
            if token is not None:
                return token
        return await self._request()

    async def _fetch_shared(self, shared: SharedRedis) -> _Token | None:
        """The shared token, or one this process fetched for all; None: fetch alone."""
        client = shared.client
        key, lock = shared.key("token"), shared.key("token", "lock")
        give_up = self._clock() + TOKEN_LOCK_SECONDS
        owner = secrets.token_hex(8)
        take = shared.script("token-lock", _TAKE_LOCK)
        lock_args = [owner, int(TOKEN_LOCK_SECONDS * 1000)]
        while True:
            try:
                token = await self._read_shared(shared, key)
                if token is not None and self._clock() < token.refresh_at:
                    return token
                locked = await shared.call(lambda: take(keys=[lock], args=lock_args)) == 1
            except RedisUnavailableError:
                return None
            if locked:
                break
            if self._clock() >= give_up:
                return None  # the holder never delivered: fetch our own
            await self._sleep(TOKEN_POLL)
        try:
            # Another process may have stored its token and let go of the lock between our
            # read and our lock: read again before asking the token endpoint a second time.
            with contextlib.suppress(RedisUnavailableError):
                token = await self._read_shared(shared, key)
                if token is not None and self._clock() < token.refresh_at:
                    return token
            token = await self._request()
            sealed = self._seal(token)
            ttl = int((token.expires_at - self._clock()) * 1000)
            with contextlib.suppress(RedisUnavailableError):
                if ttl > 0:
                    await shared.call(lambda: client.set(key, sealed, px=ttl))
            return attrs.evolve(token, sealed=sealed)
        finally:
            release = shared.script("token-delete", _DELETE_IF_SAME)
            with contextlib.suppress(RedisUnavailableError):
                await shared.call(lambda: release(keys=[lock], args=[owner]))

    async def _read_shared(self, shared: SharedRedis, key: str) -> _Token | None:
        """The shared token, if one fit to use is there: its life left as Redis counts it.

        The key's own TTL (set from the fetching process's monotonic clock), not the
        expiry sealed in it (that process's wall clock): a host whose clock ran 16 s behind
        sent the shared token past its end, and met four times the 401s.
        """
        read = shared.script("token-read", _READ_TOKEN)
        answer = await shared.call(lambda: read(keys=[key], args=[]))
        if not isinstance(answer, list) or len(answer) != 2:
            return None
        stored, left = answer
        return self._unseal(stored, left / 1000 if isinstance(left, int) and left > 0 else None)

    def _seal(self, token: _Token) -> str:
        """Return the token as stored in Redis: sealed, then base64.

        ASCII, so that it reads back the same whatever the client's ``decode_responses``.
        """
        expires = self._wall_clock() + (token.expires_at - self._clock())
        # Its whole life too: a reader refreshes it that margin before its end, not a
        # margin taken from the life it has left (halved at each read, it never came).
        lifetime = token.expires_at - token.started
        data = json.dumps(
            {"access_token": token.value, "expires": expires, "lifetime": lifetime}
        ).encode()
        return base64.urlsafe_b64encode(seal(self._secret, data)).decode()

    def _unseal(self, stored: object, left: float | None = None) -> _Token | None:
        """Read a shared token; one not sealed with our secret (or malformed) is None.

        ``left``: seconds of life Redis gives the key; None: go by the sealed expiry.
        """
        try:
            text = stored.decode() if isinstance(stored, bytes) else stored
            if not isinstance(text, str):
                return None
            opened = open_seal(self._secret, base64.urlsafe_b64decode(text))
        except (ValueError, UnicodeDecodeError):
            return None
        if opened is None:
            return None
        try:
            data = json.loads(opened)
            value, expires = data["access_token"], float(data["expires"])
            lifetime = float(data.get("lifetime", 0.0))  # none before 2026-11-28: left
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        if not isinstance(value, str) or not _SENDABLE.fullmatch(value):
            return None
        if not math.isfinite(expires):
            return None
        if left is None:
            left = expires - self._wall_clock()
        if left <= 0:
            return None
        now = self._clock()
        if not math.isfinite(lifetime) or not left <= lifetime <= MAX_TOKEN_LIFETIME:
            lifetime = left
        return self._token(value, lifetime, now - (lifetime - left), sealed=text)

    def _token(
        self, value: str, lifetime: float, started: float, *, sealed: str | None = None
    ) -> _Token:
        """A token valid ``lifetime`` s from ``started``, refreshed early with jitter."""
        margin = min(self.REFRESH_MARGIN, lifetime / 2)
        jitter = self._rng() * min(self.REFRESH_JITTER, lifetime / 10)
        return _Token(
            value=value,
            refresh_at=started + lifetime - margin - jitter,
            expires_at=started + lifetime,
            sealed=sealed,
            started=started,
        )

    async def _request(self) -> _Token:
        body = {
            "grant_type": "client_credentials",
            "client_id": self._client_id,
            "client_secret": self._secret,
            "audience": self._audience,
        }
        request = Request(
            method="POST",
            url=self._token_url,
            headers=Headers({"Content-Type": "application/json", "Accept": "application/json"}),
            content=json.dumps(body).encode(),
            # Never unbounded: the client replaces this with its own timeout, if it has one.
            timeout=TOKEN_TIMEOUT,
        )
        self.requests += 1
        logger.debug("requesting an access token from %s", self._token_url)
        started = self._clock()
        try:
            response = await self._send(request)
        except TransportError as error:
            # Raised to the call that needed the token, which was not sent: the "may have
            # been processed" of a token request is not the call's.
            error.outcome_unknown = False
            raise
        if not response.is_success:
            raise self._error(
                f"the token endpoint answered {response.status_code}: {_reason(response)}",
                response,
                hint=self._refused if _refused_client(response) else "",
            )
        try:
            answer: Any = response.json()
            readable = True
        except ValueError:
            answer, readable = None, False
        if not readable:
            # Raised here, not in the except clause, where the JSONDecodeError would stay
            # as its __context__: its doc is the whole answer, which may echo a secret.
            raise self._error("the token endpoint's answer is not JSON", response)
        value = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(value, str) or not value:
            raise self._error("the token endpoint's answer has no access_token", response)
        if not _SENDABLE.fullmatch(value):
            # Refused, not cached: its value is not shown (the body shows it redacted).
            raise self._error(
                "the token endpoint's access_token cannot be sent in a header "
                "(it holds characters other than visible ASCII)",
                response,
            )
        token_type = answer.get("token_type", "Bearer")
        if not isinstance(token_type, str):
            raise self._error(f"unsupported token_type (a {type(token_type).__name__})", response)
        if token_type.lower() != "bearer":
            shown = scrub_cut(_hidden(token_type, _secret_values(answer)), 40)
            raise self._error(f"unsupported token_type {shown!r}", response)
        try:
            lifetime = _lifetime(answer.get("expires_in", DEFAULT_TOKEN_LIFETIME))
        except ValueError as exc:
            # Rejected rather than guessed: NaN was never cached, infinity cached for ever.
            raise self._error(f"the token endpoint's expires_in {exc}", response) from None
        logger.debug("received an access token valid for %.0f s", lifetime)
        return self._token(value, lifetime, started)

    def _error(self, message: str, response: Response, *, hint: str = "") -> TokenRequestError:
        # The body could echo the request; never let the secret through. Scrubbed whole,
        # then cut (the secret is registered: self._secrets).
        safe = message.replace(self._secret, "[redacted]")
        shown, cut = error_text(response)
        if cut:  # too long to parse for its secret fields: shown only if it names none
            shown = "" if any(name in shown for name in SECRET_FIELDS) else shown
        else:
            shown = redacted_token_response(response).text
        # A header may echo a token of the answer (X-Debug-Token), or the secret.
        hidden = [self._secret, *token_secrets(response)]
        headers = Headers(response.headers).redacted()
        error = TokenRequestError(
            safe,
            status_code=response.status_code,
            method="POST",
            url=self._token_path,
            body=scrub_cut(shown.replace(self._secret, "[redacted]"), 2000),
            headers={name: scrub(_hidden(value, hidden)) for name, value in headers.items()},
        )
        if hint:
            # Our own words, added once the message is scrubbed: the constructor scrubs
            # every registered secret, and a short one ("secret", "client") cut them up.
            error.args = (f"{error.message}; {hint}",)
        return error
