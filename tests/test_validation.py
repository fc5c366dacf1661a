"""Tests of contractsdk.validation's rules: the exclusive-option validator and its problems."""

from __future__ import annotations

import pickle

import pytest

from contractsdk import TermValidationError
from contractsdk.validation import TermSet
from tests._termkit import (
    BREAK_START_PATH,
    only_problem,
    problems_of,
    terms_fixture,  # noqa: F401  # the fixture `terms`
)

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


@pytest.mark.parametrize(
    "key", ["How frequently will the rent be paid?", "how frequently  will the RENT be paid? "]
)
def test_a_term_s_label_given_for_its_name_says_whose_it_is(terms: TermSet, key: str) -> None:
    """Identity fields take labels, terms do not: a label says which term it belongs to."""
    problem = only_problem(terms, {key: "month"})
    assert problem.kind == "unknown_term" and problem.suggestion == "contract_rentFrequency"
    assert problem.message == (
        f"unknown term {key!r}: that is the label of contract_rentFrequency; give its name"
    )


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
