"""What the bulk commands print: a run's summary, a dry run's plan, a journal's status.

Each is a table for people, or JSON with ``--json``, on stdout.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import Any

import click

from contractsdk.bulk import BulkPlan, BulkSummary, JournalStatus, RowOutcome
from contractsdk.cli._output import console, dump_json, print_pairs, print_table

__all__ = [
    "LISTED",
    "exists_already",
    "more_line",
    "show_plan",
    "show_status",
    "show_summary",
    "unread_advice",
]

#: How many failures and invalid rows ``status`` and the summary list.
LISTED = 20

#: Why a row is invalid when its team has a contract of its name that the job's journal
#: did not make (``bulk/_admit.py``): made by a run with another journal (or none), or by
#: hand. Fixing the row is not the way out: its contract exists already.
_EXISTS = re.compile(
    r"team \d+ already has a contract named .* that this job's journal did not create"
)


def exists_already(reasons: str) -> bool:
    """Whether an invalid row's reasons are only that its contract exists, made elsewhere."""
    return "\n" not in reasons and _EXISTS.match(reasons) is not None


def more_line(count: int, where: str) -> str:
    """The line under a list cut at its first rows: ``… and 37 more (where they are)``."""
    return f"… and {count:,} more ({where})"


def _problem(outcome: RowOutcome) -> str:
    if outcome.incomplete:
        missing = ", ".join(outcome.parties_missing)
        return f"created, but parties not added: {missing} (bulk status says why)"
    if outcome.reasons:
        return "; ".join(_without_line(reason, outcome.line) for reason in outcome.reasons)
    return outcome.error or ""


def _without_line(reason: str, line: int | None) -> str:
    """A reason without the ``line N:`` its row's line column shows already."""
    return reason.removeprefix(f"line {line}: ") if line is not None else reason


def _reasons(error: str | None, line: int | None) -> str:
    """A journal record's reasons (one per line of ``error``), on one line."""
    return "; ".join(_without_line(reason, line) for reason in (error or "").split("\n"))


def _state(outcome: RowOutcome) -> str:
    return "incomplete" if outcome.incomplete else outcome.state


def _where(outcome: RowOutcome) -> str:
    return f"line {outcome.line}" if outcome.line is not None else f"row {outcome.row}"


def show_summary(
    args: argparse.Namespace,
    summary: BulkSummary,
    listed: list[RowOutcome],
    *,
    more: str | None = None,
    unread: tuple[int | None, str] | None = None,
) -> None:
    """Print a run's summary, after the rows it lists (failed, invalid, unknown, incomplete).

    ``more`` is the line that says how many rows the list leaves out (:func:`more_line`).
    ``unread``: after a retry, the rows of the input no run read (their count, None when
    not counted) and what to do (:func:`unread_advice`); in JSON ``"unread"`` and
    ``"next"`` (the table's caller says it on stderr).
    """
    if getattr(args, "json", False):
        shown: dict[str, Any] = {
            "summary": summary.to_json(),
            "problems": [o.to_json() for o in listed],
        }
        if unread is not None:
            shown["unread"], shown["next"] = unread
        dump_json(shown)
        return
    if listed:
        print_table(
            ["where", "state", "name", "problem"],
            [(_where(o), _state(o), o.name, _problem(o)) for o in listed],
        )
        if more is not None:
            click.echo(more)
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


def show_plan(
    args: argparse.Namespace,
    plan: BulkPlan,
    listed: list[RowOutcome],
    *,
    more: str | None = None,
) -> None:
    """Print a dry run's plan, after the invalid rows it lists (``more``: as for a summary)."""
    if getattr(args, "json", False):
        dump_json({"plan": plan.to_json(), "invalid": [o.to_json() for o in listed]})
        return
    if listed:
        print_table(
            ["where", "name", "problem"], [(_where(o), o.name, _problem(o)) for o in listed]
        )
        if more is not None:
            click.echo(more)
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


def show_status(args: argparse.Namespace, status: JournalStatus) -> None:
    """Print a journal's status: its job, counts by state, runs, unfinished and invalid rows."""
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
                "running": status.running,
                "unfinished": [_record_json(r) for r in status.unfinished],
                "invalid": [_record_json(r) for r in status.invalid],
                "unread": status.unread,
                "incomplete_count": status.incomplete_count,
                "incomplete": [
                    {"key": key, "row": row, "contract_id": contract, "missing": what}
                    for key, row, contract, what in status.incomplete
                ],
            }
        )
        return
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
    unread = unread_advice(status)
    if unread is not None:
        say(unread)
    say()
    latest = status.runs[-1]["run"] if status.runs else None
    print_table(
        ["run", "mode", "started", "finished", "outcome"],
        [
            (r["run"], r["mode"], r["started"], r["finished"], _outcome(r, status, latest))
            for r in status.runs
        ],
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
        unfinished = sum(status.counts[state] for state in ("failed", "sending", "pending"))
        _say_more(args, unfinished, len(status.unfinished))
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
        _say_more(args, status.incomplete_count, len(status.incomplete))
    if status.invalid:
        say()
        existing = sum(exists_already(r.error or "") for r in status.invalid)
        if not existing:
            advice = "fix the input and run `bulk create` again"
        elif existing == len(status.invalid) == status.invalid_count:
            advice = (
                "their contracts exist already, made outside this journal: nothing to do if "
                "they are these rows' contracts, else rename the rows and run `bulk create` "
                "again"
            )
        else:
            advice = (
                "fix the input and run `bulk create` again; a row whose contract exists "
                "already, made outside this journal, may need nothing"
            )
        say(f"invalid when the input was last read ({advice}):")
        print_table(
            ["row", "line", "name", "reasons"],
            [(r.row, r.line, r.name, _reasons(r.error, r.line)) for r in status.invalid],
            out=out,
        )
        _say_more(args, status.invalid_count, len(status.invalid))


def unread_advice(status: JournalStatus) -> str | None:
    """Rows of the input never read (the journal lacks them), and how to send them; or None.

    ``bulk retry`` sends the journal's rows and reads no file: after a ``bulk create``
    stopped part way through its file, only that command run again reaches the rest.
    """
    if status.unread == 0:
        return None
    creates = [found for found in status.runs if found["mode"] == "create"]
    run = creates[-1] if creates else None
    name = Path(run["source"]).name if run is not None and run["source"] else "the input"
    number = run["run"] if run is not None else "?"
    again = "run `bulk create` again with the same options"
    how = _ended(run)
    if status.unread is None:
        return (
            f"run {number} (bulk create) {how}: rows of {name} past those in the journal "
            f"may never have been read; {again} to send them (the journal skips the rows "
            "done; `bulk retry` reads no file)"
        )
    rows = "1 row" if status.unread == 1 else f"{status.unread:,} rows"
    return (
        f"{rows} of {name} never read: run {number} (bulk create) {how} before them, and "
        f"the journal does not hold them; {again} to send them (`bulk retry` reads no file)"
    )


def _ended(run: dict[str, Any] | None) -> str:
    """How a create run ended, as the line about its unread rows says it."""
    outcome = str(run["outcome"] or "") if run is not None and run["finished"] else ""
    if not outcome:
        return "did not finish"
    if outcome.startswith("error"):
        return "ended with an error"
    return {"stopped": "was stopped", "cancelled": "was cancelled"}.get(outcome, "ended")


def _say_more(args: argparse.Namespace, total: int, shown: int) -> None:
    """Under a section of ``bulk status`` cut at ``--limit``: how many more, how to see them."""
    if total > shown:
        command = f"contractsdk bulk status {shlex.quote(str(args.journal))} --limit {total}"
        click.echo(more_line(total - shown, f"`{command}` lists them"))


def _outcome(run: dict[str, Any], status: JournalStatus, latest: int | None) -> str | None:
    """How a run ended; for one that did not record it, whether it runs or was killed.

    Only the latest run can be running (a job locks its journal): an earlier run that did
    not finish ended without recording it.
    """
    if run["finished"] is not None:
        return str(run["outcome"]) if run["outcome"] is not None else None
    if run["run"] == latest and status.running is None:
        return "not finished (running, or killed)"
    if run["run"] == latest and status.running:
        return "running"
    return "ended without finishing (killed?)"


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
