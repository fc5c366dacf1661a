"""A run's counters: every input row in exactly one state, and the progress they show.

# Invariants
#
# 1. Every row of the input is counted once, in one of ``created``, ``incomplete`` (its
#    contract exists, a party of the job is not added), ``skipped`` (created
#    by an earlier run), ``invalid``, ``failed``, ``unknown`` (a request went out and its
#    outcome is not known) or ``pending`` (not sent: the job stopped, or a dry run), by
#    the time the run ends: finished, stopped (drained) or aborted. Rows reported as
#    outcomes are counted when reported; at the end, the journal's rows of the run that
#    were never reported are counted by their state, and rows of the input never read
#    are counted ``pending``.
# 2. ``sent`` counts rows whose outcome came from a request in this run; the rate and the
#    ETA are over those rows only (skipped and invalid rows cost no request).
# 3. The rate's clock stops when the run is asked to stop, and the ETA is then None.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import attrs

from contractsdk._logging import ClientStats
from contractsdk.bulk._model import BulkProgress, BulkSummary, RowOutcome
from contractsdk.bulk._records import ListingResult

__all__ = ["Tally"]

_STATE_OF = {"sending": "unknown", "pending": "pending"}


@attrs.define(kw_only=True)
class Tally:
    """The counters of one run (owned by its :class:`~contractsdk.bulk._run.Run`)."""

    stats_start: ClientStats
    started: float = attrs.field(factory=time.monotonic)
    counts: dict[str, int] = attrs.field(
        factory=lambda: dict.fromkeys(
            ("created", "incomplete", "skipped", "invalid", "failed", "unknown", "pending"), 0
        )
    )
    sent: int = 0
    deferred: int = 0
    in_flight: int = 0
    total: int | None = None
    read: int = 0
    unread: int = 0
    reconciled: ListingResult = attrs.field(factory=ListingResult)
    stopped_at: float | None = None
    ended_at: float | None = None
    #: The rate's clock: restarted by every row skipped or refused before the first row is
    #: sent, so that a resumed run's skipping is not counted as time spent sending.
    rate_from: float = attrs.field(factory=time.monotonic)

    @property
    def rows(self) -> int:
        """Rows counted so far, in any state."""
        return sum(self.counts.values())

    def count(self, outcome: RowOutcome, *, sent: bool) -> None:
        """Count one reported outcome (``sent``: its row was sent in this run)."""
        if not sent and self.sent == 0:
            self.rate_from = time.monotonic()
        if outcome.skipped:
            self.counts["skipped"] += 1
        elif outcome.incomplete:
            self.counts["incomplete"] += 1
            if sent:
                self.sent += 1
        else:
            self.counts[_STATE_OF.get(outcome.state, outcome.state)] += 1
            if sent and outcome.state in ("created", "failed", "sending"):
                self.sent += 1

    def settle(self, states: Mapping[str, int], *, incomplete: int = 0) -> None:
        """Take the counts from the journal's rows of this run, by state (the end of a run).

        The journal holds every row the run registered, reported or not; only "skipped"
        (created by an earlier run) is not in it, and is kept from the outcomes counted.
        ``incomplete`` rows (created, a party missing) are counted apart from ``created``
        and ``skipped``, whatever run created their contract.
        """
        counts = dict.fromkeys(self.counts, 0)
        for state, number in states.items():
            counts[_STATE_OF.get(state, state)] += number
        contracts = counts["created"]  # every row of the run whose contract exists
        earlier = min(self.counts["skipped"], contracts)  # reported skipped as they were read
        missing = min(incomplete, contracts)
        # Of the incomplete rows, this run created those reported incomplete (never fewer
        # than the earlier rows leave over); the others were created by earlier runs and
        # reported skipped (a skipped row's outcome does not say whether its parties are
        # all added): they are counted incomplete, not "already created".
        fresh = contracts - earlier
        fresh_missing = max(missing - earlier, min(self.counts["incomplete"], missing, fresh))
        counts["incomplete"] = missing
        counts["skipped"] = earlier - (missing - fresh_missing)
        counts["created"] = fresh - fresh_missing
        counts["pending"] += self.unread
        self.counts = counts

    def count_unread(self, rows: int) -> None:
        """Count rows of the input that were never read (not sent)."""
        self.unread += max(0, rows)
        self.counts["pending"] += max(0, rows)

    def stop(self) -> None:
        """Stop the rate's clock (the first call counts)."""
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()

    def end(self) -> None:
        """Mark the run ended."""
        self.stop()
        if self.ended_at is None:
            self.ended_at = time.monotonic()

    def progress(self, stats: ClientStats) -> BulkProgress:
        """Return the progress so far (``stats``: the client's stats now)."""
        counts = self.counts
        until = self.stopped_at if self.stopped_at is not None else time.monotonic()
        return BulkProgress(
            done=self.rows - counts["pending"],
            total=self.total,
            created=counts["created"],
            skipped=counts["skipped"],
            invalid=counts["invalid"],
            failed=counts["failed"],
            deferred=self.deferred,
            in_flight=self.in_flight,
            throttled=stats.throttled - self.stats_start.throttled,
            retries=stats.retries - self.stats_start.retries,
            elapsed=max(0.0, until - self.started),
            sent=self.sent,
            sending=max(0.0, until - self.rate_from),
            unknown=counts["unknown"],
            pending=counts["pending"],
            stopping=self.stopped_at is not None and self.ended_at is None,
            finished=self.ended_at is not None,
            incomplete=counts["incomplete"],
        )

    def summary(
        self, stats: ClientStats, *, job_id: str, run: int, stopped: bool, dry_run: bool
    ) -> BulkSummary:
        """Return the run's totals (``stats``: the client's stats at the end)."""
        counts = self.counts
        start = self.stats_start
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        return BulkSummary(
            job_id=job_id,
            run=run,
            rows=self.rows,
            created=counts["created"],
            skipped=counts["skipped"],
            invalid=counts["invalid"],
            failed=counts["failed"],
            unknown=counts["unknown"],
            pending=counts["pending"],
            reconciled=self.reconciled.created,
            throttled=stats.throttled - start.throttled,
            retries=stats.retries - start.retries,
            requests=stats.requests - start.requests,
            elapsed=end - self.started,
            stopped=stopped,
            dry_run=dry_run,
            sent=self.sent,
            incomplete=counts["incomplete"],
        )
