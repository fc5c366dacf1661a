"""Every error contractsdk raises on purpose.

The hierarchy::

    ContractSDKError                    root: nothing the SDK raises on purpose is outside it
    ├── ConfigurationError (ValueError) bad client settings or arguments, raised before any I/O
    │   └── JournalError                a bulk journal that cannot be used (another job's,
    │                                   locked, unreadable): contractsdk.bulk
    ├── TransportError                  no usable HTTP response
    │   ├── ConnectError                the request was NOT sent: safe to retry for any method
    │   │   └── CertificateVerificationError  the server's TLS certificate could not be
    │   │                               verified: not sent, and not retried
    │   ├── ConnectTimeoutError         (also TimeoutError) the connection was never made
    │   ├── ReadTimeoutError            (also TimeoutError) sent, but no answer in time:
    │   │                               a write MAY have been processed
    │   └── ReadError                   the connection dropped mid-response: a write MAY
    │                                   have been processed
    ├── APIError                        the service answered with an error status
    │   ├── BadRequestError             400
    │   ├── AuthenticationError         401, and a token endpoint that failed
    │   │   └── TokenRequestError       the OAuth token request itself failed
    │   ├── PermissionDeniedError       403
    │   ├── NotFoundError               404
    │   ├── ConflictError               409
    │   ├── UnprocessableEntityError    422
    │   ├── RateLimitError              429, with ``.retry_after`` and ``.wait``
    │   └── ServerError                 5xx
    ├── ResponseValidationError         a 2xx body that could not be read into a model
    ├── TermValidationError (ValueError) contract values that break the template's terms;
    │                                   raised before anything is sent
    ├── IdentityValidationError (ValueError) a party's identity values that break its
    │                                   identity fields; raised before anything is sent
    └── RateLimiterTimeoutError         (also TimeoutError) the limiter could not grant a
                                        request within the caller's ``timeout``

Errors carry the request's method and URL path, never its headers, so an API key or token
cannot reach a log through an exception. Every error pickles (``__reduce__`` below), because
job runners and process pools send exceptions between processes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ._headers import parse_rate_limit_headers, request_id
from ._http import IDEMPOTENT_METHODS, READ_METHODS
from ._redact import scrub, scrub_cut

if TYPE_CHECKING:
    from ._http import Response
    from .identity import IdentityProblem
    from .validation import TermProblem

__all__ = [
    "ContractSDKError",
    "ConfigurationError",
    "TransportError",
    "ConnectError",
    "CertificateVerificationError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ReadError",
    "APIError",
    "BadRequestError",
    "AuthenticationError",
    "TokenRequestError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "ServerError",
    "ResponseValidationError",
    "TermValidationError",
    "RateLimiterTimeoutError",
    "IdentityValidationError",
]


#: What a closed client (and anything it was still doing) raises.
CLIENT_CLOSED = "this client is closed; make a new one"


def client_closed() -> ConfigurationError:
    """The error a call to a closed client, or one still waiting when it closed, gets."""
    return ConfigurationError(CLIENT_CLOSED)


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ContractSDKError(Exception):
    """Base class of every error contractsdk raises on purpose.

    Attributes:
        attempts: How many attempts the failed call made (1 when it was not retried).
        outcome_unknown: True when the call's request (this attempt's, or an earlier one's)
            may have reached the service and been processed, so repeating the call could
            repeat its effect (make a second contract): look for it first. The message
            then says so.
    """

    attempts: int = 1
    outcome_unknown: bool = False

    def __init__(self, message: str) -> None:
        # Whatever a server echoed, no credential a client holds is ever shown.
        super().__init__(scrub(message))

    @property
    def message(self) -> str:
        """The human-readable message, as ``str(error)`` shows it."""
        return str(self.args[0]) if self.args else ""

    def __str__(self) -> str:
        text = self.message
        if self.attempts > 1:
            text += f" (after {self.attempts} attempts)"
        where = self._where()
        if where:
            text += f" ({where})"
        if self.outcome_unknown:
            text += "; the request may have been processed"
        return text

    def _where(self) -> str:
        """The request the error is about, as ``METHOD path``, if it names one."""
        method = self.__dict__.get("method")
        return f"{method} {self.__dict__.get('url', '')}" if method else ""

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructors do not survive the default pickling; rebuild from state.
        state = dict(self.__dict__)
        if isinstance(state.get("headers"), dict):  # kept as sent on the error, not in a copy
            state["headers"] = {name: scrub(value) for name, value in state["headers"].items()}
        return (_rebuild, (type(self), self.args, state))


class ConfigurationError(ContractSDKError, ValueError):
    """The client's settings or a call's arguments are wrong; nothing was sent."""


class TransportError(ContractSDKError):
    """No usable HTTP response arrived.

    Attributes:
        method: The HTTP method of the request.
        url: The request's path (no scheme, host or query string), as in :class:`APIError`.
        client_closed: The client's ``aclose()`` closed the connection under the request;
            it is not retried (the client is closed).
    """

    client_closed: bool = False
    #: Whether the failure may follow the request's processing (a read timeout, a broken
    #: connection): then a request that changes something may have changed it.
    _may_process: ClassVar[bool] = False

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.url = url

    @property  # computed, unless set (a retry, a token request)
    def outcome_unknown(self) -> bool:
        """True when the request may have been processed and it is not a read.

        A read timeout or a broken connection may follow the processing of the request;
        only a request that changes something (not a GET, HEAD or OPTIONS, which change
        nothing however often they are sent) may then have changed it.
        """
        unknown = self.__dict__.get("_unknown")
        if unknown is not None:
            return bool(unknown)
        return self._may_process and self.method not in READ_METHODS

    @outcome_unknown.setter
    def outcome_unknown(self, value: bool) -> None:
        self._unknown = value


class ConnectError(TransportError):
    """The connection could not be made, so the request was never sent."""


class CertificateVerificationError(ConnectError):
    """The server's TLS certificate could not be verified, so the request was never sent.

    Not retried: the same certificate fails the same way. The server is not the one the
    URL names, or its certificate is not one this system trusts (expired, self-signed, or
    issued by a private CA: name that CA's bundle in ``SSL_CERT_FILE``).
    """


class ConnectTimeoutError(TransportError, TimeoutError):
    """The connection was not made in time, so the request was never sent."""


class ReadTimeoutError(TransportError, TimeoutError):
    """The request was sent but no complete answer came in time.

    A write (not a GET, HEAD or OPTIONS) may have been processed: ``outcome_unknown``.
    """

    _may_process = True


class ReadError(TransportError):
    """The connection broke after the request was sent (reset, truncated body).

    A write (not a GET, HEAD or OPTIONS) may have been processed: ``outcome_unknown``.
    """

    _may_process = True


class APIError(ContractSDKError):
    """The service answered with an error status.

    Attributes:
        status_code: The HTTP status, or None for a token endpoint whose answer was unusable.
        method: The HTTP method of the request.
        url: The request's path (no scheme, host or query string).
        service_message: The ``message`` of the service's (Spring-style) error body, if any.
        error: The ``error`` of that body (e.g. ``"Not Found"``), if any.
        body: The start of the response body as text (at most 2,000 characters).
        headers: The response headers.
        request_id: The response's request id header, if the service sent one (printable:
            header bytes that are not UTF-8 are shown as backslash escapes).
    """

    #: Whether a 5xx may follow the processing of a POST or PATCH (not a token request's).
    _may_process: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        method: str = "",
        url: str = "",
        service_message: str | None = None,
        error: str | None = None,
        body: str = "",
        headers: Mapping[str, str] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.method = method
        self.url = url
        self.service_message = None if service_message is None else scrub(service_message)
        self.error = None if error is None else scrub(error)
        self.body = scrub(body)
        self.headers: dict[str, str] = dict(headers or {})
        self.request_id = None if request_id is None else _shown_id(request_id)

    @property  # computed, unless a retry set it
    def outcome_unknown(self) -> bool:
        """True for a 500, 502, 503 or 504 answer to a POST or PATCH, or set by a retry.

        The service may have processed the request before it failed, so sending it again
        could repeat it (make a second contract): look for its effect first. A call
        whose earlier attempt may have been processed ends with this set whatever its
        last answer (a 429 or 409 to the replay of a create whose answer was lost).
        """
        if self.__dict__.get("_unknown"):
            return True
        return (
            self._may_process
            and self.status_code in _MAYBE_PROCESSED
            and bool(self.method)
            and self.method not in IDEMPOTENT_METHODS
        )

    @outcome_unknown.setter
    def outcome_unknown(self, value: bool) -> None:
        self._unknown = value

    def _where(self) -> str:
        """The request, and the service's id for it: what its support asks for.

        In ``str(error)``, as a service's ``logger.exception`` writes it: kept only in the
        attribute, the id never reached the logs (Stripe's messages carry it too).
        """
        where = super()._where()
        shown = self.__dict__.get("request_id")
        if not shown:
            return where
        return f"{where}, request id {shown}" if where else f"request id {shown}"

    def __repr__(self) -> str:
        shown = self.__dict__.get("request_id")
        also = f", request_id={shown!r}" if shown else ""
        return (
            f"{type(self).__name__}(status_code={self.status_code!r}, "
            f"message={self.message!r}{also})"
        )


#: Statuses a service may answer after it processed the request.
_MAYBE_PROCESSED: Final = frozenset({500, 502, 503, 504})


#: The most characters of a request id kept (ids are tens of characters; a header, 8 KB).
MAX_ID = 200


def _shown_id(value: str) -> str:
    """A request id header as an error shows it: printable, scrubbed and short.

    Header bytes that are not UTF-8 arrive as lone surrogates, which no terminal can print
    (``print(error.request_id)`` raised UnicodeEncodeError): they become backslash
    escapes, and control characters ``?``.
    """
    text = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if not text.isprintable():
        text = "".join(char if char.isprintable() else "?" for char in text)
    return scrub_cut(text, MAX_ID)


class BadRequestError(APIError):
    """400: the service refused the request as malformed or invalid."""


class AuthenticationError(APIError):
    """401: the credential was refused, or no token could be obtained."""


class TokenRequestError(AuthenticationError):
    """The OAuth token endpoint failed or answered something unusable.

    The message gives the reason (status, ``error`` / ``error_description``); it never holds
    the client secret.
    """

    _may_process = False  # a token request made twice costs nothing


class PermissionDeniedError(APIError):
    """403: the credential is valid but may not do this (e.g. a team you are not in)."""


class NotFoundError(APIError):
    """404: no such user, team, template, term or contract."""


class ConflictError(APIError):
    """409: the request conflicts with the resource's state (or an idempotency key in use)."""


class UnprocessableEntityError(APIError):
    """422: the request was well formed but its content was refused."""


class RateLimitError(APIError):
    """429: the service's rate limit was exceeded.

    Attributes:
        retry_after: Seconds the service asked us to wait, if it said (``Retry-After``).
        wait: Seconds until the service has room, if it said: ``retry_after``, or the
            finer reset of the empty counter it rounds up to whole seconds
            (``X-RateLimit-Reset: 0.190`` beside ``Retry-After: 1``). A retry waits this.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        wait: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after
        self.wait = retry_after if wait is None else wait


class ServerError(APIError):
    """5xx: the service failed."""


#: The most problem lines a ResponseValidationError keeps (the rest are counted).
MAX_ERROR_LINES = 100


class ResponseValidationError(ContractSDKError):
    """A successful response's body could not be read into the expected model.

    Attributes:
        model: The name of the model being read.
        errors: One line per problem, each naming the field (e.g. ``$.id``).
        method: The HTTP method of the request.
        url: The request's path (no scheme, host or query string).
    """

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        errors: Sequence[str] = (),
        method: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message)
        self.model = model
        lines = list(errors[:MAX_ERROR_LINES])
        if len(errors) > MAX_ERROR_LINES:  # a hostile answer may hold a million bad items
            lines.append(f"… and {len(errors) - MAX_ERROR_LINES} more problems")
        self.errors = tuple(scrub(line) for line in lines)
        self.method = method
        self.url = url


class TermValidationError(ContractSDKError, ValueError):
    """Contract values break the template's terms; nothing was sent.

    Every problem is reported at once.

    Attributes:
        problems: The problems, each with its path, term, kind and message.
        identity_problems: The parties' identity problems found in the same check, for a
            contract made with its parties
            (:meth:`~contractsdk.ContractClient.create_contract_with_parties`), so that one
            error says all that is wrong; empty otherwise. The message lists them too.
    """

    def __init__(
        self,
        problems: Sequence[TermProblem],
        identity_problems: Sequence[IdentityProblem] = (),
    ) -> None:
        self.problems: tuple[TermProblem, ...] = tuple(problems)
        self.identity_problems: tuple[IdentityProblem, ...] = tuple(identity_problems)
        message = _listed(self.problems, "with the contract values")
        if self.identity_problems:
            message += "\nand " + _listed(self.identity_problems, "with the identity values")
        super().__init__(message)


class RateLimiterTimeoutError(ContractSDKError, TimeoutError):
    """The client's rate limiter could not grant a request within the given timeout.

    Attributes:
        bucket: ``"read"`` or ``"write"``.
        wait: The seconds the request would have had to wait.
    """

    def __init__(self, message: str, *, bucket: str = "", wait: float = 0.0) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.wait = wait


class IdentityValidationError(ContractSDKError, ValueError):
    """A party's identity values break its identity fields; nothing was sent.

    Every problem is reported at once (of every party, for a contract made with its
    parties).

    Attributes:
        problems: The problems, each with its party, path, field, kind and message.
    """

    def __init__(self, problems: Sequence[IdentityProblem]) -> None:
        self.problems: tuple[IdentityProblem, ...] = tuple(problems)
        super().__init__(_listed(self.problems, "with the identity values"))


def _listed(problems: Sequence[object], what: str) -> str:
    """``2 problems <what>:`` and a line per problem."""
    noun = "problem" if len(problems) == 1 else "problems"
    lines = "\n".join(f"  - {problem}" for problem in problems)
    return f"{len(problems)} {noun} {what}:\n{lines}"


_STATUS_ERRORS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}

#: The most bytes of an error body read for its message and ``body``. An error answer of
#: up to max_response_bytes (128 MiB) is kept, but what is shown of it is in its first
#: lines: parsing all of a 20 MB one took 560 MB.
ERROR_SCAN = 64 * 1024
#: Tags, and an HTML page's title. Neither pattern can scan past a "<" from each "<" it
#: tries, so that a page of "<" or "<title>" costs linear time, not quadratic.
_TAG = re.compile(r"<[^<>]*>")
_TITLE_OPEN = re.compile(r"<title[^<>]*>", re.IGNORECASE)
_TITLE_CLOSE = re.compile(r"</title\s*>", re.IGNORECASE)
#: A text's first line, as ``str.splitlines()[0]`` (without splitting all the others).
_FIRST_LINE = re.compile(r"[^\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]*")


def error_text(response: Response) -> tuple[str, bool]:
    """Return the start of an error answer's body as text, and whether it is cut short.

    At most :data:`ERROR_SCAN` bytes are decoded; a longer body's text is cut there, so it
    is scrubbed already, without the start of a secret at its end: what is made of it
    (a line, a title) may end where it ends.
    """
    content = response.content
    if len(content) <= ERROR_SCAN:
        return response.text, False
    text = content[:ERROR_SCAN].decode("utf-8", errors="replace")
    return scrub_cut(text, len(text), cut=True), True


def _service_message(response: Response, text: str, cut: bool) -> tuple[str | None, str | None]:
    """Return the (message, error) of an error body, whatever its shape.

    The service's error bodies are not documented (service-api.md §9); Spring's default
    ``{timestamp, status, error, message, path}`` is the likely shape, OAuth servers use
    ``{error, error_description}``, and proxies answer with HTML or plain text.

    Args:
        response: The error answer.
        text: The start of its body (:func:`error_text`).
        cut: The body is longer than ``text``: not JSON that can be read, then.

    Every part is scrubbed whole, then shortened (:func:`~contractsdk._redact.scrub_cut`).
    """
    text = text.strip()
    if not text:
        return None, None
    content_type = response.headers.get("content-type", "")
    if not cut and (text[:1] in "{[" or "json" in content_type):
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json can go
            body = None
        if isinstance(body, dict):
            message = body.get("message") or body.get("error_description") or body.get("detail")
            error = body.get("error") or body.get("title")
            return (
                # Only a scalar is a message: str() of a hostile array may be huge, or recurse.
                scrub_cut(str(message), 500)
                if message and isinstance(message, str | int | float)
                else None,
                scrub_cut(str(error), 100) if isinstance(error, str | int) and error else None,
            )
    if "html" in content_type or text[:1] == "<":
        opening = _TITLE_OPEN.search(text)
        closing = None if opening is None else _TITLE_CLOSE.search(text, opening.end())
        if opening is not None and closing is not None:
            found = text[opening.end() : closing.start()]
        else:
            found = _TAG.sub(" ", text)
        return (scrub_cut(" ".join(found.split()), 200) or None), None
    first = _FIRST_LINE.match(text)
    return scrub_cut(" ".join(first.group().split()) if first else "", 200), None


def error_from_response(response: Response, *, now: float) -> APIError:
    """Map a non-2xx response to its error class: the one place statuses become errors.

    Args:
        response: The error response.
        now: The wall-clock time, to read an HTTP-date ``Retry-After``.
    """
    status = response.status_code
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIError)
    text, cut = error_text(response)
    service_message, error = _service_message(response, text, cut)
    reason = service_message or error or _REASONS.get(status, "error")
    request = response.request
    kwargs: dict[str, Any] = {
        "status_code": status,
        "method": request.method if request else "",
        "url": request.path if request else "",
        "service_message": service_message,
        "error": error,
        "body": scrub_cut(text, 2000),
        "headers": response.headers,
        "request_id": request_id(response.headers),
    }
    if cls is RateLimitError:
        hints = parse_rate_limit_headers(response.headers, now=now)
        kwargs["retry_after"], kwargs["wait"] = hints.retry_after, hints.wait
    return cls(f"{status} {reason}", **kwargs)


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
