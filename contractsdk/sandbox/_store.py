"""The emulator's in-memory store: users, teams, memberships and contracts.

Invariants (kept by every method; the event loop is single-threaded and no method awaits,
so a check and the change it guards can never interleave with another request):
- Ids of each kind come from one counter that starts at the seed's base and only grows;
  an id is never reused before :meth:`SandboxState.reset`.
- Every user owns exactly one team named "Personal Team", created with the user
  (service-api.md §4).
- A team has at least one owner; ``owner_ids`` and ``member_ids`` are disjoint.
- ``Contract.answers`` holds only terms of the contract's template whose parent option
  is chosen, with values valid for the term (see ``_fields.py``); it maps term id → value.
- ``contracts`` and ``team_contracts`` hold exactly the same (live) contracts; a deleted
  contract is removed from both.
- ``collaborators`` and ``contract_collaborators`` hold exactly the same collaborators,
  each of a live contract; deleting a contract deletes its collaborators. A user is at
  most once on a contract. ``Contract.completed`` is set once, when the last collaborator
  with a signing role signs, and never cleared.
- ``Collaborator.values`` holds only identity fields of the contract's template that the
  collaborator's side may fill in, valid for the field (see ``_identity.py``).
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ._catalog import Catalog, ContractType, Template
from ._seed import Seed
from ._wire import utc_now


@attrs.define(eq=False)
class User:
    """A user of the service (service-api.md §7 Users).

    Args:
        id: The user id.
        first_name: First name.
        last_name: Last name.
        email: Email address.
        avatar: Avatar URL, or None.
        created: Creation time.
    """

    id: int
    first_name: str
    last_name: str
    email: str
    avatar: str | None
    created: datetime


@attrs.define(eq=False)
class Team:
    """A team (service-api.md §4, §7 Teams).

    Args:
        id: The team id.
        name: The team name.
        created: Creation time.
        owner_ids: The owners, in the order they were added.
        member_ids: The members (not owners), in the order they were added.
    """

    id: int
    name: str
    created: datetime
    owner_ids: list[int]
    member_ids: list[int]

    def has_user(self, user_id: int) -> bool:
        """Tell whether a user may create contracts in the team (owner or member, §4).

        Args:
            user_id: The user.

        Returns:
            True for owners and members.
        """
        return user_id in self.owner_ids or user_id in self.member_ids


@attrs.define(eq=False)
class Contract:
    """A contract (service-api.md §7 Contracts).

    Args:
        id: The contract id (lives only in the self link on the wire).
        team_id: The team that holds it.
        template_id: The template version it was made from.
        created_by: The creating user.
        answers: Term id → value; see the module invariants.
        created: Creation time.
        purchased: Purchase time (set at creation: API-created contracts are bought then).
        completed: Completion time: when every collaborator with a signing role has
            signed (assumed rule, docs/sandbox.md); None until then.
    """

    id: int
    team_id: int
    template_id: int
    created_by: int
    answers: dict[int, str]
    created: datetime
    purchased: datetime
    completed: datetime | None = None


@attrs.define(eq=False)
class Company:
    """What makes a collaborator a company party (CompanyFieldsDTO, endpoints.md §2).

    Args:
        name: ``company_name``.
        number: ``company_number``, or None.
        address: ``address`` (a RegisteredOfficeAddressDTO object), or None.
        registered_office_address: ``registered_office_address``, or None.
        created_by: ``created_by`` user id, or None.
    """

    name: str
    number: str | None
    address: dict[str, str] | None
    registered_office_address: dict[str, str] | None
    created_by: int | None


@attrs.define(eq=False)
class Collaborator:
    """A collaborator (party) of a contract (service-api.md §7 Collaborators).

    Args:
        id: The collaborator id.
        contract_id: The contract.
        user_id: The user, or None for a company party.
        inviter_id: Who invited them, or None for a company party.
        roles: Role wire values (at most two: ``collaborator`` and one other).
        side: ``"first"`` or ``"second"``.
        values: Identity field id → value.
        signatory_id: The ``signatoryId`` (a collaborator) given at creation, or None.
        company: The company details of a company party, else None.
        signed: When they signed, or None.
    """

    id: int
    contract_id: int
    user_id: int | None
    inviter_id: int | None
    roles: list[str]
    side: str
    values: dict[int, str]
    signatory_id: int | None = None
    company: Company | None = None
    signed: datetime | None = None


class SandboxState:
    """The mutable data of one emulator, rebuilt from its seed on :meth:`reset`.

    Tests read it directly (``server.state.team_contracts[team_id]``); only the emulator
    writes it.

    Args:
        seed: The seed data to start from.
    """

    def __init__(self, seed: Seed) -> None:
        self.seed = seed
        self.catalog: Catalog = seed.catalog
        self.users: dict[int, User] = {}
        self.teams: dict[int, Team] = {}
        self.contracts: dict[int, Contract] = {}
        self.team_contracts: dict[int, dict[int, Contract]] = {}
        self.collaborators: dict[int, Collaborator] = {}
        self.contract_collaborators: dict[int, dict[int, Collaborator]] = {}
        # User id → their saved signature image (the last one uploaded, assumed).
        self.signatures: dict[int, bytes] = {}
        self._next_user = 0
        self._next_collaborator = 0
        self._next_team = 0
        self._next_contract = 0
        self.reset()

    def reset(self) -> None:
        """Throw away every change and go back to the seed data."""
        seed = self.seed
        self.users = {
            u.id: User(u.id, u.first_name, u.last_name, u.email, u.avatar, u.created)
            for u in seed.users
        }
        self.teams = {
            t.id: Team(t.id, t.name, t.created, list(t.owner_ids), list(t.member_ids))
            for t in seed.teams
        }
        self.contracts = {}
        self.team_contracts = {t.id: {} for t in seed.teams}
        self.collaborators = {}
        self.contract_collaborators = {}
        self.signatures = {}
        self._next_user = seed.next_user_id
        # 16-digit like contract ids, in a range of their own.
        self._next_collaborator = seed.first_contract_id + 10**15
        self._next_team = seed.next_team_id
        self._next_contract = seed.first_contract_id

    # --- users and teams ---------------------------------------------------------------

    def create_user(self, first_name: str, last_name: str, email: str, avatar: str | None) -> User:
        """Create a user together with their "Personal Team" (service-api.md §4).

        Args:
            first_name: First name.
            last_name: Last name.
            email: Email address; the caller checks it is not taken.
            avatar: Avatar URL, or None.

        Returns:
            The new user.
        """
        user = User(self._next_user, first_name, last_name, email, avatar, utc_now())
        self._next_user += 1
        self.users[user.id] = user
        self.create_team(user.id, "Personal Team")
        return user

    def user_by_email(self, email: str) -> User | None:
        """Find a user by email, ignoring case.

        Args:
            email: The address.

        Returns:
            The user, or None.
        """
        wanted = email.lower()
        return next((u for u in self.users.values() if u.email.lower() == wanted), None)

    def create_team(self, owner_id: int, name: str) -> Team:
        """Create a team owned by a user.

        Args:
            owner_id: The owner; the caller checks the user exists.
            name: The team name; the caller checks it.

        Returns:
            The new team.
        """
        team = Team(self._next_team, name, utc_now(), [owner_id], [])
        self._next_team += 1
        self.teams[team.id] = team
        self.team_contracts[team.id] = {}
        return team

    def teams_of(self, user_id: int) -> list[Team]:
        """List the teams a user owns or is a member of.

        Args:
            user_id: The user.

        Returns:
            The teams, by id.
        """
        return [t for t in self.teams.values() if t.has_user(user_id)]

    def set_role(self, team: Team, user_id: int, role: str | None) -> None:
        """Make a user an owner or a member of a team, or remove them.

        Args:
            team: The team.
            user_id: The user; the caller checks the user exists.
            role: ``"owner"``, ``"member"`` or None to remove.

        Raises:
            ValueError: when the change would leave the team without an owner.
        """
        owners = [u for u in team.owner_ids if u != user_id]
        members = [u for u in team.member_ids if u != user_id]
        if role == "owner":
            owners.append(user_id)
        elif role == "member":
            members.append(user_id)
        if not owners:
            raise ValueError(f"team {team.id} must keep at least one owner")
        team.owner_ids, team.member_ids = owners, members

    # --- contract types ----------------------------------------------------------------

    def type_in_team(self, team_id: int, type_id: int) -> ContractType | None:
        """Find a contract type that can be created in a team.

        Args:
            team_id: The team.
            type_id: The contract type.

        Returns:
            The type, or None when unknown or not available in the team.
        """
        ctype = self.catalog.types_by_id.get(type_id)
        return ctype if ctype is not None and ctype.available_in(team_id) else None

    def template(self, template_id: int) -> Template | None:
        """Find a template by id.

        Args:
            template_id: The template.

        Returns:
            The template, or None.
        """
        return self.catalog.templates.get(template_id)

    # --- contracts ---------------------------------------------------------------------

    def add_contract(
        self, team_id: int, template_id: int, created_by: int, answers: dict[int, str]
    ) -> Contract:
        """Store a new contract.

        Args:
            team_id: The team; the caller checks it exists and the creator may use it.
            template_id: The template; the caller checks it is available in the team.
            created_by: The creating user.
            answers: Validated answers (see ``_fields.py``).

        Returns:
            The new contract.
        """
        now = utc_now()
        contract = Contract(
            self._next_contract, team_id, template_id, created_by, answers, now, now
        )
        self._next_contract += 1
        self.contracts[contract.id] = contract
        self.team_contracts[team_id][contract.id] = contract
        self.contract_collaborators[contract.id] = {}
        return contract

    def delete_contract(self, contract: Contract) -> None:
        """Remove a contract and its collaborators.

        Args:
            contract: A live contract.
        """
        del self.contracts[contract.id]
        del self.team_contracts[contract.team_id][contract.id]
        for collaborator_id in self.contract_collaborators.pop(contract.id, {}):
            del self.collaborators[collaborator_id]

    # --- collaborators -----------------------------------------------------------------

    def add_collaborator(
        self,
        contract: Contract,
        *,
        user_id: int | None,
        inviter_id: int | None,
        roles: list[str],
        side: str,
        values: dict[int, str],
        signatory_id: int | None = None,
        company: Company | None = None,
    ) -> Collaborator:
        """Store a new collaborator of a contract.

        Args:
            contract: A live contract.
            user_id: The user (the caller checks they are not on the contract yet), or
                None for a company party.
            inviter_id: The inviter, or None.
            roles: Validated roles.
            side: ``"first"`` or ``"second"``.
            values: Validated identity values.
            signatory_id: The signatory collaborator, or None.
            company: Company details, or None.

        Returns:
            The new collaborator.
        """
        collaborator = Collaborator(
            self._next_collaborator,
            contract.id,
            user_id,
            inviter_id,
            roles,
            side,
            values,
            signatory_id,
            company,
        )
        self._next_collaborator += 1
        self.collaborators[collaborator.id] = collaborator
        self.contract_collaborators[contract.id][collaborator.id] = collaborator
        return collaborator

    def delete_collaborator(self, collaborator: Collaborator) -> None:
        """Remove a collaborator from their contract.

        Args:
            collaborator: A live collaborator.
        """
        del self.collaborators[collaborator.id]
        del self.contract_collaborators[collaborator.contract_id][collaborator.id]

    def contracts_per_team(self) -> dict[int, int]:
        """Count the live contracts of every team that has any.

        Returns:
            Team id → number of contracts.
        """
        return {tid: len(cs) for tid, cs in self.team_contracts.items() if cs}
