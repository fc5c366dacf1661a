"""Tests of contractsdk.validation's values and keys: types sent as strings, ids, duplicates."""

from __future__ import annotations

import enum
import math
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from contractsdk.validation import TermSet
from tests._termkit import (
    only_problem,
    problems_of,
    terms_fixture,  # noqa: F401  # the fixture `terms`
)

# -- Value types ----------------------------------------------------------------------------


class Colour(enum.IntEnum):
    RED = 7


class Word(str, enum.Enum):
    HELLO = "hello"


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("text", "text"),
        (22, "22"),
        (-3, "-3"),
        (1450.5, "1450.5"),
        (0.1, "0.1"),
        (1e22, "1e+22"),
        (Decimal("1450.50"), "1450.50"),
        (Decimal("1E+3"), "1000"),
        (Decimal("1.5E-7"), "0.00000015"),
        (date(2024, 1, 31), "2024-01-31"),
        (datetime(2024, 1, 31, 9, 30), "2024-01-31T09:30:00"),
        (
            datetime(2024, 1, 31, 9, 30, tzinfo=timezone(timedelta(hours=1))),
            "2024-01-31T09:30:00+01:00",
        ),
        (Colour.RED, "7"),
        (Word.HELLO, "hello"),
    ],
)
def test_values_are_sent_as_strings(terms: TermSet, value: Any, sent: str) -> None:
    """Numbers, decimals, dates and datetimes become the strings the service stores (§7)."""
    assert terms.validate({"contract_name": value}) == {"contract_name": sent}


def test_date_format_applies_to_dates(terms: TermSet) -> None:
    """date_format and datetime_format replace ISO 8601, e.g. the service's dd/mm/yyyy."""
    values = {
        "contract_name": datetime(2024, 1, 31, 9, 30),
        "contract_agreementDate": date(2022, 11, 1),
    }
    assert terms.validate(values, date_format="%d/%m/%Y", datetime_format="%d/%m/%Y %H:%M") == {
        "contract_name": "31/01/2024 09:30",
        "contract_agreementDate": "01/11/2022",
    }


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "True is a bool"),
        (False, "False is a bool"),
        (math.nan, "nan is not a finite number"),
        (math.inf, "inf is not a finite number"),
        (Decimal("NaN"), "Decimal('NaN') is not a finite number"),
        (Decimal("-Infinity"), "Decimal('-Infinity') is not a finite number"),
        ([1, 2], "a list cannot be sent"),
        ({"a": 1}, "a dict cannot be sent"),
        (b"bytes", "a bytes cannot be sent"),
        (object(), "a object cannot be sent"),
    ],
)
def test_unsendable_values_are_bad_values(terms: TermSet, value: Any, fragment: str) -> None:
    """Bools, non-finite numbers and other types are refused as bad_value, not guessed."""
    problem = only_problem(terms, {"contract_name": value})
    assert (problem.kind, problem.path) == ("bad_value", "contract_name")
    assert fragment in problem.message


def test_bad_value_does_not_also_count_as_missing(terms: TermSet) -> None:
    """A refused value is reported once, not again as missing under require_all."""
    problems = problems_of(terms, {"contract_name": [1]}, require_all=True)
    assert [(p.kind, p.term) for p in problems if p.term == "contract_name"] == [
        ("bad_value", "contract_name")
    ]


def test_none_means_no_value(terms: TermSet) -> None:
    """A None value is treated as absent: not sent, not inapplicable, missing if required."""
    values = {"contract_name": "Lease", "contract_petsDetails": None, "contract_pets": None}
    assert terms.validate(values) == {"contract_name": "Lease"}
    assert terms.build_fields(values) == [{"id": 1, "name": "contract_name", "value": "Lease"}]
    missing = [p.term for p in problems_of(terms, values, require_all=True)]
    assert "contract_pets" in missing
    assert "contract_petsDetails" not in missing


# -- Keys: ids, duplicates, names in two branches -------------------------------------------


@pytest.mark.parametrize("as_string", [False, True])
def test_ids_work_as_keys(terms: TermSet, as_string: bool) -> None:
    """A term id, as int or digit string, is the same as its name."""

    def key(term_id: int) -> int | str:
        return str(term_id) if as_string else term_id

    by_id = {key(2): "month", key(3): "breakClauseYes", key(4): "6 months"}
    by_name = {
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }
    assert terms.build_fields(by_id) == terms.build_fields(by_name)
    assert terms.validate(by_id) == by_name


def test_same_term_twice_with_the_same_value_is_accepted(terms: TermSet) -> None:
    """A term given by name and by id with equal values (after conversion) is fine."""
    assert terms.validate({"contract_name": "22", 1: 22, "1": "22"}) == {"contract_name": "22"}


def test_same_term_twice_with_different_values_is_a_duplicate(terms: TermSet) -> None:
    """A term given by name and by id with different values is a duplicate problem."""
    problem = only_problem(terms, {"contract_rentFrequency": "month", 2: "week"})
    assert (problem.kind, problem.path) == ("duplicate", "contract_rentFrequency")
    assert problem.message == (
        "given twice with different values: 'month' (as 'contract_rentFrequency') and 'week' (as 2)"
    )


@pytest.mark.parametrize(("let_type", "room_id"), [("hmo", 6), ("bedsit", 9)])
def test_name_in_two_branches_goes_to_the_chosen_one(
    terms: TermSet, let_type: str, room_id: int
) -> None:
    """A name nested under two options takes the place under the chosen option."""
    fields = terms.build_fields({"contract_room": "Room 1", "contract_letType": let_type})
    assert fields == [
        {
            "id": 5,
            "name": "contract_letType",
            "value": let_type,
            "nested_fields": [{"id": room_id, "name": "contract_room", "value": "Room 1"}],
        }
    ]


def test_name_in_two_branches_under_neither_lists_both_ways(terms: TermSet) -> None:
    """When neither place applies, the message names each choice that would enable it."""
    problem = only_problem(terms, {"contract_letType": "sole", "contract_room": "Room 1"})
    assert problem.kind == "inapplicable"
    assert problem.path == "contract_letType=hmo › contract_room"
    assert problem.message == (
        "applies only when contract_letType=hmo (contract_letType is 'sole'), "
        "or when contract_letType=bedsit (contract_letType is 'sole')"
    )
    assert terms.paths("contract_room") == (
        "contract_letType=hmo › contract_room",
        "contract_letType=bedsit › contract_room",
    )


def test_id_of_a_name_in_two_branches_pins_its_place(terms: TermSet) -> None:
    """Given by id, a value belongs only to that id's place, not to its namesake's."""
    assert terms.build_fields({"contract_letType": "bedsit", 9: "R"})[0]["nested_fields"] == [
        {"id": 9, "name": "contract_room", "value": "R"}
    ]
    problem = only_problem(terms, {"contract_letType": "bedsit", 6: "R"})
    assert (problem.kind, problem.path) == ("inapplicable", "contract_letType=hmo › contract_room")


@pytest.mark.parametrize(
    "values",
    [
        {6: "R", "contract_room": "R"},  # by id, then by name: any place of the name
        {"contract_room": "R", 6: "R"},  # by name, then by id: the same
        {6: "R", 9: "R"},  # by both ids: either place
    ],
)
def test_a_name_among_the_keys_frees_an_id_to_any_place(
    terms: TermSet, values: dict[Any, Any]
) -> None:
    """Once a term is also given by name (or by both ids), its value may go to any place."""
    fields = terms.build_fields({"contract_letType": "bedsit", **values})
    assert fields[0]["nested_fields"] == [{"id": 9, "name": "contract_room", "value": "R"}]
