"""The contract lifecycle: identity fields, collaborators, signatures, company parties (#23–#33).

Plain HTTP against the emulator, never through the SDK's resources.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import aiohttp
import pytest

from contractsdk.sandbox import FaultRule, SandboxServer
from contractsdk.sandbox._upload import MAX_SIGNATURE_BYTES

from ._helpers import Api, Reply, ast_template_id, contract_id, nda_template_id, shared_team


def _png() -> bytes:
    """A valid 1x1 PNG (its signature holds CR LF bytes, which the multipart must keep)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


PNG = _png()
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"


def _form(data: bytes, name: str = "file", filename: str | None = "signature.png") -> Any:
    form = aiohttp.FormData()
    form.add_field(name, data, filename=filename, content_type="image/png")
    return form


async def _sign(api: Api, collaborator: int, data: bytes = PNG, **kwargs: Any) -> Reply:
    return await api.call(
        "PATCH", f"/v1/collaborators/{collaborator}/signature", data=_form(data, **kwargs)
    )


def _id(reply: Reply) -> int:
    assert reply.status == 201, reply.body
    return int(reply.headers["Location"].rsplit("/", 1)[1])


async def _contract(api: Api, server: SandboxServer, template_id: int | None = None) -> int:
    user = server.users[0]
    reply = await api.create_contract(
        user.personal_team_id, user.id, template_id or ast_template_id(server)
    )
    assert reply.status == 201, reply.body
    return contract_id(reply)


async def _fields(api: Api, server: SandboxServer, side: str, *roles: str) -> list[Any]:
    query = "&".join(f"roles={r}" for r in roles or ("party",))
    reply = await api.get(f"/v1/templates/{ast_template_id(server)}/fields?{query}&side={side}")
    assert reply.status == 200, reply.body
    data: list[Any] = reply.json()
    return data


def _by_label(fields: list[Any]) -> dict[str, Any]:
    return {f["label"]: f for f in fields}


async def _add(
    api: Api,
    cid: int,
    user_id: int,
    side: str,
    identity: list[Any] | None = None,
    roles: list[str] | None = None,
    inviter: int | None = None,
) -> Reply:
    body = {
        "userId": user_id,
        "inviterId": inviter,
        "role": roles or ["party"],
        "side": side,
        "identityFields": identity or [],
    }
    return await api.post(f"/v1/contracts/{cid}/collaborators", body)


async def _landlord_and_tenant(api: Api, server: SandboxServer) -> tuple[int, int, int]:
    """A tenancy contract with Ada (landlord, first side) and Grace (tenant), all filled in."""
    cid = await _contract(api, server)
    owner = server.users[0].id
    landlord = _by_label(await _fields(api, server, "first"))
    tenant = _by_label(await _fields(api, server, "second"))
    first = await _add(
        api,
        cid,
        owner,
        "first",
        [{"id": landlord["Address"]["id"], "value": "1 Road"}],
        None,
        owner,
    )
    identity = [
        {"id": tenant["Current address"]["id"], "value": "2 Lane"},
        {"id": tenant["Are you a Tenant or Guarantor?"]["id"], "value": "tenant"},
    ]
    second = await _add(api, cid, server.users[1].id, "second", identity, None, owner)
    return cid, _id(first), _id(second)


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


# --- signatures (#31, #32) ----------------------------------------------------------------


async def test_signature_upload_checks(api: Api, server: SandboxServer) -> None:
    """Multipart only (415), PNG or JPEG (415), not empty (400), at most the limit (413)."""
    _, _, tenant_id = await _landlord_and_tenant(api, server)
    path = f"/v1/collaborators/{tenant_id}/signature"
    (await api.patch(path, {"file": "x"})).spring(415)
    (await _sign(api, tenant_id, b"GIF89a\x01\x00\x01\x00")).spring(415)
    (await _sign(api, tenant_id, b"")).spring(400)
    (await _sign(api, tenant_id, PNG + b"\x00" * MAX_SIGNATURE_BYTES)).spring(413)
    text_only = aiohttp.FormData(default_to_multipart=True)
    text_only.add_field("comment", "no file here")
    text_only.add_field("other", "still none")
    (await api.call("PATCH", path, data=text_only)).spring(400)
    bare = b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n"
    headers = {"Content-Type": "multipart/form-data"}
    (await api.call("PATCH", path, data=bare, headers=headers)).spring(400)
    assert (await api.get(f"/v1/collaborators/{tenant_id}")).json()["signed"] is False
    # Any field name is accepted for the file part.
    reply = await _sign(api, tenant_id, name="signature_image")
    assert reply.status == 200, reply.body
    assert server.state.signatures[server.users[1].id] == PNG


async def test_signing_rules(api: Api, server: SandboxServer) -> None:
    """Required fields filled (400 lists them), a signing role (403), once (409)."""
    cid = await _contract(api, server)
    owner = server.users[0].id
    landlord_id = _id(await _add(api, cid, owner, "first", inviter=owner))
    message = (await _sign(api, landlord_id)).spring(400)
    assert "Address" in message
    landlord = _by_label(await _fields(api, server, "first"))
    fill = {"fields": [{"id": str(landlord["Address"]["id"]), "value": "1 Road"}]}
    await api.patch(f"/v1/collaborators/{landlord_id}/fields", fill)
    bare = _id(
        await _add(api, cid, server.users[2].id, "second", roles=["collaborator"], inviter=owner)
    )
    (await _sign(api, bare)).spring(403)
    assert (await _sign(api, landlord_id)).status == 200
    (await _sign(api, landlord_id)).spring(409)
    (await api.patch(f"/v1/collaborators/{landlord_id}/user-signature")).spring(409)
    # Signed: no changes, no removal.
    (await api.patch(f"/v1/collaborators/{landlord_id}/fields", fill)).spring(409)
    roles = {"roles": ["witness"]}
    (await api.patch(f"/v1/collaborators/{landlord_id}/roles", roles)).spring(409)
    (await api.delete(f"/v1/collaborators/{landlord_id}")).spring(409)
    # The bare collaborator does not sign, so the landlord's signature completed it.
    contract = (await api.get(f"/v1/contracts/{cid}")).json()
    assert contract["completedDate"] is not None
    (await _add(api, cid, server.users[3].id, "second", inviter=owner)).spring(409)


async def test_user_signature_uses_the_saved_one(api: Api, server: SandboxServer) -> None:
    """Without a saved signature 409; an earlier upload is the user's saved signature."""
    _, _, tenant_id = await _landlord_and_tenant(api, server)
    path = f"/v1/collaborators/{tenant_id}/user-signature"
    assert "no saved signature" in (await api.patch(path)).spring(409)
    other = await _contract(api, server)
    owner = server.users[0].id
    tenant = _by_label(await _fields(api, server, "second"))
    identity = [
        {"id": tenant["Current address"]["id"], "value": "2 Lane"},
        {"id": tenant["Are you a Tenant or Guarantor?"]["id"], "value": "tenant"},
    ]
    elsewhere = _id(await _add(api, other, server.users[1].id, "second", identity, inviter=owner))
    assert (await _sign(api, elsewhere)).status == 200
    reply = await api.patch(path)
    assert reply.status == 200, reply.body
    assert reply.json()["signed"] is True


async def test_delete_collaborator_is_204_without_a_body(api: Api, server: SandboxServer) -> None:
    """DELETE answers 204 with an empty body; the collaborator is gone."""
    cid, landlord_id, tenant_id = await _landlord_and_tenant(api, server)
    reply = await api.delete(f"/v1/collaborators/{tenant_id}")
    assert reply.status == 204
    assert reply.body == b""
    (await api.get(f"/v1/collaborators/{tenant_id}")).spring(404)
    (await api.delete(f"/v1/collaborators/{tenant_id}")).spring(404)
    listed = (await api.get(f"/v1/contracts/{cid}/collaborators")).json()
    assert [c["id"] for c in listed] == [landlord_id]


# --- company parties (#33) ----------------------------------------------------------------


async def test_company_party(api: Api, server: SandboxServer) -> None:
    """201 {company_name, contract_collaborator_id, contract_id}; listed as a collaborator."""
    cid, landlord_id, tenant_id = await _landlord_and_tenant(api, server)
    body = {
        "company_name": "Acme Lettings Ltd",
        "company_number": "01234567",
        "registered_office_address": {
            "address_line_1": "1 High Street",
            "locality": "London",
            "postal_code": "W1 1AA",
            "country": "GB",
        },
        "role": "party",
        "side": "first",
        "created_by": server.users[0].id,
        "signatory_related_company": landlord_id,
    }
    reply = await api.post(f"/v1/contracts/{cid}/company", body)
    assert reply.status == 201, reply.body
    data = reply.json()
    company_id = data["contract_collaborator_id"]
    assert data == {
        "company_name": "Acme Lettings Ltd",
        "contract_collaborator_id": company_id,
        "contract_id": cid,
    }
    company = (await api.get(f"/v1/collaborators/{company_id}")).json()
    assert company["collaborator_name"] == "Acme Lettings Ltd"
    assert company["user_id"] is None
    assert company["roles"] == ["party"]
    (await _sign(api, company_id)).spring(403)
    # The signatory of a company cannot be removed while the company relies on it.
    (await api.delete(f"/v1/collaborators/{landlord_id}")).spring(409)
    # Company parties sign through their signatory: the two people complete the contract.
    await _sign(api, landlord_id)
    await _sign(api, tenant_id)
    assert (await api.get(f"/v1/contracts/{cid}")).json()["completedDate"] is not None


async def test_company_validation(api: Api, server: SandboxServer) -> None:
    """Every problem at once (400); created_by outside the team 403; unknown contract 404."""
    cid = await _contract(api, server)
    body = {
        "company_name": 5,
        "side": "both",
        "role": "party_with_signatory",
        "registered_office_address": {"country": 1},
        "signatory_related_company": 1,
    }
    message = (await api.post(f"/v1/contracts/{cid}/company", body)).spring(400)
    for expected in (
        "company_name must be a string",
        "'both' is not a side",
        "not a company role",
        "registered_office_address.country",
        "signatory_related_company 1",
    ):
        assert expected in message, (expected, message)
    good = {"company_name": "Acme", "side": "second"}
    (await api.post(f"/v1/contracts/{cid}/company", {**good, "created_by": 1})).spring(404)
    outsider = server.users[1].id
    (await api.post(f"/v1/contracts/{cid}/company", {**good, "created_by": outsider})).spring(403)
    (await api.post("/v1/contracts/1/company", good)).spring(404)
    assert (await api.get(f"/v1/contracts/{cid}/collaborators")).json() == []


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
