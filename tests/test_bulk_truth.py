"""Bulk tells the truth: every row counted once, honest rates, and what reaches the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import pickle
from pathlib import Path

import pytest

from contractsdk import ContractClient, RateLimits, Request, Response
from contractsdk.bulk import BulkJob, BulkSummary, RowOutcome, UnknownColumnsError, example_csv
from contractsdk.bulk._rows import suggest_term
from contractsdk.testing import MockTransport
from tests._bulkkit import (
    JOB_LIMIT,
    FaultyService,
    client_for,
    job_for,
    journal_counts,
    rows,
)
from tests.conftest import API_KEY


def write_csv(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["contract_name", "contract_rentFrequency"])
        for row in rows(count):
            if row["contract_rentFrequency"] == "month":
                row["contract_rentFrequency"] = "week"
            writer.writerow([row["contract_name"], row["contract_rentFrequency"]])
    return path


def in_one_state(summary: BulkSummary) -> int:
    return (
        summary.created
        + summary.skipped
        + summary.invalid
        + summary.failed
        + summary.unknown
        + summary.pending
    )


async def stop_after(job: BulkJob, created: int) -> list[RowOutcome]:
    """Iterate the job; stop() it when ``created`` rows are created, and read it to its end."""
    seen: list[RowOutcome] = []

    async def consume() -> None:
        async for outcome in job.run():
            seen.append(outcome)
            if sum(o.state == "created" for o in seen) == created:
                job.stop()

    await asyncio.wait_for(consume(), JOB_LIMIT)
    return seen


async def abort_in_flight(job: BulkJob, created: int, gate: Gate) -> None:
    """Iterate the job; abort it once ``created`` rows are created and a create is held.

    The abort comes from outside the loop that reads the outcomes, as the CLI's second
    Ctrl-C does: the job keeps sending while it waits, however slow the machine.
    """
    enough = asyncio.Event()

    async def consume() -> None:
        count = 0
        outcomes = job.run()
        async with contextlib.aclosing(outcomes):  # type: ignore[type-var]  # an async generator
            async for outcome in outcomes:
                count += outcome.state == "created"
                if count >= created:
                    enough.set()

    async def both() -> None:
        await enough.wait()
        await gate.holding.wait()

    reading, ready = asyncio.create_task(consume()), asyncio.create_task(both())
    done, _ = await asyncio.wait({reading, ready}, timeout=JOB_LIMIT, return_when="FIRST_COMPLETED")
    assert ready in done, "the job ended or stalled before a create was held"
    job.abort()
    reading.cancel()  # as the CLI cancels its task
    with contextlib.suppress(asyncio.CancelledError):
        await reading


class Gate:
    """A service in front of another, holding every create after the first ``passed``.

    The held creates go on when :meth:`set` is called.

    :attr:`holding` is set once a create is held: sent, so in flight for the job.
    """

    def __init__(self, service: FaultyService, passed: int) -> None:
        self.service = service
        self.passed = passed
        self.opened = asyncio.Event()
        self.holding = asyncio.Event()

    def set(self) -> None:
        """Let the held creates through, and every later one."""
        self.opened.set()

    async def __call__(self, request: Request) -> Response:
        if request.method == "POST":
            self.passed -= 1
            if self.passed < 0:
                self.holding.set()
                await self.opened.wait()
        return await self.service(request)


async def test_a_finished_run_counts_every_row_once(tmp_path: Path) -> None:
    """Finished: created + invalid + ... = rows of the input."""
    service = FaultyService()
    source = [*rows(8), {"contract_name": "Bad", "contract_rentFrequency": "x"}]
    async with client_for(service) as client:
        job = job_for(client, source, journal=tmp_path / "j.db")
        _ = [o async for o in job.run()]
    assert job.summary is not None
    assert (job.summary.rows, job.summary.created, job.summary.invalid) == (9, 8, 1)
    assert in_one_state(job.summary) == 9 and job.summary.sent == 8


async def test_a_stopped_run_counts_unsent_and_unread_rows_as_not_sent(tmp_path: Path) -> None:
    """Stop (Ctrl-C, drain) mid-file: rows never read are counted 'not sent', none lost."""
    service = FaultyService()
    source = write_csv(tmp_path / "rows.csv", 700)  # more than one chunk of input
    async with client_for(service) as client:
        job = job_for(client, source, journal=tmp_path / "j.db", concurrency=2)
        await stop_after(job, 5)
    summary = job.summary
    assert summary is not None and summary.stopped
    assert summary.rows == in_one_state(summary) == 700
    counts = journal_counts(tmp_path / "j.db")
    assert counts["sending"] == 0 and summary.unknown == 0
    assert summary.created == counts["created"] == len(service.contracts)
    assert summary.pending == 700 - counts["created"]


async def test_an_aborted_run_counts_rows_in_flight_as_unknown(tmp_path: Path) -> None:
    """Abort (second Ctrl-C): the summary agrees with the journal, row for row."""
    service = FaultyService()
    gate = Gate(service, 5)
    source = write_csv(tmp_path / "rows.csv", 600)
    async with client_for(gate) as client:
        job = job_for(client, source, journal=tmp_path / "j.db", concurrency=3)
        await abort_in_flight(job, 5, gate)
        gate.set()
    summary = job.summary
    assert summary is not None and summary.stopped
    counts = journal_counts(tmp_path / "j.db")
    assert summary.rows == in_one_state(summary) == 600  # not "rows 5 / created 5"
    assert summary.created == counts["created"] >= 5
    # A request cut off in flight may still have been processed: that is "unknown".
    assert counts["created"] <= len(service.contracts) <= counts["created"] + counts["sending"]
    assert summary.unknown == counts["sending"] > 0
    registered_pending = counts["pending"]
    assert summary.pending >= registered_pending  # plus the rows never read


async def test_the_last_progress_of_a_bad_quote_file_is_complete(tmp_path: Path) -> None:
    """A quote left open: both rows are counted (1 invalid, 1 created), total 2 of 2."""
    path = tmp_path / "q.csv"
    path.write_text('contract_name,contract_rentFrequency\n"Flat 1,week\nFlat 2,week\n')
    service = FaultyService()
    async with client_for(service) as client:
        job = job_for(client, path)
        _ = [o async for o in job.run()]
        progress = job.progress()
    assert job.summary is not None
    assert (job.summary.rows, job.summary.invalid, job.summary.created) == (2, 1, 1)
    assert (progress.done, progress.total, progress.finished, progress.eta) == (2, 2, True, None)


async def test_a_resumed_run_rates_only_the_rows_it_sent(tmp_path: Path) -> None:
    """Skipped rows are done but not sent: they do not count in the rate."""
    service = FaultyService()
    async with client_for(service) as client:
        _ = [o async for o in job_for(client, list(rows(6)), journal=tmp_path / "j.db").run()]
        job = job_for(client, list(rows(8)), journal=tmp_path / "j.db")
        _ = [o async for o in job.run()]
        progress = job.progress()
    assert (progress.done, progress.skipped, progress.sent) == (8, 6, 2)
    assert job.summary is not None and job.summary.sent == 2


async def test_progress_stops_its_clock_when_the_job_stops(tmp_path: Path) -> None:
    """After stop(), elapsed no longer grows and there is no ETA."""
    service = FaultyService()
    gate = Gate(service, 2)
    seen: list[RowOutcome] = []
    async with client_for(gate) as client:
        job = job_for(client, list(rows(20)), concurrency=2)

        async def consume() -> None:
            async for outcome in job.run():
                seen.append(outcome)
                if len(seen) == 2:
                    job.stop()
                    first = job.progress()
                    await asyncio.sleep(0)
                    assert job.progress().elapsed == first.elapsed
                    assert first.stopping and first.eta is None
                    gate.set()

        await asyncio.wait_for(consume(), JOB_LIMIT)
    assert job.summary is not None and in_one_state(job.summary) == 20


async def test_a_dry_run_estimates_from_the_rate_the_limiter_would_use() -> None:
    """A custom base URL has no documented rate: the limiter's pace is the estimate."""
    service = FaultyService()
    async with ContractClient(
        api_key=API_KEY,
        base_url="http://127.0.0.1:9",
        transport=MockTransport(service),
        rate_limits=RateLimits(read=1000),  # reads unpaced; the write rate is unknown
        retries=None,
    ) as client:
        assert client.environment.write_rate is None
        plan = await job_for(client, list(rows(11))).plan()
    assert plan.write_rate is not None and plan.estimated_seconds is not None
    assert plan.rate_source in ("service", "learning")


async def test_a_configured_rate_comes_first() -> None:
    """The client's own write limit is what the run is paced at."""
    limits = RateLimits(read=1000, write=5)  # reads unpaced: the plan reads first
    async with client_for(FaultyService(), rate_limits=limits) as client:
        plan = await job_for(client, list(rows(11))).plan()
    assert (plan.write_rate, plan.rate_source, plan.estimated_seconds) == (5.0, "configured", 2.0)


async def test_an_unknown_column_gets_a_neutral_message_and_no_unrelated_term(
    tmp_path: Path,
) -> None:
    """No Python syntax in the message; a column near no term gets no suggestion."""
    path = tmp_path / "c.csv"
    path.write_text("contract_name,reference,contract_rentFrequncy\nFlat,R1,week\n")
    async with client_for(FaultyService()) as client:
        with pytest.raises(UnknownColumnsError) as caught:
            _ = [o async for o in job_for(client, path).run()]
    error = caught.value
    assert error.suggestions == {
        "reference": None,
        "contract_rentFrequncy": "contract_rentFrequency",
    }
    assert "columns={" not in str(error) and "--column" not in str(error)
    assert pickle.loads(pickle.dumps(error)).suggestions == error.suggestions


def test_suggestions_need_a_close_name() -> None:
    """A misspelling or a missing prefix is suggested; a mere shared word is not."""
    terms = ["contract_name", "contract_bankReference", "contract_rentAmount"]
    assert suggest_term("rentAmout", terms) == "contract_rentAmount"
    assert suggest_term("Contract Name", terms) == "contract_name"
    assert suggest_term("reference", terms) is None


async def test_the_lock_file_is_removed_when_the_job_ends(tmp_path: Path) -> None:
    """No *.db.lock is left beside the journal (for git to see)."""
    async with client_for(FaultyService()) as client:
        job = job_for(client, list(rows(3)), journal=tmp_path / "j.db")
        _ = [o async for o in job.run()]
    assert not (tmp_path / "j.db.lock").exists()
    assert (tmp_path / "j.db").exists()


def test_the_example_csv_ships_in_the_package() -> None:
    """example_csv() reads the package's copy: the same file as examples/tenancies.csv."""
    text = example_csv()
    root = Path(__file__).resolve().parents[1]
    assert text == (root / "examples" / "tenancies.csv").read_text(encoding="utf-8")
    header = next(csv.reader(io.StringIO(text)))
    assert header[:2] == ["reference", "contract_name"]


def test_the_rate_leaves_out_the_time_spent_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resumed run skips 5,000 rows for 50 s, then sends 100 in 1 s: 100 rows/s, not 2."""
    from types import SimpleNamespace

    from contractsdk._logging import ClientStats
    from contractsdk.bulk import _tally

    now = [0.0]
    monkeypatch.setattr(f"{_tally.__name__}.time", SimpleNamespace(monotonic=lambda: now[0]))
    stats = ClientStats(
        requests=0, responses={}, retries=0, throttled=0, limiter_wait=0.0, token_requests=0
    )
    tally = _tally.Tally(stats_start=stats, started=0.0, rate_from=0.0)
    skipped = SimpleNamespace(skipped=True, incomplete=False, state="created")
    created = SimpleNamespace(skipped=False, incomplete=False, state="created")
    for _ in range(5000):
        now[0] += 0.01
        tally.count(skipped, sent=False)  # type: ignore[arg-type]
    for _ in range(100):
        now[0] += 0.01
        tally.count(created, sent=True)  # type: ignore[arg-type]
    progress = tally.progress(stats)
    assert progress.sent == 100
    assert progress.rate == pytest.approx(100.0)
    assert progress.elapsed == pytest.approx(51.0)
