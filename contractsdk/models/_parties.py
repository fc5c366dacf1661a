"""Parties of a contract: roles, sides, identity fields, collaborators and companies.

The wire DTOs (reference/endpoints.md §1 #23-#33, §2) mark every response field optional,
so every field here may be None; unknown keys stay in ``raw``. Wire names are mapped in
``contractsdk._converter``. Collaborator request bodies are camelCase on the wire
(``userId``, ``identityFields``, ``nestedFields``); they are built in
``contractsdk.resources.collaborators``, never here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from ._base import Link, raw_field, self_href
from ._models import Contract, ContractField

__all__ = [
    "Address",
    "Collaborator",
    "CompanyCreated",
    "ContractWithParties",
    "IdentityField",
    "IdentityFieldOption",
    "Party",
    "Role",
    "Side",
]


class Role(str, enum.Enum):
    """A collaborator's role on a contract (the spec's ``RoleEnum`` wire values).

    ``PARTY_WITH_SIGNATORY`` exists only in the create and identity-field DTOs; the
    response, role-update and company DTOs do not list it (endpoints.md §2, enum notes).
    The docs once spell the supporting signatory ``support_sig``; the spec says ``supp_sig``.
    """

    COLLABORATOR = "collaborator"
    PARTY = "party"
    PARTY_WITH_SIGNATORY = "party_with_signatory"
    SIGNATORY = "signatory"
    SUPP_SIG = "supp_sig"
    WITNESS = "witness"

    def __str__(self) -> str:
        return self.value


class Side(str, enum.Enum):
    """Which side of the contract a party is on (the spec's ``SideEnum`` wire values)."""

    BOTH = "both"
    FIRST = "first"
    SECOND = "second"

    def __str__(self) -> str:
        return self.value


@attrs.frozen(kw_only=True)
class IdentityFieldOption:
    """One choice of an :class:`IdentityField` (``IdentityFieldOptionDTO``).

    Attributes:
        name: The option's name: the value sent when it is chosen.
        nested_fields: Fields that apply only when this option is chosen
            (``nested_fields`` or ``nestedFields`` on the wire).
        raw: The wire dict this was read from.
    """

    name: str | None = None
    nested_fields: tuple[IdentityField, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class IdentityField:
    """A question a party of some roles and side answers about itself.

    Read from ``GET /v1/templates/{id}/fields`` (``IdentityFieldsCollaboratorRoleDTO`` at the
    top, ``IdentityPartyFieldTemplatev1DTO`` under an option; the two mix snake_case and
    camelCase keys, both spellings are read).

    Attributes:
        id: The field's id: what a collaborator's ``identityFields`` name.
        label: The question to show a person (``"First Name"``).
        name: A machine name, when the service sends one (the samples have none).
        value: The field's current or default value.
        validation_type: How the service checks the value (``"EMAIL"``), if it says.
        options: The choices, if the field is a single choice.
        required: Whether a value is required (only nested fields say).
        type: The kind of input (``input``, ``radio``, ``select``, ``date``, ``address``…).
        index: The field's position among its siblings.
        parent_option: The option this nested field sits under (``parentOption``).
        side: The side this nested field is for.
        identity_field_id: The id of the identity field this template field stands for.
        value_type: The value's type, as the service names it.
        raw: The wire dict this was read from (``rolesVisibilityList``, ``updated``…).
    """

    id: int | None = None
    label: str | None = None
    name: str | None = None
    value: str | None = None
    validation_type: str | None = None
    options: tuple[IdentityFieldOption, ...] = ()
    required: bool | None = None
    type: str | None = None
    index: int | None = None
    parent_option: str | None = None
    side: str | None = None
    identity_field_id: int | None = None
    value_type: str | None = None
    raw: Mapping[str, Any] = raw_field()

    @property
    def is_choice(self) -> bool:
        """Whether the field takes one of its options rather than free text."""
        return bool(self.options)


@attrs.frozen(kw_only=True)
class Collaborator:
    """Someone invited to a contract (``ContractCollaboratorResponseDTO``).

    Attributes:
        id: The collaborator's id (not the user's).
        name: The collaborator's name (``collaborator_name``).
        contract_id: The contract's id.
        user_id: The user's id.
        email: The user's email.
        fields: The identity-field values stored for them.
        roles: Their roles, as wire strings (compare with :class:`Role`: it is a str enum).
        side: Their side, as a wire string.
        signed: Whether they have signed. Not in the spec: the emulator sends it; None when
            the service does not say.
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    name: str | None = None
    contract_id: int | None = None
    user_id: int | None = None
    email: str | None = None
    fields: tuple[ContractField, ...] = ()
    roles: tuple[str, ...] = ()
    side: str | None = None
    signed: bool | None = None
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()

    @property
    def values(self) -> dict[int, str]:
        """The stored identity values as ``{field id: value}`` (fields without an id skipped)."""
        return {field.id: field.value for field in self.fields if field.id is not None}

    @property
    def url(self) -> str | None:
        """The collaborator's ``self`` URL, if the service sent one."""
        return self_href(self.links)


@attrs.frozen(kw_only=True)
class CompanyCreated:
    """The answer to adding a company party (``CompanyCreatedResponseDTO``).

    Attributes:
        company_name: The company's name.
        contract_collaborator_id: The collaborator made for the company.
        contract_id: The contract's id.
        raw: The wire dict this was read from.
    """

    company_name: str | None = None
    contract_collaborator_id: int | None = None
    contract_id: int | None = None
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class Address:
    """A company's address (``RegisteredOfficeAddressDTO``), as sent.

    Attributes:
        address_line_1: First line.
        address_line_2: Second line.
        locality: Town or city.
        postal_code: Postcode.
        country: Country.
    """

    address_line_1: str | None = None
    address_line_2: str | None = None
    locality: str | None = None
    postal_code: str | None = None
    country: str | None = None

    def to_wire(self) -> dict[str, str]:
        """Return the address as its wire dict (keys without a value are left out)."""
        return {key: value for key, value in attrs.asdict(self).items() if value is not None}


def _roles(value: Any) -> tuple[Role | str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class Party:
    """A party to add to a new contract (see ``ContractClient.create_contract_with_parties``).

    Attributes:
        user_id: The user who becomes the collaborator.
        roles: Their roles (a :class:`Role`, a wire string, or several).
        side: Their side.
        values: Their identity values, ``{field id | label | name: value}``.
        signatory_id: The collaborator who signs for them, if any.
        inviter_id: Who invites them; the contract's creator when None.
    """

    user_id: int | None  # None is refused before sending, as by every method
    roles: tuple[Role | str, ...] = attrs.field(converter=_roles)
    side: Side | str
    values: Mapping[Any, Any] = attrs.field(factory=dict)
    signatory_id: int | None = None
    inviter_id: int | None = None


@attrs.frozen(kw_only=True)
class ContractWithParties:
    """A contract made with its parties in one call.

    Attributes:
        contract: The contract, as :meth:`Contracts.create` returns it.
        collaborators: One per party, in the order given.
        template_id: The template version it was made from (the service's contract does
            not name it; :meth:`Contracts.update` checks values against it).
    """

    contract: Contract
    collaborators: tuple[Collaborator, ...] = ()
    template_id: int | None = None
