"""The journal: header and job ids, row transitions, reconciliation, crash consistency."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from contractsdk.bulk import JournalError, read_status
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._records import PreparedRow
from contractsdk.bulk._schema import SCHEMA_VERSION
from contractsdk.bulk._status import _locked
from contractsdk.bulk._writer import AsyncJournal
from tests._bulkprocess import Child, crash_mid_transaction

IDENTITY = {"team_id": 70, "template_id": 149, "created_by": 7}


def prepared(
    key: str,
    name: str | None,
    *,
    number: int = 1,
    values: dict[str, str] | None = None,
    reasons: tuple[str, ...] = (),
    digest: str = "d1",
    team: int = 70,
) -> PreparedRow:
    if values is None and not reasons:
        values = {"contract_name": name or ""}
    return PreparedRow(
        number=number,
        line=number + 1,
        key=key,
        key_label=f"key {key[4:]!r}" if key.startswith("ref:") else "the row",
        digest=digest,
        name=name,
        team_id=team,
        template_id=149,
        values=values,
        reasons=reasons,
    )


@pytest.fixture
def journal(tmp_path: Path) -> Any:
    opened = Journal.connect(tmp_path / "job.db")
    opened.claim("job-a", IDENTITY, "0.1.0")
    yield opened
    opened.close()


def state(journal: Journal, key: str) -> tuple[Any, ...]:
    record = journal.get(key)
    assert record is not None
    return (record.state, record.attempts, record.contract_id)


def test_claim_writes_the_header_once_and_refuses_another_job(tmp_path: Path) -> None:
    """A journal belongs to one job: reopening it for another names both job ids."""
    path = tmp_path / "job.db"
    first = Journal.connect(path)
    first.claim("1111111111111111", IDENTITY, "0.1.0")
    first.claim("1111111111111111", IDENTITY, "0.1.0")  # the same job resumes
    header = first.header()
    assert header is not None and header["job_id"] == "1111111111111111"
    with pytest.raises(JournalError) as caught:
        first.claim("2222222222222222", {**IDENTITY, "team_id": 71}, "0.1.0")
    message = str(caught.value)
    assert "1111111111111111" in message and "2222222222222222" in message
    assert "team_id" in message
    first.close()


def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path) -> None:
    """Random bytes, or an SQLite file of something else, are refused clearly."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(JournalError, match="not a usable bulk journal"):
        Journal.connect(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(JournalError, match=r"no journal|not a bulk journal"):
        Journal.connect(other, readonly=True)
    # `bulk status DIR`: SQLite's own "disk I/O error" said nothing of what was wrong.
    with pytest.raises(JournalError, match="is a directory, not a journal file"):
        Journal.connect(tmp_path, readonly=True)


def _open_files(path: Path) -> int:
    """How many of this process's file descriptors are open on ``path`` (Linux's /proc)."""
    fds = Path("/proc/self/fd")
    found = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # closed while listed (the listing's own)
            found += os.readlink(fd) == str(path)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_a_refused_file_is_not_left_open(tmp_path: Path) -> None:
    """Refusing a file closes the connection it opened, not the garbage collector later."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(JournalError) as refused:
        Journal.connect(junk)
    with pytest.raises(JournalError) as refused_readonly:
        Journal.connect(other, readonly=True)
    # The errors' tracebacks, which hold the frames, are still alive here (read below).
    assert _open_files(junk) == 0
    assert _open_files(other) == 0
    assert "junk.db" in str(refused.value) and "other.db" in str(refused_readonly.value)


def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    """The journal's directory must exist: it is not created behind the user's back."""
    with pytest.raises(JournalError, match=r"directory .*nowhere does not exist"):
        Journal.connect(tmp_path / "nowhere" / "job.db")


def test_register_new_valid_and_invalid_rows(journal: Journal) -> None:
    """A valid row is pending and to be sent; an invalid one is recorded with its reasons."""
    run = journal.begin_run("create", None)
    decisions = journal.register(
        run,
        [prepared("ref:A", "Flat A"), prepared("ref:B", "Flat B", reasons=("bad", "worse"))],
    )
    assert [d.send for d in decisions] == [True, False]
    assert decisions[0].record.state == "pending"
    assert decisions[0].record.values == {"contract_name": "Flat A"}
    assert decisions[1].record.state == "invalid"
    assert decisions[1].record.error == "bad\nworse"
    assert journal.counts() == {
        "pending": 1,
        "sending": 0,
        "created": 0,
        "invalid": 1,
        "failed": 0,
    }


def test_the_life_of_a_row(journal: Journal) -> None:
    """A row goes pending → sending (attempt counted) → created (values dropped); created is final."""
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "Flat A")])
    assert journal.mark_sending("ref:A") == 1
    assert state(journal, "ref:A") == ("sending", 1, None)
    created = journal.mark_created("ref:A", 900, run)
    assert (created.state, created.contract_id, created.values, created.reported) == (
        "created",
        900,
        None,
        run,
    )
    with pytest.raises(JournalError, match="cannot be sent: it is created"):
        journal.mark_sending("ref:A")


def test_failures_unknown_outcomes_and_retries(journal: Journal) -> None:
    """A failure keeps the values; an unknown outcome stays sending; a failed row may resend."""
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "A"), prepared("ref:B", "B", number=2)])
    journal.mark_sending("ref:A")
    failed = journal.mark_failed(
        "ref:A", "503", retryable=True, run=run, final=False, extra_attempts=2
    )
    assert (failed.state, failed.attempts, failed.reported, failed.values) == (
        "failed",
        3,
        0,
        {"contract_name": "A"},
    )
    assert journal.mark_sending("ref:A") == 4
    journal.mark_sending("ref:B")
    unknown = journal.mark_unknown("ref:B", "answer lost", 0)
    assert (unknown.state, unknown.error) == ("sending", "answer lost")
    assert journal.has_sending(run)
    assert journal.teams_to_reconcile(run) == [70]


def test_rerun_skips_created_rows_and_notes_changes(journal: Journal) -> None:
    """A row created by an earlier run is skipped; a changed one says it is not updated."""
    first = journal.begin_run("create", None)
    journal.register(first, [prepared("ref:A", "A")])
    journal.mark_sending("ref:A")
    journal.mark_created("ref:A", 900, first)
    second = journal.begin_run("create", None)
    same = journal.register(second, [prepared("ref:A", "A")])[0]
    assert (same.send, same.skipped, same.note) == (False, True, None)
    third = journal.begin_run("create", None)
    changed = journal.register(third, [prepared("ref:A", "A", digest="d2")])[0]
    assert changed.skipped and "does not update" in (changed.note or "")


def test_a_row_repeated_in_one_run_is_invalid(journal: Journal) -> None:
    """The same key twice in a run: the second is invalid under a derived key."""
    run = journal.begin_run("create", None)
    first, second = journal.register(
        run, [prepared("ref:A", "A", number=1), prepared("ref:A", "A2", number=5)]
    )
    assert first.send
    assert second.duplicate and not second.send
    assert second.record.key == "dup:5:ref:A"
    assert second.record.error == "key 'A' is also the key of row 1"
    again = journal.register(run, [prepared("sha:x", "X", number=6)])[0]
    twin = journal.register(run, [prepared("sha:x", "X", number=9)])[0]
    assert again.send and twin.record.error == "the same row as row 6"


def test_contract_names_are_unique_within_a_job(journal: Journal) -> None:
    """A second row with a name already used (in this team) is invalid; other teams may."""
    run = journal.begin_run("create", None)
    first, second, other_team = journal.register(
        run,
        [
            prepared("ref:A", "Flat 1", number=1),
            prepared("ref:B", "Flat 1", number=2),
            prepared("ref:C", "Flat 1", number=3, team=71),
        ],
    )
    assert first.send and other_team.send
    assert not second.send
    assert "'Flat 1' is also used by row 1" in (second.record.error or "")
    # The invariant is enforced by the schema too, not only by the code that checks it.
    with pytest.raises(sqlite3.IntegrityError):
        journal.db.execute("UPDATE rows SET state = 'pending' WHERE key = 'ref:B'")


def test_a_name_the_team_already_has_is_refused(journal: Journal) -> None:
    """A contract of that name made outside this journal: the row is invalid, not sent."""
    run = journal.begin_run("create", None)
    journal.apply_listing(70, [("Flat 1", 555)])
    decision = journal.register(run, [prepared("ref:A", "Flat 1")])[0]
    assert not decision.send
    assert "already has a contract named 'Flat 1' (contract 555)" in (decision.record.error or "")


def test_a_created_row_without_an_id_does_not_hide_a_name_the_team_has(
    journal: Journal,
) -> None:
    """``NOT IN`` a list holding NULL matches nothing: the created rows' ids skip NULLs."""
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "Flat A")])
    journal.db.execute("UPDATE rows SET state = 'created', contract_id = NULL")
    journal.apply_listing(70, [("Flat 1", 555)])
    decision = journal.register(run, [prepared("ref:B", "Flat 1", number=2)])[0]
    assert not decision.send
    assert "already has a contract named 'Flat 1' (contract 555)" in (decision.record.error or "")


def test_reconciliation_finds_not_finds_and_refuses_to_guess(journal: Journal) -> None:
    """Listing: one match → created; none → pending again; several → failed, by hand."""
    run = journal.begin_run("create", None)
    keys = ["ref:A", "ref:B", "ref:C", "ref:D"]
    journal.register(
        run, [prepared(key, f"Flat {key[-1]}", number=i) for i, key in enumerate(keys, 1)]
    )
    for key in keys[:3]:
        journal.mark_sending(key)
    result = journal.apply_listing(70, [("Flat A", 10), ("Flat C", 11), ("Flat C", 12)])
    assert (result.created, result.not_found, result.ambiguous) == (1, 1, 1)
    record = journal.get("ref:A")
    assert record is not None and record.reconciled and record.contract_id == 10
    assert state(journal, "ref:B")[0] == "pending"
    assert state(journal, "ref:C")[0] == "failed"
    assert "2 contracts named 'Flat C'" in (journal.get("ref:C").error or "")  # type: ignore[union-attr]  # asserted present above
    assert state(journal, "ref:D") == ("pending", 0, None)  # never sent: not touched
    # A contract already claimed by a created row is never given to another.
    assert journal.apply_listing(70, [("Flat A", 10)]).created == 0


def test_fail_unsent_ends_rows_found_not_created(journal: Journal) -> None:
    """Rows sent, reconciled as not created and not sent again end failed (retryable)."""
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "A")])
    journal.mark_sending("ref:A")
    journal.mark_unknown("ref:A", "lost", 0)
    journal.apply_listing(70, [])
    assert journal.fail_unsent(run) == 1
    record = journal.get("ref:A")
    assert record is not None and record.state == "failed" and record.retryable
    assert "outcome was unknown" in (record.error or "")


def test_a_crash_keeps_the_last_committed_state(tmp_path: Path) -> None:
    """Killed mid-transaction, the journal holds the committed "sending" and nothing else."""
    path = tmp_path / "crash.db"
    assert Child(crash_mid_transaction, str(path)).wait(60) == 9
    journal = Journal.connect(path)
    try:
        assert journal.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert state(journal, "ref:A") == ("sending", 1, None)
        assert journal.teams_to_reconcile() == [70]
    finally:
        journal.close()


async def test_an_awaited_change_is_on_disk(tmp_path: Path) -> None:
    """When ``call`` returns, another connection already sees the committed change."""
    path = tmp_path / "job.db"
    journal = await AsyncJournal.open(path)
    try:
        await journal.call(lambda j: j.claim("job-a", IDENTITY, "0.1.0"))
        run = await journal.call(lambda j: j.begin_run("create", None))
        await journal.call(lambda j: j.register(run, [prepared("ref:A", "A")]))
        await journal.call(lambda j: j.mark_sending("ref:A"))
        reader = Journal.connect(path, readonly=True)
        try:
            assert state(reader, "ref:A") == ("sending", 1, None)
        finally:
            reader.close()
    finally:
        await journal.aclose()


async def test_operations_are_group_committed_and_isolated(tmp_path: Path) -> None:
    """Concurrent changes share commits; one failing change does not undo the others."""
    journal = await AsyncJournal.open(tmp_path / "job.db")
    try:
        await journal.call(lambda j: j.claim("job-a", IDENTITY, "0.1.0"))
        run = await journal.call(lambda j: j.begin_run("create", None))
        rows = [prepared(f"ref:{i}", f"Flat {i}", number=i) for i in range(200)]
        await journal.call(lambda j: j.register(run, rows))
        commits = journal.commits
        results = await asyncio.gather(
            *(journal.call(partial(Journal.mark_sending, key=f"ref:{i}")) for i in range(200)),
            journal.call(lambda j: j.mark_sending("ref:missing")),
            return_exceptions=True,
        )
        assert results[:200] == [1] * 200
        assert isinstance(results[200], JournalError)
        assert journal.commits - commits < 200
        counts = await journal.call(lambda j: j.counts())
        assert counts["sending"] == 200
    finally:
        await journal.aclose()


async def test_one_job_at_a_time_per_journal(tmp_path: Path) -> None:
    """A second process (or job) opening a journal in use is refused."""
    path = tmp_path / "job.db"
    first = await AsyncJournal.open(path)
    try:
        with pytest.raises(JournalError, match="another process is running a job"):
            await AsyncJournal.open(path)
    finally:
        await first.aclose()
    second = await AsyncJournal.open(path)  # free again once closed
    await second.aclose()


async def test_one_job_at_a_time_through_a_link_to_the_journal(tmp_path: Path) -> None:
    """A journal opened through a symbolic link is locked as the file it names.

    The lock was taken beside the path as given: a job through the link and a job
    through the file ran at once, and each sent the rows the other had in flight.
    """
    path = tmp_path / "job.db"
    (tmp_path / "other").mkdir()
    link = tmp_path / "other" / "alias.db"
    link.symlink_to(path)
    first = await AsyncJournal.open(path)
    try:
        with pytest.raises(JournalError, match="another process is running a job"):
            await AsyncJournal.open(link)
        assert _locked(link) is True  # `bulk status` through the link sees the job
    finally:
        await first.aclose()
    through_link = await AsyncJournal.open(link)
    try:
        with pytest.raises(JournalError, match="another process is running a job"):
            await AsyncJournal.open(path)
    finally:
        await through_link.aclose()
    assert sorted(os.listdir(tmp_path)) == ["job.db", "other"]  # no lock left behind


def test_a_row_created_twice_is_said_not_dropped(journal: Journal) -> None:
    """Marking a created row created again, as another contract, raises with both ids.

    Two jobs on one journal file under two names (a hard link) each created the row; the
    second's contract was recorded nowhere, and its run reported the first's.
    """
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "Flat A")])
    journal.mark_sending("ref:A")
    journal.mark_created("ref:A", 11, run)
    assert journal.mark_created("ref:A", 11, run).contract_id == 11  # the same: no news
    with pytest.raises(JournalError, match="created twice, as contracts 11 and 12"):
        journal.mark_created("ref:A", 12, run)


async def test_temporary_and_copied_journals(tmp_path: Path) -> None:
    """No path: a temporary journal, deleted on close; copy_of: changes stay in the copy."""
    temporary = await AsyncJournal.open(None)
    where = temporary.path
    assert where.exists()
    await temporary.aclose()
    assert not where.exists()

    real = tmp_path / "real.db"
    journal = Journal.connect(real)
    journal.claim("job-a", IDENTITY, "0.1.0")
    journal.close()
    copy = await AsyncJournal.open(None, copy_of=real)
    try:
        await copy.call(lambda j: j.begin_run("create (dry run)", None))
        assert await copy.call(lambda j: len(j.runs())) == 1
    finally:
        await copy.aclose()
    reread = Journal.connect(real, readonly=True)
    try:
        assert reread.runs() == []
    finally:
        reread.close()


def test_a_sent_row_whose_name_is_listed_is_not_sent_again(journal: Journal) -> None:
    """Invariant 3: after a send, a row is resent only if no unclaimed contract has its name."""
    run = journal.begin_run("create", None)
    journal.register(run, [prepared("ref:A", "A"), prepared("ref:B", "B", number=2)])
    for key in ("ref:A", "ref:B"):
        journal.mark_sending(key)
        journal.mark_failed(key, "503", retryable=True, run=run, final=False, extra_attempts=0)
    assert [r.key for r in journal.to_send(run, "", 10, every_failure=False)] == ["ref:A", "ref:B"]
    journal.db.executemany(
        "INSERT INTO team_contracts VALUES (?, ?, ?)", [(70, "A", 1), (70, "A", 2)]
    )
    assert [r.key for r in journal.to_send(run, "", 10, every_failure=True)] == ["ref:B"]
    later = journal.begin_run("create", None)
    decision = journal.register(later, [prepared("ref:A", "A")])[0]
    assert not decision.send and decision.record.state == "failed"
    assert "2 contract(s) named 'A'" in (decision.record.error or "")


def test_each_journal_has_its_own_key_salt(tmp_path: Path) -> None:
    """A new journal gets a random salt for its rows' keys; it stays across connections."""
    salts = []
    for name in ("a.db", "b.db"):
        opened = Journal.connect(tmp_path / name)
        opened.claim("job-a", IDENTITY, "0.1.0")
        header = opened.header()
        opened.close()
        assert header is not None
        salts.append(header["key_salt"])
    assert all(isinstance(salt, str) and len(salt) == 16 for salt in salts)
    assert salts[0] != salts[1]
    again = Journal.connect(tmp_path / "a.db")
    again.claim("job-a", IDENTITY, "0.1.0")
    header = again.header()
    again.close()
    assert header is not None and header["key_salt"] == salts[0]


def test_a_journal_from_before_the_salt_keeps_its_keys(tmp_path: Path) -> None:
    """A schema 2 journal (no salt) is migrated with a NULL salt: its keys do not change.

    Its rows may have been sent under the old keys; a new salt would make a resend look
    like another request to a service that keeps keys.
    """
    path = tmp_path / "old.db"
    opened = Journal.connect(path)
    opened.claim("job-a", IDENTITY, "0.1.0")
    opened.close()
    with contextlib.closing(sqlite3.connect(path)) as db:  # as schema 2 wrote it
        db.execute("ALTER TABLE job DROP COLUMN key_salt")
        db.execute("ALTER TABLE runs DROP COLUMN unread")
        db.execute("UPDATE job SET schema = 2")
        db.commit()
    old = Journal.connect(path)
    header = old.header()
    assert header is not None and header["schema"] == 2 and header["key_salt"] is None
    old.claim("job-a", IDENTITY, "0.1.0")
    header = old.header()
    old.close()
    assert header is not None and header["schema"] == SCHEMA_VERSION
    assert header["key_salt"] is None


@pytest.mark.parametrize(("outcome", "unread"), [("done", 0), ("stopped", None)])
async def test_a_journal_from_before_the_unread_count(
    tmp_path: Path, outcome: str, unread: int | None
) -> None:
    """Schema 3 kept no count of the rows a run did not read: a stopped run may have left some.

    Read as it is (``bulk status`` opens it read-only) and once migrated, a create run that
    ended ``done`` read its input to the end; one stopped is not known to have.
    """
    path = tmp_path / "old.db"
    opened = Journal.connect(path)
    opened.claim("job-a", IDENTITY, "0.1.0")
    opened.finish_run(opened.begin_run("create", "/data/rows.csv"), outcome)
    opened.close()
    with contextlib.closing(sqlite3.connect(path)) as db:  # as schema 3 wrote it
        db.execute("ALTER TABLE runs DROP COLUMN unread")
        db.execute("UPDATE job SET schema = 3")
        db.commit()
    assert (await read_status(path)).unread == unread
    migrated = Journal.connect(path)
    migrated.claim("job-a", IDENTITY, "0.1.0")
    run = migrated.begin_run("retry", None)
    migrated.finish_run(run, "done")
    migrated.close()
    status = await read_status(path)
    assert status.unread == unread
    assert [found["unread"] for found in status.runs] == [None, None]


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    """A SQLite file with tables of its own is not made a journal (nor switched to WAL)."""
    path = tmp_path / "mine.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.commit()
    before = path.read_bytes()
    with pytest.raises(JournalError, match=r"a SQLite database with other tables \(customers\)"):
        Journal.connect(path)
    assert path.read_bytes() == before
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
    assert tables == ["customers"]


def test_stale_temporary_journals_are_removed_but_not_one_in_use(tmp_path: Path) -> None:
    """A killed run without a journal left one, with its rows' values; a later run removes it.

    Only one unchanged for a day, and whose lock no process holds: a run going on keeps
    its lock, and a fresh directory is left alone.
    """
    import fcntl
    import time

    from contractsdk.bulk._writer import STALE_AFTER, remove_stale_temporary_journals

    def made(name: str, age: float) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "journal.db").write_text("rows: names, addresses")
        when = time.time() - age
        for entry in (*directory.iterdir(), directory):
            os.utime(entry, (when, when))
        return directory

    killed = made("contractsdk-bulk-killed", STALE_AFTER + 60)
    running = made("contractsdk-bulk-running", STALE_AFTER + 60)
    fresh = made("contractsdk-bulk-fresh", 60)
    other = made("someone-elses-dir", STALE_AFTER + 60)
    lock = running / "journal.db.lock"
    with open(lock, "a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        old = time.time() - STALE_AFTER - 60
        os.utime(lock, (old, old))
        os.utime(running, (old, old))
        removed = remove_stale_temporary_journals(str(tmp_path))
    assert removed == [killed]
    assert not killed.exists() and running.exists() and fresh.exists() and other.exists()


async def test_status_lists_the_invalid_rows_of_the_last_run_that_read_the_input(
    tmp_path: Path,
) -> None:
    """Earlier runs' invalid rows sorting first, a retry after: the list still has them.

    The list took the first ``4 × limit`` invalid rows of every run and kept the latest
    run's: empty here, while the counts said 2; and empty after any `bulk retry`.
    """
    path = tmp_path / "job.db"
    journal = Journal.connect(path)
    try:
        journal.claim("job-a", IDENTITY, "0.1.0")
        first = journal.begin_run("create", None)
        journal.register(
            first, [prepared(f"ref:A{n:02d}", None, reasons=("bad",)) for n in range(30)]
        )
        second = journal.begin_run("create", None)
        journal.register(
            second, [prepared(f"ref:Z{n}", None, reasons=("worse",)) for n in range(2)]
        )
        journal.begin_run("retry", None)
    finally:
        journal.close()
    status = await read_status(path, limit=5)
    assert [record.key for record in status.invalid] == ["ref:Z0", "ref:Z1"]
    assert status.invalid_count == 2  # what "… and N more" counts from, not the retry's 0


async def test_status_lists_the_first_rows_of_the_file_first(tmp_path: Path) -> None:
    """Rows 1, 2 … 12, not in their keys' order (``ref:R10`` sorts before ``ref:R2``)."""
    path = tmp_path / "job.db"
    opened = Journal.connect(path)
    opened.claim("job-a", IDENTITY, "0.1.0")
    run = opened.begin_run("create", "/data/rows.csv")
    opened.register(
        run,
        [prepared(f"ref:R{n}", f"Flat {n}", number=n, reasons=("bad",)) for n in range(1, 13)],
    )
    opened.register(run, [prepared(f"ref:P{n}", f"House {n}", number=20 + n) for n in (9, 10)])
    opened.close()
    status = await read_status(path, limit=5)
    assert [record.row for record in status.invalid] == [1, 2, 3, 4, 5]
    assert [record.row for record in status.unfinished] == [29, 30]
