"""Rate limits and faults of the emulator, met by the SDK's limiter and retries."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contractsdk import (
    ContractClient,
    RateLimitError,
    RateLimits,
    ReadError,
    ReadTimeoutError,
    Retries,
    RetryEvent,
    ServerError,
)
from contractsdk.sandbox import FaultRule, SandboxServer

pytestmark = pytest.mark.e2e

FAST = Retries(attempts=3, wait_initial=0.01, wait_max=0.05)
#: As FAST, trusting the service (the emulator) to honour Idempotency-Key.
TRUSTING = Retries(attempts=3, wait_initial=0.01, wait_max=0.05, trust_idempotency_keys=True)
CREATE = "POST /v1/teams/*/contracts"


def client_for(server: SandboxServer, **options: Any) -> ContractClient:
    options.setdefault("rate_limits", None)
    return ContractClient(api_key=server.api_key, base_url=server.url, **options)


async def nda_target(client: ContractClient, server: SandboxServer) -> tuple[int, int, int]:
    """Return (team id, template id, user id) for creating contracts."""
    user = server.users[0]
    kinds = await client.contract_types.list(user.personal_team_id)
    kind = next(k for k in kinds if k.name == "Non-Disclosure Agreement")
    template = await client.templates.latest(user.personal_team_id, kind.id)
    await client.terms.list(template.id)  # cached before any fault is switched on
    assert template.id is not None
    return user.personal_team_id, template.id, user.id


def contracts_created(server: SandboxServer) -> int:
    created = server.counters()["contracts_created"]
    assert isinstance(created, int)
    return created


@pytest.mark.parametrize(
    ("sandbox_options", "retry_after"),
    [
        ({"write_rate": 1.0, "burst": 1, "rate_headers": True}, True),
        ({"write_rate": 1.0, "burst": 1, "rate_headers": False}, False),
    ],
)
async def test_429_with_and_without_headers(
    sandbox_server: SandboxServer, retry_after: bool
) -> None:
    """Past the write limit a 429 raises RateLimitError, with retry_after only from headers."""
    async with client_for(sandbox_server, retries=None) as client:
        user = sandbox_server.users[0].id
        await client.teams.create(user, name="first")
        with pytest.raises(RateLimitError) as caught:
            await client.teams.create(user, name="second")
    error = caught.value
    assert error.status_code == 429
    assert (error.retry_after is not None) is retry_after
    if retry_after:
        assert error.headers.get("X-RateLimit-Limit") == "1"


@pytest.mark.parametrize(
    "sandbox_options",
    [{"write_rate": 12.0, "burst": 1, "rate_headers": False, "read_rate": None}],
)
async def test_unknown_limit_is_learnt_without_failures(sandbox_server: SandboxServer) -> None:
    """With no limit configured and no headers, 4 concurrent creates all succeed, once each.

    The client's slow start begins at 20/s, above the server's 12/s with no burst, so 429s
    are met at once (the second create comes 50 ms after the first, 33 ms too soon), learnt
    from and retried away.
    """
    count = 4
    async with client_for(sandbox_server, rate_limits=RateLimits(), retries=FAST) as client:
        user = sandbox_server.users[0].id
        teams = await asyncio.gather(
            *(client.teams.create(user, name=f"t{n}") for n in range(count))
        )
        listed = await client.teams.list(user)
        stats = client.stats
    assert len({team.id for team in teams}) == count
    # Each create happened exactly once, whatever was retried.
    names = sorted(team.name or "" for team in listed if (team.name or "").startswith("t"))
    assert names == sorted(f"t{n}" for n in range(count))
    refused = sandbox_server.counters()["rate_limited"]
    assert isinstance(refused, int) and refused > 0
    assert stats.retries == refused  # every 429 was retried away, none reached the caller


@pytest.mark.parametrize(
    "sandbox_options",
    [{"write_rate": 40.0, "burst": 1, "rate_headers": False, "read_rate": None}],
)
async def test_processes_crowding_one_key_lose_no_call(sandbox_server: SandboxServer) -> None:
    """Eight clients each told the whole limit, without shared state: every create succeeds.

    Together they send eight times what the server admits, so calls meet 429s, some three
    or four in a row (three attempts would have failed them) while each limiter slows
    down: the attempts through 429s (``rate_limited_attempts``) carry them all, their
    pauses drawn apart so they are not refused together again, and each team is made once.
    """
    clients, per_client = 8, 3
    retries = Retries(attempts=3, wait_initial=0.01, wait_max=0.05)
    limits = RateLimits(write=40.0, burst=1)
    names = [f"c{c}-{n}" for c in range(clients) for n in range(per_client)]
    user = sandbox_server.users[0].id
    opened = [
        client_for(sandbox_server, rate_limits=limits, retries=retries) for _ in range(clients)
    ]
    try:
        teams = await asyncio.gather(
            *(
                opened[c].teams.create(user, name=f"c{c}-{n}")
                for c in range(clients)
                for n in range(per_client)
            )
        )
        async with client_for(sandbox_server) as reader:
            listed = await reader.teams.list(user)
    finally:
        await asyncio.gather(*(client.aclose() for client in opened))
    assert sorted(team.name or "" for team in teams) == sorted(names)
    made = sorted(team.name or "" for team in listed if (team.name or "").startswith("c"))
    assert made == sorted(names)  # each once, whatever was retried
    refused = sandbox_server.counters()["rate_limited"]
    assert isinstance(refused, int) and refused > 0


@pytest.mark.parametrize("sandbox_options", [{"write_rate": 60.0, "burst": 7, "read_rate": None}])
async def test_configured_limit_paces_without_429(sandbox_server: SandboxServer) -> None:
    """With the server's write limit configured, 12 concurrent creates meet no 429.

    The server holds a burst of 7 so that a request delayed on a loaded machine (by up to
    six intervals, 100 ms) does not turn the next one, sent on time, into a 429; unpaced,
    5 of the 12 would be refused.
    """
    async with client_for(
        sandbox_server, rate_limits=RateLimits(write=60.0, burst=1), retries=None
    ) as client:
        user = sandbox_server.users[0].id
        await asyncio.gather(*(client.teams.create(user, name=f"p{n}") for n in range(12)))
        assert client.stats.throttled == 0
        assert client.rate_limits is not None
        assert client.rate_limits.write.granted == 12
    assert sandbox_server.counters()["rate_limited"] == 0


@pytest.mark.parametrize(
    ("status", "kind"), [(500, "status_500"), (502, "status_502"), (503, "status_503")]
)
async def test_server_errors(sandbox_server: SandboxServer, status: int, kind: str) -> None:
    """A 5xx raises ServerError without retries, and is retried away with them."""
    user = sandbox_server.users[0].id
    sandbox_server.set_faults([FaultRule(route="GET /v1/users/*", **{kind: 1.0})])
    async with client_for(sandbox_server, retries=None) as client:
        with pytest.raises(ServerError) as caught:
            await client.users.get(user)
    assert caught.value.status_code == status

    retries: list[RetryEvent] = []

    def heal(event: RetryEvent) -> None:
        retries.append(event)
        sandbox_server.set_faults([])

    async with client_for(sandbox_server, retries=FAST, event_hooks={"retry": [heal]}) as client:
        sandbox_server.set_faults([FaultRule(route="GET /v1/users/*", **{kind: 1.0})])
        assert (await client.users.get(user)).id == user
    assert len(retries) == 1 and retries[0].attempt == 1


async def test_reset_before_processing(sandbox_server: SandboxServer) -> None:
    """A reset connection is a ReadError; retried under a trusted key, one contract results."""
    async with client_for(sandbox_server, retries=None) as client:
        team, template, user = await nda_target(client, sandbox_server)
        sandbox_server.set_faults([FaultRule(route=CREATE, reset=1.0)])
        with pytest.raises(ReadError) as caught:
            await client.contracts.create(team, template_id=template, created_by=user, values={})
    assert caught.value.outcome_unknown  # the SDK cannot know it was not processed
    assert contracts_created(sandbox_server) == 0

    async with client_for(
        sandbox_server,
        retries=TRUSTING,
        event_hooks={"retry": [lambda e: sandbox_server.set_faults([])]},
    ) as client:
        sandbox_server.set_faults([FaultRule(route=CREATE, reset=1.0)])
        contract = await client.contracts.create(
            team, template_id=template, created_by=user, values={}
        )
    assert contract.id is not None
    assert contracts_created(sandbox_server) == 1


async def test_lost_response_is_not_duplicated(sandbox_server: SandboxServer) -> None:
    """A processed request whose answer is lost is not sent again by default.

    The service does not document Idempotency-Key; one that ignores it would make a
    replayed create twice. So the client raises, the outcome unknown, after one attempt,
    though its policy allows three.
    """
    async with client_for(sandbox_server, retries=FAST) as client:
        team, template, user = await nda_target(client, sandbox_server)
        sandbox_server.set_faults([FaultRule(route=CREATE, lost=1.0)])
        with pytest.raises(ReadError, match="may have been processed") as caught:
            await client.contracts.create(team, template_id=template, created_by=user, values={})
        assert caught.value.outcome_unknown
        assert caught.value.attempts == 1
        sandbox_server.set_faults([])
        listed = await client.contracts.list(team)
    assert contracts_created(sandbox_server) == 1  # it was processed, once
    assert len(listed) == 1  # and the caller can find it
    assert sandbox_server.counters()["idempotent_replays"] == 0


async def test_lost_response_replayed_under_a_trusted_key(sandbox_server: SandboxServer) -> None:
    """With the key trusted, a lost answer is retried with its key: still one contract."""
    async with client_for(sandbox_server, retries=None) as client:
        team, template, user = await nda_target(client, sandbox_server)
        sandbox_server.set_faults([FaultRule(route=CREATE, lost=1.0)])
        with pytest.raises(ReadError, match="may have been processed"):
            await client.contracts.create(team, template_id=template, created_by=user, values={})
    assert contracts_created(sandbox_server) == 1  # it was processed

    async with client_for(
        sandbox_server,
        retries=TRUSTING,
        event_hooks={"retry": [lambda e: sandbox_server.set_faults([])]},
    ) as client:
        sandbox_server.set_faults([FaultRule(route=CREATE, lost=1.0)])
        contract = await client.contracts.create(
            team, template_id=template, created_by=user, values={}
        )
        listed = await client.contracts.list(team)
    assert contracts_created(sandbox_server) == 2  # one per logical call, not per attempt
    assert contract.id in {c.id for c in listed}
    assert sandbox_server.counters()["idempotent_replays"] == 1


async def test_a_create_cancelled_while_the_service_works_is_still_made(
    sandbox_server: SandboxServer,
) -> None:
    """The caller gives up after its create left; the service carries it out regardless.

    As a real service would: the request had arrived whole. The emulator read the body only
    after its injected latency, from a connection the client had closed, and so never
    made the contract: tests against it could not see what a cancelled create leaves.
    """
    async with client_for(sandbox_server, retries=None) as client:
        team, template, user = await nda_target(client, sandbox_server)
        sandbox_server.set_faults([FaultRule(route=CREATE, latency=0.3)])
        with pytest.raises(asyncio.TimeoutError):  # TimeoutError's alias from 3.11 only
            await asyncio.wait_for(
                client.contracts.create(
                    team, template_id=template, created_by=user, values={"contract_name": "x"}
                ),
                0.1,
            )
        for _ in range(100):  # bounded: at most 2 s for the 0.3 s the service takes
            if contracts_created(sandbox_server) == 1:
                break
            await asyncio.sleep(0.02)
        sandbox_server.set_faults([])
        names = [contract.name for contract in await client.contracts.list(team)]
    assert contracts_created(sandbox_server) == 1
    assert names == ["x"]  # the caller finds it by its name


async def test_latency_beyond_the_timeout(sandbox_server: SandboxServer) -> None:
    """An answer slower than the client's timeout is a ReadTimeoutError."""
    # The server finishes the slow answer before it closes: 0.15 s keeps that wait short,
    # and is still 0.1 s after the client gives up (a loaded machine's event loop may
    # run late, but not that late).
    sandbox_server.set_faults([FaultRule(route="GET /v1/users/*", latency=0.15)])
    async with client_for(sandbox_server, retries=None, timeout=0.05) as client:
        with pytest.raises(ReadTimeoutError):
            await client.users.get(sandbox_server.users[0].id)


async def test_connection_refused_is_retried_then_raised() -> None:
    """Nothing listening: ConnectError after the configured attempts."""
    from contractsdk import ConnectError

    async with ContractClient(
        api_key="k", base_url="http://127.0.0.1:9", rate_limits=None, retries=FAST
    ) as client:
        with pytest.raises(ConnectError) as caught:
            await client.users.get(1)
    assert caught.value.attempts == 3
