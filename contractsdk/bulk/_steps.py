"""The journal's party steps: each party of a row, added once, after its contract.

# Invariants (the ``parties`` table; the rows' invariants are in ``_journal.py``)
#
# 1. One step per (row key, party name). A step is recorded, ``pending``, when its row is
#    registered to be sent, with the user and the checked identity values; values of a
#    step not yet sent follow the row's latest input.
# 2. ``adding`` is committed BEFORE the add request goes out, and counts the attempt: a
#    step with ``attempts > 0`` that is not ``added`` may have made a collaborator. Before
#    it is sent again, the contract's collaborators are listed and matched by user id
#    (one found: ``added``, nothing is sent).
# 3. ``added`` is final. A row whose contract is created and which has a step not
#    ``added`` is *incomplete*: ``bulk status`` lists it, a run's summary counts it as
#    ``incomplete`` (not ``created``), and ``bulk retry`` completes it.
#
# These are functions of a :class:`~contractsdk.bulk._journal.Journal`, called on its
# writer thread like its methods (``journal.call(lambda j: add_steps(j, ...))``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from contractsdk._redact import scrub
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._parties import RowParty
from contractsdk.bulk._records import PreparedRow, Registered
from contractsdk.bulk._schema import _now

__all__ = [
    "PartyStep",
    "adopt_incomplete",
    "incomplete_count",
    "incomplete_records",
    "incomplete_rows",
    "mark_added",
    "mark_adding",
    "mark_step_failed",
    "missing_parties",
    "record_steps",
    "register_rows",
    "steps_of",
    "unknown_steps",
]

_COLUMNS = "key, party, position, user_id, vals, state, collaborator_id, attempts, error"
_INCOMPLETE = (
    "rows.state = 'created' AND EXISTS (SELECT 1 FROM parties AS p "
    "WHERE p.key = rows.key AND p.state != 'added')"
)


@attrs.frozen(kw_only=True)
class PartyStep:
    """One party of one row as the journal holds it."""

    key: str
    party: str
    position: int
    user_id: int
    values: Mapping[int, str]
    state: str
    collaborator_id: int | None
    attempts: int
    error: str | None

    @classmethod
    def from_db(cls, row: Sequence[Any]) -> PartyStep:
        """Build a step from a ``SELECT {_COLUMNS}`` row."""
        return cls(
            key=row[0],
            party=row[1],
            position=row[2],
            user_id=row[3],
            values={int(k): v for k, v in json.loads(row[4]).items()},
            state=row[5],
            collaborator_id=row[6],
            attempts=row[7],
            error=row[8],
        )


def _has_steps(journal: Journal) -> bool:
    """False for a schema-1 journal opened read-only (no ``parties`` table)."""
    try:
        journal.db.execute("SELECT 1 FROM parties LIMIT 1")
    except sqlite3.OperationalError:
        return False
    return True


def record_steps(journal: Journal, key: str, parties: Mapping[str, RowParty]) -> None:
    """Record a row's parties as ``pending`` steps, but for steps added or being added.

    A step already ``added``, or ``adding`` (its outcome unknown), is kept as it is. A
    step that ``failed`` (it certainly added nobody) takes the file's user and values,
    and, if they changed, is ``pending`` again: a tenant's user id fixed in the file
    after its add was refused (404) is added by the next run, where the fix was ignored
    and ``bulk retry`` sent the old id again and again.
    """
    now = _now()
    journal.db.executemany(
        "INSERT INTO parties (key, party, position, user_id, vals, state, updated) "
        "VALUES (?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (key, party) DO UPDATE SET "
        "position = excluded.position, user_id = excluded.user_id, vals = excluded.vals, "
        "state = CASE WHEN parties.user_id = excluded.user_id AND parties.vals = excluded.vals "
        "THEN parties.state ELSE 'pending' END, "
        "error = CASE WHEN parties.user_id = excluded.user_id AND parties.vals = excluded.vals "
        "THEN parties.error ELSE NULL END, "
        "updated = excluded.updated WHERE parties.state IN ('pending', 'failed')",
        (
            (key, name, position, party.user_id, json.dumps(dict(party.values)), now)
            for position, (name, party) in enumerate(parties.items())
        ),
    )


def register_rows(journal: Journal, run: int, rows: Sequence[PreparedRow]) -> list[Registered]:
    """Register a chunk (:meth:`Journal.register`) and the parties of the rows to send."""
    registered = journal.register(run, rows)
    by_key = {row.key: row for row in rows}
    for decision in registered:
        prepared = by_key.get(decision.record.key)
        # A row created by an earlier run too: its parties not yet added follow the file.
        if (decision.send or decision.skipped) and prepared is not None and prepared.parties:
            record_steps(journal, prepared.key, prepared.parties)
    return registered


def steps_of(journal: Journal, key: str) -> list[PartyStep]:
    """Return a row's steps not ``added`` yet, in the job's party order."""
    cursor = journal.db.execute(
        f"SELECT {_COLUMNS} FROM parties WHERE key = ? AND state != 'added' ORDER BY position",
        (key,),
    )
    return [PartyStep.from_db(found) for found in cursor]


def missing_parties(journal: Journal, keys: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Return ``{key: parties not added}`` for those of ``keys`` with a step not added."""
    if not _has_steps(journal):
        return {}
    missing: dict[str, list[str]] = {}
    for key in keys:
        for (party,) in journal.db.execute(
            "SELECT party FROM parties WHERE key = ? AND state != 'added' ORDER BY position",
            (key,),
        ):
            missing.setdefault(key, []).append(party)
    return {key: tuple(parties) for key, parties in missing.items()}


def mark_adding(journal: Journal, key: str, party: str) -> None:
    """Mark a step ``adding`` and count the attempt (committed before the request)."""
    journal.db.execute(
        "UPDATE parties SET state = 'adding', attempts = attempts + 1, updated = ? "
        "WHERE key = ? AND party = ? AND state != 'added'",
        (_now(), key, party),
    )


def mark_added(journal: Journal, key: str, party: str, collaborator_id: int | None) -> None:
    """Record a party added (final)."""
    journal.db.execute(
        "UPDATE parties SET state = 'added', collaborator_id = ?, error = NULL, updated = ? "
        "WHERE key = ? AND party = ?",
        (collaborator_id, _now(), key, party),
    )


def mark_step_failed(journal: Journal, key: str, party: str, error: str, *, known: bool) -> None:
    """Record a failed add: ``failed`` when it certainly made nothing, else kept ``adding``."""
    state = "failed" if known else "adding"
    journal.db.execute(
        "UPDATE parties SET state = ?, error = ?, updated = ? "
        "WHERE key = ? AND party = ? AND state != 'added'",
        (state, scrub(error), _now(), key, party),
    )


def incomplete_rows(
    journal: Journal, *, run: int | None, after: str, limit: int, failed: bool
) -> list[tuple[str, int, int | None]]:
    """Return a page of created rows with steps to do: ``(key, contract id, template id)``.

    Args:
        journal: The journal.
        run: Only rows of this run (None: every row).
        after: The last key of the previous page.
        limit: The page size.
        failed: Also rows whose only steps left are ``failed`` (``bulk retry``).
    """
    states = "('pending', 'adding', 'failed')" if failed else "('pending', 'adding')"
    query = (
        "SELECT key, contract_id, template_id FROM rows WHERE state = 'created' "
        "AND contract_id IS NOT NULL AND key > ? AND EXISTS (SELECT 1 FROM parties AS p "
        f"WHERE p.key = rows.key AND p.state IN {states})"
    )
    parameters: tuple[Any, ...] = (after,)
    if run is not None:
        query += " AND run = ?"
        parameters = (after, run)
    cursor = journal.db.execute(query + " ORDER BY key LIMIT ?", (*parameters, limit))
    return [(str(key), int(contract), template) for key, contract, template in cursor]


def unknown_steps(journal: Journal, run: int) -> bool:
    """Tell whether a created row of run ``run`` has a step ``adding`` (outcome unknown)."""
    found = journal.db.execute(
        "SELECT 1 FROM rows WHERE state = 'created' AND run = ? AND EXISTS (SELECT 1 FROM "
        "parties AS p WHERE p.key = rows.key AND p.state = 'adding') LIMIT 1",
        (run,),
    )
    return found.fetchone() is not None


def incomplete_count(journal: Journal, run: int | None = None) -> int:
    """Return how many created rows (of a run) have a party not added."""
    if not _has_steps(journal):
        return 0
    query = f"SELECT count(*) FROM rows WHERE {_INCOMPLETE}"
    if run is None:
        return int(journal.db.execute(query).fetchone()[0])
    return int(journal.db.execute(query + " AND run = ?", (run,)).fetchone()[0])


def adopt_incomplete(journal: Journal, run: int) -> int:
    """Make every incomplete row part of run ``run`` (``bulk retry``); return how many."""
    cursor = journal.db.execute(
        f"UPDATE rows SET run = ?, reported = 0, updated = ? WHERE {_INCOMPLETE}",
        (run, _now()),
    )
    return cursor.rowcount


def incomplete_records(journal: Journal, limit: int) -> list[tuple[str, int, int | None, str]]:
    """Return the first incomplete rows: ``(key, row, contract id, what is missing)``."""
    if not _has_steps(journal):
        return []
    found = journal.db.execute(
        f"SELECT key, row, contract_id FROM rows WHERE {_INCOMPLETE} ORDER BY row, key LIMIT ?",
        (limit,),
    ).fetchall()
    result = []
    for key, row, contract_id in found:
        steps = journal.db.execute(
            "SELECT party, state, error FROM parties WHERE key = ? AND state != 'added' "
            "ORDER BY position",
            (key,),
        ).fetchall()
        what = "; ".join(
            f"{party} {state}" + (f" ({error})" if error else "") for party, state, error in steps
        )
        result.append((str(key), int(row), contract_id, what))
    return result
