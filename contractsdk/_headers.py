"""Pure parsing of the response headers the SDK acts on (no I/O, no event loop)."""

from __future__ import annotations

import datetime
import email.utils
import math
import re
from collections.abc import Iterator, Mapping
from typing import Final

import attrs

from ._http import Headers

__all__ = [
    "RateLimitHints",
    "has_rate_limit_headers",
    "parse_rate_limit_headers",
    "parse_retry_after",
    "request_id",
    "server_now",
]

#: Headers a service may use to name the request, checked in order.
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-correlation-id", "x-amzn-requestid")


#: Seconds as Retry-After may give them: ASCII digits, a fraction and an exponent
#: (``1e9``: a huge wait, capped by the caller). float() alone also reads "1_0" as 10
#: and "٣" as 3, which no server means.
_SECONDS = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _seconds(text: str) -> float | None:
    """Return a finite, non-negative number of seconds, or None for anything else."""
    text = text.strip()
    if not _SECONDS.fullmatch(text):
        return None
    value = float(text)
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
    if millis is not None and (value := _seconds(millis)) is not None:
        return value / 1000
    text = headers.get("retry-after")
    if text is None:
        return None
    if (value := _seconds(text)) is not None:
        return value
    when = _http_date(text)
    return None if when is None else max(0.0, when - now)


def _http_date(text: str) -> float | None:
    """Return an HTTP-date as a POSIX timestamp, or None if it is not one.

    RFC 9110 dates are GMT, and a recipient must read all three of its formats: asctime's
    ``Sun Nov  6 08:49:37 1994`` names no zone, and ``-0000`` says none is known. Python
    reads those as naive datetimes, whose timestamp() would be the host's local time.
    """
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        return when.timestamp()
    # OverflowError: a field past a C int ("+99999999999999" as the zone); OSError: a
    # platform's datetime refusing an extreme date. Both are garbage, ignored as the rest.
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None


def request_id(headers: Mapping[str, str]) -> str | None:
    """Return the request id the service put on a response, if any."""
    return next((headers[name] for name in _REQUEST_ID_HEADERS if name in headers), None)


@attrs.frozen(kw_only=True)
class RateLimitHints:
    """What one response's headers say about the rate limit (all optional).

    Attributes:
        retry_after: Seconds the server asks us to wait (``Retry-After``, ``retry-after-ms``).
        limit: Requests allowed per window (the most restrictive policy).
        window: That policy's window in seconds, when the server says.
        remaining: Requests left in the current window (the most restrictive counter).
        reset: Seconds until that counter resets.
    """

    retry_after: float | None = None
    limit: float | None = None
    window: float | None = None
    remaining: float | None = None
    reset: float | None = None

    @property
    def rate(self) -> float | None:
        """The sustained rate the policy allows (``limit / window``), if both are known."""
        if self.limit is None or not self.window:
            return None
        rate = self.limit / self.window
        return rate if math.isfinite(rate) else None  # q=1e308;w=1e-10 names no rate

    @property
    def exhausted(self) -> bool:
        """The server says its counter is empty (``remaining`` under 1)."""
        return self.remaining is not None and self.remaining < 1

    @property
    def wait(self) -> float | None:
        """Seconds to wait before asking again: ``retry_after``, or the finer reset it rounds up.

        ``Retry-After`` counts whole seconds; an empty counter's reset, given finer, says
        when it has room: a sliding log's oldest entry leaving in 0.19 s reads as 1 s, and
        0.8 s of its quota went unused after each 429. The reset is itself rounded (to the
        millisecond, say), so a whole second under ``Retry-After`` is still its own: an
        entry leaving in 0.3 ms reads ``Reset: 0.000`` and ``Retry-After: 1`` (a wait of
        0: none). Another counter's reset (more than a second off) is not taken, nor the
        reset of a counter with room, nor one beside a ``Retry-After`` that is not whole.
        """
        after, reset = self.retry_after, self.reset
        if (
            after is not None
            and reset is not None
            and self.exhausted
            and 0 <= reset < after <= reset + 1
            and after == math.floor(after)
        ):
            return reset
        return after


# ASCII digits only, as _SECONDS.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
#: A reset value above this is an epoch (in seconds, or above ``_EPOCH_MS`` in
#: milliseconds): no window lasts three years, and no epoch is older than 1973.
_EPOCH_S: Final = 1e8
_EPOCH_MS: Final = 1e11


def _number(text: str | None) -> float | None:
    """Return a finite, non-negative number, or None for anything else."""
    if text is None:
        return None
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) and value >= 0 else None


#: How far the server's ``Date`` may be from our clock before its epochs and dates are
#: read against it instead: ``Date`` counts whole seconds, and the answer took a while.
#: Past a day it is taken for garbage (a clock at 1970), not a skew.
DATE_TRUST: Final = 2.0
DATE_MOST: Final = 86_400.0
#: The last ``Date`` read, and the time it names (None: unreadable): it changes once a
#: second, so one entry spares a parse per answer.
_last_date: tuple[str, float | None] = ("", None)


def server_now(headers: Mapping[str, str], now: float) -> float:
    """The server's time: ``now`` (our wall clock), or its ``Date`` where the two disagree.

    An epoch reset or a date in ``Retry-After`` is the server's clock; read against ours,
    a skew between them puts every reset off by as much, for as long as it lasts (a server
    30 s ahead named a window of 31 s for one of 1 s, and a learning client paced at a
    30th of the limit). ``Date`` says what the server's clock reads: off ours by more than
    :data:`DATE_TRUST` (and by no more than :data:`DATE_MOST`), it is the clock to read
    them against (the middle of its second).
    """
    global _last_date
    text = headers.get("date")
    if text is None:
        return now
    if _last_date[0] == text:
        date = _last_date[1]
    else:
        date = _http_date(text)
        _last_date = (text, date)
    if date is None or not DATE_TRUST < abs(date + 0.5 - now) <= DATE_MOST:
        return now
    return date + 0.5


def _reset_seconds(value: float | None, *, now: float) -> float | None:
    """Turn a reset value into seconds from now, guessing whether it is an epoch.

    An epoch is the server's clock, read against ``now`` (:func:`server_now`). A moment
    of skew the ``Date`` does not show still puts a reset off: the limiter does not keep
    such a reading as the window for good (``RateLimiter._reset_seen``).
    """
    if value is None:
        return None
    if value > _EPOCH_MS:
        value /= 1000
    if value > _EPOCH_S:
        return max(0.0, value - now)
    return value


def _split_outside_quotes(text: str, separator: str) -> Iterator[str]:
    """Split on ``separator`` outside double-quoted strings (RFC 8941 lists and params)."""
    start, quoted, escaped = 0, False, False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            yield text[start:index]
            start = index + 1
    yield text[start:]


def _sf_items(text: str) -> list[tuple[str, dict[str, str]]]:
    """Parse a Structured Field list leniently: ``[(item, {param: value})]``.

    Each member's parameters are kept as raw text; a member that does not parse is skipped.
    The item may be a string, a token or a number; dictionary members (``key=value``)
    come back with the key as item and ``{"": value}`` among the parameters.
    """
    members: list[tuple[str, dict[str, str]]] = []
    for member in _split_outside_quotes(text, ","):
        parts = [part.strip() for part in _split_outside_quotes(member, ";")]
        head = parts[0]
        if not head:
            continue
        params: dict[str, str] = {}
        if "=" in head and not head.startswith('"'):
            head, _, value = head.partition("=")
            params[""] = value.strip()
            head = head.strip()
        for param in parts[1:]:
            key, _, value = param.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')  # a bare key: ""
        members.append((head.strip().strip('"'), params))
    return members


def _ietf_policy(text: str) -> tuple[float, float] | None:
    """Return the most restrictive ``(quota, window)`` of a ``RateLimit-Policy`` field."""
    best: tuple[float, float] | None = None
    for _, params in _sf_items(text):
        quota, window = _number(params.get("q")), _number(params.get("w"))
        if quota is None or not window:
            continue
        if best is None or quota / window < best[0] / best[1]:
            best = (quota, window)
    return best


def _ietf_counter(text: str) -> tuple[float, float | None] | None:
    """Return the most restrictive ``(remaining, reset)`` of a ``RateLimit`` field.

    The fewest remaining wins; among exhausted counters, the one that resets last. Also
    reads the draft-07 dictionary form ``limit=100, remaining=5, reset=1``.
    """
    best: tuple[float, float | None] | None = None
    dictionary: dict[str, str] = {}
    for item, params in _sf_items(text):
        if "" in params:
            dictionary[item.lower()] = params[""]
            continue
        remaining, reset = _number(params.get("r")), _number(params.get("t"))
        if remaining is None:
            continue
        if best is None or (remaining, -(reset or 0.0)) < (best[0], -(best[1] or 0.0)):
            best = (remaining, reset)
    if best is None and (remaining := _number(dictionary.get("remaining"))) is not None:
        best = (remaining, _number(dictionary.get("reset")))
    return best


def _legacy_limit(text: str) -> tuple[float, float | None] | None:
    """Read ``RateLimit-Limit: 100`` or ``100, 100;w=1, 1000;w=3600`` (drafts ≤ 06)."""
    best: tuple[float, float | None] | None = None
    for item, params in _sf_items(text):
        limit, window = _number(item), _number(params.get("w"))
        if limit is None:
            continue
        if window:
            if best is None or best[1] is None or limit / window < best[0] / best[1]:
                best = (limit, window)
        elif best is None:
            best = (limit, None)
    return best


_NO_HINTS: Final = RateLimitHints()
_RATE_LIMIT_HEADERS: Final = frozenset(
    {
        "retry-after",
        "retry-after-ms",
        "ratelimit",
        "ratelimit-policy",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    }
)


#: The headers that tell something on their own (a reset is read only beside its
#: remaining count, so ``RateLimit-Reset`` and ``X-RateLimit-Reset`` alone say nothing).
#: A tuple: Headers.has_any looks each up, and iterates a tuple fastest.
_RATE_LIMIT_PROBE: Final = tuple(
    sorted(_RATE_LIMIT_HEADERS - {"ratelimit-reset", "x-ratelimit-reset"})
)


def has_rate_limit_headers(headers: Mapping[str, str]) -> bool:
    """Whether a response carries a header :func:`parse_rate_limit_headers` learns from.

    When it does not, parsing would give no hints at all.
    """
    if type(headers) is Headers or isinstance(headers, Headers):  # exact type: every answer
        return headers.has_any(_RATE_LIMIT_PROBE)
    return any(name.lower() in _RATE_LIMIT_PROBE for name in headers)


def parse_rate_limit_headers(headers: Mapping[str, str], *, now: float) -> RateLimitHints:
    """Read every rate-limit header a response may carry; ignore unreadable values.

    In order of trust: the IETF ``RateLimit-Policy`` / ``RateLimit`` structured fields
    (several policies: the most restrictive), then the older draft's ``RateLimit-Limit`` /
    ``-Remaining`` / ``-Reset``, then the de-facto ``X-RateLimit-*``. A reset value above
    10⁸ is read as an epoch (seconds, or milliseconds above 10¹¹), anything smaller as
    seconds from now. ``Retry-After`` and ``retry-after-ms`` are read by
    :func:`parse_retry_after`.

    Args:
        headers: The response headers (a plain dict is read case-insensitively too).
        now: The wall-clock time (``time.time()``), for HTTP dates and epochs: the
            server's ``Date`` instead where the two disagree (:func:`server_now`).
    """
    if not isinstance(headers, Headers):
        headers = Headers(headers)
    found = headers.pick(_RATE_LIMIT_HEADERS)  # one pass; a plain dict for a dozen lookups
    if not found:
        return _NO_HINTS
    now = server_now(headers, now)
    get = found.get
    limit: float | None = None
    window: float | None = None
    remaining: float | None = None
    reset: float | None = None

    if (policy_text := get("ratelimit-policy")) is not None and (
        policy := _ietf_policy(policy_text)
    ):
        limit, window = policy
    if (counter_text := get("ratelimit")) is not None and (counter := _ietf_counter(counter_text)):
        remaining, reset = counter[0], _reset_seconds(counter[1], now=now)

    if limit is None and (legacy_text := get("ratelimit-limit")) is not None:
        legacy = _legacy_limit(legacy_text)
        if legacy is not None:
            limit, window = legacy
    if remaining is None and (value := _number(get("ratelimit-remaining"))) is not None:
        remaining, reset = value, _reset_seconds(_number(get("ratelimit-reset")), now=now)

    if limit is None:
        limit = _number(get("x-ratelimit-limit"))
    if remaining is None and (value := _number(get("x-ratelimit-remaining"))) is not None:
        remaining, reset = value, _reset_seconds(_number(get("x-ratelimit-reset")), now=now)

    return RateLimitHints(
        retry_after=parse_retry_after(found, now=now),
        limit=limit,
        window=window,
        remaining=remaining,
        reset=reset,
    )
