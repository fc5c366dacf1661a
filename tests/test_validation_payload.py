"""Tests of contractsdk.validation's payload: flat values as nested fields, and back."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from contractsdk import TermValidationError
from contractsdk.models import ContractField, Term
from contractsdk.resources.contracts import flatten_fields
from contractsdk.validation import TermSet, values_from_fields
from tests._termkit import choice, option, terms_fixture, text  # noqa: F401  # the fixture `terms`

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


# -- An update, against the values a contract holds ------------------------------------------


def stored_fields(terms: TermSet, values: dict[str, str]) -> tuple[ContractField, ...]:
    """What a contract made with ``values`` holds: the checked values, flat."""
    return terms.check(values).flat


def test_update_of_a_nested_term_alone_goes_under_its_stored_options(terms: TermSet) -> None:
    """Given alone, a nested term is sent inside its ancestors, at the options stored."""
    stored = stored_fields(terms, NESTED_VALUES)
    fields = terms.build_fields({"contract_breakClauseStart": "6 months"}, stored=stored)
    assert fields == [
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
                        {"id": 4, "name": "contract_breakClauseStart", "value": "6 months"}
                    ],
                }
            ],
        }
    ]
    # Without what is stored, the same values are refused: their ancestors have no value.
    with pytest.raises(TermValidationError, match="contract_rentFrequency has no value"):
        terms.build_fields({"contract_breakClauseStart": "6 months"})


def test_update_sends_only_what_is_given_and_its_ancestors(terms: TermSet) -> None:
    """Stored values that are not ancestors of a given one are not sent again."""
    stored = stored_fields(terms, NESTED_VALUES)
    assert terms.build_fields({"contract_name": "Renamed"}, stored=stored) == [
        {"id": 1, "name": "contract_name", "value": "Renamed"}
    ]
    # What the contract holds afterwards, in template order.
    assert terms.validate({"contract_name": "Renamed"}, stored=stored) == {
        "contract_name": "Renamed",
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "3 months",
        "contract_agreementDate": "2024-05-01",
    }


def test_update_checks_a_nested_term_against_the_stored_options(terms: TermSet) -> None:
    """A nested term whose stored ancestor chose another option is refused, saying so."""
    stored = stored_fields(terms, {"contract_rentFrequency": "week"})
    with pytest.raises(TermValidationError) as caught:
        terms.build_fields({"contract_breakClause": "breakClauseNo"}, stored=stored)
    [problem] = caught.value.problems
    assert problem.kind == "inapplicable"
    assert "contract_rentFrequency is 'week'" in problem.message


def test_update_that_changes_an_option_drops_the_stored_answers_under_the_old(
    terms: TermSet,
) -> None:
    """As the service does: the answers nested under an option changed no longer count."""
    stored = stored_fields(terms, NESTED_VALUES)
    values = {"contract_rentFrequency": "week"}
    assert terms.validate(values, stored=stored) == {
        "contract_name": "Lease",
        "contract_rentFrequency": "week",
        "contract_agreementDate": "2024-05-01",
    }
    assert terms.build_fields(values, stored=stored) == [
        {"id": 2, "name": "contract_rentFrequency", "value": "week"}
    ]


def test_update_require_all_counts_what_is_stored(terms: TermSet) -> None:
    """require_all refuses only the applicable terms neither given nor stored."""
    stored = stored_fields(terms, {"contract_name": "Lease", "contract_rentFrequency": "week"})
    with pytest.raises(TermValidationError) as caught:
        terms.validate({"contract_pets": "petsNo"}, stored=stored, require_all=True)
    missing = {problem.term for problem in caught.value.problems}
    assert missing == {"contract_letType", "contract_agreementDate"}


def test_update_stored_value_by_id_reaches_only_its_own_place(terms: TermSet) -> None:
    """A name under two options keeps its stored value only where the stored id is."""
    stored = stored_fields(terms, {"contract_letType": "hmo", "contract_room": "Room 2"})
    assert stored[1].id == 6
    # Changing the let type to bedsit: the room stored under hmo (id 6) is not bedsit's (9).
    assert terms.validate({"contract_letType": "bedsit"}, stored=stored) == {
        "contract_letType": "bedsit"
    }


def test_update_does_not_call_a_stored_value_given(terms: TermSet) -> None:
    """A term under another option than the stored one: inapplicable, not two options given."""
    stored = stored_fields(terms, {"contract_letType": "hmo", "contract_room": "Room 2"})
    with pytest.raises(TermValidationError) as caught:
        terms.build_fields({"contract_soleRules": "no smoking"}, stored=stored)
    [problem] = caught.value.problems
    assert problem.kind == "inapplicable"
    assert problem.message == "applies only when contract_letType=sole (contract_letType is 'hmo')"


def test_update_over_a_stored_option_the_template_no_longer_has(terms: TermSet) -> None:
    """A stored choice that is not an option is no choice: said as it is, missing if required."""
    stored = (ContractField(id=2, name="contract_rentFrequency", value="fortnight"),)
    with pytest.raises(TermValidationError, match="is 'fortnight', which is not an option"):
        terms.build_fields({"contract_breakClause": "breakClauseNo"}, stored=stored)
    with pytest.raises(TermValidationError) as caught:
        terms.validate({"contract_name": "Lease"}, stored=stored, require_all=True)
    assert "contract_rentFrequency" in {
        p.term for p in caught.value.problems if p.kind == "missing"
    }


def test_update_finds_stored_values_by_name_whatever_their_ids(terms: TermSet) -> None:
    """The service's stored field ids need not be its term ids: a name found once is enough."""
    stored = (
        ContractField(id=9002, name="contract_rentFrequency", value="month"),
        ContractField(id=9003, name="contract_breakClause", value="breakClauseYes"),
    )
    fields = terms.build_fields({"contract_breakClauseStart": "3 months"}, stored=stored)
    assert [(f["name"], f["value"]) for f in fields] == [("contract_rentFrequency", "month")]
    assert fields[0]["nested_fields"][0]["nested_fields"][0]["value"] == "3 months"


def test_update_of_a_name_at_two_places_that_apply_together() -> None:
    """Each place keeps its own stored value; a value given by id goes to its place alone."""
    terms = TermSet(
        [
            text(1, "contract_name"),
            choice(2, "contract_pets", option("petsYes", text(21, "contract_note")), option("no")),
            choice(3, "contract_garden", option("gardenYes", text(22, "contract_note"))),
        ],
        template_id=1,
    )
    stored = terms.check(
        {
            "contract_name": "n",
            "contract_pets": "petsYes",
            "contract_garden": "gardenYes",
            "contract_note": "the same",
        }
    ).flat
    # Neither place is missing: each has its stored value.
    terms.validate({"contract_name": "m"}, stored=stored, require_all=True)
    assert terms.build_fields({21: "a cat"}, stored=stored) == [
        {
            "id": 2,
            "name": "contract_pets",
            "value": "petsYes",
            "nested_fields": [{"id": 21, "name": "contract_note", "value": "a cat"}],
        }
    ]
