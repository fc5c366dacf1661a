"""What a bulk job reports: one outcome per row, a summary, a plan, and its progress."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs

from contractsdk.bulk._records import JournalRecord, RowState

__all__ = ["BulkPlan", "BulkProgress", "BulkSummary", "RowOutcome", "format_progress"]


@attrs.frozen(kw_only=True)
class RowOutcome:
    """The outcome of one input row.

    Attributes:
        row: The row's 1-based number among the input's data records.
        line: The file line where the row starts (None for an iterable).
        key: The row's stable key (``ref:<your reference>`` or ``sha:<content hash>``).
        state: ``created``, ``invalid``, ``failed``; ``sending`` when the outcome is still
            unknown (the next run reconciles it); ``pending`` when the job stopped before
            sending the row (or, in a dry run, when it would be sent).
        name: The contract's name (the match term's value), if the row has one.
        contract_id: The contract's id, when created.
        attempts: Attempts for this row over every run: one per create call, plus the
            client's extra attempts when a call failed after retrying (a call that
            succeeded after retries counts one; the summary's ``retries`` has the rest).
        error: Why the row failed.
        note: Something worth telling about a row that did not fail: e.g. that it changed
            since its contract was created (bulk create does not update contracts).
        reasons: Why the row is invalid, one problem each (``path: message``).
        skipped: True when the contract was created by an earlier run of the job.
        reconciled: True when the contract was found by listing the team after an
            unknown outcome, rather than confirmed by the create call's answer.
        parties_missing: For a created contract, the job's parties not added to it yet
            (the row is *incomplete*: ``bulk status`` lists it, ``bulk retry`` adds them).
    """

    row: int
    line: int | None
    key: str
    state: RowState
    name: str | None = None
    contract_id: int | None = None
    attempts: int = 0
    error: str | None = None
    reasons: tuple[str, ...] = ()
    skipped: bool = False
    reconciled: bool = False
    parties_missing: tuple[str, ...] = ()
    note: str | None = None

    @property
    def incomplete(self) -> bool:
        """True when the contract was created but a party of the job is not added yet."""
        return self.state == "created" and bool(self.parties_missing)

    @classmethod
    def from_record(
        cls,
        record: JournalRecord,
        *,
        skipped: bool = False,
        note: str | None = None,
        missing: tuple[str, ...] = (),
    ) -> RowOutcome:
        """Build an outcome from the row's journal record (``missing``: parties not added)."""
        invalid = record.state == "invalid"
        reasons = tuple(record.error.splitlines()) if invalid and record.error else ()
        return cls(
            row=record.row,
            line=record.line,
            key=record.key,
            state=record.state,
            name=record.name,
            contract_id=record.contract_id,
            attempts=record.attempts,
            error=None if invalid else record.error,
            reasons=reasons,
            skipped=skipped,
            reconciled=record.reconciled,
            parties_missing=missing,
            note=note,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as a JSON object (one line of a ``--report``)."""
        return attrs.asdict(self, recurse=False, value_serializer=_listify)


def _listify(instance: object, attribute: object, value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@attrs.frozen(kw_only=True)
class BulkSummary:
    """The totals of one run of a job.

    Every row of the input is in exactly one of ``created``, ``incomplete``, ``skipped``,
    ``invalid``, ``failed``, ``unknown`` and ``pending``, whether the run finished, was
    stopped or was aborted: ``rows`` is their sum.

    Attributes:
        job_id: The job's id (the same for every run of the job).
        run: The run's number in the journal (1 for the first).
        rows: Rows of the input (with ``retry``: the journal's unfinished rows).
        created: Contracts created by this run (``reconciled`` of them found by listing).
        skipped: Rows already created by an earlier run.
        invalid: Rows refused before sending (with their reasons).
        failed: Rows that were not created.
        unknown: Rows whose outcome is still unknown (reconciled by the next run).
        pending: Rows not sent: the job was stopped or aborted first (rows never read
            included), or, in a dry run, the rows that would be sent.
        reconciled: Contracts found by listing the team after an unknown outcome.
        throttled: 429 answers the client received during the run.
        retries: Retries the client made during the run.
        requests: HTTP requests the client sent during the run.
        elapsed: Seconds the run took.
        stopped: True when the run was stopped (Ctrl-C, :meth:`BulkJob.stop`) before the end.
        dry_run: True for a dry run (nothing was sent).
        sent: Rows whose outcome came from a request in this run.
        incomplete: Rows whose contract exists but lacks a party of the job (a state of
            their own, not counted in ``created``; ``bulk retry`` completes them).
    """

    job_id: str
    run: int
    rows: int = 0
    created: int = 0
    skipped: int = 0
    invalid: int = 0
    failed: int = 0
    unknown: int = 0
    pending: int = 0
    reconciled: int = 0
    throttled: int = 0
    retries: int = 0
    requests: int = 0
    elapsed: float = 0.0
    stopped: bool = False
    dry_run: bool = False
    sent: int = 0
    incomplete: int = 0

    @property
    def complete(self) -> bool:
        """True when every row is created (now or before) or invalid: nothing is left to do."""
        return (
            self.failed == 0
            and self.unknown == 0
            and self.pending == 0
            and self.incomplete == 0
            and not self.stopped
        )

    def to_json(self) -> dict[str, Any]:
        """Return the summary as a JSON object."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class BulkPlan:
    """What a dry run found: what would be sent, and about how long it would take.

    Attributes:
        job_id: The job's id.
        rows: Input rows read.
        to_send: Rows that would be sent.
        invalid: Rows that would be refused (their outcomes carry the reasons).
        skipped: Rows already created by an earlier run of the job.
        unknown: Rows of an earlier run whose outcome is unknown and would be reconciled.
        write_rate: The write rate the estimate assumes (requests per second), or None.
        rate_source: Where that rate comes from (``configured``, ``environment``, ``given``).
        estimated_seconds: ``to_send / write_rate``, or None when the rate is not known.
    """

    job_id: str
    rows: int
    to_send: int
    invalid: int
    skipped: int
    unknown: int
    write_rate: float | None
    rate_source: str | None
    estimated_seconds: float | None

    def to_json(self) -> dict[str, Any]:
        """Return the plan as a JSON object."""
        return attrs.asdict(self)


def estimate_seconds(to_send: int, write_rate: float | None, burst: float = 1.0) -> float | None:
    """Return how long sending ``to_send`` creates takes at ``write_rate`` per second.

    The first ``burst`` requests go at once; the rest are paced at the rate.
    """
    if write_rate is None or write_rate <= 0:
        return None
    return max(0.0, to_send - max(burst, 1.0)) / write_rate if to_send else 0.0


@attrs.frozen(kw_only=True)
class BulkProgress:
    """A snapshot of a running job, for a progress display.

    ``done / total`` is the bar; :attr:`rate` and :attr:`eta` count only rows that were
    sent (skipped and invalid rows cost no request), and stop when the job stops.

    Attributes:
        done: Rows with an outcome so far (every state but ``pending``).
        total: Rows expected (None when unknown, e.g. an iterable); set to the rows read
            once the whole input has been read.
        created: Created so far (this run).
        skipped: Already created by an earlier run.
        invalid: Refused before sending.
        failed: Not created.
        deferred: Waiting for another attempt or for reconciliation.
        in_flight: Requests being sent now.
        throttled: 429 answers so far.
        retries: Client retries so far.
        elapsed: Seconds the run has been sending: from its start until now, or until it
            was asked to stop.
        sent: Rows whose outcome came from a request in this run.
        sending: Seconds since this run's first row was on its way (until now, or until
            it was asked to stop): the rate's clock, which leaves out the time a resumed
            run spends skipping rows created before. None: the same as ``elapsed``.
        unknown: Rows whose outcome is unknown (reconciled by a later run).
        pending: Rows not sent because the job stopped (known once it ends).
        stopping: True once the job was asked to stop (Ctrl-C, ``stop()``, ``abort()``)
            and has not ended yet.
        finished: True once the run has ended (its summary is set).
        incomplete: Contracts created whose parties are not all added.
    """

    done: int
    total: int | None
    created: int
    skipped: int
    invalid: int
    failed: int
    deferred: int
    in_flight: int
    throttled: int
    retries: int
    elapsed: float
    sent: int = 0
    sending: float | None = None
    unknown: int = 0
    pending: int = 0
    stopping: bool = False
    finished: bool = False
    incomplete: int = 0

    @property
    def rate(self) -> float:
        """Rows sent per second, over the time since the first was sent.

        Skipped and invalid rows count neither as rows nor as time: a resumed run that
        skips thousands of rows created before shows the rate it sends at.
        """
        seconds = self.elapsed if self.sending is None else self.sending
        return self.sent / seconds if seconds > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate; None when unknown, stopping or finished."""
        if self.stopping or self.finished or self.total is None or self.rate <= 0:
            return None
        return max(0, self.total - self.done) / self.rate


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    text = str(timedelta(seconds=round(seconds)))
    return text[2:] if text.startswith("0:") else text


def format_progress(progress: BulkProgress) -> str:
    """Return one line describing a job's progress (no line ending).

    Example: ``1,204/2,000 rows  98.7/s  ETA 00:08  created 1,180  invalid 3  failed 0
    skipped 21  429s 1  retries 4``.
    """
    total = f"/{progress.total:,}" if progress.total is not None else ""
    parts = [
        f"{progress.done:,}{total} rows",
        f"{progress.rate:,.1f}/s",
        f"ETA {_clock(progress.eta)}",
        f"created {progress.created:,}",
        f"invalid {progress.invalid:,}",
        f"failed {progress.failed:,}",
    ]
    if progress.skipped:
        parts.append(f"skipped {progress.skipped:,}")
    if progress.incomplete:
        parts.append(f"incomplete {progress.incomplete:,}")
    if progress.deferred:
        parts.append(f"deferred {progress.deferred:,}")
    parts.append(f"429s {progress.throttled:,}")
    parts.append(f"retries {progress.retries:,}")
    return "  ".join(parts)
