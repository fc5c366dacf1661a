"""A hostile server's rate-limit headers: garbage is ignored, never an untyped crash."""

from __future__ import annotations

import pytest

from contractsdk import ContractClient, RateLimitError, RateLimits, Request, Response
from contractsdk._headers import parse_rate_limit_headers, parse_retry_after
from contractsdk._http import NOT_GIVEN, NotGiven
from contractsdk.testing import MockTransport, json_response
from tests._fakeclock import NOW_WALL
from tests.conftest import API_KEY

#: HTTP-dates whose fields overflow a C int or long inside the standard library's parser.
OVERFLOWING_DATES = [
    "Mon, 01 Jan 2024 00:00:00 +99999999999999",
    "Mon, 01 Jan 2024 00:00:00 -99999999999999",
    "Mon, 01 Jan 99999999999999999999 00:00:00 GMT",
    "Mon, 99999999999999999 Jan 2024 00:00:00 GMT",
    "Mon, 01 Jan 2024 99999999999999999999:00:00 GMT",
    "Mon, 01 Jan 2024 00:00:99999999999999999999 GMT",
]


@pytest.mark.parametrize("value", OVERFLOWING_DATES)
def test_an_overflowing_retry_after_date_is_ignored(value: str) -> None:
    """parse_retry_after (what error_from_response calls) ignores it, as any garbage."""
    assert parse_retry_after({"retry-after": value}, now=NOW_WALL) is None
    assert parse_rate_limit_headers({"Retry-After": value}, now=NOW_WALL).retry_after is None


@pytest.mark.parametrize("value", ["1_0", "٣", "1٣", "inf", "nan", "0x10"])
def test_only_plain_ascii_numbers_are_read(value: str) -> None:
    """float() reads "1_0" as 10 and "٣" as 3; no server means either."""
    assert parse_retry_after({"retry-after": value}, now=NOW_WALL) is None
    assert parse_retry_after({"retry-after-ms": value}, now=NOW_WALL) is None
    assert parse_rate_limit_headers({"X-RateLimit-Limit": value}, now=NOW_WALL).limit is None


def test_plain_numbers_still_read() -> None:
    assert parse_retry_after({"retry-after": " 7 "}, now=NOW_WALL) == 7.0
    assert parse_retry_after({"retry-after": "1e9"}, now=NOW_WALL) == 1e9  # capped by callers
    assert parse_retry_after({"retry-after-ms": "1500.5"}, now=NOW_WALL) == 1.5005
    assert parse_rate_limit_headers({"X-RateLimit-Limit": "100"}, now=NOW_WALL).limit == 100


@pytest.mark.parametrize("rate_limits", [NOT_GIVEN, None], ids=["limiter", "no-limiter"])
async def test_a_429_with_an_overflowing_date_is_a_rate_limit_error(
    rate_limits: RateLimits | NotGiven | None,
) -> None:
    """The 429 maps to RateLimitError without a retry_after, limiter on or off."""

    def handler(request: Request) -> Response:
        return json_response(429, headers={"Retry-After": OVERFLOWING_DATES[0]})

    async with ContractClient(
        api_key=API_KEY, transport=MockTransport(handler), rate_limits=rate_limits, retries=None
    ) as client:
        with pytest.raises(RateLimitError) as caught:
            await client.users.get(7)
    assert caught.value.retry_after is None
