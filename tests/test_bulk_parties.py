"""Parties in bulk rows: the mapping, validation per row, journaled steps, kill -9, retry."""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from contractsdk import ConfigurationError, ContractClient, Role, Side
from contractsdk.bulk import BulkJob, BulkParty, read_status
from contractsdk.bulk._parties import check_parties, parse_party_flag
from contractsdk.sandbox import FaultRule, SandboxServer
from tests.test_bulk_e2e import LIMIT, check_accounted, team_and_template

ROOT = Path(__file__).resolve().parents[1]
ADD = "POST /v1/contracts/*/collaborators"


def parties() -> list[BulkParty]:
    """A landlord (first side) and a tenant (second side), each from its own columns."""
    return [
        BulkParty(
            name="landlord",
            roles=[Role.PARTY],
            side=Side.FIRST,
            user_column="landlord_user_id",
            columns={"landlord_email": "Email", "landlord_address": "Address"},
        ),
        BulkParty(
            name="tenant",
            roles=["party"],
            side="second",
            user_column="tenant_user_id",
            columns={"tenant_address": "Current address", "tenant_mobile": "Mobile"},
        ),
    ]


def party_rows(count: int, landlord: int, tenant: int) -> list[dict[str, str]]:
    return [
        {
            "ref": f"R-{index:04d}",
            "contract_name": f"Let {index:04d}",
            "contract_rentFrequency": "week",
            "landlord_user_id": str(landlord),
            "landlord_email": f"landlord{index}@example.com",
            "landlord_address": f"{index} Analytical Row",
            "tenant_user_id": str(tenant),
            "tenant_address": f"{index} Compiler Lane",
            "tenant_mobile": "07700 900123",
        }
        for index in range(count)
    ]


async def collaborator_counts(server: SandboxServer, team_id: int) -> dict[int, int]:
    """How many collaborators each contract of the team has, from the emulator."""
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        contracts = await client.contracts.list(team_id)
        counts: dict[int, int] = {}
        for contract in contracts:
            assert contract.id is not None
            listed = await client.collaborators.list(contract.id)
            users = collections.Counter(c.user_id for c in listed)
            assert all(n == 1 for n in users.values()), "a party was added twice"
            counts[contract.id] = len(listed)
        return counts


def job(client: ContractClient, rows: Any, journal: Path, server: SandboxServer) -> BulkJob:
    team_id, template_id, user_id = team_and_template(server)
    return BulkJob(
        client,
        rows,
        team_id=team_id,
        template_id=template_id,
        created_by=user_id,
        key_column="ref",
        journal=journal,
        parties=parties(),
        concurrency=4,
        round_delay=0.0,
    )


# -- the mapping -------------------------------------------------------------------------


def test_party_reads_roles_and_side_as_enums() -> None:
    """Roles and side given as wire strings become Role and Side members."""
    party = parties()[1]
    assert party.roles == (Role.PARTY,) and party.side is Side.SECOND
    assert party.all_columns == ("tenant_user_id", "tenant_address", "tenant_mobile")
    assert BulkParty.from_identity(party.identity()) == party


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "a b"}, "a party's name"),
        ({"side": "left"}, "side"),
        ({"roles": ["owner"]}, "not a role"),
        ({"columns": {"tenant_user_id": "Email"}}, "holds the user id"),
    ],
)
def test_bad_party_is_refused(options: dict[str, Any], message: str) -> None:
    """A bad name, side, role or a user column mapped to a field is refused at once."""
    given: dict[str, Any] = {
        "name": "tenant",
        "roles": ["party"],
        "side": "second",
        "user_column": "tenant_user_id",
        **options,
    }
    with pytest.raises(ConfigurationError, match=message):
        BulkParty(**given)


def test_party_flag() -> None:
    """--party NAME:SIDE:ROLE[,ROLE] reads as (name, roles, side); other shapes are refused."""
    assert parse_party_flag("tenant:second:party") == ("tenant", ("party",), "second")
    assert parse_party_flag("x:first:party,collaborator")[1] == ("party", "collaborator")
    with pytest.raises(ConfigurationError, match="NAME:SIDE:ROLE"):
        parse_party_flag("tenant:second")


async def test_check_parties_reports_every_problem() -> None:
    """Each party's problems are reported at once, each naming its party."""
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        _team, template, _user = team_and_template(server)
        async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
            sets = {
                party.name: await client.identity_fields.list(
                    template, roles=party.roles, side=party.side
                )
                for party in parties()
            }
    row = party_rows(1, 1, 2)[0] | {"landlord_email": "nope", "tenant_user_id": "x"}
    row["tenant_Unknown"] = "?"
    checked, problems = check_parties(row, parties(), sets)
    assert checked == {}
    assert any(p.startswith("party landlord: Email") for p in problems), problems
    assert any("party tenant: column 'tenant_user_id'" in p for p in problems), problems
    good, none = check_parties(party_rows(1, 1, 2)[0], parties(), sets)
    assert none == [] and set(good) == {"landlord", "tenant"}
    assert good["tenant"].user_id == 2


# -- against the emulator ----------------------------------------------------------------


@pytest.mark.e2e
async def test_rows_with_two_parties_each(tmp_path: Path) -> None:
    """12 rows, 2 parties each: each contract has its 2 once; a bad party value is invalid."""
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id = team_and_template(server)[0]
        landlord, tenant = server.users[0].id, server.users[1].id
        rows = party_rows(12, landlord, tenant)
        rows[5]["landlord_email"] = "not an email"
        async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
            bulk = job(client, rows, tmp_path / "job.db", server)
            outcomes = await asyncio.wait_for(_collect(bulk), LIMIT)
        summary = bulk.summary
        assert summary is not None
        assert (summary.created, summary.invalid, summary.incomplete) == (11, 1, 0)
        bad = next(o for o in outcomes if o.state == "invalid")
        assert bad.row == 6 and any("party landlord: Email" in r for r in bad.reasons)
        counts = await collaborator_counts(server, team_id)
        assert sorted(counts.values()) == [2] * 11


@pytest.mark.e2e
async def test_incomplete_parties_shown_then_retried(tmp_path: Path) -> None:
    """Failed adds leave rows incomplete (counted, shown by status); retry completes them."""
    journal = tmp_path / "job.db"
    faults = [FaultRule(ADD, status_503=1.0)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        rows = party_rows(6, server.users[0].id, server.users[1].id)
        async with ContractClient(
            api_key=server.api_key, base_url=server.url, retries=None
        ) as client:
            bulk = job(client, rows, journal, server)
            outcomes = await asyncio.wait_for(_collect(bulk), LIMIT)
            assert bulk.summary is not None
            assert (bulk.summary.created, bulk.summary.incomplete) == (0, 6)
            assert not bulk.summary.complete
            assert all(o.parties_missing == ("landlord", "tenant") for o in outcomes)
            status = await read_status(journal)
            assert status.incomplete_count == 6
            assert "landlord failed" in status.incomplete[0][3]

            server.set_faults([])
            again = await BulkJob.from_journal(client, journal, round_delay=0.0)
            retried = await asyncio.wait_for(_collect(again, retry=True), LIMIT)
        assert again.summary is not None
        assert (again.summary.created, again.summary.incomplete) == (6, 0)
        assert all(not o.parties_missing for o in retried)
        assert (await read_status(journal)).incomplete_count == 0
        counts = await collaborator_counts(server, team_id)
        assert sorted(counts.values()) == [2] * 6


_SCRIPT = """
import asyncio, sys
sys.path.insert(0, {root!r})
from contractsdk import ContractClient
from contractsdk.bulk import BulkJob
from tests.test_bulk_parties import parties

async def main():
    key, url, team, template, user = sys.argv[1].split("|")
    async with ContractClient(api_key=key, base_url=url) as client:
        bulk = BulkJob(client, {csv!r}, team_id=int(team), template_id=int(template),
                       created_by=int(user), key_column="ref", journal={journal!r},
                       parties=parties(), concurrency=4, round_delay=0.0)
        async for _ in bulk.run():
            pass

asyncio.run(main())
"""


@pytest.mark.e2e
@pytest.mark.slow
async def test_kill_9_between_party_steps_then_resume(tmp_path: Path) -> None:
    """SIGKILL a job adding parties; run it again: every contract has its 2 parties once."""
    import csv

    from contractsdk.bulk._journal import Journal

    faults = [FaultRule(ADD, latency=(0.01, 0.03), lost=0.05)]
    journal, source = tmp_path / "job.db", tmp_path / "rows.csv"
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        rows = party_rows(60, server.users[0].id, server.users[1].id)
        with source.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        script = _SCRIPT.format(root=str(ROOT), csv=str(source), journal=str(journal))
        process = await _start(script, server)
        await _wait_for_parties(journal, 20, process)
        process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(process.wait(), LIMIT)
        assert process.returncode == -signal.SIGKILL

        process = await _start(script, server)
        out, err = await asyncio.wait_for(process.communicate(), LIMIT)
        assert process.returncode == 0, (out + err).decode()
        counts = await check_accounted(server, team_id, journal, 60)
        assert counts["created"] == 60
        added = await collaborator_counts(server, team_id)
        assert sorted(added.values()) == [2] * 60
        opened = Journal.connect(journal, readonly=True)
        try:
            left = opened.db.execute("SELECT count(*) FROM parties WHERE state != 'added'")
            assert left.fetchone()[0] == 0
        finally:
            opened.close()


async def _start(script: str, server: SandboxServer) -> asyncio.subprocess.Process:
    team_id, template_id, user_id = team_and_template(server)
    argument = f"{server.api_key}|{server.url}|{team_id}|{template_id}|{user_id}"
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        argument,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _wait_for_parties(journal: Path, at_least: int, process: Any) -> None:
    """Poll the journal until enough parties are added (bounded by LIMIT)."""
    from contractsdk.bulk._journal import Journal

    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while loop.time() < deadline:
        assert process.returncode is None, "the job ended before it could be killed"
        if await asyncio.to_thread(journal.exists):
            try:
                opened = Journal.connect(journal, readonly=True)
                try:
                    found = opened.db.execute(
                        "SELECT count(*) FROM parties WHERE state = 'added'"
                    ).fetchone()[0]
                finally:
                    opened.close()
            except Exception:  # the file may be mid-creation
                found = 0
            if found >= at_least:
                return
        await asyncio.sleep(0.02)
    raise AssertionError("the job added no parties in time")


async def _collect(bulk: BulkJob, *, retry: bool = False) -> list[Any]:
    return [outcome async for outcome in (bulk.retry() if retry else bulk.run())]


def test_parties_from_cli_flags() -> None:
    """--party, --party-user-column and --party-column build the job's parties."""
    from contractsdk.bulk._parties import parties_from_flags

    built = parties_from_flags(
        ["tenant:second:party"],
        ["tenant=tenant_user_id"],
        ["tenant:tenant_address=Current address", "tenant:tenant_mobile=Mobile"],
    )
    assert built == [parties()[1]]
    with pytest.raises(ConfigurationError, match="--party-user-column tenant=COL"):
        parties_from_flags(["tenant:second:party"], [], [])
    with pytest.raises(ConfigurationError, match="no --party gives landlord"):
        parties_from_flags([], ["landlord=x"], [])
    with pytest.raises(ConfigurationError, match="NAME:COL=FIELD"):
        parties_from_flags(["tenant:second:party"], ["tenant=u"], ["tenant_mobile=Mobile"])
