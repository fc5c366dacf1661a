"""``contractsdk bulk create | status | retry`` against the emulator, and bad input."""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from contractsdk import ConfigurationError, ConnectError, ContractClient
from contractsdk.bulk import JournalError, RowOutcome, read_status
from contractsdk.bulk._journal import Journal
from contractsdk.bulk._run import Run
from contractsdk.cli._app import Invocation, parse
from contractsdk.cli._app import cli as root
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._clikit import AST, bulk_create, cli
from tests._redisserver import RedisServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tenancies.csv"
HEADER = "reference,contract_name,contract_rentFrequency,contract_breakClause\n"


def ada(server: SandboxServer) -> int:
    return server.users[0].id


def create_args(server: SandboxServer, source: Path, journal: Path, *more: str) -> list[str]:
    return bulk_create(server, source, "--journal", str(journal), *more)


def row_of(table: str, label: str) -> list[str]:
    """The cells after ``label`` on the line of a printed table that starts with it."""
    for line in table.splitlines():
        if line.startswith(label + " "):
            return line[len(label) :].split()
    raise AssertionError(f"no line {label!r} in:\n{table}")


async def names_in(server: SandboxServer, team_id: int) -> list[str]:
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        return [c.name or "" for c in await client.contracts.list(team_id)]


async def test_the_example_creates_and_resumes(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example CSV: 27 created, 3 invalid with reasons; a second run skips them all."""
    journal = tmp_path / "job.db"
    report = tmp_path / "report.jsonl"
    args = create_args(server, EXAMPLE, journal, "--key-column", "reference")
    code = await cli(server, *args, "--report", str(report))
    assert code == 3  # some rows are invalid, none failed
    captured = capsys.readouterr()
    out = captured.out
    assert "'fortnight' is not an option" in out
    assert "next: fix the invalid rows in the file and run the same command again" in (captured.err)
    assert "bulk retry" not in captured.err  # nothing failed
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert len(lines) == 30
    assert sum(line["state"] == "created" for line in lines) == 27
    names = await names_in(server, 500)
    assert len(names) == len(set(names)) == 27

    assert await cli(server, *args) == 3
    out = capsys.readouterr().out
    assert row_of(out, "already created") == ["27"]
    assert row_of(out, "created") == ["0"]
    assert len(await names_in(server, 500)) == 27

    assert await cli(server, "bulk", "status", str(journal)) == 0
    status = capsys.readouterr().out
    assert row_of(status, "created") == ["27", "27"]
    assert row_of(status, "invalid") == ["3", "3"]
    assert await cli(server, "bulk", "status", str(journal), "--json") == 0
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert counts == {"pending": 0, "sending": 0, "created": 27, "invalid": 3, "failed": 0}


async def test_dry_run_validates_and_sends_nothing(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--dry-run lists invalid rows and estimates; no contract is created, no journal written."""
    journal = tmp_path / "job.db"
    args = create_args(server, EXAMPLE, journal, "--key-column", "reference", "--dry-run")
    code = await cli(server, *args)
    assert code == 3
    out = capsys.readouterr().out
    assert row_of(out, "would create") == ["27"]
    assert "dry run: nothing was sent" in out
    assert await names_in(server, 500) == []
    assert not journal.exists()


async def test_retry_sends_failed_rows_from_the_journal(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows that failed (here: the service down) are sent by `bulk retry` without the file."""
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(5)))
    journal = tmp_path / "job.db"
    server.set_faults([FaultRule("POST /v1/teams/*/contracts", status_503=1.0)])
    args = create_args(server, source, journal, "--key-column", "reference", "--rounds", "0")
    assert await cli(server, *args) == 1
    assert "503" in capsys.readouterr().out
    server.set_faults([])
    source.unlink()  # the journal holds what retry needs
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 0
    assert sorted(await names_in(server, 500)) == [f"Flat {i}" for i in range(5)]


async def test_rows_a_stopped_create_never_read_are_not_left_to_retry(
    server: SandboxServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A create stopped part way through its file: status and retry say the rest is unread.

    The journal holds only the rows read; `bulk retry` sent those and exited 0, and status
    showed nothing left, while the rest of the file was never created.
    """
    emit = Run.emit

    async def stop_after_three(run: Run, outcome: RowOutcome, *, sent: bool = False) -> None:
        await emit(run, outcome, sent=sent)
        if run.tally.counts["created"] == 3:
            run.stop()

    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(600)))
    journal = tmp_path / "job.db"
    args = create_args(server, source, journal, "--key-column", "reference")
    with monkeypatch.context() as patch:
        patch.setattr(Run, "emit", stop_after_three)
        assert await cli(server, *args) == 1
    capsys.readouterr()
    status = await read_status(journal)
    held = sum(status.counts.values())
    assert status.unread == 600 - held > 0

    assert await cli(server, "bulk", "status", str(journal)) == 0
    said = capsys.readouterr().out
    assert f"{600 - held} rows of rows.csv never read" in said
    assert await cli(server, "bulk", "status", str(journal), "--json") == 0
    assert json.loads(capsys.readouterr().out)["unread"] == 600 - held

    # The retry sends the rows the journal holds, and says the job is not done: on
    # stderr, or with --json in its JSON (which said nothing of it, and exited 1).
    with monkeypatch.context() as patch:
        patch.setattr(Run, "emit", stop_after_three)
        assert await cli(server, "bulk", "retry", str(journal), "-q") == 1
    err = capsys.readouterr().err
    assert f"next: {600 - held} rows of rows.csv never read" in err
    assert "run `bulk create` again" in err
    assert await cli(server, "bulk", "retry", str(journal), "-q", "--json") == 1
    shown = json.loads(capsys.readouterr().out)
    assert shown["summary"]["created"] > 0
    assert shown["unread"] == 600 - held and "never read" in shown["next"]
    assert len(await names_in(server, 500)) == held
    # With nothing left to retry, it says so again, and still exits 1.
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 1
    assert "never read" in capsys.readouterr().err
    assert await cli(server, "bulk", "retry", str(journal), "-q", "--json") == 1
    assert json.loads(capsys.readouterr().out)["unread"] == 600 - held

    assert await cli(server, *args) == 0
    assert (await read_status(journal)).unread == 0
    assert len(await names_in(server, 500)) == 600
    assert await cli(server, "bulk", "status", str(journal)) == 0
    assert "never read" not in capsys.readouterr().out


async def test_a_create_that_ends_before_reading_leaves_no_rows_unread_that_were_read(
    server: SandboxServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows an earlier run read are not unread because a later run ended before them.

    A second create failing in its checks (the network down) counted all 20 rows of a job
    done as never read, and `bulk retry` of the finished job exited 1.
    """
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(20)))
    journal = tmp_path / "job.db"
    args = create_args(server, source, journal, "--key-column", "reference")
    assert await cli(server, *args) == 0

    async def down(_: Run) -> None:
        raise ConnectError("could not connect to the service")

    monkeypatch.setattr(Run, "_check_creator", down)
    with pytest.raises(ConnectError):
        await cli(server, *args)
    assert (await read_status(journal)).unread == 0
    monkeypatch.undo()
    capsys.readouterr()
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 0
    assert "never read" not in capsys.readouterr().err

    # More rows added to the file since: those are unread, not the 20 read before.
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(25)))
    monkeypatch.setattr(Run, "_check_creator", down)
    with pytest.raises(ConnectError):
        await cli(server, *args)
    status = await read_status(journal)
    assert status.unread == 5
    assert await cli(server, "bulk", "status", str(journal)) == 0
    assert "5 rows of rows.csv never read: run 3 (bulk create) ended with an error" in (
        capsys.readouterr().out
    )


async def test_a_journal_an_older_contractsdk_made_and_never_claimed(
    server: SandboxServer, tmp_path: Path
) -> None:
    """Its tables lack later columns: added when it is opened, not only when claimed.

    Claimed as new, its first run failed at its end on the missing column, after its
    contracts were made, and skipped letting go of its locks.
    """
    journal = tmp_path / "job.db"
    Journal.connect(journal).close()
    with contextlib.closing(sqlite3.connect(journal)) as db:  # as schema 3 made its tables
        db.execute("ALTER TABLE runs DROP COLUMN unread")
        db.commit()
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(5)))
    args = create_args(server, source, journal, "--key-column", "reference")
    assert await cli(server, *args) == 0
    status = await read_status(journal)
    assert status.counts["created"] == 5 and status.unread == 0
    assert [run["outcome"] for run in status.runs] == ["done"]


async def test_a_key_in_a_row_is_hidden_in_the_journal_the_report_and_status(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cell holding the API key: hidden in every output, and never written to disk.

    The summary's table hid it, but the journal kept the row's reasons verbatim, so
    `bulk status` (no client, no secret known) and `--report` printed it.
    """
    key = server.api_key
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + f"R1,Flat 1,{key},\nR2,Flat 2,week,\n")
    journal = tmp_path / "job.db"
    report = tmp_path / "report.jsonl"
    args = create_args(server, source, journal, "--key-column", "reference")
    assert await cli(server, *args, "--report", str(report)) == 3
    assert key not in "".join(capsys.readouterr())
    assert "[redacted]" in report.read_text() and key not in report.read_text()
    with contextlib.closing(sqlite3.connect(journal)) as db:
        errors = [error for (error,) in db.execute("SELECT error FROM rows") if error]
    assert errors and "[redacted]" in errors[0] and not any(key in e for e in errors)

    # A journal written before (its reasons verbatim): status hides the key it is given,
    # with no client of it alive.
    gc.collect()
    with contextlib.closing(sqlite3.connect(journal)) as db:
        db.execute("UPDATE rows SET error = ? WHERE error IS NOT NULL", (f"{key!r} is bad",))
        db.commit()
    for more in ((), ("--json",)):
        assert await cli(server, "bulk", "status", str(journal), *more) == 0
        said = "".join(capsys.readouterr())
        assert "[redacted]" in said and key not in said


async def test_round_delay_is_the_wait_before_each_extra_round(
    server: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--round-delay` reaches the run, for `bulk create` and `bulk retry` alike.

    The run's pauses are recorded instead of slept: the service fails every create, so each
    of the extra rounds waits the delay given (3 s when none is).
    """
    waits: list[float] = []

    async def record(_: Run, seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(Run, "pause", record)
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "R1,Flat 1,week,\n")
    journal = tmp_path / "job.db"
    server.set_faults([FaultRule("POST /v1/teams/*/contracts", status_503=1.0)])
    more = ["--key-column", "reference", "--rounds", "2", "--round-delay", "0.25"]
    assert await cli(server, *create_args(server, source, journal, *more)) == 1
    assert waits.count(0.25) == 2 and 3.0 not in waits
    waits.clear()
    assert await cli(server, "bulk", "retry", str(journal), "-q", "--rounds", "1") == 1
    assert 3.0 in waits  # the default
    waits.clear()
    retry = ["bulk", "retry", str(journal), "-q", "--rounds", "1", "--round-delay", "0"]
    assert await cli(server, *retry) == 1
    assert 3.0 not in waits and 0.25 not in waits
    server.set_faults([])
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 0
    assert await names_in(server, 500) == ["Flat 1"]


def test_a_negative_round_delay_is_a_usage_error(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--round-delay -1` is refused when the command line is read (exit 2)."""
    args = create_args(server, tmp_path / "rows.csv", tmp_path / "j.db", "--round-delay", "-1")
    assert parse(args) == 2
    assert "Invalid value for '--round-delay'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["status", "retry"])
def test_an_input_file_given_for_its_journal_names_the_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`bulk status rows.csv`: a usage error naming the journal, not "not a database"."""
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "R1,Flat 1,week,\n")
    assert parse(["bulk", command, str(source)]) == 2
    err = capsys.readouterr().err
    assert f"{source} is not a journal (an input file?)" in err
    assert f"{source}.journal.db, which is not there" in err
    journal = Journal.connect(tmp_path / "rows.csv.journal.db")
    journal.close()
    assert parse(["bulk", command, str(source)]) == 2
    assert f"its journal is {source}.journal.db" in capsys.readouterr().err
    parsed = parse(["bulk", command, f"{source}.journal.db"])
    assert isinstance(parsed, Invocation)  # a journal, even one no job has used yet


@pytest.mark.parametrize(
    ("team", "contract_type", "created_by", "said"),
    [
        ("99999", "id", "ada", r"^team 99999, where the contracts are to be made \(--team\), does"),
        (
            "99999",
            "name",
            "ada",
            r"^team 99999, where the contracts are to be made \(--team\), does",
        ),
        ("Acme Legal", "name", "99999", r"^user 99999, who is to create the contracts \(--creat"),
        ("500", "99999", "ada", r"^contract type 99999 \(--contract-type\) has no template ver"),
    ],
)
async def test_a_target_the_service_does_not_know_is_named_as_the_option(
    server: SandboxServer,
    tmp_path: Path,
    team: str,
    contract_type: str,
    created_by: str,
    said: str,
) -> None:
    """A team, creator or contract type not found: one worded error (exit 2), no journal.

    A team given by id (or whose types were listed to find one by name), a creator whose
    teams were listed to find one by name, a contract type by id with no template: each
    was the service's raw 404 (exit 1), where a creator not found was already worded.
    """
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "R1,Flat 1,week,\n")
    kind = {"id": "2258718685988467", "name": AST}.get(contract_type, contract_type)
    creator = str(ada(server)) if created_by == "ada" else created_by
    journal = tmp_path / "j.db"
    args = ["bulk", "create", str(source), "--team", team, "--contract-type", kind, "-q"]
    with pytest.raises(ConfigurationError, match=said):
        await cli(server, *args, "--created-by", creator, "--journal", str(journal))
    assert not journal.exists()


async def test_bad_input_lines_do_not_cost_good_rows(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed line, a bad option and a BOM: the bad rows are reported, the rest created."""
    source = tmp_path / "rows.csv"
    text = (
        "\ufeff"
        + HEADER
        + "R1,Flat 1,week,\n"
        + "R2,Flat 2,week,,extra\n"  # one field too many
        + 'R3,"Flat 3"x,week,\n'  # bad quoting
        + "R4,Flat 4,fortnight,\n"  # not an option
        + "R5,Flat 5,month,breakClauseNo\n"
    )
    source.write_text(text, encoding="utf-8")
    report = tmp_path / "r.jsonl"
    args = create_args(server, source, tmp_path / "j.db", "--key-column", "reference")
    assert await cli(server, *args, "--report", str(report)) == 3
    outcomes = {o["line"]: o for o in map(json.loads, report.read_text().splitlines())}
    assert outcomes[2]["state"] == outcomes[6]["state"] == "created"
    assert outcomes[3]["reasons"] == ["line 3: expected 4 fields (as in the header), found 5"]
    assert "line 4: malformed CSV" in outcomes[4]["reasons"][0]
    assert "'fortnight' is not an option" in outcomes[5]["reasons"][0]
    assert sorted(await names_in(server, 500)) == ["Flat 1", "Flat 5"]
    assert "line 3" in capsys.readouterr().out


async def test_an_unknown_column_is_refused_with_a_suggestion(
    server: SandboxServer, tmp_path: Path
) -> None:
    """A header column that is no term is refused before any row is sent, naming the closest."""
    source = tmp_path / "rows.csv"
    source.write_text("contract_name,contract_rentFrequncy,notes\nFlat 1,week,x\n")
    with pytest.raises(ConfigurationError) as caught:
        await cli(server, *create_args(server, source, tmp_path / "j.db"))
    message = str(caught.value)
    assert "'contract_rentFrequncy' (did you mean 'contract_rentFrequency'?)" in message
    assert "'notes'" in message
    # The hint is in the command line's words: the flags that map or ignore each column.
    assert "--column contract_rentFrequncy=contract_rentFrequency" in message
    assert "--column notes=TERM" in message and "--column notes= " in message
    assert "columns=" not in message
    assert await names_in(server, 500) == []
    assert not (tmp_path / "j.db").exists()  # a refused first run leaves no journal
    # Mapping the column, and ignoring the other, makes it work (with the same journal).
    args = create_args(server, source, tmp_path / "j.db")
    more = ["--column", "contract_rentFrequncy=contract_rentFrequency", "--column", "notes="]
    assert await cli(server, *args, *more) == 0
    assert await names_in(server, 500) == ["Flat 1"]


async def test_files_and_journals_that_cannot_be_used(
    server: SandboxServer, tmp_path: Path
) -> None:
    """Empty or unreadable input, a missing journal directory, another job's journal."""
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ConfigurationError, match="is empty"):
        await cli(server, *create_args(server, empty, tmp_path / "a.db"))
    with pytest.raises(ConfigurationError, match=r"cannot read .*missing\.csv"):
        await cli(server, *create_args(server, tmp_path / "missing.csv", tmp_path / "b.db"))
    good = tmp_path / "rows.csv"
    good.write_text(
        HEADER.replace("reference", "contract_name", 1).replace(",contract_name", "", 1)
        + "Flat 1,week,\n"
    )
    with pytest.raises(JournalError, match=r"directory .* does not exist"):
        await cli(server, *create_args(server, good, tmp_path / "no" / "such" / "j.db"))
    journal = tmp_path / "j.db"
    assert await cli(server, *create_args(server, good, journal)) == 0
    other = create_args(server, good, journal)
    other[other.index("Acme Legal")] = "Personal Team"
    with pytest.raises(JournalError, match="belongs to another job") as caught:
        await cli(server, *other)
    assert str(caught.value).count("job ") >= 2
    with pytest.raises(ConfigurationError, match="no journal at"):
        await cli(server, "bulk", "status", str(tmp_path / "nothing.db"))


async def test_bulk_create_shares_its_limits_through_redis(
    server: SandboxServer, tmp_path: Path, redis_server: RedisServer
) -> None:
    """--redis URL: the bulk job's buckets live in Redis, under the credential's namespace."""
    journal = tmp_path / "job.db"
    args = create_args(server, EXAMPLE, journal, "--key-column", "reference")
    assert await cli(server, *args, "--redis", redis_server.url) == 3
    keys = redis_server.keys()
    assert any(key.endswith(":bucket:write") for key in keys)
    assert any(key.endswith(":clients") for key in keys)


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command of the tree under ``group``, with the words that name it."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_every_command_takes_redis() -> None:
    """--redis, a connection flag, is taken by every command and named in its help.

    Every command that talks to the service: all but the emulator, which is the service
    and has its own options.
    """
    parse(["--version"])  # registers every command
    commands = {words: command for words, command in _commands(root) if words != ("sandbox",)}
    assert {("bulk", "create"), ("demo",), ("users", "get")} <= commands.keys()
    for words, command in commands.items():
        flags = {flag for param in command.params for flag in param.opts}
        assert "--redis" in flags, f"contractsdk {' '.join(words)} takes no --redis"
        shown = command.get_help(click.Context(command, info_name=" ".join(words)))
        assert "--redis" in shown, f"contractsdk {' '.join(words)} -h does not say so"
    url = "redis://127.0.0.1:6379/0"
    for argv in (["users", "get", "1"], ["bulk", "status", "j.db"], ["teams", "list", "1"]):
        for where in ([*argv, "--redis", url], ["--redis", url, *argv]):
            invocation = parse(where)
            assert isinstance(invocation, Invocation)
            assert invocation.args.redis == url


async def test_the_summary_lists_incomplete_rows_and_says_what_to_run_next(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows created without their parties are listed, and stderr names the next commands.

    The summary said only "incomplete (parties missing) 2", listed no row, and left the
    user to find ``bulk status`` and ``bulk retry`` in the docs.
    """
    landlord = server.users[0].id
    source = tmp_path / "lets.csv"
    lines = ["reference,contract_name,landlord_id,landlord_address"]
    lines += [f"r{n},Let {n},{landlord},{n} Analytical Row" for n in range(2)]
    source.write_text("\n".join(lines) + "\n")
    journal = tmp_path / "my lets.db"  # a space: the command shown quotes it
    flags = [
        "--key-column", "reference", "--rounds", "0",
        "--party", "landlord:first:party",
        "--party-user-column", "landlord=landlord_id",
        "--party-column", "landlord:landlord_address=Address",
    ]  # fmt: skip
    server.set_faults([FaultRule("POST /v1/contracts/*/collaborators", status_503=1.0)])
    assert await cli(server, *create_args(server, source, journal, *flags)) == 1
    captured = capsys.readouterr()
    assert row_of(captured.out, "incomplete (parties missing)") == ["2"]
    listed = [line for line in captured.out.splitlines() if "parties not added" in line]
    assert len(listed) == 2 and all(line.split()[2] == "incomplete" for line in listed)
    assert f"contractsdk bulk retry '{journal}'" in captured.err
    assert f"contractsdk bulk status '{journal}'" in captured.err
    server.set_faults([])
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 0
    assert "next:" not in capsys.readouterr().err  # nothing left to do


async def test_a_run_without_a_journal_says_its_failures_cannot_be_retried(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-journal and rows failed: stderr says they cannot be retried, and how to keep them."""
    source = tmp_path / "rows.csv"
    source.write_text(HEADER + "R1,Flat 1,week,\n")
    server.set_faults([FaultRule("POST /v1/teams/*/contracts", status_503=1.0)])
    args = bulk_create(server, source, "--no-journal", "--key-column", "reference", "--rounds", "0")
    assert await cli(server, *args) == 1
    err = capsys.readouterr().err
    assert "cannot be resumed or retried" in err and "--journal FILE" in err


async def test_bulk_create_with_parties_from_the_command_line(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--party flags add a landlord and a tenant to every contract; status shows none missing."""
    landlord, tenant = server.users[0].id, server.users[1].id
    source = tmp_path / "lets.csv"
    lines = ["reference,contract_name,landlord_id,landlord_address,tenant_id,tenant_address"]
    lines += [
        f"r{n},Let {n},{landlord},{n} Analytical Row,{tenant},{n} Compiler Lane" for n in range(3)
    ]
    source.write_text("\n".join(lines) + "\n")
    journal = tmp_path / "lets.db"
    flags = [
        "--key-column", "reference",
        "--party", "landlord:first:party",
        "--party-user-column", "landlord=landlord_id",
        "--party-column", "landlord:landlord_address=Address",
        "--party", "tenant:second:party",
        "--party-user-column", "tenant=tenant_id",
        "--party-column", "tenant:tenant_address=Current address",
    ]  # fmt: skip
    assert await cli(server, *create_args(server, source, journal, *flags)) == 0
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        contracts = await client.contracts.list(500)
        assert sorted(c.name or "" for c in contracts) == ["Let 0", "Let 1", "Let 2"]
        for contract in contracts:
            parties = await client.collaborators.list(contract.id)
            assert sorted((p.user_id, p.side) for p in parties) == [
                (landlord, "first"),
                (tenant, "second"),
            ]
    capsys.readouterr()
    assert await cli(server, "bulk", "status", str(journal)) == 0
    status = capsys.readouterr().out
    assert row_of(status, "created") == ["3", "3"]
    assert "parties missing" not in status.lower() and "incomplete" not in status.lower()
