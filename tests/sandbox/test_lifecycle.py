"""The contract lifecycle: the example flow, identity fields (#23, #24), what removes data.

Plain HTTP against the emulator, never through the SDK's resources. Creating collaborators,
their roles and fields are in ``test_collaborators.py``; signatures and company parties in
``test_signatures.py``.
"""

from __future__ import annotations

import pytest

from contractsdk.sandbox import FaultRule, SandboxServer

from ._helpers import Api, ast_template_id, nda_template_id
from ._lifecycle import JPEG, _add, _by_label, _contract, _fields, _id, _landlord_and_tenant, _sign

# --- the example flow ----------------------------------------------------------------------


async def test_example_flow_ends_in_a_completed_signed_contract(
    api: Api, server: SandboxServer
) -> None:
    """Contract → identity fields → both parties → fill fields → sign both → completed PDF."""
    cid = await _contract(api, server)
    landlord = _by_label(await _fields(api, server, "first"))
    tenant = _by_label(await _fields(api, server, "second"))
    assert list(landlord) == ["First Name", "Last Name", "Email", "Address"]
    assert list(tenant) == [
        "First Name",
        "Last Name",
        "Email",
        "Current address",
        "Mobile",
        "Are you a Tenant or Guarantor?",
    ]
    owner, other = server.users[0], server.users[1]
    identity = [
        {"id": landlord["First Name"]["id"], "value": "Ada"},
        {"id": landlord["Email"]["id"], "value": "landlord@example.com"},
    ]
    reply = await _add(api, cid, owner.id, "first", identity, inviter=owner.id)
    landlord_id = _id(reply)
    href = f"{server.url}/v1/collaborators/{landlord_id}"
    assert reply.json() == {"rel": "self", "href": href}
    assert reply.headers["Location"] == href
    tenant_id = _id(await _add(api, cid, other.id, "second", inviter=owner.id))

    fill = {
        "fields": [
            {"id": str(tenant["Current address"]["id"]), "value": "2 Lane"},
            {"id": str(tenant["Mobile"]["id"]), "value": "07456565656"},
            {"id": str(tenant["Are you a Tenant or Guarantor?"]["id"]), "value": "tenant"},
        ]
    }
    assert (await api.patch(f"/v1/collaborators/{tenant_id}/fields", fill)).status == 200
    address = {"fields": [{"id": str(landlord["Address"]["id"]), "value": "1 Road"}]}
    assert (await api.patch(f"/v1/collaborators/{landlord_id}/fields", address)).status == 200

    signed = await _sign(api, tenant_id)
    assert signed.status == 200, signed.body
    assert signed.json()["signed"] is True
    assert (await api.get(f"/v1/contracts/{cid}")).json()["completedDate"] is None
    assert (await _sign(api, landlord_id, JPEG, filename="sig.jpg")).status == 200

    contract = (await api.get(f"/v1/contracts/{cid}")).json()
    assert contract["completedDate"] is not None
    pdf = await api.get(f"/v1/contracts/{cid}/pdf")
    assert pdf.status == 200
    assert pdf.body.startswith(b"%PDF-")
    assert b"Ada Lovelace" in pdf.body
    assert b"Grace Hopper" in pdf.body
    html = (await api.get(f"/v1/contracts/{cid}/html")).body.decode()
    assert "Grace Hopper (party): signed" in html
    assert "Completed" in html


async def test_collaborator_json_has_the_dto_keys(api: Api, server: SandboxServer) -> None:
    """A collaborator is ContractCollaboratorResponseDTO plus the assumed "signed" key."""
    cid, landlord_id, tenant_id = await _landlord_and_tenant(api, server)
    data = (await api.get(f"/v1/collaborators/{landlord_id}")).json()
    assert set(data) == {
        "_links",
        "collaborator_name",
        "contract_id",
        "email",
        "fields",
        "id",
        "roles",
        "side",
        "user_id",
        "signed",
    }
    owner = server.users[0]
    assert data["id"] == landlord_id
    assert data["contract_id"] == cid
    assert data["user_id"] == owner.id
    assert data["collaborator_name"] == owner.full_name
    # First name, last name and email are prefilled from the user (GETUSER).
    assert data["email"] == owner.email
    assert [f["value"] for f in data["fields"]] == [
        owner.first_name,
        owner.last_name,
        owner.email,
        "1 Road",
    ]
    assert all(set(f) == {"id", "name", "value"} for f in data["fields"])
    assert data["roles"] == ["party"]
    assert data["side"] == "first"
    assert data["signed"] is False
    assert data["_links"] == {"self": {"href": f"{server.url}/v1/collaborators/{landlord_id}"}}
    listed = (await api.get(f"/v1/contracts/{cid}/collaborators")).json()
    assert [c["id"] for c in listed] == [landlord_id, tenant_id]


# --- identity fields (#23, #24) -----------------------------------------------------------


async def test_identity_fields_have_the_captured_shape(api: Api, server: SandboxServer) -> None:
    """Top-level {id, label, options?, validationType?, value}; options {name, nested_fields}."""
    tenant = await _fields(api, server, "second")
    assert tenant[0] == {"id": tenant[0]["id"], "label": "First Name", "value": ""}
    email = _by_label(tenant)["Email"]
    assert list(email) == ["id", "label", "validationType", "value"]
    assert email["validationType"] == "EMAIL"
    role = _by_label(tenant)["Are you a Tenant or Guarantor?"]
    assert [o["name"] for o in role["options"]] == ["tenant", "guarantor", "other"]
    nested = role["options"][1]["nested_fields"][0]
    assert list(nested) == [
        "id",
        "type",
        "label",
        "required",
        "index",
        "parentOption",
        "side",
        "identity_field_id",
    ]
    assert nested["parentOption"] == "guarantor"
    assert nested["side"] == "second"
    assert nested["required"] is True
    assert len(str(nested["identity_field_id"])) == 16
    landlord = await _fields(api, server, "first")
    both = await _fields(api, server, "both")
    assert both == landlord + tenant
    ids = [f["id"] for f in both] + [nested["id"]]
    assert len(set(ids)) == len(ids)
    terms = server.seed.catalog.templates[ast_template_id(server)].by_id
    assert not set(ids) & set(terms)


async def test_identity_fields_depend_on_roles(api: Api, server: SandboxServer) -> None:
    """party/signatory see their side's fields; collaborator/witness/supp_sig see none."""
    party = await _fields(api, server, "first", "party")
    assert await _fields(api, server, "first", "signatory") == party
    assert await _fields(api, server, "first", "party_with_signatory") == party
    assert await _fields(api, server, "first", "collaborator", "party") == party
    for role in ("collaborator", "witness", "supp_sig"):
        assert await _fields(api, server, "first", role) == []
    path = f"/v1/templates/{ast_template_id(server)}/fields?roles=collaborator,party&side=first"
    assert (await api.get(path)).json() == party  # Spring also splits a comma list


async def test_other_templates_have_the_three_generic_fields(
    api: Api, server: SandboxServer
) -> None:
    """A template other than the tenancy one: first name, last name, email (EMAIL)."""
    reply = await api.get(f"/v1/templates/{nda_template_id(server)}/fields?roles=party&side=first")
    data = reply.json()
    assert [f["label"] for f in data] == ["First Name", "Last Name", "Email"]
    assert data[2]["validationType"] == "EMAIL"


async def test_identity_field_query_errors(api: Api, server: SandboxServer) -> None:
    """Bad roles and sides are one 400 naming both; no roles 400; unknown template 404."""
    base = f"/v1/templates/{ast_template_id(server)}/fields"
    message = (await api.get(f"{base}?roles=boss&roles=party&side=middle")).spring(400)
    assert "'boss' is not a role" in message
    assert "'middle' is not a side" in message
    assert "supp_sig" in (await api.get(f"{base}?roles=support_sig")).spring(400)
    assert "roles is required" in (await api.get(f"{base}?side=first")).spring(400)
    assert "at most 2" in (await api.get(f"{base}?roles=collaborator,party,witness")).spring(400)
    (await api.get("/v1/templates/1/fields?roles=party")).spring(404)


async def test_updatefields_shows_the_collaborators_values(api: Api, server: SandboxServer) -> None:
    """GET …/updatefields with a JSON body (sent as */*) fills each field's value."""
    _, landlord_id, tenant_id = await _landlord_and_tenant(api, server)
    path = f"/v1/templates/{ast_template_id(server)}/updatefields"
    body = {"collaborator_id": tenant_id, "roles": ["party"], "side": "second"}
    reply = await api.call("GET", path, json_body=body, headers={"Content-Type": "*/*"})
    assert reply.status == 200, reply.body
    values = {f["label"]: f["value"] for f in reply.json()}
    assert values["Current address"] == "2 Lane"
    assert values["Are you a Tenant or Guarantor?"] == "tenant"
    assert values["Mobile"] == ""
    assert values["First Name"] == server.users[1].first_name
    missing = {"collaborator_id": 1, "roles": ["party"], "side": "second"}
    (await api.call("GET", path, json_body=missing)).spring(404)
    bad = await api.call("GET", path, json_body={"collaborator_id": "x", "roles": [], "side": 1})
    message = bad.spring(400)
    assert "collaborator_id" in message
    assert "roles" in message
    assert "side" in message
    other = f"/v1/templates/{nda_template_id(server)}/updatefields"
    (await api.call("GET", other, json_body={**body, "collaborator_id": landlord_id})).spring(400)
    (await api.call("GET", path)).spring(400)


# --- data lifecycle and the request pipeline ----------------------------------------------


async def test_deleting_a_contract_or_resetting_removes_collaborators(
    api: Api, server: SandboxServer
) -> None:
    """A deleted contract takes its collaborators; reset clears them and saved signatures."""
    cid, landlord_id, tenant_id = await _landlord_and_tenant(api, server)
    await _sign(api, tenant_id)
    assert (await api.delete(f"/v1/contracts/{cid}")).status == 200
    (await api.get(f"/v1/collaborators/{landlord_id}")).spring(404)
    (await api.get(f"/v1/contracts/{cid}/collaborators")).spring(404)
    assert server.state.collaborators == {}
    await _landlord_and_tenant(api, server)
    assert server.state.collaborators
    assert (await api.admin("POST", "/__sandbox/reset")).status in (200, 204)
    assert server.state.collaborators == {}
    assert server.state.contract_collaborators == {}
    assert server.state.signatures == {}


async def test_new_endpoints_need_auth(api: Api, server: SandboxServer) -> None:
    """No bearer token: 401, like every /v1 endpoint."""
    path = f"/v1/templates/{ast_template_id(server)}/fields?roles=party"
    (await api.get(path, auth=False)).spring(401)
    (await api.post("/v1/contracts/1/collaborators", {}, auth=False)).spring(401)


async def test_rate_limits_apply_to_the_new_endpoints(api: Api, server: SandboxServer) -> None:
    """A PATCH/POST spends the write bucket, a GET the read bucket (429 when empty)."""
    _, landlord_id, _ = await _landlord_and_tenant(api, server)
    server.set_limits(read_rate=1e-6, write_rate=1e-6, burst=1)
    path = f"/v1/collaborators/{landlord_id}/roles"
    assert (await api.patch(path, {"roles": ["party"]})).status == 200
    (await api.patch(path, {"roles": ["party"]})).spring(429)
    (await api.delete(f"/v1/collaborators/{landlord_id}")).spring(429)
    assert (await api.get(f"/v1/collaborators/{landlord_id}")).status == 200
    (await api.get(f"/v1/collaborators/{landlord_id}")).spring(429)


async def test_faults_apply_to_the_new_endpoints(api: Api, server: SandboxServer) -> None:
    """An injected 503 on the signature route answers 503 and signs nobody."""
    _, _, tenant_id = await _landlord_and_tenant(api, server)
    server.set_faults([FaultRule("PATCH /v1/collaborators/*/signature", status_503=1.0)])
    (await _sign(api, tenant_id)).spring(503)
    server.set_faults([])
    assert (await api.get(f"/v1/collaborators/{tenant_id}")).json()["signed"] is False


async def test_idempotency_key_on_create_collaborator(api: Api, server: SandboxServer) -> None:
    """The same Idempotency-Key replays the first 201: the user is added once."""
    cid = await _contract(api, server)
    owner = server.users[0].id
    body = {"userId": owner, "inviterId": owner, "role": ["party"], "side": "first",
            "identityFields": []}  # fmt: skip
    key = {"Idempotency-Key": "add-landlord"}
    path = f"/v1/contracts/{cid}/collaborators"
    first = await api.post(path, body, headers=key)
    again = await api.post(path, body, headers=key)
    assert first.status == again.status == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    assert len((await api.get(path)).json()) == 1


@pytest.mark.parametrize("side", ["first", "second"])
async def test_generic_template_flow(api: Api, server: SandboxServer, side: str) -> None:
    """On a non-tenancy template the prefilled names and email are enough to sign."""
    cid = await _contract(api, server, nda_template_id(server))
    owner = server.users[0].id
    collaborator = _id(await _add(api, cid, owner, side, inviter=owner))
    assert (await _sign(api, collaborator)).status == 200
    assert (await api.get(f"/v1/contracts/{cid}")).json()["completedDate"] is not None
