"""``contractsdk bulk create | status | retry | example``: bulk creation from the command line.

Progress goes to stderr: a rich progress bar on a terminal (bar, percent, rows, rows/s
over the rows actually sent, ETA, 429s and retries), a plain line every few seconds
otherwise (logs, CI). The summary goes to stdout (a table, or JSON with
``--json``); ``--report FILE`` writes one JSON line per row.

Exit codes: 0 every row created (now or before), with all its parties; 1 some rows failed,
are unknown or were not sent, or were created without all their parties (incomplete:
``bulk retry`` adds them); 3 some rows are invalid (and none of the above); 2 bad usage,
input or journal, or a ``--report`` that cannot be written (the job stops as for Ctrl-C);
130 stopped by Ctrl-C, 143 by SIGTERM (the rows in flight were recorded; run the same
command again to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.resources
import math
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from contractsdk._client import ContractClient
from contractsdk._config import ENV_VARS
from contractsdk._exceptions import ConfigurationError
from contractsdk._ids import parse_id
from contractsdk._ratelimit import RateLimits
from contractsdk._redact import Secrets
from contractsdk.bulk import (
    BulkJob,
    BulkSummary,
    JournalStatus,
    RowOutcome,
    UnknownColumnsError,
    read_status,
    resolve_contract_type,
    resolve_team,
)
from contractsdk.bulk._example import to_jsonl
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._parties import parties_from_flags
from contractsdk.bulk._readers import CsvSource, input_format
from contractsdk.cli._app import argument, cli, numeric_id, runs
from contractsdk.cli._bulk_output import (
    LISTED,
    exists_already,
    more_line,
    show_plan,
    show_status,
    show_summary,
    unread_advice,
)
from contractsdk.cli._bulk_report import check_report, report_file
from contractsdk.cli._output import console, write_file
from contractsdk.cli._progress import ProgressView, handle_interrupts
from contractsdk.cli._resources import make_client

__all__ = ["ProgressView", "example_csv", "parse_columns"]

F = TypeVar("F", bound=Callable[..., Any])


def parse_columns(items: list[str] | None) -> dict[str, str | None]:
    """Read ``--column COL=TERM`` flags; ``COL=`` ignores the column.

    Raises:
        ConfigurationError: A flag without ``=`` or without a column name.
    """
    columns: dict[str, str | None] = {}
    for item in items or ():
        column, sep, term = item.partition("=")
        if not sep or not column.strip():
            raise ConfigurationError(
                f"--column takes COLUMN=TERM (or COLUMN= to ignore it), got {item!r}"
            )
        columns[column.strip()] = term.strip() or None
    return columns


def _exists_already(outcome: RowOutcome) -> bool:
    """Whether a row is invalid only because its team has its contract, made elsewhere."""
    return outcome.state == "invalid" and exists_already("\n".join(outcome.reasons))


async def _drive(job: BulkJob, args: argparse.Namespace, *, retry: bool) -> int:
    """Run a job (or its retry) with progress, report and Ctrl-C handling; return the exit code.

    The journal's line and the progress start with the run's first outcome: until then
    the job checks its team, template and columns, and a refusal (a template not found, a
    journal that cannot be opened, an unknown column) is then the only thing said.
    """
    await asyncio.to_thread(check_report, args.report, job)
    out = console(stderr=True)
    progress = ProgressView(job, out, enabled=not args.quiet)
    listed: list[RowOutcome] = []
    problems = 0  # rows to list (failed, invalid, unknown, incomplete): the first are listed
    existing = 0  # invalid rows whose contract exists, made outside this journal
    said = False  # the report's failure, once
    announced = False
    drawer: asyncio.Task[None] | None = None

    def announce() -> None:
        nonlocal announced
        if not announced and not retry and job.journal is not None and not args.quiet:
            click.echo(f"journal: {job.journal} (job {job.job_id})", err=True)
        announced = True

    with (
        report_file(args.report) as report,
        contextlib.ExitStack() as shown,
        handle_interrupts(job, progress) as interrupts,
    ):
        waiting = None
        if progress.enabled and out.is_terminal:  # a terminal sees the checks are under way
            waiting = shown.enter_context(out.status(_checking(retry)))

        def start() -> None:
            nonlocal drawer
            if drawer is not None:
                return
            if waiting is not None:
                waiting.stop()  # one live display at a time: the bar replaces it
            announce()
            shown.enter_context(progress)
            drawer = asyncio.create_task(progress.run())

        try:
            outcomes = job.retry() if retry else job.run()
            async with contextlib.aclosing(outcomes):  # type: ignore[type-var]  # an async generator
                async for outcome in outcomes:
                    start()
                    progress.seen(outcome)
                    if report is not None and not report.write(outcome) and not said:
                        # As for Ctrl-C: no new request, those in flight are journaled.
                        said = True
                        job.stop()
                        progress.stop()
                        progress.say(
                            f"error: {report.problem()}; stopping (run the command again, "
                            "with another --report, to continue)"
                        )
                    if outcome.state in ("invalid", "failed", "sending") or outcome.incomplete:
                        problems += 1
                        if len(listed) < LISTED:
                            listed.append(outcome)
                    existing += _exists_already(outcome)
        except asyncio.CancelledError:
            if not interrupts["signal"]:
                raise
        finally:
            if drawer is not None:
                drawer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await drawer
    announce()  # a run without any outcome (no rows, or stopped before the first)
    if report is not None and report.error is not None and not said:
        click.echo(f"error: {report.problem()}", err=True)  # its last line, at close
    summary = job.summary
    assert summary is not None
    if not retry and not interrupts["signal"]:
        _say_if_no_rows(args, summary.rows)
    # A retry sends the journal's rows: rows of the file past where a stopped `bulk
    # create` left off are not in it, and the job is not done until that runs again.
    unread = await _unread(job) if retry and not interrupts["signal"] else None
    more = _more(problems - len(listed), args, job.journal)
    show_summary(args, summary, listed, more=more, unread=unread)
    report_failed = report is not None and report.error is not None
    if not getattr(args, "json", False) and not report_failed:  # that error says what next
        _say_what_is_next(summary, job.journal, existing=existing)
        if unread is not None:
            click.echo(f"next: {unread[1]}", err=True)
    if interrupts["signal"]:
        return 128 + interrupts["signal"]  # 130 for Ctrl-C, 143 for SIGTERM
    if report_failed:
        return 2  # as for a report that cannot be opened
    code = _exit_code(summary)
    return code if unread is None or code in (1, 2) else 1


async def _unread(job: BulkJob) -> tuple[int | None, str] | None:
    """Rows of the input a stopped `bulk create` never read, from the journal (or None)."""
    return None if job.journal is None else _unread_of(await read_status(job.journal, limit=0))


def _unread_of(status: JournalStatus) -> tuple[int | None, str] | None:
    """Rows of the input a stopped `bulk create` never read: their count and advice, or None."""
    advice = unread_advice(status)
    return None if advice is None else (status.unread, advice)


def _checking(retry: bool) -> str:
    """What a run does before its first outcome, shown on a terminal until then."""
    if retry:
        return "checking the job's team and template before sending…"
    return "checking the team, template and columns before sending…"


def _more(count: int, args: argparse.Namespace, journal: Path | None) -> str | None:
    """The line under a list of rows cut at its first ones: how many more, and where."""
    if count <= 0:
        return None
    if args.report is not None:
        where = f"--report {shlex.quote(args.report)} has every row"
    elif journal is not None:
        shown = count + LISTED
        where = (
            f"`contractsdk bulk status {shlex.quote(str(journal))} --limit {shown}` lists "
            "them, or --report FILE writes every row"
        )
    else:
        where = "--report FILE writes every row"
    return more_line(count, where)


def _say_what_is_next(summary: BulkSummary, journal: Path | None, *, existing: int = 0) -> None:
    """Say on stderr how to finish the rows a run left undone (``next: ...`` lines).

    ``existing`` of the invalid rows name contracts their team has already, made outside
    this journal: fixing them is not the way; there may be nothing to do.
    """
    if summary.dry_run:
        return
    left = summary.failed + summary.unknown + summary.incomplete
    to_fix = summary.invalid - existing
    if journal is not None and to_fix > 0:
        which = f"the other {to_fix:,} invalid rows" if existing else "the invalid rows"
        click.echo(
            f"next: fix {which} in the file and run the same command again (the "
            "journal skips the rows done)",
            err=True,
        )
    if existing:
        click.echo(f"next: {_existing_advice(existing, journal is not None)}", err=True)
    if not left and not summary.pending:
        return
    if journal is None:
        click.echo(
            "next: without a journal (--no-journal) these rows cannot be resumed or retried; "
            "run again with --journal FILE to keep track of them",
            err=True,
        )
        return
    where = shlex.quote(str(journal))
    if summary.pending and not to_fix:  # the line above says it
        click.echo(
            "next: run the same command again to send the rows not sent (the journal "
            "skips those done)",
            err=True,
        )
    if left:
        click.echo(
            f"next: `contractsdk bulk status {where}` shows why rows are not done; "
            f"`contractsdk bulk retry {where}` tries the failed and unknown ones again and "
            "adds missing parties",
            err=True,
        )


def _existing_advice(
    count: int, journal: bool, *, again: str = "run the same command again"
) -> str:
    """What to do about invalid rows whose contracts exist, made outside this journal."""
    made = (
        "made outside this journal (by a run with another journal or none, or by hand)"
        if journal
        else "made before this run (--no-journal keeps no record of earlier runs)"
    )
    if count == 1:
        return (
            f"the contract of 1 invalid row exists already, {made}: nothing to do if it is "
            "this row's contract (remove the row from the file); if not, rename the row and "
            f"{again}"
        )
    return (
        f"the contracts of {count:,} invalid rows exist already, {made}: nothing to do if "
        "they are these rows' contracts (remove the rows from the file); if not, rename "
        f"the rows and {again}"
    )


def _exit_code(summary: BulkSummary) -> int:
    """1 when some rows are not done (incomplete ones too: a party is missing), 3 invalid."""
    if summary.failed or summary.unknown or summary.pending or summary.incomplete:
        return 1
    if summary.invalid:
        return 3
    return 0


def _say_if_no_rows(args: argparse.Namespace, rows: int) -> None:
    """Say so when the input has no rows (a CSV file with only its header line)."""
    if rows == 0:
        click.echo(
            f"note: {args.file} has no rows, only a header line: nothing to create", err=True
        )


async def _make_job(args: argparse.Namespace, client: Any) -> BulkJob:
    if input_format(args.file) is None:
        raise ConfigurationError(
            f"cannot tell the format of {args.file} from its name: name it .csv (with a "
            "header line) or .jsonl (one JSON object per line)"
        )
    team_id = None
    if args.team is not None:
        team_id = await resolve_team(client, args.team, user_id=args.created_by)
    elif args.team_column is None:
        raise ConfigurationError("give --team (an id or a name) or --team-column")
    if not (
        args.contract_type or args.template or args.contract_type_column or args.template_column
    ):
        raise ConfigurationError(
            "give --contract-type (an id or a name) or --template (or --contract-type-column "
            "or --template-column, for one per row)"
        )
    contract_type_id = None
    if args.contract_type is not None:
        if team_id is None:
            if not args.contract_type.isdigit():
                raise ConfigurationError("with --team-column, give --contract-type as an id")
            contract_type_id = parse_id(args.contract_type, "--contract-type")
        else:
            contract_type_id = await resolve_contract_type(
                client, args.contract_type, team_id=team_id
            )
    journal = None if args.no_journal else (args.journal or f"{args.file}.journal.db")
    rows: Any = args.file
    if args.delimiter != ",":
        if input_format(args.file) != "csv":
            raise ConfigurationError(f"--delimiter is for a .csv file, not {args.file}")
        rows = CsvSource(args.file, delimiter=args.delimiter)
    return BulkJob(
        client,
        rows,
        team_id=team_id,
        contract_type_id=contract_type_id,
        template_id=args.template,
        created_by=args.created_by,
        columns=parse_columns(args.column),
        key_column=args.key_column,
        team_column=args.team_column,
        contract_type_column=args.contract_type_column,
        template_column=args.template_column,
        match_term=args.match_term,
        journal=journal,
        concurrency=args.concurrency,
        require_all=args.require_all,
        rounds=args.rounds,
        round_delay=args.round_delay,
        parties=parties_from_flags(
            getattr(args, "party", ()) or (),
            getattr(args, "party_user_column", ()) or (),
            getattr(args, "party_column", ()) or (),
        ),
    )


def _client(args: argparse.Namespace) -> ContractClient:
    """Build a bulk command's client, paced at ``--write-rate`` when given."""
    client = make_client(args)
    if args.write_rate is not None:
        state = client.rate_limits
        read = state.limits.read if state is not None else None
        client.set_rate_limits(RateLimits(read=read, write=args.write_rate))
    return client


async def _dry_run(args: argparse.Namespace, job: BulkJob) -> int:
    await asyncio.to_thread(check_report, args.report, job)
    listed: list[RowOutcome] = []
    with report_file(args.report) as report:

        def seen(outcome: RowOutcome) -> None:
            if report is not None:
                report.write(outcome)  # a failure is said once the plan is made
            if outcome.state == "invalid" and len(listed) < LISTED:
                listed.append(outcome)

        plan = await job.plan(on_outcome=seen)
    if report is not None and report.error is not None:
        click.echo(f"error: {report.problem()}", err=True)
    _say_if_no_rows(args, plan.rows)
    # Nothing is journaled in a dry run: the rows not listed are only in a report.
    show_plan(args, plan, listed, more=_more(plan.invalid - len(listed), args, None))
    if report is not None and report.error is not None:
        return 2
    return 3 if plan.invalid else 0


def example_csv() -> str:
    """Return the example CSV of tenancies (30 rows, three of them invalid on purpose).

    Read from the package (``contractsdk/bulk/examples/tenancies.csv``); a source checkout
    that does not ship it there yet falls back to the repository's ``examples/`` folder.

    Raises:
        ConfigurationError: Neither is there.
    """
    shipped = importlib.resources.files("contractsdk.bulk").joinpath("examples/tenancies.csv")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / "examples" / "tenancies.csv"
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise ConfigurationError("this installation has no example CSV")


# -- the command tree ------------------------------------------------------------------
#
# A command's parameters are listed, in --help and its usage line, in the order of its
# decorators, top to bottom.


@cli.group()
def bulk() -> None:
    """Create many contracts from a CSV or JSONL file, with a resumable journal.

    Exit codes of create and retry: 0 every row created, with all its parties; 1 some rows
    failed, are unknown, were not sent, or lack a party (incomplete: retry adds it); 3 some
    rows are invalid (and none of those); 2 bad usage, input, journal or --report; 130
    stopped by Ctrl-C, 143 by SIGTERM (run the same command again to resume).
    """


#: The first bytes of every SQLite database file.
_SQLITE = b"SQLite format 3\x00"


def _a_journal(_context: click.Context, parameter: click.Parameter, value: str) -> str:
    """Refuse an input file given for its journal, naming the journal (a usage error).

    ``bulk status rows.csv`` said "rows.csv is not a usable bulk journal: file is not a
    database".
    """
    path = Path(value)
    try:
        with path.open("rb") as handle:
            start = handle.read(len(_SQLITE))
    except OSError:
        return value  # missing, a folder, unreadable: the command says which
    if not start or start == _SQLITE:
        return value
    journal = Path(f"{value}.journal.db")
    where = (
        f"its journal is {shlex.quote(str(journal))}"
        if journal.is_file()
        else f"`bulk create {shlex.quote(value)}` keeps its journal in "
        f"{shlex.quote(str(journal))}, which is not there"
    )
    raise click.BadParameter(f"{value} is not a journal (an input file?): {where}", param=parameter)


JOURNAL = argument("journal", callback=_a_journal, help="The job's journal (FILE.journal.db).")


class _FiniteRange(click.FloatRange):
    """A float in a range, and finite: click's range lets ``nan`` and ``inf`` through.

    ``--write-rate nan`` reached the rate limiter, which said "RateLimits.write must be a
    positive number or None": the Python API's words, not the option's.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Read the number, or refuse it (a usage error naming the option)."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number", param, ctx)
        return number


def _at_least(name: str, low: float, default: float, text: str, metavar: str = "N") -> Any:
    """A numeric option of a run: at least ``low``, its default shown in ``--help``."""
    kind = click.IntRange(min=int(low)) if type(default) is int else _FiniteRange(min=low)
    return click.option(
        name, type=kind, default=default, show_default=True, metavar=metavar, help=text
    )


def _run_options(handler: F) -> F:
    """Add the options of a run (create and retry), after the command's own."""
    options = [
        _at_least("--concurrency", 1, 16, "Requests in flight."),
        _at_least("--rounds", 0, 2, "Extra tries of retryable rows."),
        _at_least(
            "--round-delay",
            0,
            3.0,
            "The wait before each extra round (throttled or failing rows).",
            "SECONDS",
        ),
        click.option("--report", metavar="FILE", help="Write one JSON line per row."),
        click.option("-q", "--quiet", is_flag=True, help="No progress display."),
        click.option(
            "--write-rate",
            type=_FiniteRange(min=0, min_open=True),
            metavar="PER_SECOND",
            help="The service's write limit, if not the environment's documented one.",
        ),
    ]
    for option in reversed(options):  # decorators apply bottom-up
        handler = option(handler)
    return handler


def _one_journal_choice(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Refuse ``--journal FILE`` with ``--no-journal`` (a usage error, exit 2).

    Given both, the run went without a journal, silently: no resume, no retry. click reads
    the options in the order they are given, so the second one given sees the first.
    """
    other = "no_journal" if param.name == "journal" else "journal"
    if value and ctx.params.get(other):
        raise click.UsageError(
            "give --journal FILE or --no-journal, not both (without a journal a job "
            "cannot be resumed or retried)",
            ctx,
        )
    return value


# -- the commands ----------------------------------------------------------------------


def _one_character(_context: click.Context, parameter: click.Parameter, value: str) -> str:
    r"""Read ``--delimiter``: one character, or ``tab`` (``\t``) for a tab."""
    if value in ("tab", "\\t"):
        return "\t"
    if len(value) != 1 or value in '\r\n"':
        raise click.BadParameter(f"give one character (or 'tab'), not {value!r}", param=parameter)
    return value


@runs(bulk, "create")
@argument("file", help="A .csv (with a header line) or .jsonl file.")
@click.option("--team", help="The team: an id, or a name among --created-by's teams.")
@click.option("--contract-type", help="The contract type: an id or a name.")
@click.option("--template", type=numeric_id, help="A template version id (default: newest).")
@click.option(
    "--created-by",
    type=numeric_id,
    required=True,
    metavar="USER_ID",
    help="The user who creates the contracts.",
)
@click.option(
    "--column",
    multiple=True,
    metavar="COL=TERM",
    help="Map a column to a term (COL= ignores it); repeatable.",
)
@click.option("--key-column", metavar="COL", help="A column with your own reference per row.")
@click.option(
    "--party",
    multiple=True,
    metavar="NAME:SIDE:ROLE[,ROLE]",
    help="A party every contract gets (e.g. tenant:second:party); repeatable.",
)
@click.option(
    "--party-user-column",
    multiple=True,
    metavar="NAME=COL",
    help="The column of user ids of a party (e.g. tenant=tenant_user_id).",
)
@click.option(
    "--party-column",
    multiple=True,
    metavar="NAME:COL=FIELD",
    help="A column giving a party's identity field (tenant:tenant_email=Email); repeatable.",
)
@click.option(
    "--match-term",
    default="contract_name",
    show_default=True,
    help="The term naming each contract.",
)
@click.option("--team-column", metavar="COL", help="A column of team ids.")
@click.option("--contract-type-column", metavar="COL", help="A column of contract type ids.")
@click.option("--template-column", metavar="COL", help="A column of template ids.")
@click.option(
    "--journal",
    metavar="FILE",
    callback=_one_journal_choice,
    help="The journal (default: FILE.journal.db).",
)
@click.option(
    "--no-journal", is_flag=True, callback=_one_journal_choice, help="No journal (and no resume)."
)
@click.option(
    "--delimiter",
    default=",",
    show_default=True,
    callback=_one_character,
    metavar="CHAR",
    help="A .csv file's field separator (';' as Excel writes in much of Europe; 'tab').",
)
@click.option("--dry-run", is_flag=True, help="Validate and estimate; send nothing.")
@click.option("--require-all", is_flag=True, help="Refuse rows with unanswered terms.")
@_run_options
async def bulk_create(args: argparse.Namespace) -> int:
    """Create a contract for each valid row of FILE, journaled and resumable.

    Each row is checked against the template's terms before it is sent, so no quota goes
    to an invalid row (--dry-run checks the whole file first, sending nothing); valid rows
    are created at the rate limit. The journal makes the command resumable: run it again
    to continue.
    """
    async with _client(args) as client:
        job = await _make_job(args, client)
        try:
            if args.dry_run:  # its check of the columns needs the same hint
                return await _dry_run(args, job)
            return await _drive(job, args, retry=False)
        except UnknownColumnsError as exc:
            hint = _column_hint(exc)
        raise ConfigurationError(hint)  # not in the except: no chained error to show


def _column_hint(error: UnknownColumnsError) -> str:
    """The unknown-columns message, with the flags that map or ignore each column."""
    flags = " ".join(
        f"--column {column}={term or 'TERM'}" for column, term in error.suggestions.items()
    )
    ignore = " ".join(f"--column {column}=" for column in error.suggestions)
    return (
        f"{error}: give {flags} (a term's name: `contractsdk terms show "
        f"{error.template_id}` lists them), or {ignore} to ignore"
    )


@runs(bulk, "status")
@JOURNAL
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=LISTED,
    show_default=True,
    help="Rows listed per section.",
)
async def bulk_status(args: argparse.Namespace) -> int:
    """Show a journal: its job, counts by state, runs, failures and reasons."""
    if not await asyncio.to_thread(Path(args.journal).exists):
        raise ConfigurationError(f"no journal at {args.journal}")
    # No client runs here to register its credential: those given are hidden all the same
    # (a journal written before errors were scrubbed may quote one a row held).
    secrets = Secrets(
        getattr(args, "api_key", None),
        getattr(args, "client_secret", None),
        *(os.environ.get(ENV_VARS[name]) for name in ("api_key", "client_secret")),
    )
    show_status(args, await read_status(args.journal, limit=args.limit))
    del secrets  # held until everything is printed
    return 0


@runs(bulk, "retry")
@JOURNAL
@_run_options
async def bulk_retry(args: argparse.Namespace) -> int:
    """Send again the rows of a journal that are not created.

    Reconciles and sends again every failed, unknown or unsent row, from the values kept in
    the journal (the input file is not read).
    """
    async with _client(args) as client:
        job = await BulkJob.from_journal(
            client,
            args.journal,
            concurrency=args.concurrency,
            rounds=args.rounds,
            round_delay=args.round_delay,
        )
        nothing = await _nothing_to_retry(args, job)
        if nothing is not None:
            return nothing
        return await _drive(job, args, retry=True)


async def _nothing_to_retry(args: argparse.Namespace, job: BulkJob) -> int | None:
    """When no row of the journal is for ``bulk retry``, say so and why; no run is started.

    A run would send nothing, and only add an empty run to the journal. Returns the exit
    code (3 when invalid rows are left to mend, as ``bulk create`` exits), or None when
    there are rows to retry, or when another process runs the job (the run says so).
    """
    status = await read_status(args.journal, limit=0)
    counts = status.counts
    unfinished = counts["pending"] + counts["sending"] + counts["failed"]
    if status.running or unfinished or status.incomplete_count:
        return None
    unread = _unread_of(status)
    await asyncio.to_thread(check_report, args.report, job)
    with report_file(args.report):
        pass  # no row: an empty report, as for a run of no rows
    to_fix, existing, superseded = await asyncio.to_thread(_invalid_rows, args.journal)
    invalid = to_fix + existing
    if not (counts["created"] or invalid or superseded):
        why = "the journal has no rows"
    else:
        counted = [
            f"{count:,} {what}"
            for count, what in (
                (counts["created"], "created"),
                (invalid, "invalid"),
                (superseded, "superseded by a changed row"),
            )
            if count
        ]
        lacks = ", lacks a party" if job.spec.parties else ""
        why = f"no row failed, is unknown{lacks} or was not sent ({', '.join(counted)})"
    click.echo(f"nothing to retry: {why}", err=True)
    if getattr(args, "json", False):
        show_summary(args, BulkSummary(job_id=job.job_id, run=0), [], unread=unread)
    else:
        again = "run `contractsdk bulk create` again with the same options"
        if to_fix:
            which = "invalid row" if to_fix == 1 else f"{to_fix:,} invalid rows"
            which = f"the other {which}" if existing else f"the {which}"
            click.echo(
                f"next: fix {which} in the file and {again} (bulk retry does not read the file)",
                err=True,
            )
        if existing:
            click.echo(f"next: {_existing_advice(existing, True, again=again)}", err=True)
        if unread is not None:
            click.echo(f"next: {unread[1]}", err=True)
    if unread is not None:
        return 1
    return 3 if to_fix or existing else 0


def _invalid_rows(journal: str) -> tuple[int, int, int]:
    """Count a journal's invalid rows: to fix, whose contract exists already, superseded.

    A superseded row is the old version of a row changed since (``bulk/_journal.py``):
    nothing to do about it.
    """
    opened = Journal.connect(journal, readonly=True)
    try:
        to_fix = existing = superseded = 0
        after = ""
        while page := opened.records(("invalid",), after=after, limit=512):
            for record in page:
                error = record.error or ""
                if error.startswith("superseded by row "):
                    superseded += 1
                elif exists_already(error):
                    existing += 1
                else:
                    to_fix += 1
            after = page[-1].key
        return to_fix, existing, superseded
    finally:
        opened.close()


@runs(bulk, "example", json_output=False)
@argument(
    "path",
    default="tenancies.csv",
    required=False,
    help="Where to write it: a .csv or .jsonl file (default tenancies.csv; - for stdout, CSV).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
async def bulk_example(args: argparse.Namespace) -> int:
    """Write the example tenancies (CSV, or JSON lines for a .jsonl PATH), to try bulk create.

    Then, against `contractsdk sandbox` (its export lines pasted):
    contractsdk bulk create tenancies.csv --team "Acme Legal"
    --contract-type "Assured Shorthold Tenancy Agreement" --created-by 7917
    --key-column reference
    """
    text = example_csv()
    if args.path == "-":
        click.echo(text, nl=False)
        return 0
    path = Path(args.path)
    kind = input_format(path)
    if kind is None:
        raise ConfigurationError(
            f"cannot tell which format to write {path} in from its name: name it .csv or .jsonl"
        )
    if await asyncio.to_thread(path.exists) and not args.force:
        raise ConfigurationError(f"{path} exists; give --force to overwrite it")
    rows = text.count("\n") - 1  # after the header line
    if kind == "jsonl":  # the same rows, one JSON object per line
        text = to_jsonl(text)
        rows = text.count("\n")
    await write_file(path, text.encode("utf-8"))
    click.echo(f"wrote {path} ({rows} rows)")
    return 0
