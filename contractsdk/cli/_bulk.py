"""``contractsdk bulk create | status | retry | example``: bulk creation from the command line.

Progress goes to stderr: a rich progress bar on a terminal (bar, percent, rows, rows/s
over the rows actually sent, ETA, 429s and retries), a plain line every few seconds
otherwise (logs, CI). The summary goes to stdout (a table, or JSON with
``--json``); ``--report FILE`` writes one JSON line per row.

Exit codes: 0 every row created (now or before); 1 some rows failed or are unknown;
3 some rows are invalid (and none failed); 2 bad usage, input or journal; 130 stopped by
Ctrl-C (the rows in flight were recorded; run the same command again to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.resources
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
)

from contractsdk._client import ContractClient
from contractsdk._exceptions import ConfigurationError
from contractsdk._ids import parse_id
from contractsdk._ratelimit import RateLimits
from contractsdk.bulk import (
    BulkJob,
    BulkProgress,
    BulkSummary,
    RowOutcome,
    read_status,
    resolve_contract_type,
    resolve_team,
)
from contractsdk.bulk._parties import parties_from_flags
from contractsdk.cli._app import argument, cli, numeric_id, runs
from contractsdk.cli._output import console, dump_json, print_pairs, print_table
from contractsdk.cli._resources import make_client

__all__ = ["ProgressView", "example_csv", "parse_columns"]

#: Seconds between progress redraws on a terminal, and between lines otherwise.
TTY_INTERVAL = 0.25
LOG_INTERVAL = 5.0
#: How many failures and invalid rows ``status`` and the summary list.
LISTED = 20


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


class ProgressView:
    """Shows a job's progress on stderr: a rich bar on a terminal, plain lines otherwise.

    Fed by the outcomes the job yields (:meth:`seen`) and its :meth:`BulkJob.progress`
    snapshots (total, 429s, retries). The rate counts only rows actually sent (created,
    failed or unknown), never rows skipped as created before or refused as invalid, over
    the time since the first of them was on its way; the ETA is the rows left at that rate.
    Both freeze when the job is stopped.

    Args:
        job: The job to report on.
        out: The console to draw on (stderr).
        enabled: False draws nothing.
    """

    def __init__(self, job: BulkJob, out: Console, *, enabled: bool = True) -> None:
        self.job = job
        self.out = out
        self.enabled = enabled
        self.done = 0
        self.sent = 0
        self.stopped = False
        self._start = time.monotonic()
        self._stopped_at: float | None = None
        self._bar: Progress | None = None
        self._task: Any = None

    # -- what is shown ---------------------------------------------------------------------

    def seen(self, outcome: RowOutcome) -> None:
        """Count one outcome the job yielded."""
        self.done += 1
        if outcome.skipped or outcome.state == "invalid":
            if self.sent == 0:  # the clock of the send rate starts at the first row sent
                self._start = time.monotonic()
            return
        self.sent += 1

    def stop(self) -> None:
        """Freeze the rate and ETA: the job sends nothing more."""
        self.stopped = True
        self._stopped_at = time.monotonic()

    def rate(self) -> float:
        """Rows sent per second."""
        end = self._stopped_at if self._stopped_at is not None else time.monotonic()
        elapsed = end - self._start
        return self.sent / elapsed if self.sent and elapsed > 0 else 0.0

    def eta(self, snapshot: BulkProgress) -> str:
        """The time left at the send rate, as ``m:ss``; ``-:--`` when it cannot be told."""
        rate = self.rate()
        if self.stopped:
            return "stopped"
        if snapshot.total is None or rate <= 0:
            return "-:--"
        seconds = round(max(0, snapshot.total - self.done) / rate)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def fields(self) -> dict[str, Any]:
        """The figures of the current snapshot, for the bar's columns and the plain line."""
        snapshot = self.job.progress()
        return {
            "total": snapshot.total,
            "rate": f"{self.rate():,.1f} rows/s",
            "eta": self.eta(snapshot),
            "created": snapshot.created,
            "skipped": snapshot.skipped,
            "invalid": snapshot.invalid,
            "failed": snapshot.failed,
            "throttled": snapshot.throttled,
            "retries": snapshot.retries,
        }

    def line(self) -> str:
        """One plain line: for logs and CI, where a bar cannot be redrawn."""
        f = self.fields()
        total = f"/{f['total']:,}" if f["total"] is not None else ""
        return (
            f"{self.done:,}{total} rows  {f['rate']}  ETA {f['eta']}  created {f['created']:,}"
            f"  skipped {f['skipped']:,}  invalid {f['invalid']:,}  failed {f['failed']:,}"
            f"  429s {f['throttled']:,}  retries {f['retries']:,}"
        )

    # -- drawing ---------------------------------------------------------------------------

    def __enter__(self) -> ProgressView:
        if self.enabled and self.out.is_terminal:
            self._bar = Progress(
                BarColumn(bar_width=24),
                TaskProgressColumn(),
                MofNCompleteColumn(),
                TextColumn("[cyan]{task.fields[rate]}"),
                TextColumn("ETA {task.fields[eta]}"),
                TextColumn(
                    "[green]created {task.fields[created]}[/] "
                    "[yellow]invalid {task.fields[invalid]}[/] "
                    "[red]failed {task.fields[failed]}[/] "
                    "[dim]skipped {task.fields[skipped]}[/] "
                    "[magenta]429s {task.fields[throttled]} retries {task.fields[retries]}"
                ),
                console=self.out,
                refresh_per_second=4,
            )
            self._bar.start()
            fields = self.fields()
            self._task = self._bar.add_task("rows", total=fields.pop("total"), **fields)
        return self

    def say(self, message: str) -> None:
        """Write a message on its own line, above the bar."""
        self.out.print(message, markup=False)

    def draw(self) -> None:
        """Update the bar, or write a plain line."""
        if not self.enabled:
            return
        if self._bar is not None:
            fields = self.fields()
            total = fields.pop("total")
            self._bar.update(self._task, completed=self.done, total=total, **fields)
        else:
            self.out.print(self.line(), markup=False)

    async def run(self) -> None:
        """Draw until cancelled."""
        interval = TTY_INTERVAL if self._bar is not None else LOG_INTERVAL
        while True:
            await asyncio.sleep(interval)
            self.draw()

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self.draw()
        if self._bar is not None:
            self._bar.stop()


@contextlib.contextmanager
def _report_file(path: str | None) -> Iterator[TextIO | None]:
    if path is None:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115  # closed by the with below
    except OSError as exc:
        raise ConfigurationError(f"cannot write the report {path}: {exc.strerror}") from None
    with handle:
        yield handle


@contextlib.contextmanager
def _interrupts(job: BulkJob, progress: ProgressView) -> Iterator[dict[str, bool]]:
    """First Ctrl-C: stop sending and drain; a second one: abort at once."""
    state = {"interrupted": False}
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_signal() -> None:
        if state["interrupted"]:
            progress.say("aborting: requests in flight are left 'sending' and reconciled next run")
            job.abort()
            if task is not None:
                task.cancel()
            return
        state["interrupted"] = True
        job.stop()
        progress.stop()
        progress.say(
            "stopping: no new requests; waiting for those in flight (Ctrl-C again to abort)"
        )

    installed = False
    with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows, or not main thread
        loop.add_signal_handler(signal.SIGINT, on_signal)
        installed = True
    try:
        yield state
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


async def _drive(job: BulkJob, args: argparse.Namespace, *, retry: bool) -> int:
    """Run a job (or its retry) with progress, report and Ctrl-C handling; return the exit code."""
    progress = ProgressView(job, console(stderr=True), enabled=not args.quiet)
    listed: list[RowOutcome] = []
    with (
        _report_file(args.report) as report,
        progress,
        _interrupts(job, progress) as interrupts,
    ):
        drawer = asyncio.create_task(progress.run())
        try:
            outcomes = job.retry() if retry else job.run()
            async with contextlib.aclosing(outcomes):  # type: ignore[type-var]  # an async generator
                async for outcome in outcomes:
                    progress.seen(outcome)
                    if report is not None:
                        report.write(json.dumps(outcome.to_json(), ensure_ascii=False) + "\n")
                    if outcome.state in ("invalid", "failed", "sending") and len(listed) < LISTED:
                        listed.append(outcome)
        except asyncio.CancelledError:
            if not interrupts["interrupted"]:
                raise
        finally:
            drawer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drawer
    summary = job.summary
    assert summary is not None
    _show_summary(args, summary, listed)
    if interrupts["interrupted"]:
        return 130
    return _exit_code(summary)


def _exit_code(summary: BulkSummary) -> int:
    if summary.failed or summary.unknown or summary.pending:
        return 1
    if summary.invalid:
        return 3
    return 0


def _problem(outcome: RowOutcome) -> str:
    if outcome.reasons:
        return "; ".join(outcome.reasons)
    return outcome.error or ""


def _where(outcome: RowOutcome) -> str:
    return f"line {outcome.line}" if outcome.line is not None else f"row {outcome.row}"


def _show_summary(args: argparse.Namespace, summary: BulkSummary, listed: list[RowOutcome]) -> None:
    if getattr(args, "json", False):
        dump_json({"summary": summary.to_json(), "problems": [o.to_json() for o in listed]})
        return
    if listed:
        print_table(
            ["where", "state", "name", "problem"],
            [(_where(o), o.state, o.name, _problem(o)) for o in listed],
        )
        console().print()
    rows: list[tuple[str, object]] = [
        ("job", summary.job_id),
        ("run", summary.run),
        ("rows", summary.rows),
        ("created", summary.created),
        *([("incomplete (parties missing)", summary.incomplete)] if summary.incomplete else []),
        ("already created", summary.skipped),
        ("invalid", summary.invalid),
        ("failed", summary.failed),
    ]
    if summary.unknown:
        rows.append(("outcome unknown", summary.unknown))
    if summary.pending:
        rows.append(("not sent (stopped)", summary.pending))
    rows += [
        ("found by reconciliation", summary.reconciled),
        ("429 answers", summary.throttled),
        ("retries", summary.retries),
        ("seconds", f"{summary.elapsed:.1f}"),
    ]
    print_pairs(rows)


async def _make_job(args: argparse.Namespace, client: Any) -> BulkJob:
    team_id = None
    if args.team is not None:
        team_id = await resolve_team(client, args.team, user_id=args.created_by)
    elif args.team_column is None:
        raise ConfigurationError("give --team (an id or a name) or --team-column")
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
    return BulkJob(
        client,
        args.file,
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


async def bulk_create(args: argparse.Namespace) -> int:
    """Create a contract for each valid row of a file, journaled and resumable."""
    async with _client(args) as client:
        job = await _make_job(args, client)
        if args.dry_run:
            return await _dry_run(args, job)
        if job.journal is not None and not args.quiet:
            click.echo(f"journal: {job.journal} (job {job.job_id})", err=True)
        return await _drive(job, args, retry=False)


async def _dry_run(args: argparse.Namespace, job: BulkJob) -> int:
    listed: list[RowOutcome] = []
    with _report_file(args.report) as report:

        def seen(outcome: RowOutcome) -> None:
            if report is not None:
                report.write(json.dumps(outcome.to_json(), ensure_ascii=False) + "\n")
            if outcome.state == "invalid" and len(listed) < LISTED:
                listed.append(outcome)

        plan = await job.plan(on_outcome=seen)
    if getattr(args, "json", False):
        dump_json({"plan": plan.to_json(), "invalid": [o.to_json() for o in listed]})
        return 3 if plan.invalid else 0
    if listed:
        print_table(
            ["where", "name", "problem"], [(_where(o), o.name, _problem(o)) for o in listed]
        )
        console().print()
    if plan.estimated_seconds is None:
        estimate = "unknown (no write rate known)"
    else:
        estimate = (
            f"{plan.estimated_seconds:,.1f} s at {plan.write_rate:g} writes/s ({plan.rate_source})"
        )
    print_pairs(
        [
            ("job", plan.job_id),
            ("rows", plan.rows),
            ("would create", plan.to_send),
            ("invalid", plan.invalid),
            ("already created", plan.skipped),
            ("unknown, to reconcile", plan.unknown),
            ("estimated time", estimate),
        ],
    )
    click.echo("dry run: nothing was sent and the journal was not changed")
    return 3 if plan.invalid else 0


async def bulk_retry(args: argparse.Namespace) -> int:
    """Send again the rows of a journal that are not created."""
    async with _client(args) as client:
        job = await BulkJob.from_journal(
            client, args.journal, concurrency=args.concurrency, rounds=args.rounds
        )
        return await _drive(job, args, retry=True)


async def bulk_status(args: argparse.Namespace) -> int:
    """Show a journal: its job, counts by state, runs, failures and reasons."""
    if not await asyncio.to_thread(Path(args.journal).exists):
        raise ConfigurationError(f"no journal at {args.journal}")
    status = await read_status(args.journal, limit=args.limit)
    if getattr(args, "json", False):
        dump_json(
            {
                "job_id": status.job_id,
                "identity": status.identity,
                "created": status.created,
                "sdk_version": status.sdk_version,
                "counts": status.counts,
                "latest_run_counts": status.latest_counts,
                "runs": status.runs,
                "unfinished": [_record_json(r) for r in status.unfinished],
                "invalid": [_record_json(r) for r in status.invalid],
                "incomplete_count": status.incomplete_count,
                "incomplete": [
                    {"key": key, "row": row, "contract_id": contract, "missing": what}
                    for key, row, contract, what in status.incomplete
                ],
            }
        )
        return 0
    identity = status.identity
    target = f"team {identity.get('team_id') or 'per row'}"
    template = identity.get("template_id")
    target += f", template {template}" if template != "latest" else ""
    if identity.get("contract_type_id"):
        target += f", contract type {identity['contract_type_id']}"
    out = console()
    say = click.echo
    say(f"job {status.job_id}: {target}, created by user {identity.get('created_by')}")
    say(f"against {identity.get('base_url')}; ", nl=False)
    say(f"journal created {status.created} by contractsdk {status.sdk_version}")
    if status.source:
        say(f"input: {status.source}")
    say()
    print_table(
        ["state", "rows", "in latest run"],
        [(state, status.counts[state], status.latest_counts[state]) for state in status.counts],
        out=out,
    )
    say()
    print_table(
        ["run", "mode", "started", "finished", "outcome"],
        [(r["run"], r["mode"], r["started"], r["finished"], r["outcome"]) for r in status.runs],
        out=out,
    )
    if status.unfinished:
        say()
        say(
            "not created yet (`bulk create` again with the same options continues the job; "
            "`bulk retry` sends just these):"
        )
        print_table(
            ["row", "state", "name", "attempts", "last error"],
            [(r.row, r.state, r.name, r.attempts, r.error) for r in status.unfinished],
            out=out,
        )
    if status.incomplete:
        say()
        say(
            f"{status.incomplete_count} contract(s) created without all their parties "
            "(`bulk retry` adds the missing ones):"
        )
        print_table(
            ["row", "contract", "missing"],
            [(row, contract, what) for _key, row, contract, what in status.incomplete],
            out=out,
        )
    if status.invalid:
        say()
        say("invalid in the latest run (fix the input and run `bulk create` again):")
        print_table(
            ["row", "line", "name", "reasons"],
            [(r.row, r.line, r.name, (r.error or "").replace("\n", "; ")) for r in status.invalid],
            out=out,
        )
    return 0


def _record_json(record: Any) -> dict[str, Any]:
    return {
        "row": record.row,
        "line": record.line,
        "key": record.key,
        "state": record.state,
        "name": record.name,
        "contract_id": record.contract_id,
        "attempts": record.attempts,
        "error": record.error,
    }


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


async def bulk_example(args: argparse.Namespace) -> int:
    """Write the example CSV of tenancies, to try bulk create with.

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
    if await asyncio.to_thread(path.exists) and not args.force:
        raise ConfigurationError(f"{path} exists; give --force to overwrite it")
    try:
        await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot write {path}: {exc.strerror}") from None
    click.echo(f"wrote {path} ({text.count(chr(10)) - 1} rows)")
    return 0


# -- the command tree ------------------------------------------------------------------


@cli.group()
def bulk() -> None:
    """Create many contracts from a CSV or JSONL file, with a resumable journal."""


def _running(command: click.Command) -> None:
    """Add the options of a run (create and retry) to a command."""
    command.params[-8:-8] = [
        click.Option(
            ["--concurrency"],
            type=click.IntRange(min=1),
            default=16,
            show_default=True,
            help="Requests in flight.",
        ),
        click.Option(
            ["--rounds"],
            type=click.IntRange(min=0),
            default=2,
            show_default=True,
            help="Extra tries of retryable rows.",
        ),
        click.Option(["--report"], metavar="FILE", help="Write one JSON line per row."),
        click.Option(["-q", "--quiet"], is_flag=True, help="No progress display."),
        click.Option(
            ["--write-rate"],
            type=click.FloatRange(min=0, min_open=True),
            metavar="PER_SECOND",
            help="The service's write limit, if not the environment's documented one.",
        ),
    ]


def _option(*decls: str, **kwargs: Any) -> click.Option:
    return click.Option(list(decls), **kwargs)


_create = runs(bulk, "create")(
    argument("file", help="A .csv (with a header line) or .jsonl file.")(bulk_create)
)
_create.help = (
    "Create a contract for each valid row of FILE, journaled and resumable.\n\n"
    "Every row is validated first; valid rows are created at the rate limit. The journal "
    "makes the command resumable: run it again to continue."
)
_create.params[1:1] = [
    _option("--team", help="The team: an id, or a name among --created-by's teams."),
    _option("--contract-type", help="The contract type: an id or a name."),
    _option("--template", type=numeric_id, help="A template version id (default: newest)."),
    _option(
        "--created-by",
        type=numeric_id,
        required=True,
        metavar="USER_ID",
        help="The user who creates the contracts.",
    ),
    _option(
        "--column",
        multiple=True,
        metavar="COL=TERM",
        help="Map a column to a term (COL= ignores it); repeatable.",
    ),
    _option("--key-column", metavar="COL", help="A column with your own reference per row."),
    _option(
        "--party",
        multiple=True,
        metavar="NAME:SIDE:ROLE[,ROLE]",
        help="A party every contract gets (e.g. tenant:second:party); repeatable.",
    ),
    _option(
        "--party-user-column",
        multiple=True,
        metavar="NAME=COL",
        help="The column of user ids of a party (e.g. tenant=tenant_user_id).",
    ),
    _option(
        "--party-column",
        multiple=True,
        metavar="NAME:COL=FIELD",
        help="A column giving a party's identity field (tenant:tenant_email=Email); repeatable.",
    ),
    _option(
        "--match-term",
        default="contract_name",
        show_default=True,
        help="The term naming each contract.",
    ),
    _option("--team-column", metavar="COL", help="A column of team ids."),
    _option("--contract-type-column", metavar="COL", help="A column of contract type ids."),
    _option("--template-column", metavar="COL", help="A column of template ids."),
    _option("--journal", metavar="FILE", help="The journal (default: FILE.journal.db)."),
    _option("--no-journal", is_flag=True, help="No journal (and no resume)."),
    _option("--dry-run", is_flag=True, help="Validate and estimate; send nothing."),
    _option("--require-all", is_flag=True, help="Refuse rows with unanswered terms."),
]
_running(_create)

_status = runs(bulk, "status")(
    argument("journal", help="The job's journal (FILE.journal.db).")(bulk_status)
)
_status.params[1:1] = [
    _option(
        "--limit",
        type=click.IntRange(min=1),
        default=LISTED,
        show_default=True,
        help="Rows listed per section.",
    )
]

_retry = runs(bulk, "retry")(
    argument("journal", help="The job's journal (FILE.journal.db).")(bulk_retry)
)
_retry.help = (
    "Send again the rows of a journal that are not created.\n\n"
    "Reconciles and sends again every failed, unknown or unsent row, from the values kept "
    "in the journal (the input file is not read)."
)
_running(_retry)

_example = runs(bulk, "example", json_output=False)(
    argument(
        "path",
        default="tenancies.csv",
        required=False,
        help="Where to write it (default tenancies.csv; - for stdout).",
    )(bulk_example)
)
_example.params[1:1] = [_option("--force", is_flag=True, help="Overwrite an existing file.")]
