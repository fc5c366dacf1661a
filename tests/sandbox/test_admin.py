"""The /__sandbox/ admin API and its Python twins on SandboxServer."""

from __future__ import annotations

from contractsdk.sandbox import SandboxServer

from ._helpers import Api, ast_template_id, shared_team


def _outsider(server: SandboxServer, team_id: int) -> int:
    team = next(t for t in server.teams if t.id == team_id)
    return next(
        u.id for u in server.users if u.id not in team.owner_ids and u.id not in team.member_ids
    )


async def test_admin_needs_the_admin_token(api: Api, server: SandboxServer) -> None:
    """Without the admin token (an API key is not enough) the admin API answers 401."""
    (await api.post("/__sandbox/reset")).spring(401)
    (await api.get("/__sandbox/counters", auth=False)).spring(401)
    assert (await api.admin("GET", "/__sandbox/counters")).status == 200


async def test_reset_goes_back_to_the_seed(api: Api, server: SandboxServer) -> None:
    """Reset deletes contracts and new teams, restores names and zeroes the counters."""
    user = server.users[0]
    await api.create_contract(user.personal_team_id, user.id, ast_template_id(server))
    await api.post(f"/v1/users/{user.id}/teams", {"name": "Temporary"})
    await api.patch(f"/v1/teams/{user.personal_team_id}", {"name": "Renamed"})
    reply = await api.admin("POST", "/__sandbox/reset")
    assert reply.json() == {"reset": True, "seed": 0}
    assert server.state.contracts == {}
    teams = (await api.get(f"/v1/users/{user.id}/teams")).json()
    assert [t["id"] for t in teams] == list(user.team_ids)
    assert teams[0]["name"] == "Personal Team"
    counters = server.counters()
    assert counters["contracts_created"] == 0
    assert counters["requests"] == 1  # the GET after the reset


async def test_adding_a_member_lifts_the_403(api: Api, server: SandboxServer) -> None:
    """An outsider gets 403, then 201 once the admin API makes them a member."""
    acme = shared_team(server, "Acme Legal")
    outsider = _outsider(server, acme)
    template = ast_template_id(server)
    (await api.create_contract(acme, outsider, template)).spring(403)
    reply = await api.admin(
        "POST", f"/__sandbox/teams/{acme}/members", {"user_id": outsider, "role": "member"}
    )
    assert reply.status == 200
    assert outsider in reply.json()["member_ids"]
    assert (await api.create_contract(acme, outsider, template)).status == 201
    teams = (await api.get(f"/v1/users/{outsider}/teams")).json()
    assert acme in [t["id"] for t in teams]


async def test_member_roles_and_removal(api: Api, server: SandboxServer) -> None:
    """Owners can be added, members removed; the last owner cannot be removed (409)."""
    acme = shared_team(server, "Acme Legal")
    team = next(t for t in server.teams if t.id == acme)
    outsider = _outsider(server, acme)
    reply = await api.admin(
        "POST", f"/__sandbox/teams/{acme}/members", {"user_id": outsider, "role": "owner"}
    )
    assert outsider in reply.json()["owner_ids"]
    reply = await api.admin("DELETE", f"/__sandbox/teams/{acme}/members/{outsider}")
    assert outsider not in reply.json()["owner_ids"] + reply.json()["member_ids"]
    (await api.admin("DELETE", f"/__sandbox/teams/{acme}/members/{team.owner_ids[0]}")).spring(409)


async def test_member_errors(api: Api, server: SandboxServer) -> None:
    """Unknown team or user gives 404; a bad role or a missing user_id 400."""
    acme = shared_team(server, "Acme Legal")
    user = server.users[0].id
    body = {"user_id": user, "role": "member"}
    (await api.admin("POST", "/__sandbox/teams/1/members", body)).spring(404)
    missing = {"user_id": 1, "role": "member"}
    (await api.admin("POST", f"/__sandbox/teams/{acme}/members", missing)).spring(404)
    bad_role = {"user_id": user, "role": "guest"}
    (await api.admin("POST", f"/__sandbox/teams/{acme}/members", bad_role)).spring(400)
    (await api.admin("POST", f"/__sandbox/teams/{acme}/members", {"role": "owner"})).spring(400)


async def test_counters(api: Api, server: SandboxServer) -> None:
    """Counters give requests by status and route, 429s, replays and contracts per team."""
    user = server.users[0]
    team = user.personal_team_id
    template = ast_template_id(server)
    await api.create_contract(team, user.id, template)
    key = {"Idempotency-Key": "count-me"}
    body = {"created_by_user_id": user.id, "template_id": template}
    await api.post(f"/v1/teams/{team}/contracts", body, headers=key)
    await api.post(f"/v1/teams/{team}/contracts", body, headers=key)
    await api.get("/v1/users/1")
    server.set_limits(read_rate=1.0, burst=1.0)
    await api.get("/v1/users")
    await api.get("/v1/users")
    data = (await api.admin("GET", "/__sandbox/counters")).json()
    assert data["requests"] == 6
    assert data["by_status"] == {"200": 1, "201": 3, "404": 1, "429": 1}
    assert data["by_route"]["POST /v1/teams/{teamId}/contracts"] == 3
    assert data["by_route"]["GET /v1/users"] == 2
    assert data["rate_limited"] == 1
    assert data["idempotent_replays"] == 1
    assert data["contracts_created"] == 2
    assert data["contracts_per_team"] == {str(team): 2}
    assert data == server.counters()


async def test_put_and_get_faults(api: Api, server: SandboxServer) -> None:
    """PUT /__sandbox/faults replaces the rules; GET shows them; bad rules give 400."""
    rules = {"rules": [{"route": "GET /v1/users", "status_502": 1.0}], "seed": 5}
    reply = await api.admin("PUT", "/__sandbox/faults", rules)
    assert reply.json()["rules"][0]["status_502"] == 1.0
    (await api.get("/v1/users")).spring(502)
    listed = (await api.admin("GET", "/__sandbox/faults")).json()
    assert listed["rules"][0]["route"] == "GET /v1/users"
    assert (await api.admin("PUT", "/__sandbox/faults", [])).json() == {"rules": []}
    assert (await api.get("/v1/users")).status == 200
    bad = [{"route": "*", "status_500": 2}]
    assert "invalid fault rule" in (await api.admin("PUT", "/__sandbox/faults", bad)).spring(400)
    (await api.admin("PUT", "/__sandbox/faults", {"rulez": []})).spring(400)
    (await api.admin("PUT", "/__sandbox/faults", [1])).spring(400)


async def test_put_and_get_limits(api: Api, server: SandboxServer) -> None:
    """PUT /__sandbox/limits changes only the keys given; bad values give 400."""
    reply = await api.admin("PUT", "/__sandbox/limits", {"read_rate": 1, "burst": 1})
    assert reply.json() == {
        "read_rate": 1,
        "write_rate": None,
        "burst": 1,
        "rate_headers": True,
    }
    await api.get("/v1/users")
    (await api.get("/v1/users")).spring(429)
    await api.admin("PUT", "/__sandbox/limits", {"read_rate": None, "rate_headers": False})
    ok = await api.get("/v1/users")
    assert ok.status == 200
    assert "X-RateLimit-Limit" not in ok.headers
    assert (await api.admin("GET", "/__sandbox/limits")).json()["rate_headers"] is False
    for bad in ({"read_rate": 0}, {"burst": "5"}, {"rate_headers": 1}, {"speed": 3}):
        (await api.admin("PUT", "/__sandbox/limits", bad)).spring(400)


async def test_absurd_limits_are_400_and_change_nothing(api: Api, server: SandboxServer) -> None:
    """Absurd limits and fault numbers are a 400 and leave the settings alone.

    Issue 9: a 400-digit rate raised OverflowError (500); a 5e-324 rate or a 1e308 burst
    was accepted, and then every /v1 request answered 500.
    """
    before = server.limits
    for bad in (
        {"read_rate": 10**400},
        {"burst": -(10**400)},
        {"read_rate": 5e-324},
        {"read_rate": 0.001, "burst": 1e308},
    ):
        (await api.admin("PUT", "/__sandbox/limits", bad)).spring(400)
        assert server.limits == before
        assert (await api.get("/v1/users")).status == 200
    rule = {"route": "*", "status_500": 10**400}
    (await api.admin("PUT", "/__sandbox/faults", [rule])).spring(400)
    (await api.admin("PUT", "/__sandbox/faults", [{"route": "*", "latency": 10**400}])).spring(400)
    assert server.faults == ()


async def test_info_summarises_the_seed(api: Api, server: SandboxServer) -> None:
    """GET /__sandbox/info lists users, teams, contract types with template ids, limits, faults."""
    data = (await api.admin("GET", "/__sandbox/info")).json()
    assert [u["id"] for u in data["users"]] == [u.id for u in server.users]
    assert [t["id"] for t in data["teams"]] == [t.id for t in server.teams]
    assert data["contract_types"][0]["template_ids"] == list(
        server.seed.catalog.types[0].template_ids
    )
    assert data["limits"]["read_rate"] is None
    assert data["faults"] == []


async def test_python_twins(api: Api, server: SandboxServer) -> None:
    """set_member, remove_member, set_limits, limits and reset work in-process."""
    acme = shared_team(server, "Acme Legal")
    outsider = _outsider(server, acme)
    server.set_member(acme, outsider)
    assert (await api.create_contract(acme, outsider, ast_template_id(server))).status == 201
    server.remove_member(acme, outsider)
    (await api.create_contract(acme, outsider, ast_template_id(server))).spring(403)
    limits = server.set_limits(write_rate=3.0)
    assert (limits.read_rate, limits.write_rate) == (None, 3.0)
    assert server.limits == limits
    server.reset()
    assert server.state.contracts == {}
    assert outsider not in server.state.teams[acme].member_ids
