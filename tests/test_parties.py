"""Users, parties, identity fields, signatures and companies, through MockTransport."""

from __future__ import annotations

import email.parser
import email.policy
import json
import pickle
import urllib.parse
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from contractsdk import (
    CompanyCreated,
    ConfigurationError,
    ContractClient,
    IdentityField,
    IdentityFieldSet,
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
from contractsdk._converter import structure_list
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

HOST = "https://sandbox.legislate.tech"
SAMPLES = Path(__file__).resolve().parent / "data"  # copies of reference/samples/

#: The tenant sample (shared/reference/samples/identity_fields_tenant.json), inlined so the
#: tests run without ../shared.
TENANT_FIELDS: list[dict[str, Any]] = [
    {"id": 2112, "label": "First Name", "value": ""},
    {"id": 2113, "label": "Last Name", "value": ""},
    {"id": 2114, "label": "Email", "validationType": "EMAIL", "value": ""},
    {"id": 2115, "label": "Current address", "value": ""},
    {"id": 2116, "label": "Mobile", "value": ""},
    {
        "id": 2121,
        "label": "Are you a Tenant or Guarantor?",
        "options": [
            {"name": "tenant"},
            {
                "name": "guarantor",
                "nested_fields": [
                    {
                        "id": 2122,
                        "type": "input",
                        "label": "Please specify the name of the Tenant",
                        "required": True,
                        "index": 5,
                        "parentOption": "guarantor",
                        "side": "second",
                        "identity_field_id": 6754496734560423,
                    }
                ],
            },
            {"name": "other"},
        ],
        "value": "",
    },
]
LANDLORD_FIELDS: list[dict[str, Any]] = [
    {"id": 2117, "label": "First Name", "value": ""},
    {"id": 2118, "label": "Last Name", "value": ""},
    {"id": 2119, "label": "Email", "validationType": "EMAIL", "value": ""},
    {"id": 2120, "label": "Address", "value": ""},
]
TERMS: list[dict[str, Any]] = [{"id": 1, "name": "contract_name", "label": "Name"}]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00IHDR" + bytes(range(256))
JPEG = b"\xff\xd8\xff\xe0" + b"JFIF" + bytes(64)

Route = Callable[[Request], Response]


class Routes:
    """A MockTransport handler answering by (method, path); records what was sent."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Request] = []

    def on(self, method: str, path: str, route: Route | Response) -> None:
        if isinstance(route, Response):
            fixed = route
            self.routes[method, path] = lambda _request: fixed
        else:
            self.routes[method, path] = route

    def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        route = self.routes.get((request.method, request.path))
        if route is None:
            return json_response(404, {"message": f"no route {request.method} {request.path}"})
        return route(request)

    def sent(self, method: str | None = None) -> list[Request]:
        return [r for r in self.requests if method is None or r.method == method]


@pytest.fixture
def routes() -> Routes:
    return Routes()


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture
async def api(routes: Routes) -> AsyncIterator[ContractClient]:
    async with ContractClient(
        rate_limits=None,
        api_key=API_KEY,
        environment="sandbox",
        transport=MockTransport(routes),
        sleep=_no_sleep,
    ) as client:
        yield client


def created(kind: str, number: int) -> Response:
    href = f"{HOST}/v1/{kind}/{number}"
    return json_response(201, {"rel": "self", "href": href}, headers={"Location": href})


def tenant_set() -> IdentityFieldSet:
    return IdentityFieldSet(structure_list(TENANT_FIELDS, IdentityField), template_id=149)


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


def flow_routes(routes: Routes, *, fail_party: int | None = None) -> None:
    routes.on("GET", "/v1/templates/149/terms", json_response(200, TERMS))
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
