"""The ``--report`` file of ``bulk create`` and ``bulk retry``: one JSON line per row."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from contractsdk._exceptions import ConfigurationError
from contractsdk._redact import scrub
from contractsdk.bulk import BulkJob, RowOutcome

__all__ = ["Report", "check_report", "report_file"]


class Report:
    """The ``--report`` file: one JSON line per row, written as each outcome comes.

    Line-buffered, so a write that fails (a full disk) fails at its row, and a killed run
    leaves every line reported so far. A failure is kept in ``error`` rather than raised:
    the run then stops as for Ctrl-C (every row journaled, resumable) and nothing more is
    written.
    """

    def __init__(self, path: str, handle: TextIO) -> None:
        self.path = path
        self.error: OSError | None = None
        self._handle: TextIO | None = handle

    def write(self, outcome: RowOutcome) -> bool:
        """Write one outcome; False when the report cannot be written (now or before)."""
        if self._handle is None:
            return False
        try:
            self._handle.write(scrub(json.dumps(outcome.to_json(), ensure_ascii=False)) + "\n")
        except OSError as exc:
            self.error = exc
            self.close()
            return False
        return True

    def close(self) -> None:
        """Close the file; a failure to flush its last line is kept in ``error``."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            handle.close()
        except OSError as exc:  # the last line could not be flushed
            if self.error is None:
                self.error = exc

    def problem(self) -> str:
        """The line saying why the report cannot be written."""
        error = self.error
        reason = (error.strerror or str(error)) if error is not None else "unknown error"
        return f"cannot write the report {self.path}: {reason}"


@contextlib.contextmanager
def report_file(path: str | None) -> Iterator[Report | None]:
    if path is None:
        yield None
        return
    try:
        # A character that cannot be encoded (a lone surrogate in a service's message) is
        # written escaped rather than failing the line.
        handle = open(  # noqa: SIM115  # closed by the report, below
            path, "w", encoding="utf-8", errors="backslashreplace", buffering=1
        )
    except OSError as exc:
        raise ConfigurationError(f"cannot write the report {path}: {exc.strerror}") from None
    report = Report(path, handle)
    try:
        yield report
    finally:
        report.close()


def _same_file(one: Path, other: Path) -> bool:
    """Whether two paths name one file (through a link, or before it exists)."""
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them does not exist (yet)
        return one.resolve() == other.resolve()


def check_report(path: str | None, job: BulkJob) -> None:
    """Refuse a ``--report`` path that is the job's input or journal: it would be emptied.

    The journal's files include SQLite's ``-wal`` and ``-shm`` and the job's lock file.

    Raises:
        ConfigurationError: The report would overwrite one of them.
    """
    if path is None:
        return
    guarded: list[tuple[Path, str]] = []
    if job.spec.source.path is not None:
        guarded.append((job.spec.source.path, "the input file"))
    journal = job.journal
    if journal is not None:
        guarded.append((journal, "the journal"))
        guarded += [
            (journal.with_name(journal.name + end), f"the journal's {end} file")
            for end in ("-wal", "-shm", ".lock")
        ]
    report = Path(path)
    for other, what in guarded:
        if _same_file(report, other):
            raise ConfigurationError(
                f"--report {path} is {what} ({other}): the report would overwrite it; "
                "give the report another path"
            )
