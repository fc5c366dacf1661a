"""Tests of contractsdk.validation: the term tree and the exclusive-option validator."""

from __future__ import annotations

import enum
import json
import math
import pickle
import subprocess
import sys
from collections.abc import Mapping
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from contractsdk import TermValidationError
from contractsdk.models import Term, TermOption
from contractsdk.resources.contracts import flatten_fields
from contractsdk.validation import TermProblem, TermSet, values_from_fields

# -- A small hand-written template ----------------------------------------------------------
#
# contract_name                              text
# contract_rentFrequency                     month | week
#   month → contract_breakClause             breakClauseYes | breakClauseNo
#             breakClauseYes → contract_breakClauseStart   3 months | 6 months
# contract_letType                           hmo | sole | bedsit
#   hmo    → contract_room (id 6), contract_houseRules  rulesYes | rulesNo
#   sole   → contract_soleRules              text
#   bedsit → contract_room (id 9)            the same name under a second option
# contract_pets                              petsYes | petsNo
#   petsYes → contract_petsDetails           text
# contract_agreementDate                     text


def text(term_id: int, name: str, label: str = "") -> Term:
    return Term(id=term_id, name=name, label=label or f"Label of {name}")


def choice(term_id: int, name: str, *options: TermOption, label: str = "") -> Term:
    return Term(id=term_id, name=name, label=label or f"Label of {name}", options=options)


def option(value: str, *nested: Term) -> TermOption:
    return TermOption(value=value, nested_terms=nested)


def small_terms() -> list[Term]:
    return [
        text(1, "contract_name", "Name"),
        choice(
            2,
            "contract_rentFrequency",
            option(
                "month",
                choice(
                    3,
                    "contract_breakClause",
                    option(
                        "breakClauseYes",
                        choice(
                            4,
                            "contract_breakClauseStart",
                            option("3 months"),
                            option("6 months"),
                        ),
                    ),
                    option("breakClauseNo"),
                ),
            ),
            option("week"),
            label="How frequently will the rent be paid?",
        ),
        choice(
            5,
            "contract_letType",
            option(
                "hmo",
                text(6, "contract_room", "Room"),
                choice(7, "contract_houseRules", option("rulesYes"), option("rulesNo")),
            ),
            option("sole", text(8, "contract_soleRules")),
            option("bedsit", text(9, "contract_room", "Bedsit room")),
        ),
        choice(
            10,
            "contract_pets",
            option("petsYes", text(11, "contract_petsDetails")),
            option("petsNo"),
        ),
        text(12, "contract_agreementDate", "Agreement Date"),
    ]


@pytest.fixture
def terms() -> TermSet:
    return TermSet(small_terms(), template_id=149)


def problems_of(terms: TermSet, values: Mapping[Any, Any], **kwargs: Any) -> list[TermProblem]:
    with pytest.raises(TermValidationError) as caught:
        terms.validate(values, **kwargs)
    return list(caught.value.problems)


def only_problem(terms: TermSet, values: Mapping[Any, Any], **kwargs: Any) -> TermProblem:
    problems = problems_of(terms, values, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


BREAK_START_PATH = (
    "contract_rentFrequency=month › contract_breakClause=breakClauseYes › contract_breakClauseStart"
)

# -- The real AST sample (reference/samples/contract_fields.json, copied to tests/data) ------

SAMPLE = Path(__file__).resolve().parent / "data" / "contract_fields.json"


def term_from_wire(wire: Mapping[str, Any]) -> Term:
    """Build a Term from the wire dict (the real converter is written elsewhere)."""
    return Term(
        id=wire["id"],
        name=wire["name"],
        label=wire.get("label", ""),
        options=tuple(
            TermOption(
                value=opt["value"],
                nested_terms=tuple(
                    term_from_wire(nested)
                    # service-api.md §8: the wire says nested_fields, one doc says nestedFields.
                    for nested in opt.get("nested_fields") or opt.get("nestedFields") or ()
                ),
            )
            for opt in wire.get("options") or ()
        ),
    )


@pytest.fixture
def ast_terms() -> TermSet:
    wire = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return TermSet([term_from_wire(item) for item in wire], template_id=149)


AST_ROW: dict[str, Any] = {
    "contract_name": "Flat 2, 10 High Street",
    "contract_address": "10 High Street, London",
    "contract_agreementDate": date(2024, 5, 1),
    "contract_mortgage": "mortgageNo",
    "contract_rentFrequency": "month",
    "contract_breakClause": "breakClauseYes",
    "contract_breakClauseStart": "6 months",
    "contract_superiorLease": "superiorLeaseNo",
    "contract_startDate": date(2024, 6, 1),
    "contract_parking": "parkingYes",
    "contract_parkingAddress": "Bay 4",
    "contract_agent": "agentNo",
    "contract_depositReturn": "10 Working Days",
    "contract_individualRent": Decimal("1450.00"),
    "contract_letType": "sole",
    "contract_valuation": "soleHouseRulesNo",
    "contract_depositAmount": 1673,
    "contract_specialTerms": "specialTermsYes",
    "contract_specialTermsNumber": "specialTermsTwo",
    "contract_specialTermsDetails1": "No smoking.",
    "contract_specialTermsDetails2": "No parties.",
}


# -- Building the payload -------------------------------------------------------------------

#: Values three levels deep (rent frequency › break clause › its start), given out of order.
NESTED_VALUES = {
    "contract_agreementDate": "2024-05-01",
    "contract_breakClauseStart": "3 months",
    "contract_breakClause": "breakClauseYes",
    "contract_rentFrequency": "month",
    "contract_name": "Lease",
}


def test_build_fields_nests_answers_in_template_order(terms: TermSet) -> None:
    """Flat values become the nested fields payload of §7, in template order, 3 levels deep."""
    values = NESTED_VALUES
    assert terms.build_fields(values) == [
        {"id": 1, "name": "contract_name", "value": "Lease"},
        {
            "id": 2,
            "name": "contract_rentFrequency",
            "value": "month",
            "nested_fields": [
                {
                    "id": 3,
                    "name": "contract_breakClause",
                    "value": "breakClauseYes",
                    "nested_fields": [
                        {"id": 4, "name": "contract_breakClauseStart", "value": "3 months"}
                    ],
                }
            ],
        },
        {"id": 12, "name": "contract_agreementDate", "value": "2024-05-01"},
    ]


def test_build_fields_omits_nested_fields_without_answers(terms: TermSet) -> None:
    """A chosen option without nested answers gets no nested_fields key at all."""
    assert terms.build_fields({"contract_rentFrequency": "week", "contract_pets": "petsYes"}) == [
        {"id": 2, "name": "contract_rentFrequency", "value": "week"},
        {"id": 10, "name": "contract_pets", "value": "petsYes"},
    ]


def test_build_fields_of_nothing_is_empty(terms: TermSet) -> None:
    """No values give an empty payload (nothing is required unless require_all)."""
    assert terms.build_fields({}) == []


def test_check_holds_the_nested_and_the_flat_form(terms: TermSet) -> None:
    """check() gives build_fields' payload, validate's mapping and the flat stored fields."""
    values = NESTED_VALUES
    checked = terms.check(values)
    assert checked.fields == terms.build_fields(values)
    assert checked.by_name == terms.validate(values)
    assert checked.flat == flatten_fields(checked.fields)  # the order the service stores
    assert [(field.id, field.name, field.value) for field in checked.flat] == [
        (1, "contract_name", "Lease"),
        (2, "contract_rentFrequency", "month"),
        (3, "contract_breakClause", "breakClauseYes"),
        (4, "contract_breakClauseStart", "3 months"),
        (12, "contract_agreementDate", "2024-05-01"),
    ]
    assert checked.by_id == {
        1: "Lease",
        2: "month",
        3: "breakClauseYes",
        4: "3 months",
        12: "2024-05-01",
    }


def test_check_keeps_a_term_without_an_id_by_name() -> None:
    """A term the service sent without an id is sent and stored by its name alone."""
    terms = TermSet([Term(id=None, name="contract_name", label="Name")])
    checked = terms.check({"contract_name": "Lease"})
    assert checked.fields == [{"name": "contract_name", "value": "Lease"}]
    assert [(field.id, field.name) for field in checked.flat] == [(None, "contract_name")]
    assert checked.by_id == {}


def test_check_raises_before_building(terms: TermSet) -> None:
    """check() refuses wrong values as validate does, with the same problems."""
    values = {"contract_rentFrequency": "fortnight", "contract_nme": "x"}
    with pytest.raises(TermValidationError) as from_check:
        terms.check(values)
    with pytest.raises(TermValidationError) as from_validate:
        terms.validate(values)
    assert from_check.value.problems == from_validate.value.problems


def test_validate_returns_strings_in_template_order(terms: TermSet) -> None:
    """Validation returns {name: string} for the applicable terms, in template order."""
    result = terms.validate({"contract_pets": "petsYes", 1: "Lease", "contract_petsDetails": 2})
    assert result == {
        "contract_name": "Lease",
        "contract_pets": "petsYes",
        "contract_petsDetails": "2",
    }
    assert list(result) == ["contract_name", "contract_pets", "contract_petsDetails"]


def test_build_fields_raises_before_building(terms: TermSet) -> None:
    """build_fields validates first and raises the same error."""
    with pytest.raises(TermValidationError) as caught:
        terms.build_fields({"contract_rentFrequency": "fortnight"})
    assert [problem.kind for problem in caught.value.problems] == ["not_an_option"]


# -- The exclusive-option rule --------------------------------------------------------------


def test_values_under_two_options_are_one_exclusive_problem(terms: TermSet) -> None:
    """Values under two options of one term give one exclusive_options problem, not several."""
    problem = only_problem(
        terms,
        {"contract_letType": "hmo", "contract_houseRules": "rulesNo", "contract_soleRules": "x"},
    )
    assert problem.kind == "exclusive_options"
    assert problem.path == "contract_letType"
    assert problem.term == "contract_letType"
    assert "hmo (contract_houseRules)" in problem.message
    assert "sole (contract_soleRules)" in problem.message
    assert "contract_letType is 'hmo', so the terms under sole do not apply" in problem.message


def test_exclusive_options_without_a_choice_says_to_choose(terms: TermSet) -> None:
    """With no value for the term itself, the exclusive problem asks the user to choose one."""
    problem = only_problem(terms, {"contract_houseRules": "rulesNo", "contract_soleRules": "x"})
    assert problem.kind == "exclusive_options"
    assert "contract_letType has no value; choose one option" in problem.message


def test_exclusive_options_counts_deeper_values(terms: TermSet) -> None:
    """A value nested two levels under an option counts for that option."""
    problem = only_problem(
        terms, {"contract_rentFrequency": "week", "contract_breakClauseStart": "3 months"}
    )
    # Only one option of contract_rentFrequency (month) has values under it: inapplicable.
    assert problem.kind == "inapplicable"
    assert problem.path == BREAK_START_PATH


def test_nested_value_under_unchosen_option_is_inapplicable(terms: TermSet) -> None:
    """A nested value whose parent chose another option says which choice would enable it."""
    problem = only_problem(
        terms,
        {
            "contract_rentFrequency": "month",
            "contract_breakClause": "breakClauseNo",
            "contract_breakClauseStart": "3 months",
        },
    )
    assert problem.kind == "inapplicable"
    assert problem.path == BREAK_START_PATH
    assert problem.term == "contract_breakClauseStart"
    assert problem.message == (
        "applies only when contract_breakClause=breakClauseYes "
        "(contract_breakClause is 'breakClauseNo')"
    )
    assert problem.suggestion == "contract_breakClause=breakClauseYes"


def test_nested_value_without_parent_value_is_inapplicable(terms: TermSet) -> None:
    """A nested value whose ancestors have no value is inapplicable; no choice is guessed."""
    problem = only_problem(terms, {"contract_breakClauseStart": "3 months"})
    assert problem.kind == "inapplicable"
    assert problem.message == (
        "applies only when contract_rentFrequency=month and "
        "contract_breakClause=breakClauseYes (contract_rentFrequency has no value)"
    )
    assert problem.suggestion == "contract_rentFrequency=month"


def test_nested_value_under_a_wrong_parent_value_says_so(terms: TermSet) -> None:
    """When the parent's value is not an option, both problems are reported."""
    problems = problems_of(terms, {"contract_pets": "yes", "contract_petsDetails": "a cat"})
    assert [(p.kind, p.term) for p in problems] == [
        ("not_an_option", "contract_pets"),
        ("inapplicable", "contract_petsDetails"),
    ]
    assert "(contract_pets is 'yes', which is not an option)" in problems[1].message


def test_wrong_option_of_an_inapplicable_term_is_also_reported(terms: TermSet) -> None:
    """An inapplicable choice term with a value that is not an option gets both problems."""
    problems = problems_of(terms, {"contract_breakClause": "maybe"})
    assert [p.kind for p in problems] == ["not_an_option", "inapplicable"]


# -- Unknown terms --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("contract_rentFrequncy", "contract_rentFrequency"),  # a typo
        ("rentFrequency", "contract_rentFrequency"),  # missing prefix
        ("CONTRACT_RENTFREQUENCY", "contract_rentFrequency"),  # case
        ("rent_frequency", "contract_rentFrequency"),  # snake_case without prefix
        ("petsDetail", "contract_petsDetails"),  # missing prefix and a typo
        ("contract_zzzzzz", None),  # nothing close
    ],
)
def test_unknown_term_suggests_a_close_name(
    terms: TermSet, key: str, suggestion: str | None
) -> None:
    """An unknown name is refused with a did-you-mean suggestion when one is close."""
    problem = only_problem(terms, {key: "x"})
    assert problem.kind == "unknown_term"
    assert problem.path == problem.term == key
    assert problem.suggestion == suggestion
    if suggestion is not None:
        assert problem.message == f"unknown term {key!r}; did you mean {suggestion!r}?"
    else:
        assert problem.message == f"unknown term {key!r}"


@pytest.mark.parametrize("key", [9999, "9999"])
def test_unknown_id_is_refused(terms: TermSet, key: int | str) -> None:
    """An id (int or digit string) that no term has is an unknown_term."""
    problem = only_problem(terms, {key: "x"})
    assert problem.kind == "unknown_term"
    assert problem.message == "no term of this template has the id 9999"


@pytest.mark.parametrize("key", [1.0, True, None, ("contract_name",)])
def test_key_of_another_type_is_refused(terms: TermSet, key: object) -> None:
    """Keys must be names or ids; a bool, float, None or tuple key is an unknown_term."""
    problem = only_problem(terms, {key: "x"})
    assert problem.kind == "unknown_term"
    assert "a key must be a term name (str) or id (int)" in problem.message


def test_unknown_term_suggestion_is_stable_across_calls(terms: TermSet) -> None:
    """The same misspelt key (a bulk file's column) gets the same suggestion every row."""
    first = only_problem(terms, {"contract_agrementDate": "x"})
    again = only_problem(terms, {"contract_agrementDate": "y"})
    assert first == again
    assert first.suggestion == "contract_agreementDate"


def test_unknown_term_with_none_value_is_still_refused(terms: TermSet) -> None:
    """A None value skips the value, not the check of its key."""
    assert only_problem(terms, {"contract_nmae": None}).kind == "unknown_term"


# -- Options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "suggestion"),
    [
        ("Month", "month"),  # case mismatch first
        (" week ", "week"),  # stray whitespace
        ("mnth", "month"),  # a typo
        ("fortnight", None),
        ("", None),  # an empty string is not an option either
    ],
)
def test_value_not_an_option_suggests_one(
    terms: TermSet, value: str, suggestion: str | None
) -> None:
    """A choice term refuses anything but an exact option value, listing the options."""
    problem = only_problem(terms, {"contract_rentFrequency": value})
    assert problem.kind == "not_an_option"
    assert problem.path == "contract_rentFrequency"
    assert problem.suggestion == suggestion
    assert problem.message.startswith(f"{value!r} is not an option")
    assert problem.message.endswith("(options: month, week)")
    if suggestion is not None:
        assert f"did you mean {suggestion!r}?" in problem.message


def test_not_an_option_stops_the_walk_below_it(terms: TermSet) -> None:
    """Nothing under a term with a wrong value is reported as missing."""
    problem = only_problem(terms, {"contract_rentFrequency": "Month"}, require_all=False)
    assert problem.kind == "not_an_option"
    problems = problems_of(
        terms,
        {
            "contract_name": "n",
            "contract_rentFrequency": "Month",
            "contract_letType": "sole",
            "contract_soleRules": "r",
            "contract_pets": "petsNo",
            "contract_agreementDate": "d",
        },
        require_all=True,
    )
    assert [p.kind for p in problems] == ["not_an_option"]


# -- All problems at once -------------------------------------------------------------------


def test_every_problem_is_reported_at_once(terms: TermSet) -> None:
    """One call reports problems of several kinds, in template order, unknown keys last."""
    problems = problems_of(
        terms,
        {
            "rentFrequency": "month",
            "contract_breakClauseStart": "3 months",
            "contract_letType": "Sole",
            "contract_pets": "petsNo",
            "contract_petsDetails": "a cat",
            "contract_agreementDate": True,
            99: "x",
        },
    )
    assert [(p.kind, p.term) for p in problems] == [
        ("inapplicable", "contract_breakClauseStart"),
        ("not_an_option", "contract_letType"),
        ("inapplicable", "contract_petsDetails"),
        ("bad_value", "contract_agreementDate"),
        ("unknown_term", "rentFrequency"),
        ("unknown_term", "99"),
    ]


def test_error_message_lists_every_problem_with_its_path(terms: TermSet) -> None:
    """str(TermValidationError) has a count and one line per problem, each with its path."""
    with pytest.raises(TermValidationError) as caught:
        terms.validate({"contract_breakClauseStart": "3 months", "contract_pets": "dog"})
    assert str(caught.value) == (
        "2 problems with the contract values:\n"
        f"  - {BREAK_START_PATH}: applies only when contract_rentFrequency=month and "
        "contract_breakClause=breakClauseYes (contract_rentFrequency has no value)\n"
        "  - contract_pets: 'dog' is not an option (options: petsYes, petsNo)"
    )
    assert isinstance(caught.value, ValueError)


def test_error_pickles_with_its_problems(terms: TermSet) -> None:
    """A TermValidationError survives pickling with its problems (process pools need it)."""
    with pytest.raises(TermValidationError) as caught:
        terms.validate({"contract_breakClauseStart": "3 months", "rentFrequency": "x"})
    copy = pickle.loads(pickle.dumps(caught.value))
    assert copy.problems == caught.value.problems
    assert str(copy) == str(caught.value)


# -- require_all ----------------------------------------------------------------------------


def test_require_all_reports_missing_applicable_terms_only(terms: TermSet) -> None:
    """require_all reports terms nested under chosen options, never under unchosen ones."""
    problems = problems_of(
        terms,
        {
            "contract_rentFrequency": "month",
            "contract_letType": "hmo",
            "contract_room": "2",
            "contract_pets": "petsNo",
        },
        require_all=True,
    )
    assert [(p.kind, p.path) for p in problems] == [
        ("missing", "contract_name"),
        ("missing", "contract_rentFrequency=month › contract_breakClause"),
        ("missing", "contract_letType=hmo › contract_houseRules"),
        ("missing", "contract_agreementDate"),
    ]
    assert problems[0].message == "no value given"
    assert problems[1].message == "no value given; choose one of: breakClauseYes, breakClauseNo"


def test_require_all_passes_when_every_applicable_term_has_a_value(terms: TermSet) -> None:
    """require_all accepts values that answer every applicable term and nothing else."""
    values = {
        "contract_name": "Lease",
        "contract_rentFrequency": "week",
        "contract_letType": "bedsit",
        "contract_room": "Room 3",
        "contract_pets": "petsNo",
        "contract_agreementDate": "2024-05-01",
    }
    assert terms.validate(values, require_all=True) == values


@pytest.mark.parametrize("blank", ["", "   "])
def test_require_all_counts_a_blank_text_as_missing(terms: TermSet, blank: str) -> None:
    """Under require_all an empty or blank text value is missing; otherwise it is sent."""
    assert terms.validate({"contract_name": blank}) == {"contract_name": blank}
    problems = problems_of(terms, {"contract_name": blank}, require_all=True)
    assert (problems[0].kind, problems[0].message) == ("missing", "the value is empty")


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


# -- Round trip -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"contract_name": "Lease", "contract_agreementDate": date(2024, 1, 2)},
        {
            "contract_rentFrequency": "month",
            "contract_breakClause": "breakClauseYes",
            "contract_breakClauseStart": "3 months",
            "contract_letType": "hmo",
            "contract_room": 4,
            "contract_houseRules": "rulesYes",
            "contract_pets": "petsYes",
            "contract_petsDetails": Decimal("2"),
        },
        {2: "week", "5": "bedsit", "contract_room": "R", 10: "petsNo"},
    ],
)
def test_values_from_fields_inverts_build_fields(terms: TermSet, values: dict[Any, Any]) -> None:
    """values_from_fields(build_fields(v)) == validate(v)."""
    assert values_from_fields(terms.build_fields(values)) == terms.validate(values)


def test_values_from_fields_reads_both_nested_spellings() -> None:
    """values_from_fields reads nested_fields and nestedFields, and keys nameless ones by id."""
    payload = [
        {"id": 2, "value": "month", "nestedFields": [{"id": 3, "name": "b", "value": "x"}]},
        {"id": 5, "name": "a", "value": "hmo", "nested_fields": [{"id": 6, "value": "R"}]},
        {"id": 7, "name": "no_value"},
    ]
    assert values_from_fields(payload) == {2: "month", "b": "x", "a": "hmo", 6: "R"}


# -- The tree -------------------------------------------------------------------------------


def test_tree_shows_labels_options_and_nesting(terms: TermSet) -> None:
    """tree() renders names, ids, labels, radio options and indented nested terms."""
    lines = terms.tree().splitlines()
    assert lines[:10] == [
        "contract_name (id 1): Name",
        "contract_rentFrequency (id 2): How frequently will the rent be paid?",
        "  ( ) month",
        "      contract_breakClause (id 3): Label of contract_breakClause",
        "        ( ) breakClauseYes",
        "            contract_breakClauseStart (id 4): Label of contract_breakClauseStart",
        "              ( ) 3 months",
        "              ( ) 6 months",
        "        ( ) breakClauseNo",
        "  ( ) week",
    ]
    assert "contract_agreementDate (id 12): Agreement Date" in lines


def test_tree_marks_given_values(terms: TermSet) -> None:
    """With values, tree() marks chosen options and shows text values, even wrong ones."""
    rendered = terms.tree(
        {"contract_name": "Lease", 2: "month", "contract_pets": "cat", "contract_room": 3}
    )
    assert "contract_name (id 1): Name = 'Lease'" in rendered
    assert "  (x) month\n" in rendered
    assert "  ( ) week" in rendered
    assert "contract_pets (id 10): Label of contract_pets = 'cat' (not an option)" in rendered
    assert "contract_room (id 9): Bedsit room = '3'" in rendered


def test_tree_shows_unsendable_values_without_raising(terms: TermSet) -> None:
    """tree() is for display: a value validate would refuse is shown, not raised."""
    rendered = terms.tree({"contract_name": True, "contract_nothing": "x"})
    assert rendered.splitlines()[0] == "contract_name (id 1): Name = 'True'"


# -- The TermSet as a sequence and an index --------------------------------------------------


def test_termset_is_a_sequence_of_top_level_terms(terms: TermSet) -> None:
    """len, indexing, slicing and iteration see the top-level terms in template order."""
    assert len(terms) == 5
    assert terms[0].name == "contract_name"
    assert [term.id for term in terms[1:3]] == [2, 5]
    assert [term.id for term in terms] == [1, 2, 5, 10, 12]
    assert terms.template_id == 149
    assert repr(terms) == "TermSet(5 terms, 12 in all, template_id=149)"


def test_walk_visits_every_place_depth_first(terms: TermSet) -> None:
    """walk() yields (path, term) for the whole tree in template order."""
    walked = [(path, term.id) for path, term in terms.walk()]
    assert walked[:4] == [
        ("contract_name", 1),
        ("contract_rentFrequency", 2),
        ("contract_rentFrequency=month › contract_breakClause", 3),
        (BREAK_START_PATH, 4),
    ]
    assert [term_id for _, term_id in walked] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]


@pytest.mark.parametrize("key", ["contract_breakClauseStart", 4, "4"])
def test_find_looks_through_the_whole_tree(terms: TermSet, key: str | int) -> None:
    """find() takes a name, an id or a digit-string id, at any depth."""
    found = terms.find(key)
    assert found is not None
    assert found.id == 4


def test_find_and_contains_for_unknown_terms(terms: TermSet) -> None:
    """Unknown names and ids are not found; `in` checks names, ids and Terms anywhere."""
    assert terms.find("contract_nothing") is None
    assert terms.find(404) is None
    assert terms.paths("contract_nothing") == ()
    # mypy's strict equality sees a Sequence[Term] and flags names and ids; at run time
    # __contains__ takes them, which is the point of this test.
    assert "contract_petsDetails" in terms  # type: ignore[comparison-overlap]
    assert 11 in terms  # type: ignore[comparison-overlap]
    assert terms.find(11) in terms
    assert "contract_nothing" not in terms  # type: ignore[comparison-overlap]
    assert True not in terms  # type: ignore[comparison-overlap]
    assert text(11, "contract_other") not in terms


def test_termset_pickles(terms: TermSet) -> None:
    """A TermSet survives pickling (a process pool can receive it) and validates the same."""
    values = {"contract_rentFrequency": "month", "contract_breakClause": "breakClauseNo"}
    copy = pickle.loads(pickle.dumps(terms))
    assert copy.build_fields(values) == terms.build_fields(values)
    assert copy.paths("contract_room") == terms.paths("contract_room")


def test_modules_import_in_either_order() -> None:
    """contractsdk.validation and contractsdk.models import first without a cycle."""
    # One fresh interpreter tries both orders, forgetting contractsdk between the two.
    code = """
import importlib, sys
for first in ("contractsdk.validation", "contractsdk.models"):
    for name in [n for n in sys.modules if n.split(".")[0] == "contractsdk"]:
        del sys.modules[name]
    importlib.import_module(first)
    from contractsdk.validation import TermSet
    print(first, TermSet)
"""
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("TermSet") == 2, done.stdout


def test_names_lists_each_name_once(terms: TermSet) -> None:
    """The names property holds every distinct name in template order, once even if nested twice."""
    assert terms.names.count("contract_room") == 1
    assert terms.names[:3] == ("contract_name", "contract_rentFrequency", "contract_breakClause")


# -- The real AST template ------------------------------------------------------------------


def test_sample_loads_into_a_termset(ast_terms: TermSet) -> None:
    """The real 42-term AST template loads, with its nested terms 3 levels deep."""
    assert len(ast_terms) == 42
    assert len(list(ast_terms.walk())) == 87
    assert ast_terms.paths("contract_breakClauseStart") == (BREAK_START_PATH,)
    assert max(path.count("›") for path, _ in ast_terms.walk()) == 2


def test_sample_row_validates_and_builds(ast_terms: TermSet) -> None:
    """A realistic AST row validates and builds a payload with a 3-level nested answer."""
    result = ast_terms.validate(AST_ROW, date_format="%d/%m/%Y")
    assert result["contract_agreementDate"] == "01/05/2024"
    assert result["contract_individualRent"] == "1450.00"
    fields = ast_terms.build_fields(AST_ROW, date_format="%d/%m/%Y")
    rent = next(field for field in fields if field["name"] == "contract_rentFrequency")
    assert rent == {
        "id": 3779,
        "name": "contract_rentFrequency",
        "value": "month",
        "nested_fields": [
            {
                "id": 3860,
                "name": "contract_breakClause",
                "value": "breakClauseYes",
                "nested_fields": [
                    {"id": 3861, "name": "contract_breakClauseStart", "value": "6 months"}
                ],
            }
        ],
    }
    assert values_from_fields(fields) == result


def test_sample_reports_a_three_level_path(ast_terms: TermSet) -> None:
    """A wrong value three levels deep is reported with its full path."""
    row = dict(AST_ROW, contract_breakClauseStart="3 Months")
    problem = only_problem(ast_terms, row)
    assert problem.kind == "not_an_option"
    assert problem.path == BREAK_START_PATH
    assert problem.suggestion == "3 months"


def test_sample_exclusive_special_terms(ast_terms: TermSet) -> None:
    """Special-term details under two counts of special terms are an exclusive problem."""
    row = dict(AST_ROW, contract_specialTermsDetails="One only.")
    problem = only_problem(ast_terms, row)
    assert problem.kind == "exclusive_options"
    assert problem.path == "contract_specialTerms=specialTermsYes › contract_specialTermsNumber"
    assert "specialTermsOne (contract_specialTermsDetails)" in problem.message
    assert (
        "specialTermsTwo (contract_specialTermsDetails1, contract_specialTermsDetails2)"
        in problem.message
    )


def test_sample_require_all_lists_the_unanswered(ast_terms: TermSet) -> None:
    """require_all on a partial AST row reports the unanswered applicable terms only."""
    problems = problems_of(ast_terms, AST_ROW, require_all=True)
    assert {p.kind for p in problems} == {"missing"}
    missing = {p.term for p in problems}
    assert "contract_endDate" in missing
    assert "contract_agentName" not in missing  # under agentYes, not chosen
    assert "contract_sickPay" not in missing  # under soleHouseRulesYes, not chosen
