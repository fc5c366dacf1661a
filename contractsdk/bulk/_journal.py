"""The durable journal of a bulk job: one SQLite file, one record per row.

# Invariants
#
# 1. One job per file. The ``job`` table holds exactly one header row; its ``job_id`` is
#    derived from the job's identity (environment, target, column mapping, key column,
#    match term). Opening a journal with another job id is refused, naming both ids.
# 2. One record per row key (``rows.key`` is the primary key). A row's state is one of
#    ``pending`` (valid, not sent yet), ``sending`` (a request may have gone out and its
#    outcome is not known), ``created``, ``invalid`` (refused locally, never sent) and
#    ``failed`` (sent, or refused by the service, and not created). Transitions:
#
#        (new) ─► pending ─► sending ─► created
#          │        ▲           │ ▲
#          ▼        │           ▼ │ (retry)
#        invalid    └── (not found by reconciliation) ◄── failed
#
#    ``created`` is final: nothing moves a row out of it. ``sending`` is left only by
#    reconciliation (the team's contracts are listed and the row's name looked up) or by
#    a completed request.
# 3. ``sending`` is committed BEFORE the request goes out, and the attempt is counted in
#    the same statement: ``attempts > 0`` means "a contract may exist for this row". A
#    row with ``attempts > 0`` is never sent again until a listing of its team has shown
#    that no contract of its name exists (or a request for it completed).
# 4. Names are unique: no two rows of one team that are not ``invalid`` share a name (the
#    partial unique index ``rows_name``), so a name found in a listing belongs to at most
#    one row, and reconciliation is unambiguous.
# 5. Every change is a transaction. A crash (kill -9, power loss) leaves each row in the
#    last committed state; the only state that says "unknown" is ``sending``, and it is
#    resolved by reconciliation before anything else happens on the next run.
# 6. Values are kept (``vals``, JSON) while a row is not created, so unfinished rows can
#    be sent again from the journal alone (``bulk retry``); they are dropped on creation.
#
# Durability: WAL with ``synchronous=FULL``. WAL makes each commit one append and lets
# ``bulk status`` read while a job writes. NORMAL would survive a killed process, but on
# a power loss it may roll back the last commits, and a lost ``sending`` mark is exactly
# the record that prevents a duplicate. FULL costs one fsync per commit (~0.5 ms here),
# which the writer thread amortises by committing every queued change in one transaction.
#
# Threads: one writer thread owns the connection and commits every queued operation in
# one transaction; an awaited change is on disk (see ``_writer.py``). The decision of what
# registering a row does is ``_admit.admit``; this class only asks and stores.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from contractsdk._redact import scrub
from contractsdk.bulk._admit import Conflicts, NameOwner, admit
from contractsdk.bulk._records import (
    STATES,
    JournalRecord,
    ListingResult,
    PreparedRow,
    Registered,
    RowState,
)
from contractsdk.bulk._schema import (
    SCHEMA,
    SCHEMA_VERSION,
    UNCLAIMED,
    JournalError,
    _now,
    check_journal_path,
)

__all__ = ["Journal", "JournalError", "SCHEMA_VERSION"]

_COLUMNS = (
    "key, row, line, name, team_id, template_id, state, contract_id, attempts, error, "
    "retryable, reconciled, vals, run, reported, digest"
)


def _refuse_other_databases(db: sqlite3.Connection) -> None:
    """Refuse a SQLite file with tables of its own and no job header: another program's.

    Opening it as a journal added the job's tables to it and switched it to WAL.
    """
    tables = sorted(
        found[0]
        for found in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not found[0].startswith("sqlite_")
    )
    if tables and "job" not in tables:
        shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
        raise JournalError(
            f"not a bulk journal: a SQLite database with other tables ({shown}); choose "
            "another journal path"
        )


class Journal:
    """The journal's operations, synchronous: used by one thread at a time.

    Args:
        connection: An open connection (autocommit mode; transactions are explicit).
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.db = connection

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def connect(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> Journal:
        """Open (or, unless ``readonly``, create) the journal file.

        Raises:
            JournalError: The file is missing (read-only), unreadable or not a journal.
        """
        target = Path(path)
        db: sqlite3.Connection | None = None
        try:
            if readonly:
                if not target.exists():
                    raise JournalError(f"no journal at {target}")
                if target.is_dir():  # SQLite's own words: "disk I/O error"
                    raise JournalError(f"{target} is a directory, not a journal file")
                uri = f"{target.resolve().as_uri()}?mode=ro"
                db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            else:
                check_journal_path(target)
                db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
                _refuse_other_databases(db)  # before anything is written to it
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA busy_timeout=5000")
            journal = cls(db)
            if not readonly:
                db.executescript(SCHEMA)
                journal._add_columns()
            journal.header()  # proves the file is a journal
            db.execute(UNCLAIMED)
        except BaseException as exc:
            if db is not None:
                db.close()  # not left for the garbage collector (Python 3.13 warns of it)
            if isinstance(exc, sqlite3.DatabaseError):
                raise JournalError(f"{target} is not a usable bulk journal: {exc}") from None
            if db is not None and isinstance(exc, JournalError) and str(target) not in str(exc):
                raise JournalError(f"{target}: {exc}") from None  # which file it was
            raise
        return journal

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def header(self) -> dict[str, Any] | None:
        """Return the job header, or None for a journal no job has used yet."""
        try:
            cursor = self.db.execute("SELECT * FROM job")  # key_salt: only from schema 3 on
            found = cursor.fetchone()
        except sqlite3.OperationalError as exc:
            raise JournalError(f"not a bulk journal ({exc})") from None
        if found is None:
            return None
        columns = dict(zip((column[0] for column in cursor.description), found, strict=True))
        try:
            return {
                "job_id": columns["job_id"],
                "identity": json.loads(columns["identity"]),
                "created": columns["created"],
                "sdk_version": columns["sdk_version"],
                "schema": columns["schema"],
                "key_salt": columns.get("key_salt"),
            }
        except (KeyError, ValueError) as exc:
            raise JournalError(f"not a bulk journal (its job header: {exc})") from None

    def claim(self, job_id: str, identity: Mapping[str, Any], sdk_version: str) -> None:
        """Write the job header, or check that the journal belongs to this job.

        Raises:
            JournalError: The journal belongs to another job (both ids are named), or was
                written by a newer schema.
        """
        header = self.header()
        if header is None:
            self.db.execute(
                "INSERT INTO job (singleton, job_id, identity, created, sdk_version, schema, "
                "key_salt) VALUES (1, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    json.dumps(identity, sort_keys=True),
                    _now(),
                    sdk_version,
                    SCHEMA_VERSION,
                    os.urandom(8).hex(),
                ),
            )
            return
        if header["schema"] > SCHEMA_VERSION:
            raise JournalError(
                f"the journal was written by a newer contractsdk ({header['sdk_version']}, "
                f"schema {header['schema']}); upgrade to use it"
            )
        if header["schema"] < SCHEMA_VERSION:  # connect() made the new tables and columns
            self.db.execute("UPDATE job SET schema = ?", (SCHEMA_VERSION,))
        if header["job_id"] != job_id:
            theirs = header["identity"]
            differences = sorted(
                key for key in set(theirs) | set(identity) if theirs.get(key) != identity.get(key)
            )
            raise JournalError(
                f"the journal belongs to another job: it holds job {header['job_id']}, this "
                f"is job {job_id} (they differ in: {', '.join(differences) or 'nothing known'}); "
                "use a new journal file for a new job, or the same options to resume"
            )

    # -- runs ------------------------------------------------------------------------------

    def begin_run(self, mode: str, source: str | None) -> int:
        """Start a run and return its number (1 for the first)."""
        cursor = self.db.execute(
            "INSERT INTO runs (mode, source, started) VALUES (?, ?, ?)", (mode, source, _now())
        )
        run = cursor.lastrowid
        assert run is not None
        return run

    def finish_run(self, run: int, outcome: str, *, unread: int | None = None) -> None:
        """Record how a run ended, and how many rows of its input it did not read."""
        self.db.execute(
            "UPDATE runs SET finished = ?, outcome = ?, unread = ? WHERE run = ?",
            (_now(), outcome, unread, run),
        )

    def runs(self) -> list[dict[str, Any]]:
        """Return every run, oldest first (``unread`` None where the journal predates it)."""
        names = ["run", "mode", "source", "started", "finished", "outcome"]
        if "unread" in self._columns("runs"):  # a schema 3 journal, read-only (not migrated)
            names.append("unread")
        cursor = self.db.execute(f"SELECT {', '.join(names)} FROM runs ORDER BY run")
        return [{"unread": None} | dict(zip(names, found, strict=True)) for found in cursor]

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}

    def _add_columns(self) -> None:
        """Add the columns later schemas added to tables an older one made.

        On every writable open, not only when a job claims the journal: a file whose
        tables an older contractsdk made, killed before its first run claimed it, was
        claimed without them, and the run's end failed on the missing column after its
        contracts were made.
        """
        if "key_salt" not in self._columns("job"):  # NULL: the rows' keys stay as sent
            self.db.execute("ALTER TABLE job ADD COLUMN key_salt TEXT")
        if "unread" not in self._columns("runs"):  # NULL: not known for earlier runs
            self.db.execute("ALTER TABLE runs ADD COLUMN unread INTEGER")

    def rows_past(self, total: int) -> int:
        """Rows of an input of ``total`` rows past the furthest row the journal holds."""
        furthest = self.db.execute("SELECT max(row) FROM rows").fetchone()[0]
        return max(0, total - int(furthest or 0))

    def last_source(self) -> str | None:
        """Return the input of the latest run that read a file."""
        found = self.db.execute(
            "SELECT source FROM runs WHERE source IS NOT NULL ORDER BY run DESC LIMIT 1"
        ).fetchone()
        return found[0] if found else None

    def pinned_template(self, team_id: int, contract_type_id: int) -> int | None:
        """Return the template version this job uses for a team's contract type, if pinned."""
        found = self.db.execute(
            "SELECT template_id FROM templates WHERE team_id = ? AND contract_type_id = ?",
            (team_id, contract_type_id),
        ).fetchone()
        return found[0] if found else None

    def pin_template(self, team_id: int, contract_type_id: int, template_id: int) -> int:
        """Pin a template version unless one is pinned already; return the pinned one."""
        self.db.execute(
            "INSERT OR IGNORE INTO templates VALUES (?, ?, ?)",
            (team_id, contract_type_id, template_id),
        )
        pinned = self.pinned_template(team_id, contract_type_id)
        assert pinned is not None
        return pinned

    # -- rows ------------------------------------------------------------------------------

    def get(self, key: str) -> JournalRecord | None:
        """Return a row's record."""
        found = self.db.execute(f"SELECT {_COLUMNS} FROM rows WHERE key = ?", (key,)).fetchone()
        return JournalRecord.from_db(found) if found else None

    def _write(self, prepared: PreparedRow, run: int, **fields: Any) -> JournalRecord:
        """Insert or update a row's record from a prepared row and explicit fields."""
        values = prepared.values
        record: dict[str, Any] = {
            "key": prepared.key,
            "row": prepared.number,
            "line": prepared.line,
            "digest": prepared.digest,
            "name": prepared.name,
            "team_id": prepared.team_id,
            "template_id": prepared.template_id,
            "vals": json.dumps(values, ensure_ascii=False) if values is not None else None,
            "run": run,
            "updated": _now(),
            **fields,
        }
        if record.get("error") is not None:
            record["error"] = scrub(record["error"])  # no secret is written to disk
        names = ", ".join(record)
        marks = ", ".join("?" * len(record))
        updates = ", ".join(f"{name} = excluded.{name}" for name in record if name != "key")
        self.db.execute(
            f"INSERT INTO rows ({names}) VALUES ({marks}) "
            f"ON CONFLICT (key) DO UPDATE SET {updates}",
            tuple(record.values()),
        )
        written = self.get(prepared.key)
        assert written is not None
        return written

    def register(self, run: int, rows: Iterable[PreparedRow]) -> list[Registered]:
        """Record the rows of one chunk, each as :func:`~contractsdk.bulk._admit.admit` decides.

        A row already created is skipped; an invalid row is recorded with its reasons; a
        row repeating an earlier row of this run, or using another row's contract name,
        or a name the team already has (from a contract this job did not create) is
        recorded invalid; every other row is recorded ``pending`` and sent.
        """
        return [self._register(run, prepared) for prepared in rows]

    def conflicts(self, prepared: PreparedRow, existing: JournalRecord | None) -> Conflicts:
        """Return what the journal knows about a row's contract name (one query each)."""
        sent: tuple[int, ...] = ()
        if existing is not None and existing.attempts > 0:
            sent = self.unclaimed(existing.team_id, existing.name)
        return Conflicts(
            other_row=self.name_owner(prepared.team_id, prepared.name, prepared.key),
            unclaimed=self.unclaimed(prepared.team_id, prepared.name),
            unclaimed_sent=sent,
        )

    def _register(self, run: int, prepared: PreparedRow) -> Registered:
        existing = self.get(prepared.key)
        decision = admit(existing, prepared, self.conflicts(prepared, existing), run=run)
        action = decision.action
        if action == "send":
            old = decision.supersedes
            if old is not None:  # before the write: the name is unique among valid rows
                self.db.execute(
                    "UPDATE rows SET state = 'invalid', retryable = 0, error = ?, updated = ? "
                    "WHERE key = ? AND state IN ('pending', 'failed')",
                    (
                        f"superseded by row {prepared.number} of run {run}, of the same name: "
                        f"the row changed (was row {old.row} of run {old.run})",
                        _now(),
                        old.key,
                    ),
                )
            record = self._write(
                prepared, run, state="pending", error=None, retryable=0, reported=0
            )
            return Registered(record=record, send=True)
        if action in ("skip", "hold"):
            self.db.execute(
                "UPDATE rows SET run = ?, row = ?, line = ?, reported = ?, updated = ? "
                "WHERE key = ?",
                (run, prepared.number, prepared.line, run, _now(), prepared.key),
            )
            kept = self.get(prepared.key)
            assert kept is not None
            return Registered(record=kept, send=False, skipped=action == "skip", note=decision.note)
        if action == "blocked":
            self.db.execute(
                "UPDATE rows SET state = 'failed', retryable = 0, error = ?, run = ?, row = ?, "
                "line = ?, reported = ?, updated = ? WHERE key = ?",
                (
                    scrub(decision.reasons[0]),
                    run,
                    prepared.number,
                    prepared.line,
                    run,
                    _now(),
                    prepared.key,
                ),
            )
            blocked = self.get(prepared.key)
            assert blocked is not None
            return Registered(record=blocked, send=False)
        row = prepared
        if action == "duplicate":
            row = attrs.evolve(prepared, key=f"dup:{prepared.number}:{prepared.key}")
        record = self._write(
            row,
            run,
            state="invalid",
            error="\n".join(decision.reasons),
            retryable=0,
            vals=None,
            reported=run,
        )
        return Registered(record=record, send=False, duplicate=action == "duplicate")

    def name_owner(self, team_id: int | None, name: str | None, key: str) -> NameOwner | None:
        """Return another valid row of a team with this name, if any."""
        if name is None:
            return None
        found = self.db.execute(
            "SELECT key, row, state, contract_id, run FROM rows "
            "WHERE team_id IS ? AND name = ? AND state != 'invalid' AND key != ?",
            (team_id, name, key),
        ).fetchone()
        if found is None:
            return None
        return NameOwner(
            key=found[0], row=found[1], state=found[2], contract_id=found[3], run=found[4]
        )

    def unclaimed(self, team_id: int | None, name: str | None) -> tuple[int, ...]:
        """Return the ids of listed contracts of a team with this name that no row claims."""
        if name is None or team_id is None:
            return ()
        return tuple(
            found[0]
            for found in self.db.execute(
                "SELECT contract_id FROM unclaimed WHERE team_id = ? AND name = ? "
                "ORDER BY contract_id",
                (team_id, name),
            )
        )

    def mark_sending(self, key: str) -> int:
        """Mark a row ``sending`` and count the attempt; return the attempts so far.

        Raises:
            JournalError: The row is not ``pending`` or ``failed`` (nothing is changed).
        """
        cursor = self.db.execute(
            "UPDATE rows SET state = 'sending', attempts = attempts + 1, updated = ? "
            "WHERE key = ? AND state IN ('pending', 'failed')",
            (_now(), key),
        )
        if cursor.rowcount != 1:
            record = self.get(key)
            state = record.state if record else "missing"
            raise JournalError(f"row {key} cannot be sent: it is {state}")
        found = self.db.execute("SELECT attempts FROM rows WHERE key = ?", (key,)).fetchone()
        return int(found[0])

    def mark_created(self, key: str, contract_id: int | None, run: int) -> JournalRecord:
        """Record a created contract (final).

        Raises:
            JournalError: The row was created already, as another contract: two processes
                ran the job at once (through two names of one journal file), and the
                service now has both contracts. Said, not dropped: the second one's id was
                otherwise recorded nowhere.
        """
        cursor = self.db.execute(
            "UPDATE rows SET state = 'created', contract_id = ?, error = NULL, retryable = 0, "
            "vals = NULL, reported = ?, updated = ? WHERE key = ? AND state != 'created'",
            (contract_id, run, _now(), key),
        )
        record = self.get(key)
        assert record is not None
        if cursor.rowcount == 0 and record.contract_id != contract_id:
            raise JournalError(
                f"row {record.row} (key {key}) was created twice, as contracts "
                f"{record.contract_id} and {contract_id}: another process ran this job with "
                "the same journal file under another name (a hard link?); delete one contract "
                "by hand, and run one job per journal"
            )
        return record

    def mark_failed(
        self, key: str, error: str, *, retryable: bool, run: int, final: bool, extra_attempts: int
    ) -> JournalRecord:
        """Record a request that failed without creating a contract.

        Args:
            key: The row key.
            error: What went wrong.
            retryable: Whether trying again may succeed.
            run: The current run.
            final: Whether this is the row's outcome for this run (else it is tried again).
            extra_attempts: Attempts the client made beyond the one counted when sending.
        """
        self.db.execute(
            "UPDATE rows SET state = 'failed', error = ?, retryable = ?, "
            "attempts = attempts + ?, reported = CASE WHEN ? THEN ? ELSE reported END, "
            "updated = ? WHERE key = ? AND state = 'sending'",
            (scrub(error), int(retryable), extra_attempts, int(final), run, _now(), key),
        )
        record = self.get(key)
        assert record is not None
        return record

    def mark_unknown(self, key: str, error: str, extra_attempts: int) -> JournalRecord:
        """Record a request whose outcome is unknown: the row stays ``sending``."""
        self.db.execute(
            "UPDATE rows SET error = ?, retryable = 1, attempts = attempts + ?, updated = ? "
            "WHERE key = ? AND state = 'sending'",
            (scrub(error), extra_attempts, _now(), key),
        )
        record = self.get(key)
        assert record is not None
        return record

    def fail_unsent(self, run: int) -> int:
        """End a run's rows that were sent, found not created, and not sent again.

        They are ``pending`` with ``attempts > 0`` after the run's last reconciliation; they
        become ``failed`` (retryable) so that the run reports them as not created.
        """
        cursor = self.db.execute(
            "UPDATE rows SET state = 'failed', retryable = 1, "
            "error = 'no contract was created: the last request''s outcome was unknown and "
            "the team has no contract of this name' "
            "|| coalesce(' (last error: ' || error || ')', ''), updated = ? "
            "WHERE run = ? AND reported < ? AND state = 'pending' AND attempts > 0",
            (_now(), run, run),
        )
        return cursor.rowcount

    # -- reconciliation --------------------------------------------------------------------

    def teams_to_reconcile(self, run: int | None = None) -> list[int]:
        """Return the teams of rows that may have a contract the journal does not know.

        Those are rows not created whose request may have gone out (``attempts > 0``):
        ``sending`` rows above all, and ``pending`` / ``failed`` rows that were sent before.

        Args:
            run: Only rows of this run (None: every row).
        """
        query = (
            "SELECT DISTINCT team_id FROM rows WHERE attempts > 0 AND team_id IS NOT NULL "
            "AND state IN ('sending', 'pending', 'failed')"
        )
        parameters: tuple[Any, ...] = ()
        if run is not None:
            query += " AND run = ?"
            parameters = (run,)
        return [found[0] for found in self.db.execute(query, parameters)]

    def has_unknown(self) -> bool:
        """Tell whether a row is ``sending`` or a party step ``adding``: sent, outcome unknown."""
        found = self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM rows WHERE state = 'sending') "
            "OR EXISTS (SELECT 1 FROM parties WHERE state = 'adding')"
        ).fetchone()
        return bool(found[0])

    def has_sending(self, run: int | None = None) -> bool:
        """Tell whether any row (of a run) is ``sending``."""
        if run is None:
            found = self.db.execute("SELECT 1 FROM rows WHERE state = 'sending' LIMIT 1")
        else:
            found = self.db.execute(
                "SELECT 1 FROM rows WHERE state = 'sending' AND run = ? LIMIT 1", (run,)
            )
        return found.fetchone() is not None

    def apply_listing(self, team_id: int, contracts: Iterable[tuple[str, int]]) -> ListingResult:
        """Store a team's contracts (name, id) and settle the rows they answer for.

        A row that may have been sent (``attempts > 0``) and is not created is matched by
        name with contracts no other row has claimed: one match makes it ``created``
        (``reconciled``); several make it ``failed`` (ambiguous, to check by hand); none
        turn a ``sending`` row ``pending`` (known not created, so it may be sent again).
        """
        self.db.execute("DELETE FROM team_contracts WHERE team_id = ?", (team_id,))
        self.db.executemany(
            "INSERT OR IGNORE INTO team_contracts VALUES (?, ?, ?)",
            ((team_id, name, contract_id) for name, contract_id in contracts),
        )
        candidates = self.db.execute(
            "SELECT key, name, state FROM rows WHERE team_id = ? AND attempts > 0 "
            "AND state IN ('sending', 'pending', 'failed')",
            (team_id,),
        ).fetchall()
        result = ListingResult()
        now = _now()
        for key, name, state in candidates:
            matches = self.unclaimed(team_id, name)
            if len(matches) == 1:
                self.db.execute(
                    "UPDATE rows SET state = 'created', contract_id = ?, reconciled = 1, "
                    "error = NULL, retryable = 0, vals = NULL, updated = ? WHERE key = ?",
                    (matches[0], now, key),
                )
                result += ListingResult(created=1)
            elif len(matches) > 1:
                ids = ", ".join(map(str, sorted(matches)))
                self.db.execute(
                    "UPDATE rows SET state = 'failed', retryable = 0, error = ?, updated = ? "
                    "WHERE key = ?",
                    (
                        scrub(
                            f"{len(matches)} contracts named {name!r} in team {team_id} "
                            f"(ids {ids}) could be this row's; check them by hand"
                        ),
                        now,
                        key,
                    ),
                )
                result += ListingResult(ambiguous=1)
            elif state == "sending":
                self.db.execute(
                    "UPDATE rows SET state = 'pending', updated = ? WHERE key = ?", (now, key)
                )
                result += ListingResult(not_found=1)
        return result

    # -- paging ----------------------------------------------------------------------------

    def to_send(
        self, run: int, after: str, limit: int, *, every_failure: bool
    ) -> list[JournalRecord]:
        """Return a page of this run's rows to send again, in key order after ``after``.

        Those are ``pending`` rows not reported yet and ``failed`` rows with values: the
        retryable ones, or every one with ``every_failure`` (``bulk retry``).
        """
        failed = "state = 'failed'" if every_failure else "(state = 'failed' AND retryable = 1)"
        # Invariant 3: a row that was sent is not sent while its name is in the listing.
        listed = (
            "attempts > 0 AND EXISTS (SELECT 1 FROM unclaimed AS u "
            "WHERE u.team_id = rows.team_id AND u.name = rows.name)"
        )
        cursor = self.db.execute(
            f"SELECT {_COLUMNS} FROM rows WHERE run = ? AND reported < ? AND key > ? "
            f"AND vals IS NOT NULL AND (state = 'pending' OR {failed}) AND NOT ({listed}) "
            "ORDER BY key LIMIT ?",
            (run, run, after, limit),
        )
        return [JournalRecord.from_db(found) for found in cursor]

    def adopt_unfinished(self, run: int) -> int:
        """Make every unfinished row (not created, not invalid) part of run ``run``."""
        cursor = self.db.execute(
            "UPDATE rows SET run = ?, reported = 0, updated = ? "
            "WHERE state IN ('pending', 'sending', 'failed')",
            (run, _now()),
        )
        return cursor.rowcount

    def unreported(self, run: int, limit: int) -> list[JournalRecord]:
        """Return a page of a run's rows whose outcome is not reported yet; mark them reported."""
        rows = [
            JournalRecord.from_db(found)
            for found in self.db.execute(
                f"SELECT {_COLUMNS} FROM rows WHERE run = ? AND reported < ? ORDER BY key LIMIT ?",
                (run, run, limit),
            )
        ]
        self.db.executemany(
            "UPDATE rows SET reported = ? WHERE key = ?", ((run, row.key) for row in rows)
        )
        return rows

    # -- reading ---------------------------------------------------------------------------

    def counts(self, run: int | None = None) -> dict[str, int]:
        """Return the number of rows in each state (of one run, or of all)."""
        query = "SELECT state, count(*) FROM rows"
        parameters: tuple[Any, ...] = ()
        if run is not None:
            query += " WHERE run = ?"
            parameters = (run,)
        found = dict(self.db.execute(query + " GROUP BY state", parameters).fetchall())
        return {state: int(found.get(state, 0)) for state in STATES}

    def row_count(self) -> int:
        """Return how many rows the journal holds."""
        found = self.db.execute("SELECT count(*) FROM rows").fetchone()
        return int(found[0])

    def records(
        self,
        states: Sequence[RowState],
        *,
        after: str = "",
        limit: int = 100,
        run: int | None = None,
        by_row: bool = False,
    ) -> list[JournalRecord]:
        """Return a page of rows in the given states (of one run), in key order.

        ``by_row``: the first rows of the file instead (``bulk status`` lists them; keys
        sort ``ref:R10`` before ``ref:R2``), for a first page only (``after`` is a key).
        """
        marks = ", ".join("?" * len(states))
        in_run = "" if run is None else " AND run = ?"
        order = "row, key" if by_row else "key"
        cursor = self.db.execute(
            f"SELECT {_COLUMNS} FROM rows WHERE state IN ({marks}) AND key > ?{in_run} "
            f"ORDER BY {order} LIMIT ?",
            (*states, after, *(() if run is None else (run,)), limit),
        )
        return [JournalRecord.from_db(found) for found in cursor]

    def copy_to(self, path: Path) -> None:
        """Write a consistent copy of the journal to ``path`` (SQLite's backup API)."""
        target = sqlite3.connect(path)
        try:
            self.db.backup(target)
        finally:
            target.close()
