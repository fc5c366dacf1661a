"""The progress of a bulk run on stderr, and what Ctrl-C does to the run.

A rich progress bar on a terminal (bar, percent, rows, rows/s over the rows actually sent,
ETA, 429s and retries), a plain line every few seconds otherwise (logs, CI). The first
Ctrl-C stops sending and drains the requests in flight; a second one aborts. Once stopped,
the rows are those settled, and the rows not sent are said (``64/200 rows settled, 136 not
sent (stopped)``): the last line never reads as a finished job.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
)

from contractsdk.bulk import BulkJob, BulkProgress, RowOutcome

__all__ = ["LOG_INTERVAL", "TTY_INTERVAL", "ProgressView", "handle_interrupts"]

#: Seconds between progress redraws on a terminal, and between lines otherwise.
TTY_INTERVAL = 0.25
LOG_INTERVAL = 5.0
#: Terminals at least this wide show every counter, 0 or not, and a longer bar.
WIDE = 120
#: The bar's counters after ``created``: (field, label, rich style).
_COUNTERS = (
    ("invalid", "invalid", "yellow"),
    ("failed", "failed", "red"),
    ("skipped", "skipped", "dim"),
    ("throttled", "429s", "magenta"),
    ("retries", "retries", "magenta"),
)


class ProgressView:
    """Shows a job's progress on stderr: a rich bar on a terminal, plain lines otherwise.

    Fed by the outcomes the job yields (:meth:`seen`) and its :meth:`BulkJob.progress`
    snapshots (total, 429s, retries). The rate counts only rows actually sent (created,
    failed or unknown), never rows skipped as created before or refused as invalid, over
    the time since the first of them was on its way; the ETA is the rows left at that rate.
    Both freeze when the job is stopped; the rows shown are then those settled (the job
    yields the rows it leaves unsent as ``pending``: not done), and in place of the ETA,
    how many are not sent. (Not the snapshot's ``rate``/``eta``: its clock
    starts with the run, so the time a resumed run spends skipping rows created before
    drags its rate down, e.g. 10 rows/s shown for 100 sent per second.)

    Args:
        job: The job to report on.
        out: The console to draw on (stderr).
        enabled: False draws nothing.
    """

    def __init__(self, job: BulkJob, out: Console, *, enabled: bool = True) -> None:
        self.job = job
        self.out = out
        self.enabled = enabled
        self.done = 0
        self.sent = 0
        self.unsent = 0
        self.stopped = False
        self._start = time.monotonic()
        self._stopped_at: float | None = None
        self._bar: Progress | None = None
        self._compact = False
        self._task: Any = None

    # -- what is shown ---------------------------------------------------------------------

    def seen(self, outcome: RowOutcome) -> None:
        """Count one outcome the job yielded."""
        self.done += 1
        if outcome.state == "pending":  # the job stopped before sending it
            self.unsent += 1
            return
        if outcome.skipped or outcome.state == "invalid":
            if self.sent == 0:  # the clock of the send rate starts at the first row sent
                self._start = time.monotonic()
            return
        self.sent += 1
        if self.stopped:  # a row in flight at the stop, settled since: its time counts too
            self._stopped_at = time.monotonic()

    def stop(self) -> None:
        """Freeze the rate and ETA: the job sends nothing more.

        The rate's clock runs on while rows in flight at the stop settle, each one moving
        it to when it did: frozen at the stop, they counted at no time at all, and a job
        told 25/s read 29.4 rows/s after Ctrl-C.
        """
        self.stopped = True
        self._stopped_at = time.monotonic()

    def rate(self) -> float:
        """Rows sent per second."""
        end = self._stopped_at if self._stopped_at is not None else time.monotonic()
        elapsed = end - self._start
        return self.sent / elapsed if self.sent and elapsed > 0 else 0.0

    def eta(self, snapshot: BulkProgress) -> str:
        """The time left at the send rate, as ``m:ss``; ``-:--`` when it cannot be told."""
        rate = self.rate()
        if self.stopped:
            return "stopped"
        if snapshot.total is None or rate <= 0:
            return "-:--"
        seconds = round(max(0, snapshot.total - self.done) / rate)
        return f"{seconds // 60}:{seconds % 60:02d}"

    @property
    def settled(self) -> int:
        """Rows with an outcome: every row yielded but those a stop left unsent."""
        return self.done - self.unsent

    def not_sent(self, snapshot: BulkProgress) -> int:
        """Rows a stop leaves unsent: those yielded unsent, and those never reached.

        With a total, the rows neither settled nor in flight (the rows never read too, as
        the summary's ``not sent (stopped)`` counts them); without one, those yielded.
        """
        if snapshot.total is None:
            return self.unsent
        return max(self.unsent, snapshot.total - self.settled - snapshot.in_flight)

    def fields(self) -> dict[str, Any]:
        """The figures of the current snapshot, for the bar's columns and the plain line.

        ``completed`` is the rows settled (not those a stop yielded unsent), and once
        stopped ``eta`` says how many are not sent: the bar and the line never read as done.
        """
        snapshot = self.job.progress()
        not_sent = self.not_sent(snapshot)
        return {
            "total": snapshot.total,
            "completed": self.settled,  # all yielded, until a stop leaves rows unsent
            "not_sent": not_sent,
            "rate": f"{self.rate():,.1f} rows/s",
            "eta": f"stopped, {not_sent:,} not sent"
            if self.stopped
            else f"ETA {self.eta(snapshot)}",
            "created": snapshot.created,
            "skipped": snapshot.skipped,
            "invalid": snapshot.invalid,
            "failed": snapshot.failed,
            "throttled": snapshot.throttled,
            "retries": snapshot.retries,
        }

    def line(self) -> str:
        """One plain line: for logs and CI, where a bar cannot be redrawn."""
        f = self.fields()
        total = f"/{f['total']:,}" if f["total"] is not None else ""
        if self.stopped:  # never "200/200 rows" when 136 of them were not sent
            rows = (
                f"{f['completed']:,}{total} rows settled, {f['not_sent']:,} not sent (stopped)"
                f"  {f['rate']}"
            )
        else:
            rows = f"{f['completed']:,}{total} rows  {f['rate']}  {f['eta']}"
        return (
            f"{rows}  created {f['created']:,}"
            f"  skipped {f['skipped']:,}  invalid {f['invalid']:,}  failed {f['failed']:,}"
            f"  429s {f['throttled']:,}  retries {f['retries']:,}"
        )

    # -- drawing ---------------------------------------------------------------------------

    def __enter__(self) -> ProgressView:
        if self.enabled and self.out.is_terminal:
            # On a narrow terminal (80 columns is the usual default) every column did not
            # fit: rich cut the bar, the percentage and the row count ("1… 23.5 rows…")
            # and kept the counters that were 0. There the bar is shorter and a counter
            # shows only once it is not 0.
            self._compact = self.out.width < WIDE
            self._bar = Progress(
                BarColumn(bar_width=10 if self._compact else 24),
                TaskProgressColumn(),
                MofNCompleteColumn(),
                TextColumn("[cyan]{task.fields[rate]}"),
                TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[counts]}"),
                console=self.out,
                refresh_per_second=4,
            )
            self._bar.start()
            total, completed, fields = self._bar_fields()
            self._task = self._bar.add_task("rows", total=total, completed=completed, **fields)
        return self

    def _bar_fields(self) -> tuple[int | None, int, dict[str, Any]]:
        """The bar's total, rows completed, and its text columns' fields."""
        fields = self.fields()
        total, completed = fields.pop("total"), fields.pop("completed")
        counts = [f"[green]created {fields['created']:,}[/]"]
        for key, label, style in _COUNTERS:
            if fields[key] or not self._compact:
                counts.append(f"[{style}]{label} {fields[key]:,}[/]")
        fields["counts"] = " ".join(counts)
        return total, completed, fields

    def say(self, message: str) -> None:
        """Write a message on its own line, above the bar."""
        self.out.print(message, markup=False)

    def draw(self) -> None:
        """Update the bar, or write a plain line."""
        if not self.enabled:
            return
        if self._bar is not None:
            total, completed, fields = self._bar_fields()
            self._bar.update(self._task, completed=completed, total=total, **fields)
        else:
            self.out.print(self.line(), markup=False)

    async def run(self) -> None:
        """Draw until cancelled."""
        interval = TTY_INTERVAL if self._bar is not None else LOG_INTERVAL
        while True:
            await asyncio.sleep(interval)
            self.draw()

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self.draw()
        if self._bar is not None:
            self._bar.stop()


@contextlib.contextmanager
def handle_interrupts(job: BulkJob, progress: ProgressView) -> Iterator[dict[str, int]]:
    """First Ctrl-C or SIGTERM: stop sending and drain; a second one: abort at once.

    SIGTERM is what ``docker stop`` and Kubernetes send first (then SIGKILL after a grace
    period): the rows in flight are recorded, not left for the next run to reconcile.
    ``state["signal"]`` is the first signal's number (0: none), for the exit code.
    """
    state = {"signal": 0}
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_signal(number: int) -> None:
        if state["signal"]:
            progress.say("aborting: requests in flight are left 'sending' and reconciled next run")
            job.abort()
            if task is not None:
                task.cancel()
            return
        state["signal"] = number
        job.stop()
        progress.stop()
        again = "Ctrl-C again" if number == signal.SIGINT else "a second signal"
        progress.say(f"stopping: no new requests; waiting for those in flight ({again} to abort)")

    installed = []
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows; not main thread
            loop.add_signal_handler(number, on_signal, number)
            installed.append(number)
    try:
        yield state
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
