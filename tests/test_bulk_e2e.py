"""Bulk jobs against the emulator over loopback HTTP: faults, no replay, kill -9, Ctrl-C.

What every test here proves is the bulk promise: every row ends in exactly one state, the
service holds exactly the contracts the journal says were created, and no contract name
appears twice. The command that is killed or interrupted runs in a process of its own
(``tests/_bulkprocess.py``); the run after it, whose result is what is checked, runs here.
"""

from __future__ import annotations

import asyncio
import signal
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from contractsdk import ConfigurationError, ContractClient, RateLimits, Retries
from contractsdk.bulk import BulkJob, JournalError, RowOutcome
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._bulkkit import (
    CONCURRENCY,
    LIMIT,
    ProcessedLate,
    SentThenCut,
    WithoutIdempotencyKeys,
    check_accounted,
    command_emulator,
    created_in,
    emulator_client,
    faults_seen,
    journal_counts,
    keyed_job,
    listed_names,
    resume,
    start_command,
    team_and_template,
    wait_until,
)

pytestmark = pytest.mark.e2e

CREATE = "POST /v1/teams/*/contracts"
#: Rows of the jobs that are stopped: a job stopped after a few creates is mid-run.
ROWS = 60


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


async def run_job(job: BulkJob) -> list[RowOutcome]:
    async def consume() -> list[RowOutcome]:
        return [outcome async for outcome in job.run()]

    return await asyncio.wait_for(consume(), LIMIT)


async def _collect(outcomes: Any) -> list[RowOutcome]:
    return [outcome async for outcome in outcomes]


async def test_faults_every_row_accounted_for(tmp_path: Path) -> None:
    """5xx, resets, lost answers and 429s: one state per row, no duplicate, counts agree."""
    faults = [FaultRule(CREATE, status_500=0.05, status_503=0.05, reset=0.05, lost=0.15)]
    # No rate-limit headers: the client learns the limit from 429s alone.
    async with SandboxServer(
        port=0, write_rate=100, burst=4, read_rate=None, rate_headers=False, faults=faults
    ) as server:
        team_id = team_and_template(server)[0]
        rows = source_rows(ROWS, invalid_every=20)
        journal = tmp_path / "job.db"
        # The client believes in six times the service's write limit, and in a bucket of 10
        # where the service's holds 4 (its first 8 requests go at once): it meets 429s and
        # learns the real limit (and the job must not lose or repeat a row meanwhile). At
        # twice the limit (300/s), a loaded machine sent under 300/s and met none.
        # Reads are not limited here, and the client is told a rate it need not learn.
        limits = RateLimits(read=1000, write=600, burst=10)
        quick = Retries(wait_initial=0.01, wait_max=0.05)
        async with ContractClient(
            api_key=server.api_key, base_url=server.url, rate_limits=limits, retries=quick
        ) as client:
            job = keyed_job(client, server, rows, journal, concurrency=8, rounds=4, round_delay=0)
            outcomes = await run_job(job)
        assert len(outcomes) == ROWS
        assert len({o.key for o in outcomes}) == ROWS
        assert all(o.state in ("created", "invalid", "failed") for o in outcomes)
        counts = await check_accounted(server, team_id, journal, ROWS)
        assert counts["invalid"] == 3
        assert counts["created"] == ROWS - 3  # every valid row: the faults are all survivable
        summary = job.summary
        assert summary is not None and summary.created == counts["created"]
        for fault in ("status_500", "status_503", "reset", "lost"):
            assert faults_seen(server, fault) > 0, fault
        assert summary.reconciled > 0  # the lost answers, found by listing
        assert summary.throttled > 0
        assert server.counters()["rate_limited"] == summary.throttled


async def test_reconciliation_alone_prevents_duplicates(tmp_path: Path) -> None:
    """With no idempotent replay at all, lost answers are found by listing, never re-sent."""
    faults = [FaultRule(CREATE, lost=0.15, reset=0.05)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        journal = tmp_path / "job.db"
        async with ContractClient(
            api_key=server.api_key,
            base_url=server.url,
            transport=WithoutIdempotencyKeys(),
            rate_limits=None,
            retries=None,  # only the job retries here: the rounds are what is tested
        ) as client:
            job = keyed_job(
                client, server, source_rows(ROWS), journal, concurrency=8, rounds=4, round_delay=0
            )
            outcomes = await run_job(job)
        counters = server.counters()
        assert counters["idempotent_replays"] == 0  # the emulator never saw a key
        reconciled = [o for o in outcomes if o.reconciled]
        assert reconciled, "no lost answer was reconciled: the test proved nothing"
        await check_accounted(server, team_id, journal, ROWS)
        assert job.summary is not None and job.summary.reconciled == len(reconciled)


async def test_two_journals_of_one_job_never_share_a_key(tmp_path: Path) -> None:
    """January's file and February's, references restarting at 1: both are created.

    The job id leaves the file out (a file is fixed and run again with its journal), so
    the keys once clashed: the service, which keeps each create's Idempotency-Key, refused
    every February row for a day ("used with a different request").
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id = team_and_template(server)[0]
        january = source_rows(3)
        february = [{**row, "contract_name": f"{row['contract_name']} (Feb)"} for row in january]
        async with emulator_client(server) as client:
            first = await run_job(keyed_job(client, server, january, tmp_path / "jan.db"))
            second = await run_job(keyed_job(client, server, february, tmp_path / "feb.db"))
        assert [o.state for o in first + second] == ["created"] * 6
        assert server.counters()["idempotent_replays"] == 0
        assert len(await listed_names(server, team_id)) == 6


async def test_a_journal_started_afresh_is_not_answered_with_stale_replays(
    tmp_path: Path,
) -> None:
    """Contracts deleted, journal deleted, the job run again: the contracts are made anew.

    With one key per job and row, the service replayed the first run's answers, whose
    contracts no longer existed, and the run said "created 3" with none in the team.
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id = team_and_template(server)[0]
        rows = source_rows(3)
        journal = tmp_path / "job.db"
        async with emulator_client(server) as client:
            first = await run_job(keyed_job(client, server, rows, journal))
            for outcome in first:
                assert outcome.contract_id is not None
                await client.contracts.delete(outcome.contract_id)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{journal}{suffix}").unlink(missing_ok=True)  # noqa: ASYNC240
            second = await run_job(keyed_job(client, server, rows, journal))
        assert [o.state for o in second] == ["created"] * 3
        assert {o.contract_id for o in second}.isdisjoint(o.contract_id for o in first)
        assert len(await listed_names(server, team_id)) == 3


@pytest.mark.parametrize("clock", ["steady", "set forward"])
async def test_a_run_started_at_once_waits_for_what_the_last_left_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    """A run cut short with creates still being made, the next started at once: no twin.

    The next run lists the team only ``round_delay`` after the last one left sends
    unknown. Listed at once, the contracts still being made (half a second here) were
    missed and the rows sent again: twins, on a service that ignores the key. And so they
    were when the wall clock was set an hour forward between the runs (the journal's
    stamps then read an hour old): the wait was shortened by the time since the stamps.
    """
    faults = [FaultRule(CREATE, latency=0.5)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        rows = source_rows(3)
        journal = tmp_path / "job.db"
        cut = SentThenCut(len(rows))
        if clock == "set forward":
            an_hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
            monkeypatch.setattr("contractsdk.bulk._journal._now", lambda: an_hour_ago)
        async with emulator_client(server, transport=cut, retries=None) as client:
            cut.job = keyed_job(client, server, rows, journal, concurrency=len(rows))
            first = await run_job(cut.job)
        monkeypatch.undo()
        assert [o.state for o in first] == ["sending"] * 3
        try:
            async with emulator_client(server, transport=WithoutIdempotencyKeys()) as client:
                assert not any(task.done() for task in cut.detached)  # still being made
                second = await run_job(keyed_job(client, server, rows, journal, round_delay=1.5))
        finally:
            await cut.finish()
        assert [(o.state, o.reconciled) for o in second] == [("created", True)] * 3
        names = await listed_names(server, team_id)
        assert sorted(names) == sorted(row["contract_name"] for row in rows)  # no twin


async def test_one_file_run_at_once_with_two_journals_is_refused(tmp_path: Path) -> None:
    """A job run on a file while it runs there with another journal is refused: no twins.

    Each journal's lock covers that journal only: the second run listed the team before
    the first had created anything, and made every row again. Another file of the same
    job runs beside it.
    """
    faults = [FaultRule(CREATE, latency=0.2)]
    async with SandboxServer(port=0, write_rate=None, read_rate=None, faults=faults) as server:
        team_id = team_and_template(server)[0]
        source, other = tmp_path / "rows.csv", tmp_path / "more.csv"
        write_csv(source, source_rows(8))
        write_csv(other, source_rows(10)[8:])

        def job(path: Path, journal: str, **options: Any) -> BulkJob:
            return keyed_job(client, server, path, tmp_path / journal, **options)

        async with emulator_client(server) as client:
            running = asyncio.create_task(run_job(job(source, "a.db", concurrency=2)))
            await asyncio.sleep(0.1)  # its first creates are on their way
            with pytest.raises(JournalError, match=r"running this job on .*rows\.csv"):
                await run_job(job(source, "b.db"))
            assert not (tmp_path / "b.db").exists()  # made for the refused run, removed
            beside = await run_job(job(other, "c.db"))
            outcomes = await running
            again = await run_job(job(source, "b.db"))
        assert [o.state for o in outcomes] == ["created"] * 8
        assert [o.state for o in beside] == ["created"] * 2
        names = await listed_names(server, team_id)
        assert sorted(names) == sorted(row["contract_name"] for row in source_rows(10))
        assert {o.state for o in again} == {"invalid"}  # free again: its rows exist already


async def test_a_template_of_another_contract_type_is_refused(tmp_path: Path) -> None:
    """--contract-type with --template of another type: refused before any row.

    The template was used and the type ignored: an NDA's template given with the tenancy
    type was refused later, for 12 columns that were not its terms.
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id, template_id, user_id = team_and_template(server)
        types = server.seed.catalog.types
        ast = next(c for c in types if c.name.startswith("Assured"))
        other = next(c for c in types if c is not ast)
        async with emulator_client(server) as client:

            def job(template: int) -> BulkJob:
                return BulkJob(
                    client,
                    source_rows(2),
                    team_id=team_id,
                    contract_type_id=ast.id,
                    template_id=template,
                    created_by=user_id,
                    key_column="ref",
                    journal=tmp_path / f"{template}.db",
                )

            with pytest.raises(ConfigurationError, match="is not a version of contract type"):
                await run_job(job(other.template_ids[0]))
            assert [o.state for o in await run_job(job(template_id))] == ["created"] * 2
        assert len(await listed_names(server, team_id)) == 2


@pytest.mark.parametrize("rounds", [0, 1])
async def test_a_create_answered_5xx_then_made_is_found_not_sent_again(
    tmp_path: Path, rounds: int
) -> None:
    """A 504 to a create whose contract the service makes after it: found, never a twin.

    A 5xx to a POST may have been processed. Taken for "not processed", the row was
    reported failed, and a ``bulk retry`` started at once listed the team before the
    contract was made, missed it and sent the row again.
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id = team_and_template(server)[0]
        rows = source_rows(2)
        journal = tmp_path / "job.db"
        late = ProcessedLate(count=1, lag=0.2, path_end="/contracts")
        async with emulator_client(server, transport=late, retries=None) as client:
            first = await run_job(
                keyed_job(client, server, rows, journal, rounds=rounds, round_delay=1.0)
            )
            again = await BulkJob.from_journal(client, journal, round_delay=1.0)
            retried = await asyncio.wait_for(_collect(again.retry()), LIMIT)
        assert [o.state for o in first] == ["created", "created"]
        assert sum(o.reconciled for o in first) == 1  # the 504's, found by listing
        assert retried == []
        names = await listed_names(server, team_id)
        assert sorted(names) == sorted(row["contract_name"] for row in rows)  # no twin


async def test_a_row_fixed_after_a_failed_run_is_sent_with_its_new_values(
    tmp_path: Path,
) -> None:
    """Keyed by content, a fixed row comes back under a new key: it supersedes its old self.

    It was refused as "also used by row 2" (its own old version), and ``bulk retry``
    then created the contract with the old values.
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        team_id = team_and_template(server)[0]
        rows = [{k: v for k, v in row.items() if k != "ref"} for row in source_rows(3)]
        journal = tmp_path / "job.db"

        def job(client: ContractClient, rows: list[dict[str, str]]) -> BulkJob:
            # No key column: each row's key is a hash of its content.
            return keyed_job(client, server, rows, journal, key_column=None, rounds=0)

        async with emulator_client(server, retries=None) as client:
            server.set_faults([FaultRule(CREATE, status_503=1.0)])
            first = await run_job(job(client, rows))
            server.set_faults([])
            fixed = [dict(row) for row in rows]
            fixed[1]["contract_breakClause"] = "breakClauseYes"
            second = await run_job(job(client, fixed))
            retry = job(client, fixed)
            retried = await asyncio.wait_for(_collect(retry.retry()), LIMIT)
            names = await listed_names(server, team_id)
            made = next(o for o in second if o.name == "Tenancy 00001")
            assert made.contract_id is not None
            contract = await client.contracts.get(made.contract_id)
        assert [o.state for o in first] == ["failed"] * 3
        assert [o.state for o in second] == ["created"] * 3
        assert retried == []  # the old version is superseded, not left for retry to send
        assert sorted(names) == sorted(row["contract_name"] for row in rows)
        values = {field.name: field.value for field in contract.fields}
        assert values["contract_breakClause"] == "breakClauseYes"
        counts = journal_counts(journal)
        assert (counts["created"], counts["invalid"]) == (3, 1)  # 1: the superseded record


async def test_a_created_row_that_changed_is_noted_not_failed(tmp_path: Path) -> None:
    """A row changed after its contract was made: skipped, with a note, and no error.

    The note was folded into ``error`` (and the report's ``error`` field) of a row that
    did not fail.
    """
    async with SandboxServer(port=0, write_rate=None, read_rate=None) as server:
        rows = source_rows(2)
        journal = tmp_path / "job.db"
        async with emulator_client(server) as client:
            await run_job(keyed_job(client, server, rows, journal))
            rows[0]["contract_rentFrequency"] = "quarter"
            again = await run_job(keyed_job(client, server, rows, journal))
        changed = next(o for o in again if o.key == "ref:R-00000")
        assert (changed.state, changed.skipped, changed.error) == ("created", True, None)
        assert changed.note is not None and "bulk create does not update" in changed.note
        assert changed.to_json()["note"] == changed.note
        assert next(o for o in again if o.key == "ref:R-00001").note is None


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    columns = ["ref", "contract_name", "contract_rentFrequency", "contract_breakClause"]
    lines = [",".join(columns)]
    lines += [",".join(row.get(column, "") for column in columns) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def test_kill_9_mid_run_then_resume(tmp_path: Path) -> None:
    """SIGKILL the command with an answer lost; run again: every row created once, none twice."""
    faults = [FaultRule(CREATE, latency=(0.005, 0.015), lost=0.1)]
    async with command_emulator(faults) as server:
        team_id = team_and_template(server)[0]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(ROWS))
        command = start_command(server, source, journal)
        # Killed once a create's answer was lost (the row stays 'sending' until the job's
        # last rounds) and a few rows are recorded created.
        await wait_until(
            lambda: faults_seen(server, "lost") >= 1 and created_in(journal) >= 3, command
        )
        command.send_signal(signal.SIGKILL)
        code, output = await command.finish(LIMIT)
        assert code == -signal.SIGKILL, output
        killed = journal_counts(journal)
        assert sum(killed.values()) <= ROWS  # each row read has one record, no more
        names = await listed_names(server, team_id)
        assert len(names) == len(set(names)), "a contract was created twice"
        # The lost answer's contract exists, and the journal does not say it was created.
        unrecorded = len(names) - killed["created"]
        assert unrecorded >= 1 and killed["created"] >= 3

        server.set_faults([FaultRule(CREATE, lost=0.1)])
        job = await resume(server, source, journal)
        counts = await check_accounted(server, team_id, journal, ROWS)
        assert counts["created"] == ROWS
        assert job.summary is not None
        assert job.summary.reconciled >= unrecorded  # found by listing, not sent again


@pytest.mark.parametrize(
    ("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"]
)
async def test_ctrl_c_or_sigterm_drains_and_resumes(
    tmp_path: Path, number: signal.Signals, code: int
) -> None:
    """SIGINT or SIGTERM (docker stop): those in flight recorded, exit 128 + the signal.

    No new request after it; run again, all created. SIGTERM used to kill the job outright.
    """
    faults = [FaultRule(CREATE, latency=(0.01, 0.03))]
    async with command_emulator(faults) as server:
        team_id = team_and_template(server)[0]
        contracts = server.state.team_contracts[team_id]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(ROWS))
        command = start_command(server, source, journal)
        await wait_until(lambda: len(contracts) >= 3 and created_in(journal) >= 3, command)
        at_signal = len(contracts)
        assert at_signal < ROWS - CONCURRENCY, "the job ran too far before the signal"
        command.send_signal(number)
        exit_code, output = await command.finish(LIMIT)
        assert exit_code == code, output
        assert "stopping" in output
        stopped = journal_counts(journal)
        assert stopped["sending"] == 0  # drained: every request sent was recorded
        names = await listed_names(server, team_id)
        assert len(names) == len(set(names)) == stopped["created"]
        # Only the requests in flight at the signal were answered after it.
        assert stopped["created"] <= at_signal + CONCURRENCY

        server.set_faults([])
        job = await resume(server, source, journal)
        counts = await check_accounted(server, team_id, journal, ROWS)
        assert counts["created"] == ROWS
        assert job.summary is not None
        assert job.summary.created == ROWS - stopped["created"]


async def test_a_second_ctrl_c_aborts_and_the_rerun_reconciles(tmp_path: Path) -> None:
    """Two SIGINTs: exit 130 at once, a row in flight left 'sending'; the rerun settles all."""
    quick = [FaultRule(CREATE, latency=(0.005, 0.015))]
    async with command_emulator(quick) as server:
        team_id = team_and_template(server)[0]
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        write_csv(source, source_rows(ROWS))
        command = start_command(server, source, journal)
        await wait_until(lambda: created_in(journal) >= 3, command)
        # From here the service holds every create for a while: once one has arrived, the
        # first SIGINT has a request in flight to wait for, and the second (sent once the
        # first was taken, or the two would be one) comes long before it is answered.
        server.set_faults([FaultRule(CREATE, latency=0.2)])
        held = faults_seen(server, "latency")
        await wait_until(lambda: faults_seen(server, "latency") > held, command)
        command.send_signal(signal.SIGINT)
        await wait_until(lambda: "stopping" in command.output_so_far(), command)
        command.send_signal(signal.SIGINT)
        code, output = await command.finish(LIMIT)
        assert code == 130, output
        assert "aborting" in output and "Traceback" not in output
        aborted = journal_counts(journal)
        assert aborted["sending"] >= 1  # not waited for: its outcome is unknown

        server.set_faults([])
        job = await resume(server, source, journal)
        counts = await check_accounted(server, team_id, journal, ROWS)
        assert counts["created"] == ROWS
        assert job.summary is not None and job.summary.complete
