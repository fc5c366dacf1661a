"""Where each row's contract goes: its team and template version, resolved once each.

A job's team and template are fixed, or read per row from columns. Each distinct target
is resolved once and remembered (the term sets themselves are cached by the client), so
the cost is a few reads per distinct target, not per row. A per-row target that cannot be
resolved makes its rows invalid, with the reason, and is not asked about again.

"Latest" is resolved once per (team, contract type) and pinned in the journal, so every
run of a job uses the template version its first run used.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from contractsdk._exceptions import APIError, ConfigurationError, ContractSDKError, NotFoundError
from contractsdk.bulk._writer import AsyncJournal
from contractsdk.validation import TermSet

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["TargetError", "Targets", "resolve_contract_type", "resolve_team"]


class TargetError(Exception):
    """A per-row target could not be resolved (the row becomes invalid)."""


def _describe(error: ContractSDKError) -> str:
    if isinstance(error, APIError) and error.status_code is not None:
        return f"{error.status_code} {error.service_message or error.message}"
    return str(error)


def missing_creator(user_id: int, said: str) -> ConfigurationError:
    """The error for a creator (``created_by``) the service does not know."""
    return ConfigurationError(
        f"user {user_id}, who is to create the contracts (created_by), does not exist: {said}"
    )


def missing_team(team_id: int, said: str) -> ConfigurationError:
    """The error for a job's team the service does not know."""
    return ConfigurationError(
        f"team {team_id}, where the contracts are to be made (team_id), does not exist: {said}"
    )


def _said(exc: NotFoundError) -> str:
    return exc.service_message or exc.message


async def resolve_team(client: ContractClient, team: int | str, *, user_id: int) -> int:
    """Return a team's id from its id or its name (among the user's teams).

    Raises:
        ConfigurationError: No team of the user has that name, or several do, or the
            user does not exist.
    """
    if isinstance(team, int) or (team.isascii() and team.isdigit()):
        return int(team)
    try:
        teams = await client.teams.list(user_id)
    except NotFoundError as exc:
        raise missing_creator(user_id, _said(exc)) from None
    wanted = team.strip().casefold()
    # A team sent without a name (endpoints.md §3 M6) cannot be named; one without an id
    # cannot be used.
    found = [
        candidate
        for candidate in teams
        if candidate.name is not None and candidate.name.strip().casefold() == wanted
    ]
    if len(found) == 1:
        if found[0].id is None:
            raise ConfigurationError(
                f"the service sent user {user_id}'s team {team!r} without an id; give its id"
            )
        return found[0].id
    names = ", ".join(sorted(repr(c.name) for c in teams if c.name is not None)) or "none"
    if not found:
        raise ConfigurationError(f"user {user_id} has no team named {team!r} (teams: {names})")
    raise ConfigurationError(f"user {user_id} has {len(found)} teams named {team!r}; give its id")


async def resolve_contract_type(
    client: ContractClient, contract_type: int | str, *, team_id: int
) -> int:
    """Return a contract type's id from its id or its name (among the team's types).

    Raises:
        ConfigurationError: The team has no contract type of that name, or several, or the
            team does not exist.
    """
    if isinstance(contract_type, int) or (contract_type.isascii() and contract_type.isdigit()):
        return int(contract_type)
    try:
        types = await client.contract_types.list(team_id)
    except NotFoundError as exc:
        raise missing_team(team_id, _said(exc)) from None
    wanted = contract_type.strip().casefold()
    found = [
        candidate
        for candidate in types
        if candidate.name is not None and candidate.name.strip().casefold() == wanted
    ]
    if len(found) == 1:
        if found[0].id is None:
            raise ConfigurationError(
                f"the service sent team {team_id}'s contract type {contract_type!r} without an "
                "id; give its id"
            )
        return found[0].id
    names = ", ".join(sorted(repr(c.name) for c in types if c.name is not None)) or "none"
    if not found:
        raise ConfigurationError(
            f"team {team_id} has no contract type named {contract_type!r} (types: {names})"
        )
    raise ConfigurationError(
        f"team {team_id} has {len(found)} contract types named {contract_type!r}; give its id"
    )


class Targets:
    """Resolves and remembers teams, template versions and their terms for one run.

    Args:
        client: The client.
        journal: Where "latest" template versions are pinned.
        on_new_team: Called once per team before its first row is registered (to list the
            team's contracts).
    """

    def __init__(
        self,
        client: ContractClient,
        journal: AsyncJournal,
        on_new_team: Callable[[int], Awaitable[None]],
    ) -> None:
        self._client = client
        self._journal = journal
        self._on_new_team = on_new_team
        self._teams: dict[int, str | None] = {}
        self._templates: dict[tuple[int, int], int | str] = {}
        self._terms: dict[int, TermSet | str] = {}

    async def check_team(self, team_id: int, *, fixed: bool) -> None:
        """Make sure a team exists and has been listed.

        Raises:
            TargetError: A per-row team cannot be read (the row is invalid).
            ConfigurationError: The job's fixed team does not exist (as a creator that
                does not: ``Run._check_creator``).
            ContractSDKError: The job's fixed team cannot be read.
        """
        if team_id not in self._teams:
            try:
                await self._client.teams.get(team_id)
            except (APIError, NotFoundError) as exc:
                if fixed and isinstance(exc, NotFoundError):
                    raise missing_team(team_id, _said(exc)) from None
                if fixed:
                    raise
                self._teams[team_id] = f"team {team_id}: {_describe(exc)}"
            else:
                self._teams[team_id] = None
                await self._on_new_team(team_id)
        problem = self._teams[team_id]
        if problem is not None:
            raise TargetError(problem)

    def mark_listed(self, team_id: int) -> None:
        """Remember that a team exists and was listed already."""
        self._teams.setdefault(team_id, None)

    async def template(self, team_id: int, contract_type_id: int, *, fixed: bool) -> int:
        """Return the template version of a team's contract type: pinned, or the newest.

        Raises:
            TargetError: A per-row contract type has no readable template.
            ContractSDKError: The job's fixed contract type has none.
        """
        key = (team_id, contract_type_id)
        if key not in self._templates:
            pinned = await self._journal.call(
                lambda journal: journal.pinned_template(team_id, contract_type_id)
            )
            if pinned is None:
                try:
                    latest = await self._client.templates.latest(team_id, contract_type_id)
                except APIError as exc:
                    if fixed and isinstance(exc, NotFoundError):
                        raise ConfigurationError(
                            f"contract type {contract_type_id} (contract_type_id) has no "
                            f"template version in team {team_id}: {_said(exc)}"
                        ) from None
                    if fixed:
                        raise
                    self._templates[key] = (
                        f"contract type {contract_type_id} in team {team_id}: {_describe(exc)}"
                    )
                    raise TargetError(self._templates[key]) from None
                latest_id = latest.id
                if latest_id is None:  # every field of an answer is optional (§3 M6)
                    message = (
                        f"contract type {contract_type_id} in team {team_id}: the service sent "
                        "its newest template version without an id"
                    )
                    if fixed:
                        raise ConfigurationError(message + "; give the template id")
                    self._templates[key] = message
                    raise TargetError(message)
                pinned = await self._journal.call(
                    lambda journal: journal.pin_template(team_id, contract_type_id, latest_id)
                )
            self._templates[key] = pinned
        found = self._templates[key]
        if isinstance(found, str):
            raise TargetError(found)
        return found

    async def terms(self, template_id: int, *, fixed: bool) -> TermSet:
        """Return a template version's terms (fetched once; the client caches them too).

        Raises:
            TargetError: A per-row template cannot be read.
            ContractSDKError: The job's fixed template cannot be read.
        """
        if template_id not in self._terms:
            try:
                self._terms[template_id] = await self._client.terms.list(template_id)
            except APIError as exc:
                if fixed:
                    raise
                self._terms[template_id] = f"template {template_id}: {_describe(exc)}"
        found = self._terms[template_id]
        if isinstance(found, str):
            raise TargetError(found)
        return found
