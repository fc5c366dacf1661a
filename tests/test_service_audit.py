"""create_contract_with_parties's unknown outcomes, and create_contract's shared lookups.

Against the emulator over loopback HTTP (the plugin's ``sandbox_server`` and
``sandbox_client``: no rate limits, no retries), and through MockTransport where the
emulator cannot do what a test needs (a lost answer to one party of several, a new
template version).
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Coroutine
from typing import Any

import pytest

from contractsdk import (
    Contract,
    ContractClient,
    ContractSDKError,
    PartiesIncompleteError,
    Party,
    ReadError,
    Request,
    Response,
    Role,
    ServerError,
    Side,
)
from contractsdk.sandbox import FaultRule, SandboxServer
from contractsdk.testing import MockTransport, json_response
from tests._partykit import TENANT_FIELDS, Routes, created
from tests.conftest import API_KEY

TENANCY = "Assured Shorthold Tenancy Agreement"
ADD = "POST /v1/contracts/*/collaborators"
TEAMS = "GET /v1/users/{userId}/teams"
TEMPLATES = "GET /v1/teams/{teamId}/contract-types/{typeId}/templates"
CREATE = "POST /v1/teams/{teamId}/contracts"


def by_route(server: SandboxServer) -> dict[str, int]:
    routes = server.counters()["by_route"]
    assert isinstance(routes, dict)
    return dict(routes)


def sent_since(server: SandboxServer, before: dict[str, int]) -> dict[str, int]:
    """The requests the emulator saw since ``before``, by route."""
    now = by_route(server)
    return {route: n - before.get(route, 0) for route, n in now.items() if n != before.get(route)}


async def tenancy(client: ContractClient, server: SandboxServer) -> tuple[int, int]:
    """(the first user's id, the tenancy contract type's id)."""
    user = server.users[0]
    kinds = await client.contract_types.list(user.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    assert kind.id is not None
    return user.id, kind.id


def flat(client: ContractClient, me: int, kind: int, n: int) -> Coroutine[Any, Any, Contract]:
    """``create_contract`` of "Flat n", without team or template (they are looked up)."""
    return client.create_contract(
        user_id=me, contract_type_id=kind, values={"contract_name": f"Flat {n}"}
    )


def landlord(user_id: int) -> Party:
    return Party(user_id=user_id, roles=Role.PARTY, side=Side.FIRST, values={"Address": "1 Row"})


def tenant(user_id: int) -> Party:
    return Party(
        user_id=user_id,
        roles=Role.PARTY,
        side=Side.SECOND,
        values={"Current address": "2 Road", "Are you a Tenant or Guarantor?": "tenant"},
    )


# -- a party whose add may have been processed ---------------------------------------------


async def test_a_lost_party_add_is_unknown_not_pending(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """A party added but whose answer was lost is ``unknown``, not to be added again."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    party = landlord(me)
    sandbox_server.set_faults([FaultRule(ADD, lost=1.0)])
    with pytest.raises(PartiesIncompleteError) as caught:
        await sandbox_client.create_contract_with_parties(
            user_id=me, contract_type_id=kind, values={"contract_name": "Flat"}, parties=[party]
        )
    sandbox_server.set_faults([])
    error = caught.value
    assert error.__cause__ is not None and getattr(error.__cause__, "outcome_unknown", False)
    assert error.outcome_unknown
    assert error.unknown == (party,) and error.pending == () and error.added == ()
    assert error.index == 0 and error.template_id is not None
    text = str(error)
    assert (
        "Unknown (the request may have been processed; check collaborators.list before "
        f"adding it again): party 0 (user {me})" in text
    )
    assert text.endswith("Not added: none")
    assert "Not added: party 0" not in text
    # It was added: the emulator holds it, once.
    assert error.contract.id is not None
    listed = await sandbox_client.collaborators.list(error.contract.id)
    assert [c.user_id for c in listed] == [me]


async def test_finishing_by_the_list_adds_only_the_missing(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Adding the unknown and pending parties not listed finishes the contract, each once."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    other = sandbox_server.users[2].id
    sandbox_server.set_faults([FaultRule(ADD, lost=1.0)])
    with pytest.raises(PartiesIncompleteError) as caught:
        await sandbox_client.create_contract_with_parties(
            user_id=me,
            contract_type_id=kind,
            values={"contract_name": "Flat"},
            parties=[landlord(me), tenant(other)],
        )
    sandbox_server.set_faults([])
    error = caught.value
    assert error.unknown == (landlord(me),) and error.pending == (tenant(other),)
    assert f"Not added: party 1 (user {other})" in str(error)
    contract_id = error.contract.id
    assert contract_id is not None and error.template_id is not None
    on_contract = {c.user_id for c in await sandbox_client.collaborators.list(contract_id)}
    for party in (*error.unknown, *error.pending):
        if party.user_id not in on_contract:
            await sandbox_client.collaborators.create(
                contract_id,
                user_id=party.user_id,
                inviter_id=party.inviter_id or me,
                roles=party.roles,
                side=party.side,
                values=party.values,
                template_id=error.template_id,
            )
    listed = await sandbox_client.collaborators.list(contract_id)
    assert sorted(c.user_id for c in listed if c.user_id is not None) == sorted([me, other])


async def test_the_error_pickles_with_what_it_says_and_no_key(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Pickled, the error keeps unknown, pending and outcome_unknown; no API key anywhere."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    sandbox_server.set_faults([FaultRule(ADD, lost=1.0)])
    with pytest.raises(PartiesIncompleteError) as caught:
        await sandbox_client.create_contract_with_parties(
            user_id=me,
            contract_type_id=kind,
            values={"contract_name": "Flat"},
            parties=[landlord(me)],
        )
    error = caught.value
    data = pickle.dumps(error)
    copy = pickle.loads(data)
    assert isinstance(copy, PartiesIncompleteError)
    assert copy.unknown == error.unknown and copy.pending == error.pending == ()
    assert copy.outcome_unknown and copy.index == 0 and copy.template_id == error.template_id
    assert copy.contract.id == error.contract.id and str(copy) == str(error)
    key = sandbox_server.api_key
    for shown in (str(error), repr(error), str(copy), repr(copy)):
        assert key not in shown
    assert key.encode() not in data


async def _flow(routes: Routes, add: Any) -> PartiesIncompleteError:
    """Run a three-party flow through MockTransport whose adds ``add`` answers."""
    routes.on("GET", "/v1/templates/149/terms", json_response(200, [{"id": 1, "name": "n"}]))
    routes.on("GET", "/v1/templates/149/fields", json_response(200, TENANT_FIELDS))
    routes.on("GET", "/v1/teams/70/contract-types/3/templates/149", json_response(200, {"id": 149}))
    routes.on("POST", "/v1/teams/70/contracts", created("contracts", 500))
    routes.on("POST", "/v1/contracts/500/collaborators", add)
    parties = [
        Party(user_id=11 + n, roles="party", side="second", values={2121: "tenant"})
        for n in range(3)
    ]
    async with ContractClient(
        rate_limits=None, retries=None, api_key=API_KEY, transport=MockTransport(routes)
    ) as client:
        with pytest.raises(PartiesIncompleteError) as caught:
            await client.create_contract_with_parties(
                user_id=7,
                contract_type_id=3,
                team_id=70,
                template_id=149,
                values={"n": "x"},
                parties=parties,
            )
    return caught.value


@pytest.mark.parametrize("answer", ["lost", "no href"])
async def test_an_unknown_party_between_added_and_pending(answer: str) -> None:
    """The second of three unknown (its answer lost, or a 2xx naming no collaborator)."""
    routes = Routes()
    numbers = iter(range(901, 999))

    def add(request: Request) -> Response:
        number = next(numbers)
        if number == 902:
            if answer == "lost":
                raise ReadError("the connection broke", method="POST", url=request.path)
            return json_response(201, {"rel": "self"})
        return created("collaborators", number)

    error = await _flow(routes, add)
    assert [c.id for c in error.added] == [901] and error.index == 1
    assert [p.user_id for p in error.unknown] == [12]
    assert [p.user_id for p in error.pending] == [13]
    assert error.outcome_unknown and error.template_id == 149
    assert "Unknown (the request may have been processed" in str(error)
    assert "party 1 (user 12)" in str(error) and "Not added: party 2 (user 13)" in str(error)
    assert len(routes.sent("POST")) == 3  # the contract and two adds: the third never sent


async def test_a_refused_party_is_pending_and_the_outcome_known() -> None:
    """A party the service refused (a 4xx) is pending, the failed one first; nothing unknown."""
    routes = Routes()
    numbers = iter(range(901, 999))

    def add(request: Request) -> Response:
        number = next(numbers)
        if number == 902:
            return json_response(400, {"message": "bad party"})
        return created("collaborators", number)

    error = await _flow(routes, add)
    assert error.unknown == () and not error.outcome_unknown
    assert [p.user_id for p in error.pending] == [12, 13]
    assert "Unknown" not in str(error) and "Not added: party 1 (user 12), party 2" in str(error)
    assert "may have been processed" not in str(error)


# -- create_contract's lookups, shared while under way ---------------------------------------


async def test_concurrent_creates_share_the_team_and_template_lookups(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """50 concurrent creates without team or template read each of them once: 53 requests."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    before = by_route(sandbox_server)
    made = await asyncio.gather(*(flat(sandbox_client, me, kind, n) for n in range(50)))
    assert len({contract.id for contract in made}) == 50
    sent = sent_since(sandbox_server, before)
    assert sent[CREATE] == 50
    assert sent[TEAMS] == 1 and sent[TEMPLATES] == 1
    assert sum(sent.values()) == 53  # and the terms, once


async def test_concurrent_flows_with_parties_share_the_lookups_too(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """create_contract_with_parties finds the team and template as create_contract does."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    before = by_route(sandbox_server)
    await asyncio.gather(
        *(
            sandbox_client.create_contract_with_parties(
                user_id=me,
                contract_type_id=kind,
                values={"contract_name": f"Flat {n}"},
                parties=[landlord(me)],
            )
            for n in range(10)
        )
    )
    sent = sent_since(sandbox_server, before)
    assert sent[TEAMS] == 1 and sent[TEMPLATES] == 1 and sent[CREATE] == 10


async def test_lookups_are_not_kept_after_they_end(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """A call after another has ended reads the team and template again (nothing cached)."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    before = by_route(sandbox_server)
    for n in range(2):
        await flat(sandbox_client, me, kind, n)
    sent = sent_since(sandbox_server, before)
    assert sent[TEAMS] == 2 and sent[TEMPLATES] == 2


async def test_a_cancelled_caller_leaves_the_shared_lookup_to_the_others(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Cancelling the caller that started a lookup does not cancel it for those waiting."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    sandbox_server.set_faults([FaultRule("GET /v1/users/*/teams", latency=1.0)])
    before = by_route(sandbox_server)

    def create(n: int) -> asyncio.Task[Any]:
        return asyncio.ensure_future(flat(sandbox_client, me, kind, n))

    first = create(0)
    await asyncio.sleep(0.05)  # the first caller's lookup is under way
    others = [create(n) for n in range(1, 4)]
    await asyncio.sleep(0.05)
    first.cancel()
    made = await asyncio.gather(*others)
    assert first.cancelled()
    assert all(contract.id is not None for contract in made)
    sent = sent_since(sandbox_server, before)
    assert sent[TEAMS] == 1 and sent[TEMPLATES] == 1 and sent[CREATE] == 3


async def test_a_failed_lookup_reaches_every_caller_and_is_not_kept(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """A shared lookup's error is every waiting caller's; the next call reads again."""
    me, kind = await tenancy(sandbox_client, sandbox_server)
    sandbox_server.set_faults(
        [FaultRule("GET /v1/teams/*/contract-types/*/templates", status_500=1.0, latency=0.1)]
    )
    before = by_route(sandbox_server)
    results = await asyncio.gather(
        *(flat(sandbox_client, me, kind, n) for n in range(5)), return_exceptions=True
    )
    assert all(isinstance(result, ServerError) for result in results)
    sent = sent_since(sandbox_server, before)
    assert sent.get(TEMPLATES) == 1 and CREATE not in sent
    sandbox_server.set_faults([])
    made = await sandbox_client.create_contract(
        user_id=me, contract_type_id=kind, values={"contract_name": "Flat"}
    )
    assert made.id is not None
    assert sent_since(sandbox_server, before)[TEMPLATES] == 2


async def test_closing_the_client_ends_the_callers_of_a_shared_lookup() -> None:
    """aclose() during a shared lookup: every caller raises at once, none waits on."""
    faults = [FaultRule("GET /v1/users/*/teams", latency=5.0)]
    async with SandboxServer(port=0, read_rate=None, write_rate=None, faults=faults) as server:
        client = ContractClient(
            api_key=server.api_key, base_url=server.url, rate_limits=None, retries=None
        )
        calls = [
            asyncio.ensure_future(
                client.create_contract(
                    user_id=server.users[0].id, contract_type_id=1, values={"contract_name": "F"}
                )
            )
            for _ in range(3)
        ]
        await asyncio.sleep(0.1)
        await client.aclose()
        results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 2.0)
    assert all(isinstance(result, ContractSDKError) for result in results)


async def test_a_version_published_later_is_the_one_a_later_call_uses() -> None:
    """The newest version is read for each call that does not join one under way."""
    versions = [{"id": 149, "version": "1"}]
    routes = Routes()
    routes.on("GET", "/v1/users/7/teams", json_response(200, [{"id": 70, "name": "Personal Team"}]))
    routes.on(
        "GET",
        "/v1/teams/70/contract-types/3/templates",
        lambda _request: json_response(200, versions),
    )
    for template in (149, 150):
        routes.on(
            "GET", f"/v1/templates/{template}/terms", json_response(200, [{"id": 1, "name": "n"}])
        )
    routes.on("POST", "/v1/teams/70/contracts", created("contracts", 500))
    async with ContractClient(
        rate_limits=None, retries=None, api_key=API_KEY, transport=MockTransport(routes)
    ) as client:
        await client.create_contract(user_id=7, contract_type_id=3, values={"n": "a"})
        versions.insert(0, {"id": 150, "version": "2"})  # published
        await client.create_contract(user_id=7, contract_type_id=3, values={"n": "b"})
    posted = [r.json()["template_id"] for r in routes.sent("POST")]
    assert posted == [149, 150]


async def test_a_flow_cancelled_while_adding_parties_logs_its_contract(
    sandbox_server: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Cancelled after the contract was made (a handler whose client went away): logged.

    No error can reach the caller, who got a bare CancelledError and never learnt that
    the contract exists, without its parties.
    """
    adding = asyncio.Event()

    def on_request(request: Request) -> None:
        if request.path.endswith("/collaborators"):
            adding.set()

    sandbox_server.set_faults([FaultRule(ADD, latency=30.0)])  # the add stays under way
    async with ContractClient(
        api_key=sandbox_server.api_key,
        base_url=sandbox_server.url,
        event_hooks={"request": [on_request]},
    ) as client:
        me, kind = await tenancy(client, sandbox_server)
        flow = asyncio.create_task(
            client.create_contract_with_parties(
                user_id=me,
                contract_type_id=kind,
                values={"contract_name": "Gone"},
                parties=[landlord(me)],
            )
        )
        await asyncio.wait_for(adding.wait(), 10)
        with caplog.at_level("WARNING", logger="contractsdk"):
            flow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await flow
        sandbox_server.set_faults([])
        team = sandbox_server.users[0].personal_team_id
        made = [c for c in await client.contracts.list(team) if c.name == "Gone"]
    assert len(made) == 1 and made[0].id is not None
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == [
        f"contract {made[0].id} was created, but the call was cancelled while adding party 0 "
        f"(user {me}), which may have been added; 0 of 1 parties were added before: finish "
        "from collaborators.list, or delete the contract"
    ]


async def test_a_copy_is_returned_with_the_values_it_took_from_its_source(
    sandbox_server: SandboxServer, sandbox_client: ContractClient, caplog: pytest.LogCaptureFixture
) -> None:
    """``source_contract``: the returned contract holds the source's values too.

    It held only the values sent, while the service stored the source's with them.
    """
    me, kind = await tenancy(sandbox_client, sandbox_server)
    team = sandbox_server.users[0].personal_team_id
    template = (await sandbox_client.templates.latest(team, kind)).id
    assert template is not None
    source = await sandbox_client.contracts.create(
        team,
        template_id=template,
        created_by=me,
        values={"contract_name": "Source", "contract_rentFrequency": "month"},
    )
    copy = await sandbox_client.contracts.create(
        team,
        template_id=template,
        created_by=me,
        values={"contract_name": "Copy"},
        source_contract=source.id,
    )
    assert copy.values == (await sandbox_client.contracts.get(copy.id or 0)).values
    assert copy.values["contract_name"] == "Copy"
    assert copy.values["contract_rentFrequency"] == "month"

    # Read back failing: the contract made is returned all the same, and the log says so.
    sandbox_server.set_faults([FaultRule("GET /v1/contracts/*", status_503=1.0)])
    with caplog.at_level("WARNING", logger="contractsdk"):
        second = await sandbox_client.contracts.create(
            team,
            template_id=template,
            created_by=me,
            values={"contract_name": "Copy 2"},
            source_contract=source.id,
        )
    sandbox_server.set_faults([])
    assert second.id is not None and second.values == {"contract_name": "Copy 2"}
    assert f"contract {second.id} was created as a copy of {source.id}" in caplog.text
