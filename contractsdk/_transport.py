"""The one seam that does I/O: the only client module that imports aiohttp.

A transport turns a :class:`~contractsdk.Request` into a fully read
:class:`~contractsdk.Response`, or raises a :class:`~contractsdk.TransportError`. aiohttp's
exceptions are translated here and nowhere else, most specific first, because aiohttp's
own classes nest (``ConnectionTimeoutError`` is a ``ServerTimeoutError``,
``ClientConnectorDNSError`` a ``ClientConnectorError``). aiohttp's messages may quote what
the server sent (its parser quotes the bytes it could not read), and its exceptions hold
the request's headers: an SDK error names aiohttp's class, and its ``__cause__`` is a
stand-in of that class that holds none of them (:func:`_stand_in`).
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
import urllib.parse
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy

from ._exceptions import (
    CertificateVerificationError,
    ConfigurationError,
    ConnectError,
    ConnectTimeoutError,
    ReadError,
    ReadTimeoutError,
    ResponseValidationError,
    TransportError,
    client_closed,
)
from ._http import Headers, Request, Response

__all__ = [
    "MAX_RESPONSE_BYTES",
    "AiohttpTransport",
    "AsyncTransport",
    "HeadersSender",
    "headers_sender",
]

#: The most bytes of one answer read into memory, decompressed: past it a server's endless
#: body, or a gzip bomb (a megabyte that inflates to a gigabyte), cannot take the
#: process's memory. Far above any answer of the service (a signed PDF, a team's
#: contracts); ``AiohttpTransport(max_response_bytes=...)`` moves it.
MAX_RESPONSE_BYTES: Final = 128 * 1024 * 1024


@runtime_checkable
class AsyncTransport(Protocol):
    """Sends one request and returns its response; the client's only route to the network."""

    async def handle_async_request(self, request: Request) -> Response:
        """Send ``request`` and return the whole response.

        Raises:
            TransportError: No usable response (a subclass says whether it was sent).
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


#: Every response's headers are wrapped by this (bound once, not per response).
_lazy_headers = Headers.lazy

#: A timer may run this early (the loop runs what is due within its clock's resolution).
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


class _Deadline:
    """One attempt's deadline, while the attempt runs (see :class:`_Deadlines`)."""

    __slots__ = ("cancelling", "expired", "queue", "task", "timeout", "when")

    def __init__(
        self, task: asyncio.Task[Any], timeout: float, when: float, queue: dict[_Deadline, None]
    ) -> None:
        self.task = task
        self.timeout = timeout  # its queue's key in _Deadlines._queues
        self.when = when
        self.queue = queue
        self.expired = False
        # Cancellations already asked of the task, not the timeout's (Python 3.11+ counts
        # them, so that the timeout's own can be told from another's).
        if sys.version_info >= (3, 11):
            self.cancelling = task.cancelling()
        else:  # a task class may count them before 3.11 too (the taskgroup backport's)
            counted = getattr(task, "cancelling", None)
            self.cancelling = 0 if counted is None else counted()


class _Deadlines:
    """Every attempt's total timeout on one loop timer, not one timer per request.

    aiohttp's own total timeout costs each request a timer (a ``TimerHandle`` pushed on
    the loop's heap, then cancelled and purged, and a timer context entered at each read):
    about 6 µs of CPU, a tenth of a plain aiohttp GET (issue 8). Here an attempt is an entry
    in the queue of its timeout value, where deadlines come in the order they are set, and
    one timer, set for the earliest deadline, cancels each attempt past its own, as
    ``asyncio.timeout`` does; :meth:`end` says whether a cancellation was the timeout's.

    Invariant: the only empty queue kept is the newest one (``_newest``). A queue that
    empties is dropped there and then, except the newest, which waits for the next attempt
    of its timeout: a caller making one call at a time with the client's one timeout would
    otherwise make and drop a queue per call (measured: a third more CPU for start and
    end). It goes when a queue of another timeout is made, or when the timer fires.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queues: dict[float, dict[_Deadline, None]] = {}
        self._newest: dict[_Deadline, None] | None = None  # the queue made last
        self._newest_timeout = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def start(self, task: asyncio.Task[Any], timeout: float) -> _Deadline:
        """Start the deadline of the attempt ``task`` makes now, ``timeout`` seconds away."""
        loop = task.get_loop()
        if loop is not self._loop:  # a first use, or a new event loop: nothing to carry over
            self.close()
            self._loop = loop
        queue = self._queues.get(timeout)
        if queue is None:
            newest = self._newest
            if newest is not None and not newest:
                self._drop(self._newest_timeout, newest)
            queue = self._queues[timeout] = {}
            self._newest, self._newest_timeout = queue, timeout
        deadline = _Deadline(task, timeout, loop.time() + timeout, queue)
        queue[deadline] = None
        if deadline.when < self._timer_at:  # none set yet, or a shorter timeout than before
            self._set_timer(deadline.when)
        return deadline

    def end(self, deadline: _Deadline) -> bool:
        """End an attempt's deadline; return whether the attempt's cancellation was the timeout.

        Called once per :meth:`start`, however the attempt ended. False when the deadline
        was not reached, or when the task was also cancelled by someone else (told where
        tasks count their cancellations, as from Python 3.11): then the cancellation goes on.
        """
        if not deadline.expired:
            queue = deadline.queue
            del queue[deadline]
            # Dropped now, not left for the timer: with a timeout of its own per call (the
            # time left of a caller's budget), empty queues would pile up until it fires.
            if not queue and queue is not self._newest:
                self._drop(deadline.timeout, queue)
            return False
        if sys.version_info >= (3, 11):
            return deadline.task.uncancel() <= deadline.cancelling
        uncancel = getattr(deadline.task, "uncancel", None)
        return True if uncancel is None else uncancel() <= deadline.cancelling

    def close(self) -> None:
        """Forget every deadline and stop the timer (the transport is closed)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at = math.inf
        self._queues = {}
        self._newest = None

    def _drop(self, timeout: float, queue: dict[_Deadline, None]) -> None:
        """Forget an empty queue, unless close() has already (a new one of its timeout stays)."""
        if self._queues.get(timeout) is queue:
            del self._queues[timeout]

    def _set_timer(self, when: float) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._expire)
        self._timer_at = when

    def _expire(self) -> None:
        """Cancel every attempt past its deadline, and set the timer for the next one."""
        assert self._loop is not None
        self._timer = None
        self._timer_at = math.inf
        now = self._loop.time() + _CLOCK_RESOLUTION
        earliest = math.inf
        for timeout, queue in list(self._queues.items()):
            while queue:
                deadline = next(iter(queue))  # the earliest of this timeout's
                if deadline.when > now:
                    earliest = min(earliest, deadline.when)
                    break
                del queue[deadline]
                deadline.expired = True
                deadline.task.cancel()
            if not queue:  # a timeout no attempt uses now: not kept for ever
                del self._queues[timeout]
        if earliest < math.inf:
            self._set_timer(earliest)


class AiohttpTransport:
    """The default transport: one pooled :class:`aiohttp.ClientSession` per client.

    Args:
        connect_timeout: Seconds to wait for a connection.
        max_connections: The pool's connection limit.
        session: A session to use instead of making one; the caller then owns (and closes) it.
            Clients of several credentials may share one (the credential goes with each
            request, not the session): make it with ``cookie_jar=aiohttp.DummyCookieJar()``,
            or a cookie one answer sets is sent with the other credentials' requests.
        trust_env: Take proxies (and their ``~/.netrc`` credentials) from the environment.
        max_response_bytes: The most bytes of an answer read, decompressed (None: no
            limit). A success past it raises :class:`ResponseValidationError` (for a
            create, the contract may exist: the bulk job reconciles such rows); an error
            answer past it keeps its first ``max_response_bytes`` and its meaning.
    """

    def __init__(
        self,
        *,
        connect_timeout: float | None = 10.0,
        max_connections: int = 100,
        session: aiohttp.ClientSession | None = None,
        trust_env: bool = False,
        max_response_bytes: int | None = MAX_RESPONSE_BYTES,
    ) -> None:
        if max_response_bytes is not None and (
            type(max_response_bytes) is not int or max_response_bytes < 1
        ):
            raise ConfigurationError("max_response_bytes must be a positive integer, or None")
        self._max_response_bytes = max_response_bytes
        self._connect_timeout = connect_timeout
        self._trust_env = trust_env
        self._loop: asyncio.AbstractEventLoop | None = None
        self._max_connections = max_connections
        self._session = session
        self._owns_session = session is None
        self._closed = False
        self._timeouts: dict[float | None, aiohttp.ClientTimeout] = {}
        # The total timeout is kept by _deadlines: aiohttp is given none (a timer less).
        self._no_total = self._total(None)
        self._deadlines = _Deadlines()
        # The last headers sent and aiohttp's form of them (see _send_with_headers).
        self._last_headers: tuple[Sequence[tuple[str, str]], CIMultiDictProxy[str]] | None = None

    def unclosed(self) -> bool:
        """Whether an aiohttp session of its own is open: its connections need ``aclose()``."""
        session = self._session
        return self._owns_session and session is not None and not session.closed

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                # Per-request timeouts are set in handle_async_request; no session-wide total.
                timeout=aiohttp.ClientTimeout(total=None),
                # Our Headers already hold what we send; no cookies: the API is stateless.
                cookie_jar=aiohttp.DummyCookieJar(),
                # Decompressed here, a chunk at a time up to max_response_bytes: before
                # 3.14, aiohttp inflated all it had read at once (a 250 KB gzip bomb read
                # in one go became 200 MiB before the limit could stop it).
                auto_decompress=False,
                headers={"Accept-Encoding": "gzip, deflate"},
                raise_for_status=False,
                trust_env=self._trust_env,
            )
            self._owns_session = True
            self._loop = asyncio.get_running_loop()
        return self._session

    async def handle_async_request(self, request: Request) -> Response:
        """Send the request with aiohttp and read the whole body."""
        return await self._send_with_headers(request, request.headers.pairs())

    async def _send_with_headers(
        self, request: Request, headers: Sequence[tuple[str, str]]
    ) -> Response:
        """Send ``request`` with ``headers`` instead of its own; the response answers ``request``.

        The client's path (see :func:`headers_sender`): it sends each request with its
        credential added to the headers, and hooks and errors see the request without it,
        so no copy of the request is made, nor of the response.

        Raises:
            TransportError: No usable response (a subclass says whether it was sent).
        """
        session = self._session
        if session is None or session.closed:
            if self._closed:  # a call that waited (for the limiter, a token) past aclose()
                raise client_closed()
            session = self._open()
        elif self._loop is not None and self._loop is not asyncio.get_running_loop():
            # Asked here, not left to aiohttp: without its timer per request it may even
            # answer on the wrong loop, through a connection the other loop opened.
            raise ConfigurationError(
                "this client was made on another event loop (each asyncio.run() makes "
                "a new one): make one client per event loop, inside it"
            )
        # aiohttp makes a CIMultiDict of any other form of headers, for every request. The
        # client sends the same pairs again (every GET with one token: Headers._pairs_with
        # keeps them), so the last one made is kept, to be sent as it is.
        last = self._last_headers
        if last is not None and last[0] is headers:
            sent = last[1]
        else:
            sent = CIMultiDictProxy(CIMultiDict(headers))
            if type(headers) is tuple:  # immutable: the same object holds the same pairs
                self._last_headers = (headers, sent)
        # The whole attempt is timed, not each socket read: a server that trickles a byte at
        # a time must not hold a call for ever. As aiohttp does, a timeout of 0 is none. Started
        # last, right before the `try` whose `finally` ends it: a deadline left behind would
        # cancel the caller's task later, wherever it then is.
        deadline = None
        timeout = self._no_total
        if request.timeout is not None and request.timeout > 0:
            task = asyncio.current_task()
            if task is not None:
                deadline = self._deadlines.start(task, request.timeout)
            else:  # a coroutine driven by hand, outside any task: aiohttp's own timer
                timeout = self._timeouts.get(request.timeout) or self._total(request.timeout)
        try:
            async with session.request(
                request.method,
                request.url,
                headers=sent,
                data=request.content,
                timeout=timeout,
                allow_redirects=False,
            ) as raw:
                limit = self._max_response_bytes
                length = raw.content_length
                encoded = "Content-Encoding" in raw.headers  # Content-Length is compressed
                if encoded and not session.auto_decompress:
                    content = await _read_at_most(raw, limit, request, decode=True)
                elif limit is None or (length is not None and length <= limit and not encoded):
                    content = await raw.read()
                else:  # a caller's session inflates for itself: counted as it comes
                    content = await _read_at_most(raw, limit, request, decode=False)
                return Response._make(raw.status, _lazy_headers(raw.headers), content, request)
        except asyncio.CancelledError:
            if deadline is None:
                raise
            ended, deadline = deadline, None
            if not self._deadlines.end(ended):
                raise
            # What aiohttp's own total timeout raised, translated as that was.
            expired = asyncio.TimeoutError(f"the attempt's {request.timeout} s timeout expired")
            raise _translate(expired, request) from expired
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            cause = _stand_in(exc)
            failed = _closed_under(request) if self._closed else _translate(exc, request)
        except Exception as exc:
            if not self._closed:
                raise
            # aiohttp 3.10 fails its own way when its session closes mid-request: its
            # connector gone, an AttributeError from inside it.
            cause, failed = _stand_in(exc), _closed_under(request)
        finally:
            if deadline is not None:
                self._deadlines.end(deadline)
        # Raised here, not in the except clause, where aiohttp's exception would be its
        # __context__ (hidden from tracebacks, but not from what walks the chain). And
        # cleared as it leaves: Python 3.10 still holds aiohttp's exception as the one
        # being handled here, past the ``async with`` it came out of, and made it the
        # context all the same (its message quotes the server's bytes).
        try:
            raise failed from cause
        finally:
            failed.__context__ = None

    def _total(self, timeout: float | None) -> aiohttp.ClientTimeout:
        """The total timeout of ``timeout`` seconds as aiohttp takes it, made once per value.

        At most ``_TIMEOUTS_KEPT`` values are kept: a call's deadline gives each attempt a
        timeout of its own (what is left of it), and every value kept grew the dict.
        """
        made = aiohttp.ClientTimeout(
            total=timeout, connect=None, sock_connect=self._connect_timeout, sock_read=None
        )
        if len(self._timeouts) < _TIMEOUTS_KEPT:
            self._timeouts[timeout] = made
        return made

    async def aclose(self) -> None:
        """Close the session if this transport made it; nothing is sent after this.

        A request made after it raises ConfigurationError; the session is not reopened.
        """
        self._closed = True
        self._deadlines.close()
        session, self._session = self._session, None  # None: the next request is refused
        if session is not None and self._owns_session and not session.closed:
            await session.close()


#: The most aiohttp timeouts a transport keeps made (the client's own, and a few more).
_TIMEOUTS_KEPT: Final = 16


def _closed_under(request: Request) -> TransportError:
    """What a request gets when aclose() closed its connection under it, mid-request."""
    error = ReadError(
        "the client was closed while the request was under way",
        method=request.method,
        url=request.path,
    )
    error.client_closed = True  # not retried: the retry would find the client closed
    return error


def _decoder(encoding: str, first: bytes) -> Any:
    """A zlib decompressor for a ``Content-Encoding``, or None to keep the bytes as they are.

    ``first``: the body's first bytes. "deflate" is zlib-wrapped as HTTP says, or raw
    deflate as some servers send it (aiohttp reads both too).
    """
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
    return None  # identity, or an encoding not asked for: the body as it came


async def _read_at_most(
    raw: aiohttp.ClientResponse, limit: int | None, request: Request, *, decode: bool
) -> bytes:
    """Read the body (inflating it if ``decode``), or stop past ``limit`` bytes of it.

    The connection is then closed, not reused.

    Raises:
        ResponseValidationError: A success's body is longer than ``limit``.
        ReadError: A compressed body that does not inflate.
    """
    most = (1 << 62) if limit is None else limit
    encoding = raw.headers.get("Content-Encoding", "") if decode else ""
    decoder = None
    chunks: list[bytes] = []
    size = 0
    length = raw.content_length
    if decode or length is None or length <= most or raw.status >= 300:
        try:
            async for data in raw.content.iter_any():
                if encoding and decoder is None:
                    decoder, encoding = _decoder(encoding, data), ""
                while data and size <= most:
                    if decoder is None:
                        piece, data = data, b""
                    else:  # at most what the limit has left (and one byte), however dense
                        piece = decoder.decompress(data, most - size + 1)
                        data = decoder.unconsumed_tail
                    size += len(piece)
                    chunks.append(piece)
                if size > most:
                    break
            if decoder is not None and size <= most:
                piece = decoder.flush()
                size += len(piece)
                chunks.append(piece)
        except zlib.error:
            raw.close()
            raise ReadError(
                "the answer's compressed body does not inflate",
                method=request.method,
                url=request.path,
            ) from None
    else:
        size = length
    if size <= most:
        return b"".join(chunks)
    if raw.status >= 300:  # an error keeps its meaning: its status, and a body cut short
        raw.close()
        return b"".join(chunks)[:most]
    raw.close()
    raise ResponseValidationError(
        f"the service's answer is larger than max_response_bytes ({limit:,} bytes); "
        "AiohttpTransport(max_response_bytes=...) takes a larger limit",
        errors=[f"$: more than {limit:,} bytes"],
        method=request.method,
        url=request.path,
    )


#: Sends a request with the given headers in place of its own; the response answers it.
HeadersSender = Callable[[Request, Sequence[tuple[str, str]]], Awaitable[Response]]


def headers_sender(transport: AsyncTransport) -> HeadersSender | None:
    """The transport's way to send a request with other headers, if it has one.

    :class:`AiohttpTransport`'s ``_send_with_headers``, unless a
    subclass changed how it handles a request; None for any other transport, to which
    the client hands a copy of each request with its credential.
    """
    if (
        isinstance(transport, AiohttpTransport)
        and type(transport).handle_async_request is AiohttpTransport.handle_async_request
    ):
        return transport._send_with_headers
    return None


#: What a timeout past the connection is raised as. Before 3.11, ``asyncio.TimeoutError``
#: (what aiohttp raises for the request's total timeout) is not the built-in one.
_READ_TIMEOUTS = (aiohttp.ServerTimeoutError, TimeoutError, asyncio.TimeoutError)


def _host(request: Request) -> str:
    """The host and port a request goes to, as a connection error names them.

    A base URL mistyped, or a ``CONTRACTSDK_BASE_URL`` not set, said only "could not
    connect to the service". (A base URL holds no user info: ``check_base_url``.)
    """
    parts = urllib.parse.urlsplit(request.url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or "the service"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


#: The variable OpenSSL reads its trusted CA certificates from (a PEM file), when set as
#: aiohttp makes its TLS context (on import): how the default transport trusts a private CA.
CA_BUNDLE_VAR: Final = "SSL_CERT_FILE"


def _verify_reason(exc: aiohttp.ClientConnectorCertificateError) -> str:
    """Why OpenSSL refused a certificate, in its own words (never the server's bytes).

    ``self-signed certificate``, ``certificate has expired``, ``Hostname mismatch, …``.
    """
    error = getattr(exc, "certificate_error", None)
    reason = getattr(error, "verify_message", None) or getattr(error, "reason", None)
    return str(reason) if reason else type(error).__name__


def _translate(exc: aiohttp.ClientError | asyncio.TimeoutError, request: Request) -> TransportError:
    """Return the SDK's error for an aiohttp failure (the most specific class first)."""
    where = {"method": request.method, "url": request.path}  # as APIError: the path only
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ConnectTimeoutError(f"timed out connecting to {_host(request)}", **where)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        # Not a ConnectError to retry: the same certificate fails the same way, and three
        # attempts only repeated "[SSL: CERTIFICATE_VERIFY_FAILED] … (after 3 attempts)".
        return CertificateVerificationError(
            f"the TLS certificate of {_host(request)} could not be verified: "
            f"{_verify_reason(exc)}. If the service's certificate comes from a private CA, "
            f"set {CA_BUNDLE_VAR} to a PEM file of that CA's certificates before the "
            "program starts",
            **where,
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ConnectError(f"could not connect to {_host(request)}: {exc.os_error}", **where)
    if isinstance(exc, _READ_TIMEOUTS):
        return ReadTimeoutError("timed out waiting for the service's answer", **where)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return ReadError(f"the connection broke: {type(exc).__name__}", **where)
    if isinstance(exc, aiohttp.ClientOSError):  # the system's words for an errno, or the class
        return ReadError(f"the connection broke: {exc.strerror or type(exc).__name__}", **where)
    if isinstance(exc, aiohttp.InvalidURL):  # the URL is the client's own
        return TransportError(f"invalid URL: {exc}", **where)
    if isinstance(exc, aiohttp.ClientResponseError):  # what came is not HTTP aiohttp can read
        return ReadError(f"the answer could not be read: {type(exc).__name__}", **where)
    # The class only: aiohttp's message may quote the server's bytes, cut where a
    # secret in them would no longer be found whole.
    return ReadError(f"the request failed: {type(exc).__name__}", **where)


#: Each aiohttp class's stand-in class, made once (see _stand_in).
_STAND_INS: dict[type[BaseException], type[BaseException]] = {}


def _stand_in(exc: BaseException) -> BaseException:
    """Return what an SDK error is chained to in place of aiohttp's ``exc``.

    An instance of a subclass of ``exc``'s class, so that ``isinstance`` tests of the
    ``__cause__`` hold, and a traceback names aiohttp's class and shows where it was
    raised; but with no message, no attributes and no chain of its own. aiohttp's message
    may quote the server's bytes (an echoed credential, cut where scrubbing cannot find
    it), its ``repr`` the request's headers (``Authorization``), and a traceback prints
    every exception in the chain.
    """
    made = _stand_in_class(type(exc))
    return made.__new__(made).with_traceback(exc.__traceback__)


def _stand_in_of(cls: type[BaseException]) -> BaseException:
    """A stand-in of aiohttp's class ``cls``, without a traceback (as unpickled)."""
    made = _stand_in_class(cls)
    return made.__new__(made)


def _stand_in_class(cls: type[BaseException]) -> type[BaseException]:
    """The subclass of aiohttp's class ``cls`` that its stand-ins are made of."""
    made = _STAND_INS.get(cls)
    if made is None:
        made = _STAND_INS[cls] = type(
            cls.__name__,
            (cls,),
            {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": f"{cls.__qualname__}, without what it said (see _stand_in).",
                "__init__": _no_init,
                "__str__": _withheld,
                "__repr__": lambda self: f"{cls.__qualname__}({_withheld(self)!r})",
                "__reduce__": lambda self: (_stand_in_of, (cls,)),
            },
        )
    return made


def _no_init(self: BaseException, *args: object, **kwargs: object) -> None:
    """A stand-in is made empty: nothing to set."""


def _withheld(self: BaseException) -> str:
    return "aiohttp's message is not shown: it may quote the server's answer"
