"""BulkJob through MockTransport: validation first, streaming, bounds, stopping, dry runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import pytest

from contractsdk import AuthenticationError, ConfigurationError, ConnectError, Request, Response
from contractsdk.bulk import BulkJob, IterableSource, JournalError, RowOutcome, SourceRow
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._readers import CHUNK_ROWS
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
                await asyncio.wait_for(first_outcome.wait(), JOB_LIMIT)
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


async def test_concurrency_bound_is_respected() -> None:
    """No more requests are in flight than ``concurrency``, and the bound is used."""
    service = FaultyService(delay=0.01)
    async with client_for(service) as client:
        await collect(job_for(client, list(rows(12)), concurrency=3))
    assert service.max_in_flight == 3
    assert len(service.contracts) == 12


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
        await asyncio.wait_for(task, JOB_LIMIT)
    assert len(service.posts) == 4
    assert job.summary is not None and job.summary.stopped
    assert job.summary.created == 4
    assert job.summary.created + job.summary.pending == len(outcomes) <= 50
    counts = journal_counts(path)
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
            await asyncio.wait_for(task, JOB_LIMIT)
    assert len(service.posts) == 3
    with contextlib.closing(Journal.connect(path, readonly=True)) as journal:
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
    counts = journal_counts(tmp_path / "j.db")
    assert counts["created"] == len(service.contracts) < 300
    assert counts["sending"] == 0


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


async def test_a_creator_the_service_does_not_know_is_refused_before_any_row() -> None:
    """created_by naming no user is refused up front, by a dry run too: nothing is sent.

    Unchecked, the dry run passed every row, and the run's creates came back 404 one by one.
    """
    service = FaultyService()
    async with client_for(service) as client:
        with pytest.raises(ConfigurationError, match="user 99999, who is to create the"):
            await job_for(client, list(rows(5)), created_by=99999).plan()
        with pytest.raises(ConfigurationError, match="User with id 99999 not found"):
            await collect(job_for(client, list(rows(5)), created_by=99999))
    assert service.posts == []


async def test_a_service_gone_mid_run_stops_the_job_with_rows_left_pending(
    tmp_path: Path,
) -> None:
    """Creates that cannot connect, ten in a row: the job stops; unsent rows stay pending.

    The job went on sending every row to a service that had gone, a few seconds each
    with the client's retries (a walkthrough's sat at 80 of 600 rows for 25 s, then
    failed the other 520); and a run with the service back resumes them all.
    """
    service = FaultyService()
    gone = {"on": True}

    def after_six(request: Request) -> Response | None:
        if gone["on"] and len(service.posts) > 6:
            raise ConnectError("could not connect to 127.0.0.1:9: refused (test)")
        return None

    service.before_create = after_six
    path = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(60)), journal=path, concurrency=2)
        with pytest.raises(ConnectError, match=r"127\.0\.0\.1:9"):
            await collect(job)
        summary = job.summary
        assert summary is not None
        assert summary.created == 6
        assert 10 <= summary.failed <= 12  # the ten in a row, and those already sent
        assert summary.pending == 60 - summary.created - summary.failed
        gone["on"] = False
        again = await collect(job_for(client, list(rows(60)), journal=path, concurrency=2))
    assert by_state(again) == {"created": 60}
    assert sum(o.skipped for o in again) == 6  # made by the first run
    assert sorted(service.names()) == sorted(row["contract_name"] for row in rows(60))


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
    with contextlib.closing(Journal.connect(path, readonly=True)) as journal:
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
