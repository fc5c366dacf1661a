"""Collaborators of a contract: creating them (#25), their roles and fields (#29, #30).

Plain HTTP against the emulator, never through the SDK's resources.
"""

from __future__ import annotations

from contractsdk.sandbox import SandboxServer

from ._helpers import Api, ast_template_id, contract_id, shared_team
from ._lifecycle import _add, _by_label, _contract, _fields, _id, _landlord_and_tenant

# --- creating collaborators (#25) ---------------------------------------------------------


async def test_create_collaborator_reports_every_problem_at_once(
    api: Api, server: SandboxServer
) -> None:
    """Bad roles, side, field ids, options, emails and nesting: one 400 naming them all."""
    cid = await _contract(api, server)
    owner = server.users[0].id
    tenant = _by_label(await _fields(api, server, "second"))
    landlord = _by_label(await _fields(api, server, "first"))
    choice = tenant["Are you a Tenant or Guarantor?"]
    nested_id = choice["options"][1]["nested_fields"][0]["id"]
    body = {
        "userId": server.users[1].id,
        "inviterId": owner,
        "role": ["party", "signatory"],
        "side": "middle",
        "identityFields": [],
    }
    message = (await api.post(f"/v1/contracts/{cid}/collaborators", body)).spring(400)
    assert '"collaborator" and one other' in message
    assert "'middle' is not a side" in message

    body["role"], body["side"] = ["party"], "second"
    body["identityFields"] = [
        {"id": 999_999_999, "value": "x"},
        {"id": landlord["Address"]["id"], "value": "the other side"},
        {"id": tenant["Email"]["id"], "value": "not-an-email"},
        {"id": choice["id"], "value": "landlord"},
        {"id": nested_id, "value": "nested at the top"},
        {"id": tenant["Mobile"]["id"], "value": 7},
        {"id": tenant["Current address"]["id"], "value": "x", "nested_fields": []},
        {"id": "12", "value": "x"},
    ]
    message = (await api.post(f"/v1/contracts/{cid}/collaborators", body)).spring(400)
    for expected in (
        "unknown identity field id 999999999",
        "is not one this collaborator's roles and side fill in",
        "not a valid email address",
        '"landlord" is not an option',
        "is nested under field",
        "value must be a string",
        '"nested_fields"; the wire name is "nestedFields"',
        "id must be an integer",
    ):
        assert expected in message, (expected, message)
    # A chosen option whose required nested field is empty; a nested value under another.
    body["identityFields"] = [{"id": choice["id"], "value": "guarantor"}]
    assert "is required when" in (
        await api.post(f"/v1/contracts/{cid}/collaborators", body)
    ).spring(400)
    body["identityFields"] = [
        {"id": choice["id"], "value": "tenant", "nestedFields": [{"id": nested_id, "value": "B"}]}
    ]
    assert "applies only when" in (
        await api.post(f"/v1/contracts/{cid}/collaborators", body)
    ).spring(400)
    assert (await api.get(f"/v1/contracts/{cid}/collaborators")).json() == []
    message = (
        await api.post(f"/v1/contracts/{cid}/collaborators", {"identity_fields": []})
    ).spring(400)
    for key in ("userId is required", "inviterId is required", "role is required", "side"):
        assert key in message
    assert 'camelCase "identityFields"' in message


async def test_create_collaborator_status_codes(api: Api, server: SandboxServer) -> None:
    """Unknown user or inviter 404, inviter outside the team 403, same user twice 409."""
    cid = await _contract(api, server)
    owner, other = server.users[0].id, server.users[1].id
    (await _add(api, cid, 424242, "second", inviter=owner)).spring(404)
    assert "inviterId" in (await _add(api, cid, other, "second", inviter=424242)).spring(404)
    # The contract is in Ada's personal team; Grace is not in it.
    (await _add(api, cid, other, "second", inviter=other)).spring(403)
    (await _add(api, 1, other, "second", inviter=owner)).spring(404)
    assert _id(await _add(api, cid, other, "second", inviter=owner))
    (await _add(api, cid, other, "first", inviter=owner)).spring(409)
    missing = {"userId": owner, "inviterId": owner, "role": ["party"], "side": "first"}
    (await api.post(f"/v1/contracts/{cid}/collaborators", missing)).spring(400)
    # Missing required fields are allowed at creation: they are filled in later.
    witness = await _add(api, cid, owner, "first", roles=["witness"], inviter=owner)
    assert (await api.get(witness.headers["Location"])).json()["fields"] == []


async def test_a_team_member_may_invite_on_a_shared_team_contract(
    api: Api, server: SandboxServer
) -> None:
    """Any owner or member of the contract's team may be the inviter."""
    team = shared_team(server, "Acme Legal")
    owner, member = server.users[0].id, server.users[1].id
    reply = await api.create_contract(team, owner, ast_template_id(server))
    cid = contract_id(reply)
    assert _id(await _add(api, cid, server.users[5].id, "second", inviter=member))
    (await _add(api, cid, server.users[4].id, "first", inviter=server.users[3].id)).spring(403)


# --- roles and fields (#29, #30) ----------------------------------------------------------


async def test_patch_roles(api: Api, server: SandboxServer) -> None:
    """At most two roles, collaborator + one other; 200 with the collaborator."""
    _, landlord_id, _ = await _landlord_and_tenant(api, server)
    path = f"/v1/collaborators/{landlord_id}/roles"
    reply = await api.patch(path, {"roles": ["collaborator", "signatory"]})
    assert reply.status == 200
    assert reply.json()["roles"] == ["collaborator", "signatory"]
    assert '"collaborator" and one other' in (
        await api.patch(path, {"roles": ["party", "signatory"]})
    ).spring(400)
    assert "at most 2" in (
        await api.patch(path, {"roles": ["collaborator", "party", "witness"]})
    ).spring(400)
    (await api.patch(path, {"roles": []})).spring(400)
    (await api.patch(path, {})).spring(400)
    (await api.patch("/v1/collaborators/1/roles", {"roles": ["party"]})).spring(404)
    assert (await api.get(f"/v1/collaborators/{landlord_id}")).json()["roles"] == [
        "collaborator",
        "signatory",
    ]


async def test_patch_fields_takes_string_ids(api: Api, server: SandboxServer) -> None:
    """Ids are strings in PATCH …/fields; a number is a 400; options and nesting are checked."""
    _, _, tenant_id = await _landlord_and_tenant(api, server)
    tenant = _by_label(await _fields(api, server, "second"))
    choice = tenant["Are you a Tenant or Guarantor?"]
    nested_id = choice["options"][1]["nested_fields"][0]["id"]
    path = f"/v1/collaborators/{tenant_id}/fields"
    mobile = tenant["Mobile"]["id"]
    message = (await api.patch(path, {"fields": [{"id": mobile, "value": "1"}]})).spring(400)
    assert "id must be a string" in message
    (await api.patch(path, {"fields": [{"id": "abc", "value": "1"}]})).spring(400)
    (await api.patch(path, {"fields": []})).spring(400)
    (await api.patch(path, {"fields": "x"})).spring(400)
    (await api.patch(path, {})).spring(400)
    guarantor = [{"id": str(choice["id"]), "value": "guarantor"}]
    assert "is required when" in (await api.patch(path, {"fields": guarantor})).spring(400)
    guarantor.append({"id": str(nested_id), "value": "Bob"})
    reply = await api.patch(path, {"fields": guarantor})
    assert reply.status == 200, reply.body
    assert {f["id"]: f["value"] for f in reply.json()["fields"]}[nested_id] == "Bob"
    # Changing the option drops the answer nested under the old one.
    back = await api.patch(path, {"fields": [{"id": str(choice["id"]), "value": "other"}]})
    assert nested_id not in {f["id"] for f in back.json()["fields"]}
    # An empty value clears a field; a field of the other side is refused.
    cleared = await api.patch(path, {"fields": [{"id": str(mobile), "value": ""}]})
    assert mobile not in {f["id"] for f in cleared.json()["fields"]}
    landlord = _by_label(await _fields(api, server, "first"))
    wrong = [{"id": str(landlord["Address"]["id"]), "value": "x"}]
    (await api.patch(path, {"fields": wrong})).spring(400)
