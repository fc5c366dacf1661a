"""``BulkJob``: create thousands of contracts at the rate limit, nothing lost, nothing twice.

One run is three kinds of task around two bounded queues::

    coordinator ── reads rows in chunks, maps, validates, registers each chunk in the journal
        │  valid rows ──► send queue (2 × concurrency) ──► N workers: mark "sending" (commit),
        │                                                  create through the client, record
        │  other rows ─────────────────────────────────► outcome queue (256) ──► run() yields
        └─ then: rounds over deferred rows (retryable failures, unknown outcomes after
           reconciliation), a final reconciliation, and the outcomes not reported yet.

Memory is flat in the number of rows: a chunk of input, the two queues and the workers'
requests; every lookup (was this row done? is this name taken?) is a query of the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contractsdk import __version__
from contractsdk._exceptions import ConfigurationError
from contractsdk.bulk._journal import JournalError
from contractsdk.bulk._lease import InputLease
from contractsdk.bulk._lock import FileLock, input_lock_paths
from contractsdk.bulk._model import (
    BulkPlan,
    BulkProgress,
    BulkSummary,
    RowOutcome,
    estimate_seconds,
)
from contractsdk.bulk._parties import BulkParty
from contractsdk.bulk._readers import InputFormat, RowSource, open_source
from contractsdk.bulk._reconcile import NAME_TERM
from contractsdk.bulk._rows import ColumnMap, job_id, job_identity
from contractsdk.bulk._run import End, Run
from contractsdk.bulk._spec import JobSpec
from contractsdk.bulk._status import read_status
from contractsdk.bulk._tally import Tally
from contractsdk.bulk._writer import AsyncJournal
from contractsdk.resources._base import path_id

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["BulkJob"]

_OUTCOME_QUEUE = 256


class BulkJob:
    """A bulk creation job: rows in, one contract per valid row, every outcome journaled.

    Example::

        async with ContractClient(...) as client:
            job = BulkJob(client, "tenancies.csv", team_id=12, contract_type_id=3,
                          created_by=7, journal="tenancies.db")
            async for outcome in job.run():
                if outcome.state != "created":
                    print(outcome.row, outcome.state, outcome.error or outcome.reasons)
            print(job.summary)

    Args:
        client: The client to create through; its rate limiter paces the job and its
            retries run inside each attempt.
        rows: A ``.csv`` or ``.jsonl`` path, an iterable or async iterable of mappings
            ``{column: value}``, or a :class:`RowSource`.
        team_id: The team that holds the contracts (or give ``team_column``).
        contract_type_id: The contract type; its newest template version is used (pinned
            in the journal on the first run). Not needed with ``template_id``.
        template_id: The template version, fixed for the job.
        created_by: The id of the user creating the contracts.
        columns: ``{column: term name}`` for columns not named after their term;
            ``{column: None}`` ignores a column. Other columns are the term of their name.
        key_column: The column with each row's own reference, used as its key; without
            it a row is keyed by a hash of its content.
        team_column: A column holding each row's team id.
        contract_type_column: A column holding each row's contract type id.
        template_column: A column holding each row's template version id.
        match_term: The term that names each contract; every row needs a value for it,
            unique within the job. It is how a contract is found again after an unknown
            outcome (default ``contract_name``).
        journal: The journal file (created if missing; resumed if it exists); None keeps
            a temporary journal, deleted at the end (no resume).
        concurrency: The most requests in flight at once.
        require_all: Also refuse rows that leave an applicable term unanswered.
        rounds: How many more times a row, or a party's add, that failed in a retryable
            way (429, 5xx, no connection, unknown outcome) is tried within a run.
        round_delay: Seconds to wait before each further round (a throttled or failing
            service gets time to recover), and between the last unknown outcome and the
            listing that reconciles it (a request still being processed must finish).
        check_existing: List each team's contracts before sending, so that a row naming a
            contract the team already has (made outside this journal) is refused rather
            than created twice.
        format: ``"csv"`` or ``"jsonl"`` when the file name does not say.
        parties: The parties each contract gets, read from the row's columns (see
            :class:`BulkParty`); each is validated with the row, and added after the
            contract as a journaled step.

    Raises:
        ConfigurationError: A setting is wrong (nothing is read or sent).
    """

    def __init__(
        self,
        client: ContractClient,
        rows: str
        | os.PathLike[str]
        | Iterable[Mapping[str, Any]]
        | AsyncIterable[Mapping[str, Any]]
        | RowSource,
        *,
        team_id: int | None = None,
        contract_type_id: int | None = None,
        template_id: int | None = None,
        created_by: int,
        columns: Mapping[str, str | None] | None = None,
        key_column: str | None = None,
        team_column: str | None = None,
        contract_type_column: str | None = None,
        template_column: str | None = None,
        match_term: str = NAME_TERM,
        journal: str | os.PathLike[str] | None = None,
        concurrency: int = 16,
        require_all: bool = False,
        rounds: int = 2,
        round_delay: float = 3.0,
        check_existing: bool = True,
        format: InputFormat | None = None,  # the natural name of the option
        parties: Sequence[BulkParty] = (),
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be a positive integer, got {concurrency!r}")
        if rounds < 0:
            raise ConfigurationError("rounds must be 0 or more")
        if round_delay < 0:
            raise ConfigurationError("round_delay must be 0 or more seconds")
        if not match_term or not isinstance(match_term, str):
            raise ConfigurationError("match_term must be a term name")
        self._client = client
        party_list = tuple(parties)
        names = [party.name for party in party_list]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"two parties have the same name: {', '.join(names)}")
        column_map = ColumnMap(
            terms=dict(columns or {}),
            key_column=key_column,
            team_column=team_column,
            contract_type_column=contract_type_column,
            template_column=template_column,
            party_columns=frozenset(column for party in party_list for column in party.all_columns),
        )
        team = int(path_id(team_id, "team_id")) if team_id is not None else None
        contract_type = (
            int(path_id(contract_type_id, "contract_type_id"))
            if contract_type_id is not None
            else None
        )
        template = int(path_id(template_id, "template_id")) if template_id is not None else None
        creator = int(path_id(created_by, "created_by"))
        if team is None and team_column is None:
            raise ConfigurationError("give team_id= (or team_column= for a team per row)")
        if (
            template is None
            and contract_type is None
            and template_column is None
            and contract_type_column is None
        ):
            raise ConfigurationError(
                "give template_id= or contract_type_id= (or a template / contract type column)"
            )
        self.spec = JobSpec(
            source=open_source(rows, format=format),
            columns=column_map,
            team_id=team,
            contract_type_id=contract_type,
            template_id=template,
            created_by=creator,
            match_term=match_term,
            journal=Path(journal) if journal is not None else None,
            concurrency=concurrency,
            require_all=require_all,
            rounds=rounds,
            round_delay=round_delay,
            check_existing=check_existing,
            parties=party_list,
        )
        """What the job is (input, targets, options), frozen."""
        self.identity = job_identity(
            base_url=f"{client.environment.base_url}/{client.api_version}",
            team_id=team,
            contract_type_id=contract_type,
            template_id=template,
            created_by=creator,
            columns=column_map,
            match_term=match_term,
        )
        if party_list:  # a job without parties keeps the id it had before parties existed
            self.identity["parties"] = [party.identity() for party in party_list]
        self.job_id: str = job_id(self.identity)
        """The job's id: the same for every run of the same job (see ``docs/bulk.md``)."""
        self.summary: BulkSummary | None = None
        """The totals of the last run, set when it ends (also after a stop or an error)."""
        self._started = False
        self._stop_asked = False
        self._run: Run | None = None

    @property
    def journal(self) -> Path | None:
        """The journal file (None: a temporary journal)."""
        return self.spec.journal

    # -- building a job from its journal -------------------------------------------------

    @classmethod
    async def from_journal(
        cls,
        client: ContractClient,
        journal: str | os.PathLike[str],
        *,
        concurrency: int = 16,
        rounds: int = 2,
        round_delay: float = 3.0,
        rows: str | os.PathLike[str] | None = None,
    ) -> BulkJob:
        """Rebuild a job from its journal (for :meth:`retry`, or to run its last file again).

        Args:
            client: The client; it must point at the environment the job was run against.
            journal: The journal file.
            concurrency: The most requests in flight at once.
            rounds: As for :class:`BulkJob`.
            round_delay: As for :class:`BulkJob`.
            rows: The input to read with :meth:`run` (default: the file of the last run).

        Raises:
            JournalError: The file is missing or not a journal of any job.
        """
        from contractsdk.bulk._journal import Journal

        def read() -> tuple[dict[str, Any] | None, str | None]:
            opened = Journal.connect(journal, readonly=True)
            try:
                return opened.header(), opened.last_source()
            finally:
                opened.close()

        header, source = await asyncio.to_thread(read)
        if header is None:
            raise JournalError(f"{journal} holds no job yet")
        identity = header["identity"]
        template = identity.get("template_id")
        job = cls(
            client,
            rows if rows is not None else (source or ()),
            team_id=identity.get("team_id"),
            contract_type_id=identity.get("contract_type_id"),
            template_id=template if isinstance(template, int) else None,
            created_by=identity["created_by"],
            columns=identity.get("columns") or {},
            key_column=identity.get("key_column"),
            team_column=identity.get("team_column"),
            contract_type_column=identity.get("contract_type_column"),
            template_column=identity.get("template_column"),
            match_term=identity.get("match_term", NAME_TERM),
            journal=journal,
            concurrency=concurrency,
            rounds=rounds,
            round_delay=round_delay,
            parties=[BulkParty.from_identity(party) for party in identity.get("parties", ())],
        )
        return job

    # -- control ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop sending: requests in flight finish and are recorded; no new one starts.

        Call it from the event loop's thread (a signal handler installed with
        ``loop.add_signal_handler`` is). Rows not sent stay ``pending`` in the journal
        for the next run. Called before :meth:`run`, the run starts stopped.
        """
        self._stop_asked = True
        if self._run is not None:
            self._run.stop()

    def abort(self) -> None:
        """Stop at once: requests in flight are cancelled and left ``sending``.

        Use it when waiting for them is not an option (a second Ctrl-C); the next run
        reconciles those rows before sending anything. The summary still counts every
        row: the ones in flight as ``unknown``, the ones not sent as ``pending``.
        """
        self._stop_asked = True
        if self._run is not None:
            self._run.abort()

    def progress(self) -> BulkProgress:
        """Return a snapshot of the running (or last) run, for a progress display.

        Before the first run, every count is 0 and ``total`` is None.
        """
        stats = self._client.stats
        if self._run is None:
            return Tally(stats_start=stats).progress(stats)
        return self._run.tally.progress(stats)

    # -- the public runs -------------------------------------------------------------------

    def run(self) -> AsyncIterator[RowOutcome]:
        """Run the job: yield one outcome per input row as rows finish (not in input order).

        Rows already created by an earlier run with this journal are skipped (yielded
        with ``skipped=True``); invalid rows are validated again; unfinished rows are
        reconciled and sent. :attr:`summary` is set when the iteration ends.

        Breaking out of the loop, cancelling the task, or :meth:`stop` all end the run the
        same way: no new request, requests in flight finish and are journaled. Use
        ``contextlib.aclosing(job.run())`` when you may break out early.

        Raises:
            ContractSDKError: A fatal error (bad credentials; for a fixed target, a team
                or template that cannot be used) stopped the run; rows in flight were
                recorded first.
            JournalError: The journal belongs to another job, or cannot be written.
        """
        return self._execute("create", dry_run=False)

    def retry(self) -> AsyncIterator[RowOutcome]:
        """Send again the rows of the journal that are not done; the input is not read.

        Every row left ``pending``, ``failed`` or ``sending`` by earlier runs is
        reconciled, then sent from the values kept in the journal. Created and invalid
        rows are left alone (fix an invalid row in the input and :meth:`run` again).
        """
        return self._execute("retry", dry_run=False)

    async def plan(
        self,
        *,
        write_rate: float | None = None,
        on_outcome: Callable[[RowOutcome], Any] | None = None,
    ) -> BulkPlan:
        """Validate every row and estimate the duration; send nothing, change nothing.

        The job's targets and terms are read (and, when the journal has rows of unknown
        outcome, the team's contracts are listed); the journal is worked on in a
        temporary copy, so the real one is not changed. A job reading a file may
        :meth:`run` after its plan; one reading an iterable cannot (it is read once).

        Args:
            write_rate: The write rate to assume (requests per second); by default the
                client's configured limit, else its environment's documented one.
            on_outcome: Called with each row's outcome (``pending``: would be sent).
        """
        unknown = 0
        journal = self.spec.journal
        if journal is not None and await asyncio.to_thread(journal.exists):
            with contextlib.suppress(JournalError):  # not a journal yet: the run says why
                unknown = (await read_status(journal, limit=0)).counts["sending"]
        async with contextlib.aclosing(self._execute("create", dry_run=True)) as outcomes:
            async for outcome in outcomes:
                if on_outcome is not None:
                    on_outcome(outcome)
        summary = self.summary
        assert summary is not None
        rate, source = (write_rate, "given") if write_rate else write_rate_of(self._client)
        to_send = summary.pending
        return BulkPlan(
            job_id=self.job_id,
            rows=summary.rows,
            to_send=to_send,
            invalid=summary.invalid,
            skipped=summary.skipped,
            unknown=unknown,
            write_rate=rate,
            rate_source=source if rate else None,
            estimated_seconds=estimate_seconds(to_send, rate),
        )

    # -- one run ---------------------------------------------------------------------------

    async def _execute(self, mode: str, *, dry_run: bool) -> AsyncGenerator[RowOutcome, None]:
        if self._started:
            raise ConfigurationError("a BulkJob runs once; make a new one to run again")
        self._started = not dry_run  # a dry run may come first
        spec = self.spec
        source = spec.source
        path = None if dry_run else spec.journal
        fresh = path is not None and not await asyncio.to_thread(path.exists)
        total: int | None = None
        try:
            if mode == "create":
                await source.open()
                total = await source.count()
            journal = await AsyncJournal.open(path, copy_of=spec.journal if dry_run else None)
        except BaseException:
            await source.aclose()
            raise
        held: list[FileLock] = []
        lease: InputLease | None = None
        run_number = 0
        outcome_text = "error"
        out: asyncio.Queue[RowOutcome | End] = asyncio.Queue(_OUTCOME_QUEUE)
        run: Run | None = None
        coordinator: asyncio.Task[None] | None = None
        try:
            if mode == "create" and not dry_run and source.path is not None:
                # Refused, the journal made just now for this run is removed below, empty.
                busy = (
                    f"another process on this machine is running this job on the rows of "
                    f"{source.path} (this file or a copy of it) with another journal (or "
                    "none): two runs of one file each create the rows the other is creating. "
                    "Let it finish, or stop it, then run this command again"
                )
                for lock_path in input_lock_paths(self.job_id, source.path, source.digest):
                    lock = FileLock(lock_path)
                    await asyncio.to_thread(lock.acquire, busy)
                    held.append(lock)
                lease = _lease(self._client, self.job_id, source)
                if lease is not None:
                    await lease.acquire(str(source.path))
            await journal.call(lambda j: j.claim(self.job_id, self.identity, __version__))
            header = await journal.call(lambda j: j.header())
            assert header is not None  # claimed
            read = source.path
            source_name = str(read.resolve()) if mode == "create" and read is not None else None
            run_number = await journal.call(
                lambda j: j.begin_run(f"{mode}{' (dry run)' if dry_run else ''}", source_name)
            )
            run = self._run = Run(
                spec,
                self._client,
                journal,
                run_number,
                out,
                mode=mode,
                dry_run=dry_run,
                job_id=self.job_id,
                key_salt=header["key_salt"],
                stopped=self._stop_asked and not dry_run,
            )
            run.tally.total = total
            if lease is not None:
                lease.keep(run.fail)
            coordinator = asyncio.create_task(run.coordinate(), name="bulk-coordinator")
            while True:
                item = await out.get()
                if isinstance(item, End):
                    break
                yield item
            await coordinator
            outcome_text = "stopped" if run.stopping else "done"
            if run.fatal is not None:
                outcome_text = f"error: {run.fatal}"
                raise run.fatal
        except (asyncio.CancelledError, GeneratorExit):
            outcome_text = "cancelled"
            raise
        finally:
            if run is not None:
                run.consumer_gone = True
            if run is not None and coordinator is not None and not coordinator.done():
                run.stop()
                await _drain(coordinator, out, timeout=0.0 if run.aborting else 60.0)
            if coordinator is not None and coordinator.done() and not coordinator.cancelled():
                error = coordinator.exception()
                if error is not None and outcome_text == "error":
                    outcome_text = f"error: {error}"
            with contextlib.suppress(JournalError, sqlite3.Error):
                if run is not None:
                    await run.account()
            with contextlib.suppress(JournalError, sqlite3.Error):
                if run_number:
                    unread = _unread(run) if mode == "create" and not dry_run else None
                    if unread:  # rows an earlier run read are not unread
                        total = run.tally.total if run is not None else None
                        past = await journal.call(lambda j: j.rows_past(total or 0))
                        unread = min(unread, past)
                    await journal.call(
                        lambda j: j.finish_run(run_number, outcome_text, unread=unread)
                    )
            self.summary = self._summary(run, run_number, dry_run)
            await source.aclose()
            # A new journal whose first run failed before any row was recorded (a header
            # refused, a team not found) is removed, so that fixing the options is not
            # then refused as "another job".
            empty = False
            if fresh and outcome_text != "done":
                with contextlib.suppress(JournalError):
                    empty = await journal.call(lambda j: j.row_count() == 0)
            try:
                await journal.aclose()
                if empty and path is not None:
                    await asyncio.to_thread(_remove_journal, path)
            finally:
                # Let go once nothing more can be sent or written; the machine's locks even
                # if letting the lease go is cancelled (it lapses on its own).
                try:
                    if lease is not None:
                        await lease.release()
                finally:
                    for lock in held:
                        lock.release()

    def _summary(self, run: Run | None, run_number: int, dry_run: bool) -> BulkSummary:
        stats = self._client.stats
        if run is None:
            return Tally(stats_start=stats).summary(
                stats,
                job_id=self.job_id,
                run=run_number,
                stopped=self._stop_asked,
                dry_run=dry_run,
            )
        return run.tally.summary(
            stats, job_id=self.job_id, run=run_number, stopped=run.stopping, dry_run=dry_run
        )


def _unread(run: Run | None) -> int | None:
    """Rows of a create run's input it did not read; None when not known.

    A run stopped while reading a file reads on to its end, counting; one stopped before it
    began, or reading an iterable of unknown length, cannot say.
    """
    if run is None:
        return None
    tally = run.tally
    if run.input_read or tally.total is not None:
        return tally.unread
    return None


def _lease(client: ContractClient, job_id: str, source: RowSource) -> InputLease | None:
    """The lease a run of ``source`` takes in the client's Redis, if it shares one."""
    shared = client._shared  # the client's own Redis connection, namespaced by credential
    if shared is None or source.digest is None:
        return None
    name = source.path.name if source.path is not None else None
    return InputLease(shared, job_id, source.digest, name=name)


def _remove_journal(path: Path) -> None:
    for name in (path, *(path.with_name(path.name + end) for end in ("-wal", "-shm", ".lock"))):
        with contextlib.suppress(FileNotFoundError):
            name.unlink()


async def _drain(task: asyncio.Task[None], out: asyncio.Queue[Any], *, timeout: float) -> None:
    """Let a stopping run finish its requests, discarding outcomes nobody reads."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not task.done() and loop.time() < deadline:
        while not out.empty():
            out.get_nowait()
        await asyncio.wait({task}, timeout=0.05)
    if not task.done():
        task.cancel()
        await asyncio.wait({task})


def write_rate_of(client: ContractClient) -> tuple[float | None, str]:
    """Return the write rate a job would be paced at, and where that figure comes from.

    The client's configured limit (``configured``); else the service's declared limit if
    the limiter has seen it (``service``); else the environment's documented one
    (``environment``); else the rate the limiter paces writes at now while it learns the
    limit (``learning``). None when nothing tells (no limiter, no documented rate).
    """
    state = client.rate_limits
    if state is not None and state.limits.write is not None and state.limits.write > 0:
        return float(state.limits.write), "configured"
    if state is not None and state.write.limit is not None and state.write.limit > 0:
        return float(state.write.limit), "service"
    documented = client.environment.write_rate
    if documented is not None and documented > 0:
        return float(documented), "environment"
    if state is not None and state.write.rate is not None and state.write.rate > 0:
        return float(state.write.rate), "learning"
    return None, "unknown"
