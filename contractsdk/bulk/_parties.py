"""Parties in bulk rows: which columns name a party's user and identity values (pure).

A job's :class:`BulkParty` says, for one party of every contract (``tenant``,
``landlord``), its roles and side, the column holding the id of the user who becomes that
party, and ``{column: identity field}`` for the columns holding its identity values. Each
row's parties are validated against the identity fields of their roles and side (one
:class:`~contractsdk.identity.IdentityFieldSet` per template and party, read once) before
any quota is spent, and every problem is reported with the row's term problems.

The user is *not* created by the job: it must exist (``client.users.create`` answers
with no idempotency the service documents, so a bulk job that created users could not
tell, after a kill, whether a user had been made).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from contractsdk._exceptions import ConfigurationError, IdentityValidationError
from contractsdk._ids import parse_id
from contractsdk.identity import IdentityFieldSet, check_collaborator_roles, check_party_side
from contractsdk.models import Role, Side

__all__ = ["BulkParty", "RowParty", "check_parties", "parse_party_flag", "parties_from_flags"]


def _roles(value: Role | str | Iterable[Role | str]) -> tuple[Role, ...]:
    return check_collaborator_roles(value)


def _columns(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@attrs.frozen(kw_only=True)
class BulkParty:
    """One party every contract of the job gets, read from the row's columns.

    Example::

        BulkParty(name="tenant", roles=[Role.PARTY], side=Side.SECOND,
                  user_column="tenant_user_id",
                  columns={"tenant_email": "Email", "tenant_first_name": "First name"})

    Attributes:
        name: The party's name in the job (messages, the journal, ``bulk status``).
        roles: The party's roles (:class:`~contractsdk.models.Role` or wire values).
        side: The party's side.
        user_column: The column holding the id of the user who becomes this party.
        columns: ``{column: identity field id, name or label}`` for its identity values.
    """

    name: str
    roles: tuple[Role, ...] = attrs.field(converter=_roles)
    side: Side = attrs.field(converter=check_party_side)
    user_column: str
    columns: Mapping[str, str] = attrs.field(factory=dict, converter=_columns)

    def __attrs_post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ConfigurationError(
                f"a party's name is letters, digits, '-' or '_', got {self.name!r}"
            )
        if self.user_column in self.columns:
            raise ConfigurationError(
                f"party {self.name}: column {self.user_column!r} holds the user id; it cannot "
                "also give an identity field"
            )

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Every column the party reads."""
        return (self.user_column, *self.columns)

    def identity(self) -> dict[str, Any]:
        """Return what of the party belongs to the job's identity."""
        return {
            "name": self.name,
            "roles": [role.value for role in self.roles],
            "side": self.side.value,
            "user_column": self.user_column,
            "columns": dict(sorted(self.columns.items())),
        }

    @classmethod
    def from_identity(cls, identity: Mapping[str, Any]) -> BulkParty:
        """Rebuild a party from :meth:`identity` (a journal's header)."""
        return cls(
            name=identity["name"],
            roles=identity["roles"],
            side=identity["side"],
            user_column=identity["user_column"],
            columns=identity.get("columns") or {},
        )


@attrs.frozen(kw_only=True)
class RowParty:
    """One party of one row, checked: the user and the identity values by field id."""

    user_id: int
    values: Mapping[int, str]


def check_parties(
    data: Mapping[str, Any],
    parties: Sequence[BulkParty],
    field_sets: Mapping[str, IdentityFieldSet],
) -> tuple[dict[str, RowParty], list[str]]:
    """Read and validate a row's parties; return them by name, and every problem.

    Args:
        data: The row, ``{column: value}``.
        parties: The job's parties.
        field_sets: Each party's identity fields for the row's template, by party name.

    Returns:
        ``({party: RowParty}, problems)``; a party with a problem is left out, and each
        problem names its party (``party tenant: Email: not an email address``).
    """
    checked: dict[str, RowParty] = {}
    problems: list[str] = []
    for party in parties:
        where = f"party {party.name}"
        raw_user = data.get(party.user_column)
        user_id: int | None = None
        text = "" if raw_user is None else str(raw_user).strip()
        if not text:
            problems.append(f"{where}: no user id in column {party.user_column!r}")
        else:
            try:
                user_id = parse_id(text, party.user_column)
            except ConfigurationError:
                problems.append(
                    f"{where}: column {party.user_column!r} holds {text!r}, not a user id"
                )
        values = {
            field: str(data[column]).strip()
            for column, field in party.columns.items()
            if data.get(column) is not None and str(data[column]).strip()
        }
        try:
            by_id = field_sets[party.name].validate(values)
        except IdentityValidationError as exc:
            problems.extend(f"{where}: {problem}" for problem in exc.problems)
            continue
        if user_id is not None:
            checked[party.name] = RowParty(user_id=user_id, values=by_id)
    named: dict[int, str] = {}
    for name, row_party in checked.items():
        first = named.setdefault(row_party.user_id, name)
        if first != name:
            # A user is one collaborator of a contract: the second add is refused, or (on a
            # retry that lists the contract's collaborators) taken for the first party.
            problems.append(
                f"party {name}: user {row_party.user_id} is party {first} of this row "
                "already; a user can be one party of a contract"
            )
    return checked, problems


def parse_party_flag(text: str) -> tuple[str, tuple[str, ...], str]:
    """Read ``NAME:SIDE:ROLE[,ROLE]`` (the CLI's ``--party``) as ``(name, roles, side)``.

    Raises:
        ConfigurationError: The text has not three parts.
    """
    parts = text.split(":")
    if len(parts) != 3 or not all(parts):
        raise ConfigurationError(
            f"--party takes NAME:SIDE:ROLE[,ROLE] (e.g. tenant:second:party), got {text!r}"
        )
    name, side, roles = parts
    return name, tuple(role.strip() for role in roles.split(",")), side


def parties_from_flags(
    parties: Sequence[str], user_columns: Sequence[str], columns: Sequence[str]
) -> list[BulkParty]:
    """Build a job's parties from ``--party``, ``--party-user-column`` and ``--party-column``.

    Raises:
        ConfigurationError: A flag is malformed, or names a party no ``--party`` gives, or
            a party has no user column.
    """
    users: dict[str, str] = {}
    for text in user_columns:
        name, sep, column = text.partition("=")
        if not sep or not name or not column:
            raise ConfigurationError(f"--party-user-column takes NAME=COL, got {text!r}")
        users[name] = column
    fields: dict[str, dict[str, str]] = {}
    for text in columns:
        head, sep, field = text.partition("=")
        name, colon, column = head.partition(":")
        if not sep or not colon or not name or not column or not field:
            raise ConfigurationError(f"--party-column takes NAME:COL=FIELD, got {text!r}")
        fields.setdefault(name, {})[column] = field
    result: list[BulkParty] = []
    for text in parties:
        name, roles, side = parse_party_flag(text)
        if name not in users:
            raise ConfigurationError(f"party {name}: give --party-user-column {name}=COL")
        result.append(
            BulkParty(
                name=name,
                roles=roles,
                side=side,
                user_column=users[name],
                columns=fields.get(name, {}),
            )
        )
    unknown = sorted((set(users) | set(fields)) - {party.name for party in result})
    if unknown:
        raise ConfigurationError(f"no --party gives {', '.join(unknown)}")
    return result
