"""Parsing the rate-limit headers (pure): every form, and garbage ignored one by one."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

import pytest

from contractsdk import Headers
from contractsdk._headers import (
    RateLimitHints,
    parse_rate_limit_headers,
    parse_retry_after,
    server_now,
)
from tests._fakeclock import NOW_WALL


def hints(headers: Mapping[str, str]) -> RateLimitHints:
    return parse_rate_limit_headers(Headers(headers), now=NOW_WALL)


def test_no_headers_no_hints() -> None:
    """A response without rate-limit headers says nothing."""
    assert hints({}) == RateLimitHints()


def test_retry_after_seconds() -> None:
    """Retry-After in seconds."""
    assert hints({"Retry-After": "7"}).retry_after == 7.0


def test_retry_after_http_date() -> None:
    """Retry-After as an HTTP-date, relative to the wall clock."""
    date = email.utils.formatdate(NOW_WALL + 30, usegmt=True)
    assert hints({"Retry-After": date}).retry_after == pytest.approx(30.0)


@pytest.mark.parametrize(
    "form",
    [
        "%a, %d %b %Y %H:%M:%S GMT",  # IMF-fixdate
        "%A, %d-%b-%y %H:%M:%S GMT",  # RFC 850
        "%a %b %e %H:%M:%S %Y",  # asctime: no zone, GMT all the same
        "%a, %d %b %Y %H:%M:%S -0000",  # a zone not known: GMT, as RFC 9110 reads dates
    ],
)
def test_retry_after_in_every_http_date_format(form: str) -> None:
    """RFC 9110: a recipient reads all three date formats, each of them GMT.

    A date without a zone was ignored: Python reads it as naive, and its timestamp() as
    the host's local time.
    """
    date = time.strftime(form, time.gmtime(NOW_WALL + 30))
    assert hints({"Retry-After": date}).retry_after == pytest.approx(30.0)
    # Read against a server's own Date in the same format, 45 s behind ours.
    server = time.strftime(form, time.gmtime(NOW_WALL - 45))
    headers = Headers({"Retry-After": date, "Date": server})
    waited = parse_retry_after(headers, now=server_now(headers, NOW_WALL))
    assert waited == pytest.approx(75.0, abs=1.0)


def test_retry_after_ms() -> None:
    """retry-after-ms wins over Retry-After."""
    assert hints({"retry-after-ms": "1500", "Retry-After": "9"}).retry_after == 1.5


def test_x_ratelimit_headers_with_reset_in_seconds() -> None:
    """X-RateLimit-Limit/Remaining/Reset with Reset as seconds from now."""
    found = hints(
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "7", "X-RateLimit-Reset": "3"}
    )
    assert (found.limit, found.window, found.remaining, found.reset) == (100.0, None, 7.0, 3.0)


def test_x_ratelimit_reset_as_epoch() -> None:
    """A Reset far larger than any window is an epoch (GitHub style)."""
    found = hints({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) + 42)})
    assert found.reset == pytest.approx(42.0)


def test_x_ratelimit_reset_as_epoch_milliseconds() -> None:
    """An epoch in milliseconds is read too."""
    found = hints(
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL * 1000) + 2500)}
    )
    assert found.reset == pytest.approx(2.5)


def test_x_ratelimit_reset_in_the_past_is_zero() -> None:
    """An epoch already past means the window has reset."""
    found = hints({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW_WALL) - 10)})
    assert found.reset == 0.0


def test_ietf_ratelimit_and_policy() -> None:
    """IETF RateLimit-Policy (q, w) and RateLimit (r, t) structured fields."""
    found = hints({"RateLimit-Policy": '"default";q=100;w=1', "RateLimit": '"default";r=5;t=1'})
    assert (found.limit, found.window, found.remaining, found.reset) == (100.0, 1.0, 5.0, 1.0)
    assert found.rate == 100.0


def test_ietf_several_policies_pick_the_most_restrictive() -> None:
    """Of several policies, the lowest quota per second wins."""
    found = hints({"RateLimit-Policy": '"burst";q=100;w=1, "day";q=86400;w=86400, "min";q=30;w=60'})
    assert (found.limit, found.window) == (30.0, 60.0)
    assert found.rate == 0.5


def test_ietf_several_counters_pick_the_most_restrictive() -> None:
    """Of several counters, the fewest remaining wins; among exhausted ones, the latest reset."""
    found = hints({"RateLimit": '"a";r=50;t=1, "b";r=0;t=5, "c";r=0;t=30, "d";r=3;t=1'})
    assert (found.remaining, found.reset) == (0.0, 30.0)


def test_ietf_tokens_and_extra_parameters() -> None:
    """Policy names as tokens, and unknown parameters (qu, pk) are tolerated."""
    found = hints({"RateLimit-Policy": 'default;q=10;w=2;qu="requests";pk=:abc=:'})
    assert found.rate == 5.0


def test_ietf_quoted_comma_in_a_name() -> None:
    """A comma inside a quoted policy name does not split the list."""
    found = hints({"RateLimit-Policy": '"a, b";q=10;w=1'})
    assert found.rate == 10.0


def test_ietf_draft07_dictionary_form() -> None:
    """The draft-07 dictionary form ``limit=…, remaining=…, reset=…`` is read too."""
    found = hints({"RateLimit": "limit=100, remaining=9, reset=2"})
    assert (found.remaining, found.reset) == (9.0, 2.0)


def test_legacy_ratelimit_headers() -> None:
    """The older draft's RateLimit-Limit/Remaining/Reset."""
    found = hints({"RateLimit-Limit": "60", "RateLimit-Remaining": "0", "RateLimit-Reset": "12"})
    assert (found.limit, found.window, found.remaining, found.reset) == (60.0, None, 0.0, 12.0)


def test_legacy_ratelimit_limit_with_quota_policies() -> None:
    """``RateLimit-Limit: 10, 10;w=1, 50;w=60`` gives the most restrictive windowed policy."""
    found = hints({"RateLimit-Limit": "10, 10;w=1, 50;w=60"})
    assert (found.limit, found.window) == (50.0, 60.0)


def test_ietf_wins_over_legacy_and_x_headers() -> None:
    """The IETF fields are trusted first, then the legacy draft, then X-RateLimit-*."""
    found = hints(
        {
            "RateLimit-Policy": "p;q=10;w=1",
            "RateLimit": "p;r=4;t=1",
            "RateLimit-Limit": "99",
            "RateLimit-Remaining": "98",
            "X-RateLimit-Limit": "77",
            "X-RateLimit-Remaining": "76",
        }
    )
    assert (found.limit, found.remaining) == (10.0, 4.0)
    legacy = hints({"RateLimit-Remaining": "98", "X-RateLimit-Remaining": "76"})
    assert legacy.remaining == 98.0


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "soon"},
        {"Retry-After": "-5"},
        {"Retry-After": "nan"},
        {"Retry-After": "inf"},
        {"Retry-After": "Mon, 99 Foo 2026 99:99:99 GMT"},
        {"retry-after-ms": "1e999"},
        {"X-RateLimit-Limit": "lots", "X-RateLimit-Remaining": "-1", "X-RateLimit-Reset": "x"},
        {"X-RateLimit-Remaining": "1e400", "X-RateLimit-Reset": "1e400"},
        {"X-RateLimit-Remaining": "0x10"},
        {"RateLimit-Policy": '"unterminated;q=10;w=1'},
        {"RateLimit-Policy": "p;q=10;w=0"},
        {"RateLimit-Policy": "p;q=ten;w=1"},
        {"RateLimit-Policy": ";;;,,,==="},
        {"RateLimit": "p;r=;t=", "RateLimit-Policy": ""},
        {"RateLimit": '"\\'},
        {"RateLimit-Limit": ",;w=1", "RateLimit-Remaining": "NaN", "RateLimit-Reset": "-"},
        {"RateLimit": "remaining=abc, reset=1"},
    ],
)
def test_bad_header_values_are_ignored(headers: dict[str, str]) -> None:
    """Unreadable values are ignored one by one; parsing never raises."""
    found = hints(headers)
    assert found.retry_after is None
    assert found.rate is None
    assert found.remaining is None


@pytest.mark.parametrize(
    ("date_off", "reset"),
    [
        (30.0, 0.5),  # the server's clock 30 s ahead: its Date says so, and is the clock read
        (-30.0, 0.5),  # or behind (a Date is read as the middle of its second)
        (0.0, 0.7),  # close to ours: ours, to the fraction (a Date counts whole seconds)
        (None, 0.7),  # no Date: ours
    ],
)
def test_an_epoch_reset_is_read_by_the_server_s_clock(date_off: float | None, reset: float) -> None:
    """A server whose clock is off ours names its window's end by its clock, and its Date.

    Read against our clock, a server 30 s ahead named a reset of 31 s for a window of 1 s
    for as long as its clock stayed off, and a learning client paced at a 30th of the limit.
    """
    server = NOW_WALL + (date_off or 0.0)  # the server's clock, at a whole second
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": f"{server + 1:.0f}"}
    if date_off is not None:
        headers["Date"] = email.utils.formatdate(server, usegmt=True)
    hints = parse_rate_limit_headers(headers, now=NOW_WALL + 0.3)  # ours: 0.3 s into it
    assert hints.reset == pytest.approx(reset, abs=1e-6)


@pytest.mark.parametrize("date", ["Thu, 01 Jan 1970 00:00:00 GMT", "not a date", ""])
def test_a_date_far_off_or_unreadable_never_makes_a_reset_absurd(date: str) -> None:
    """A Date from 1970 (more than a day off ours) or garbage is not the server's clock."""
    headers = {
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{NOW_WALL + 2:.0f}",
        "Date": date,
    }
    hints = parse_rate_limit_headers(headers, now=NOW_WALL)
    assert hints.reset == pytest.approx(2.0)  # read by our clock
