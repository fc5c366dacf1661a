"""Identity fields, listed by roles and side and validated, through MockTransport."""

from __future__ import annotations

import json
import pickle
import urllib.parse
from pathlib import Path

import pytest

from contractsdk import (
    ConfigurationError,
    ContractClient,
    IdentityField,
    IdentityFieldSet,
    IdentityValidationError,
    Role,
    Side,
)
from contractsdk._converter import structure_list
from contractsdk.testing import json_response
from tests._partykit import (
    TENANT_FIELDS,
    Routes,
    api_fixture,  # noqa: F401  # the fixture `api`
    routes_fixture,  # noqa: F401  # the fixture `routes`
)

SAMPLES = Path(__file__).resolve().parent / "data"  # copies of reference/samples/


def tenant_set() -> IdentityFieldSet:
    return IdentityFieldSet(structure_list(TENANT_FIELDS, IdentityField), template_id=149)


# -- identity fields -----------------------------------------------------------------------


async def test_identity_fields_query_repeats_roles(api: ContractClient, routes: Routes) -> None:
    """Roles go repeated in the query string, in the order given, then side; kept per key."""
    routes.on("GET", "/v1/templates/149/fields", json_response(200, TENANT_FIELDS))
    fields = await api.identity_fields.list(149, roles=[Role.PARTY, "signatory"], side="second")
    again = await api.identity_fields.list(149, roles=["signatory", "party"], side=Side.SECOND)
    assert again is fields
    (request,) = routes.requests
    query = request.url.split("?", 1)[1]
    assert query == "roles=party&roles=signatory&side=second"
    assert urllib.parse.parse_qs(query) == {"roles": ["party", "signatory"], "side": ["second"]}
    assert fields.roles == (Role.PARTY, Role.SIGNATORY) and fields.side is Side.SECOND
    nested = fields.find(2122)
    assert nested is not None and nested.required and nested.parent_option == "guarantor"
    assert nested.identity_field_id == 6754496734560423
    other = await api.identity_fields.list(149, roles="party", side="first")
    assert other is not fields and len(routes.requests) == 2


@pytest.mark.parametrize(
    ("roles", "side"), [(["landlord"], "first"), ([], "first"), (["party"], "left")]
)
async def test_identity_fields_bad_roles_or_side(
    api: ContractClient, routes: Routes, roles: list[str], side: str
) -> None:
    """An unknown role, no role, or an unknown side raise before any request."""
    with pytest.raises(ConfigurationError):
        await api.identity_fields.list(149, roles=roles, side=side)
    assert routes.requests == []


def test_identity_values_by_label_id_and_digit_string() -> None:
    """Values may name a field by label (any case), id or digit string; nested go inside."""
    built = tenant_set().build(
        {
            "First Name": "Louis",
            2113: "Litt",
            "email": "louis@litt.co.uk",
            "2121": "guarantor",
            "Please specify the name of the Tenant": "Mike",
        }
    )
    assert built == [
        {"id": 2112, "value": "Louis", "nestedFields": []},
        {"id": 2113, "value": "Litt", "nestedFields": []},
        {"id": 2114, "value": "louis@litt.co.uk", "nestedFields": []},
        {
            "id": 2121,
            "value": "guarantor",
            "nestedFields": [{"id": 2122, "value": "Mike", "nestedFields": []}],
        },
    ]


def test_identity_validator_reports_every_problem() -> None:
    """Unknown fields, bad options, bad emails, bad types and inapplicable values: all at once."""
    with pytest.raises(IdentityValidationError) as caught:
        tenant_set().validate(
            {
                "First Nme": "x",
                "Email": "not an email",
                2121: "Guarantor",
                2122: "Mike",
                9999: "a",
                "Mobile": True,
            }
        )
    problems = caught.value.problems
    kinds = sorted(problem.kind for problem in problems)
    assert kinds == sorted(
        ["unknown_field", "invalid", "not_an_option", "inapplicable", "unknown_field", "bad_value"]
    )
    by_kind = {problem.kind: problem for problem in problems}
    assert by_kind["not_an_option"].suggestion == "guarantor"
    unknown = [p for p in problems if p.kind == "unknown_field"]
    assert {p.field for p in unknown} == {"First Nme", "9999"}
    assert any(p.suggestion == "First Name" for p in unknown)
    assert "6 problems" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_nested_required_field_applies_only_under_its_option() -> None:
    """A required nested field is missing only when its option is chosen."""
    fields = tenant_set()
    assert fields.validate({2121: "tenant"}) == {2121: "tenant"}
    with pytest.raises(IdentityValidationError) as caught:
        fields.validate({2121: "guarantor"})
    (problem,) = caught.value.problems
    assert problem.kind == "missing" and problem.field == "Please specify the name of the Tenant"
    assert problem.path.startswith("Are you a Tenant or Guarantor?=guarantor › ")
    with pytest.raises(IdentityValidationError) as caught:
        fields.validate({2121: "tenant", 2122: "Mike"})
    assert [p.kind for p in caught.value.problems] == ["inapplicable"]


def test_require_all_requires_top_level_fields() -> None:
    """Top-level fields carry no required flag: only require_all makes them required."""
    fields = tenant_set()
    assert fields.validate({}) == {}
    with pytest.raises(IdentityValidationError) as caught:
        fields.validate({"First Name": "A"}, require_all=True)
    missing = {p.field for p in caught.value.problems if p.kind == "missing"}
    assert missing == {
        "Last Name",
        "Email",
        "Current address",
        "Mobile",
        "Are you a Tenant or Guarantor?",
    }


def test_duplicate_values_for_one_field() -> None:
    """A field given twice with different values is a duplicate; the same value is fine."""
    fields = tenant_set()
    assert fields.validate({"First Name": "A", 2112: "A"}) == {2112: "A"}
    with pytest.raises(IdentityValidationError) as caught:
        fields.validate({"First Name": "A", 2112: "B"})
    assert [p.kind for p in caught.value.problems] == ["duplicate"]


def test_identity_error_pickles() -> None:
    """The error crosses a process pool with its problems."""
    with pytest.raises(IdentityValidationError) as caught:
        tenant_set().validate({"Nope": 1})
    copy = pickle.loads(pickle.dumps(caught.value))
    assert copy.problems == caught.value.problems


def test_shared_samples_read_as_identity_fields() -> None:
    """The real samples read into the models (camel validationType, parentOption)."""
    landlord = json.loads((SAMPLES / "identity_fields_landlord.json").read_text(encoding="utf-8"))
    fields = IdentityFieldSet(structure_list(landlord, IdentityField))
    email_field = fields.find("Email")
    assert email_field is not None and email_field.validation_type == "EMAIL"


def test_tree_shows_the_values_the_fields_hold() -> None:
    """A party's fields: a text value after =, a chosen option (x), a name then its label."""
    tenant = json.loads(json.dumps(TENANT_FIELDS))  # the tenant sample, copied deep
    tenant[0]["value"] = "Grace"
    tenant[0]["name"] = "first_name"
    tenant[5]["value"] = "guarantor"
    tenant[5]["options"][1]["nested_fields"][0]["value"] = "Alan Turing"
    lines = IdentityFieldSet(structure_list(tenant, IdentityField)).tree().splitlines()
    assert lines[0] == "first_name (id 2112): First Name = 'Grace'"
    assert lines[1] == "Last Name (id 2113)"  # not filled in: the service's "" is no value
    assert lines[2] == "Email (id 2114) [EMAIL]"
    at = lines.index("Are you a Tenant or Guarantor? (id 2121)")
    assert lines[at + 1 : at + 5] == [
        "  ( ) tenant",
        "  (x) guarantor",
        "      Please specify the name of the Tenant (id 2122) [required] = 'Alan Turing'",
        "  ( ) other",
    ]
    assert IdentityFieldSet([]).tree() == "(none)"
