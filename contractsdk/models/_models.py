"""The service's resources as frozen attrs models.

Python names are snake_case; the wire names are mapped in ``contractsdk._converter``, never
by hand. Every model keeps the dict it was read from in ``raw`` (not compared, not shown in
``repr``), so a key the service adds later is still reachable (a :class:`ContractField`'s dict
is in its contract's ``raw["fields"]``).

The service's specification marks every response field optional
(reference/endpoints.md §3 M6), so every field the service sends may be None (or, for a
string with a default, that default): a missing ``id`` or ``name`` reads as None, a date in a
format the SDK does not know as None with the original string left in ``raw``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from ._base import Link, id_from_href, raw_field, self_href, slot_setters

__all__ = [
    "User",
    "Team",
    "ContractType",
    "Template",
    "Term",
    "TermOption",
    "Contract",
    "ContractField",
]


@attrs.frozen(kw_only=True)
class User:
    """A user of the service (``GET /v1/users/{id}``).

    Attributes:
        id: The user's id (int64), or None if the service's answer has none.
        email: Email address.
        first_name: First name.
        last_name: Last name.
        full_name: Full name, when the service sends it.
        avatar: Profile picture URL, only set when the user has one.
        created: When the user was created; None if not sent or not a date the SDK reads
            (the string is in ``raw``).
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    full_name: str | None = None
    avatar: str | None = None
    created: datetime | None = None
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class Team:
    """A team: where contracts are created and kept.

    Attributes:
        id: The team's id (int64), or None if the service's answer has none.
        name: The team's name (at most 255 characters), or None if not sent.
        created: When the team was created (the service sends ``2022-06-16 15:16:27.980+0000``);
            None if not sent, or in a format the SDK does not read: the specification types
            it as a bare string (reference/endpoints.md §3 M5), and ``raw`` keeps it.
        links: Hypermedia links (HAL ``_links`` on the wire).
        raw: The wire dict this was read from.
    """

    id: int | None = None
    name: str | None = None
    created: datetime | None = None
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class ContractType:
    """A kind of contract a team can create (e.g. an NDA).

    Attributes:
        id: The contract type's id (int64; real ids have 16 digits), or None if not sent.
        name: Display name, or None if not sent.
        about_html: Description as HTML, if any.
        about_url: Link to a description, if any.
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    name: str | None = None
    about_html: str | None = None
    about_url: str | None = None
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class Template:
    """One version of a contract type's template.

    Attributes:
        id: The template version's id (int64): what contracts and terms refer to; None if
            the service's answer has none.
        version: The version label as the service gives it (``""`` if not sent).
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    version: str = ""
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class TermOption:
    """One choice of a :class:`Term` with options.

    Options have no id and no label: ``value`` is both what is shown and what is stored
    (reference/service-api.md §8).

    Attributes:
        value: The option's value, sent as the term's value when chosen; None if the
            service's answer has none (such an option cannot be chosen).
        nested_terms: Terms that apply only when this option is chosen
            (``nested_fields`` on the wire).
        raw: The wire dict this was read from.
    """

    value: str | None = None
    nested_terms: tuple[Term, ...] = ()
    raw: Mapping[str, Any] = raw_field()


@attrs.frozen(kw_only=True)
class Term:
    """A term (contract field) of a template version.

    A term with ``options`` takes exactly one of their values; a term without options takes
    free text (dates and amounts included, all sent as strings).

    Attributes:
        id: The term's id (int64), unique across templates; None if not sent.
        name: The machine name, e.g. ``"contract_rentFrequency"``; None if not sent (a
            :class:`~contractsdk.TermSet` cannot be given a value for such a term).
        label: The question to show a person.
        options: The choices, if the term is a single choice.
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    name: str | None = None
    label: str = ""
    options: tuple[TermOption, ...] = ()
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()

    @property
    def is_choice(self) -> bool:
        """Whether the term takes one of its options rather than free text."""
        return bool(self.options)

    def option(self, value: str) -> TermOption | None:
        """Return the option with this value, or None (an option without a value never)."""
        return next((option for option in self.options if option.value == value), None)


@attrs.frozen(kw_only=True)
class ContractField:
    """One stored value of a contract.

    Attributes:
        id: The term's id.
        name: The term's name.
        value: The value, always a string on the wire; ``""`` when the service sends none
            or ``null`` (its contract's ``raw["fields"]`` tells the two apart).
    """

    id: int | None = None
    name: str | None = None
    value: str = ""

    @classmethod
    def _make(cls, id: int | None, name: str | None, value: str) -> ContractField:
        """Make a field of checked values, without ``__init__`` (see ``slot_setters``)."""
        set_id, set_name, set_value = _CONTRACT_FIELD_SLOTS
        field = object.__new__(cls)
        set_id(field, id)
        set_name(field, name)
        set_value(field, value)
        return field


@attrs.frozen(kw_only=True)
class Contract:
    """A contract held by a team.

    The service's contract JSON has no ``id`` key: the id comes from its ``self`` link, or
    for a new contract from the create call's Link / ``Location`` header.

    Attributes:
        id: The contract's id, when it can be known.
        name: The contract's name (the value of its ``contract_name`` field).
        created_date: When it was created.
        purchased_date: When it was purchased, if it was.
        completed_date: When it was completed, or None.
        fields: The stored values (only terms that apply are present).
        links: Hypermedia links.
        raw: The wire dict this was read from.
    """

    id: int | None = None
    name: str | None = None
    created_date: datetime | None = None
    purchased_date: datetime | None = None
    completed_date: datetime | None = None
    fields: tuple[ContractField, ...] = ()
    links: tuple[Link, ...] = ()
    raw: Mapping[str, Any] = raw_field()

    @classmethod
    def _make(
        cls,
        id: int | None,
        name: str | None,
        created_date: datetime | None,
        purchased_date: datetime | None,
        completed_date: datetime | None,
        fields: tuple[ContractField, ...],
        links: tuple[Link, ...],
        raw: Mapping[str, Any],
    ) -> Contract:
        """Make a contract of checked values, without ``__init__`` (see ``slot_setters``)."""
        (
            set_id,
            set_name,
            set_created_date,
            set_purchased_date,
            set_completed_date,
            set_fields,
            set_links,
            set_raw,
        ) = _CONTRACT_SLOTS
        contract = object.__new__(cls)
        set_id(contract, id)
        set_name(contract, name)
        set_created_date(contract, created_date)
        set_purchased_date(contract, purchased_date)
        set_completed_date(contract, completed_date)
        set_fields(contract, fields)
        set_links(contract, links)
        set_raw(contract, raw)
        return contract

    @property
    def values(self) -> dict[str, str]:
        """The stored values as ``{term name: value}`` (fields without a name are skipped)."""
        return {field.name: field.value for field in self.fields if field.name is not None}

    @property
    def url(self) -> str | None:
        """The contract's ``self`` URL, if the service sent one."""
        return self_href(self.links)


_CONTRACT_FIELD_SLOTS = slot_setters(ContractField)
_CONTRACT_SLOTS = slot_setters(Contract)


def contract_id_from_links(links: tuple[Link, ...]) -> int | None:
    """Return the id in a ``self`` link, if there is one."""
    return id_from_href(self_href(links))
