"""Signing a contract: signatures (#31, #32), removing collaborators, company parties (#33).

Plain HTTP against the emulator, never through the SDK's resources.
"""

from __future__ import annotations

import aiohttp

from contractsdk.sandbox import SandboxServer
from contractsdk.sandbox._upload import MAX_SIGNATURE_BYTES

from ._helpers import Api
from ._lifecycle import PNG, _add, _by_label, _contract, _fields, _id, _landlord_and_tenant, _sign

# --- signatures (#31, #32) ----------------------------------------------------------------


async def test_signature_upload_checks(api: Api, server: SandboxServer) -> None:
    """Multipart only (415), PNG or JPEG (415), not empty (400), at most the limit (413)."""
    _, _, tenant_id = await _landlord_and_tenant(api, server)
    path = f"/v1/collaborators/{tenant_id}/signature"
    (await api.patch(path, {"file": "x"})).spring(415)
    (await _sign(api, tenant_id, b"GIF89a\x01\x00\x01\x00")).spring(415)
    (await _sign(api, tenant_id, b"")).spring(400)
    (await _sign(api, tenant_id, PNG + b"\x00" * MAX_SIGNATURE_BYTES)).spring(413)
    text_only = aiohttp.MultipartWriter("form-data")
    for name, value in (("comment", "no file here"), ("other", "still none")):
        text_only.append(value).set_content_disposition("form-data", name=name)
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
