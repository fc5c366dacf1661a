"""Reconciliation: find out whether a request with an unknown outcome created its contract.

The service documents no idempotency keys (reference/service-api.md §7), and its create
call answers only a Link, so after a lost answer, a timeout or a crash the only way to
know whether a contract exists is to look: list the team's contracts
(``GET /v1/teams/{teamId}/contracts``) and find the row's contract by its name (the value
of the job's match term, ``contract_name`` by default). The contract JSON carries that
value (§7: "the contract's name is stored as the value of the ``contract_name`` field").

Names are unique within a job (the journal refuses a second row with a name already
used, and a row naming a contract that the team already had), so a name found in the
listing belongs to exactly one row. The rules themselves are applied in the journal
(:meth:`Journal.apply_listing`), inside one transaction per team; this module only lists.

Cost: one listing per team involved, each time reconciliation runs (before a run sends
anything, if an earlier run left unknown outcomes; and at the end of a run that met
some). A listing is one request whatever the number of contracts; its answer is held in
memory only while it is written to the journal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from contractsdk.bulk._journal import Journal
from contractsdk.bulk._records import ListingResult
from contractsdk.bulk._writer import AsyncJournal
from contractsdk.models import Contract

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["contract_names", "match_value", "reconcile"]

#: The term whose value is the contract's name (service-api.md §7).
NAME_TERM = "contract_name"


def match_value(contract: Contract, match_term: str) -> str | None:
    """Return the value of the match term in a listed contract, if it has one."""
    if match_term == NAME_TERM and contract.name:
        return contract.name
    for field in contract.fields:
        if field.name == match_term:
            return field.value
    return None


def contract_names(contracts: Iterable[Contract], match_term: str) -> Iterator[tuple[str, int]]:
    """Yield ``(match value, contract id)`` for every listed contract that has both."""
    for contract in contracts:
        value = match_value(contract, match_term)
        if value is not None and contract.id is not None:
            yield value, contract.id


async def reconcile(
    client: ContractClient, journal: AsyncJournal, team_ids: Iterable[int], match_term: str
) -> ListingResult:
    """List each team's contracts and settle the journal's rows against them.

    Args:
        client: The client (the listing is a read: it spends read quota, not write).
        journal: The job's journal.
        team_ids: The teams to list.
        match_term: The term whose value names a contract.

    Returns:
        How many rows were found (created), not found (may be sent again) or ambiguous.

    Raises:
        ContractSDKError: A listing failed; the rows of that team are left as they were.
    """
    total = ListingResult()
    for team_id in team_ids:
        contracts = await client.contracts.list(team_id)
        pairs = list(contract_names(contracts, match_term))
        del contracts

        def apply(
            j: Journal, team: int = team_id, found: list[tuple[str, int]] = pairs
        ) -> ListingResult:
            return j.apply_listing(team, found)

        total += await journal.call(apply)
    return total
