"""Wire helpers of the emulator: Spring-style errors, JSON bodies, ids and time formats.

Everything here is about how the service writes and reads bytes on the wire
(service-api.md §5, §7, §9); nothing here knows about users, teams or contracts.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any, TypeGuard, TypeVar

from aiohttp import web

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_ID_RE = re.compile(r"-?[0-9]{1,20}")
_JSON_TYPES = ("application/json",)
_FLOAT_MAX = int(sys.float_info.max)
_HOST_RE = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::[0-9]{0,5})?")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class ApiError(Exception):
    """An error the emulator answers with a Spring Boot error body (service-api.md §9).

    Args:
        status: The HTTP status code.
        message: The human-readable ``message`` of the body; it names the offending
            term, id or key so that a client's error can show it.
        headers: Extra response headers (``WWW-Authenticate``, ``Retry-After`` …).
    """

    def __init__(
        self, status: int, message: str, *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})

    def response(self, path: str) -> web.Response:
        """Render the error as a Spring-style JSON response.

        Args:
            path: The request path, echoed in the body's ``path`` key.

        Returns:
            The response to send.
        """
        return error_response(self.status, self.message, path, headers=self.headers)


def utc_now() -> datetime:
    """Return the current time, timezone-aware in UTC.

    Returns:
        ``datetime.now(timezone.utc)``.
    """
    return datetime.now(timezone.utc)


def iso_millis(moment: datetime) -> str:
    """Format a time as Jackson writes a date-time: ``2022-06-16T15:16:27.980+00:00``.

    Args:
        moment: A timezone-aware time.

    Returns:
        ISO 8601 with milliseconds and a ``+00:00`` offset.
    """
    moment = moment.astimezone(timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}+00:00"


def team_time(moment: datetime) -> str:
    """Format a time as the service writes a team's ``created`` (service-api.md §7 Teams).

    Args:
        moment: A timezone-aware time.

    Returns:
        ``yyyy-MM-dd HH:mm:ss.SSS+0000`` — space separator, offset without a colon.
    """
    moment = moment.astimezone(timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d}+0000"


def dumps(payload: object) -> bytes:
    """Encode a JSON payload compactly, as a Spring service does.

    Args:
        payload: Any JSON-serialisable value.

    Returns:
        UTF-8 bytes.
    """
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(
    payload: object, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """Build a JSON response.

    Args:
        payload: The body.
        status: The HTTP status code.
        headers: Extra headers.

    Returns:
        A response with ``Content-Type: application/json``.
    """
    return web.Response(
        body=dumps(payload), status=status, content_type="application/json", headers=headers
    )


def error_body(status: int, message: str, path: str) -> dict[str, Any]:
    """Build Spring Boot's default error body (service-api.md §9, [INFERRED] shape).

    Args:
        status: The HTTP status code.
        message: What went wrong.
        path: The request path.

    Returns:
        ``{"timestamp", "status", "error", "message", "path"}``.
    """
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    return {
        "timestamp": iso_millis(utc_now()),
        "status": status,
        "error": reason,
        # Both may echo request bytes that are not UTF-8 (a header, a path segment);
        # the error must still be writable, so those become "?".
        "message": _writable(message),
        "path": _writable(path),
    }


def _writable(text: str) -> str:
    return text if text.isascii() else text.encode("utf-8", "replace").decode()


def error_response(
    status: int, message: str, path: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    """Build a Spring-style error response.

    Args:
        status: The HTTP status code.
        message: What went wrong.
        path: The request path.
        headers: Extra headers.

    Returns:
        The JSON error response.
    """
    return json_response(error_body(status, message, path), status=status, headers=headers)


def link(href: str) -> dict[str, str]:
    """Build a bare Spring HATEOAS ``Link`` (what create endpoints return, service-api.md §5).

    Args:
        href: The absolute URL of the created resource.

    Returns:
        ``{"rel": "self", "href": href}``.
    """
    return {"rel": "self", "href": href}


def hal_self(href: str) -> dict[str, dict[str, str]]:
    """Build a HAL ``_links`` object with a self link (teams, users, contracts; §5).

    Args:
        href: The absolute URL of the resource.

    Returns:
        ``{"self": {"href": href}}``.
    """
    return {"self": {"href": href}}


def links_array(href: str) -> list[dict[str, str]]:
    """Build a Spring HATEOAS ``links`` array with a self link (types, terms; §5).

    Args:
        href: The absolute URL of the resource.

    Returns:
        ``[{"rel": "self", "href": href}]``.
    """
    return [{"rel": "self", "href": href}]


def is_host(text: str) -> bool:
    """Tell whether a ``Host`` header is ``host[:port]`` as RFC 3986 §3.2.2 spells a host.

    Args:
        text: The header value.

    Returns:
        True for a registered name (ASCII letters, digits, ``-._~``, sub-delims,
        %-escapes) or a bracketed IP literal, with an optional port.
    """
    return len(text) <= 300 and _HOST_RE.fullmatch(text) is not None


def parse_id(raw: str, name: str) -> int:
    """Parse an id from a path segment the way Spring binds a ``Long`` path variable.

    Args:
        raw: The path segment.
        name: The path variable's name, for the message (``userId``).

    Returns:
        The id.

    Raises:
        ApiError: 400 when the segment is not an integer or overflows int64; Spring
            answers a failed ``Long`` conversion with 400.
    """
    if _ID_RE.fullmatch(raw):
        value = int(raw)
        if INT64_MIN <= value <= INT64_MAX:
            return value
    raise ApiError(400, f'Invalid {name} "{raw[:40]}": expected a 64-bit integer')


def has_lone_surrogate(text: str) -> bool:
    r"""Tell whether a string holds a lone UTF-16 surrogate, i.e. cannot be written as UTF-8.

    Such strings come from JSON escapes like ``"\ud800"``, from CESU-8 bytes that
    ``json.loads`` lets through, and from header bytes that are not UTF-8 (aiohttp decodes
    them with ``surrogateescape``).

    Args:
        text: Any string.

    Returns:
        True when some code point is in U+D800..U+DFFF.
    """
    return not text.isascii() and _SURROGATE_RE.search(text) is not None


def _reject_constant(name: str) -> Any:
    # RFC 8259 has no NaN or Infinity; Python's json accepts them unless told not to.
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def decode_json(raw: bytes) -> Any:
    """Decode a JSON request body strictly, so that what is accepted can be stored and echoed.

    Besides ``json.loads``' own checks this refuses ``NaN``/``Infinity``, numbers that
    overflow a double (``1e400``) and strings or keys holding a lone surrogate: each would
    be stored and then fail every response that writes it (UTF-8 cannot encode a
    surrogate; RFC 8259 §8.2 leaves such strings' meaning unpredictable).

    Args:
        raw: The body.

    Returns:
        The decoded value.

    Raises:
        ValueError: for anything but strict JSON (bad UTF-8 and over-long integers
            included), with a message fit for the client.
        RecursionError: for absurdly deep nesting.
    """
    value = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    # Iterative on purpose: the value may be nested as deep as json.loads allows.
    pending = [value]
    for _ in range(len(raw) + 1):  # a value holds fewer items than its text has bytes
        if not pending:
            return value
        item = pending.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                raise ValueError("string holds a lone surrogate (\\ud800-\\udfff escape)")
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    raise AssertionError("unreachable: more JSON values than bytes")


async def read_body(request: web.Request) -> bytes:
    """Read a request body, turning a body that cannot be decoded into a 400.

    Args:
        request: The request.

    Returns:
        The body.

    Raises:
        ApiError: 400 when the transfer coding is broken (a bad chunk, for instance).
        aiohttp.web.HTTPRequestEntityTooLarge: when the body exceeds ``client_max_size``.
    """
    try:
        return await request.read()
    except web.RequestPayloadError as exc:
        raise ApiError(400, f"Malformed request body: {str(exc)[:200]}") from None


async def read_json(request: web.Request) -> Any:
    """Read and decode a JSON request body.

    Args:
        request: The request.

    Returns:
        The decoded value (any JSON type; see :func:`decode_json`).

    Raises:
        ApiError: 415 for a non-JSON ``Content-Type``, 400 for an empty or malformed body.
        aiohttp.web.HTTPRequestEntityTooLarge: when the body exceeds ``client_max_size``.
    """
    ctype = request.headers.get("Content-Type")
    if ctype is not None:
        mime = ctype.split(";", 1)[0].strip().lower()
        if mime not in _JSON_TYPES and not mime.endswith("+json"):
            raise ApiError(415, f"Content type '{mime}' not supported; send application/json")
    body = await read_body(request)
    if not body.strip():
        raise ApiError(400, "Required request body is missing")
    try:
        return decode_json(body)
    except (ValueError, RecursionError) as exc:
        # ValueError covers bad UTF-8 and int strings over Python's digit limit;
        # RecursionError covers absurdly deep nesting. Both are the client's fault.
        raise ApiError(400, f"JSON parse error: {str(exc)[:200]}") from None


async def read_object(request: web.Request) -> dict[str, Any]:
    """Read a JSON body that must be an object.

    Args:
        request: The request.

    Returns:
        The decoded object.

    Raises:
        ApiError: 400/415 as :func:`read_json`, and 400 when the body is not an object.
    """
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ApiError(400, f"JSON parse error: expected an object, got {json_type(body)}")
    return body


def is_int(value: object) -> TypeGuard[int]:
    """Tell whether a decoded JSON value is an integer (JSON ``true`` is not).

    Args:
        value: A decoded JSON value.

    Returns:
        True for ints other than bools.
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """Tell whether a decoded JSON value is a number usable as a float (JSON ``true`` is not).

    Args:
        value: A decoded JSON value.

    Returns:
        True for finite floats and for ints within a double's range, bools excepted (an
        int of 400 digits would raise OverflowError wherever it meets a float).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) <= _FLOAT_MAX


def json_type(value: object) -> str:
    """Name a decoded JSON value's type for messages.

    Args:
        value: A decoded JSON value.

    Returns:
        ``"object"``, ``"array"``, ``"string"``, ``"number"``, ``"boolean"`` or ``"null"``.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def get_int(body: Mapping[str, Any], key: str) -> int | None:
    """Read an optional int64 member of a request object.

    Args:
        body: The request object.
        key: The member's wire name.

    Returns:
        The integer, or None when absent or null.

    Raises:
        ApiError: 400 when not an integer (strings such as ``"12"`` included: the
            emulator is stricter than Jackson here, so that a client sending ids as
            strings is caught) or outside int64.
    """
    value = body.get(key)
    if value is None:
        return None
    if not is_int(value):
        raise ApiError(400, f"{key} must be an integer, got {json_type(value)}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise ApiError(400, f"{key} is outside the 64-bit integer range")
    return value


def require_int(body: Mapping[str, Any], key: str) -> int:
    """Read a required int64 member of a request object.

    Args:
        body: The request object.
        key: The member's wire name.

    Returns:
        The integer.

    Raises:
        ApiError: 400 when missing, null, not an integer or outside int64.
    """
    value = get_int(body, key)
    if value is None:
        raise ApiError(400, f"{key} is required")
    return value


def get_str(body: Mapping[str, Any], key: str, *, max_length: int = 255) -> str | None:
    """Read an optional string member of a request object.

    Args:
        body: The request object.
        key: The member's wire name.
        max_length: The longest accepted value, in characters.

    Returns:
        The string, or None when absent or null.

    Raises:
        ApiError: 400 when not a string or too long.
    """
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{key} must be a string, got {json_type(value)}")
    if len(value) > max_length:
        raise ApiError(400, f"{key} must be at most {max_length} characters, got {len(value)}")
    return value


def require_str(body: Mapping[str, Any], key: str, *, max_length: int = 255) -> str:
    """Read a required, non-blank string member of a request object.

    Args:
        body: The request object.
        key: The member's wire name.
        max_length: The longest accepted value, in characters.

    Returns:
        The string.

    Raises:
        ApiError: 400 when missing, null, blank, not a string or too long.
    """
    value = get_str(body, key, max_length=max_length)
    if value is None:
        raise ApiError(400, f"{key} is required")
    if not value.strip():
        raise ApiError(400, f"{key} must not be blank")
    return value


T = TypeVar("T")


def find(table: Mapping[int, T], raw: str, name: str, noun: str) -> T:
    """Look up the entity a path segment names: 400 for a bad id, 404 when there is none.

    Args:
        table: The entities by id.
        raw: The path segment.
        name: The path variable's name (``contractId``).
        noun: The entity, for the 404's message (``Contract``): ``"Contract with id 5
            not found"``, as the service words it for users (service-api.md §7).
    """
    entity_id = parse_id(raw, name)
    entity = table.get(entity_id)
    if entity is None:
        raise ApiError(404, f"{noun} with id {entity_id} not found")
    return entity
