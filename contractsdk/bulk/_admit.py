"""Send, skip or refuse: what registering a row decides, as a pure function of the facts.

The journal answers the questions (is this key known? does another row use this name?
which listed contracts of this name does no row claim?) and stores the answer; the
decision itself is :func:`admit`, tested without SQLite. The rules, in order::

    the key was registered earlier in this run        duplicate: invalid under a derived key
    the row was created by an earlier run             skip (noted if its content changed)
    its outcome is unknown (``sending``)              hold: not sent until reconciled
    it was sent before and unclaimed contracts
      carry its name                                  blocked: failed, check by hand
    it has problems of its own                        invalid, with them
    another row of this run (or one created) uses
      its name                                        invalid
    the team has a contract of that name that no
      request of this job could have made             invalid
    otherwise                                         send
    ... and a row of an earlier run, never created
      and not of unknown outcome, used its name       that row is superseded

A row's key is its reference, or without one a hash of its content: a row fixed after a
run that did not create it (a failure, a stop) comes back under a new key, with its old
name. The old record is superseded by it (kept, ``invalid``, saying by which row), instead
of refusing the fixed row for a name "also used by" its own old version, whose old values
``bulk retry`` then sent. Reconciliation has run first, so a record that may have made a
contract is ``created`` or ``sending`` by then, and neither is superseded.
"""

from __future__ import annotations

from typing import Literal

import attrs

from contractsdk.bulk._records import JournalRecord, PreparedRow

__all__ = ["Admission", "Conflicts", "NameOwner", "admit"]

Action = Literal["duplicate", "skip", "hold", "blocked", "invalid", "send"]


@attrs.frozen(kw_only=True)
class NameOwner:
    """Another row of the job using a contract name.

    Attributes:
        key: Its key.
        row: Its row number (in the run that last registered it).
        state: Its state.
        contract_id: Its contract, when created.
        run: The run that last registered it.
    """

    key: str
    row: int
    state: str
    contract_id: int | None = None
    run: int = 0


@attrs.frozen(kw_only=True)
class Conflicts:
    """What the journal knows about a row's contract name.

    Attributes:
        other_row: Another row of the team using the name.
        unclaimed: Ids of listed contracts of the team with the row's name that no row
            of the job claims.
        unclaimed_sent: The same for the name the row had when it was last sent (when it
            was sent before), which may differ from its name now.
    """

    other_row: NameOwner | None = None
    unclaimed: tuple[int, ...] = ()
    unclaimed_sent: tuple[int, ...] = ()


@attrs.frozen(kw_only=True)
class Admission:
    """What to do with a row: the action, and the reasons or note that go with it."""

    action: Action
    reasons: tuple[str, ...] = ()
    note: str | None = None
    supersedes: NameOwner | None = None


def admit(
    existing: JournalRecord | None, row: PreparedRow, conflicts: Conflicts, *, run: int
) -> Admission:
    """Decide what registering ``row`` does (the rules in the module docstring).

    Args:
        existing: The journal's record of the row's key, if any.
        row: The prepared row.
        conflicts: What the journal knows about its name.
        run: The current run.
    """
    if existing is not None and existing.run == run:
        if row.key_label.startswith("key "):
            reason = f"{row.key_label} is also the key of row {existing.row}"
        else:
            reason = f"the same row as row {existing.row}"
        return Admission(action="duplicate", reasons=(*row.reasons, reason))
    if existing is not None and existing.state == "created":
        note = None
        if existing.digest != row.digest:
            note = (
                "the row changed since its contract was created; bulk create does not "
                "update contracts"
            )
        return Admission(action="skip", note=note)
    if existing is not None and existing.state == "sending":
        # Reconciliation runs before any row is registered, so this only happens when
        # the team could not be listed; never send a row whose outcome is unknown.
        return Admission(action="hold")
    if existing is not None and existing.attempts > 0 and conflicts.unclaimed_sent:
        ids = ", ".join(map(str, conflicts.unclaimed_sent))
        return Admission(
            action="blocked",
            reasons=(
                f"{len(conflicts.unclaimed_sent)} contract(s) named {existing.name!r} in team "
                f"{existing.team_id} (ids {ids}) could be this row's; check them by hand (it is "
                "not sent again)",
            ),
        )
    if row.reasons:
        return Admission(action="invalid", reasons=row.reasons)
    supersedes = None
    owner = conflicts.other_row
    if row.name is not None and owner is not None:
        if owner.run < run and owner.state in ("pending", "failed"):
            supersedes = owner  # its own old version, most likely: see the module docstring
        else:
            created = (
                f" (created as contract {owner.contract_id})" if owner.state == "created" else ""
            )
            where = (
                f"row {owner.row}" if owner.run == run else f"row {owner.row} of run {owner.run}"
            )
            return Admission(
                action="invalid",
                reasons=(
                    f"the contract name {row.name!r} is also used by {where}{created}; names "
                    "must be unique within a job so that each contract can be found again",
                ),
            )
    could_be_ours = existing is not None and existing.attempts > 0 and existing.name == row.name
    if row.name is not None and not could_be_ours and conflicts.unclaimed:
        return Admission(
            action="invalid",
            reasons=(
                f"team {row.team_id} already has a contract named {row.name!r} (contract "
                f"{conflicts.unclaimed[0]}) that this job's journal did not create; rename the "
                "row or remove that contract",
            ),
        )
    return Admission(action="send", supersedes=supersedes)
