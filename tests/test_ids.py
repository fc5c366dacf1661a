"""Tests for contractsdk._ids: the one answer to "is this an id?"."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contractsdk import ConfigurationError
from contractsdk._ids import INT64_MAX, id_or_none, parse_id
from contractsdk.models._base import id_from_href
from contractsdk.resources._base import path_id


class EvilInt(int):
    """An int whose str, int and index say something else."""

    def __str__(self) -> str:
        return "../../admin"

    def __int__(self) -> int:
        return -1

    def __index__(self) -> int:
        return -1


class Colour(int):
    """A plain int subclass (as an IntEnum member is)."""


ANYTHING = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=25),
    st.from_regex(r"\A[0-9]{1,22}\Z"),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True),
    st.integers(min_value=-5, max_value=2**64).map(EvilInt),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=ANYTHING)
@example(value="\u0661\u0662")
@example(value="\u00b2")
@example(value="9" * 19)
@example(value="0" * 25)
def test_parse_id_is_a_non_negative_int64_or_configuration_error(value: object) -> None:
    """parse_id gives a non-negative int64 from an int or ASCII digits, else refuses."""
    if id_or_none(value) is None:
        with pytest.raises(ConfigurationError, match="team_id"):
            parse_id(value, "team_id")
        return
    number = parse_id(value, "team_id")
    assert type(number) is int and 0 <= number <= INT64_MAX
    assert id_or_none(value) == number
    assert not isinstance(value, bool)
    if isinstance(value, str):
        assert value.isascii() and value.isdigit() and int(value) == number
    else:
        assert isinstance(value, int) and int.__int__(value) == number


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (42, 42), ("42", 42), ("007", 7), (INT64_MAX, INT64_MAX), (Colour(5), 5)],
)
def test_parse_id_reads_ids(value: object, expected: int) -> None:
    """Ints, int subclasses and digit strings are ids, read by their value."""
    assert parse_id(value, "x") == expected
    assert type(parse_id(value, "x")) is int


def test_parse_id_reads_an_int_subclass_by_int_int() -> None:
    """An int subclass counts by int.__int__, not by what its own methods say."""
    assert parse_id(EvilInt(7), "team_id") == 7
    assert path_id(EvilInt(7), "team_id") == "7"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (None, "team_id is None: no id to send"),
        (True, "team_id must be an integer id, got True"),
        (False, "team_id must be an integer id, got False"),
        (-1, "team_id must be a non-negative int64 id, got -1"),
        (2**63, f"team_id must be a non-negative int64 id, got {2**63}"),
        ("9" * 20, "team_id must be a non-negative int64 id"),
        (" 12", "team_id must be an integer id, got ' 12'"),
        ("\u0661\u0662", "team_id must be an integer id"),
        ("1/teams", "team_id must be an integer id"),
        (1.0, "team_id must be an integer id, got 1.0"),
        (10**5000, "got an integer of 16610 bits"),
    ],
    ids=lambda value: type(value).__name__,
)
def test_parse_id_refuses_with_a_clear_message(value: object, fragment: str) -> None:
    """What is not an id is refused with ConfigurationError saying what and why."""
    with pytest.raises(ConfigurationError) as caught:
        parse_id(value, "team_id")
    assert fragment in str(caught.value)


@pytest.mark.parametrize("value", [None, True, -1, 2**63, "", "a1", "1 ", "\u00b2", 1.0, [1]])
def test_id_or_none_gives_none_for_what_is_not_an_id(value: object) -> None:
    """id_or_none never raises: anything that is not an id is None."""
    assert id_or_none(value) is None


def test_id_from_href_uses_the_same_rules() -> None:
    """An href's last segment is an id by id_or_none's rules."""
    assert id_from_href("https://x.test/v1/contracts/42/?x=1") == 42
    assert id_from_href(f"https://x.test/v1/contracts/{2**63}") is None
    assert id_from_href("https://x.test/v1/contracts/\u0661") is None
    assert id_from_href("") is None
