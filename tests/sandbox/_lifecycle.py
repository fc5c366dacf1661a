"""Raw-HTTP helpers of the contract lifecycle tests: contracts, collaborators, signatures.

Shared by ``test_lifecycle.py``, ``test_collaborators.py`` and ``test_signatures.py``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import aiohttp

from contractsdk.sandbox import SandboxServer

from ._helpers import Api, Reply, ast_template_id, contract_id


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
