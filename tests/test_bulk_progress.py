"""Progress lines, duration estimates and the CLI's progress display."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from contractsdk import ConfigurationError
from contractsdk.bulk import BulkProgress, format_progress
from contractsdk.bulk._model import RowOutcome, estimate_seconds
from contractsdk.cli._bulk import ProgressView, parse_columns


def progress(**changes: Any) -> BulkProgress:
    values: dict[str, Any] = {
        "done": 1204,
        "sent": 1204,
        "total": 2000,
        "created": 1180,
        "skipped": 0,
        "invalid": 3,
        "failed": 0,
        "deferred": 0,
        "in_flight": 16,
        "throttled": 1,
        "retries": 4,
        "elapsed": 12.2,
    }
    values.update(changes)
    return BulkProgress(**values)


def test_progress_line_shows_rate_eta_and_counts() -> None:
    """One line: done/total, rows per second, ETA, outcomes, 429s and retries."""
    line = format_progress(progress())
    assert line == (
        "1,204/2,000 rows  98.7/s  ETA 00:08  created 1,180  invalid 3  failed 0  429s 1  retries 4"
    )


def test_progress_line_without_a_total_or_a_rate() -> None:
    """An iterable has no total (no ETA); nothing done yet has no rate."""
    line = format_progress(progress(total=None, done=0, elapsed=0.0))
    assert line.startswith("0 rows  0.0/s  ETA --:--")


def test_progress_line_mentions_skipped_and_deferred_only_when_there_are_some() -> None:
    """Skipped (done before) and deferred (to try again) appear when not zero."""
    line = format_progress(progress(skipped=20, deferred=2))
    assert "skipped 20" in line and "deferred 2" in line
    assert "skipped" not in format_progress(progress())


def test_eta_and_rate() -> None:
    """The ETA is the rows left at the rate so far; long ones show hours."""
    snapshot = progress(done=100, sent=100, total=400_100, elapsed=10.0)
    assert snapshot.rate == 10.0
    assert snapshot.eta == 40_000.0
    assert "ETA 11:06:40" in format_progress(snapshot)


def test_rate_and_eta_count_only_rows_sent() -> None:
    """A resumed run's skipped rows make no request: they do not raise the rate."""
    snapshot = progress(done=1000, sent=100, skipped=900, total=2000, elapsed=4.0)
    assert snapshot.rate == 25.0  # not 1000 / 4 = 250/s against a 25/s limit
    assert snapshot.eta == 40.0


def test_no_eta_once_the_job_stops_or_ends() -> None:
    """After Ctrl-C (stopping) or the end, the ETA is gone rather than frozen."""
    assert progress(stopping=True).eta is None
    assert progress(finished=True).eta is None
    assert "ETA --:--" in format_progress(progress(stopping=True))


def test_estimate_from_the_write_rate() -> None:
    """Duration = rows beyond the burst / rate; unknown without a rate."""
    assert estimate_seconds(2000, 100.0) == pytest.approx(19.99)
    assert estimate_seconds(2000, 100.0, burst=20) == pytest.approx(19.8)
    assert estimate_seconds(0, 100.0) == 0.0
    assert estimate_seconds(10, None) is None


class FakeJob:
    def __init__(self) -> None:
        self.snapshot = progress()

    def progress(self) -> BulkProgress:
        return self.snapshot


def console(*, terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=160, color_system=None)


def output(out: Console) -> str:
    stream = out.file
    assert isinstance(stream, io.StringIO)
    return stream.getvalue()


def test_progress_draws_a_bar_on_a_terminal() -> None:
    """On a terminal: a bar with percent, rows, the send rate and the counts."""
    out = console(terminal=True)
    with ProgressView(FakeJob(), out) as view:  # type: ignore[arg-type]  # duck-typed job
        view.draw()
    text = output(out)
    assert "%" in text and "rows/s" in text and "429s" in text


def test_progress_prints_plain_lines_elsewhere() -> None:
    """Off a terminal (logs, CI) each draw is one plain line, and one more at the end."""
    out = console(terminal=False)
    with ProgressView(FakeJob(), out) as view:  # type: ignore[arg-type]  # duck-typed job
        view.draw()
    lines = output(out).splitlines()
    assert len(lines) == 2
    assert all("rows/s" in line and "ETA" in line for line in lines)
    assert "\r" not in output(out) and "\x1b" not in output(out)


def test_the_send_rate_leaves_out_rows_a_stop_left_unsent() -> None:
    """After Ctrl-C the job yields its unsent rows as ``pending``: no request, no rate."""
    view = ProgressView(FakeJob(), console(terminal=False))  # type: ignore[arg-type]
    for row in range(10):
        view.seen(RowOutcome(row=row, line=row + 2, key=f"ref:{row}", state="created"))
    view.stop()
    for row in range(10, 600):
        view.seen(RowOutcome(row=row, line=row + 2, key=f"ref:{row}", state="pending"))
    assert (view.done, view.sent) == (600, 10)
    stopped_at = view._stopped_at
    assert stopped_at is not None
    assert view.rate() == pytest.approx(10 / (stopped_at - view._start))
    assert view.eta(progress()) == "stopped"


def test_quiet_progress_draws_nothing() -> None:
    """--quiet: no progress at all."""
    out = console(terminal=True)
    with ProgressView(FakeJob(), out, enabled=False) as view:  # type: ignore[arg-type]
        view.draw()
    assert output(out) == ""


def test_column_flags() -> None:
    """--column COL=TERM maps, COL= ignores, anything else is refused."""
    assert parse_columns(["Name=contract_name", "notes=", " Ref = contract_ref "]) == {
        "Name": "contract_name",
        "notes": None,
        "Ref": "contract_ref",
    }
    with pytest.raises(ConfigurationError, match="COLUMN=TERM"):
        parse_columns(["oops"])
