"""Deterministic seed data: the same seed gives the same ids, names, credentials and terms.

All randomness comes from one ``random.Random(seed)`` drawn in a fixed order, so adding
data must append draws at the end (or change every seed's ids — acceptable, but say so in
the changelog).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import attrs

from ._catalog import Catalog, ContractType, Template, TermIds
from ._identity import GENERIC_FORM, TENANCY_FORM, IdentityForm, IdentityIds
from ._seed_terms import CONTRACT_TYPES

# (first name, last name, has an avatar)
_PEOPLE = (
    ("Ada", "Lovelace", True),
    ("Grace", "Hopper", False),
    ("Alan", "Turing", False),
    ("Katherine", "Johnson", True),
    ("Edsger", "Dijkstra", False),
    ("Barbara", "Liskov", False),
)
# (team name, owner indexes, member indexes) — indexes into _PEOPLE. Some users are
# deliberately outside some teams so that 403s can be tested (service-api.md §4).
_SHARED_TEAMS = (
    ("Acme Legal", (0,), (1, 2)),
    ("Globex Lettings", (3,), (4,)),
    ("Initech HR", (1,), (5,)),
)
# Private contract types are granted to the first shared team ("Acme Legal").
_PRIVATE_TYPE_TEAM = 0


@attrs.frozen
class SeedUser:
    """A seeded user.

    Args:
        id: The user id.
        first_name: First name.
        last_name: Last name.
        email: Email address (``@example.com``).
        avatar: Avatar URL, or None.
        created: When the user was created.
        personal_team_id: The id of the user's "Personal Team" (service-api.md §4).
        team_ids: Every team the user owns or is a member of, personal team first.
    """

    id: int
    first_name: str
    last_name: str
    email: str
    avatar: str | None
    created: datetime
    personal_team_id: int
    team_ids: tuple[int, ...]

    @property
    def full_name(self) -> str:
        """First and last name."""
        return f"{self.first_name} {self.last_name}"


@attrs.frozen
class SeedTeam:
    """A seeded team.

    Args:
        id: The team id.
        name: The team name.
        created: When the team was created.
        owner_ids: Its owners.
        member_ids: Its members (owners excluded).
    """

    id: int
    name: str
    created: datetime
    owner_ids: tuple[int, ...]
    member_ids: tuple[int, ...]


@attrs.frozen
class Seed:
    """Everything derived from one seed value.

    Args:
        seed: The seed value.
        users: The seeded users.
        teams: The seeded teams (personal teams first, then shared teams).
        catalog: Contract types, templates and terms.
        api_keys: The emulator-only static API keys (each its own principal).
        client_id: The OAuth client id.
        client_secret: The OAuth client secret.
        admin_token: The bearer token of the ``/__sandbox/`` admin API.
        next_user_id: The first id for users created at run time.
        next_team_id: The first id for teams created at run time.
        first_contract_id: The first contract id.
    """

    seed: int
    users: tuple[SeedUser, ...]
    teams: tuple[SeedTeam, ...]
    catalog: Catalog
    api_keys: tuple[str, ...]
    client_id: str
    client_secret: str
    admin_token: str
    next_user_id: int
    next_team_id: int
    first_contract_id: int

    def summary(self) -> dict[str, object]:
        """Describe the seed as JSON (for ``GET /__sandbox/info`` and the CLI).

        Returns:
            Users, teams and contract types with their template ids.
        """
        return {
            "seed": self.seed,
            "users": [
                {
                    "id": u.id,
                    "name": u.full_name,
                    "email": u.email,
                    "personal_team_id": u.personal_team_id,
                    "team_ids": list(u.team_ids),
                }
                for u in self.users
            ],
            "teams": [
                {
                    "id": t.id,
                    "name": t.name,
                    "owner_ids": list(t.owner_ids),
                    "member_ids": list(t.member_ids),
                }
                for t in self.teams
            ],
            "contract_types": [
                {
                    "id": ct.id,
                    "name": ct.name,
                    "template_ids": list(ct.template_ids),
                    "team_ids": None if ct.team_ids is None else sorted(ct.team_ids),
                }
                for ct in self.catalog.types
            ],
        }


def _secret(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.getrandbits(96):024x}"


@functools.lru_cache(maxsize=8)
def build_seed(seed: int) -> Seed:
    """Build (or fetch from a small cache) the seed data for a seed value.

    The result is immutable, so servers started with the same seed share it; that keeps
    starting a server cheap.

    Args:
        seed: Any integer.

    Returns:
        The seed data.
    """
    rng = random.Random(seed)
    user_base = rng.randrange(1_000, 9_000)
    team_base = rng.randrange(100, 900)
    template_base = rng.randrange(100, 200)
    term_base = rng.randrange(3_000, 6_000)
    # 16-digit ids below 2**53, so that they also survive a JavaScript client.
    first_contract_id = rng.randrange(10**15, 8 * 10**15)
    epoch = datetime(2022, 6, 1, 9, 0, tzinfo=timezone.utc) + timedelta(
        seconds=rng.randrange(0, 86_400)
    )

    def moment(step: int) -> datetime:
        return epoch + timedelta(hours=7 * step, milliseconds=rng.randrange(0, 1000))

    user_ids = [user_base + i for i in range(len(_PEOPLE))]
    personal_ids = [team_base + i for i in range(len(_PEOPLE))]
    teams = [
        SeedTeam(personal_ids[i], "Personal Team", moment(i), (user_ids[i],), ())
        for i in range(len(_PEOPLE))
    ]
    for j, (name, owners, members) in enumerate(_SHARED_TEAMS):
        teams.append(
            SeedTeam(
                team_base + len(_PEOPLE) + j,
                name,
                moment(len(_PEOPLE) + j),
                tuple(user_ids[i] for i in owners),
                tuple(user_ids[i] for i in members),
            )
        )
    users = []
    for i, (first, last, has_avatar) in enumerate(_PEOPLE):
        uid = user_ids[i]
        users.append(
            SeedUser(
                id=uid,
                first_name=first,
                last_name=last,
                email=f"{first.lower()}.{last.lower()}@example.com",
                avatar=f"https://example.com/avatars/{uid}.png" if has_avatar else None,
                created=moment(i) - timedelta(minutes=5),
                personal_team_id=personal_ids[i],
                team_ids=tuple(t.id for t in teams if uid in t.owner_ids or uid in t.member_ids),
            )
        )

    private_team = teams[len(_PEOPLE) + _PRIVATE_TYPE_TEAM].id
    term_ids = TermIds(term_base)
    template_id = template_base
    templates: dict[int, Template] = {}
    types = []
    for name, slug, about, public, versions in CONTRACT_TYPES:
        type_id = rng.randrange(10**15, 9 * 10**15)
        ids = []
        for number, defs in enumerate(versions, start=1):
            templates[template_id] = Template(
                template_id, str(number), type_id, term_ids.build(template_id, defs)
            )
            ids.append(template_id)
            template_id += 1
        types.append(
            ContractType(
                id=type_id,
                name=name,
                slug=slug,
                about_html=about,
                template_ids=tuple(reversed(ids)),  # newest first (§7 Templates)
                team_ids=None if public else frozenset({private_team}),
            )
        )

    # Drawn in the order the Seed fields used to draw them, so existing ids and secrets
    # are unchanged; the identity fields' draws come after (module docstring).
    api_keys = (_secret(rng, "sandbox-key"), _secret(rng, "sandbox-key"))
    client_id = _secret(rng, "sandbox-client")
    client_secret = _secret(rng, "sandbox-secret")
    admin_token = _secret(rng, "sandbox-admin")
    identity = _identity_forms(rng, types, templates)

    return Seed(
        seed=seed,
        users=tuple(users),
        teams=tuple(teams),
        catalog=Catalog(tuple(types), templates, identity),
        api_keys=api_keys,
        client_id=client_id,
        client_secret=client_secret,
        admin_token=admin_token,
        next_user_id=user_base + 100,
        next_team_id=team_base + 1_000,
        first_contract_id=first_contract_id,
    )


def _identity_forms(
    rng: random.Random, types: list[ContractType], templates: dict[int, Template]
) -> dict[int, IdentityForm]:
    """Build every template's identity form; ids follow the last term id.

    The tenancy templates carry the fields of the real capture (landlord first side,
    tenant second side); the others the three fields every form has (CONCEPTS).
    """
    last_term = max(term_id for t in templates.values() for term_id in t.by_id)

    def definition_ids() -> Iterator[int]:
        for _ in range(10_000):  # far more nested identity fields than the seed has
            # 16 digits, like the capture's identity_field_id 6754496734560423.
            yield rng.randrange(10**15, 9 * 10**15)

    ids = IdentityIds(last_term + 1, definition_ids())
    tenancy = types[0].id  # CONTRACT_TYPES lists the tenancy agreement first
    forms = {}
    for template_id in sorted(templates):
        if templates[template_id].contract_type_id == tenancy:
            forms[template_id] = ids.build(template_id, TENANCY_FORM, ("second", "first"))
        else:
            forms[template_id] = ids.build(template_id, GENERIC_FORM, ("first", "second"))
    return forms
