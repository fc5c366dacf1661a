"""``contractsdk bulk``: what a new user's walkthrough found, each against the emulator.

Both ``--journal`` and ``--no-journal``, lists cut at 20 rows without saying so, a
``bulk retry`` with nothing to retry, the advice for rows whose contracts exist already,
and lines printed before the error that refused the run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contractsdk import ConfigurationError, ContractSDKError
from contractsdk.bulk import JournalError, read_status
from contractsdk.cli._app import parse
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._clikit import AST, bulk_create, cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tenancies.csv"
HEADER = "reference,contract_name,contract_rentFrequency,contract_breakClause\n"


def create(server: SandboxServer, source: Path, *more: str) -> list[str]:
    """``bulk create SOURCE`` quietly, keyed by ``reference``, its journal the default."""
    return bulk_create(server, source, "--key-column", "reference", *more)


def rows_file(folder: Path, good: int, bad: int = 0, name: str = "rows.csv") -> Path:
    """``good`` valid rows, then ``bad`` rows invalid for a rent frequency not offered."""
    source = folder / name
    lines = [f"R{i},Flat {i},week,\n" for i in range(good)]
    lines += [f"B{i},Bad {i},fortnight,\n" for i in range(bad)]
    source.write_text(HEADER + "".join(lines))
    return source


def listed_rows(out: str) -> list[str]:
    """The rows a summary or a plan lists: ``line N …``."""
    return [line for line in out.splitlines() if line.startswith("line ")]


async def run_count(journal: Path) -> int:
    return len((await read_status(journal, limit=0)).runs)


# -- --journal FILE with --no-journal ------------------------------------------------------


@pytest.mark.parametrize(
    "flags", [("--journal", "j2.db", "--no-journal"), ("--no-journal", "--journal", "j2.db")]
)
def test_a_journal_and_no_journal_is_a_usage_error(
    flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """Both flags, in either order: exit 2, click's usage lines, naming both flags.

    It ran without a journal, silently: no j2.db, no resume, no retry.
    """
    argv = ["bulk", "create", "rows.csv", "--team", "1", "--contract-type", "2"]
    assert parse([*argv, "--created-by", "7", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: contractsdk bulk create [OPTIONS] FILE\n")
    last = err.splitlines()[-1]
    assert last.startswith("Error: give --journal FILE or --no-journal, not both")


# -- lists cut at their first rows ----------------------------------------------------------


async def test_a_summary_cut_at_20_rows_says_how_many_more_and_where(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """25 invalid rows: 20 listed, then "… and 5 more", with the command that lists them.

    The table stopped at 20 rows with no sign that 5 more were invalid.
    """
    source = rows_file(tmp_path, 2, 25)
    journal = tmp_path / "my rows.db"  # a space: the command shown quotes it
    assert await cli(server, *create(server, source, "--journal", str(journal))) == 3
    out = capsys.readouterr().out
    assert len(listed_rows(out)) == 20
    status = f"contractsdk bulk status '{journal}'"
    assert (
        f"… and 5 more (`{status} --limit 25` lists them, or --report FILE writes every row)"
        in out.splitlines()
    )

    # That command lists all 25, and says nothing more; the default lists 20, and says so.
    assert await cli(server, "bulk", "status", str(journal), "--limit", "25") == 0
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if "'fortnight'" in line]) == 25
    assert "more (" not in out
    assert await cli(server, "bulk", "status", str(journal)) == 0
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if "'fortnight'" in line]) == 20
    assert f"… and 5 more (`{status} --limit 25` lists them)" in out.splitlines()

    # With a report, the report is where they are; a dry run has only a report.
    report = tmp_path / "report.jsonl"
    more = ["--journal", str(journal), "--report", str(report)]
    assert await cli(server, *create(server, source, *more)) == 3
    assert f"… and 5 more (--report {report} has every row)" in capsys.readouterr().out
    dry = rows_file(tmp_path, 0, 25, "dry.csv")
    assert await cli(server, *create(server, dry, "--dry-run")) == 3
    out = capsys.readouterr().out
    assert len(listed_rows(out)) == 20
    assert "… and 5 more (--report FILE writes every row)" in out.splitlines()

    # A list that is whole says nothing more.
    assert await cli(server, *create(server, rows_file(tmp_path, 0, 20, "twenty.csv"))) == 3
    out = capsys.readouterr().out
    assert len(listed_rows(out)) == 20 and "more (" not in out


async def test_status_says_how_many_unfinished_rows_it_leaves_out(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bulk status --limit 2` of 5 failed rows: 2 listed, "… and 3 more" (--limit 5)."""
    source = rows_file(tmp_path, 5)
    server.set_faults([FaultRule("POST /v1/teams/*/contracts", status_503=1.0)])
    assert await cli(server, *create(server, source, "--rounds", "0")) == 1
    capsys.readouterr()
    journal = f"{source}.journal.db"
    assert await cli(server, "bulk", "status", journal, "--limit", "2") == 0
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if line.split()[1:2] == ["failed"]]) == 2
    assert f"… and 3 more (`contractsdk bulk status {journal} --limit 5` lists them)" in (
        out.splitlines()
    )


# -- bulk retry with nothing to retry ---------------------------------------------------


async def test_retry_with_nothing_to_retry_says_why_and_starts_no_run(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only invalid rows left: one line says why, one what to do; exit 3, no run added.

    It printed an all-zero summary, exited 0 and added an empty run to the journal.
    """
    journal = tmp_path / "job.db"
    assert await cli(server, *create(server, EXAMPLE, "--journal", str(journal))) == 3
    capsys.readouterr()
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "nothing to retry: no row failed, is unknown or was not sent (27 created, 3 invalid)",
        "next: fix the 3 invalid rows in the file and run `contractsdk bulk create` again "
        "with the same options (bulk retry does not read the file)",
    ]
    assert await run_count(journal) == 1

    # --json: a summary of no run (run 0), for a script.
    assert await cli(server, "bulk", "retry", str(journal), "--json") == 3
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert (summary["run"], summary["rows"], summary["created"]) == (0, 0, 0)
    assert await run_count(journal) == 1

    # Every row created: exit 0, and nothing to do next.
    done = rows_file(tmp_path, 3, name="done.csv")
    assert await cli(server, *create(server, done)) == 0
    capsys.readouterr()
    done_journal = tmp_path / "done.csv.journal.db"
    assert await cli(server, "bulk", "retry", str(done_journal)) == 0
    assert capsys.readouterr().err.splitlines() == [
        "nothing to retry: no row failed, is unknown or was not sent (3 created)"
    ]
    assert await run_count(done_journal) == 1


async def test_retry_still_runs_when_rows_failed(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed row, beside invalid ones: `bulk retry` sends it, as before."""
    source = rows_file(tmp_path, 1, 2)
    server.set_faults([FaultRule("POST /v1/teams/*/contracts", status_503=1.0)])
    assert await cli(server, *create(server, source, "--rounds", "0")) == 1
    server.set_faults([])
    capsys.readouterr()
    journal = tmp_path / "rows.csv.journal.db"
    assert await cli(server, "bulk", "retry", str(journal), "-q") == 0
    assert "nothing to retry" not in capsys.readouterr().err
    assert await run_count(journal) == 2


# -- rows whose contracts exist already ----------------------------------------------------


async def test_rows_whose_contracts_exist_already_are_not_to_fix(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file run again with a new journal: its rows' contracts exist; no "fix the rows".

    The last line said "fix the invalid rows in the file and run the same command again",
    which cannot help: their contracts exist already, made outside this journal.
    """
    assert await cli(server, *create(server, EXAMPLE, "--journal", str(tmp_path / "a.db"))) == 3
    capsys.readouterr()
    copy = tmp_path / "copy.csv"
    shutil.copy(EXAMPLE, copy)
    assert await cli(server, *create(server, copy)) == 3
    assert capsys.readouterr().err.splitlines() == [
        "next: fix the other 3 invalid rows in the file and run the same command again (the "
        "journal skips the rows done)",
        "next: the contracts of 27 invalid rows exist already, made outside this journal (by a "
        "run with another journal or none, or by hand): nothing to do if they are these rows' "
        "contracts (remove the rows from the file); if not, rename the rows and run the same "
        "command again",
    ]

    # Only such rows: no line says to fix them; without a journal, "before this run".
    valid = rows_file(tmp_path, 2, name="valid.csv")
    assert await cli(server, *create(server, valid, "--no-journal")) == 0
    assert await cli(server, *create(server, valid)) == 3
    said = capsys.readouterr().err
    assert "fix" not in said
    assert "next: the contracts of 2 invalid rows exist already, made outside this journal" in said
    assert await cli(server, *create(server, valid, "--no-journal")) == 3
    said = capsys.readouterr().err
    assert "fix" not in said
    assert "exist already, made before this run (--no-journal keeps no record" in said

    # bulk retry and bulk status say the same of them.
    journal = str(tmp_path / "valid.csv.journal.db")
    assert await cli(server, "bulk", "retry", journal) == 3
    assert capsys.readouterr().err.splitlines() == [
        "nothing to retry: no row failed, is unknown or was not sent (2 invalid)",
        "next: the contracts of 2 invalid rows exist already, made outside this journal (by a "
        "run with another journal or none, or by hand): nothing to do if they are these rows' "
        "contracts (remove the rows from the file); if not, rename the rows and run "
        "`contractsdk bulk create` again with the same options",
    ]
    assert await cli(server, "bulk", "status", journal) == 0
    out = capsys.readouterr().out
    assert "invalid when the input was last read (their contracts exist already" in out
    assert "fix the input" not in out


# -- nothing printed before the error that refuses a run -------------------------------------


async def test_a_refused_run_prints_only_why(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A template not found, a journal folder missing, an unknown column, a report refused.

    The `journal: … (job …)` line and a `0/30 rows` progress line came first, as if the
    run had started. They come once it has: its first row has an outcome.
    """
    source = rows_file(tmp_path, 3)
    # Not quiet: the journal's line and the progress are what is checked.
    argv = [
        *("bulk", "create", str(source), "--team", "Acme Legal", "--contract-type", AST),
        *("--created-by", str(server.users[0].id), "--key-column", "reference"),
    ]
    refused: list[tuple[list[str], type[Exception]]] = [
        (["--template", "99999"], ContractSDKError),
        (["--journal", str(tmp_path / "nope" / "j.db")], JournalError),
        (["--column", "notes=contract_name"], ConfigurationError),
        (["--report", str(source)], ConfigurationError),
    ]
    for more, error in refused:
        with pytest.raises(error):
            await cli(server, *argv, *more)
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("", ""), more

    assert await cli(server, *argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"journal: {source}.journal.db (job {err[0].split('(job ')[1]}"
    assert err[-1].startswith("3/3 rows")


# -- a CSV separated by semicolons; the dry run's column hint -------------------------------


async def test_a_semicolon_csv_is_read_with_delimiter(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Excel's ';' CSV: named so without the flag, created with `--delimiter ';'`.

    The message pointed to CsvSource, from Python only: the command line read commas.
    """
    source = tmp_path / "semi.csv"
    source.write_text(HEADER.replace(",", ";") + "S1;Semi 1;week;\nS2;Semi 2;month;\n")
    with pytest.raises(ConfigurationError, match="--delimiter ';'"):
        await cli(server, *create(server, source))
    capsys.readouterr()
    assert await cli(server, *create(server, source, "--delimiter", ";")) == 0
    status = await read_status(Path(f"{source}.journal.db"))
    assert status.counts["created"] == 2
    tabbed = tmp_path / "tabbed.csv"
    tabbed.write_text(HEADER.replace(",", "\t") + "T1\tTab 1\tweek\t\n")
    assert await cli(server, *create(server, tabbed, "--delimiter", "tab")) == 0
    for bad in ("", ";;", '"'):
        assert parse(["bulk", "create", "x.csv", "--created-by", "7", "--delimiter", bad]) == 2
        assert "give one character (or 'tab')" in capsys.readouterr().err
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text('{"reference": "J1"}\n')
    with pytest.raises(ConfigurationError, match=r"--delimiter is for a \.csv file"):
        await cli(server, *create(server, jsonl, "--delimiter", ";"))


async def test_a_dry_run_gives_the_unknown_column_hint_a_run_gives(
    server: SandboxServer, tmp_path: Path
) -> None:
    """An unknown column under --dry-run: the same flags to map or ignore it as a real run.

    The dry run stopped at "Map each such column to a term, or ignore it", without them.
    """
    source = tmp_path / "cols.csv"
    source.write_text("reference,contract_nmae,contract_rentFrequency\nR1,Flat 1,week\n")
    for more in ((), ("--dry-run",)):
        with pytest.raises(ConfigurationError) as caught:
            await cli(server, *create(server, source, *more))
        assert "--column contract_nmae=contract_name" in str(caught.value), more
