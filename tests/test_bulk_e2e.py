"""Bulk jobs against the emulator over loopback HTTP: faults, no replay, kill -9, Ctrl-C.

What every test here proves is the bulk promise: every row ends in exactly one state, the
service holds exactly the contracts the journal says were created, and no contract name
appears twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from contractsdk import AiohttpTransport, ContractClient, RateLimits, Request, Response
from contractsdk.bulk import BulkJob, RowOutcome
from contractsdk.bulk._journal import Journal
from contractsdk.sandbox import FaultRule, SandboxServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
CREATE = "POST /v1/teams/*/contracts"
LIMIT = 120.0  # seconds any one job may take here (2 shared cores: generous)


def team_and_template(server: SandboxServer) -> tuple[int, int, int]:
    """Ada's shared team, the newest tenancy template, and Ada."""
    user = server.users[0]
    team = next(t for t in server.teams if t.name == "Acme Legal")
    ast = next(c for c in server.seed.catalog.types if c.name.startswith("Assured"))
    return team.id, ast.template_ids[0], user.id


def source_rows(count: int, *, invalid_every: int = 0) -> list[dict[str, str]]:
    rows = []
    for index in range(count):
        row = {
            "ref": f"R-{index:05d}",
            "contract_name": f"Tenancy {index:05d}",
            "contract_rentFrequency": "month" if index % 2 else "week",
        }
        if index % 2:
            row["contract_breakClause"] = "breakClauseNo"
        if invalid_every and index % invalid_every == invalid_every - 1:
            row["contract_rentFrequency"] = "fortnight"
            row.pop("contract_breakClause", None)
        rows.append(row)
    return rows


async def listed_names(server: SandboxServer, team_id: int) -> list[str]:
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        return [contract.name or "" for contract in await client.contracts.list(team_id)]


def journal_counts(path: Path) -> dict[str, int]:
    journal = Journal.connect(path, readonly=True)
    try:
        return journal.counts()
    finally:
        journal.close()


async def run_job(job: BulkJob) -> list[RowOutcome]:
    async def consume() -> list[RowOutcome]:
        return [outcome async for outcome in job.run()]

    return await asyncio.wait_for(consume(), LIMIT)


async def check_accounted(
    server: SandboxServer, team_id: int, journal: Path, rows: int
) -> dict[str, int]:
    """Every row in exactly one final state; the service holds exactly the created ones."""
    counts = journal_counts(journal)
    assert sum(counts.values()) == rows
    assert counts["pending"] == counts["sending"] == 0
    names = await listed_names(server, team_id)
    assert len(names) == len(set(names)), "a contract was created twice"
    assert len(names) == counts["created"]
    assert len(server.state.team_contracts[team_id]) == counts["created"]
    return counts


async def test_faults_every_row_accounted_for(tmp_path: Path) -> None:
    """5xx, resets, lost answers and 429s: one state per row, no duplicate, counts agree."""
    faults = [FaultRule(CREATE, status_500=0.03, status_503=0.03, reset=0.03, lost=0.05)]
    # No rate-limit headers: the client learns the limit from 429s alone.
    async with SandboxServer(
        port=0, write_rate=60, burst=10, read_rate=None, rate_headers=False, faults=faults
    ) as server:
        team_id, template_id, user_id = team_and_template(server)
        rows = source_rows(300, invalid_every=50)
        journal = tmp_path / "job.db"
        # The client believes in 100 writes/s; the service allows 60: it meets 429s and
        # learns the real limit (and the job must not lose or repeat a row meanwhile).
        limits = RateLimits(read=None, write=100, burst=10)
        async with ContractClient(
            api_key=server.api_key, base_url=server.url, rate_limits=limits
        ) as client:
            job = BulkJob(
                client,
                rows,
                team_id=team_id,
                template_id=template_id,
                created_by=user_id,
                key_column="ref",
                journal=journal,
                concurrency=8,
                rounds=4,
                round_delay=0.3,
            )
            outcomes = await run_job(job)
        assert len(outcomes) == 300
        assert len({o.key for o in outcomes}) == 300
        assert all(o.state in ("created", "invalid", "failed") for o in outcomes)
        counts = await check_accounted(server, team_id, journal, 300)
        assert counts["invalid"] == 6
        assert counts["created"] == 294  # every valid row: the faults are all survivable
        summary = job.summary
        assert summary is not None and summary.created == counts["created"]
        counters = server.counters()
        faults_seen = counters["faults"]
        assert isinstance(faults_seen, dict) and faults_seen.get("lost", 0) > 0
        assert summary.throttled > 0
        assert counters["rate_limited"] == summary.throttled


class WithoutIdempotencyKeys:
    """A transport that drops the Idempotency-Key header, as a service ignoring it would."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport()

    async def handle_async_request(self, request: Request) -> Response:
        stripped = attrs.evolve(request, headers=request.headers.without("Idempotency-Key"))
        return await self.inner.handle_async_request(stripped)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_reconciliation_alone_prevents_duplicates(tmp_path: Path) -> None:
    """With no idempotent replay at all, lost answers are found by listing, never re-sent."""
    faults = [FaultRule(CREATE, lost=0.15, reset=0.05)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id, template_id, user_id = team_and_template(server)
        journal = tmp_path / "job.db"
        async with ContractClient(
            api_key=server.api_key,
            base_url=server.url,
            transport=WithoutIdempotencyKeys(),
            rate_limits=None,
            retries=None,  # only the job retries here: the rounds are what is tested
        ) as client:
            job = BulkJob(
                client,
                source_rows(200),
                team_id=team_id,
                template_id=template_id,
                created_by=user_id,
                key_column="ref",
                journal=journal,
                concurrency=8,
                rounds=4,
                round_delay=0.1,
            )
            outcomes = await run_job(job)
        counters = server.counters()
        assert counters["idempotent_replays"] == 0  # the emulator never saw a key
        reconciled = [o for o in outcomes if o.reconciled]
        assert reconciled, "no lost answer was reconciled: the test proved nothing"
        await check_accounted(server, team_id, journal, 200)
        assert job.summary is not None and job.summary.reconciled == len(reconciled)


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    columns = ["ref", "contract_name", "contract_rentFrequency", "contract_breakClause"]
    lines = [",".join(columns)]
    lines += [",".join(row.get(column, "") for column in columns) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def start_cli(
    server: SandboxServer, source: Path, journal: Path, *more: str
) -> asyncio.subprocess.Process:
    team_id, template_id, user_id = team_and_template(server)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CONTRACTSDK_BASE_URL": server.url,
        "CONTRACTSDK_API_KEY": server.api_key,
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "contractsdk",
        "bulk",
        "create",
        str(source),
        "--team",
        str(team_id),
        "--template",
        str(template_id),
        "--created-by",
        str(user_id),
        "--key-column",
        "ref",
        "--journal",
        str(journal),
        "--concurrency",
        "6",
        *more,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_created(journal: Path, at_least: int, process: Any) -> int:
    """Poll the journal (read-only, beside the writer) until enough rows are created."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while loop.time() < deadline:
        if process.returncode is not None:
            raise AssertionError("the job ended before it could be interrupted")
        if await asyncio.to_thread(journal.exists):
            with contextlib.suppress(Exception):  # the file may be mid-creation
                created = (await asyncio.to_thread(journal_counts, journal))["created"]
                if created >= at_least:
                    return created
        await asyncio.sleep(0.02)
    raise AssertionError("the job made no progress in time")


async def finish(process: asyncio.subprocess.Process) -> tuple[int, str]:
    out, err = await asyncio.wait_for(process.communicate(), LIMIT)
    assert process.returncode is not None
    return process.returncode, (out + err).decode()


@pytest.mark.slow
async def test_kill_9_mid_run_then_resume(tmp_path: Path) -> None:
    """SIGKILL the CLI mid-run; run it again: all rows created once, none twice."""
    faults = [FaultRule(CREATE, latency=(0.01, 0.03), lost=0.03)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(300))
        process = await start_cli(server, source, journal)
        await wait_for_created(journal, 60, process)
        process.send_signal(signal.SIGKILL)
        code, _output = await finish(process)
        assert code == -signal.SIGKILL
        interrupted = journal_counts(journal)
        assert sum(interrupted.values()) <= 300  # each row read has one record, no more
        names = await listed_names(server, team_id)
        assert len(names) == len(set(names)), "a contract was created twice"

        process = await start_cli(server, source, journal)
        code, output = await finish(process)
        assert code == 0, output
        counts = await check_accounted(server, team_id, journal, 300)
        assert counts["created"] == 300


@pytest.mark.slow
async def test_ctrl_c_drains_and_resumes(tmp_path: Path) -> None:
    """SIGINT: in-flight requests finish and are recorded, exit 130; a rerun completes."""
    faults = [FaultRule(CREATE, latency=(0.01, 0.03))]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(300))
        process = await start_cli(server, source, journal)
        await wait_for_created(journal, 40, process)
        process.send_signal(signal.SIGINT)
        code, output = await finish(process)
        assert code == 130, output
        assert "stopping" in output
        stopped = journal_counts(journal)
        assert stopped["sending"] == 0  # drained: every request sent was recorded
        names = await listed_names(server, team_id)
        assert len(names) == len(set(names)) == stopped["created"]

        process = await start_cli(server, source, journal)
        code, output = await finish(process)
        assert code == 0, output
        counts = await check_accounted(server, team_id, journal, 300)
        assert counts["created"] == 300


@pytest.mark.slow
async def test_a_second_ctrl_c_aborts_and_the_rerun_reconciles(tmp_path: Path) -> None:
    """Two SIGINTs: exit 130 at once, rows in flight left 'sending'; the rerun settles all."""
    faults = [FaultRule(CREATE, latency=(0.05, 0.1))]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(200))
        process = await start_cli(server, source, journal)
        await wait_for_created(journal, 20, process)
        process.send_signal(signal.SIGINT)
        await asyncio.sleep(0.01)
        process.send_signal(signal.SIGINT)
        code, output = await finish(process)
        assert code == 130, output
        assert "aborting" in output and "Traceback" not in output

        process = await start_cli(server, source, journal)
        code, output = await finish(process)
        assert code == 0, output
        counts = await check_accounted(server, team_id, journal, 200)
        assert counts["created"] == 200
