"""Properties of the pure parsers: on any input, a typed result or a typed error, never a crash.

Hypothesis generates the input; each test is bounded (``max_examples``) so the whole module
runs in a few seconds. A failing example a property once found stays as an ``@example``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contractsdk import ConfigurationError, ResponseValidationError
from contractsdk._converter import structure, structure_list
from contractsdk._headers import RateLimitHints, parse_rate_limit_headers, parse_retry_after
from contractsdk._http import Headers
from contractsdk.models import (
    Contract,
    ContractField,
    ContractType,
    Team,
    Template,
    Term,
    TermOption,
    User,
)
from contractsdk.models._base import id_from_href
from contractsdk.resources._base import path_id

INT64_MAX = 2**63 - 1
BOUNDED = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: The converter's property runs once per model class: fewer examples each.
PER_MODEL = settings(BOUNDED, max_examples=15)

# -- header values -----------------------------------------------------------------------

#: Numbers as servers (and broken proxies) write them.
NUMBER_TEXT = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.integers(min_value=0, max_value=10**400).map(str),  # far beyond float's range
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    # Epochs in seconds and in milliseconds, before and after any `now` drawn.
    st.integers(min_value=10**8, max_value=10**15).map(str),
    st.sampled_from(["NaN", "nan", "inf", "-inf", "Infinity", "1e999", "-0", "0x10", "1_000"]),
    st.sampled_from(
        [
            "\u0661\u0662",
            "\uff11\uff12",
            "\u00b2",
            "\u09e9.\u09eb",
            "-5",
            "+5",
            ".5",
            "5.",
            "",
            " ",
            "\t7\n",
        ]
    ),
)

WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
ZONES = ["GMT", "UTC", "+0000", "-0000", "+2359", "-2359", "+9999", "-9999", "EST", "Z", ""]


@st.composite
def http_dates(draw: st.DrawFn) -> str:
    """IMF-fixdate-like strings over years 0000–9999 and any zone, valid or not.

    Half are valid dates (every field in range), so that a date read as a time in the past
    or the future is common, not one draw in a thousand.
    """
    year = draw(st.one_of(st.sampled_from([0, 1, 1969, 1970, 9999]), st.integers(0, 9999)))
    valid = draw(st.booleans())
    day, hour, minute, second = (
        draw(st.integers(least, most) if valid else st.integers(0, 99))
        for least, most in ((1, 28), (0, 23), (0, 59), (0, 59))
    )
    return (
        f"{draw(st.sampled_from(WEEKDAYS))}, {day:02d} "
        f"{draw(st.sampled_from(MONTHS))} {year:04d} {hour:02d}:{minute:02d}:{second:02d} "
        f"{draw(st.sampled_from(ZONES))}"
    ).strip()


TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=8)
PARAM_VALUE = st.one_of(NUMBER_TEXT, TOKEN, st.text(max_size=10))


@st.composite
def structured_fields(draw: st.DrawFn) -> str:
    """IETF ``RateLimit`` / ``RateLimit-Policy`` lists: ``"default";r=50;t=30, q=100;w=60``."""
    members = []
    for _ in range(draw(st.integers(0, 4))):
        head = draw(st.one_of(TOKEN.map(lambda name: f'"{name}"'), TOKEN, NUMBER_TEXT))
        if draw(st.booleans()):  # a draft-07 dictionary member: remaining=5
            head = f"{draw(st.sampled_from(['limit', 'remaining', 'reset', 'x']))}={head}"
        keys = st.sampled_from(["r", "t", "q", "w", "pk", "R", ""])
        params = draw(st.lists(st.tuples(keys, PARAM_VALUE), max_size=4))
        members.append(head + "".join(f";{key}={value}" for key, value in params))
    text = ", ".join(members)
    if draw(st.booleans()):  # garbage: quotes, separators and anything else, cut anywhere
        noise = draw(st.text(alphabet=';=,"\\ \t' + "q r w t 1 x \u0661", max_size=20))
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + noise + text[cut:]
    return text


HEADER_VALUE = st.one_of(
    NUMBER_TEXT,
    http_dates(),
    structured_fields(),
    st.text(),
    st.sampled_from(['"default";r=50;t=30', "q=100;w=60", "limit=100, remaining=5, reset=1"]),
)

HEADER_NAMES = st.sampled_from(
    [
        "Retry-After",
        "retry-after-ms",
        "RateLimit",
        "RateLimit-Policy",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
        "x-ratelimit-reset",
        "Content-Type",
    ]
)
HEADER_DICTS = st.dictionaries(st.one_of(HEADER_NAMES, st.text(max_size=10)), HEADER_VALUE)
NOW = st.one_of(
    st.sampled_from([0.0, 1.7e9, 253402300799.0]),  # the epoch, today, 9999-12-31
    st.floats(min_value=0, max_value=1e11, allow_nan=False),
)


def finite_or_none(value: float | None) -> bool:
    return value is None or (type(value) is float and math.isfinite(value) and value >= 0)


@BOUNDED
@given(headers=HEADER_DICTS, now=NOW)
@example(headers={"Retry-After": "Fri, 31 Dec 9999 23:59:59 -2359"}, now=0.0)
@example(headers={"Retry-After": "Mon, 01 Jan 0001 00:00:00 GMT"}, now=1.7e9)
@example(headers={"retry-after-ms": "NaN", "Retry-After": "\u0661\u0662"}, now=0.0)
def test_retry_after_is_a_finite_non_negative_number_or_none(
    headers: dict[str, str], now: float
) -> None:
    """parse_retry_after gives finite seconds >= 0 or None for any headers, never raises."""
    assert finite_or_none(parse_retry_after(Headers(headers), now=now))


@BOUNDED
@given(headers=HEADER_DICTS, now=NOW, as_headers=st.booleans())
@example(
    headers={"RateLimit-Policy": '"default";q=100;w=60', "RateLimit": '"default";r=50;t=30'},
    now=0.0,
    as_headers=True,
)
@example(headers={"RateLimit": "limit=100, remaining=5, reset=1"}, now=0.0, as_headers=False)
@example(headers={"Retry-After": "Fri, 31 Dec 9999 23:59:59 -2359"}, now=0.0, as_headers=True)
def test_rate_limit_headers_give_finite_non_negative_hints(
    headers: dict[str, str], now: float, as_headers: bool
) -> None:
    """parse_rate_limit_headers gives hints of finite numbers >= 0 for any headers."""
    hints = parse_rate_limit_headers(Headers(headers) if as_headers else headers, now=now)
    assert isinstance(hints, RateLimitHints)
    for value in (hints.retry_after, hints.limit, hints.window, hints.remaining, hints.reset):
        assert finite_or_none(value)
    assert hints.window is None or hints.window > 0
    rate = hints.rate
    assert rate is None or 0 <= rate < math.inf  # a policy that overflows names no rate


def test_ietf_fields_are_read() -> None:
    """The property's well-formed IETF fields are read, the most restrictive policy first."""
    hints = parse_rate_limit_headers(
        {"RateLimit-Policy": '"a";q=100;w=60, "b";q=10;w=60', "RateLimit": '"a";r=50;t=30'},
        now=0.0,
    )
    assert (hints.limit, hints.window, hints.remaining, hints.reset) == (10, 60, 50, 30)


# -- the converter -------------------------------------------------------------------------

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and inf included: json.loads reads them
    st.text(),
    st.sampled_from(
        ["2022-06-16 15:16:27.980+0000", "9999-12-31T23:59:59Z", "0001-01-01", "\u0661\u0662"]
    ),
)
WIRE_KEYS = st.sampled_from(
    [
        "id",
        "name",
        "value",
        "email",
        "first_name",
        "created",
        "created_date",
        "completedDate",
        "contract_name",
        "version",
        "links",
        "_links",
        "self",
        "href",
        "rel",
        "fields",
        "options",
        "nested_fields",
        "nestedFields",
        "type",
    ]
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(WIRE_KEYS, st.text(max_size=5)), children, max_size=5),
    ),
    max_leaves=25,
)
MODELS = [User, Team, ContractType, Template, Term, TermOption, ContractField, Contract]


@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
@PER_MODEL
@given(data=JSON_VALUES)
@example(data={"id": 1, "name": "n", "created": 1e300})
@example(data={"id": 2**70, "links": [{"rel": "self", "href": "https://x/contracts/\u00b2"}]})
@example(data={"links": [{"rel": "self", "href": "https://x/contracts/" + "9" * 5000}]})
@example(data={"links": {"self": {"href": "https://x/contracts/99999999999999999999"}}})
def test_converter_gives_a_model_or_response_validation_error(cls: type[Any], data: Any) -> None:
    """structure() on any JSON value gives the model or a ResponseValidationError."""
    result = structure_or_error(data, cls)
    if isinstance(result, ResponseValidationError):
        assert result.model == cls.__name__ and result.errors
        assert len(str(result)) < 3000
    else:
        assert isinstance(result, cls)
        model_id = getattr(result, "id", None)
        assert model_id is None or (type(model_id) is int and -(2**63) <= model_id <= INT64_MAX)


def structure_or_error(data: Any, cls: type[Any]) -> Any:
    """Return the model, or the ResponseValidationError (any other exception propagates)."""
    try:
        return structure(data, cls)
    except ResponseValidationError as error:
        return error


@BOUNDED
@given(data=JSON_VALUES)
def test_converter_lists_give_models_or_response_validation_error(data: Any) -> None:
    """structure_list() on any JSON value gives a list of models or a ResponseValidationError."""
    for cls in (Team, Contract):
        try:
            models = structure_list(data, cls)
        except ResponseValidationError:
            continue
        assert all(isinstance(model, cls) for model in models)


# -- ids -----------------------------------------------------------------------------------


class EvilInt(int):
    """An int whose every text form lies about its value."""

    def __str__(self) -> str:
        return "../../admin"

    def __repr__(self) -> str:
        return "../../admin"

    def __format__(self, spec: str) -> str:
        return "../../admin"

    def __int__(self) -> int:
        return 666

    def __index__(self) -> int:
        return 666


UNICODE_DIGITS = st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1, max_size=6)
ID_INPUTS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.integers(min_value=0, max_value=2**64).map(str),
    UNICODE_DIGITS,
    st.text(max_size=12),
    st.floats(),
    st.none(),
    st.integers(min_value=-5, max_value=2**64).map(EvilInt),
)


@BOUNDED
@given(value=ID_INPUTS)
@example(value="\u0661\u0662")
@example(value="\u00b2")
@example(value=True)
@example(value=2**63)
@example(value=-1)
@example(value=" 12")
def test_path_id_is_digits_of_an_int64_or_configuration_error(value: object) -> None:
    """path_id gives the decimal digits of a non-negative int64, or ConfigurationError."""
    try:
        text = path_id(value, "team_id")
    except ConfigurationError:
        return
    assert text.isascii() and text.isdigit() and 0 <= int(text) <= INT64_MAX
    assert not isinstance(value, bool)
    if isinstance(value, int):
        assert int(text) == int.__int__(value)  # its value, whatever its str says


@pytest.mark.parametrize("value", [EvilInt(7), EvilInt(0)])
def test_path_id_formats_an_int_subclass_from_its_value(value: int) -> None:
    """An int subclass whose str is ../../admin gives its integer value's digits."""
    assert path_id(value, "team_id") == str(int.__int__(value))


HREF_PREFIXES = st.sampled_from(
    ["", "/", "https://x.test/v1/contracts/", "https://x.test/contracts/", "contracts/"]
)


@BOUNDED
@given(
    prefix=HREF_PREFIXES,
    last=st.one_of(st.text(max_size=8), UNICODE_DIGITS, st.integers().map(str)),
    suffix=st.sampled_from(["", "/", "?page=2", "/?x=1"]),
)
@example(prefix="https://x.test/contracts/", last="\u00b2", suffix="")
@example(prefix="https://x.test/contracts/", last="9" * 5000, suffix="")
@example(prefix="https://x.test/contracts/", last="99999999999999999999", suffix="")
@example(prefix="https://x.test/contracts/", last="\u0661\u0662", suffix="")
def test_id_from_href_is_an_int64_or_none(prefix: str, last: str, suffix: str) -> None:
    """id_from_href gives a non-negative int64 or None for any URL, never raises."""
    found = id_from_href(prefix + last + suffix)
    assert found is None or (type(found) is int and 0 <= found <= INT64_MAX)


def test_id_from_href_reads_ids() -> None:
    """The usual hrefs still give their id."""
    assert id_from_href("https://x.test/v1/contracts/42") == 42
    assert id_from_href("https://x.test/v1/contracts/42/?x=1") == 42
    assert id_from_href(None) is None


def test_parse_datetime_bounds() -> None:
    """Years 0001 and 9999 read as dates (the converter's own strings in the property)."""
    assert structure(
        {"id": 1, "name": "t", "created": "9999-12-31T23:59:59Z"}, Team
    ).created == datetime.fromisoformat("9999-12-31T23:59:59+00:00")
