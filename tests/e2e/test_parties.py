"""Parties, identity fields, signing, users and companies: the SDK against the emulator.

Every endpoint of the contract lifecycle (endpoints.md §1 #1, #3, #16 ``source_contract``,
#23, #25–#33) over real loopback HTTP: the SDK's models, checks and typed errors on one
side, the emulator's rules on the other, sharing no code.
Their typed errors and limits (signatures, write rate): test_party_errors_and_limits.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from contractsdk import (
    BadRequestError,
    CompanyCreated,
    ConfigurationError,
    ConflictError,
    ContractClient,
    IdentityFieldSet,
    IdentityValidationError,
    NotFoundError,
    Party,
    Role,
    Side,
    TermValidationError,
)
from contractsdk.sandbox import SandboxServer
from tests._sandboxparties import NDA, SIGNATURE, counters, route_count, template_of

pytestmark = pytest.mark.e2e

TENANCY = "Assured Shorthold Tenancy Agreement"
TENANT_OR_GUARANTOR = "Are you a Tenant or Guarantor?"
TENANT_NAME = "Please specify the name of the Tenant"


async def sign_once_before(client: ContractClient, server: SandboxServer, user_id: int) -> None:
    """Make ``user_id`` a user who has signed before (an NDA, signed with an upload)."""
    owner = server.users[0]
    template = await template_of(client, owner.personal_team_id, NDA)
    nda = await client.contracts.create(
        owner.personal_team_id, template_id=template, created_by=owner.id, values={}
    )
    assert nda.id is not None
    party = await client.collaborators.create(
        nda.id, user_id=user_id, inviter_id=owner.id, roles=Role.PARTY, side=Side.SECOND
    )
    assert party.id is not None
    assert (await client.collaborators.sign(party.id, signature=SIGNATURE)).signed is True


# --- the service's example flow ------------------------------------------------------------


async def test_tenancy_flow(sandbox_server: SandboxServer, sandbox_client: ContractClient) -> None:
    """Contract → identity fields → both parties → fields → both sign → completed → PDF."""
    client = sandbox_client
    landlord, tenant = sandbox_server.users[0], sandbox_server.users[1]
    team = landlord.personal_team_id
    await sign_once_before(client, sandbox_server, tenant.id)

    template = await template_of(client, team, TENANCY)
    contract = await client.contracts.create(
        team, template_id=template, created_by=landlord.id, values={"contract_name": "Flat 3"}
    )
    assert contract.id is not None

    # The identity fields: landlord on the first side, tenant on the second.
    landlord_fields = await client.identity_fields.list(template, roles=Role.PARTY, side="first")
    tenant_fields = await client.identity_fields.list(
        template, roles=[Role.PARTY], side=Side.SECOND
    )
    assert isinstance(landlord_fields, IdentityFieldSet)
    assert [f.label for f in landlord_fields] == ["First Name", "Last Name", "Email", "Address"]
    assert [f.label for f in tenant_fields] == [
        "First Name",
        "Last Name",
        "Email",
        "Current address",
        "Mobile",
        TENANT_OR_GUARANTOR,
    ]
    email = landlord_fields.find("Email")
    assert email is not None and email.validation_type == "EMAIL"
    choice = tenant_fields.find(TENANT_OR_GUARANTOR)
    assert choice is not None
    assert [o.name for o in choice.options] == ["tenant", "guarantor", "other"]
    nested = tenant_fields.find(TENANT_NAME)
    assert nested is not None and nested.required is True and nested.parent_option == "guarantor"
    ids = {f.label: f.id for f in list(landlord_fields) + list(tenant_fields)}
    assert all(isinstance(i, int) for i in ids.values())

    # Both parties, their values checked against the template before sending.
    landlord_party = await client.collaborators.create(
        contract.id,
        user_id=landlord.id,
        inviter_id=landlord.id,
        roles=Role.PARTY,
        side=Side.FIRST,
        template_id=template,
        values={
            "First Name": landlord.first_name,
            "Last Name": landlord.last_name,
            "Email": landlord.email,
            "Address": "1 Analytical Row, London",
        },
    )
    tenant_party = await client.collaborators.create(
        contract.id,
        user_id=tenant.id,
        inviter_id=landlord.id,
        roles=[Role.PARTY],
        side="second",
        template_id=template,
        values={
            "Current address": "2 Compiler Lane, Arlington",
            TENANT_OR_GUARANTOR: "guarantor",
            TENANT_NAME: "Alan Turing",
        },
    )
    assert landlord_party.id is not None and tenant_party.id is not None
    assert landlord_party.contract_id == contract.id and tenant_party.side == "second"

    listed = await client.collaborators.list(contract.id)
    assert [c.id for c in listed] == [landlord_party.id, tenant_party.id]
    stored = await client.collaborators.get(tenant_party.id)
    assert (stored.user_id, stored.contract_id, stored.roles) == (
        tenant.id,
        contract.id,
        ("party",),
    )
    assert stored.name == f"{tenant.first_name} {tenant.last_name}"
    assert stored.email == tenant.email
    assert stored.signed is False
    assert choice.id is not None and nested.id is not None
    assert stored.values[choice.id] == "guarantor"
    assert stored.values[nested.id] == "Alan Turing"
    first_name = tenant_fields.find("First Name")
    assert first_name is not None and first_name.id is not None
    assert stored.values[first_name.id] == tenant.first_name  # prefilled by the service

    # Fill and change fields: flat ids as strings; a changed option drops its nested answer.
    mobile = tenant_fields.find("Mobile")
    assert mobile is not None and mobile.id is not None
    changed = await client.collaborators.update_fields(
        tenant_party.id,
        values=tenant_fields.validate({"Mobile": "07700 900123", TENANT_OR_GUARANTOR: "tenant"}),
    )
    assert changed.id == tenant_party.id
    assert changed.values[mobile.id] == "07700 900123"
    assert changed.values[choice.id] == "tenant"
    assert nested.id not in changed.values
    address = landlord_fields.find("Address")
    assert address is not None and address.id is not None
    moved = await client.collaborators.update_fields(
        landlord_party.id, values={address.id: "3 Difference Engine Street"}
    )
    assert moved.values[address.id] == "3 Difference Engine Street"

    # Sign: the landlord with an image, the tenant with the signature saved before.
    signed = await client.collaborators.sign(landlord_party.id, signature=SIGNATURE)
    assert signed.signed is True
    assert (await client.contracts.get(contract.id)).completed_date is None
    signed = await client.collaborators.sign_with_saved_signature(tenant_party.id)
    assert signed.signed is True
    done = await client.contracts.get(contract.id)
    assert done.completed_date is not None

    pdf = await client.contracts.download_pdf(contract.id)
    assert pdf.startswith(b"%PDF-")
    for person in (landlord, tenant):
        assert f"{person.first_name} {person.last_name}".encode() in pdf
    assert pdf.count(b"signed 20") == 2  # both signed, with the time


# --- one call, checked first ---------------------------------------------------------------


async def test_create_contract_with_parties(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """The contract and both parties in one call; the emulator holds what the SDK returned."""
    landlord, tenant = sandbox_server.users[0], sandbox_server.users[2]
    kinds = await sandbox_client.contract_types.list(landlord.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    made = await sandbox_client.create_contract_with_parties(
        user_id=landlord.id,
        contract_type_id=kind.id,
        values={"contract_name": "Flat 4"},
        parties=[
            Party(
                user_id=landlord.id,
                roles=Role.PARTY,
                side=Side.FIRST,
                values={"Address": "1 Analytical Row"},
            ),
            Party(
                user_id=tenant.id,
                roles=(Role.PARTY,),
                side=Side.SECOND,
                values={
                    "current address": "Bletchley Park",  # a label, case folded
                    TENANT_OR_GUARANTOR: "tenant",
                    "Mobile": "07700 900456",
                },
            ),
        ],
    )
    assert made.contract.id is not None and made.template_id is not None
    assert (await sandbox_client.contracts.get(made.contract.id)).name == "Flat 4"
    renamed = await sandbox_client.contracts.update(
        made.contract.id, values={"contract_name": "Flat 4a"}, template_id=made.template_id
    )
    assert renamed.name == "Flat 4a"
    listed = await sandbox_client.collaborators.list(made.contract.id)
    assert [c.id for c in listed] == [c.id for c in made.collaborators]
    assert [(c.user_id, c.side) for c in listed] == [(landlord.id, "first"), (tenant.id, "second")]
    for sent, stored in zip(made.collaborators, listed, strict=True):
        assert sent.values.items() <= stored.values.items()  # what was sent is stored
    assert counters(sandbox_server)["contracts_created"] == 1


async def test_create_contract_with_parties_validates_before_sending(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """An invalid party value: IdentityValidationError, and the emulator saw no write."""
    landlord, tenant = sandbox_server.users[0], sandbox_server.users[2]
    kinds = await sandbox_client.contract_types.list(landlord.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    before = counters(sandbox_server)
    with pytest.raises(IdentityValidationError) as caught:
        await sandbox_client.create_contract_with_parties(
            user_id=landlord.id,
            contract_type_id=kind.id,
            values={"contract_name": "Never made"},
            parties=[
                Party(user_id=landlord.id, roles=Role.PARTY, side=Side.FIRST, values={}),
                Party(
                    user_id=tenant.id,
                    roles=Role.PARTY,
                    side=Side.SECOND,
                    values={"Email": "not an email", TENANT_OR_GUARANTOR: "guarantor"},
                ),
            ],
        )
    problems = caught.value.problems
    assert {(p.party, p.kind) for p in problems} == {(1, "invalid"), (1, "missing")}
    assert any(p.field == TENANT_NAME for p in problems)  # the required nested field
    after = counters(sandbox_server)
    assert after["contracts_created"] == before["contracts_created"] == 0
    assert sandbox_server.state.contracts == {} and sandbox_server.state.collaborators == {}
    assert {r for r in after["by_route"] if not r.startswith("GET ")} == set()


async def test_create_contract_with_parties_says_term_and_identity_problems_at_once(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Wrong terms and a wrong party: one TermValidationError lists both, nothing is sent."""
    landlord = sandbox_server.users[0]
    kinds = await sandbox_client.contract_types.list(landlord.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    with pytest.raises(TermValidationError) as caught:
        await sandbox_client.create_contract_with_parties(
            user_id=landlord.id,
            contract_type_id=kind.id,
            values={"contract_name": "Never made", "contract_rentFrequency": "fortnight"},
            parties=[
                Party(
                    user_id=landlord.id,
                    roles=Role.PARTY,
                    side=Side.FIRST,
                    values={"Email": "not an email"},
                )
            ],
        )
    error = caught.value
    assert [p.term for p in error.problems] == ["contract_rentFrequency"]
    assert [(p.party, p.kind) for p in error.identity_problems] == [(0, "invalid")]
    assert "and 1 problem with the identity values" in str(error)
    routes = counters(sandbox_server)["by_route"]
    assert {r for r in routes if not r.startswith("GET ")} == set()
    # Terms right and the party wrong: the IdentityValidationError of before.
    with pytest.raises(IdentityValidationError):
        await sandbox_client.create_contract_with_parties(
            user_id=landlord.id,
            contract_type_id=kind.id,
            values={"contract_name": "Never made"},
            parties=[
                Party(user_id=landlord.id, roles=Role.PARTY, side=Side.FIRST, values={"Email": "x"})
            ],
        )


async def test_a_template_of_another_contract_type_is_refused(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """contract_type_id says a tenancy, template_id is an NDA's: refused, nothing made.

    The template won: the contract was made as an NDA (the new-user audit).
    """
    landlord = sandbox_server.users[0]
    team = landlord.personal_team_id
    kinds = await sandbox_client.contract_types.list(team)
    tenancy = next(k for k in kinds if k.name == TENANCY)
    other = next(k for k in kinds if k.name != TENANCY)
    foreign = await sandbox_client.templates.latest(team, other.id)
    given: dict[str, Any] = {
        "user_id": landlord.id,
        "contract_type_id": tenancy.id,
        "template_id": foreign.id,
        "values": {"contract_name": "Never made"},
    }
    refused = f"not one of contract type {tenancy.id}"
    with pytest.raises(ConfigurationError, match=refused):
        await sandbox_client.create_contract(**given)
    with pytest.raises(ConfigurationError, match=refused):
        await sandbox_client.create_contract_with_parties(**given, parties=[])
    assert counters(sandbox_server)["contracts_created"] == 0


async def test_a_field_of_the_other_side_is_said_to_be_theirs(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """A landlord given the tenant's field: unknown here, and the tenant's, it says.

    The message was only "unknown identity field 'Current address'; did you mean
    'Address'?", or for its id "no identity field has the id …" (the new-user audit).
    """
    landlord = sandbox_server.users[0]
    team = landlord.personal_team_id
    kind = next(k for k in await sandbox_client.contract_types.list(team) if k.name == TENANCY)
    template = await sandbox_client.templates.latest(team, kind.id)
    assert template.id is not None
    theirs = await sandbox_client.identity_fields.list(
        template.id, roles=[Role.PARTY], side=Side.SECOND
    )
    address = theirs.find("Current address")
    assert address is not None and address.id is not None
    for key in ("Current address", address.id):
        with pytest.raises(IdentityValidationError) as caught:
            await sandbox_client.create_contract_with_parties(
                user_id=landlord.id,
                contract_type_id=kind.id,
                template_id=template.id,
                values={"contract_name": "Never made"},
                parties=[
                    Party(
                        user_id=landlord.id,
                        roles=Role.PARTY,
                        side=Side.FIRST,
                        values={key: "1 High Street"},
                    )
                ],
            )
        [problem] = caught.value.problems
        assert problem.kind == "unknown_field" and problem.party == 0
        assert problem.message.endswith(
            f"'Current address' (id {address.id}) is a field of the second side, not the first"
        )
    assert counters(sandbox_server)["contracts_created"] == 0


# --- users ---------------------------------------------------------------------------------


async def test_users_create_and_list(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """201 with the docs' body, then listed and readable; a taken email is a ConflictError."""
    user = await sandbox_client.users.create(
        email="ada.byron@example.org", first_name="Ada", last_name="Byron"
    )
    assert isinstance(user.id, int)
    assert (user.email, user.first_name, user.last_name) == (
        "ada.byron@example.org",
        "Ada",
        "Byron",
    )
    # The body the docs show: {"_links": {"self": {"href"}}, "user_id", "email"}.
    assert user.raw["user_id"] == user.id
    assert user.raw["email"] == "ada.byron@example.org"
    assert user.raw["_links"]["self"]["href"].endswith(f"/v1/users/{user.id}")
    assert [link.href for link in user.links] == [user.raw["_links"]["self"]["href"]]
    assert sandbox_client.stats.responses.get(201) == 1

    listed = await sandbox_client.users.list()
    assert user.id in {u.id for u in listed}
    assert len(listed) == len(sandbox_server.users) + 1
    fetched = await sandbox_client.users.get(user.id)
    assert (fetched.email, fetched.full_name) == ("ada.byron@example.org", "Ada Byron")
    teams = await sandbox_client.teams.list(user.id)
    assert [t.name for t in teams] == ["Personal Team"]

    with pytest.raises(ConflictError) as caught:
        await sandbox_client.users.create(
            email="ada.byron@example.org", first_name="Another", last_name="Ada"
        )
    assert caught.value.status_code == 409
    assert len(await sandbox_client.users.list()) == len(listed)


# --- copying a contract --------------------------------------------------------------------


async def test_source_contract_copies_the_values(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """contracts.create(source_contract=) copies the source's values; given ones still apply."""
    user = sandbox_server.users[0]
    team = user.personal_team_id
    template = await template_of(sandbox_client, team, TENANCY)
    values = {
        "contract_name": "Original",
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }
    source = await sandbox_client.contracts.create(
        team, template_id=template, created_by=user.id, values=values
    )
    assert source.id is not None
    copy = await sandbox_client.contracts.create(
        team,
        template_id=template,
        created_by=user.id,
        values={"contract_name": "Copy"},
        source_contract=source.id,
    )
    assert copy.id is not None and copy.id != source.id
    stored = await sandbox_client.contracts.get(copy.id)
    assert stored.values == {**values, "contract_name": "Copy"}
    assert (await sandbox_client.contracts.get(source.id)).values == values

    with pytest.raises(NotFoundError):
        await sandbox_client.contracts.create(
            team, template_id=template, created_by=user.id, values={}, source_contract=9_999_999
        )


# --- roles, removal, companies -------------------------------------------------------------


async def test_roles_delete_and_companies(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """update_roles, DELETE (204; 409 once signed), and a company party in the list."""
    client = sandbox_client
    owner, other, third = sandbox_server.users[0], sandbox_server.users[1], sandbox_server.users[2]
    team = owner.personal_team_id
    template = await template_of(client, team, NDA)
    contract = await client.contracts.create(
        team, template_id=template, created_by=owner.id, values={}
    )
    assert contract.id is not None
    signer = await client.collaborators.create(
        contract.id, user_id=owner.id, inviter_id=owner.id, roles=Role.PARTY, side=Side.FIRST
    )
    helper = await client.collaborators.create(
        contract.id, user_id=other.id, inviter_id=owner.id, roles=Role.PARTY, side=Side.SECOND
    )
    assert signer.id is not None and helper.id is not None

    updated = await client.collaborators.update_roles(
        helper.id, roles=[Role.COLLABORATOR, Role.WITNESS]
    )
    assert updated.roles == ("collaborator", "witness")
    assert (await client.collaborators.get(helper.id)).roles == ("collaborator", "witness")

    # Refused before sending: more than two roles, or two without "collaborator".
    patches = route_count(sandbox_server, "PATCH /v1/collaborators/{collaboratorId}/roles")
    with pytest.raises(ConfigurationError, match="at most two roles"):
        await client.collaborators.update_roles(
            helper.id, roles=[Role.COLLABORATOR, Role.PARTY, Role.WITNESS]
        )
    with pytest.raises(ConfigurationError, match="at most two roles"):
        await client.collaborators.update_roles(helper.id, roles=["party", "signatory"])
    with pytest.raises(ConfigurationError, match="not a role here"):  # not in the DTO's enum
        await client.collaborators.update_roles(helper.id, roles=Role.PARTY_WITH_SIGNATORY)
    assert route_count(sandbox_server, "PATCH /v1/collaborators/{collaboratorId}/roles") == patches
    # Sent anyway, the emulator refuses them too (they share no code).
    for roles, message in (
        (["collaborator", "party", "witness"], "at most 2 roles"),
        (["party", "signatory"], "two roles must be"),
        (["party_with_signatory"], "not a role this update takes"),
    ):
        with pytest.raises(BadRequestError, match=message):
            await client._send_json("PATCH", f"/collaborators/{helper.id}/roles", {"roles": roles})
    assert (await client.collaborators.get(helper.id)).roles == ("collaborator", "witness")

    # Removal: 204 and gone.
    await client.collaborators.delete(helper.id)
    assert sandbox_client.stats.responses.get(204) == 1
    with pytest.raises(NotFoundError):
        await client.collaborators.get(helper.id)

    company = await client.companies.create(
        contract.id,
        company_name="Analytical Engines Ltd",
        company_number="01234567",
        role=Role.PARTY,
        side=Side.SECOND,
        created_by=owner.id,
        registered_office_address={"address_line_1": "1 Analytical Row", "country": "UK"},
        signatory_related_company=signer.id,
    )
    assert isinstance(company, CompanyCreated)
    assert (company.company_name, company.contract_id) == ("Analytical Engines Ltd", contract.id)
    assert company.contract_collaborator_id is not None
    listed = {c.id: c for c in await client.collaborators.list(contract.id)}
    assert set(listed) == {signer.id, company.contract_collaborator_id}
    as_party = listed[company.contract_collaborator_id]
    assert (as_party.name, as_party.user_id, as_party.side) == (
        "Analytical Engines Ltd",
        None,
        "second",
    )
    with pytest.raises(ConfigurationError):  # the company DTO's roles lack it
        await client.companies.create(
            contract.id,
            company_name="Nope Ltd",
            role=Role.PARTY_WITH_SIGNATORY,
            side=Side.FIRST,
            created_by=owner.id,
        )

    # Once signed, a collaborator cannot be removed.
    late = await client.collaborators.create(
        contract.id, user_id=third.id, inviter_id=owner.id, roles=Role.SIGNATORY, side=Side.FIRST
    )
    assert late.id is not None
    await client.collaborators.sign(late.id, signature=SIGNATURE)
    with pytest.raises(ConflictError) as caught:
        await client.collaborators.delete(late.id)
    assert caught.value.status_code == 409
    assert (await client.collaborators.get(late.id)).signed is True
