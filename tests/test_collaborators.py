"""Collaborators: create, list, get, delete, roles, fields and signatures, through MockTransport."""

from __future__ import annotations

import email.parser
import email.policy
from pathlib import Path
from typing import Any

import pytest

from contractsdk import (
    ConfigurationError,
    ContractClient,
    IdentityValidationError,
    Request,
    Response,
    Role,
    Side,
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
from tests.conftest import API_KEY

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00IHDR" + bytes(range(256))
JPEG = b"\xff\xd8\xff\xe0" + b"JFIF" + bytes(64)


# -- collaborators -------------------------------------------------------------------------


async def test_create_collaborator_sends_camel_case(api: ContractClient, routes: Routes) -> None:
    """The body is camelCase with nestedFields, and the id comes from the Link."""
    routes.on("GET", "/v1/templates/149/fields", json_response(200, TENANT_FIELDS))
    routes.on("POST", "/v1/contracts/500/collaborators", created("collaborators", 901))
    collaborator = await api.collaborators.create(
        500,
        user_id=12,
        inviter_id=7,
        roles=[Role.PARTY],
        side=Side.SECOND,
        values={"First Name": "Louis", 2121: "guarantor", 2122: "Mike"},
        template_id=149,
        signatory_id=33,
    )
    post = routes.sent("POST")[0]
    assert post.json() == {
        "userId": 12,
        "inviterId": 7,
        "role": ["party"],
        "side": "second",
        "signatoryId": 33,
        "identityFields": [
            {"id": 2112, "value": "Louis", "nestedFields": []},
            {
                "id": 2121,
                "value": "guarantor",
                "nestedFields": [{"id": 2122, "value": "Mike", "nestedFields": []}],
            },
        ],
    }
    assert "idempotency-key" in post.headers
    assert (collaborator.id, collaborator.contract_id, collaborator.user_id) == (901, 500, 12)
    assert collaborator.roles == ("party",) and Role.PARTY in collaborator.roles
    assert collaborator.values == {2112: "Louis", 2121: "guarantor", 2122: "Mike"}


async def test_create_collaborator_validates_first(api: ContractClient, routes: Routes) -> None:
    """Values breaking the identity fields raise before the collaborator is posted."""
    routes.on("GET", "/v1/templates/149/fields", json_response(200, TENANT_FIELDS))
    with pytest.raises(IdentityValidationError):
        await api.collaborators.create(
            500,
            user_id=12,
            inviter_id=7,
            roles="party",
            side="second",
            values={"Email": "nope"},
            template_id=149,
        )
    assert routes.sent("POST") == []


@pytest.mark.parametrize("roles", [["party", "witness"], ["collaborator", "party", "signatory"]])
async def test_create_collaborator_checks_the_role_pair(
    api: ContractClient, routes: Routes, roles: list[str]
) -> None:
    """A pair without collaborator, or three roles: refused before anything is sent."""
    with pytest.raises(ConfigurationError, match="at most two roles, and then one is"):
        await api.collaborators.create(
            500, user_id=12, inviter_id=7, roles=roles, side="first", values={"2117": "John"}
        )
    assert routes.requests == []


async def test_create_collaborator_without_template(api: ContractClient, routes: Routes) -> None:
    """Without template_id values go unchecked but must be keyed by id."""
    routes.on("POST", "/v1/contracts/500/collaborators", created("collaborators", 902))
    with pytest.raises(ConfigurationError, match="by its id"):
        await api.collaborators.create(
            500, user_id=12, inviter_id=7, roles="party", side="first", values={"Email": "a"}
        )
    assert routes.requests == []
    await api.collaborators.create(
        500, user_id=12, inviter_id=7, roles="party", side="first", values={"2117": "John"}
    )
    body = routes.sent("POST")[0].json()
    assert body["identityFields"] == [{"id": 2117, "value": "John", "nestedFields": []}]
    assert "signatoryId" not in body


async def test_list_get_and_delete_collaborators(api: ContractClient, routes: Routes) -> None:
    """list, get and delete use the spec's paths; unknown keys and `signed` are kept."""
    wire = {
        "_links": {"self": {"href": f"{HOST}/v1/collaborators/901"}},
        "collaborator_name": "Louis Litt",
        "contract_id": 500,
        "email": "l@l.io",
        "fields": [{"id": 2112, "name": "First Name", "value": "Louis"}],
        "roles": ["party"],
        "side": "second",
        "user_id": 12,
        "signed": False,
        "extra": {"kept": True},
    }
    routes.on("GET", "/v1/contracts/500/collaborators", json_response(200, [wire]))
    routes.on("GET", "/v1/collaborators/901", json_response(200, wire))
    routes.on("DELETE", "/v1/collaborators/901", Response(status_code=204))
    (listed,) = await api.collaborators.list(500)
    assert listed.id == 901 and listed.name == "Louis Litt" and listed.signed is False
    assert listed.raw["extra"] == {"kept": True}
    got = await api.collaborators.get(901)
    assert got == listed and got.values == {2112: "Louis"}
    await api.collaborators.delete(901)
    assert [(r.method, r.path) for r in routes.requests] == [
        ("GET", "/v1/contracts/500/collaborators"),
        ("GET", "/v1/collaborators/901"),
        ("DELETE", "/v1/collaborators/901"),
    ]


async def test_get_collaborator_without_id_takes_the_path(
    api: ContractClient, routes: Routes
) -> None:
    """An answer with no id and no link gets its id from the request path."""
    routes.on("GET", "/v1/collaborators/905", json_response(200, {"user_id": 3}))
    got = await api.collaborators.get(905)
    assert (got.id, got.user_id, got.signed) == (905, 3, None)


async def test_update_roles(api: ContractClient, routes: Routes) -> None:
    """update_roles sends {roles} and reads the collaborator answer."""
    routes.on(
        "PATCH",
        "/v1/collaborators/901/roles",
        json_response(200, {"id": 901, "roles": ["collaborator", "signatory"]}),
    )
    updated = await api.collaborators.update_roles(901, roles=["collaborator", Role.SIGNATORY])
    assert routes.sent("PATCH")[0].json() == {"roles": ["collaborator", "signatory"]}
    assert updated.roles == ("collaborator", "signatory")


@pytest.mark.parametrize(
    "roles",
    [
        ["collaborator", "party", "witness"],
        ["party", "signatory"],
        ["party_with_signatory"],
        ["owner"],
    ],
)
async def test_update_roles_rule(api: ContractClient, routes: Routes, roles: list[str]) -> None:
    """More than two roles, two without collaborator, or a role the DTO lacks: refused."""
    with pytest.raises(ConfigurationError):
        await api.collaborators.update_roles(901, roles=roles)
    assert routes.requests == []


async def test_update_fields_sends_string_ids(api: ContractClient, routes: Routes) -> None:
    """Identity values in a field update carry their ids as strings."""
    routes.on("PATCH", "/v1/collaborators/901/fields", json_response(200, {"id": 901}))
    await api.collaborators.update_fields(901, values={2112: "Lou", "2113": 7})
    assert routes.sent("PATCH")[0].json() == {
        "fields": [{"id": "2112", "value": "Lou"}, {"id": "2113", "value": "7"}]
    }
    with pytest.raises(ConfigurationError):
        await api.collaborators.update_fields(901, values={"First Name": "x"})
    with pytest.raises(ConfigurationError):
        await api.collaborators.update_fields(901, values={})
    assert len(routes.requests) == 1


def _parts(request: Request) -> list[Any]:
    content_type = request.headers["content-type"]
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + (request.content or b"")
    )
    assert message.is_multipart()
    return list(message.iter_parts())


@pytest.mark.parametrize(
    ("image", "filename", "part_type"),
    [(PNG, "signature.png", "image/png"), (JPEG, "signature.jpg", "image/jpeg")],
    ids=["png", "jpeg"],
)
async def test_sign_uploads_one_file_part(
    api: ContractClient, routes: Routes, image: bytes, filename: str, part_type: str
) -> None:
    """Sign sends multipart/form-data with one part `file`, its filename and type."""
    routes.on("PATCH", "/v1/collaborators/901/signature", json_response(200, {"signed": True}))
    signed = await api.collaborators.sign(901, signature=image)
    assert signed.id == 901 and signed.signed is True
    (request,) = routes.requests
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    (part,) = _parts(request)
    assert part.get_param("name", header="content-disposition") == "file"
    assert part.get_filename() == filename
    assert part.get_content_type() == part_type
    assert part.get_payload(decode=True) == image
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


async def test_sign_from_a_path_and_retried(
    api: ContractClient, routes: Routes, tmp_path: Path
) -> None:
    """A file path is read; a 429 is retried with the same body through the send sequence."""
    path = tmp_path / "sig.png"
    path.write_bytes(PNG)
    answers = iter([json_response(429, {}, headers={"Retry-After": "0"}), json_response(200, {})])
    routes.on("PATCH", "/v1/collaborators/901/signature", lambda _r: next(answers))
    await api.collaborators.sign(901, signature=str(path))
    first, second = routes.requests
    assert first.content == second.content and first.content is not None
    assert PNG in first.content
    assert api.stats.retries == 1


@pytest.mark.parametrize(
    "signature",
    [b"GIF89a....", b"", PNG + bytes(1024 * 1024), 12],
    ids=["gif", "empty", "too-large", "int"],
)
async def test_sign_refuses_bad_images(api: ContractClient, routes: Routes, signature: Any) -> None:
    """Not PNG/JPEG, empty, over 512 KiB, or not bytes: refused before sending."""
    with pytest.raises(ConfigurationError):
        await api.collaborators.sign(901, signature=signature)
    assert routes.requests == []


async def test_sign_refuses_a_missing_or_huge_file(
    api: ContractClient, routes: Routes, tmp_path: Path
) -> None:
    """A path that cannot be read, or a file over 512 KiB, is refused before sending."""
    with pytest.raises(ConfigurationError, match="cannot read"):
        await api.collaborators.sign(901, signature=tmp_path / "absent.png")
    big = tmp_path / "big.png"
    big.write_bytes(PNG + bytes(1024 * 1024))
    with pytest.raises(ConfigurationError, match="at most"):
        await api.collaborators.sign(901, signature=big)
    assert routes.requests == []


async def test_sign_with_saved_signature(api: ContractClient, routes: Routes) -> None:
    """sign_with_saved_signature is a body-less PATCH to /user-signature."""
    routes.on("PATCH", "/v1/collaborators/901/user-signature", json_response(200, {"id": 901}))
    assert (await api.collaborators.sign_with_saved_signature(901)).id == 901
    (request,) = routes.requests
    assert request.content is None
