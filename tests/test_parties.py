"""Users, source_contract, companies and create_contract_with_parties, through MockTransport."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from contractsdk import (
    CompanyCreated,
    ConfigurationError,
    ContractClient,
    IdentityValidationError,
    PartiesIncompleteError,
    Party,
    Request,
    Response,
    ResponseValidationError,
    Role,
    Side,
    TermValidationError,
    User,
)
from contractsdk.testing import json_response
from tests._partykit import (
    HOST,
    TENANT_FIELDS,
    Routes,
    api_fixture,  # noqa: F401  # the fixture `api`
    created,
    routes_fixture,  # noqa: F401  # the fixture `routes`
)

LANDLORD_FIELDS: list[dict[str, Any]] = [
    {"id": 2117, "label": "First Name", "value": ""},
    {"id": 2118, "label": "Last Name", "value": ""},
    {"id": 2119, "label": "Email", "validationType": "EMAIL", "value": ""},
    {"id": 2120, "label": "Address", "value": ""},
]
TERMS: list[dict[str, Any]] = [{"id": 1, "name": "contract_name", "label": "Name"}]


# -- users ----------------------------------------------------------------------------------


async def test_create_user_reads_the_documented_answer(api: ContractClient, routes: Routes) -> None:
    """users.create posts the snake_case body and reads the id from the docs' user_id."""
    body = {"_links": {"self": {"href": f"{HOST}/v1/users/77"}}, "user_id": 77, "email": "a@b.io"}
    routes.on("POST", "/v1/users", json_response(201, body))
    user = await api.users.create(email="a@b.io", first_name="Ada", last_name="L")
    assert isinstance(user, User)
    assert (user.id, user.email, user.first_name, user.last_name) == (77, "a@b.io", "Ada", "L")
    assert user.links[0].href == f"{HOST}/v1/users/77"
    assert routes.sent()[0].json() == {"email": "a@b.io", "first_name": "Ada", "last_name": "L"}


async def test_create_user_reads_a_bare_link(api: ContractClient, routes: Routes) -> None:
    """A spec-shaped answer (a bare Link) gives the id from its href; avatar is sent."""
    routes.on("POST", "/v1/users", created("users", 78))
    user = await api.users.create(
        email="b@b.io", first_name="B", last_name="C", avatar="https://x/a.png"
    )
    assert user.id == 78 and user.avatar == "https://x/a.png"
    assert routes.sent()[0].json()["avatar"] == "https://x/a.png"


async def test_create_user_without_an_id_is_an_error(api: ContractClient, routes: Routes) -> None:
    """An answer naming no user is a ResponseValidationError, not a user with no id."""
    routes.on("POST", "/v1/users", json_response(201, {"email": "a@b.io"}))
    with pytest.raises(ResponseValidationError, match="names no user"):
        await api.users.create(email="a@b.io", first_name="A", last_name="B")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"email": "a@b.io", "first_name": " ", "last_name": "B"},
        {"email": "not-an-address", "first_name": "A", "last_name": "B"},
        {"email": "a@b.io", "first_name": "A", "last_name": "B", "avatar": 3},
    ],
)
async def test_create_user_checks_before_sending(
    api: ContractClient, routes: Routes, kwargs: dict[str, Any]
) -> None:
    """A blank name, an email without @ or a non-string avatar raise before any request."""
    with pytest.raises(ConfigurationError):
        await api.users.create(**kwargs)
    assert routes.requests == []


async def test_list_users(api: ContractClient, routes: Routes) -> None:
    """users.list reads each item as a User, user_id standing in for a missing id."""
    routes.on(
        "GET",
        "/v1/users",
        json_response(200, [{"id": 1, "email": "a@b.io", "x": 1}, {"user_id": 2}]),
    )
    users = await api.users.list()
    assert [u.id for u in users] == [1, 2]
    assert users[0].raw["x"] == 1


async def test_list_users_empty_answer(api: ContractClient, routes: Routes) -> None:
    """A 204 with no body is an empty list."""
    routes.on("GET", "/v1/users", Response(status_code=204))
    assert await api.users.list() == []


# -- contracts: source_contract ----------------------------------------------------------


async def test_create_contract_copies_a_source(api: ContractClient, routes: Routes) -> None:
    """source_contract is sent as an int64 in the create body."""
    routes.on("GET", "/v1/templates/149/terms", json_response(200, TERMS))
    routes.on("POST", "/v1/teams/70/contracts", created("contracts", 500))
    contract = await api.contracts.create(
        70,
        template_id=149,
        created_by=7,
        values={"contract_name": "c"},
        source_contract="42",  # type: ignore[arg-type]  # a digit string is accepted
    )
    assert contract.id == 500
    assert routes.sent("POST")[0].json()["source_contract"] == 42


async def test_create_contract_refuses_a_bad_source(api: ContractClient, routes: Routes) -> None:
    """A source_contract that is not an id raises before the contract is posted."""
    routes.on("GET", "/v1/templates/149/terms", json_response(200, TERMS))
    with pytest.raises(ConfigurationError, match="source_contract"):
        await api.contracts.create(70, template_id=149, created_by=7, source_contract="../1")  # type: ignore[arg-type]  # refused
    assert routes.sent("POST") == []


# -- companies -----------------------------------------------------------------------------


async def test_create_company(api: ContractClient, routes: Routes) -> None:
    """companies.create posts CompanyFieldsDTO's snake_case keys and reads the answer."""
    answer = {"company_name": "Acme", "contract_collaborator_id": 950, "contract_id": 500}
    routes.on("POST", "/v1/contracts/500/company", json_response(201, answer))
    result = await api.companies.create(
        500,
        company_name="Acme",
        company_number="01234567",
        role=Role.PARTY,
        side="first",
        created_by=7,
        registered_office_address={"address_line_1": "1 High St", "postal_code": "W1 1AA"},
    )
    assert result == CompanyCreated(
        company_name="Acme", contract_collaborator_id=950, contract_id=500
    )
    assert routes.sent()[0].json() == {
        "company_name": "Acme",
        "company_number": "01234567",
        "role": "party",
        "side": "first",
        "created_by": 7,
        "registered_office_address": {"address_line_1": "1 High St", "postal_code": "W1 1AA"},
    }


@pytest.mark.parametrize(
    "change",
    [
        {"company_name": ""},
        {"role": "party_with_signatory"},
        {"role": ["party", "witness"]},
        {"side": "middle"},
        {"registered_office_address": {"street": "x"}},
    ],
)
async def test_create_company_checks_first(
    api: ContractClient, routes: Routes, change: dict[str, Any]
) -> None:
    """A blank name, a role the DTO lacks, two roles, a bad side or address: refused."""
    kwargs: dict[str, Any] = {
        "company_name": "Acme",
        "role": "party",
        "side": "first",
        "created_by": 7,
        **change,
    }
    with pytest.raises(ConfigurationError):
        await api.companies.create(500, **kwargs)
    assert routes.requests == []


# -- the whole flow ------------------------------------------------------------------------


#: The template version the flows name, read once to check it is of contract type 3.
TEMPLATE_149 = "/v1/teams/70/contract-types/3/templates/149"


def flow_routes(routes: Routes, *, fail_party: int | None = None) -> None:
    routes.on("GET", "/v1/templates/149/terms", json_response(200, TERMS))
    routes.on("GET", TEMPLATE_149, json_response(200, {"id": 149, "version": "7"}))
    routes.on(
        "GET",
        "/v1/templates/149/fields",
        lambda r: json_response(200, TENANT_FIELDS if "second" in r.url else LANDLORD_FIELDS),
    )
    routes.on("POST", "/v1/teams/70/contracts", created("contracts", 500))
    posted = iter(range(901, 999))

    def add(request: Request) -> Response:
        number = next(posted)
        if fail_party is not None and number == 901 + fail_party:
            return json_response(400, {"message": "bad party"})
        return created("collaborators", number)

    routes.on("POST", "/v1/contracts/500/collaborators", add)


LANDLORD = Party(user_id=11, roles="party", side="first", values={"First Name": "John"})
TENANT = Party(user_id=12, roles=[Role.PARTY], side=Side.SECOND, values={2121: "tenant"})


async def test_flow_creates_contract_then_parties(api: ContractClient, routes: Routes) -> None:
    """The contract is created, then each party in order, invited by the creator."""
    flow_routes(routes)
    made = await api.create_contract_with_parties(
        user_id=7,
        contract_type_id=3,
        team_id=70,
        template_id=149,
        values={"contract_name": "Flat"},
        parties=[LANDLORD, TENANT],
    )
    assert made.contract.id == 500
    assert [c.id for c in made.collaborators] == [901, 902]
    posts = routes.sent("POST")
    assert [p.path for p in posts] == [
        "/v1/teams/70/contracts",
        "/v1/contracts/500/collaborators",
        "/v1/contracts/500/collaborators",
    ]
    assert [p.json()["inviterId"] for p in posts[1:]] == [7, 7]
    assert posts[2].json()["identityFields"] == [
        {"id": 2121, "value": "tenant", "nestedFields": []}
    ]
    field_gets = [r for r in routes.requests if r.path.endswith("/fields")]
    assert len(field_gets) == 2  # one per (template, roles, side)


async def test_flow_validates_every_party_before_sending(
    api: ContractClient, routes: Routes
) -> None:
    """Every party's problems come in one error, each naming its party; nothing is posted."""
    flow_routes(routes)
    with pytest.raises(IdentityValidationError) as caught:
        await api.create_contract_with_parties(
            user_id=7,
            contract_type_id=3,
            team_id=70,
            template_id=149,
            values={"contract_name": "Flat"},
            parties=[
                Party(user_id=11, roles="party", side="first", values={"Email": "x"}),
                Party(user_id=12, roles="party", side="second", values={2121: "guarantor"}),
            ],
        )
    assert [(p.party, p.kind) for p in caught.value.problems] == [(0, "invalid"), (1, "missing")]
    assert "party 1: " in str(caught.value)
    assert routes.sent("POST") == []


@pytest.mark.parametrize(
    ("values", "party", "error"),
    [
        ({"contract_nam": "x"}, LANDLORD, TermValidationError),
        ({"contract_name": "x"}, Party(user_id=11, roles="boss", side="first"), ConfigurationError),
        (
            {"contract_name": "x"},
            Party(user_id=-1, roles="party", side="first"),
            ConfigurationError,
        ),
    ],
)
async def test_flow_refuses_bad_input_before_sending(
    api: ContractClient, routes: Routes, values: dict[str, str], party: Party, error: type
) -> None:
    """Bad contract values, roles or user ids raise before anything is posted."""
    flow_routes(routes)
    with pytest.raises(error):
        await api.create_contract_with_parties(
            user_id=7,
            contract_type_id=3,
            team_id=70,
            template_id=149,
            values=values,
            parties=[party],
        )
    assert routes.sent("POST") == []


async def test_flow_partial_failure_says_what_was_done(api: ContractClient, routes: Routes) -> None:
    """A failing party leaves an error naming the contract, the added and the pending."""
    flow_routes(routes, fail_party=1)
    third = Party(user_id=13, roles="party", side="second", values={})
    with pytest.raises(PartiesIncompleteError) as caught:
        await api.create_contract_with_parties(
            user_id=7,
            contract_type_id=3,
            team_id=70,
            template_id=149,
            values={"contract_name": "Flat"},
            parties=[LANDLORD, TENANT, third],
            idempotency_key="row-1",
        )
    error = caught.value
    assert error.contract.id == 500 and error.index == 1
    assert [c.id for c in error.added] == [901]
    assert error.pending == (TENANT, third)
    assert "contract 500" in str(error) and "bad party" in str(error)
    assert "party 2 (user 13)" in str(error)
    keys = [r.headers["idempotency-key"] for r in routes.sent("POST")]
    assert keys == ["row-1", "row-1-party-0", "row-1-party-1"]
    copy = pickle.loads(pickle.dumps(error))
    assert copy.contract.id == 500 and copy.pending == error.pending


def test_a_label_where_ids_are_needed_names_no_missing_parameter() -> None:
    """``update_fields`` takes no template_id=, yet the error told its caller to pass one."""
    from contractsdk.identity import identity_fields_by_id

    with pytest.raises(ConfigurationError) as caught:
        identity_fields_by_id({"Address": "2 Row"})
    said = str(caught.value)
    assert "'Address': a field must be given by its id here" in said
    assert "IdentityFieldSet.validate" in said and "without template_id=" not in said


async def test_a_party_on_both_sides_is_refused_before_anything_is_sent(
    api: ContractClient, routes: Routes
) -> None:
    """``both`` names the fields of both sides, not a party's place: the service said 400."""
    from contractsdk.bulk import BulkParty

    with pytest.raises(ConfigurationError, match="a party is on one side: first or second"):
        await api.companies.create(
            500, company_name="Acme", role=Role.PARTY, side=Side.BOTH, created_by=7
        )
    with pytest.raises(ConfigurationError, match=r"the sides are: first, second$"):
        await api.companies.create(
            500, company_name="Acme", role=Role.PARTY, side="top", created_by=7
        )
    with pytest.raises(ConfigurationError, match="a party is on one side"):
        await api.collaborators.create(500, user_id=8, inviter_id=7, roles="party", side=Side.BOTH)
    with pytest.raises(ConfigurationError, match="a party is on one side"):
        BulkParty(name="tenant", roles=(Role.PARTY,), side="both", user_column="tenant_user_id")
    assert routes.sent() == []
