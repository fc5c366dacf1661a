"""Fault injection: rule parsing and matching, seeded decisions, and each fault end to end."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from contractsdk.sandbox import FaultRule, SandboxServer
from contractsdk.sandbox._faults import FaultInjector, Outcome

from ._helpers import Api, ast_template_id

CREATE = "POST /v1/teams/*/contracts"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"status_500": 1.5}, "probability"),
        ({"reset": 0.6, "lost": 0.6}, "sum to more than 1"),
        ({"route": "FETCH /v1/x"}, "unknown method"),
        ({"route": "v1/users"}, "must start with '/'"),
        ({"route": "GET /v1 extra"}, "route must be"),
        ({"latency": (0.5, 0.1)}, "latency"),
    ],
)
def test_invalid_rules_are_refused(kwargs: dict[str, object], match: str) -> None:
    """Bad probabilities, routes and latency ranges raise ValueError."""
    with pytest.raises(ValueError, match=match):
        FaultRule(**kwargs)  # type: ignore[arg-type]


def test_route_patterns() -> None:
    """'*' matches one segment, '**' any run, a bare '*' every /v1 path; methods must agree."""
    create = FaultRule(CREATE)
    assert create.matches("POST", "/v1/teams/12/contracts")
    assert not create.matches("GET", "/v1/teams/12/contracts")
    assert not create.matches("POST", "/v1/teams/12/contracts/3")
    anything = FaultRule("*")
    assert anything.matches("DELETE", "/v1/contracts/1")
    assert not anything.matches("POST", "/oauth/token")
    assert FaultRule("POST /oauth/token").matches("POST", "/oauth/token")
    deep = FaultRule("GET /v1/teams/**")
    assert deep.matches("GET", "/v1/teams/1/contract-types/2/templates")
    assert FaultRule("/v1/users").matches("PUT", "/v1/users")


def test_rules_round_trip_through_json() -> None:
    """to_json / from_json keep a rule, and unknown keys are refused."""
    rule = FaultRule(CREATE, status_503=0.25, lost=0.1, latency=(0.0, 0.01))
    assert FaultRule.from_json(rule.to_json()) == rule
    with pytest.raises(ValueError, match="unknown"):
        FaultRule.from_json({"route": "*", "status_418": 1.0})
    with pytest.raises(ValueError, match="latency"):
        FaultRule.from_json({"latency": [1, 2, 3]})


def test_decisions_are_seeded_and_first_match_wins() -> None:
    """The same seed gives the same outcomes; an earlier rule shadows a later one."""
    rules = [FaultRule(CREATE, status_500=0.3, reset=0.3), FaultRule("*", status_503=1.0)]

    def outcomes(seed: int) -> list[Outcome]:
        injector = FaultInjector(rules, seed)
        return [injector.decide("POST", "/v1/teams/1/contracts").outcome for _ in range(200)]

    first = outcomes(3)
    assert first == outcomes(3)
    assert first != outcomes(4)
    assert set(first) == {Outcome.NONE, Outcome.STATUS_500, Outcome.RESET}
    counts = {o: first.count(o) for o in set(first)}
    assert 30 <= counts[Outcome.STATUS_500] <= 90  # p=0.3 of 200, very loose
    other = FaultInjector(rules, 0).decide("GET", "/v1/users")
    assert other.outcome is Outcome.STATUS_503


def test_latency_range_is_drawn_within_bounds() -> None:
    """A (low, high) latency gives delays within the range."""
    injector = FaultInjector([FaultRule("*", latency=(0.01, 0.02))], 0)
    delays = [injector.decide("GET", "/v1/users").delay for _ in range(50)]
    assert all(0.01 <= d <= 0.02 for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_injected_status(status: int, session: aiohttp.ClientSession) -> None:
    """status_5xx=1 answers that status with a Spring body and does not process the request."""
    rule = FaultRule(CREATE, **{f"status_{status}": 1.0})
    async with SandboxServer(read_rate=None, write_rate=None, faults=[rule]) as server:
        api = Api(server, session)
        user = server.users[0]
        reply = await api.create_contract(user.personal_team_id, user.id, ast_template_id(server))
        assert "Injected fault" in reply.spring(status)
        assert server.state.contracts == {}
        assert (await api.get("/v1/users")).status == 200  # other routes unaffected
        assert server.counters()["faults"] == {f"status_{status}": 1}


async def test_faults_can_be_set_at_run_time(api: Api, server: SandboxServer) -> None:
    """set_faults switches faults on and off while the server runs."""
    server.set_faults([FaultRule("GET /v1/users", status_503=1.0)])
    (await api.get("/v1/users")).spring(503)
    server.set_faults([])
    assert (await api.get("/v1/users")).status == 200


async def test_latency_delays_the_answer(api: Api, server: SandboxServer) -> None:
    """A latency holds the answer back: a request sent after it, on another route, wins.

    The latency is long against a loopback request, so that a loaded machine cannot make
    the later one slower than it (0.1 s was, once, in CI).
    """
    server.set_faults([FaultRule("GET /v1/users", latency=2.0)])
    slow = asyncio.ensure_future(api.get("/v1/users"))
    for _ in range(1000):  # bounded: until the server holds the slow request
        if server.counters()["faults"] == {"latency": 1}:
            break
        await asyncio.sleep(0.001)
    fast = await api.get(f"/v1/users/{server.users[0].id}")
    assert fast.status == 200
    assert not slow.done()  # still held while the later request came and went
    assert (await slow).status == 200
    assert server.counters()["faults"] == {"latency": 1}


async def test_reset_drops_the_connection_before_processing(
    api: Api, server: SandboxServer
) -> None:
    """reset=1: the client sees a disconnect and nothing is created."""
    server.set_faults([FaultRule(CREATE, reset=1.0)])
    user = server.users[0]
    with pytest.raises(aiohttp.ClientConnectionError):
        await api.create_contract(user.personal_team_id, user.id, ast_template_id(server))
    assert server.state.contracts == {}
    counters = server.counters()
    assert counters["faults"] == {"reset": 1}
    assert counters["contracts_created"] == 0


async def test_lost_processes_then_drops_the_connection(api: Api, server: SandboxServer) -> None:
    """lost=1: the client sees a disconnect, but the contract was created and committed."""
    server.set_faults([FaultRule(CREATE, lost=1.0)])
    user = server.users[0]
    with pytest.raises(aiohttp.ClientConnectionError):
        await api.create_contract(user.personal_team_id, user.id, ast_template_id(server))
    assert len(server.state.team_contracts[user.personal_team_id]) == 1
    assert server.counters()["faults"] == {"lost": 1}


async def test_lost_answer_is_recovered_with_an_idempotency_key(
    api: Api, server: SandboxServer
) -> None:
    """After a lost answer, retrying with the same Idempotency-Key replays it: one contract."""
    user = server.users[0]
    body = {"created_by_user_id": user.id, "template_id": ast_template_id(server)}
    path = f"/v1/teams/{user.personal_team_id}/contracts"
    headers = {"Idempotency-Key": "retry-me"}
    server.set_faults([FaultRule(CREATE, lost=1.0)])
    with pytest.raises(aiohttp.ClientConnectionError):
        await api.post(path, body, headers=headers)
    server.set_faults([])
    reply = await api.post(path, body, headers=headers)
    assert reply.status == 201
    assert reply.headers["Idempotent-Replayed"] == "true"
    created = server.state.team_contracts[user.personal_team_id]
    assert list(created) == [int(reply.headers["Location"].rsplit("/", 1)[1])]


async def test_token_endpoint_is_faulted_only_when_named(api: Api, server: SandboxServer) -> None:
    """'*' leaves /oauth/token alone; a rule naming it applies."""
    body = {
        "grant_type": "client_credentials",
        "client_id": server.client_id,
        "client_secret": server.client_secret,
    }
    server.set_faults([FaultRule("*", status_500=1.0)])
    assert (await api.post("/oauth/token", body, auth=False)).status == 200
    server.set_faults([FaultRule("POST /oauth/token", status_503=1.0)])
    assert (await api.post("/oauth/token", body, auth=False)).status == 503
