"""``identity_fields.of_collaborator``: GET …/updatefields with a body (endpoints.md §1 #24)."""

from __future__ import annotations

import json

import pytest

from contractsdk import ConfigurationError, ContractClient, Request, Response, Role, Side
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

FIELDS = [
    {"id": 2117, "label": "First Name", "value": "Ada"},
    {"id": 2119, "label": "Email", "validationType": "EMAIL", "value": "ada@example.com"},
]


async def test_the_request_is_a_get_with_a_json_body() -> None:
    """As the official Java SDK sends it: GET, JSON body {collaborator_id, roles, side}."""
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return json_response(200, FIELDS)

    async with ContractClient(api_key=API_KEY, transport=MockTransport(handler)) as client:
        fields = await client.identity_fields.of_collaborator(
            149, 77, roles=[Role.PARTY], side=Side.FIRST
        )
    (request,) = seen
    assert (request.method, request.path) == ("GET", "/v1/templates/149/updatefields")
    assert json.loads(request.content or b"") == {
        "collaborator_id": 77,
        "roles": ["party"],
        "side": "first",
    }
    assert [(f.id, f.value) for f in fields] == [(2117, "Ada"), (2119, "ada@example.com")]


async def test_bad_roles_and_ids_send_nothing() -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return json_response(200, [])

    async with ContractClient(api_key=API_KEY, transport=MockTransport(handler)) as client:
        with pytest.raises(ConfigurationError):
            await client.identity_fields.of_collaborator(149, 77, roles=["boss"], side="first")
        with pytest.raises(ConfigurationError):
            await client.identity_fields.of_collaborator(149, None, roles="party", side="first")
    assert seen == []


async def test_the_emulator_fills_in_the_collaborators_values(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Against the emulator: the values a party gave come back in their fields."""
    client = sandbox_client
    ada = sandbox_server.users[0]
    kinds = await client.contract_types.list(ada.personal_team_id)
    tenancy = next(k for k in kinds if "Tenancy" in (k.name or ""))
    template = await client.templates.latest(ada.personal_team_id, tenancy.id)
    contract = await client.contracts.create(
        ada.personal_team_id,
        template_id=template.id,
        created_by=ada.id,
        values={"contract_name": "Flat 9"},
    )
    party = await client.collaborators.create(
        contract.id,
        user_id=ada.id,
        inviter_id=ada.id,
        roles=[Role.PARTY],
        side=Side.FIRST,
        values={"Address": "1 High Street, Bath"},
        template_id=template.id,
    )
    fields = await client.identity_fields.of_collaborator(
        template.id, party.id, roles=[Role.PARTY], side=Side.FIRST
    )
    by_label = {field.label: field.value for field in fields}
    assert by_label["Address"] == "1 High Street, Bath"
    assert by_label["Email"] == ada.email  # filled from the user's account
