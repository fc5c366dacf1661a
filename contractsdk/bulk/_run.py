"""One run of a bulk job: the coordinator, the workers, the rounds and the final report.

See the module docstring of ``_engine.py`` for the shape; this module is its machinery.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from functools import partial
from typing import TYPE_CHECKING, Literal

from contractsdk._exceptions import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RateLimiterTimeoutError,
    ResponseValidationError,
    ServerError,
    TermValidationError,
    TransportError,
)
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._model import RowOutcome
from contractsdk.bulk._readers import SourceRow
from contractsdk.bulk._reconcile import reconcile
from contractsdk.bulk._records import JournalRecord, PreparedRow
from contractsdk.bulk._rows import (
    content_digest,
    idempotency_key,
    map_row,
    parse_target_id,
    row_key,
)
from contractsdk.bulk._targets import TargetError, Targets
from contractsdk.bulk._writer import AsyncJournal
from contractsdk.validation import TermSet

if TYPE_CHECKING:
    from contractsdk.bulk._engine import BulkJob

__all__ = ["END", "End", "Run", "classify"]

_PAGE = 128
Failure = Literal["unknown", "retry", "final", "fatal"]


class End:
    """Put on the outcome queue when the run has nothing more to say."""


END = End()


def classify(error: ContractSDKError, *, fixed_target: bool) -> Failure:
    """Decide what a failed create means for its row.

    * ``unknown``: the request may have been processed (a dropped connection or timeout
      after sending, a 2xx answer that could not be read, a 409 for a key still in use).
    * ``retry``: not processed, and trying later may work (429, 5xx, no connection).
    * ``final``: the service refused this row (400, 422, …); trying again will not help.
    * ``fatal``: no row can succeed (401; 403/404 when every row has the same target).
    """
    if isinstance(error, TransportError):
        return "unknown" if error.outcome_unknown else "retry"
    if isinstance(error, ResponseValidationError | ConflictError):
        return "unknown"
    if isinstance(error, RateLimitError | ServerError | RateLimiterTimeoutError):
        return "retry"
    if isinstance(error, ConnectError | ConnectTimeoutError):
        return "retry"
    if isinstance(error, AuthenticationError):
        return "fatal"
    if isinstance(error, PermissionDeniedError | NotFoundError) and fixed_target:
        return "fatal"
    return "final"


class Run:
    """The tasks and queues of one run (see the module docstring)."""

    def __init__(
        self,
        job: BulkJob,
        journal: AsyncJournal,
        run: int,
        out: asyncio.Queue[RowOutcome | End],
        *,
        mode: str,
        dry_run: bool,
    ) -> None:
        self.job = job
        self.client = job._client
        self.journal = journal
        self.run = run
        self.out = out
        self.mode = mode
        self.dry_run = dry_run
        self.send: asyncio.Queue[JournalRecord | None] = asyncio.Queue(2 * job._concurrency)
        self.targets = Targets(self.client, journal, self._list_team)
        self.round = 0
        self.must_list: set[int] = set()
        self.listed: set[int] = set()
        self.reconcile_error: ContractSDKError | None = None

    # -- outcomes --------------------------------------------------------------------------

    async def emit(self, outcome: RowOutcome) -> None:
        job = self.job
        job._rows += 1
        if outcome.skipped:
            job._counts["skipped"] += 1
        elif outcome.state == "sending":
            job._counts["unknown"] += 1
        else:
            job._counts[outcome.state] += 1
        if not job._consumer_gone:
            await self.out.put(outcome)

    # -- the coordinator -------------------------------------------------------------------

    async def coordinate(self) -> None:
        job = self.job
        workers: list[asyncio.Task[None]] = []
        try:
            await self._preflight()
            if not self.dry_run:
                workers = [
                    asyncio.create_task(self._work(), name=f"bulk-worker-{index}")
                    for index in range(job._concurrency)
                ]
            if self.mode == "create":
                await self._read_input()
            else:
                adopted = await self.journal.call(lambda j: j.adopt_unfinished(self.run))
                job._total = adopted
                await self._resend(every_failure=True)
            await self._tail()
            for _ in workers:
                await self.send.put(None)
            if workers:
                await asyncio.gather(*workers)
            await self._finish()
        finally:
            for worker in workers:
                worker.cancel()
            if workers:
                await asyncio.gather(*workers, return_exceptions=True)
            if not job._consumer_gone:
                await self.out.put(END)

    async def _preflight(self) -> None:
        """Resolve fixed targets, reconcile earlier unknown outcomes, check the header."""
        job = self.job
        targets = self.targets
        self.must_list = set(await self.journal.call(lambda j: j.teams_to_reconcile()))
        if job._team_id is not None:
            await targets.check_team(job._team_id, fixed=True)  # lists it (_list_team)
        for team in sorted(self.must_list - self.listed):
            await self._list_team(team)
            targets.mark_listed(team)
        terms = None
        template = job._template_id
        if template is None and job._team_id is not None and job._contract_type_id is not None:
            template = await targets.template(job._team_id, job._contract_type_id, fixed=True)
        if template is not None and job._columns.template_column is None:
            terms = await targets.terms(template, fixed=True)
            if terms.find(job._match_term) is None:
                raise ConfigurationError(
                    f"template {template} has no term {job._match_term!r}; bulk creation needs "
                    "a term that names each contract (give match_term=)"
                )
            if job._columns.contract_type_column is not None:
                terms = None  # rows may use other templates: their columns are checked per row
        header = job._source.columns if self.mode == "create" else None
        if header is not None:
            job._columns.check_header(
                header, terms, match_term=job._match_term, where=job._source.describe()
            )

    async def _list_team(self, team_id: int) -> None:
        """List a team's contracts before its first row registers (and reconcile its rows).

        Done for every team of the job when ``check_existing`` is on, and for any team with
        rows of unknown outcome from an earlier run.
        """
        if team_id in self.listed:
            return
        if self.job._check_existing or team_id in self.must_list:
            self.job._reconciled += await reconcile(
                self.client, self.journal, [team_id], self.job._match_term
            )
        self.listed.add(team_id)

    async def _read_input(self) -> None:
        job = self.job
        async with contextlib.aclosing(job._source.chunks()) as chunks:
            async for chunk in chunks:
                if job._stopping:
                    break
                prepared = [await self._prepare(row) for row in chunk]
                registered = await self.journal.call(
                    partial(Journal.register, run=self.run, rows=prepared)
                )
                for decision in registered:
                    if not decision.send:
                        await self.emit(
                            RowOutcome.from_record(
                                decision.record, skipped=decision.skipped, note=decision.note
                            )
                        )
                    elif not self.dry_run and not job._stopping:
                        await self.send.put(decision.record)
                    # else: a dry run, or stopping: reported as "pending" at the end

    async def _prepare(self, source: SourceRow) -> PreparedRow:
        """Map, key, target and validate one input record (no I/O but first-time targets)."""
        job = self.job
        columns = job._columns
        if source.data is None:
            digest = content_digest({"": source.raw})
            return PreparedRow(
                number=source.number,
                line=source.line,
                key=f"bad:{digest}",
                key_label="the row",
                digest=digest,
                name=None,
                team_id=job._team_id,
                template_id=None,
                values=None,
                reasons=(source.problem or "the row could not be read",),
            )
        data = source.data
        problems: list[str] = []
        team, contract_type, template = job._team_id, job._contract_type_id, job._template_id
        per_row: list[int | None] = []
        for column, current in (
            (columns.team_column, team),
            (columns.contract_type_column, contract_type),
            (columns.template_column, template),
        ):
            value = current
            if column is not None:
                value, problem = parse_target_id(data.get(column), column)
                if problem:
                    problems.append(problem)
                per_row.append(value)
            if column == columns.team_column and column is not None:
                team = value
            elif column == columns.contract_type_column and column is not None:
                contract_type = value
            elif column == columns.template_column and column is not None:
                template = value
        terms: TermSet | None = None
        if not problems and team is not None:
            targets = self.targets
            try:
                await targets.check_team(team, fixed=columns.team_column is None)
                if template is None and contract_type is not None:
                    template = await targets.template(team, contract_type, fixed=job._fixed_target)
                if template is not None:
                    terms = await targets.terms(template, fixed=job._fixed_target)
            except TargetError as exc:
                problems.append(str(exc))
        mapped = map_row(data, columns, terms)
        problems.extend(mapped.problems)
        digest = content_digest(mapped.values, per_row)
        key = row_key(mapped.key_value, digest)
        label = f"key {mapped.key_value!r}" if mapped.key_value is not None else "the row"
        values: dict[str, str] | None = None
        if not problems and terms is not None:
            try:
                values = terms.validate(mapped.values, require_all=job._require_all)
            except TermValidationError as exc:
                problems.extend(str(problem) for problem in exc.problems)
        match_term = job._match_term
        if values is not None:
            name: str | None = values.get(match_term)
            if not name:
                problems.append(
                    f"{match_term}: no value; every row needs one, unique within the job (it "
                    "names the contract, and is how it is found again after an unknown outcome)"
                )
        else:
            raw = mapped.values.get(match_term)
            name = str(raw) if raw is not None else None
        return PreparedRow(
            number=source.number,
            line=source.line,
            key=key,
            key_label=label,
            digest=digest,
            name=name,
            team_id=team,
            template_id=template,
            values=values if not problems else None,
            reasons=tuple(problems),
        )

    # -- the workers -----------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            record = await self.send.get()
            try:
                if record is None:
                    return
                if not self.job._stopping:
                    await self._send_row(record)
            except Exception as exc:  # the journal cannot be written, or a bug: stop the job
                self.job._fail(exc)
            finally:
                self.send.task_done()

    async def _send_row(self, record: JournalRecord) -> None:
        job = self.job
        key = record.key
        assert record.team_id is not None
        assert record.template_id is not None
        # Committed before the request goes out: a crash from here on leaves "sending",
        # which the next run reconciles before sending the row again.
        await self.journal.call(lambda j: j.mark_sending(key))
        job._in_flight += 1
        try:
            # An ambiguous failure comes back to the job instead of being replayed under the
            # key, which the service may ignore: the journal reconciles it by listing first.
            contract = await self.client.contracts._create(
                record.team_id,
                template_id=record.template_id,
                created_by=job._created_by,
                values=record.values or {},
                require_all=job._require_all,
                idempotency_key=idempotency_key(job.job_id, key),
                trust_key=False,
            )
        except TermValidationError as exc:
            # The template's terms changed since the row was checked (a refreshed cache).
            job._in_flight -= 1
            reasons = "; ".join(str(problem) for problem in exc.problems)
            await self._final_failure(key, f"the values no longer fit the terms: {reasons}", 0)
        except ContractSDKError as exc:
            job._in_flight -= 1
            await self._failed(key, exc)
        except Exception as exc:  # a bug must not lose the row: it is recorded, then raised
            job._in_flight -= 1
            await self._final_failure(key, f"{type(exc).__name__}: {exc}", 0)
            raise
        else:
            job._in_flight -= 1
            created = await self.journal.call(lambda j: j.mark_created(key, contract.id, self.run))
            await self.emit(RowOutcome.from_record(created))

    async def _final_failure(
        self, key: str, message: str, extra: int, *, retryable: bool = False
    ) -> None:
        failed = await self.journal.call(
            lambda j: j.mark_failed(
                key, message, retryable=retryable, run=self.run, final=True, extra_attempts=extra
            )
        )
        await self.emit(RowOutcome.from_record(failed))

    async def _failed(self, key: str, error: ContractSDKError) -> None:
        job = self.job
        kind = classify(error, fixed_target=job._fixed_target)
        extra = max(0, error.attempts - 1)
        message = str(error)
        if kind == "unknown":
            await self.journal.call(lambda j: j.mark_unknown(key, message, extra))
            job._deferred += 1
            job._last_unknown = time.monotonic()
        elif kind == "retry" and self.round < job._rounds:
            await self.journal.call(
                lambda j: j.mark_failed(
                    key, message, retryable=True, run=self.run, final=False, extra_attempts=extra
                )
            )
            job._deferred += 1
        else:
            await self._final_failure(key, message, extra, retryable=kind == "retry")
            if kind == "fatal":
                job._fail(error)

    # -- after the input -------------------------------------------------------------------

    async def _tail(self) -> None:
        """Try deferred rows again, up to ``rounds`` times, each round after a listing.

        Every deferred row was sent at least once, so (journal invariant 3) none is sent
        again before its team has been listed: a round whose listing fails ends the rounds.
        """
        job = self.job
        if self.dry_run:
            return
        await self.send.join()
        while not job._stopping and self.round < job._rounds:
            unknown = await self.journal.call(lambda j: j.has_sending(self.run))
            retry = await self.journal.call(
                lambda j: j.to_send(self.run, "", 1, every_failure=False)
            )
            if not unknown and not retry:
                return
            self.round += 1
            await job._pause(job._round_delay)
            if not await self._reconcile_run():
                return
            await self._resend(every_failure=False)

    async def _settle(self) -> None:
        last = self.job._last_unknown
        if last is not None:
            await self.job._pause(self.job._round_delay - (time.monotonic() - last))

    async def _reconcile_run(self) -> bool:
        """Reconcile this run's rows that may have been sent; False if a listing failed."""
        job = self.job
        await self._settle()
        teams = await self.journal.call(lambda j: j.teams_to_reconcile(self.run))
        try:
            result = await reconcile(self.client, self.journal, teams, job._match_term)
        except ContractSDKError as exc:
            self.reconcile_error = exc
            return False
        job._reconciled += result
        job._deferred = max(0, job._deferred - result.created - result.ambiguous)
        return True

    async def _resend(self, *, every_failure: bool) -> None:
        """Feed this run's rows that are to be sent again to the workers, page by page."""
        job = self.job
        after = ""
        while not job._stopping:
            page = await self.journal.call(
                partial(
                    Journal.to_send,
                    run=self.run,
                    after=after,
                    limit=_PAGE,
                    every_failure=every_failure,
                )
            )
            if not page:
                break
            for record in page:
                job._deferred = max(0, job._deferred - 1)
                await self.send.put(record)
            after = page[-1].key
        await self.send.join()

    async def _finish(self) -> None:
        """Settle what is still unknown, then report every row not reported yet."""
        job = self.job
        if not self.dry_run and not job._stopping:
            if await self.journal.call(lambda j: j.has_sending(self.run)):
                await self._reconcile_run()
            await self.journal.call(lambda j: j.fail_unsent(self.run))
        while True:
            page = await self.journal.call(lambda j: j.unreported(self.run, _PAGE))
            if not page:
                break
            for record in page:
                await self.emit(RowOutcome.from_record(record))
