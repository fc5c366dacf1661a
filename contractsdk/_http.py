"""The SDK's own request and response types: what crosses the transport seam.

Everything above ``_transport.py`` works on these small values, never on aiohttp's, so the
client can run against :class:`contractsdk.testing.MockTransport` exactly as against the
network (the httpx pattern).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Literal

import attrs

__all__ = ["NOT_GIVEN", "Call", "Headers", "NotGiven", "Request", "Response", "SENSITIVE_HEADERS"]

#: Headers whose values are secrets: never printed, logged or kept on an error.
SENSITIVE_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie"}
)

#: Methods that only read: the read bucket's, and repeated, they change nothing at all.
READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
#: Methods that change nothing on the service, so replaying them is always safe.
IDEMPOTENT_METHODS: Final = READ_METHODS | {"PUT", "DELETE"}


class NotGiven(enum.Enum):
    """The type of :data:`NOT_GIVEN`: "use the client's default" (``None`` means "off")."""

    NOT_GIVEN = enum.auto()

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> Literal[False]:
        return False


NOT_GIVEN: Final = NotGiven.NOT_GIVEN


class Headers(Mapping[str, str]):
    """An immutable, case-insensitive mapping of HTTP headers.

    Its ``repr`` hides the values of :data:`SENSITIVE_HEADERS`, so a request can be logged or
    shown in a traceback without its credential.
    """

    __slots__ = ("_added", "_dict", "_sent", "_source")

    def __init__(self, headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = headers.items() if isinstance(headers, dict | Mapping) else headers
        self._dict: dict[str, tuple[str, str]] | None = {k.lower(): (k, v) for k, v in pairs}
        self._source: Mapping[str, str] | None = None
        # The last copy with_header() kept, and the last pairs _pairs_with() made.
        self._added: tuple[str, str, Headers] | None = None
        self._sent: tuple[str, str, tuple[tuple[str, str], ...]] | None = None

    @classmethod
    def _of(cls, items: dict[str, tuple[str, str]]) -> Headers:
        """Wrap an items dict (lower-case name → (name, value)) without copying it."""
        headers = _new(cls)
        headers._dict = items
        headers._source = headers._added = headers._sent = None
        return headers

    @classmethod
    def lazy(cls, source: Mapping[str, str]) -> Headers:
        """Wrap an immutable, case-insensitive mapping (aiohttp's), read when first needed.

        Most responses' headers are never read on the way to a model, so the transport
        saves building the index for them.
        """
        headers = _new(cls)  # every response's path: a third cheaper than cls.__new__(cls)
        headers._source = source
        headers._dict = headers._added = headers._sent = None
        return headers

    @property
    def _items(self) -> dict[str, tuple[str, str]]:
        items = self._dict
        if items is None:
            source = self._source or {}
            items = self._dict = {k.lower(): (k, v) for k, v in source.items()}
            self._source = None
        return items

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return {k.lower(): v for k, v in other.items()} == {
                k: v for k, (_, v) in self._items.items()
            }
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking mapping: not hashable, like dict

    def __reduce__(self) -> tuple[Any, ...]:
        return (Headers, (self.pairs(),))  # a lazy source (aiohttp's multidict) is not picklable

    def merged(self, other: Mapping[str, str]) -> Headers:
        """Return a copy with ``other``'s headers added or replacing these."""
        return Headers._of({**self._items, **{k.lower(): (k, v) for k, v in other.items()}})

    def has_any(self, names: Iterable[str]) -> bool:
        """Whether any of these lower-case names is present (lazy headers stay unread).

        A tuple is the fastest to give: the names are looked up one by one, in C.
        """
        source = self._source
        if source is not None:  # the case-insensitive source answers for any spelling
            return not source.keys().isdisjoint(names)
        return not self._items.keys().isdisjoint(names)

    def pick(self, names: frozenset[str]) -> dict[str, str]:
        """Return the headers of these lower-case names that are present, by those names.

        A plain dict for fast repeated lookups; lazy headers stay unindexed.
        """
        source = self._source
        if self._dict is None and source is not None:
            return {low: value for name, value in source.items() if (low := name.lower()) in names}
        items = self._items
        return {name: items[name][1] for name in names & items.keys()}

    def pairs(self) -> list[tuple[str, str]]:
        """Return the ``(name, value)`` pairs with their original spelling (a fast ``items``)."""
        return list(self._items.values())

    def _pairs_with(self, name: str, value: str) -> tuple[tuple[str, str], ...]:
        """Return the pairs :meth:`with_header` would hold, without making that copy.

        What a transport sends when the client adds its credential: the request (what
        hooks and errors see) keeps its headers as they were. The last pairs are kept, to
        return again for the same header and value (every GET adds the same credential to
        the same common headers).
        """
        sent = self._sent
        if sent is not None and sent[0] == name and sent[1] == value:
            return sent[2]
        items, low = self._items, name.lower()
        if low in items:  # replaced where it stood, as with_header() does
            pairs = tuple((name, value) if key == low else pair for key, pair in items.items())
        else:
            pairs = (*items.values(), (name, value))
        self._sent = (name, value, pairs)
        return pairs

    def with_header(self, name: str, value: str, *, keep: bool = True) -> Headers:
        """Return a copy with one header added or replaced (cheaper than :meth:`merged`).

        Args:
            name: The header's name.
            value: Its value.
            keep: Keep the copy, to return it again for the same header and value (False
                for a value used once, such as an idempotency key).
        """
        # Every GET adds the same credential to the same common headers, and headers never
        # change, so the last copy can be shared.
        added = self._added
        if added is not None and added[0] == name and added[1] == value:
            return added[2]
        items = self._items.copy()
        items[name.lower()] = (name, value)
        headers = Headers._of(items)
        if keep:
            self._added = (name, value, headers)
        return headers

    def without(self, *names: str) -> Headers:
        """Return a copy without the named headers."""
        dropped = {name.lower() for name in names}
        return Headers._of({k: v for k, v in self._items.items() if k not in dropped})

    def redacted(self) -> dict[str, str]:
        """Return a plain dict with the values of sensitive headers replaced by ``[redacted]``."""
        return {
            name: "[redacted]" if key in SENSITIVE_HEADERS else value
            for key, (name, value) in self._items.items()
        }

    def __repr__(self) -> str:
        return f"Headers({self.redacted()!r})"


def _to_headers(value: Mapping[str, str] | Headers) -> Headers:
    if type(value) is Headers:  # the usual case, without the ABC's isinstance machinery
        return value
    return value if isinstance(value, Headers) else Headers(value)


@attrs.frozen(kw_only=True)
class Request:
    """One HTTP request, as the transport will send it.

    Attributes:
        method: Upper-case HTTP method.
        url: The absolute URL.
        headers: Request headers (their ``repr`` hides credentials).
        content: The body bytes, or None.
        timeout: Seconds the transport may spend on this attempt, or None for no limit.
        extensions: Per-request data for the layers of the send sequence (not sent).
    """

    method: str
    url: str
    headers: Headers = attrs.field(factory=Headers, converter=_to_headers)
    # Not in the repr: a token request's body holds the client secret.
    content: bytes | None = attrs.field(default=None, repr=False)
    timeout: float | None = None
    extensions: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)

    @property
    def is_idempotent(self) -> bool:
        """Whether replaying the request is safe: an idempotent method or an Idempotency-Key."""
        return self.method in IDEMPOTENT_METHODS or "idempotency-key" in self.headers

    @property
    def path(self) -> str:
        """The URL's path, without scheme, host or query (safe to show in messages)."""
        rest = self.url.split("://", 1)[-1]
        slash = rest.find("/")
        path = rest[slash:] if slash >= 0 else "/"
        return path.split("?", 1)[0]

    @classmethod
    def _make(
        cls,
        method: str,
        url: str,
        headers: Headers,
        content: bytes | None,
        timeout: float | None,
        extensions: Mapping[str, Any],
    ) -> Request:
        """Make a request of values that need no conversion, on the send path.

        Every request and its per-attempt copy is made here: the slots are set directly,
        without ``__init__``, whose converter and factories would have nothing to do.
        """
        request = _new(cls)
        _set_method(request, method)
        _set_url(request, url)
        _set_request_headers(request, headers)
        _set_request_content(request, content)
        _set_timeout(request, timeout)
        _set_extensions(request, extensions)
        return request

    def with_header(self, name: str, value: str) -> Request:
        """Return a copy of this request with one header added or replaced."""
        headers = self.headers.with_header(name, value)
        return Request._make(
            self.method, self.url, headers, self.content, self.timeout, self.extensions
        )

    def json(self) -> Any:
        """Decode the body as JSON (``None`` when there is no body)."""
        return None if self.content is None else _loads(self.content)


@attrs.define(slots=True, eq=False)
class Call:
    """One logical call on its way through the send sequence: what the layers share.

    Made once per call by the client and handed down through the retry, auth, limiter and
    transport layers, instead of context variables: every attempt sees the same request
    (so the same Idempotency-Key), the same deadline and the same replay policy.

    Attributes:
        request: The request every attempt sends.
        deadline: The monotonic time no wait or attempt may start after (None: none).
        trust_key: Whether an Idempotency-Key makes the request safe to replay after an
            ambiguous failure: set by the client only under
            ``Retries(trust_idempotency_keys=True)`` (the service does not document that
            it honours the key), and never for callers that resolve unknown outcomes
            themselves (the bulk job reconciles by listing before anything is sent again).
        attempts: Attempts made so far.
    """

    request: Request
    deadline: float | None = None
    trust_key: bool = False
    attempts: int = 0

    @property
    def replayable(self) -> bool:
        """Whether the request may be sent again after an ambiguous failure."""
        request = self.request
        if request.method in IDEMPOTENT_METHODS:
            return True
        return self.trust_key and "idempotency-key" in request.headers


@attrs.frozen(kw_only=True)
class Response:
    """One HTTP response, fully read.

    Attributes:
        status_code: The HTTP status.
        headers: The response headers.
        content: The whole body.
        request: The request this answers.
    """

    status_code: int
    headers: Headers = attrs.field(factory=Headers, converter=_to_headers)
    content: bytes = b""
    request: Request | None = attrs.field(default=None, repr=False, eq=False)

    @property
    def is_success(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")

    @classmethod
    def _make(
        cls, status_code: int, headers: Headers, content: bytes, request: Request | None
    ) -> Response:
        """Make a response of values that need no conversion (the transport's, a copy's).

        The slots are set directly, as :meth:`Request._make` does.
        """
        response = _new(cls)
        _set_status_code(response, status_code)
        _set_response_headers(response, headers)
        _set_response_content(response, content)
        _set_request(response, request)
        return response

    def for_request(self, request: Request | None) -> Response:
        """Return this response as the answer to ``request`` (e.g. one without credentials)."""
        return Response._make(self.status_code, self.headers, self.content, request)

    def json(self) -> Any:
        """Decode the body as JSON.

        Raises:
            ValueError: The body is not JSON.
        """
        return _loads(self.content)


# The frozen classes' slot setters, for ``_make``: a slot's own descriptor sets it at half
# the cost of object.__setattr__, which looks the name up first.
_new = object.__new__
_set_method, _set_url, _set_request_headers, _set_request_content, _set_timeout = (
    Request.__dict__[name].__set__ for name in ("method", "url", "headers", "content", "timeout")
)
_set_extensions = Request.__dict__["extensions"].__set__
_set_status_code, _set_response_headers, _set_response_content, _set_request = (
    Response.__dict__[name].__set__ for name in ("status_code", "headers", "content", "request")
)


#: json's own scanner (in C), as ``json.loads`` ends up calling it for a whole document
#: (an attribute each decoder sets in ``__init__``, which typeshed does not declare).
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(content: bytes) -> Any:
    """Decode JSON; every way hostile bytes can fail is a ValueError.

    json raises ValueError for bad JSON (and UnicodeDecodeError, one), but RecursionError for
    arrays or objects nested deeper than the interpreter's recursion limit allows: a few KB
    of ``[[[[…`` would otherwise escape every caller's ``except ValueError``.
    """
    try:
        # RFC 8259 §8.1: JSON between systems is UTF-8; decoding first skips json's detection.
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return json.loads(content)  # another UTF encoding, detected by json
        # Every answer's path: the scanner at once, without json.loads's three Python
        # calls around it (a tenth of decoding a contract). A document it does not read
        # whole (whitespace around it, a BOM, not JSON at all) goes to json.loads, which
        # reads it or raises its own error.
        try:
            value, end = _scan_json(text, 0)
        except StopIteration:
            return json.loads(text)
        return value if end == len(text) else json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply to decode") from None
