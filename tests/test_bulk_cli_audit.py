"""``contractsdk bulk``: what an audit of the command line found, each against the emulator.

A report that would overwrite the input or the journal, a report that cannot be written,
rows created without all their parties, a lone surrogate in JSONL, a killed run in
``bulk status``, and the wording of errors in the command line's own terms.
"""

from __future__ import annotations

import asyncio
import csv
import errno
import io
import json
import os
import re
import signal
from pathlib import Path
from unittest.mock import ANY

import pytest

from contractsdk import ConfigurationError, ContractClient
from contractsdk._logging import ClientStats
from contractsdk.bulk._tally import Tally
from contractsdk.cli._app import Invocation, parse
from contractsdk.cli._bulk import example_csv
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._bulkkit import (
    LIMIT,
    FaultyService,
    client_for,
    collect,
    command_emulator,
    created_in,
    job_for,
    journal_counts,
    rows,
    start_command,
    wait_until,
    weekly_rows_csv,
)
from tests._clikit import bulk_create, cli

pytestmark = pytest.mark.e2e

HEADER = "reference,contract_name,contract_rentFrequency,contract_breakClause\n"


def create(server: SandboxServer, source: Path, *more: str) -> list[str]:
    """``bulk create SOURCE``, keyed by ``reference``, its journal the default."""
    return bulk_create(server, source, "--key-column", "reference", *more)


def rows_file(folder: Path, count: int, name: str = "rows.csv") -> Path:
    source = folder / name
    source.write_text(HEADER + "".join(f"R{i},Flat {i},week,\n" for i in range(count)))
    return source


def row_of(table: str, label: str) -> list[str]:
    """The cells after ``label`` on the line of a printed table that starts with it."""
    for line in table.splitlines():
        if line.startswith(label + " "):
            return line[len(label) :].split()
    raise AssertionError(f"no line {label!r} in:\n{table}")


async def names_in(server: SandboxServer, team_id: int = 500) -> list[str]:
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        return [c.name or "" for c in await client.contracts.list(team_id)]


# -- 1. a report over the input or the journal -----------------------------------------


async def test_a_report_over_the_input_or_the_journal_is_refused(
    server: SandboxServer, tmp_path: Path
) -> None:
    """`--report` naming the input, the journal or one of its files: refused, nothing touched.

    It used to open the report first: the input was emptied (then "is empty"), and a
    `bulk retry` emptied its journal (the created rows gone from it).
    """
    source = rows_file(tmp_path, 5)
    before = source.read_bytes()
    journal = tmp_path / "rows.csv.journal.db"  # the default
    link, hard = tmp_path / "link.csv", tmp_path / "hard.csv"
    link.symlink_to(source)
    hard.hardlink_to(source)
    for report, what in [
        (source, "the input file"),
        (link, "the input file"),
        (hard, "the input file"),
        (journal, "the journal"),  # before it exists
        (Path(f"{journal}-wal"), "the journal's -wal file"),
    ]:
        for more in ((), ("--dry-run",)):
            refused = re.escape(f"--report {report} is {what} (")
            with pytest.raises(ConfigurationError, match=refused) as e:
                await cli(server, *create(server, source, "--report", str(report), *more))
            assert "\n" not in str(e.value)
    assert source.read_bytes() == before
    assert not journal.exists()

    assert await cli(server, *create(server, source)) == 0
    assert journal_counts(journal)["created"] == 5
    roundabout = f"{tmp_path}/../{tmp_path.name}/{journal.name}"  # the same file
    for spelling in (str(journal), roundabout, str(source)):
        with pytest.raises(ConfigurationError, match="give the report another path"):
            await cli(server, "bulk", "retry", str(journal), "-q", "--report", spelling)
    assert journal_counts(journal)["created"] == 5
    assert source.read_bytes() == before
    assert await cli(server, *create(server, source)) == 0  # the job still resumes


# -- 2. a report that cannot be written --------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
async def test_a_report_that_cannot_be_written_stops_the_job_cleanly(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk under the report: one line, the summary, exit 2; a rerun finishes.

    It raised OSError out of the run (a traceback, the run recorded "cancelled", no
    summary). Now the job stops as for Ctrl-C: no new request, those in flight recorded.
    """
    source = rows_file(tmp_path, 100)
    journal = tmp_path / "rows.csv.journal.db"
    full = ["--report", "/dev/full", "--concurrency", "4"]
    assert await cli(server, *create(server, source, *full)) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"error: cannot write the report /dev/full: {os.strerror(errno.ENOSPC)}; stopping "
        "(run the command again, with another --report, to continue)"
    ]
    assert row_of(captured.out, "rows") == ["100"]
    assert int(row_of(captured.out, "not sent (stopped)")[0]) > 0
    assert await cli(server, "bulk", "status", str(journal), "--json") == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [run["outcome"] for run in runs] == ["stopped"]

    # A dry run's report: the plan is made and shown, then exit 2.
    assert await cli(server, *create(server, source, "--dry-run", *full)) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"error: cannot write the report /dev/full: {os.strerror(errno.ENOSPC)}"
    ]
    assert "would create" in captured.out

    report = tmp_path / "report.jsonl"
    assert await cli(server, *create(server, source, "--report", str(report))) == 0
    assert sorted(await names_in(server)) == sorted(f"Flat {i}" for i in range(100))
    assert len(report.read_text().splitlines()) == 100


# -- 3 and 4. rows created without all their parties --------------------------------------


def party_rows(folder: Path, tenants: list[int]) -> Path:
    source = folder / "lets.csv"
    lines = [HEADER.rstrip("\n") + ",tenant_id,tenant_email"]
    lines += [
        f"L{n},Let {n},month,breakClauseNo,{tenant},t{n}@example.com"
        for n, tenant in enumerate(tenants)
    ]
    source.write_text("\n".join(lines) + "\n")
    return source


PARTY = [
    "--party",
    "tenant:second:party",
    "--party-user-column",
    "tenant=tenant_id",
    "--party-column",
    "tenant:tenant_email=Email",
]


async def test_rows_without_all_their_parties_are_not_done(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Contracts whose party cannot be added (no such user): exit 1, counted right on a rerun.

    `bulk create` and `bulk retry` exited 0 with rows incomplete; and a rerun that created
    one new row counted it "already created" (created 0), the incomplete rows of the first
    run having been counted as skipped too.
    """
    tenant, nobody = server.users[1].id, 99999
    source = party_rows(tmp_path, [tenant, nobody, tenant, nobody, tenant])
    assert await cli(server, *create(server, source, *PARTY)) == 1
    out = capsys.readouterr().out
    assert row_of(out, "created") == ["3"]
    assert row_of(out, "incomplete (parties missing)") == ["2"]

    source = party_rows(tmp_path, [tenant, nobody, tenant, nobody, tenant, tenant])
    assert await cli(server, *create(server, source, *PARTY)) == 1
    out = capsys.readouterr().out
    assert row_of(out, "rows") == ["6"]
    assert row_of(out, "created") == ["1"]
    assert row_of(out, "already created") == ["3"]
    assert row_of(out, "incomplete (parties missing)") == ["2"]

    journal = f"{source}.journal.db"
    assert await cli(server, "bulk", "retry", journal, "-q") == 1  # the user still is not
    out = capsys.readouterr().out
    assert row_of(out, "incomplete (parties missing)") == ["2"]
    assert len(await names_in(server)) == 6


def test_a_rerun_counts_new_earlier_and_incomplete_rows_apart() -> None:
    """The tally's end of run: the journal's counts, split by what the outcomes said.

    19 rows created before (4 of them incomplete, reported skipped as they were read) and
    one created now: created 1, already created 15, incomplete 4.
    """
    stats = ClientStats(
        requests=0, responses={}, retries=0, throttled=0, limiter_wait=0.0, token_requests=0
    )
    tally = Tally(stats_start=stats)
    tally.counts.update(skipped=19, created=1)
    tally.settle({"created": 20}, incomplete=4)
    assert (tally.counts["created"], tally.counts["skipped"], tally.counts["incomplete"]) == (
        1,
        15,
        4,
    )
    # The first run: 19 created, 4 reported incomplete; nothing earlier.
    first = Tally(stats_start=stats)
    first.counts.update(created=15, incomplete=4)
    first.settle({"created": 19}, incomplete=4)
    assert (first.counts["created"], first.counts["skipped"], first.counts["incomplete"]) == (
        15,
        0,
        4,
    )
    # Aborted before its new incomplete rows were reported: never a negative count.
    cut = Tally(stats_start=stats)
    cut.counts.update(skipped=2)
    cut.settle({"created": 5, "sending": 1}, incomplete=3)
    counts = cut.counts
    assert min(counts.values()) >= 0 and sum(counts.values()) == 6
    assert (counts["incomplete"], counts["skipped"] + counts["created"]) == (3, 2)


# -- 5. a lone surrogate in JSONL ---------------------------------------------------------


async def test_a_lone_surrogate_in_jsonl_is_an_invalid_row(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r"""`"\ud800"` in a value: that line is invalid, naming line and column; no crash, rerun too.

    It reached the journal, which cannot encode it (UnicodeEncodeError), on every run.
    """
    source = tmp_path / "rows.jsonl"
    good = {"reference": "J2", "contract_name": "Flat 2", "contract_rentFrequency": "week"}
    source.write_text(
        r'{"reference": "J1", "contract_name": "Flat \ud800 1", "contract_rentFrequency": "week"}'
        + "\n"
        + json.dumps(good)
        + "\n"
    )
    report = tmp_path / "r.jsonl"
    for _run in range(2):
        assert await cli(server, *create(server, source, "--report", str(report))) == 3
        outcomes = [json.loads(line) for line in report.read_text().splitlines()]
        assert [o["state"] for o in outcomes if o["line"] == 1] == ["invalid"]
        assert outcomes[[o["line"] for o in outcomes].index(1)]["reasons"] == [
            "line 1: the value of 'contract_name' has the escape \\ud800, a lone surrogate "
            "(half of a UTF-16 pair) that is not a character"
        ]
    # The table's WHERE column says "line 1" already: not twice ("line 1  … line 1: …").
    assert "line 1  invalid  -     the value of 'contract_name'" in capsys.readouterr().out
    assert await names_in(server) == ["Flat 2"]


# -- 6. a killed run in `bulk status` ------------------------------------------------------


async def status_of(journal: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], bool]:
    """`bulk status JOURNAL`: the cells of its first run, and ``running`` from its JSON."""
    shown = []
    for argv in (["bulk", "status", str(journal)], ["bulk", "status", str(journal), "--json"]):
        invocation = parse(argv)
        assert isinstance(invocation, Invocation)
        assert await invocation.run() == 0
        shown.append(capsys.readouterr().out)
    table = shown[0].splitlines()
    header = next(index for index, line in enumerate(table) if line.startswith("RUN "))
    run, mode, started, finished, outcome = table[header + 1].split(maxsplit=4)
    running = json.loads(shown[1])["running"]
    assert isinstance(running, bool)
    return [run, mode, started, finished, outcome.strip()], running


async def test_status_tells_a_running_job_from_a_killed_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that did not record its end: "running" while its job holds the journal.

    Killed (kill -9), it showed FINISHED `-` and OUTCOME `-` forever, as a running one does.
    """
    service = FaultyService()
    service.gate = asyncio.Event()  # holds every create until set
    journal = tmp_path / "job.db"
    async with client_for(service) as client:
        job = job_for(client, list(rows(3)), journal=journal)
        running = asyncio.create_task(collect(job))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT
        while service.in_flight == 0:
            assert loop.time() < deadline and not running.done(), "the job sent nothing"
            await asyncio.sleep(0.005)
        assert await status_of(journal, capsys) == (["1", "create", ANY, "-", "running"], True)
        service.gate.set()
        await running
    assert await status_of(journal, capsys) == (["1", "create", ANY, ANY, "done"], False)

    faults = [FaultRule("POST /v1/teams/*/contracts", latency=(0.005, 0.015))]
    async with command_emulator(faults) as server:
        source, journal = tmp_path / "rows.csv", tmp_path / "killed.db"
        weekly_rows_csv(source, 200, "Killed")
        command = start_command(server, source, journal)
        await wait_until(lambda: created_in(journal) >= 3, command)
        command.send_signal(signal.SIGKILL)
        code, output = await command.finish(LIMIT)
        assert code == -signal.SIGKILL, output
    killed = ["1", "create", ANY, "-", "ended without finishing (killed?)"]
    assert await status_of(journal, capsys) == (killed, False)


# -- 7. the command line's own words -------------------------------------------------------


async def test_errors_and_notes_in_the_command_lines_terms(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Python API wording; a header-only CSV says it has no rows (still exit 0)."""
    with pytest.raises(ConfigurationError) as caught:
        await cli(server, *create(server, rows_file(tmp_path, 1, "rows.txt")))
    message = str(caught.value)
    assert "format=" not in message
    assert "rows.txt" in message and ".csv" in message and ".jsonl" in message

    big = tmp_path / "big.jsonl"
    big.write_text('{"reference": "B1", "contract_name": "Flat B", "n": ' + "9" * 5000 + "}\n")
    assert await cli(server, *create(server, big)) == 3
    out = capsys.readouterr().out
    assert "line 1  invalid  -     the value of 'n' is a number of 5000 digits, too long" in out
    assert "sys." not in out

    header_only = tmp_path / "header.csv"
    header_only.write_text(HEADER)
    assert await cli(server, *create(server, header_only)) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"note: {header_only} has no rows, only a header line: nothing to create"
    ]
    assert row_of(captured.out, "rows") == ["0"]


async def test_the_example_as_json_lines(
    server: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bulk example x.jsonl` writes the same rows as JSON lines; another suffix is refused.

    It wrote the CSV into the .jsonl file, whose every line was then invalid.
    """
    target = tmp_path / "tenancies.jsonl"
    assert await cli(server, "bulk", "example", str(target)) == 0
    assert capsys.readouterr().out == f"wrote {target} (30 rows)\n"
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert lines == list(csv.DictReader(io.StringIO(example_csv())))
    assert await cli(server, *create(server, target)) == 3  # as the CSV: 3 invalid rows
    out = capsys.readouterr().out
    assert row_of(out, "created") == ["27"]
    assert row_of(out, "invalid") == ["3"]
    with pytest.raises(ConfigurationError, match=r"tenancies\.txt .*\.csv or \.jsonl"):
        await cli(server, "bulk", "example", str(tmp_path / "tenancies.txt"))
    assert not (tmp_path / "tenancies.txt").exists()
