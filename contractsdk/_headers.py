"""Pure parsing of the response headers the SDK acts on (no I/O, no event loop)."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping

__all__ = ["parse_retry_after", "request_id"]

#: Headers a service may use to name the request, checked in order.
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-correlation-id", "x-amzn-requestid")


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Return the seconds the server asks us to wait, or None if it does not say.

    Reads ``retry-after-ms`` first, then ``Retry-After`` as seconds or as an HTTP-date
    (RFC 9110 §10.2.3). Negative, non-finite and unreadable values are ignored.

    Args:
        headers: The response headers (case-insensitive mapping).
        now: The current wall-clock time (``time.time()``), to turn a date into seconds.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None and (value := _seconds(millis.strip())) is not None:
        return value / 1000
    text = headers.get("retry-after")
    if text is None:
        return None
    text = text.strip()
    if (value := _seconds(text)) is not None:
        return value
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as such
        return None
    return max(0.0, when.timestamp() - now)


def request_id(headers: Mapping[str, str]) -> str | None:
    """Return the request id the service put on a response, if any."""
    return next((headers[name] for name in _REQUEST_ID_HEADERS if name in headers), None)
