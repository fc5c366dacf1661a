"""The whole flow, auth and permissions, against the emulator over loopback HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contractsdk import (
    AuthenticationError,
    BadRequestError,
    ClientCredentials,
    ContractClient,
    NotFoundError,
    PermissionDeniedError,
    TermValidationError,
)
from contractsdk.sandbox import SandboxServer
from tests._fakeclock import FakeClock
from tests.sandbox._helpers import use_clock

pytestmark = pytest.mark.e2e

TENANCY = "Assured Shorthold Tenancy Agreement"


async def test_whole_flow(sandbox_server: SandboxServer, sandbox_client: ContractClient) -> None:
    """User → team → type → latest template → terms → create → list/get/update/pdf/delete."""
    client = sandbox_client
    seeded = sandbox_server.users[0]
    user = await client.users.get(seeded.id)
    assert (user.first_name, user.last_name) == (seeded.first_name, seeded.last_name)

    teams = await client.teams.list(user.id)
    assert seeded.personal_team_id in {t.id for t in teams}
    team = await client.teams.create(user.id, name="E2E team")
    assert team.created is not None
    team = await client.teams.rename(team.id, name="E2E team, renamed")
    assert (await client.teams.get(team.id)).name == "E2E team, renamed"

    kind = next(t for t in await client.contract_types.list(team.id) if t.name == TENANCY)
    versions = await client.templates.list(team.id, kind.id)
    assert len(versions) >= 2
    template = await client.templates.latest(team.id, kind.id)
    assert template == versions[0]
    terms = await client.terms.list(template.id)
    start = terms.find("contract_breakClauseStart")
    assert start is not None
    assert terms.paths("contract_breakClauseStart") == (
        "contract_rentFrequency=month › contract_breakClause=breakClauseYes › "
        "contract_breakClauseStart",
    )

    values: dict[str, Any] = {
        "contract_name": "E2E lease",
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }
    contract = await client.contracts.create(
        team.id, template_id=template.id, created_by=user.id, values=values
    )
    assert contract.id is not None
    stored = await client.contracts.get(contract.id)
    assert stored.values == values  # the emulator flattens what was nested
    assert [c.id for c in await client.contracts.list(team.id)] == [contract.id]

    values["contract_breakClause"] = "breakClauseNo"
    del values["contract_breakClauseStart"]
    updated = await client.contracts.update(contract.id, values=values, template_id=template.id)
    assert updated.values.get("contract_breakClause") == "breakClauseNo"
    assert "contract_breakClauseStart" not in updated.values

    pdf = await client.contracts.download_pdf(contract.id)
    assert pdf.startswith(b"%PDF-")
    assert "E2E lease" in await client.contracts.download_html(contract.id)
    await client.contracts.delete(contract.id)
    with pytest.raises(NotFoundError):
        await client.contracts.get(contract.id)


async def test_update_of_a_nested_term_alone(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """A nested term changes alone: it goes under the stored options, checked against them.

    The contract is read only when a given term's ancestors are not all given; the
    emulator, which shares no code with the SDK, takes what is sent.
    """
    client = sandbox_client
    seeded = sandbox_server.users[0]
    kind = next(
        k for k in await client.contract_types.list(seeded.personal_team_id) if k.name == TENANCY
    )
    template = await client.templates.latest(seeded.personal_team_id, kind.id)
    values = {
        "contract_name": "Nested lease",
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }
    contract = await client.contracts.create(
        seeded.personal_team_id, template_id=template.id, created_by=seeded.id, values=values
    )
    assert contract.id is not None

    def reads() -> int:
        routes = sandbox_server.counters()["by_route"]
        assert isinstance(routes, dict)
        return int(routes.get("GET /v1/contracts/{contractId}", 0))

    before = reads()
    changed = await client.contracts.update(
        contract.id, values={"contract_breakClauseStart": "3 months"}, template_id=template.id
    )
    assert changed.values == {**values, "contract_breakClauseStart": "3 months"}
    assert reads() == before + 1

    # A top-level option changed: nothing to read, and the service drops what was under it.
    weekly = await client.contracts.update(
        contract.id, values={"contract_rentFrequency": "week"}, template_id=template.id
    )
    assert weekly.values == {"contract_name": "Nested lease", "contract_rentFrequency": "week"}
    assert reads() == before + 1

    # Now the nested term does not apply, and the message says what the contract holds.
    with pytest.raises(TermValidationError, match="contract_rentFrequency is 'week'"):
        await client.contracts.update(
            contract.id, values={"contract_breakClauseStart": "6 months"}, template_id=template.id
        )
    assert (await client.contracts.get(contract.id)).values == weekly.values
    # Without template_id the value goes flat, and the service refuses a nested term so:
    # the error says what template_id= would do.
    with pytest.raises(BadRequestError, match="with template_id= the values are checked"):
        await client.contracts.update(contract.id, values={"contract_breakClause": "x"})


async def test_create_contract_in_one_call(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """create_contract finds the personal team and the newest template by itself."""
    seeded = sandbox_server.users[0]
    kinds = await sandbox_client.contract_types.list(seeded.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    contract = await sandbox_client.create_contract(
        user_id=seeded.id, contract_type_id=kind.id, values={"contract_name": "One call"}
    )
    listed = await sandbox_client.contracts.list(seeded.personal_team_id)
    assert [c.id for c in listed] == [contract.id]


async def test_validator_and_emulator_agree_on_exclusive_options(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """What the SDK refuses locally, the emulator refuses too (they share no code)."""
    seeded = sandbox_server.users[0]
    kinds = await sandbox_client.contract_types.list(seeded.personal_team_id)
    kind = next(k for k in kinds if k.name == TENANCY)
    template = await sandbox_client.templates.latest(seeded.personal_team_id, kind.id)
    terms = await sandbox_client.terms.list(template.id)
    bad = {
        "contract_letType": "hmo",
        "contract_roomDescription": "Room 2",
        "contract_soleBuildingRules": "soleBuildingRulesYes",
    }
    with pytest.raises(TermValidationError, match="exclusive"):
        await sandbox_client.contracts.create(
            seeded.personal_team_id, template_id=template.id, created_by=seeded.id, values=bad
        )
    # Sent anyway with the raw payload, the emulator answers 400 naming the term.
    let_type, sole_rules = terms.find("contract_letType"), terms.find("contract_soleBuildingRules")
    assert let_type is not None and sole_rules is not None
    payload = [
        {
            "id": let_type.id,
            "value": "hmo",
            "nested_fields": [{"id": sole_rules.id, "value": "soleBuildingRulesYes"}],
        },
    ]
    from contractsdk import BadRequestError

    with pytest.raises(BadRequestError, match=r"contract_letType|contract_soleBuildingRules"):
        await sandbox_client._send_json(
            "POST",
            f"/teams/{seeded.personal_team_id}/contracts",
            {"created_by_user_id": seeded.id, "template_id": template.id, "fields": payload},
        )
    assert sandbox_server.counters()["contracts_created"] == 0


async def test_foreign_team_is_forbidden(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """Creating a contract in a team the user is not in gives PermissionDeniedError (403)."""
    outsider = next(
        u
        for u in sandbox_server.users
        if all(t.id not in u.team_ids for t in sandbox_server.teams if t.name == "Acme Legal")
    )
    acme = next(t for t in sandbox_server.teams if t.name == "Acme Legal")
    kind = (await sandbox_client.contract_types.list(acme.id))[0]
    template = await sandbox_client.templates.latest(acme.id, kind.id)
    with pytest.raises(PermissionDeniedError) as caught:
        await sandbox_client.contracts.create(
            acme.id,
            template_id=template.id,
            created_by=outsider.id,
            values={"contract_name": "Not mine"},
        )
    assert caught.value.status_code == 403
    assert caught.value.service_message


async def test_bad_key_is_an_authentication_error(sandbox_server: SandboxServer) -> None:
    """A wrong API key gives AuthenticationError after one attempt, its value never shown."""
    async with ContractClient(
        api_key="wrong-key-123", base_url=sandbox_server.url, rate_limits=None
    ) as client:
        with pytest.raises(AuthenticationError) as caught:
            await client.users.get(sandbox_server.users[0].id)
    assert caught.value.attempts == 1
    assert "wrong-key-123" not in str(caught.value)


@pytest.mark.parametrize("sandbox_options", [{"token_ttl": 1.0, "read_rate": None}])
async def test_oauth_tokens_expiring_mid_run(
    sandbox_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one-second tokens, a run of calls over three seconds refreshes ahead and never fails.

    The client and the emulator share one clock that the test moves a quarter second per
    round, so the tokens age as over a real run, without waiting for it.
    """
    clock = FakeClock()
    use_clock(sandbox_server, clock, monkeypatch)
    credentials = ClientCredentials(
        client_id=sandbox_server.client_id, client_secret=sandbox_server.client_secret
    )
    async with ContractClient(
        credentials=credentials, base_url=sandbox_server.url, rate_limits=None, clock=clock
    ) as client:
        user_id = sandbox_server.users[0].id
        for _ in range(12):  # bounded: 12 rounds of 8 concurrent calls, 0.25 s apart
            users = await asyncio.gather(*(client.users.get(user_id) for _ in range(8)))
            assert all(user.id == user_id for user in users)
            clock.now += 0.25
        stats = client.stats
    # A token serves at most the four rounds of its second: at least three were fetched.
    assert stats.token_requests >= 3
    # Each was refreshed before it expired: the emulator never refused one.
    assert stats.responses.get(401, 0) == 0


@pytest.mark.parametrize("sandbox_options", [{"token_ttl": 0.5, "read_rate": None}])
async def test_expired_token_is_replayed_once(
    sandbox_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token that expires between refresh and use gets a 401, a new token and a replay."""
    clock = FakeClock()
    use_clock(sandbox_server, clock, monkeypatch)
    credentials = ClientCredentials(
        client_id=sandbox_server.client_id, client_secret=sandbox_server.client_secret
    )
    async with ContractClient(
        credentials=credentials, base_url=sandbox_server.url, rate_limits=None, clock=clock
    ) as client:
        user_id = sandbox_server.users[0].id
        await client.users.get(user_id)
        # Make the cached token look fresh although the emulator will have expired it.
        cached = client._auth._cached  # type: ignore[attr-defined]
        object.__setattr__(cached, "refresh_at", cached.refresh_at + 3600)
        object.__setattr__(cached, "expires_at", cached.expires_at + 3600)
        clock.now += 0.7
        assert (await client.users.get(user_id)).id == user_id
        stats = client.stats
    assert stats.responses[401] == 1
    assert stats.token_requests == 2
