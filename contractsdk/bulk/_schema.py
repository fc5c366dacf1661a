"""The journal file: its schema, the one view of unclaimed contracts, where it may live.

The invariants the schema serves are stated in ``_journal.py``'s header. Changing a table
is a new ``SCHEMA_VERSION``: a journal written by a newer schema is refused, and an older
one is migrated when a job claims it (every change so far only adds a table).

Versions: 1, the rows; 2, the ``parties`` table (each party of a row, a journaled step:
``pending`` → ``adding`` (committed before the request) → ``added`` or ``failed``); 3,
``job.key_salt``: the journal's own part of its rows' Idempotency-Keys (random, made with
the journal; NULL in a journal made before it, whose keys stay as they were), so that two
journals of one job (January's file and February's, references restarting at 1) never
send the same key, nor a journal started afresh a key whose stored answer is stale; 4,
``runs.unread``: the rows of its input a ``bulk create`` run did not read (stopped before
them; NULL when not known), so that ``bulk status`` and ``bulk retry`` can say the file
must be run again, which a retry (it reads no file) does not do.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from contractsdk._exceptions import ConfigurationError

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "UNCLAIMED",
    "JournalError",
    "check_journal_path",
    "lock_path",
]

SCHEMA_VERSION = 4

SCHEMA = """
CREATE TABLE IF NOT EXISTS job (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    job_id      TEXT NOT NULL,
    identity    TEXT NOT NULL,
    created     TEXT NOT NULL,
    sdk_version TEXT NOT NULL,
    schema      INTEGER NOT NULL,
    key_salt    TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    run      INTEGER PRIMARY KEY,
    mode     TEXT NOT NULL,
    source   TEXT,
    started  TEXT NOT NULL,
    finished TEXT,
    outcome  TEXT,
    unread   INTEGER
);
CREATE TABLE IF NOT EXISTS templates (
    team_id          INTEGER NOT NULL,
    contract_type_id INTEGER NOT NULL,
    template_id      INTEGER NOT NULL,
    PRIMARY KEY (team_id, contract_type_id)
);
CREATE TABLE IF NOT EXISTS rows (
    key         TEXT PRIMARY KEY,
    row         INTEGER NOT NULL,
    line        INTEGER,
    digest      TEXT NOT NULL,
    name        TEXT,
    team_id     INTEGER,
    template_id INTEGER,
    state       TEXT NOT NULL
                CHECK (state IN ('pending', 'sending', 'created', 'invalid', 'failed')),
    contract_id INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    retryable   INTEGER NOT NULL DEFAULT 0,
    reconciled  INTEGER NOT NULL DEFAULT 0,
    vals        TEXT,
    run         INTEGER NOT NULL,
    reported    INTEGER NOT NULL DEFAULT 0,
    updated     TEXT NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS rows_name ON rows (team_id, name) WHERE state != 'invalid';
CREATE INDEX IF NOT EXISTS rows_state ON rows (state);
CREATE INDEX IF NOT EXISTS rows_run ON rows (run, reported);
CREATE TABLE IF NOT EXISTS parties (
    key             TEXT NOT NULL,
    party           TEXT NOT NULL,
    position        INTEGER NOT NULL,
    user_id         INTEGER NOT NULL,
    vals            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'adding', 'added', 'failed')),
    collaborator_id INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    error           TEXT,
    updated         TEXT NOT NULL,
    PRIMARY KEY (key, party)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS parties_state ON parties (state);
CREATE TABLE IF NOT EXISTS team_contracts (
    team_id     INTEGER NOT NULL,
    name        TEXT NOT NULL,
    contract_id INTEGER NOT NULL,
    PRIMARY KEY (team_id, name, contract_id)
) WITHOUT ROWID;
"""

#: The teams' listed contracts that no created row of the job claims: the one query behind
#: every "could a contract of this name be ours, or someone else's?" question. A temporary
#: view: each connection makes its own, and the file's schema is unchanged.
UNCLAIMED = """
CREATE TEMP VIEW IF NOT EXISTS unclaimed AS
SELECT t.team_id, t.name, t.contract_id FROM team_contracts AS t
WHERE t.contract_id NOT IN (
    SELECT r.contract_id FROM rows AS r
    WHERE r.state = 'created' AND r.team_id = t.team_id AND r.contract_id IS NOT NULL
)
"""


class JournalError(ConfigurationError):
    """The journal cannot be used for this job (another job's, unreadable, or locked)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def lock_path(path: str | os.PathLike[str]) -> str:
    """The lock file of the journal at ``path``: beside the file it names, links resolved.

    Beside the path as given, a job run through a symbolic link to the journal locked
    another file than a job run through its target, and both ran at once: each sent the
    rows the other had in flight. (A hard link is still another name: not covered.)
    """
    return f"{os.path.realpath(path)}.lock"


def check_journal_path(path: str | os.PathLike[str]) -> Path:
    """Return the journal's path if a journal can live there.

    Raises:
        JournalError: Its directory does not exist, or the path is a directory.
    """
    journal = Path(path)
    parent = journal.parent if str(journal.parent) else Path(".")
    if not parent.is_dir():
        raise JournalError(
            f"the journal's directory {parent} does not exist; create it or choose another "
            "journal path"
        )
    if journal.is_dir():
        raise JournalError(f"the journal {journal} is a directory, not a file")
    return journal
