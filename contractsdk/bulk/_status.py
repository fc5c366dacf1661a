"""Reading a job's journal without running it: ``contractsdk bulk status``."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs

from contractsdk.bulk._journal import Journal, JournalError
from contractsdk.bulk._lock import held
from contractsdk.bulk._records import JournalRecord
from contractsdk.bulk._schema import lock_path
from contractsdk.bulk._steps import incomplete_count, incomplete_records

__all__ = ["JournalStatus", "read_status"]


@attrs.frozen(kw_only=True)
class JournalStatus:
    """What a journal says about its job.

    Attributes:
        job_id: The job's id.
        identity: What the job id is derived from (environment, target, columns …).
        created: When the job's first run started (ISO 8601, UTC).
        sdk_version: The contractsdk version that created the journal.
        counts: Rows in each state, over every run.
        latest_counts: Rows in each state among the rows the latest run saw.
        runs: Every run: number, mode, source, start, end and how it ended.
        unfinished: The first rows that are ``failed``, ``sending`` or ``pending``, with
            their last errors.
        invalid: The first invalid rows of the latest run that read the input (a ``bulk
            create``), with their reasons.
        invalid_count: How many invalid rows that run has (``invalid`` is the first).
        incomplete_count: Rows whose contract exists but lacks a party of the job.
        incomplete: The first of them: ``(key, row, contract id, parties missing and why)``.
        running: True when a process holds the journal's lock, running a job with it (its
            latest run, if not finished, is running); False when none does (a run not
            finished then ended without recording it: the process was killed or crashed);
            None when it cannot be told (no advisory locks, as on Windows).
        unread: Rows of the input that the latest ``bulk create`` run did not read (it was
            stopped before them), which the journal therefore does not hold: only running
            ``bulk create`` again sends them, not ``bulk retry``. None when that run did not
            count them (it was killed, read an iterable of unknown length, or was stopped
            before the journal counted them): some may be unread.
    """

    job_id: str
    identity: dict[str, Any]
    created: str
    sdk_version: str
    counts: dict[str, int]
    latest_counts: dict[str, int]
    runs: list[dict[str, Any]]
    unfinished: list[JournalRecord]
    invalid: list[JournalRecord]
    invalid_count: int = 0
    incomplete_count: int = 0
    incomplete: list[tuple[str, int, int | None, str]] = attrs.field(factory=list)
    running: bool | None = None
    unread: int | None = 0

    @property
    def source(self) -> str | None:
        """The input file of the latest run that read one."""
        for run in reversed(self.runs):
            if run["source"]:
                return str(run["source"])
        return None


def _locked(path: str | os.PathLike[str]) -> bool | None:
    """Whether a process holds the journal's lock (``<journal>.lock``, see ``_writer.py``).

    (A job starting in that very instant is refused as if another ran: it says so, and
    nothing is lost; run it again.)
    """
    return held(lock_path(path))


def _read(path: str | os.PathLike[str], limit: int) -> JournalStatus:
    # The lock is tried before and after reading: a job that ends (or starts) meanwhile is
    # seen running, not taken for killed because its run was read unfinished.
    before = _locked(path)
    journal = Journal.connect(path, readonly=True)
    try:
        header = journal.header()
        if header is None:
            raise JournalError(f"{path} holds no job yet")
        runs = journal.runs()
        latest = runs[-1]["run"] if runs else None
        # Invalid rows are those of the last run that read the input: a `bulk retry`
        # reads none, and listed after one the section was empty while the counts said 3.
        # Filtered in the query: taken from the first rows of every run, the list was
        # short, or empty, when earlier runs' invalid rows sorted first.
        read = [found["run"] for found in runs if found["mode"] == "create"]
        invalid = (
            journal.records(("invalid",), limit=limit, run=read[-1], by_row=True) if read else []
        )
        invalid_count = journal.counts(read[-1])["invalid"] if read else 0
        counts = journal.counts()
        latest_counts = journal.counts(latest) if latest is not None else counts
        unfinished = journal.records(("failed", "sending", "pending"), limit=limit, by_row=True)
        incomplete = incomplete_records(journal, limit)
        incomplete_total = incomplete_count(journal)
        running = _either(before, _locked(path))
        return JournalStatus(
            job_id=header["job_id"],
            identity=header["identity"],
            created=header["created"],
            sdk_version=header["sdk_version"],
            counts=counts,
            latest_counts=latest_counts,
            runs=runs,
            unfinished=unfinished,
            invalid=invalid,
            invalid_count=invalid_count,
            incomplete_count=incomplete_total,
            incomplete=incomplete,
            running=running,
            unread=_unread(runs, running=running),
        )
    finally:
        journal.close()


def _unread(runs: list[dict[str, Any]], *, running: bool | None) -> int | None:
    """Rows of the input the latest ``bulk create`` run did not read (None: not known).

    A dry run reads without recording, and a retry reads no file: neither counts. A run
    still going (or that may be: no advisory locks, as on Windows) has read nothing yet
    that it will not read.
    """
    creates = [found for found in runs if found["mode"] == "create"]
    if not creates:
        return 0
    latest = creates[-1]
    if latest["finished"] is None:
        return 0 if running is not False and latest is runs[-1] else None
    if latest["unread"] is None and latest["outcome"] == "done":
        return 0  # a run of a journal before the count that read its input to the end
    return None if latest["unread"] is None else int(latest["unread"])


def _either(before: bool | None, after: bool | None) -> bool | None:
    """Held at either try: running; free at both: not; else not known."""
    if before or after:
        return True
    return None if before is None or after is None else False


async def read_status(path: str | os.PathLike[str], *, limit: int = 20) -> JournalStatus:
    """Read a journal's header, counts, runs and first problems (in a thread).

    Args:
        path: The journal file.
        limit: The most unfinished and invalid rows to return.

    Raises:
        JournalError: The file is missing or is not a bulk journal.
    """
    return await asyncio.to_thread(_read, path, limit)
