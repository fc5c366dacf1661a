r"""``contractsdk bulk create | status | retry``: bulk creation from the command line.

Progress goes to stderr: one line redrawn in place (``\r``) on a terminal, a plain line
every few seconds otherwise (logs, CI). The summary goes to stdout (a table, or JSON with
``--json``); ``--report FILE`` writes one JSON line per row.

Exit codes: 0 every row created (now or before); 1 some rows failed or are unknown;
3 some rows are invalid (and none failed); 2 bad usage, input or journal; 130 stopped by
Ctrl-C (the rows in flight were recorded; run the same command again to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from contractsdk._client import ContractClient
from contractsdk._exceptions import ConfigurationError
from contractsdk._ratelimit import RateLimits
from contractsdk.bulk import (
    BulkJob,
    BulkSummary,
    RowOutcome,
    format_progress,
    read_status,
    resolve_contract_type,
    resolve_team,
)
from contractsdk.cli._output import dump_json, print_table
from contractsdk.cli._resources import make_client

__all__ = ["add_commands"]

#: Seconds between progress redraws on a terminal, and between lines otherwise.
TTY_INTERVAL = 0.25
LOG_INTERVAL = 5.0
#: How many failures and invalid rows ``status`` and the summary list.
LISTED = 20


def _id(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a numeric id, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


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


class Progress:
    """Draws a job's progress on a stream: redrawn in place on a TTY, plain lines otherwise.

    Args:
        job: The job to report on.
        stream: Where to draw (stderr).
        enabled: False draws nothing.
    """

    def __init__(self, job: BulkJob, stream: TextIO, *, enabled: bool = True) -> None:
        self.job = job
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self._drawn = False

    def draw(self) -> None:
        """Draw the current line."""
        if not self.enabled:
            return
        line = format_progress(self.job.progress())
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            self._drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def say(self, message: str) -> None:
        """Write a message on its own line (ending a redrawn line first)."""
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False
        self.stream.write(message + "\n")
        self.stream.flush()

    async def run(self) -> None:
        """Draw until cancelled."""
        interval = TTY_INTERVAL if self.tty else LOG_INTERVAL
        while True:
            await asyncio.sleep(interval)
            self.draw()

    def finish(self) -> None:
        """Draw the last line and end it."""
        if self.enabled:
            self.draw()
            if self._drawn:
                self.stream.write("\n")
                self._drawn = False
            self.stream.flush()


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
def _interrupts(job: BulkJob, progress: Progress) -> Iterator[dict[str, bool]]:
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
    progress = Progress(job, sys.stderr, enabled=not args.quiet)
    listed: list[RowOutcome] = []
    with _report_file(args.report) as report, _interrupts(job, progress) as interrupts:
        drawer = asyncio.create_task(progress.run())
        try:
            outcomes = job.retry() if retry else job.run()
            async with contextlib.aclosing(outcomes):  # type: ignore[type-var]  # an async generator
                async for outcome in outcomes:
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
            if job.summary is not None and job.summary.rows:
                progress.finish()
    summary = job.summary
    assert summary is not None
    _show_summary(args, summary, listed)
    if interrupts["interrupted"]:
        return 130
    return _exit_code(summary)


def _print_pairs(rows: list[tuple[str, object]]) -> None:
    """Print ``label  value`` lines, the values aligned (a table without a header)."""
    width = max(len(label) for label, _value in rows)
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")


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
        print()
    rows: list[tuple[str, object]] = [
        ("job", summary.job_id),
        ("run", summary.run),
        ("rows", summary.rows),
        ("created", summary.created),
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
    _print_pairs(rows)


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
            contract_type_id = int(args.contract_type)
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
            print(f"journal: {job.journal} (job {job.job_id})", file=sys.stderr)
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
        print()
    if plan.estimated_seconds is None:
        estimate = "unknown (no write rate known)"
    else:
        estimate = (
            f"{plan.estimated_seconds:,.1f} s at {plan.write_rate:g} writes/s ({plan.rate_source})"
        )
    _print_pairs(
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
    print("dry run: nothing was sent and the journal was not changed")
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
            }
        )
        return 0
    identity = status.identity
    target = f"team {identity.get('team_id') or 'per row'}"
    template = identity.get("template_id")
    target += f", template {template}" if template != "latest" else ""
    if identity.get("contract_type_id"):
        target += f", contract type {identity['contract_type_id']}"
    print(f"job {status.job_id}: {target}, created by user {identity.get('created_by')}")
    print(f"against {identity.get('base_url')}", end="; ")
    print(f"journal created {status.created} by contractsdk {status.sdk_version}")
    if status.source:
        print(f"input: {status.source}")
    print()
    print_table(
        ["state", "rows", "in latest run"],
        [(state, status.counts[state], status.latest_counts[state]) for state in status.counts],
    )
    print()
    print_table(
        ["run", "mode", "started", "finished", "outcome"],
        [(r["run"], r["mode"], r["started"], r["finished"], r["outcome"]) for r in status.runs],
    )
    if status.unfinished:
        print()
        print(
            "not created yet (`bulk create` again with the same options continues the job; "
            "`bulk retry` sends just these):"
        )
        print_table(
            ["row", "state", "name", "attempts", "last error"],
            [(r.row, r.state, r.name, r.attempts, r.error) for r in status.unfinished],
        )
    if status.invalid:
        print()
        print("invalid in the latest run (fix the input and run `bulk create` again):")
        print_table(
            ["row", "line", "name", "reasons"],
            [(r.row, r.line, r.name, (r.error or "").replace("\n", "; ")) for r in status.invalid],
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


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """Add ``bulk create``, ``bulk status`` and ``bulk retry`` to the command list."""
    bulk = commands.add_parser(
        "bulk", help="create many contracts from a CSV or JSONL file, with a resumable journal"
    )
    actions = bulk.add_subparsers(dest="action", required=True, metavar="ACTION")

    def running(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--concurrency", type=_positive, default=16, help="requests in flight (default 16)"
        )
        parser.add_argument(
            "--rounds", type=int, default=2, help="extra tries of retryable rows (default 2)"
        )
        parser.add_argument("--report", metavar="FILE", help="write one JSON line per row")
        parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
        parser.add_argument(
            "--write-rate",
            type=float,
            metavar="PER_SECOND",
            help="the service's write limit, if not the environment's documented one",
        )

    create = actions.add_parser(
        "create",
        parents=[common],
        help="create a contract per row of FILE",
        description="Validate every row, then create a contract per valid row at the rate "
        "limit. The journal makes the command resumable: run it again to continue.",
    )
    create.add_argument("file", help="a .csv (with a header line) or .jsonl file")
    target = create.add_argument_group("target")
    target.add_argument("--team", help="the team: an id, or a name among --created-by's teams")
    target.add_argument("--contract-type", help="the contract type: an id or a name")
    target.add_argument("--template", type=_id, help="a template version id (default: newest)")
    target.add_argument("--created-by", type=_id, required=True, metavar="USER_ID")
    columns = create.add_argument_group("columns")
    columns.add_argument(
        "--column",
        action="append",
        metavar="COL=TERM",
        help="map a column to a term (COL= ignores it); repeatable",
    )
    columns.add_argument("--key-column", metavar="COL", help="your own reference for each row")
    columns.add_argument(
        "--match-term", default="contract_name", help="the term naming each contract"
    )
    columns.add_argument("--team-column", metavar="COL", help="a column of team ids")
    columns.add_argument("--contract-type-column", metavar="COL", help="a column of type ids")
    columns.add_argument("--template-column", metavar="COL", help="a column of template ids")
    journal = create.add_argument_group("journal")
    journal.add_argument("--journal", metavar="FILE", help="default: FILE.journal.db")
    journal.add_argument("--no-journal", action="store_true", help="no journal (no resume)")
    create.add_argument(
        "--dry-run", action="store_true", help="validate and estimate; send nothing"
    )
    create.add_argument("--require-all", action="store_true", help="refuse unanswered terms")
    running(create)
    create.set_defaults(handler=bulk_create)

    status = actions.add_parser(
        "status", parents=[common], help="show a journal: counts by state, failures, reasons"
    )
    status.add_argument("journal")
    status.add_argument("--limit", type=_positive, default=LISTED, help="rows listed (20)")
    status.set_defaults(handler=bulk_status)

    retry = actions.add_parser(
        "retry",
        parents=[common],
        help="send again the rows of a journal that are not created",
        description="Reconcile and send again every failed, unknown or unsent row, from the "
        "values kept in the journal (the input file is not read).",
    )
    retry.add_argument("journal")
    running(retry)
    retry.set_defaults(handler=bulk_retry)
