"""BulkJob through MockTransport: validation first, streaming, bounds, reconciliation, resume."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from contractsdk import AuthenticationError, ConfigurationError, Request, Response, Retries
from contractsdk.bulk import BulkJob, IterableSource, JournalError, RowOutcome, SourceRow
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._readers import CHUNK_ROWS
from contractsdk.bulk._records import PreparedRow
from contractsdk.testing import json_response
from tests._bulkkit import TEAM, TEMPLATE, USER, FaultyService, client_for, rows

#: Every test that waits on the job gives up after this long (2 shared cores: generous).
LIMIT = 60.0


def job_for(client: Any, source: Any, **options: Any) -> BulkJob:
    options.setdefault("team_id", TEAM)
    options.setdefault("template_id", TEMPLATE)
    options.setdefault("created_by", USER)
    options.setdefault("round_delay", 0.0)
    return BulkJob(client, source, **options)


async def collect(job: BulkJob) -> list[RowOutcome]:
    async def run() -> list[RowOutcome]:
        return [outcome async for outcome in job.run()]

    return await asyncio.wait_for(run(), LIMIT)


def by_state(outcomes: list[RowOutcome]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    return counts


def posted_names(service: FaultyService) -> list[str]:
    names = []
    for request in service.posts:
        fields = request.json()["fields"]
        names.append(next(f["value"] for f in fields if f["name"] == "contract_name"))
    return names


async def test_invalid_rows_are_never_sent(tmp_path: Path) -> None:
    """Rows that break the terms are reported with reasons and cost no request."""
    service = FaultyService()
    source = [
        *rows(5),
        {"contract_name": "Bad option", "contract_rentFrequency": "fortnight"},
        {
            "contract_name": "Not applicable",
            "contract_rentFrequency": "week",
            "contract_breakClause": "breakClauseYes",
        },
        {"contract_rentFrequency": "week"},  # no name: cannot be found again
        {"contract_name": "Typo", "contract_rentFreqency": "week"},
    ]
    async with client_for(service) as client:
        outcomes = await collect(job_for(client, source, journal=tmp_path / "j.db"))
    assert by_state(outcomes) == {"created": 5, "invalid": 4}
    assert len(service.posts) == 5
    assert "Bad option" not in posted_names(service)
    invalid = {o.row: o for o in outcomes if o.state == "invalid"}
    assert "'fortnight' is not an option" in invalid[6].reasons[0]
    assert "applies only when" in invalid[7].reasons[0]
    assert invalid[8].reasons[0].startswith("contract_name: no value; every row needs one")
    assert "did you mean 'contract_rentFrequency'?" in invalid[9].reasons[0]


class FewAtATime(IterableSource):
    """An iterable handed to the job 4 rows at a time (the default is ``CHUNK_ROWS``)."""

    def chunks(self, size: int = CHUNK_ROWS) -> AsyncGenerator[list[SourceRow], None]:
        return super().chunks(4)


async def test_outcomes_stream_before_the_input_ends() -> None:
    """The first outcomes arrive while the source is still being read (nothing is held)."""
    service = FaultyService()
    first_outcome = asyncio.Event()
    read_after_first: list[int] = []

    async def source() -> AsyncIterator[dict[str, str]]:
        for index, row in enumerate(rows(40)):
            if index == 20:
                # Only continue once an outcome has been seen: the job must not wait for
                # the whole input (or more than its queues hold) before answering.
                await asyncio.wait_for(first_outcome.wait(), LIMIT)
                read_after_first.append(index)
            yield row

    async with client_for(service) as client:
        job = job_for(client, FewAtATime(source()), concurrency=4)
        seen = 0
        async for _outcome in job.run():
            seen += 1
            first_outcome.set()
    assert seen == 40
    assert read_after_first == [20]


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


async def test_concurrency_bound_is_respected() -> None:
    """No more requests are in flight than ``concurrency``, and the bound is used."""
    service = FaultyService(delay=0.01)
    async with client_for(service) as client:
        await collect(job_for(client, list(rows(12)), concurrency=3))
    assert service.max_in_flight == 3
    assert len(service.contracts) == 12


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


async def test_duplicate_names_in_the_input_are_refused() -> None:
    """Two rows naming the same contract: the second is invalid (matching would be ambiguous)."""
    service = FaultyService()
    source = [*rows(2), {"contract_name": "Flat 0", "contract_rentFrequency": "month"}]
    async with client_for(service) as client:
        outcomes = await collect(job_for(client, source))
    invalid = [o for o in outcomes if o.state == "invalid"]
    assert len(invalid) == 1 and "also used by row 1" in invalid[0].reasons[0]


async def test_stop_drains_in_flight_requests_and_sends_no_more(tmp_path: Path) -> None:
    """After stop(), requests in flight finish and are recorded; no new request starts."""
    service = FaultyService()
    service.gate = asyncio.Event()
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(50)), journal=path, concurrency=4)
        outcomes: list[RowOutcome] = []

        async def consume() -> None:
            async for outcome in job.run():
                outcomes.append(outcome)

        task = asyncio.create_task(consume())
        for _ in range(500):
            if len(service.posts) == 4:
                break
            await asyncio.sleep(0.01)
        assert len(service.posts) == 4
        job.stop()
        service.gate.set()
        await asyncio.wait_for(task, LIMIT)
    assert len(service.posts) == 4
    assert job.summary is not None and job.summary.stopped
    assert job.summary.created == 4
    assert job.summary.created + job.summary.pending == len(outcomes) <= 50
    counts = Journal.connect(path, readonly=True).counts()
    assert counts["created"] == 4 and counts["sending"] == 0


async def test_cancelling_the_consumer_records_requests_in_flight(tmp_path: Path) -> None:
    """Cancelling the task that iterates run() drains and records in-flight requests."""
    service = FaultyService()
    service.gate = asyncio.Event()
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(30)), journal=path, concurrency=3)

        async def consume() -> None:
            async for _outcome in job.run():
                pass

        task = asyncio.create_task(consume())
        for _ in range(500):
            if len(service.posts) == 3:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.05)
        service.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, LIMIT)
    assert len(service.posts) == 3
    journal = Journal.connect(path, readonly=True)
    assert journal.counts()["created"] == 3
    assert journal.counts()["sending"] == 0
    assert journal.runs()[-1]["outcome"] == "cancelled"


async def test_breaking_out_early_stops_the_job(tmp_path: Path) -> None:
    """Leaving the loop (aclosing) stops sending; every request made is recorded."""
    service = FaultyService()
    async with client_for(service) as client:
        job = job_for(client, list(rows(300)), journal=tmp_path / "j.db", concurrency=2)
        outcomes = job.run()
        async with contextlib.aclosing(outcomes):  # type: ignore[type-var]  # an async generator
            async for _outcome in outcomes:
                break
    journal = Journal.connect(tmp_path / "j.db", readonly=True)
    assert journal.counts()["created"] == len(service.contracts) < 300
    assert journal.counts()["sending"] == 0


async def test_bad_credentials_stop_the_job() -> None:
    """A 401 cannot get better row by row: the job stops and raises it."""

    async def handler(request: Request) -> Response:
        if request.method == "POST":
            return json_response(401, {"status": 401, "error": "Unauthorized"})
        return FaultyService().service(request)

    async with client_for(handler) as client:
        job = job_for(client, list(rows(100)), concurrency=2)
        with pytest.raises(AuthenticationError, match="401"):
            await collect(job)
    assert job.summary is not None and job.summary.stopped
    assert job.summary.failed <= 4  # only the requests already started


async def test_retryable_failures_get_more_rounds() -> None:
    """A 503 defers the row to a later round; it is created then (after a listing)."""
    service = FaultyService()
    failures = {"Flat 2", "Flat 5"}

    def fail_once(request: Request) -> Response | None:
        name = next(f["value"] for f in request.json()["fields"] if f["name"] == "contract_name")
        if name in failures:
            failures.discard(name)
            return json_response(503, {"status": 503, "message": "busy"})
        return None

    service.before_create = fail_once
    async with client_for(service) as client:
        job = job_for(client, list(rows(8)))
        outcomes = await collect(job)
    assert by_state(outcomes) == {"created": 8}
    assert {o.name: o.attempts for o in outcomes}["Flat 2"] == 2


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
        retried = await asyncio.wait_for(_all(again.retry()), LIMIT)
    assert by_state(retried) == {"created": 3}
    assert sorted(service.names()) == ["Flat 0", "Flat 1", "Flat 2"]


async def _all(outcomes: AsyncIterator[RowOutcome]) -> list[RowOutcome]:
    return [outcome async for outcome in outcomes]


async def test_dry_run_sends_nothing_and_changes_nothing(tmp_path: Path) -> None:
    """plan() validates and estimates; no create is sent and the journal is untouched."""
    service = FaultyService()
    path = tmp_path / "job.db"
    source = [*rows(10), {"contract_name": "Bad", "contract_rentFrequency": "x"}]
    async with client_for(service) as client:
        await collect(job_for(client, source[:4], journal=path))
        before = path.read_bytes()
        seen: list[RowOutcome] = []
        plan = await job_for(client, source, journal=path).plan(on_outcome=seen.append)
        assert path.read_bytes() == before
    assert (plan.rows, plan.to_send, plan.invalid, plan.skipped) == (11, 6, 1, 4)
    assert plan.write_rate == 25.0 and plan.rate_source == "environment"
    assert plan.estimated_seconds == pytest.approx(5 / 25.0)
    assert len(service.posts) == 4
    assert len(seen) == 11


async def test_dry_run_uses_a_given_rate() -> None:
    """A rate given to plan() is the one the estimate uses."""
    async with client_for(FaultyService()) as client:
        plan = await job_for(client, list(rows(101))).plan(write_rate=100.0)
    assert plan.estimated_seconds == pytest.approx(1.0)
    assert plan.rate_source == "given"


async def test_per_row_targets_from_columns() -> None:
    """Team and template columns target each row; a bad target makes its rows invalid."""
    service = FaultyService()
    source = [
        {"team": str(TEAM), "template": str(TEMPLATE), **next(rows(1, start=1))},
        {"team": "71", "template": str(TEMPLATE), **next(rows(1, start=2))},
        {"team": "x", "template": str(TEMPLATE), **next(rows(1, start=3))},
    ]
    async with client_for(service) as client:
        job = BulkJob(
            client,
            source,
            team_column="team",
            template_column="template",
            created_by=USER,
            round_delay=0,
        )
        outcomes = await collect(job)
    teams = sorted(contract["team"] for contract in service.contracts.values())
    assert teams == [TEAM, 71]
    bad = next(o for o in outcomes if o.state == "invalid")
    assert bad.reasons == ("the 'team' column must hold a numeric id, not 'x'",)


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


async def test_configuration_is_checked_before_anything_runs(tmp_path: Path) -> None:
    """Missing targets, bad concurrency, a missing journal directory: refused at once."""
    async with client_for(FaultyService()) as client:
        with pytest.raises(ConfigurationError, match="give team_id"):
            BulkJob(client, [], template_id=1, created_by=USER)
        with pytest.raises(ConfigurationError, match="give template_id"):
            BulkJob(client, [], team_id=TEAM, created_by=USER)
        with pytest.raises(ConfigurationError, match="concurrency"):
            job_for(client, [], concurrency=0)
        job = job_for(client, [], journal=tmp_path / "missing" / "job.db")
        with pytest.raises(JournalError, match="does not exist"):
            await collect(job)
        with pytest.raises(ConfigurationError, match="runs once"):
            await collect(job)


async def test_report_json_round_trips() -> None:
    """An outcome's JSON form is plain JSON (lists, not tuples)."""
    outcome = RowOutcome(row=1, line=2, key="ref:A", state="invalid", reasons=("x",))
    assert json.loads(json.dumps(outcome.to_json()))["reasons"] == ["x"]


async def test_an_unexpected_error_stops_the_job_and_is_raised(tmp_path: Path) -> None:
    """A bug below the job (here, in the transport) is recorded on its row, then raised."""
    service = FaultyService()

    def boom(request: Request) -> Response | None:
        raise RuntimeError("boom")

    service.before_create = boom
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(50)), journal=path, concurrency=2)
        with pytest.raises(RuntimeError, match="boom"):
            await collect(job)
    assert len(service.posts) <= 2 + 2  # the first failures, and requests already started
    journal = Journal.connect(path, readonly=True)
    failed = journal.records(("failed",))
    assert failed and all(r.error == "RuntimeError: boom" for r in failed)
    assert journal.counts()["sending"] == 0
    assert journal.runs()[-1]["outcome"] == "error: boom"


async def test_plan_then_run_a_file_but_not_an_iterator(tmp_path: Path) -> None:
    """A file can be planned then run by one job; an iterator is read once, and says so."""
    source = tmp_path / "rows.csv"
    source.write_text("contract_name,contract_rentFrequency\nFlat 1,week\nFlat 2,week\n")
    service = FaultyService()
    async with client_for(service) as client:
        job = job_for(client, source, journal=tmp_path / "j.db")
        plan = await job.plan()
        assert (plan.to_send, len(service.posts)) == (2, 0)
        assert by_state(await collect(job)) == {"created": 2}
        once = job_for(client, iter(list(rows(2))))
        await once.plan()
        with pytest.raises(ConfigurationError, match="read once"):
            await collect(once)


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
    assert Journal.connect(path, readonly=True).counts()["sending"] == 1  # unchanged


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
        await asyncio.wait_for(_all(again.retry()), LIMIT)
        assert posted_names(service)[posts:] == ["Flat 1"]  # Flat 0 never sent again

        twin = max(cid for cid, c in service.contracts.items() if c["name"] == "Flat 0")
        await client.contracts.delete(twin)
        settled = await collect(job_for(client, source, journal=path))
    flat0 = next(o for o in settled if o.name == "Flat 0")
    assert flat0.state == "created" and flat0.reconciled
    assert sorted(service.names()) == ["Flat 0", "Flat 1"]
