"""Bulk contract creation: thousands of rows, at the rate limit, nothing lost, nothing twice.

:class:`BulkJob` reads rows from a CSV or JSONL file or any (async) iterable of mappings,
validates each against its template's terms before spending any quota, and creates the
valid ones through a :class:`~contractsdk.ContractClient` with bounded concurrency. Every
row's state is kept in a durable SQLite journal, so a job that is stopped, killed or
crashes resumes where it was: rows already created are skipped, and a row whose outcome
was unknown is looked for in its team (reconciled) before it is ever sent again.

See ``docs/bulk.md``.
"""

from contractsdk.bulk._engine import BulkJob
from contractsdk.bulk._example import example_csv
from contractsdk.bulk._journal import JournalError
from contractsdk.bulk._model import (
    BulkPlan,
    BulkProgress,
    BulkSummary,
    RowOutcome,
    format_progress,
)
from contractsdk.bulk._parties import BulkParty
from contractsdk.bulk._readers import CsvSource, IterableSource, JsonlSource, RowSource, SourceRow
from contractsdk.bulk._records import STATES, JournalRecord, RowState
from contractsdk.bulk._rows import UnknownColumnsError
from contractsdk.bulk._status import JournalStatus, read_status
from contractsdk.bulk._targets import resolve_contract_type, resolve_team

__all__ = [
    # the job
    "BulkJob",
    "RowOutcome",
    "BulkParty",
    "BulkSummary",
    "BulkPlan",
    "BulkProgress",
    "format_progress",
    # inputs
    "RowSource",
    "CsvSource",
    "JsonlSource",
    "IterableSource",
    "SourceRow",
    "UnknownColumnsError",
    "example_csv",
    # the journal
    "RowState",
    "STATES",
    "JournalError",
    "JournalRecord",
    "JournalStatus",
    "read_status",
    # resolving names
    "resolve_team",
    "resolve_contract_type",
]
