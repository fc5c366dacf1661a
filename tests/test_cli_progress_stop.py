"""After Ctrl-C or SIGTERM the last progress line says what was not sent.

It read like a finished job: ``200/200 rows … ETA stopped created 64``, with the summary
saying ``not sent (stopped) 136``, since the rows a stop leaves unsent are yielded as
``pending`` and were counted as done. Now it reads ``64/200 rows settled, 136 not sent
(stopped)``, and the bar stops at the rows settled.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from contractsdk.bulk import BulkProgress, RowOutcome
from contractsdk.cli._progress import ProgressView
from contractsdk.sandbox import FaultRule
from tests._bulkkit import (
    CONCURRENCY,
    LIMIT,
    command_emulator,
    command_line,
    created_in,
    journal_query,
    start_command,
    wait_until,
    weekly_rows_csv,
)


def snapshot(**changes: Any) -> BulkProgress:
    values: dict[str, Any] = {
        "done": 0,
        "total": 200,
        "created": 0,
        "skipped": 0,
        "invalid": 0,
        "failed": 0,
        "deferred": 0,
        "in_flight": 0,
        "throttled": 0,
        "retries": 0,
        "elapsed": 1.0,
    }
    values.update(changes)
    return BulkProgress(**values)


class FakeJob:
    def __init__(self, **changes: Any) -> None:
        self.snapshot = snapshot(**changes)

    def progress(self) -> BulkProgress:
        return self.snapshot


def console(*, terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=200, color_system=None)


def outcome(row: int, state: str) -> RowOutcome:
    return RowOutcome(row=row, line=row + 2, key=f"ref:{row}", state=state)  # type: ignore[arg-type]


def stopped_view(job: FakeJob, out: Console, *, created: int, unsent: int) -> ProgressView:
    view = ProgressView(job, out)  # type: ignore[arg-type]  # duck-typed job
    for row in range(created):
        view.seen(outcome(row, "created"))
    view.stop()
    for row in range(created, created + unsent):
        view.seen(outcome(row, "pending"))
    return view


def test_the_line_after_a_stop_counts_the_rows_not_sent() -> None:
    """64 created, then a stop leaves 136 unsent: not "200/200 rows"."""
    job = FakeJob(done=64, created=64, pending=136)
    view = stopped_view(job, console(terminal=False), created=64, unsent=136)
    line = view.line()
    assert line.startswith("64/200 rows settled, 136 not sent (stopped)  "), line
    assert "200/200" not in line and "ETA" not in line
    assert "created 64" in line


def test_rows_never_read_count_as_not_sent() -> None:
    """A stop before the whole file was read: rows never read are not sent too."""
    job = FakeJob(done=138, created=138, total=600)
    view = stopped_view(job, console(terminal=False), created=138, unsent=118)
    assert view.line().startswith("138/600 rows settled, 462 not sent (stopped)  ")


def test_requests_in_flight_are_not_counted_as_not_sent() -> None:
    """While it drains, the rows in flight may still be created: they are neither."""
    job = FakeJob(done=64, created=64, in_flight=6)
    view = stopped_view(job, console(terminal=False), created=64, unsent=0)
    assert view.line().startswith("64/200 rows settled, 130 not sent (stopped)  ")


def test_an_unstopped_line_is_as_documented() -> None:
    """Without a stop the line is unchanged: rows done, rate, ETA, the counts."""
    job = FakeJob(done=30, created=30, total=30)
    view = ProgressView(job, console(terminal=False))  # type: ignore[arg-type]
    for row in range(30):
        view.seen(outcome(row, "created"))
    assert re.fullmatch(
        r"30/30 rows  [\d.,]+ rows/s  ETA 0:00  created 30  skipped 0  invalid 0  failed 0"
        r"  429s 0  retries 0",
        view.line(),
    ), view.line()


def test_the_bar_after_a_stop_stops_at_the_rows_settled() -> None:
    """On a terminal: 64/200 and 32%, "stopped, 136 not sent"; never 200/200 or 100%."""
    out = console(terminal=True)
    job = FakeJob(done=64, created=64, pending=136)
    with stopped_view(job, out, created=64, unsent=136):
        pass
    stream = out.file
    assert isinstance(stream, io.StringIO)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    last = [line for line in re.split(r"[\r\n]", plain) if "/200" in line][-1]
    assert "64/200" in last and "32%" in last and "stopped, 136 not sent" in last, last
    assert "200/200" not in last and "100%" not in last


async def test_a_real_stop_ends_on_a_line_that_agrees_with_the_summary(tmp_path: Path) -> None:
    """`bulk create` into a log, SIGINT mid-run: the last line's "not sent" is the summary's."""
    rows = 200
    faults = [FaultRule("POST /v1/teams/*/contracts", latency=(0.01, 0.03))]
    async with command_emulator(faults) as server:
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        weekly_rows_csv(source, rows, "Stopped")
        command = start_command(server, source, journal)  # not -q, into a file: plain lines
        await wait_until(lambda: created_in(journal) >= 3, command)
        command.send_signal(signal.SIGINT)
        code, output = await command.finish(LIMIT)
    assert code == 130, output
    progress = [line for line in output.splitlines() if " rows " in line and "429s" in line]
    last = progress[-1]
    found = re.match(r"(\d+)/(\d+) rows settled, (\d+) not sent \(stopped\)  ", last)
    assert found is not None, output
    settled, total, not_sent = map(int, found.groups())
    assert total == rows and settled + not_sent == rows and not_sent > 0
    assert settled <= 3 + 2 * CONCURRENCY + 256  # nowhere near done
    summary = re.search(r"^not sent \(stopped\)\s+(\d+)$", output, re.MULTILINE)
    assert summary is not None, output
    assert int(summary.group(1)) == not_sent
    created = re.search(r"^created\s+(\d+)$", output, re.MULTILINE)
    assert created is not None and f"created {int(created.group(1))}" in last
    assert "next: run the same command again to send the rows not sent" in output


async def test_ctrl_c_with_the_reader_gone_still_drains_the_run(tmp_path: Path) -> None:
    """`bulk create … | tee log`, then Ctrl-C: tee dies too, and the run still drains.

    The next line of progress met a closed pipe, and the BrokenPipeError ended the command
    mid-run: its requests in flight were left `sending`, the run `cancelled`.
    """
    faults = [FaultRule("POST /v1/teams/*/contracts", latency=(0.01, 0.03))]
    async with command_emulator(faults) as server:
        source, journal = tmp_path / "rows.csv", tmp_path / "job.db"
        weekly_rows_csv(source, 200, "Piped")
        argv, env = command_line(server, source, journal)
        piped = subprocess.Popen(  # noqa: ASYNC220  # waited for in a thread, below
            [sys.executable, "-m", "contractsdk", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + LIMIT
            while created_in(journal) < 3:
                assert loop.time() < deadline and piped.poll() is None, "nothing was created"
                await asyncio.sleep(0.02)
            assert piped.stdout is not None and piped.stderr is not None
            piped.stdout.close()  # the reader is gone (tee, killed by the same Ctrl-C)
            piped.stderr.close()
            piped.send_signal(signal.SIGINT)
            code = await asyncio.to_thread(piped.wait, LIMIT)
        finally:
            if piped.poll() is None:
                piped.kill()
    assert code == 130
    assert journal_query(journal, "SELECT count(*) FROM rows WHERE state = 'sending'") == 0
    assert journal_query(journal, "SELECT count(*) FROM runs WHERE outcome = 'stopped'") == 1


@pytest.mark.parametrize("width", [80, 200])
def test_the_bar_fits_an_80_column_terminal(width: int) -> None:
    """80 columns: bar, 100%, 30/30, rate and ETA whole; a counter only once it is not 0.

    Every column at once did not fit 80: rich cut the percentage and the row count ("1…
    23.5 rows…") and kept "invalid 0 failed 0 skipped 0". A wide terminal shows them all.
    """
    out = Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    job = FakeJob(done=30, total=30, created=28, failed=2)
    view = ProgressView(job, out)  # type: ignore[arg-type]  # duck-typed job
    with view:
        for row in range(30):
            view.seen(outcome(row, "created" if row < 28 else "failed"))
    stream = out.file
    assert isinstance(stream, io.StringIO)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    last = [line for line in re.split(r"[\r\n]", plain) if "/30" in line][-1]
    assert "100%" in last and "30/30" in last and "rows/s" in last and "ETA" in last, last
    assert "created 28" in last and "failed 2" in last and "…" not in last, last
    assert ("invalid 0" in last) is (width > 80), last


def test_rows_settling_after_a_stop_count_their_time_in_the_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10 rows in 1 s, a stop, 5 rows in flight settle 0.5 s later: 10 rows/s, not 15.

    The clock froze at the stop while the rows in flight still counted: a job told
    25/s read 29.4 rows/s after Ctrl-C.
    """
    now = [100.0]
    monkeypatch.setattr("contractsdk.cli._progress.time.monotonic", lambda: now[0])
    view = ProgressView(FakeJob(total=100), console(terminal=False))  # type: ignore[arg-type]
    for row in range(10):
        view.seen(outcome(row, "created"))
    now[0] = 101.0
    view.stop()
    now[0] = 101.5
    for row in range(10, 15):
        view.seen(outcome(row, "created"))
    now[0] = 105.0  # nothing more settles: the clock stays where the last row put it
    assert view.rate() == pytest.approx(10.0)
