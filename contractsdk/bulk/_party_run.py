"""Adding a created contract's parties, one journaled step each (see ``_steps.py``).

A step that may have been sent before (``attempts > 0``: killed while ``adding``, or a
failed add) is never sent again before the contract's collaborators have been listed and
none of them is the step's user (``_steps.py`` invariant 2).

Within a run, a step is tried when its contract is created; after the rows' rounds, the
run's created rows with steps left are passed over once, then up to ``rounds`` more times
while some step's add failed in a retryable way or its outcome is unknown, each round
``round_delay`` later (as rows are: ``_run.py``). A step refused for good (a 404 user,
say) stops its row's steps until ``bulk retry``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from functools import partial
from typing import TYPE_CHECKING

from contractsdk._exceptions import ContractSDKError
from contractsdk.bulk._failures import classify
from contractsdk.bulk._records import JournalRecord
from contractsdk.bulk._steps import (
    PartyStep,
    incomplete_rows,
    mark_added,
    mark_adding,
    mark_step_failed,
    missing_parties,
    steps_of,
    unknown_steps,
)
from contractsdk.models import Role

if TYPE_CHECKING:
    from contractsdk.bulk._parties import BulkParty
    from contractsdk.bulk._run import Run
    from contractsdk.models import Collaborator

__all__ = ["PartySteps"]

_PAGE = 64


class PartySteps:
    """The party steps of one run (owned by its :class:`~contractsdk.bulk._run.Run`)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.by_name = {party.name: party for party in run.spec.parties}
        # Steps (row key, party) whose add failed in a way worth another round: ``failed``
        # in the journal, like a step refused for good, which no round sends again.
        self.retryable: set[tuple[str, str]] = set()

    async def complete(self, record: JournalRecord) -> tuple[str, ...]:
        """Add a created row's parties not added yet, in order; return those still missing.

        Stops at the first party that cannot be added (the rest stay ``pending``).
        """
        if not self.by_name or record.contract_id is None:
            return ()
        return await self._complete(
            record.key, record.contract_id, record.template_id, failed=False
        )

    async def _complete(
        self, key: str, contract_id: int, template_id: int | None, *, failed: bool
    ) -> tuple[str, ...]:
        """Add a row's steps in order, up to one that fails or that ``failed`` before.

        A ``failed`` step is sent again only with ``failed`` (``bulk retry``) or when its
        failure this run was retryable.
        """
        journal = self.run.journal
        steps = await journal.call(lambda j: steps_of(j, key))
        # Collaborators that are this row's other parties: never taken for another step.
        claimed = {step.collaborator_id for step in steps if step.collaborator_id is not None}
        for step in steps:
            again = failed or (key, step.party) in self.retryable
            if step.state == "failed" and not again:
                break
            if self.run.stopping or not await self._add(step, contract_id, template_id, claimed):
                break
        missing = await journal.call(lambda j: missing_parties(j, [key]))
        return missing.get(key, ())

    async def complete_all(self, *, every_failure: bool) -> None:
        """Complete this run's created rows that have parties to add, in rounds.

        Those are rows found by reconciliation, rows created by an earlier run (skipped
        now), rows killed between steps, rows whose add failed in a retryable way or with
        an unknown outcome and, with ``every_failure`` (``bulk retry``), rows whose add
        was refused. After one pass, up to ``rounds`` more while a step's add failed in a
        retryable way or its outcome is unknown, each after ``round_delay``.
        """
        if not self.by_name:
            return
        run = self.run
        await run.settle()  # a step's unknown outcome is listed only round_delay after
        await self._pass(failed=every_failure)
        for _ in range(run.spec.rounds):
            if run.stopping or not await self._unsettled():
                return
            await run.pause(run.spec.round_delay)  # past any unknown outcome's settling
            await self._pass(failed=False)

    async def _unsettled(self) -> bool:
        """Tell whether a step's add failed in a retryable way or its outcome is unknown."""
        if self.retryable:
            return True
        return await self.run.journal.call(lambda j: unknown_steps(j, self.run.run))

    async def _pass(self, *, failed: bool) -> None:
        """Pass once over the run's created rows with steps to do, a page at a time."""
        run = self.run
        limit = asyncio.Semaphore(run.spec.concurrency)

        async def one(key: str, contract_id: int, template_id: int | None) -> None:
            async with limit:
                await self._complete(key, contract_id, template_id, failed=failed)

        # Rows whose only steps left are ``failed`` are paged too when some are retryable.
        paged = failed or bool(self.retryable)
        after = ""
        while not run.stopping:
            page = await run.journal.call(
                partial(incomplete_rows, run=run.run, after=after, limit=_PAGE, failed=paged)
            )
            if not page:
                return
            await asyncio.gather(*(one(*row) for row in page))
            after = page[-1][0]

    async def _add(
        self, step: PartyStep, contract_id: int, template_id: int | None, claimed: set[int]
    ) -> bool:
        """Add one party (or find it added); True when it is added.

        ``claimed``: the collaborator ids of the row's parties added so far (this one's is
        put in when it is added).
        """
        run = self.run
        journal = run.journal
        client = run.client
        key, name = step.key, step.party
        party = self.by_name.get(name)
        if party is None:  # a journal's own parties always match its job's
            return False
        self.retryable.discard((key, name))  # until this try fails in a retryable way
        if step.attempts > 0:
            try:
                collaborators = await client.collaborators.list(contract_id)
            except ContractSDKError as exc:
                message = f"the contract's parties could not be listed: {exc}"
                await journal.call(lambda j: mark_step_failed(j, key, name, message, known=False))
                return False
            found = [
                c
                for c in collaborators
                if c.user_id == step.user_id and c.id not in claimed and _as_party(c, party)
            ]
            if found:
                await journal.call(lambda j: mark_added(j, key, name, found[0].id))
                if found[0].id is not None:
                    claimed.add(found[0].id)
                return True
        await journal.call(lambda j: mark_adding(j, key, name))
        try:
            collaborator = await client.collaborators.create(
                contract_id,
                user_id=step.user_id,
                inviter_id=run.spec.created_by,
                roles=party.roles,
                side=party.side,
                values=step.values,
                template_id=template_id,
                idempotency_key=_step_key(run.idempotency_key(key), step),
            )
        except ContractSDKError as exc:
            kind = classify(exc, fixed_target=False)
            message = f"party {name} not added: {exc}"
            await journal.call(
                lambda j: mark_step_failed(j, key, name, message, known=kind != "unknown")
            )
            if kind == "unknown":
                run.last_unknown = time.monotonic()
            elif kind == "retry":
                self.retryable.add((key, name))
            if kind == "fatal":
                run.fail(exc)
            return False
        await journal.call(lambda j: mark_added(j, key, name, collaborator.id))
        if collaborator.id is not None:
            claimed.add(collaborator.id)
        return True


def _step_key(row_key: str, step: PartyStep) -> str:
    """A party add's Idempotency-Key: its row's, its party, and what it sends.

    The same on every try of one step; a step whose user or values were fixed in the file
    after its add was refused is another request, with another key (the service kept
    the first, and refused the fixed one as "used with a different request").
    """
    sent = json.dumps([step.user_id, sorted(step.values.items())], separators=(",", ":"))
    return f"{row_key}-{step.party}-{hashlib.sha256(sent.encode()).hexdigest()[:8]}"


def _as_party(collaborator: Collaborator, party: BulkParty) -> bool:
    """Whether a collaborator of the party's user can be the party this job added.

    The service makes every member of a team a collaborator of the team's contracts
    (service-api.md: CONCEPTS, COLLABS). One holding no role but ``collaborator`` is that
    member, not the party: taken for it, the party's roles and values were never set and
    the row said complete. (How the service shows a role such as
    ``party_with_signatory`` is not documented: any other role counts.) One on the
    other side is another party of the contract, whatever its roles.
    """
    if collaborator.side is not None and collaborator.side.lower() != party.side.value:
        return False  # the user on the contract's other side: another party
    if all(role is Role.COLLABORATOR for role in party.roles):
        return True
    return any(role.lower() != Role.COLLABORATOR.value for role in collaborator.roles)
