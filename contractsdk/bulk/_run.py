"""One run of a bulk job: the coordinator, the workers, the rounds and the final report.

See the module docstring of ``_engine.py`` for the shape; this module is its machinery. A
:class:`Run` owns its counters (:class:`~contractsdk.bulk._tally.Tally`) and its stop
event; it reads the job only through its frozen :class:`~contractsdk.bulk._spec.JobSpec`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING

import attrs

from contractsdk._exceptions import (
    ConfigurationError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    NotFoundError,
    TermValidationError,
)
from contractsdk.bulk._failures import classify, row_message
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._model import RowOutcome
from contractsdk.bulk._party_run import PartySteps
from contractsdk.bulk._prepare import prepare_row, row_targets
from contractsdk.bulk._readers import SourceRow
from contractsdk.bulk._reconcile import reconcile
from contractsdk.bulk._records import JournalRecord, PreparedRow
from contractsdk.bulk._rows import idempotency_key
from contractsdk.bulk._spec import JobSpec
from contractsdk.bulk._steps import (
    adopt_incomplete,
    incomplete_count,
    missing_parties,
    register_rows,
)
from contractsdk.bulk._tally import Tally
from contractsdk.bulk._targets import TargetError, Targets, missing_creator
from contractsdk.bulk._writer import AsyncJournal
from contractsdk.identity import IdentityFieldSet
from contractsdk.validation import TermSet
from contractsdk.validation._payload import CheckedValues

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["END", "End", "Run"]

_PAGE = 128
#: Creates in a row (at least one per worker) that could not connect, each after the
#: client's own retries, that stop the run: the service is unreachable.
UNREACHABLE = 10


async def _not_found(read: Awaitable[object]) -> str | None:
    """The service's words if ``read`` is answered 404, else None (other errors propagate).

    Returned, not raised from the except clause: the caller's error has no
    ``__context__``.
    """
    try:
        await read
    except NotFoundError as exc:
        return exc.service_message or exc.message
    return None


class End:
    """Put on the outcome queue when the run has nothing more to say."""


END = End()


class Run:
    """The tasks, queues, counters and stop event of one run (see the module docstring).

    Args:
        spec: The job.
        client: The client to create through.
        journal: The job's journal.
        number: The run's number in the journal.
        out: Where outcomes go for :meth:`BulkJob.run` to yield.
        mode: ``create`` (read the input) or ``retry`` (the journal's unfinished rows).
        dry_run: Send nothing (rows to send are reported ``pending``).
        job_id: The job's id (part of every row's idempotency key).
        key_salt: The journal's salt (part of them too; None for an older journal's).
        stopped: Start stopped (the job was stopped before it ran).
    """

    def __init__(
        self,
        spec: JobSpec,
        client: ContractClient,
        journal: AsyncJournal,
        number: int,
        out: asyncio.Queue[RowOutcome | End],
        *,
        mode: str,
        dry_run: bool,
        job_id: str,
        key_salt: str | None = None,
        stopped: bool = False,
    ) -> None:
        self.spec = spec
        self.client = client
        self.journal = journal
        self.run = number
        self.out = out
        self.mode = mode
        self.dry_run = dry_run
        self.job_id = job_id
        self.key_salt = key_salt
        self.tally = Tally(stats_start=client.stats)
        self.stopping = False
        self.aborting = False
        self.fatal: Exception | None = None
        self.consumer_gone = False
        self.input_read = mode != "create"
        self._stopped = asyncio.Event()
        self.send: asyncio.Queue[JournalRecord | None] = asyncio.Queue(2 * spec.concurrency)
        self.targets = Targets(client, journal, self._list_team)
        self.parties = PartySteps(self)
        self.round = 0
        self.must_list: set[int] = set()
        self.listed: set[int] = set()
        self.reconcile_error: ContractSDKError | None = None
        self.last_unknown: float | None = None
        # Creates in a row that could not connect (each after the client's retries).
        self.unreachable = 0
        # The checked values of rows queued to send, by key: a row is validated once, when
        # prepared. Bounded by the send queue: an entry is taken when its row is sent.
        self.checked: dict[str, CheckedValues] = {}
        if stopped:
            self.stop()

    # -- control ---------------------------------------------------------------------------

    def idempotency_key(self, key: str) -> str:
        """The Idempotency-Key of the row ``key`` (in this journal: every run, every try)."""
        return idempotency_key(self.job_id, key, self.key_salt)

    def stop(self) -> None:
        """Send nothing new; requests in flight finish and are recorded."""
        self.stopping = True
        self.tally.stop()
        self._stopped.set()

    def abort(self) -> None:
        """Stop at once: the caller cancels the coordinator; rows in flight stay ``sending``."""
        self.aborting = True
        self.stop()

    def fail(self, error: Exception) -> None:
        """Stop because of ``error``; the run raises it once drained."""
        if self.fatal is None:
            self.fatal = error
        self.stop()

    async def pause(self, seconds: float) -> None:
        """Sleep, unless or until the run is stopped."""
        if seconds > 0 and not self.stopping:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), seconds)

    # -- outcomes --------------------------------------------------------------------------

    async def emit(self, outcome: RowOutcome, *, sent: bool = False) -> None:
        """Count an outcome and hand it to the reader (unless the reader is gone)."""
        self.tally.count(outcome, sent=sent)
        if not self.consumer_gone:
            await self.out.put(outcome)

    async def account(self) -> None:
        """Take the run's final counts from the journal, and count the input never read.

        Called once the coordinator has ended, however it ended (tally invariant 1): an
        aborted run's outcomes were not all reported, but the journal has every row.
        """
        states = await self.journal.call(lambda j: j.counts(self.run))
        incomplete = await self.journal.call(lambda j: incomplete_count(j, self.run))
        self.tally.settle(states, incomplete=incomplete)
        if not self.input_read and self.tally.total is not None:
            self.tally.count_unread(self.tally.total - self.tally.rows)
        self.tally.end()

    # -- the coordinator -------------------------------------------------------------------

    async def coordinate(self) -> None:
        """Run the whole run: preflight, input, rounds, final report."""
        workers: list[asyncio.Task[None]] = []
        try:
            await self._preflight()
            if not self.dry_run:
                workers = [
                    asyncio.create_task(self._work(), name=f"bulk-worker-{index}")
                    for index in range(self.spec.concurrency)
                ]
            if self.mode == "create":
                await self._read_input()
            else:
                adopted = await self.journal.call(lambda j: j.adopt_unfinished(self.run))
                adopted += await self.journal.call(lambda j: adopt_incomplete(j, self.run))
                self.tally.total = adopted
                await self._resend(every_failure=True)
            await self._tail()
            if not self.dry_run:
                await self.parties.complete_all(every_failure=self.mode == "retry")
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
            if not self.consumer_gone:
                await self.out.put(END)

    async def _preflight(self) -> None:
        """Resolve fixed targets, reconcile earlier unknown outcomes, check the header."""
        spec = self.spec
        targets = self.targets
        self.must_list = set(await self.journal.call(lambda j: j.teams_to_reconcile()))
        await self._check_creator()
        await self._settle_earlier_run()
        if spec.team_id is not None:
            await targets.check_team(spec.team_id, fixed=True)  # lists it (_list_team)
        for team in sorted(self.must_list - self.listed):
            await self._list_team(team)
            targets.mark_listed(team)
        terms = None
        template = spec.template_id
        if template is None and spec.team_id is not None and spec.contract_type_id is not None:
            template = await targets.template(spec.team_id, spec.contract_type_id, fixed=True)
        elif template is not None and spec.team_id is not None and spec.contract_type_id:
            await self._check_template_of_type(spec.team_id, spec.contract_type_id, template)
        if template is not None and spec.columns.template_column is None:
            terms = await targets.terms(template, fixed=True)
            if terms.find(spec.match_term) is None:
                raise ConfigurationError(
                    f"template {template} has no term {spec.match_term!r}; bulk creation needs "
                    "a term that names each contract (choose another match term)"
                )
            if spec.columns.contract_type_column is not None:
                terms = None  # rows may use other templates: their columns are checked per row
        header = spec.source.columns if self.mode == "create" else None
        if header is not None:
            spec.columns.check_header(
                header, terms, match_term=spec.match_term, where=spec.source.describe()
            )

    async def _check_creator(self) -> None:
        """Refuse a creator (``created_by``) the service does not know, before any row.

        Not checked, the job (and a dry run, which sends nothing) passed every row, and
        the run's first creates came back 404 one by one.

        Raises:
            ConfigurationError: The service has no such user.
        """
        creator = self.spec.created_by
        said = await _not_found(self.client.users.get(creator))
        if said is not None:
            raise missing_creator(creator, said)

    async def _check_template_of_type(self, team_id: int, type_id: int, template: int) -> None:
        """Refuse a template given with a contract type it is no version of.

        Given both, the template was used and the type ignored: an NDA's template given
        with a tenancy's type was refused later for columns that were not its terms.

        Raises:
            ConfigurationError: The service says the template is not one of the type's.
        """
        said = await _not_found(self.client.templates.get(team_id, type_id, template))
        if said is not None:
            raise ConfigurationError(
                f"template {template} is not a version of contract type {type_id} in team "
                f"{team_id} ({said}); give the contract type's template, or the type alone "
                "for its newest"
            )

    async def _settle_earlier_run(self) -> None:
        """Wait ``round_delay`` if an earlier run left a send whose outcome is unknown.

        A run killed, or stopped by a second Ctrl-C, leaves its last requests in flight,
        and the service may still be making their contracts, or adding their parties, when
        the next run starts at once: listed then, they were missed and sent again (twins,
        on a service that ignores the key). The same wait a run keeps after an unknown
        outcome of its own. Not shortened by the time since that send, as the journal
        stamps it: a wall clock set forward in between (NTP, a resumed VM, the journal
        moved to another host) skipped the wait, and the rows were sent again.
        """
        if await self.journal.call(lambda j: j.has_unknown()):
            await self.pause(self.spec.round_delay)

    async def _list_team(self, team_id: int) -> None:
        """List a team's contracts before its first row registers (and reconcile its rows).

        Done for every team of the job when ``check_existing`` is on, and for any team with
        rows of unknown outcome from an earlier run.
        """
        if team_id in self.listed:
            return
        if self.spec.check_existing or team_id in self.must_list:
            self.tally.reconciled += await reconcile(
                self.client, self.journal, [team_id], self.spec.match_term
            )
        self.listed.add(team_id)

    async def _read_input(self) -> None:
        source = self.spec.source
        async with contextlib.aclosing(source.chunks()) as chunks:
            async for chunk in chunks:
                self.tally.read += len(chunk)
                if self.stopping:
                    # Not sent: only counted, so that the summary accounts for every row
                    # (a file is cheap to read; an iterable is left where it is).
                    if source.path is None:
                        return
                    self.tally.count_unread(len(chunk))
                    continue  # to the end of the file: every row is then counted
                prepared = [await self._prepare(row) for row in chunk]
                checked = {row.key: row.checked for row in prepared if row.checked is not None}
                registered = await self.journal.call(
                    partial(register_rows, run=self.run, rows=prepared)
                )
                for decision in registered:
                    if not decision.send:
                        await self.emit(
                            RowOutcome.from_record(
                                decision.record, skipped=decision.skipped, note=decision.note
                            )
                        )
                    elif not self.dry_run and not self.stopping:
                        key = decision.record.key
                        if key in checked:
                            self.checked[key] = checked[key]
                        await self.send.put(decision.record)
                    # else: a dry run, or stopping: reported as "pending" at the end
        self.input_read = True
        self.tally.total = self.tally.read  # the count before reading was an estimate

    async def _prepare(self, source: SourceRow) -> PreparedRow:
        """Resolve a row's targets (first time per target: a read), then prepare it."""
        spec = self.spec
        targets = row_targets(source, spec)
        if source.data is None or targets.problems or targets.team_id is None:
            return prepare_row(source, spec, targets, None)
        template = targets.template_id
        terms: TermSet | None = None
        try:
            await self.targets.check_team(targets.team_id, fixed=spec.columns.team_column is None)
            if template is None and targets.contract_type_id is not None:
                template = await self.targets.template(
                    targets.team_id, targets.contract_type_id, fixed=spec.fixed_target
                )
            if template is not None:
                terms = await self.targets.terms(template, fixed=spec.fixed_target)
        except TargetError as exc:
            return prepare_row(source, spec, targets, None, problems=(str(exc),))
        field_sets, problems = await self._field_sets(template)
        return prepare_row(
            source,
            spec,
            attrs.evolve(targets, template_id=template),
            terms,
            problems=problems,
            field_sets=field_sets,
        )

    async def _field_sets(
        self, template: int | None
    ) -> tuple[dict[str, IdentityFieldSet] | None, tuple[str, ...]]:
        """Read each party's identity fields for a template (the client keeps them)."""
        if not self.spec.parties or template is None:
            return None, ()
        found: dict[str, IdentityFieldSet] = {}
        for party in self.spec.parties:
            try:
                found[party.name] = await self.client.identity_fields.list(
                    template, roles=party.roles, side=party.side
                )
            except ContractSDKError as exc:
                return None, (f"party {party.name}: its identity fields cannot be read: {exc}",)
        return found, ()

    # -- the workers -----------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            record = await self.send.get()
            try:
                if record is None:
                    return
                if not self.stopping:
                    await self._send_row(record)
            except Exception as exc:  # the journal cannot be written, or a bug: stop the job
                self.fail(exc)
            finally:
                self.send.task_done()

    async def _send_row(self, record: JournalRecord) -> None:
        spec = self.spec
        tally = self.tally
        key = record.key
        assert record.team_id is not None
        assert record.template_id is not None
        # Committed before the request goes out: a crash from here on leaves "sending",
        # which the next run reconciles before sending the row again.
        await self.journal.call(lambda j: j.mark_sending(key))
        tally.in_flight += 1
        try:
            # An ambiguous failure comes back to the job instead of being replayed under the
            # key, which the service may ignore: the journal reconciles it by listing first.
            contract = await self.client.contracts._create(
                record.team_id,
                template_id=record.template_id,
                created_by=spec.created_by,
                values=record.values or {},
                require_all=spec.require_all,
                idempotency_key=self.idempotency_key(key),
                trust_key=False,
                # Checked when the row was prepared in this run; a row sent again from the
                # journal (a later round, ``retry``) is checked here, once in its run.
                checked=self.checked.pop(key, None),
            )
        except TermValidationError as exc:
            # The template's terms changed since the row was checked (a refreshed cache).
            tally.in_flight -= 1
            reasons = "; ".join(str(problem) for problem in exc.problems)
            await self._final_failure(key, f"the values no longer fit the terms: {reasons}", 0)
        except ContractSDKError as exc:
            tally.in_flight -= 1
            await self._failed(key, exc)
        except Exception as exc:  # a bug must not lose the row: it is recorded, then raised
            tally.in_flight -= 1
            await self._final_failure(key, f"{type(exc).__name__}: {exc}", 0)
            raise
        else:
            tally.in_flight -= 1
            self.unreachable = 0
            created = await self.journal.call(lambda j: j.mark_created(key, contract.id, self.run))
            missing = await self.parties.complete(created)
            await self.emit(RowOutcome.from_record(created, missing=missing), sent=True)

    async def _final_failure(
        self, key: str, message: str, extra: int, *, retryable: bool = False
    ) -> None:
        failed = await self.journal.call(
            lambda j: j.mark_failed(
                key, message, retryable=retryable, run=self.run, final=True, extra_attempts=extra
            )
        )
        await self.emit(RowOutcome.from_record(failed), sent=True)

    async def _failed(self, key: str, error: ContractSDKError) -> None:
        kind = classify(error, fixed_target=self.spec.fixed_target)
        gone = False
        if isinstance(error, ConnectError | ConnectTimeoutError):
            # In a row: the service is gone (or its address is wrong), and every row would
            # fail the same way, a few seconds each (a walkthrough's job sat at 80/600 for
            # 25 s, then failed the other 520). Stop: rows not sent stay pending.
            self.unreachable += 1
            gone = self.unreachable >= max(UNREACHABLE, self.spec.concurrency)
        else:
            self.unreachable = 0
        extra = max(0, error.attempts - 1)
        message = row_message(error)
        if kind == "unknown":
            await self.journal.call(lambda j: j.mark_unknown(key, message, extra))
            self.tally.deferred += 1
            self.last_unknown = time.monotonic()
        elif gone:
            await self._final_failure(key, message, extra, retryable=True)
            self.fail(error)
        elif kind == "retry" and self.round < self.spec.rounds:
            await self.journal.call(
                lambda j: j.mark_failed(
                    key, message, retryable=True, run=self.run, final=False, extra_attempts=extra
                )
            )
            self.tally.deferred += 1
        else:
            await self._final_failure(key, message, extra, retryable=kind == "retry")
            if kind == "fatal":
                self.fail(error)

    # -- after the input -------------------------------------------------------------------

    async def _tail(self) -> None:
        """Try deferred rows again, up to ``rounds`` times, each round after a listing.

        Every deferred row was sent at least once, so (journal invariant 3) none is sent
        again before its team has been listed: a round whose listing fails ends the rounds.
        """
        if self.dry_run:
            return
        await self.send.join()
        while not self.stopping and self.round < self.spec.rounds:
            unknown = await self.journal.call(lambda j: j.has_sending(self.run))
            retry = await self.journal.call(
                lambda j: j.to_send(self.run, "", 1, every_failure=False)
            )
            if not unknown and not retry:
                return
            self.round += 1
            await self.pause(self.spec.round_delay)
            if not await self._reconcile_run():
                return
            await self._resend(every_failure=False)

    async def settle(self) -> None:
        """Wait until ``round_delay`` after this run's last unknown outcome (row or party)."""
        last = self.last_unknown
        if last is not None:
            await self.pause(self.spec.round_delay - (time.monotonic() - last))

    async def _reconcile_run(self) -> bool:
        """Reconcile this run's rows that may have been sent; False if a listing failed."""
        await self.settle()
        teams = await self.journal.call(lambda j: j.teams_to_reconcile(self.run))
        try:
            result = await reconcile(self.client, self.journal, teams, self.spec.match_term)
        except ContractSDKError as exc:
            self.reconcile_error = exc
            return False
        self.tally.reconciled += result
        self.tally.deferred = max(0, self.tally.deferred - result.created - result.ambiguous)
        return True

    async def _resend(self, *, every_failure: bool) -> None:
        """Feed this run's rows that are to be sent again to the workers, page by page."""
        after = ""
        while not self.stopping:
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
                self.tally.deferred = max(0, self.tally.deferred - 1)
                await self.send.put(record)
            after = page[-1].key
        await self.send.join()

    async def _finish(self) -> None:
        """Settle what is still unknown, then report every row not reported yet."""
        if not self.dry_run and not self.stopping:
            if await self.journal.call(lambda j: j.has_sending(self.run)):
                await self._reconcile_run()
            await self.journal.call(lambda j: j.fail_unsent(self.run))
        while True:
            page = await self.journal.call(lambda j: j.unreported(self.run, _PAGE))
            if not page:
                break
            keys = [record.key for record in page if record.state == "created"]
            missing = await self.journal.call(partial(missing_parties, keys=keys))
            for record in page:
                sent = record.attempts > 0 and record.state in ("created", "failed", "sending")
                outcome = RowOutcome.from_record(record, missing=missing.get(record.key, ()))
                await self.emit(outcome, sent=sent)
