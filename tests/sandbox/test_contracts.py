"""Contracts: create, list, get, patch, delete, PDF and HTML, and the term rules (§7, §8)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from contractsdk.sandbox import SandboxServer

from ._helpers import Api, ast_template_id, contract_id, nda_template_id, shared_team

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")

MONTHLY_WITH_BREAK: list[dict[str, Any]] = [
    {"name": "contract_name", "value": "Flat 3, 1 High Street"},
    {
        "name": "contract_rentFrequency",
        "value": "month",
        "nested_fields": [
            {
                "name": "contract_breakClause",
                "value": "breakClauseYes",
                "nested_fields": [{"name": "contract_breakClauseStart", "value": "6 months"}],
            }
        ],
    },
    {"name": "contract_pets", "value": "petsNo"},
]


async def _create(api: Api, server: SandboxServer, fields: Any = None) -> tuple[int, Any]:
    user = server.users[0]
    reply = await api.create_contract(
        user.personal_team_id, user.id, ast_template_id(server), fields
    )
    assert reply.status == 201, reply.body
    return contract_id(reply), reply


async def _fields_of(api: Api, cid: int) -> dict[str, str]:
    data = (await api.get(f"/v1/contracts/{cid}")).json()
    return {f["name"]: f["value"] for f in data["fields"]}


async def test_create_returns_a_bare_link_and_location(api: Api, server: SandboxServer) -> None:
    """POST /v1/teams/{id}/contracts answers 201 with {"rel", "href"} and a Location header."""
    cid, reply = await _create(api, server, MONTHLY_WITH_BREAK)
    href = f"{server.url}/v1/contracts/{cid}"
    assert reply.json() == {"rel": "self", "href": href}
    assert reply.headers["Location"] == href
    assert len(str(cid)) == 16


async def test_contract_json_has_the_spec_keys_and_no_id(api: Api, server: SandboxServer) -> None:
    """A contract has the spec wire keys (camelCase completedDate) and no id key."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    data = (await api.get(f"/v1/contracts/{cid}")).json()
    assert list(data) == [
        "contract_name",
        "created_date",
        "purchased_date",
        "completedDate",
        "fields",
        "_links",
    ]
    assert data["contract_name"] == "Flat 3, 1 High Street"
    assert _ISO.fullmatch(data["created_date"])
    assert _ISO.fullmatch(data["purchased_date"])
    assert data["completedDate"] is None
    assert data["_links"] == {"self": {"href": f"{server.url}/v1/contracts/{cid}"}}
    template = server.seed.catalog.templates[ast_template_id(server)]
    assert data["fields"] == [
        {"id": template.by_name[n].id, "name": n, "value": v}
        for n, v in [
            ("contract_name", "Flat 3, 1 High Street"),
            ("contract_rentFrequency", "month"),
            ("contract_breakClause", "breakClauseYes"),
            ("contract_breakClauseStart", "6 months"),
            ("contract_pets", "petsNo"),
        ]
    ]


async def test_name_defaults_to_the_type_name(api: Api, server: SandboxServer) -> None:
    """Without a contract_name value the contract shows its type's name and no fields."""
    cid, _ = await _create(api, server)
    data = (await api.get(f"/v1/contracts/{cid}")).json()
    assert data["contract_name"] == "Assured Shorthold Tenancy Agreement"
    assert data["fields"] == []


async def test_fields_accept_ids_instead_of_names(api: Api, server: SandboxServer) -> None:
    """Fields may name their term by id only, as Legislate's example code does."""
    template = server.seed.catalog.templates[ast_template_id(server)]
    by = template.by_name
    fields = [
        {
            "id": by["contract_rentFrequency"].id,
            "value": "month",
            "nested_fields": [{"id": by["contract_breakClause"].id, "value": "breakClauseNo"}],
        }
    ]
    cid, _ = await _create(api, server, fields)
    assert await _fields_of(api, cid) == {
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseNo",
    }


async def test_list_team_contracts_is_a_plain_array(api: Api, server: SandboxServer) -> None:
    """GET /v1/teams/{id}/contracts returns the team's contracts as a bare array."""
    team = server.users[0].personal_team_id
    assert (await api.get(f"/v1/teams/{team}/contracts")).json() == []
    first, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    second, _ = await _create(api, server)
    data = (await api.get(f"/v1/teams/{team}/contracts")).json()
    assert [c["_links"]["self"]["href"].rsplit("/", 1)[1] for c in data] == [
        str(first),
        str(second),
    ]
    (await api.get("/v1/teams/1/contracts")).spring(404)


async def test_creator_must_belong_to_the_team(api: Api, server: SandboxServer) -> None:
    """A created_by_user_id that is neither owner nor member of the team gives 403."""
    acme = shared_team(server, "Acme Legal")
    team = next(t for t in server.teams if t.id == acme)
    outsider = next(
        u for u in server.users if u.id not in team.owner_ids and u.id not in team.member_ids
    )
    reply = await api.create_contract(acme, outsider.id, ast_template_id(server))
    assert str(outsider.id) in reply.spring(403)
    member = team.member_ids[0]
    assert (await api.create_contract(acme, member, ast_template_id(server))).status == 201
    assert len(server.state.team_contracts[acme]) == 1


async def test_unknown_team_user_or_template(api: Api, server: SandboxServer) -> None:
    """Unknown team, creator or template give 404 naming the missing thing."""
    user = server.users[0]
    template = ast_template_id(server)
    (await api.create_contract(1, user.id, template)).spring(404)
    assert "User with id 5" in (
        await api.create_contract(user.personal_team_id, 5, template)
    ).spring(404)
    assert "Template with id 99999" in (
        await api.create_contract(user.personal_team_id, user.id, 99999)
    ).spring(404)


async def test_template_of_a_type_not_available_in_the_team_is_400(
    api: Api, server: SandboxServer
) -> None:
    """A private type's template cannot be used in another team."""
    private = next(t for t in server.seed.catalog.types if t.team_ids is not None)
    user = server.users[0]
    reply = await api.create_contract(user.personal_team_id, user.id, private.template_ids[0])
    assert "not available" in reply.spring(400)
    acme = shared_team(server, "Acme Legal")
    assert (await api.create_contract(acme, user.id, private.template_ids[0])).status == 201


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        pytest.param(
            [{"name": "contract_colourOfDoor", "value": "red"}],
            ["unknown term", "contract_colourOfDoor"],
            id="unknown-name",
        ),
        pytest.param([{"id": 1, "value": "x"}], ["unknown term id 1"], id="unknown-id"),
        pytest.param(
            [{"name": "contract_pets", "value": "maybe"}],
            ['"maybe" is not an option', "contract_pets", "petsYes"],
            id="bad-option",
        ),
        pytest.param(
            [
                {
                    "name": "contract_rentFrequency",
                    "value": "month",
                    "nested_fields": [
                        {"name": "contract_breakClause", "value": "breakClauseYes"},
                        {"name": "contract_rentFrequency", "value": "week"},
                    ],
                }
            ],
            ["contract_rentFrequency", "top-level"],
            id="top-level-term-nested",
        ),
        pytest.param(
            [
                {
                    "name": "contract_letType",
                    "value": "hmo",
                    "nested_fields": [
                        {"name": "contract_roomDescription", "value": "Room 2"},
                        {"name": "contract_bedsitDescription", "value": "Bedsit 1"},
                    ],
                }
            ],
            ["exclusive-option", '"contract_letType"', '"bedsit"', '"hmo"'],
            id="exclusive-option",
        ),
        pytest.param(
            [
                {
                    "name": "contract_letType",
                    "value": "sole",
                    "nested_fields": [{"name": "contract_roomDescription", "value": "Room 2"}],
                }
            ],
            ["contract_roomDescription", 'only when "contract_letType" is "hmo"', '"sole"'],
            id="nested-under-other-option",
        ),
        pytest.param(
            [{"name": "contract_breakClause", "value": "breakClauseNo"}],
            ["contract_breakClause", "nested under", "contract_rentFrequency"],
            id="nested-term-at-top-level",
        ),
        pytest.param(
            [{"name": "contract_pets", "value": 1}],
            ["contract_pets", "must be a string"],
            id="number-value",
        ),
        pytest.param([{"id": "3779", "value": "month"}], ["id must be an integer"], id="string-id"),
        pytest.param(
            [{"name": "contract_pets", "value": "petsYes"}, {"name": "contract_pets"}],
            ["contract_pets", "more than once"],
            id="duplicate",
        ),
        pytest.param(
            [{"name": "contract_name", "value": "x", "nested_fields": []}],
            ["contract_name", "no options"],
            id="nested-under-free-text",
        ),
        pytest.param(
            [{"name": "contract_pets", "value": "petsYes", "nestedFields": []}],
            ["nestedFields", "nested_fields"],
            id="camel-case-nested",
        ),
        pytest.param({"name": "contract_pets"}, ["fields must be an array"], id="not-array"),
        pytest.param(["contract_pets"], ["fields[0] must be an object"], id="not-object"),
        pytest.param([{"value": "x"}], ["needs an id or a name"], id="no-id-or-name"),
    ],
)
async def test_invalid_fields_are_400_naming_the_term(
    api: Api, server: SandboxServer, fields: Any, fragments: list[str]
) -> None:
    """Each rule violation gives 400 whose message names the term; nothing is created."""
    user = server.users[0]
    reply = await api.create_contract(
        user.personal_team_id, user.id, ast_template_id(server), fields
    )
    message = reply.spring(400)
    for fragment in fragments:
        assert fragment in message, message
    assert server.state.contracts == {}


async def test_every_problem_is_reported_at_once(api: Api, server: SandboxServer) -> None:
    """Several invalid fields are all named in one 400 message."""
    fields = [
        {"name": "contract_pets", "value": "maybe"},
        {"name": "contract_nope", "value": "x"},
    ]
    user = server.users[0]
    message = (
        await api.create_contract(user.personal_team_id, user.id, ast_template_id(server), fields)
    ).spring(400)
    assert "contract_pets" in message
    assert "contract_nope" in message


async def test_patch_merges_fields(api: Api, server: SandboxServer) -> None:
    """PATCH sets new values and keeps the others."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    reply = await api.patch(
        f"/v1/contracts/{cid}", {"fields": [{"name": "contract_pets", "value": "petsYes"}]}
    )
    assert reply.status == 200
    values = {f["name"]: f["value"] for f in reply.json()["fields"]}
    assert values["contract_pets"] == "petsYes"
    assert values["contract_breakClauseStart"] == "6 months"


async def test_changing_an_option_drops_the_nested_answers(api: Api, server: SandboxServer) -> None:
    """Switching rentFrequency from month to week drops the break-clause answers below month."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    reply = await api.patch(
        f"/v1/contracts/{cid}", {"fields": [{"name": "contract_rentFrequency", "value": "week"}]}
    )
    values = {f["name"]: f["value"] for f in reply.json()["fields"]}
    assert values["contract_rentFrequency"] == "week"
    assert "contract_breakClause" not in values
    assert "contract_breakClauseStart" not in values


async def test_patch_nested_answer_under_the_current_option(
    api: Api, server: SandboxServer
) -> None:
    """PATCH may answer a nested term under the parent's stored option without repeating it."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    fields = [
        {
            "name": "contract_rentFrequency",
            "nested_fields": [{"name": "contract_breakClause", "value": "breakClauseNo"}],
        }
    ]
    reply = await api.patch(f"/v1/contracts/{cid}", {"fields": fields})
    values = {f["name"]: f["value"] for f in reply.json()["fields"]}
    assert values["contract_breakClause"] == "breakClauseNo"
    assert "contract_breakClauseStart" not in values


async def test_invalid_patch_changes_nothing(api: Api, server: SandboxServer) -> None:
    """A PATCH with one bad field is refused whole; the stored contract is unchanged."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    before = await _fields_of(api, cid)
    fields = [
        {"name": "contract_pets", "value": "petsYes"},
        {"name": "contract_rentFrequency", "value": "fortnight"},
    ]
    (await api.patch(f"/v1/contracts/{cid}", {"fields": fields})).spring(400)
    assert await _fields_of(api, cid) == before
    (await api.patch(f"/v1/contracts/{cid}", {})).spring(400)


async def test_null_or_empty_value_clears_an_answer(api: Api, server: SandboxServer) -> None:
    """A null or empty value removes the answer (and those nested below an option)."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    fields = [
        {"name": "contract_rentFrequency", "value": None},
        {"name": "contract_pets", "value": ""},
    ]
    reply = await api.patch(f"/v1/contracts/{cid}", {"fields": fields})
    assert set({f["name"] for f in reply.json()["fields"]}) == {"contract_name"}


async def test_delete_answers_links_and_removes(api: Api, server: SandboxServer) -> None:
    """DELETE answers an object with only _links; the contract is then 404."""
    cid, _ = await _create(api, server)
    reply = await api.delete(f"/v1/contracts/{cid}")
    assert reply.status == 200
    assert reply.json() == {"_links": {"self": {"href": f"{server.url}/v1/contracts/{cid}"}}}
    (await api.get(f"/v1/contracts/{cid}")).spring(404)
    (await api.delete(f"/v1/contracts/{cid}")).spring(404)
    assert server.state.contracts == {}


async def test_source_contract_copies_answers(api: Api, server: SandboxServer) -> None:
    """source_contract starts the new contract from another one's answers."""
    source, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    user = server.users[0]
    fields = [{"name": "contract_name", "value": "Copy"}]
    reply = await api.create_contract(
        user.personal_team_id, user.id, ast_template_id(server), fields, source_contract=source
    )
    values = await _fields_of(api, contract_id(reply))
    assert values["contract_name"] == "Copy"
    assert values["contract_breakClauseStart"] == "6 months"
    wrong = await api.create_contract(
        user.personal_team_id, user.id, nda_template_id(server), source_contract=source
    )
    wrong.spring(400)


def _check_pdf(pdf: bytes) -> None:
    """Check the PDF's structure: header, trailer, and every xref offset points at its object."""
    assert pdf.startswith(b"%PDF-1.4\n")
    assert pdf.rstrip().endswith(b"%%EOF")
    startxref = int(pdf.rsplit(b"startxref\n", 1)[1].split(b"\n", 1)[0])
    assert pdf[startxref:].startswith(b"xref\n")
    lines = pdf[startxref:].split(b"\n")
    count = int(lines[1].split()[1])
    for number in range(1, count):
        offset = int(lines[2 + number][:10])
        assert pdf[offset:].startswith(b"%d 0 obj" % number)
    for match in re.finditer(rb"/Length (\d+) >>\nstream\n", pdf):
        end = match.end() + int(match.group(1))
        assert pdf[end:].startswith(b"\nendstream")


async def test_pdf_is_a_small_valid_pdf(api: Api, server: SandboxServer) -> None:
    """GET /v1/contracts/{id}/pdf returns application/pdf naming the contract and its fields."""
    cid, _ = await _create(api, server, MONTHLY_WITH_BREAK)
    reply = await api.get(f"/v1/contracts/{cid}/pdf")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/pdf"
    _check_pdf(reply.body)
    assert b"Flat 3, 1 High Street" in reply.body
    assert b"contract_breakClauseStart: 6 months" in reply.body


async def test_html_names_the_contract(api: Api, server: SandboxServer) -> None:
    """GET /v1/contracts/{id}/html returns text/html with the escaped name and fields."""
    fields = [{"name": "contract_name", "value": "<Flat & Co>"}]
    cid, _ = await _create(api, server, fields)
    reply = await api.get(f"/v1/contracts/{cid}/html")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/html")
    text = reply.body.decode()
    assert "<h1>&lt;Flat &amp; Co&gt;</h1>" in text
    (await api.get("/v1/contracts/5/html")).spring(404)
