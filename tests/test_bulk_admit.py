"""The send / skip / invalid decision of registering a row, without SQLite (bulk/_admit.py)."""

from __future__ import annotations

from typing import Any

import attrs

from contractsdk.bulk._admit import Conflicts, NameOwner, admit
from contractsdk.bulk._records import JournalRecord, PreparedRow

RUN = 3


def row(**changes: Any) -> PreparedRow:
    values: dict[str, Any] = {
        "number": 7,
        "line": 8,
        "key": "ref:A",
        "key_label": "key 'A'",
        "digest": "d1",
        "name": "Flat A",
        "team_id": 1,
        "template_id": 2,
        "values": {"contract_name": "Flat A"},
    }
    values.update(changes)
    return PreparedRow(**values)


def record(**changes: Any) -> JournalRecord:
    values: dict[str, Any] = {
        "key": "ref:A",
        "row": 4,
        "line": 5,
        "name": "Flat A",
        "team_id": 1,
        "template_id": 2,
        "state": "pending",
        "contract_id": None,
        "attempts": 0,
        "error": None,
        "retryable": False,
        "reconciled": False,
        "values": None,
        "run": RUN - 1,
        "reported": 0,
        "digest": "d1",
    }
    values.update(changes)
    return JournalRecord(**values)


NONE = Conflicts()


def test_a_new_clean_row_is_sent() -> None:
    """No record, no problem, no conflict: send."""
    assert admit(None, row(), NONE, run=RUN).action == "send"


def test_a_key_seen_earlier_in_this_run_is_a_duplicate() -> None:
    """The same key twice in one run: the second is invalid, naming the first row."""
    decision = admit(record(run=RUN), row(), NONE, run=RUN)
    assert decision.action == "duplicate"
    assert decision.reasons == ("key 'A' is also the key of row 4",)
    unkeyed = admit(record(run=RUN), row(key_label="the row"), NONE, run=RUN)
    assert unkeyed.reasons == ("the same row as row 4",)


def test_a_created_row_is_skipped_with_a_note_when_changed() -> None:
    """Created by an earlier run: skipped; a changed row says so."""
    assert admit(record(state="created"), row(), NONE, run=RUN).note is None
    changed = admit(record(state="created"), row(digest="d2"), NONE, run=RUN)
    assert changed.action == "skip" and "changed" in (changed.note or "")


def test_a_row_of_unknown_outcome_is_held() -> None:
    """'sending' (its team could not be listed): never sent again here."""
    assert admit(record(state="sending", attempts=1), row(), NONE, run=RUN).action == "hold"


def test_a_sent_row_whose_name_is_listed_unclaimed_is_blocked() -> None:
    """Sent before and several unclaimed contracts carry its name: check by hand."""
    conflicts = Conflicts(unclaimed_sent=(11, 12))
    decision = admit(record(state="failed", attempts=2), row(), conflicts, run=RUN)
    assert decision.action == "blocked" and "ids 11, 12" in decision.reasons[0]


def test_a_row_with_problems_is_invalid_with_them() -> None:
    """Its own reasons come first."""
    decision = admit(None, row(reasons=("x: bad",), values=None), NONE, run=RUN)
    assert (decision.action, decision.reasons) == ("invalid", ("x: bad",))


def test_a_name_used_by_another_row_is_invalid() -> None:
    """Names are unique within a job."""
    owner = NameOwner(key="ref:B", row=2, state="created", contract_id=99, run=RUN - 1)
    decision = admit(None, row(), Conflicts(other_row=owner), run=RUN)
    assert decision.action == "invalid"
    assert f"row 2 of run {RUN - 1} (created as contract 99)" in decision.reasons[0]
    this_run = NameOwner(key="ref:B", row=2, state="pending", run=RUN)
    decision = admit(None, row(), Conflicts(other_row=this_run), run=RUN)
    assert decision.action == "invalid" and "also used by row 2;" in decision.reasons[0]


def test_a_row_changed_after_a_run_that_did_not_create_it_supersedes_its_old_version() -> None:
    """Keyed by content, a fixed row comes back under a new key with its old name.

    The old record, of an earlier run, never created and of known outcome, gives way: it
    used to refuse the fixed row ("also used by row 3"), and ``bulk retry`` then sent
    the old values. One of unknown outcome (``sending``) or created never does.
    """
    for state in ("pending", "failed"):
        old = NameOwner(key="sha:old", row=3, state=state, run=RUN - 1)
        decision = admit(None, row(key="sha:new"), Conflicts(other_row=old), run=RUN)
        assert (decision.action, decision.supersedes) == ("send", old)
    for state in ("sending", "created"):
        old = NameOwner(key="sha:old", row=3, state=state, run=RUN - 1)
        decision = admit(None, row(key="sha:new"), Conflicts(other_row=old), run=RUN)
        assert decision.action == "invalid" and decision.supersedes is None
    # A name the team has from elsewhere still refuses it, and then nothing is superseded.
    old = NameOwner(key="sha:old", row=3, state="failed", run=RUN - 1)
    decision = admit(None, row(key="sha:new"), Conflicts(other_row=old, unclaimed=(42,)), run=RUN)
    assert decision.action == "invalid"


def test_a_name_the_team_already_has_is_invalid_unless_it_may_be_ours() -> None:
    """An unclaimed contract of the name refuses a row never sent under that name."""
    conflicts = Conflicts(unclaimed=(42,))
    assert admit(None, row(), conflicts, run=RUN).action == "invalid"
    sent_before = record(state="pending", attempts=1)
    assert admit(sent_before, row(), conflicts, run=RUN).action == "send"
    renamed = attrs.evolve(sent_before, name="Old name")
    assert admit(renamed, row(), conflicts, run=RUN).action == "invalid"
