"""Rate-limit header parsing where no other test pinned it.

Retry-After under a second or already past, values padded with spaces, the skew a Date
corrects, several policies or counters in any order, escaped quotes, members missing a
field, and the request id.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping

import pytest

from contractsdk import Headers
from contractsdk._headers import (
    RateLimitHints,
    has_rate_limit_headers,
    parse_rate_limit_headers,
    parse_retry_after,
    request_id,
)
from tests._fakeclock import NOW_WALL


def hints(headers: Mapping[str, str]) -> RateLimitHints:
    return parse_rate_limit_headers(Headers(headers), now=NOW_WALL)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after-ms": "250"}, 0.25),
    ],
)
def test_retry_after_of_zero_or_under_a_second_is_read(
    headers: dict[str, str], seconds: float
) -> None:
    """``Retry-After: 0`` says "now" (0.0, not None); fractions of a second are kept."""
    assert parse_retry_after(Headers(headers), now=NOW_WALL) == seconds


def test_retry_after_date_already_past_is_zero() -> None:
    """An HTTP-date in the past asks for no wait: 0.0, never a wait of its own."""
    date = email.utils.formatdate(NOW_WALL - 30, usegmt=True)
    assert parse_retry_after(Headers({"Retry-After": date}), now=NOW_WALL) == 0.0


def test_numbers_padded_with_spaces_are_read() -> None:
    """Header values keep their spaces; the numbers in them are read all the same."""
    found = hints(
        {"X-RateLimit-Limit": " 100 ", "X-RateLimit-Remaining": " 5", "X-RateLimit-Reset": "2 "}
    )
    assert (found.limit, found.remaining, found.reset) == (100.0, 5.0, 2.0)


@pytest.mark.parametrize("date_off", [3.0, -3.0])
def test_a_skew_of_a_few_seconds_is_read_by_the_server_s_date(date_off: float) -> None:
    """A Date 3 s off ours (over DATE_TRUST) is the clock an epoch reset is read by."""
    server = NOW_WALL + date_off
    headers = {
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{server + 1:.0f}",
        "Date": email.utils.formatdate(server, usegmt=True),
    }
    assert parse_rate_limit_headers(headers, now=NOW_WALL).reset == pytest.approx(0.5)


def test_a_date_a_day_and_a_half_off_is_not_the_server_s_clock() -> None:
    """Past a day (DATE_MOST) off ours, a Date is garbage: the reset is read by our clock."""
    headers = {
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{NOW_WALL + 2:.0f}",
        "Date": email.utils.formatdate(NOW_WALL + 36 * 3600, usegmt=True),
    }
    assert parse_rate_limit_headers(headers, now=NOW_WALL).reset == pytest.approx(2.0)


@pytest.mark.parametrize(
    "policy",
    [
        '"a";q=100;w=10, "b";q=20;w=4, "c";q=200;w=10',
        '"c";q=200;w=10, "b";q=20;w=4, "a";q=100;w=10',
    ],
)
def test_the_most_restrictive_policy_wins_in_any_order(policy: str) -> None:
    """10/s, 5/s and 20/s: 5/s, wherever it stands in the list."""
    found = hints({"RateLimit-Policy": policy})
    assert (found.limit, found.window) == (20.0, 4.0)


@pytest.mark.parametrize(
    "limit", ["100;w=10, 20;w=4, 200;w=10", "200;w=10, 20;w=4, 100;w=10", "7, 20;w=4, 100;w=10"]
)
def test_the_most_restrictive_legacy_policy_wins_in_any_order(limit: str) -> None:
    """``RateLimit-Limit`` quota policies: the lowest rate, wherever it stands."""
    found = hints({"RateLimit-Limit": limit})
    assert (found.limit, found.window) == (20.0, 4.0)


@pytest.mark.parametrize(
    ("policy", "limit"),
    [
        ("p;q=10;w=0, r;q=5;w=1", 5.0),  # no window
        ("p;w=1, r;q=5;w=1", 5.0),  # no quota
        ("r;q=5;w=1, p;q=10;w=0, s;w=2", 5.0),
    ],
)
def test_a_policy_missing_its_quota_or_window_is_skipped_among_others(
    policy: str, limit: float
) -> None:
    """One policy without q or w (or w=0) is skipped; the others are read, nothing raises."""
    found = hints({"RateLimit-Policy": policy})
    assert (found.limit, found.window) == (limit, 1.0)


def test_a_legacy_limit_that_is_no_number_is_skipped_among_others() -> None:
    """``RateLimit-Limit: junk;w=1, 10;w=1``: the junk is skipped, 10/s read."""
    found = hints({"RateLimit-Limit": "junk;w=1, 10;w=1"})
    assert (found.limit, found.window) == (10.0, 1.0)


@pytest.mark.parametrize(
    ("counter", "remaining", "reset"),
    [
        ('"a";t=5, "b";r=3;t=1', 3.0, 1.0),  # a counter without r is skipped
        ('"a";t=5', None, None),  # and alone says nothing, its reset neither
        ('"a";r=5', 5.0, None),  # a counter without t: no reset
        ('"a";r=0, "b";r=0;t=0.5', 0.0, 0.5),  # exhausted: a known reset wins
        ('"b";r=0;t=0.5, "a";r=0', 0.0, 0.5),
        ('"c";r=0;t=30, "b";r=0;t=5', 0.0, 30.0),  # exhausted: the latest reset, any order
    ],
)
def test_counters_missing_a_field_or_in_any_order(
    counter: str, remaining: float | None, reset: float | None
) -> None:
    """The fewest remaining, then the latest reset, whatever the order and missing fields."""
    found = hints({"RateLimit": counter})
    assert (found.remaining, found.reset) == (remaining, reset)


def test_an_escaped_quote_in_a_quoted_name_does_not_end_it() -> None:
    r"""``"a\"b, c"`` is one name (RFC 8941 strings escape quotes): the list splits after it."""
    found = hints({"RateLimit-Policy": r'"a\"b, c";q=10;w=1, "d";q=5;w=1'})
    assert (found.limit, found.window) == (5.0, 1.0)
    found = hints({"RateLimit-Policy": r'"a\\";q=10;w=1, "d";q=5;w=1'})  # an escaped \
    assert (found.limit, found.window) == (5.0, 1.0)


def test_a_member_without_a_name_is_skipped() -> None:
    """A list member with parameters but no item is not a policy."""
    assert hints({"RateLimit-Policy": ";q=1;w=1"}).rate is None


@pytest.mark.parametrize("as_headers", [True, False])
def test_has_rate_limit_headers(as_headers: bool) -> None:
    """Only headers parse_rate_limit_headers learns from count, for Headers and a dict."""

    def make(values: dict[str, str]) -> Mapping[str, str]:
        return Headers(values) if as_headers else values

    assert has_rate_limit_headers(make({"X-RateLimit-Remaining": "3"}))
    assert has_rate_limit_headers(make({"Retry-After": "1"}))
    assert not has_rate_limit_headers(make({"Content-Type": "application/json"}))
    assert not has_rate_limit_headers(make({"X-RateLimit-Reset": "3"}))  # alone: nothing


def test_request_id_headers_in_order() -> None:
    """``X-Request-Id`` first, then ``Request-Id``, ``X-Correlation-Id``, ``x-amzn-RequestId``."""
    assert request_id(Headers({"Request-Id": "b", "X-Request-Id": "a"})) == "a"
    assert request_id(Headers({"X-Correlation-Id": "c", "Request-Id": "b"})) == "b"
    assert request_id(Headers({"x-amzn-RequestId": "d"})) == "d"
    assert request_id(Headers({"Content-Type": "text/plain"})) is None
