"""BulkJob through MockTransport, resumed and reconciled: lost answers, crashes, journals, twins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contractsdk import Request, Response, Retries
from contractsdk.bulk import BulkJob, JournalError, RowOutcome
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._records import PreparedRow
from contractsdk.testing import json_response
from tests._bulkkit import (
    JOB_LIMIT,
    TEAM,
    TEMPLATE,
    USER,
    FaultyService,
    by_state,
    client_for,
    collect,
    job_for,
    journal_counts,
    posted_names,
    rows,
)


async def test_summary_counts_and_a_second_run_skips_done_rows(tmp_path: Path) -> None:
    """The summary adds up; run again with the journal, created rows are skipped."""
    service = FaultyService()
    source = [*rows(8), {"contract_name": "Bad", "contract_rentFrequency": "x"}]
    journal = tmp_path / "job.db"
    async with client_for(service) as client:
        first = job_for(client, source, journal=journal)
        await collect(first)
        again = job_for(client, source, journal=journal)
        outcomes = await collect(again)
    assert first.summary is not None
    assert (first.summary.rows, first.summary.created, first.summary.invalid) == (9, 8, 1)
    assert first.summary.complete  # nothing left to send: invalid rows need the user
    second = again.summary
    assert second is not None
    assert (second.created, second.skipped, second.invalid, second.run) == (0, 8, 1, 2)
    assert all(o.skipped for o in outcomes if o.state == "created")
    assert len(service.posts) == 8
    assert second.job_id == first.summary.job_id


async def test_lost_answers_are_reconciled_not_created_again(tmp_path: Path) -> None:
    """A create whose answer is lost is found by listing the team; it is never sent twice."""
    service = FaultyService(lost=0.3, seed=3)
    async with client_for(service) as client:
        job = job_for(client, list(rows(60)), journal=tmp_path / "j.db", concurrency=6)
        outcomes = await collect(job)
    assert by_state(outcomes) == {"created": 60}
    reconciled = [o for o in outcomes if o.reconciled]
    assert reconciled
    assert job.summary is not None and job.summary.reconciled == len(reconciled)
    names = service.names()
    assert len(names) == len(set(names)) == 60
    sent = posted_names(service)
    for outcome in reconciled:
        assert sent.count(outcome.name or "") == 1  # found, not re-created
        assert outcome.contract_id in service.contracts


async def test_client_retries_with_a_service_that_honours_keys(tmp_path: Path) -> None:
    """With the client's retries on, a lost answer is replayed under the row's key: no twin."""
    service = FaultyService(lost=0.3, seed=3, honour_keys=True)
    fast = Retries(attempts=3, wait_initial=0.0, wait_max=0.0)
    async with client_for(service, retries=fast) as client:
        job = job_for(client, list(rows(60)), journal=tmp_path / "j.db", concurrency=6)
        outcomes = await collect(job)
    assert by_state(outcomes) == {"created": 60}
    assert len(service.names()) == len(set(service.names())) == 60
    keys = [request.headers["idempotency-key"] for request in service.posts]
    assert len(set(keys)) == 60  # one stable key per row, reused by every attempt


async def test_no_twins_when_the_service_ignores_keys(tmp_path: Path) -> None:
    """Service ignoring keys: the job never lets the client replay an ambiguous create.

    Outside a job the client's retries would replay a lost create under its key, and a
    service that ignores the key would make a twin; the job turns those replays off
    (keys_not_trusted) and reconciles by listing before it sends again.
    """
    fast = Retries(attempts=3, wait_initial=0.0, wait_max=0.0)
    blind = FaultyService(lost=0.3, seed=3, honour_keys=False)
    async with client_for(blind, retries=fast) as client:
        outcomes = await collect(job_for(client, list(rows(60)), journal=tmp_path / "a.db"))
    assert by_state(outcomes) == {"created": 60}
    assert len(blind.names()) == len(set(blind.names())) == 60
    assert any(outcome.reconciled for outcome in outcomes)  # found by listing, not re-sent


async def test_unknown_outcome_not_found_is_sent_again(tmp_path: Path) -> None:
    """A reset before processing is unknown too; the listing shows no contract, so resend."""
    service = FaultyService(reset=0.3, seed=5)
    async with client_for(service) as client:
        outcomes = await collect(job_for(client, list(rows(40)), journal=tmp_path / "j.db"))
    created = [o for o in outcomes if o.state == "created"]
    names = service.names()
    assert len(names) == len(set(names)) == len(created)
    assert any(o.attempts > 1 for o in created)
    assert all(o.state in ("created", "failed") for o in outcomes)


async def test_a_row_left_sending_by_a_crash_is_reconciled_first(tmp_path: Path) -> None:
    """A journal row left 'sending' whose contract exists is found, and not sent again."""
    service = FaultyService()
    path = tmp_path / "job.db"
    source = list(rows(3))
    async with client_for(service) as client:
        probe = job_for(client, source, journal=path)
        # What a killed run leaves: the row marked "sending" and the contract created.
        values = {
            "contract_name": "Flat 1",
            "contract_rentFrequency": "month",
            "contract_breakClause": "breakClauseNo",
        }
        await client.contracts.create(TEAM, template_id=TEMPLATE, created_by=USER, values=values)
        _leave_sending(path, probe, number=2, row=source[1], values=values)
        posts_before = len(service.posts)
        outcomes = await collect(job_for(client, source, journal=path))
    flat1 = next(o for o in outcomes if o.name == "Flat 1")
    assert flat1.state == "created" and flat1.reconciled and flat1.skipped
    assert len(service.posts) - posts_before == 2  # Flat 0 and Flat 2 only
    assert sorted(service.names()) == ["Flat 0", "Flat 1", "Flat 2"]


def _digest_of(row: dict[str, str]) -> str:
    from contractsdk.bulk._rows import content_digest

    return content_digest(row, [])


def _leave_sending(
    path: Path, probe: BulkJob, *, number: int, row: dict[str, str], values: dict[str, str]
) -> None:
    """Leave a journal as a killed run would: this row registered and marked "sending"."""
    journal = Journal.connect(path)
    journal.claim(probe.job_id, probe.identity, "0.1.0")
    run = journal.begin_run("create", None)
    key = "sha:" + _digest_of(row)
    prepared = PreparedRow(
        number=number,
        line=None,
        key=key,
        key_label="the row",
        digest=key[4:],
        name=row["contract_name"],
        team_id=TEAM,
        template_id=TEMPLATE,
        values=values,
    )
    journal.register(run, [prepared])
    journal.mark_sending(key)
    journal.close()


async def test_a_journal_from_another_job_is_refused(tmp_path: Path) -> None:
    """Resuming with another job's journal is refused, naming both job ids; nothing is sent."""
    service = FaultyService()
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        first = job_for(client, list(rows(2)), journal=path)
        await collect(first)
        other = job_for(
            client, list(rows(2)), journal=path, team_id=FaultyService().service.OTHER_TEAM
        )
        with pytest.raises(JournalError) as caught:
            await collect(other)
    assert first.job_id in str(caught.value) and other.job_id in str(caught.value)
    assert len(service.posts) == 2


async def test_a_contract_the_team_already_has_is_not_created_again(tmp_path: Path) -> None:
    """Lost journal, same rows: names already in the team are refused, not duplicated."""
    service = FaultyService()
    async with client_for(service) as client:
        await collect(job_for(client, list(rows(3)), journal=tmp_path / "a.db"))
        outcomes = await collect(job_for(client, list(rows(4)), journal=tmp_path / "b.db"))
    assert by_state(outcomes) == {"invalid": 3, "created": 1}
    assert all("already has a contract named" in o.reasons[0] for o in outcomes if o.reasons)
    assert len(service.contracts) == 4


async def test_rounds_exhausted_leave_rows_failed_for_retry(tmp_path: Path) -> None:
    """A row that keeps failing ends 'failed' with its error; retry() sends it later."""
    service = FaultyService()
    broken = {"on": True}

    def always_503(request: Request) -> Response | None:
        if broken["on"]:
            return json_response(503, {"status": 503, "message": "down"})
        return None

    service.before_create = always_503
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(3)), journal=path, rounds=1)
        outcomes = await collect(job)
        assert by_state(outcomes) == {"failed": 3}
        assert all(o.attempts == 2 and "503" in (o.error or "") for o in outcomes)
        broken["on"] = False
        again = await BulkJob.from_journal(client, path, round_delay=0)
        retried = await asyncio.wait_for(_all(again.retry()), JOB_LIMIT)
    assert by_state(retried) == {"created": 3}
    assert sorted(service.names()) == ["Flat 0", "Flat 1", "Flat 2"]


async def _all(outcomes: AsyncIterator[RowOutcome]) -> list[RowOutcome]:
    return [outcome async for outcome in outcomes]


async def test_latest_template_is_pinned_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a template, the newest is used, and later runs keep using it."""
    service = FaultyService()
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = BulkJob(
            client,
            list(rows(2)),
            team_id=TEAM,
            contract_type_id=1,
            created_by=USER,
            journal=path,
            round_delay=0,
        )
        await collect(job)
        assert {c["body"]["template_id"] for c in service.contracts.values()} == {150}
        monkeypatch.setattr(service.service, "TEMPLATES", [{"id": 151, "version": "11"}])
        again = BulkJob(
            client,
            list(rows(2, start=2)),
            team_id=TEAM,
            contract_type_id=1,
            created_by=USER,
            journal=path,
            round_delay=0,
        )
        await collect(again)
    assert {c["body"]["template_id"] for c in service.contracts.values()} == {150}


async def test_plan_counts_unknown_outcomes_it_would_reconcile(tmp_path: Path) -> None:
    """Rows left 'sending' are counted as unknown; the dry run reconciles them on a copy."""
    path = tmp_path / "job.db"
    service = FaultyService()
    source = list(rows(2))
    async with client_for(service) as client:
        probe = job_for(client, source, journal=path)
        journal = Journal.connect(path)
        journal.claim(probe.job_id, probe.identity, "0.1.0")
        run = journal.begin_run("create", None)
        key = "sha:" + _digest_of(source[0])
        prepared = PreparedRow(
            number=1,
            line=None,
            key=key,
            key_label="the row",
            digest=key[4:],
            name="Flat 0",
            team_id=TEAM,
            template_id=TEMPLATE,
            values=source[0],
        )
        journal.register(run, [prepared])
        journal.mark_sending(key)
        journal.close()
        plan = await job_for(client, source, journal=path).plan()
    assert (plan.unknown, plan.to_send) == (1, 2)  # not found by the listing: would resend
    assert journal_counts(path)["sending"] == 1  # unchanged


async def test_a_row_with_twins_is_never_sent_again_until_sorted_out(tmp_path: Path) -> None:
    """Two contracts carry a sent row's name: no run or retry sends it; fix one, it settles."""
    service = FaultyService()
    path = tmp_path / "job.db"
    source = list(rows(2))
    async with client_for(service) as client:
        probe = job_for(client, source, journal=path)
        _leave_sending(path, probe, number=1, row=source[0], values=source[0])
        for _ in range(2):  # the twins, made outside the job's control
            await client.contracts.create(
                TEAM, template_id=TEMPLATE, created_by=USER, values=source[0]
            )
        posts = len(service.posts)

        outcomes = await collect(job_for(client, source, journal=path))
        flat0 = next(o for o in outcomes if o.name == "Flat 0")
        assert flat0.state == "failed" and "check them by hand" in (flat0.error or "")
        again = await BulkJob.from_journal(client, path, round_delay=0)
        await asyncio.wait_for(_all(again.retry()), JOB_LIMIT)
        assert posted_names(service)[posts:] == ["Flat 1"]  # Flat 0 never sent again

        twin = max(cid for cid, c in service.contracts.items() if c["name"] == "Flat 0")
        await client.contracts.delete(twin)
        settled = await collect(job_for(client, source, journal=path))
    flat0 = next(o for o in settled if o.name == "Flat 0")
    assert flat0.state == "created" and flat0.reconciled
    assert sorted(service.names()) == ["Flat 0", "Flat 1"]
