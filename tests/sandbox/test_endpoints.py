"""The shapes of the users, teams, contract-type, template and term endpoints (§5, §7, §8)."""

from __future__ import annotations

import re
from typing import Any

from contractsdk.sandbox import SandboxServer

from ._helpers import Api, ast_template_id, shared_team

_TEAM_CREATED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\+0000")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


def _self_href(obj: dict[str, Any]) -> str:
    links = obj["links"]
    assert isinstance(links, list)
    assert links[0]["rel"] == "self"
    return str(links[0]["href"])


async def test_get_user_shape(api: Api, server: SandboxServer) -> None:
    """GET /v1/users/{id} returns the user's wire keys with an absolute HAL self link."""
    user = server.users[0]
    reply = await api.get(f"/v1/users/{user.id}")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    data = reply.json()
    assert data["id"] == user.id
    assert data["email"] == user.email
    assert data["first_name"] == user.first_name
    assert data["last_name"] == user.last_name
    assert data["full_name"] == user.full_name
    assert _ISO.fullmatch(data["created"])
    assert data["_links"] == {"self": {"href": f"{server.url}/v1/users/{user.id}"}}


async def test_avatar_only_when_set(api: Api, server: SandboxServer) -> None:
    """A user without a picture has no avatar key; one with a picture has a URL."""
    with_avatar = [u for u in server.users if u.avatar]
    without = [u for u in server.users if not u.avatar]
    assert with_avatar
    assert without
    assert "avatar" in (await api.get(f"/v1/users/{with_avatar[0].id}")).json()
    assert "avatar" not in (await api.get(f"/v1/users/{without[0].id}")).json()


async def test_list_users_is_a_plain_array(api: Api, server: SandboxServer) -> None:
    """GET /v1/users returns a bare JSON array of every user."""
    data = (await api.get("/v1/users")).json()
    assert isinstance(data, list)
    assert [u["id"] for u in data] == [u.id for u in server.users]


async def test_unknown_user_is_404_with_the_documented_message(api: Api) -> None:
    """An unknown user id gives 404 "User with id X not found" in a Spring body."""
    reply = await api.get("/v1/users/42")
    assert reply.spring(404) == "User with id 42 not found"
    assert reply.json()["path"] == "/v1/users/42"


async def test_create_user_answers_the_documented_body_and_a_personal_team(
    api: Api, server: SandboxServer
) -> None:
    """POST /v1/users answers 201 as the docs show, {_links, user_id, email}, plus Location."""
    body = {"email": "new.person@example.com", "first_name": "New", "last_name": "Person"}
    reply = await api.post("/v1/users", body)
    assert reply.status == 201
    data = reply.json()
    user_id = data["user_id"]
    href = f"{server.url}/v1/users/{user_id}"
    assert data == {"_links": {"self": {"href": href}}, "user_id": user_id, "email": body["email"]}
    assert reply.headers["Location"] == href
    teams = (await api.get(f"/v1/users/{user_id}/teams")).json()
    assert [t["name"] for t in teams] == ["Personal Team"]
    assert (await api.get(href)).json()["email"] == "new.person@example.com"


async def test_create_user_rejects_duplicates_and_bad_emails(
    api: Api, server: SandboxServer
) -> None:
    """A taken email gives 409, a malformed one or a missing name 400."""
    taken = {"email": server.users[0].email, "first_name": "A", "last_name": "B"}
    (await api.post("/v1/users", taken)).spring(409)
    bad = {"email": "not-an-email", "first_name": "A", "last_name": "B"}
    assert "email" in (await api.post("/v1/users", bad)).spring(400)
    (await api.post("/v1/users", {"email": "a@example.com", "first_name": "A"})).spring(400)


async def test_create_team_is_201_with_hal_links(api: Api, server: SandboxServer) -> None:
    """POST /v1/users/{id}/teams answers 201 with {id, name, created, _links}."""
    user = server.users[0]
    reply = await api.post(f"/v1/users/{user.id}/teams", {"name": "New team to Sign Contract"})
    assert reply.status == 201
    team = reply.json()
    assert list(team) == ["id", "name", "created", "_links"]
    assert team["name"] == "New team to Sign Contract"
    assert _TEAM_CREATED.fullmatch(team["created"])
    assert team["_links"] == {"self": {"href": f"{server.url}/v1/teams/{team['id']}"}}
    listed = (await api.get(f"/v1/users/{user.id}/teams")).json()
    assert team["id"] in [t["id"] for t in listed]


async def test_user_teams_are_owned_and_member_teams(api: Api, server: SandboxServer) -> None:
    """GET /v1/users/{id}/teams is a plain array of the teams the user owns or belongs to."""
    for user in server.users:
        data = (await api.get(f"/v1/users/{user.id}/teams")).json()
        assert isinstance(data, list)
        assert [t["id"] for t in data] == sorted(user.team_ids)


async def test_team_name_is_required_and_at_most_255(api: Api, server: SandboxServer) -> None:
    """A missing, blank or 256-character team name gives 400; 255 characters is fine."""
    path = f"/v1/users/{server.users[0].id}/teams"
    assert "name" in (await api.post(path, {})).spring(400)
    (await api.post(path, {"name": "   "})).spring(400)
    assert "255" in (await api.post(path, {"name": "x" * 256})).spring(400)
    assert (await api.post(path, {"name": "x" * 255})).status == 201


async def test_create_team_for_unknown_user_is_404(api: Api) -> None:
    """Creating a team for an unknown user gives 404 naming the user."""
    reply = await api.post("/v1/users/999999/teams", {"name": "Team"})
    assert reply.spring(404) == "User with id 999999 not found"


async def test_get_and_rename_a_team(api: Api, server: SandboxServer) -> None:
    """GET /v1/teams/{id} returns the team and PATCH renames it."""
    team_id = server.users[1].personal_team_id
    assert (await api.get(f"/v1/teams/{team_id}")).json()["name"] == "Personal Team"
    reply = await api.patch(f"/v1/teams/{team_id}", {"name": "Grace's team"})
    assert reply.status == 200
    assert reply.json()["name"] == "Grace's team"
    assert (await api.get(f"/v1/teams/{team_id}")).json()["name"] == "Grace's team"
    (await api.patch(f"/v1/teams/{team_id}", {"name": ""})).spring(400)
    (await api.get("/v1/teams/1")).spring(404)


async def test_contract_types_use_links_arrays(api: Api, server: SandboxServer) -> None:
    """GET /v1/contract-types lists public types as {id, name, about_html, about_url, links}."""
    data = (await api.get("/v1/contract-types")).json()
    public = [t for t in server.seed.catalog.types if t.team_ids is None]
    assert [t["id"] for t in data] == [t.id for t in public]
    first = data[0]
    assert list(first) == ["id", "name", "about_html", "about_url", "links"]
    assert _self_href(first) == f"{server.url}/v1/contract-types/{first['id']}"
    one = await api.get(f"/v1/contract-types/{first['id']}")
    assert one.json() == first


async def test_team_contract_types_include_private_ones_only_for_their_team(
    api: Api, server: SandboxServer
) -> None:
    """A private type is listed for its team, hidden elsewhere and from the public list."""
    private = next(t for t in server.seed.catalog.types if t.team_ids is not None)
    acme = shared_team(server, "Acme Legal")
    other = shared_team(server, "Globex Lettings")
    in_acme = (await api.get(f"/v1/teams/{acme}/contract-types")).json()
    in_other = (await api.get(f"/v1/teams/{other}/contract-types")).json()
    assert private.id in [t["id"] for t in in_acme]
    assert private.id not in [t["id"] for t in in_other]
    one = (await api.get(f"/v1/teams/{acme}/contract-types/{private.id}")).json()
    assert _self_href(one) == f"{server.url}/v1/teams/{acme}/contract-types/{private.id}"
    (await api.get(f"/v1/teams/{other}/contract-types/{private.id}")).spring(404)
    (await api.get(f"/v1/contract-types/{private.id}")).spring(404)


async def test_templates_are_newest_first(api: Api, server: SandboxServer) -> None:
    """GET …/templates returns [{id, version, links}] with the latest version at index 0."""
    team = server.users[0].personal_team_id
    for ctype in server.seed.catalog.types:
        if ctype.team_ids is not None:
            continue
        path = f"/v1/teams/{team}/contract-types/{ctype.id}/templates"
        data = (await api.get(path)).json()
        assert [t["id"] for t in data] == list(ctype.template_ids)
        versions = [int(t["version"]) for t in data]
        assert versions == sorted(versions, reverse=True)
        assert list(data[0]) == ["id", "version", "links"]
        assert _self_href(data[0]) == f"{server.url}{path}/{data[0]['id']}"
        one = await api.get(f"{path}/{data[-1]['id']}")
        assert one.json() == data[-1]


async def test_template_of_another_type_is_404(api: Api, server: SandboxServer) -> None:
    """Asking a type for a template of another type gives 404."""
    team = server.users[0].personal_team_id
    ast, nda = server.seed.catalog.types[:2]
    reply = await api.get(
        f"/v1/teams/{team}/contract-types/{ast.id}/templates/{nda.template_ids[0]}"
    )
    reply.spring(404)


def _check_term(term: dict[str, Any], base: str) -> int:
    """Check one term's keys recursively; return the depth of term levels below it."""
    assert list(term)[:3] == ["id", "label", "name"]
    assert list(term)[-1] == "links"
    assert set(term) <= {"id", "label", "name", "options", "links"}
    assert term["links"] == [{"rel": "self", "href": f"{base}/v1/terms/{term['id']}"}]
    depth = 0
    if "options" in term:
        assert term["options"], "options is omitted, never empty"
        for option in term["options"]:
            assert set(option) <= {"value", "nested_fields"}  # no id, no label
            if "nested_fields" in option:
                assert option["nested_fields"], "nested_fields is omitted when empty"
                depth = max(depth, *(_check_term(t, base) for t in option["nested_fields"]))
    return depth + 1


async def test_terms_are_shaped_like_the_real_capture(api: Api, server: SandboxServer) -> None:
    """GET /v1/templates/{id}/terms: id, label, name, options [{value, nested_fields}], links."""
    data = (await api.get(f"/v1/templates/{ast_template_id(server, newest=False)}/terms")).json()
    assert isinstance(data, list)
    assert len(data) >= 40
    depths = [_check_term(term, server.url) for term in data]
    assert max(depths) == 3
    name = data[0]
    assert name["name"] == "contract_name"
    assert "options" not in name


async def test_get_one_nested_term(api: Api, server: SandboxServer) -> None:
    """GET /v1/terms/{id} returns a nested term with its own subtree and links."""
    template = server.seed.catalog.templates[ast_template_id(server)]
    term = template.by_name["contract_breakClause"]
    data = (await api.get(f"/v1/terms/{term.id}")).json()
    assert data["name"] == "contract_breakClause"
    assert _check_term(data, server.url) == 2
    (await api.get("/v1/terms/1")).spring(404)
    (await api.get("/v1/templates/99999/terms")).spring(404)
