"""The values the journal reads and writes: prepared rows, records, decisions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from contractsdk.bulk._parties import RowParty
from contractsdk.validation._payload import CheckedValues

__all__ = ["ListingResult", "JournalRecord", "PreparedRow", "Registered", "RowState", "STATES"]

RowState = Literal["pending", "sending", "created", "invalid", "failed"]
#: Every row state, in the order a row moves through them.
STATES: tuple[RowState, ...] = ("pending", "sending", "created", "invalid", "failed")


@attrs.frozen(kw_only=True)
class PreparedRow:
    """A row made ready for the journal: keyed, targeted, validated.

    Attributes:
        number: The row's number in the input.
        line: Its line in the file, if any.
        key: The stable row key.
        key_label: How to name the key in a message (``key 'R-17'`` or ``the same row``).
        digest: The hash of the row's normalised content.
        name: The value of the match term (the contract name), if any.
        team_id: The team that will hold the contract.
        template_id: The template version.
        values: The validated values, or None when the row is invalid.
        reasons: Why the row is invalid (empty when it is valid).
        checked: The values as checked against the terms, ready to send (the run sends
            these, so a row is validated once); None when the row is invalid.
        parties: Each party's user and checked identity values, by party name.
    """

    number: int
    line: int | None
    key: str
    key_label: str
    digest: str
    name: str | None
    team_id: int | None
    template_id: int | None
    values: Mapping[str, str] | None
    reasons: tuple[str, ...] = ()
    checked: CheckedValues | None = attrs.field(default=None, eq=False, repr=False)
    parties: Mapping[str, RowParty] = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True)
class JournalRecord:
    """A row as the journal holds it.

    Attributes:
        key: The row key.
        row: The row's number in the input (in the last run that saw it).
        line: Its line in the file, if any.
        name: The contract name (the match term's value).
        team_id: The team.
        template_id: The template version.
        state: ``pending``, ``sending``, ``created``, ``invalid`` or ``failed``.
        contract_id: The created contract's id.
        attempts: Requests sent for the row so far.
        error: The last error, or the reasons (one per line) for an invalid row.
        retryable: Whether the last failure may succeed if tried again.
        reconciled: Whether the contract was found by listing the team.
        values: The values to send, kept until the contract is created.
        run: The last run that saw the row.
        reported: The last run that reported the row's outcome.
        digest: The hash of the row's content.
    """

    key: str
    row: int
    line: int | None
    name: str | None
    team_id: int | None
    template_id: int | None
    state: RowState
    contract_id: int | None
    attempts: int
    error: str | None
    retryable: bool
    reconciled: bool
    values: Mapping[str, str] | None
    run: int
    reported: int
    digest: str

    @classmethod
    def from_db(cls, row: Sequence[Any]) -> JournalRecord:
        """Build a record from a ``SELECT {_COLUMNS}`` row."""
        return cls(
            key=row[0],
            row=row[1],
            line=row[2],
            name=row[3],
            team_id=row[4],
            template_id=row[5],
            state=row[6],
            contract_id=row[7],
            attempts=row[8],
            error=row[9],
            retryable=bool(row[10]),
            reconciled=bool(row[11]),
            values=json.loads(row[12]) if row[12] else None,
            run=row[13],
            reported=row[14],
            digest=row[15],
        )


@attrs.frozen(kw_only=True)
class Registered:
    """What registering a row decided.

    Attributes:
        record: The row's record after registration.
        send: True when the row is to be sent in this run.
        skipped: True when the row was already created by an earlier run.
        note: Something worth telling about the row (e.g. it changed since it was created).
        duplicate: True when the row repeats an earlier row of this run (its record is
            kept under a derived key).
    """

    record: JournalRecord
    send: bool
    skipped: bool = False
    note: str | None = None
    duplicate: bool = False


@attrs.frozen(kw_only=True)
class ListingResult:
    """What applying one team's listing changed.

    Attributes:
        created: Rows found in the listing (now ``created``, ``reconciled``).
        not_found: ``sending`` rows whose name is not in the listing (now ``pending``).
        ambiguous: Rows whose name matches several contracts nobody claimed (now ``failed``).
    """

    created: int = 0
    not_found: int = 0
    ambiguous: int = 0

    def __add__(self, other: ListingResult) -> ListingResult:
        return ListingResult(
            created=self.created + other.created,
            not_found=self.not_found + other.not_found,
            ambiguous=self.ambiguous + other.ambiguous,
        )
