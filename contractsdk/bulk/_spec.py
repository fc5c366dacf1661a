"""What a bulk job is, frozen: its input, its targets and its options (no run state)."""

from __future__ import annotations

from pathlib import Path

import attrs

from contractsdk.bulk._parties import BulkParty
from contractsdk.bulk._readers import RowSource
from contractsdk.bulk._rows import ColumnMap

__all__ = ["JobSpec"]


@attrs.frozen(kw_only=True)
class JobSpec:
    """A job's description: everything a run reads and nothing it changes.

    Attributes:
        source: Where the rows come from.
        columns: How columns become terms, keys and per-row targets.
        team_id: The job's team, or None when each row names its own.
        contract_type_id: The job's contract type, if fixed.
        template_id: The job's template version, if fixed.
        created_by: The user creating the contracts.
        match_term: The term that names each contract.
        journal: The journal file (None: a temporary journal).
        concurrency: The most requests in flight at once.
        require_all: Also refuse rows that leave an applicable term unanswered.
        rounds: Further tries of a row that failed in a retryable way, within a run.
        round_delay: Seconds before each further round (and before a reconciliation).
        check_existing: List each team before sending, to refuse names it already has.
        parties: The parties every contract gets, read from each row's columns.
    """

    source: RowSource
    columns: ColumnMap
    team_id: int | None
    contract_type_id: int | None
    template_id: int | None
    created_by: int
    match_term: str
    journal: Path | None
    concurrency: int
    require_all: bool
    rounds: int
    round_delay: float
    check_existing: bool
    parties: tuple[BulkParty, ...] = ()

    @property
    def fixed_target(self) -> bool:
        """True when every row has the job's team and template (no per-row target column)."""
        return not self.columns.target_columns
