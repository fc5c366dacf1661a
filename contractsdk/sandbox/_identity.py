"""Identity fields: what a party of a contract fills in about themselves (the forms).

The checks of a request against a form are in ``_identity_check.py``.

Each template has an identity form: fields per side (``first``, ``second``), some with
options, some options with nested fields (service-api.md §7 "Identity fields"; the real
capture is ``identity_fields_landlord.json`` / ``identity_fields_tenant.json``). The
emulator's tenancy templates carry the capture's fields; every other template carries the
three fields the docs say every form has: first name, last name and email (CONCEPTS).

Like ``_fields.py`` this is the emulator's own code, independent of the SDK's validation.

Rules (the first one is documented, the others are assumed: the sources are silent):

- wire shapes: a top-level field is ``{id, label, options?, validationType?, value}`` (no
  ``name``, as in the capture); an option is ``{name, nested_fields?}``; a nested field is
  ``{id, type, label, required, index, parentOption, side, identity_field_id}``;
- which roles see which fields (assumed): ``party``, ``signatory`` and
  ``party_with_signatory`` see every field of their side; ``collaborator``, ``witness`` and
  ``supp_sig`` see none;
- an options field takes one of its option names; a field whose ``validationType`` is
  ``EMAIL`` takes an email address; a nested field applies only under its parent's chosen
  option, and a *required* nested field must be filled when that option is chosen;
- first name, last name and email are required to sign (assumed, with the top-level
  fields the tenancy form marks required); the top-level ``required`` flag is kept
  emulator-internal, because the capture shows none.

Invariants: identity-field ids are unique across templates and distinct from term ids;
``IdentityForm.by_id`` indexes every field of the form at any depth.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

ROLES = ("collaborator", "party", "party_with_signatory", "signatory", "supp_sig", "witness")
# Roles that fill in their side's identity fields (assumed, see the module docstring).
FIELD_ROLES = frozenset({"party", "party_with_signatory", "signatory"})
# Roles that sign (assumed): every role but a bare collaborator.
SIGNING_ROLES = frozenset(ROLES) - {"collaborator"}
SIDES = ("first", "second")
QUERY_SIDES = ("both", "first", "second")
# CompanyFieldsDTO's role enum has no party_with_signatory (endpoints.md §2).
COMPANY_ROLES = ("collaborator", "party", "signatory", "supp_sig", "witness")

MAX_VALUE_LENGTH = 1000
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


# --- seed-time description ---------------------------------------------------------------


@attrs.frozen
class FieldDef:
    """An identity field as written in the seed data, before ids are allocated.

    Args:
        key: Emulator-internal machine name, shown as ``name`` in a collaborator's fields.
        label: The question shown to the party.
        required: Whether signing needs it filled (nested: when its option is chosen).
        validation_type: ``"EMAIL"`` or None.
        options: (option name, nested fields) pairs; empty for free text.
        type: The field type of a nested field (``input``, ``date`` …).
    """

    key: str
    label: str
    required: bool = True
    validation_type: str | None = None
    options: tuple[tuple[str, tuple[FieldDef, ...]], ...] = ()
    type: str = "input"


_FIRST_NAME = FieldDef("firstName", "First Name")
_LAST_NAME = FieldDef("lastName", "Last Name")
_EMAIL = FieldDef("email", "Email", validation_type="EMAIL")
# The keys prefilled from the user (GETUSER: a user's names and email pre-fill their
# collaborator details).
PREFILLED = {"firstName": "first_name", "lastName": "last_name", "email": "email"}

GENERIC_FORM: dict[str, tuple[FieldDef, ...]] = {
    "first": (_FIRST_NAME, _LAST_NAME, _EMAIL),
    "second": (_FIRST_NAME, _LAST_NAME, _EMAIL),
}
# The tenancy form of the capture: landlord (first side) and tenant (second side).
TENANCY_FORM: dict[str, tuple[FieldDef, ...]] = {
    "first": (_FIRST_NAME, _LAST_NAME, _EMAIL, FieldDef("address", "Address")),
    "second": (
        _FIRST_NAME,
        _LAST_NAME,
        _EMAIL,
        FieldDef("currentAddress", "Current address"),
        FieldDef("mobile", "Mobile", required=False),
        FieldDef(
            "tenantOrGuarantor",
            "Are you a Tenant or Guarantor?",
            options=(
                ("tenant", ()),
                (
                    "guarantor",
                    (FieldDef("tenantName", "Please specify the name of the Tenant"),),
                ),
                ("other", ()),
            ),
        ),
    ),
}


# --- the materialised form ---------------------------------------------------------------


@attrs.frozen(eq=False)
class IdentityField:
    """An identity field of one template.

    Args:
        id: The field id, unique across templates.
        key: Emulator-internal machine name.
        label: The question.
        side: ``"first"`` or ``"second"``.
        required: See :class:`FieldDef`.
        validation_type: ``"EMAIL"`` or None.
        options: (option name, nested fields) pairs.
        type: The field type (shown on nested fields).
        index: Position of the top-level field (of a nested field's parent) on its side.
        parent_id: The parent field of a nested field, else None.
        parent_option: The option a nested field hangs under, else None.
        identity_field_id: The 16-digit definition id shown on nested fields, else None.
    """

    id: int
    key: str
    label: str
    side: str
    required: bool
    validation_type: str | None
    options: tuple[tuple[str, tuple[IdentityField, ...]], ...]
    type: str
    index: int
    parent_id: int | None = None
    parent_option: str | None = None
    identity_field_id: int | None = None

    @property
    def option_names(self) -> tuple[str, ...]:
        """The values this field accepts; empty for free text."""
        return tuple(name for name, _ in self.options)

    def nested(self) -> Iterator[IdentityField]:
        """Iterate over the fields nested under every option.

        Yields:
            The nested fields, in option order.
        """
        for _, children in self.options:
            yield from children

    def to_json(self, value: str | None) -> dict[str, Any]:
        """Render the field as the service does (the capture's key order).

        Args:
            value: The value to show; None shows ``""`` on a top-level field and no
                ``value`` key on a nested one.

        Returns:
            The JSON object.
        """
        if self.parent_id is not None:
            out: dict[str, Any] = {
                "id": self.id,
                "type": self.type,
                "label": self.label,
                "required": self.required,
                "index": self.index,
                "parentOption": self.parent_option,
                "side": self.side,
                "identity_field_id": self.identity_field_id,
            }
            if value is not None:
                out["value"] = value
            return out
        out = {"id": self.id, "label": self.label}
        if self.options:
            rendered: list[dict[str, Any]] = []
            for name, children in self.options:
                entry: dict[str, Any] = {"name": name}
                if children:
                    entry["nested_fields"] = [c.to_json(None) for c in children]
                rendered.append(entry)
            out["options"] = rendered
        if self.validation_type is not None:
            out["validationType"] = self.validation_type
        out["value"] = value or ""
        return out


@attrs.define(eq=False)
class IdentityForm:
    """The identity fields of one template.

    Args:
        template_id: The template.
        sides: Side → its top-level fields, in display order.
    """

    template_id: int
    sides: dict[str, tuple[IdentityField, ...]]
    by_id: dict[int, IdentityField] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.by_id = {}
        for fields in self.sides.values():
            for field in fields:
                self.by_id[field.id] = field
                for child in field.nested():
                    self.by_id[child.id] = child

    def visible(self, roles: Iterable[str], side: str) -> tuple[IdentityField, ...]:
        """The top-level fields a party of these roles fills in on a side (assumed rule).

        Args:
            roles: Role wire values.
            side: ``"first"``, ``"second"`` or ``"both"`` (first side's fields first).

        Returns:
            The fields; empty when no role fills in fields.
        """
        if not FIELD_ROLES.intersection(roles):
            return ()
        if side == "both":
            return self.sides["first"] + self.sides["second"]
        return self.sides[side]

    def visible_ids(self, roles: Iterable[str], side: str) -> set[int]:
        """Every field id (nested included) of :meth:`visible`.

        Args:
            roles: Role wire values.
            side: A side.

        Returns:
            The ids.
        """
        out: set[int] = set()
        for field in self.visible(roles, side):
            out.add(field.id)
            out.update(c.id for c in field.nested())
        return out

    def render(
        self, roles: Iterable[str], side: str, values: dict[int, str] | None = None
    ) -> list[dict[str, Any]]:
        """Render ``GET /v1/templates/{id}/fields`` (or ``updatefields`` with values).

        Args:
            roles: Role wire values.
            side: A query side.
            values: Field id → value to show, or None for empty values.

        Returns:
            The list of IdentityFieldsCollaboratorRoleDTO objects.
        """
        shown = values or {}
        out = []
        for field in self.visible(roles, side):
            rendered = field.to_json(shown.get(field.id))
            for option in rendered.get("options", ()):
                for nested in option.get("nested_fields", ()):
                    if nested["id"] in shown:
                        nested["value"] = shown[nested["id"]]
            out.append(rendered)
        return out

    def missing(self, roles: Iterable[str], side: str, values: dict[int, str]) -> list[str]:
        """Name the required fields left empty (what signing needs, assumed).

        Args:
            roles: The collaborator's roles.
            side: The collaborator's side.
            values: The collaborator's values.

        Returns:
            ``"<label> (id N)"`` for each missing field, in display order.
        """
        out = []
        for field in self.visible(roles, side):
            if field.required and not values.get(field.id):
                out.append(f'"{field.label}" (id {field.id})')
            chosen = values.get(field.id)
            for name, children in field.options:
                if name != chosen:
                    continue
                out.extend(
                    f'"{c.label}" (id {c.id})'
                    for c in children
                    if c.required and not values.get(c.id)
                )
        return out


class IdentityIds:
    """Allocates identity-field ids and builds forms.

    Args:
        start: The first id (after the last term id, so the kinds never collide).
        definition_ids: Source of the 16-digit ``identity_field_id`` of nested fields.
    """

    def __init__(self, start: int, definition_ids: Iterator[int]) -> None:
        self._next = start
        self._definition_ids = definition_ids

    def _id(self) -> int:
        value = self._next
        self._next += 1
        return value

    def build(
        self, template_id: int, form: dict[str, tuple[FieldDef, ...]], order: tuple[str, ...]
    ) -> IdentityForm:
        """Build a template's form, allocating ids in the order the capture shows.

        Args:
            template_id: The template.
            form: Side → field definitions.
            order: The sides in id order; ``("second", "first")`` numbers the tenant's
                plain fields before the landlord's, as the capture does (2112–2116 then
                2117–2120), and options fields of every side last (2121, 2122).

        Returns:
            The form.
        """
        ids: dict[tuple[str, int], int] = {}
        for side in order:
            for index, definition in enumerate(form[side]):
                if not definition.options:
                    ids[(side, index)] = self._id()
        sides: dict[str, tuple[IdentityField, ...]] = {}
        built: dict[str, list[IdentityField]] = {s: [] for s in SIDES}
        for side in order:
            for index, definition in enumerate(form[side]):
                if definition.options:
                    ids[(side, index)] = self._id()
        for side in SIDES:
            for index, definition in enumerate(form[side]):
                built[side].append(self._field(definition, side, index, ids[(side, index)]))
            sides[side] = tuple(built[side])
        return IdentityForm(template_id, sides)

    def _field(self, definition: FieldDef, side: str, index: int, field_id: int) -> IdentityField:
        options = tuple(
            (
                name,
                tuple(
                    IdentityField(
                        id=self._id(),
                        key=child.key,
                        label=child.label,
                        side=side,
                        required=child.required,
                        validation_type=child.validation_type,
                        options=(),
                        type=child.type,
                        index=index,
                        parent_id=field_id,
                        parent_option=name,
                        identity_field_id=next(self._definition_ids),
                    )
                    for child in children
                ),
            )
            for name, children in definition.options
        )
        return IdentityField(
            id=field_id,
            key=definition.key,
            label=definition.label,
            side=side,
            required=definition.required,
            validation_type=definition.validation_type,
            options=options,
            type="select" if options else definition.type,
            index=index,
        )
