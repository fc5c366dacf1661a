"""The identity fields of a party, as a tree, with a validator that reports every problem.

``GET /v1/templates/{id}/fields?roles=…&side=…`` (reference/endpoints.md §1 #23) returns the
questions a party of those roles and that side answers about itself: names, email, address,
and choices whose options carry nested questions (the tenant sample's "Are you a Tenant or
Guarantor?" → ``guarantor`` → "Please specify the name of the Tenant"). It is the same
shape as a template's terms, so :class:`IdentityFieldSet` follows :class:`TermSet`'s
conventions: a flat mapping of values, every problem reported at once, and a nested payload
built for the wire.

Differences from terms, all from the wire:

* identity fields have an ``id`` and a ``label``; the samples have no ``name``. A value may
  be keyed by id (int or digit string), name, or label (exactly, then ignoring case and
  spacing when that names one field);
* an option is named by its ``name`` (terms' options have a ``value``);
* the collaborator body is camelCase: ``{"id", "value", "nestedFields"}``
  (``CreateCollaboratorIdentityFieldV1DTO``, where ``nestedFields`` is required, so it is
  always sent, empty when there is nothing under the field);
* nested fields say ``required``; top-level fields do not, so they are required only with
  ``require_all=True``;
* ``validationType`` ``EMAIL`` (the only value the samples and the spec show) is checked;
  any other validation type is left to the service.

Invariants of an :class:`IdentityFieldSet`: immutable once built (its indexes are made in
``__init__``), so one set serves any number of tasks; everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import attrs

from ._exceptions import ConfigurationError, IdentityValidationError
from ._ids import id_or_none
from ._values import UnsendableValueError, to_wire_value
from .models._parties import IdentityField, Role, Side
from .validation import TermValue
from .validation._render import render_tree
from .validation._rules import closest, did_you_mean, list_options, missing_message
from .validation._tree import KeyIndex, Node, fold

__all__ = [
    "check_collaborator_roles",
    "check_roles",
    "check_party_side",
    "check_side",
    "IdentityFieldSet",
    "IdentityProblem",
    "IdentityProblemKind",
    "IdentityValues",
    "identity_fields_by_id",
]

IdentityValues = Mapping[Any, TermValue]
"""A flat mapping ``{field id | digit-string id | name | label: value}``.

Values are converted as term values are (``str``, ``int``, ``float``, ``Decimal``, ``date``,
``datetime``; every one is sent as a string); ``None`` means "no value".
"""

IdentityProblemKind = Literal[
    "unknown_field",
    "ambiguous",
    "not_an_option",
    "inapplicable",
    "missing",
    "invalid",
    "bad_value",
    "duplicate",
    "no_id",
]
"""The kinds of :class:`IdentityProblem`."""

# validationType EMAIL: one @, no spaces, a dot in the domain. Deliberately loose: the
# service's own rule is not published, and a stricter one would refuse real addresses.
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


@attrs.frozen(kw_only=True)
class IdentityProblem:
    """One problem with a party's identity values.

    Attributes:
        kind: ``unknown_field``, ``ambiguous``, ``not_an_option``, ``inapplicable``,
            ``missing``, ``invalid`` (breaks the field's ``validationType``), ``bad_value``
            (no string form), ``duplicate`` or ``no_id`` (the service gave the field no id).
        path: Where, root to field: ``Are you a Tenant or Guarantor?=guarantor › Please
            specify the name of the Tenant`` (for an unknown key, the key as given).
        field: The field's name, label or id (or the key as given, for an unknown key).
        message: What is wrong, and what would be right when there is something.
        suggestion: A close field or option, or the choice that makes a field apply.
        party: The party's position (0-based) when several parties are checked together.
    """

    kind: IdentityProblemKind
    path: str
    field: str
    message: str
    suggestion: str | None = None
    party: int | None = None

    def __str__(self) -> str:
        where = f"party {self.party}: " if self.party is not None else ""
        return f"{where}{self.path}: {self.message}"


def _display(field: IdentityField) -> str:
    return field.name or field.label or (str(field.id) if field.id is not None else "?")


class _Place(Node):
    """One position of a field in the tree (its name is how it is shown)."""

    __slots__ = ("field", "options")

    children: dict[str, tuple[_Place, ...]]  # narrower than Node's: fields only
    conditions: tuple[tuple[_Place, str], ...]  # the same

    def __init__(self, field: IdentityField, parent: _Place | None, via: str | None) -> None:
        super().__init__(_display(field), parent, via)
        self.field = field
        self.options = tuple(option.name for option in field.options if option.name is not None)


class IdentityFieldSet(Sequence[IdentityField]):
    """The identity fields of a party of some roles and side, with their validator.

    As a sequence it holds the top-level fields in the service's order; :meth:`walk` visits
    the whole tree.

    Args:
        fields: The top-level fields, as ``GET /v1/templates/{id}/fields`` returns them.
        template_id: The template version they belong to.
        roles: The roles they were fetched for.
        side: The side they were fetched for.
    """

    def __init__(
        self,
        fields: Iterable[IdentityField],
        *,
        template_id: int | None = None,
        roles: Iterable[Role] = (),
        side: Side | None = None,
    ) -> None:
        self._fields = tuple(fields)
        self.template_id = template_id
        self.roles = tuple(roles)
        self.side = side
        self._places: list[_Place] = []
        # By id, by exact name or label, and by name or label with case and spacing folded.
        self._keys: KeyIndex[_Place] = KeyIndex(fold)
        self._top = self._index(self._fields, None, None)

    def _index(
        self, fields: Iterable[IdentityField], parent: _Place | None, via: str | None
    ) -> tuple[_Place, ...]:
        places = []
        for field in fields:
            place = _Place(field, parent, via)
            self._places.append(place)
            self._keys.add(place, [key for key in (field.name, field.label) if key], field.id)
            place.children = {
                option.name: self._index(option.nested_fields, place, option.name)
                for option in field.options
                if option.name is not None
            }
            places.append(place)
        return tuple(places)

    # -- Sequence -------------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int) -> IdentityField: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[IdentityField]: ...
    def __getitem__(self, index: int | slice) -> IdentityField | Sequence[IdentityField]:
        return self._fields[index]

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[IdentityField]:
        return iter(self._fields)

    def __repr__(self) -> str:
        roles = ",".join(str(role) for role in self.roles)
        return (
            f"IdentityFieldSet({len(self._fields)} fields, {len(self._places)} in all, "
            f"template_id={self.template_id!r}, roles={roles!r}, "
            f"side={None if self.side is None else str(self.side)!r})"
        )

    # -- The tree -------------------------------------------------------------------------

    def find(self, key: str | int) -> IdentityField | None:
        """Return a field anywhere in the tree by id, digit-string id, name or label.

        Returns:
            The first field in the service's order that the key names, or None.
        """
        places = self._keys.lookup(key)
        return places[0].field if places else None

    def walk(self) -> Iterator[tuple[str, IdentityField]]:
        """Visit every field depth-first in the service's order.

        Returns:
            An iterator of ``(path, field)``.
        """
        return ((place.path, place.field) for place in self._places)

    # -- Validation -----------------------------------------------------------------------

    def validate(
        self,
        values: IdentityValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
    ) -> dict[int, str]:
        """Check flat values against the fields and return them by field id.

        The rules: a field with options takes exactly one option name; the nested fields of
        an option apply only while it is chosen; a nested field marked ``required`` must
        have a value when it applies; a field whose ``validationType`` is ``EMAIL`` takes an
        email address. Every problem is reported at once.

        Args:
            values: ``{field id | digit-string id | name | label: value}``.
            require_all: Also require a value for every applicable field, top-level ones
                included (the service marks only nested fields ``required``).
            date_format: ``strftime`` format for dates (ISO 8601 when None).
            datetime_format: ``strftime`` format for datetimes (ISO 8601 when None).

        Returns:
            ``{field id: value as string}`` for the fields that apply, in tree order.

        Raises:
            IdentityValidationError: Anything is wrong; ``.problems`` lists it all.
        """
        applied = self._check(values, require_all, date_format, datetime_format)
        return {place.field.id: text for place, text in applied if place.field.id is not None}

    def build(
        self,
        values: IdentityValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
    ) -> list[dict[str, Any]]:
        """Validate flat values and build a collaborator's ``identityFields`` payload.

        Each entry is ``{"id": int, "value": str, "nestedFields": [...]}`` (camelCase, as
        ``CreateCollaboratorIdentityFieldV1DTO`` names it), the answers to a chosen option's
        fields inside its field's ``nestedFields``. Fields without a value are left out.

        Args:
            values: As for :meth:`validate`.
            require_all: As for :meth:`validate`.
            date_format: As for :meth:`validate`.
            datetime_format: As for :meth:`validate`.

        Raises:
            IdentityValidationError: Anything is wrong; nothing is built.
        """
        applied = self._check(values, require_all, date_format, datetime_format)
        top: list[dict[str, Any]] = []
        entries: dict[int, dict[str, Any]] = {}  # by id(place): places are not hashable keys
        for place, text in applied:  # depth-first: a parent's entry exists before its children's
            entry: dict[str, Any] = {"id": place.field.id, "value": text, "nestedFields": []}
            entries[id(place)] = entry
            if place.conditions:
                entries[id(place.conditions[-1][0])]["nestedFields"].append(entry)
            else:
                top.append(entry)
        return top

    def _check(
        self,
        values: IdentityValues,
        require_all: bool,
        date_format: str | None,
        datetime_format: str | None,
    ) -> list[tuple[_Place, str]]:
        _check_mapping(values)
        problems: list[IdentityProblem] = []
        # place → [(key, text)], and for each key its places, to find keys that went nowhere.
        given: dict[int, list[tuple[object, str]]] = {}
        keys: list[tuple[object, str, Sequence[_Place]]] = []
        unknown: list[IdentityProblem] = []
        for key, raw in values.items():
            places, key_id = self._keys.resolve(key)
            if not places:
                unknown.append(self._unknown(key, key_id))
                continue
            if raw is None:
                continue
            try:
                text = to_wire_value(raw, date_format, datetime_format)
            except UnsendableValueError as exc:
                problems.append(_problem("bad_value", places[0], str(exc)))
                continue
            keys.append((key, text, places))
            for place in places:
                given.setdefault(id(place), []).append((key, text))

        applied: list[tuple[_Place, str]] = []
        landed: dict[object, list[_Place]] = {}  # key → applicable places it went to
        stack = list(reversed(self._top))
        while stack:
            place = stack.pop()
            field = place.field
            answers = given.get(id(place), [])
            texts = {text for _, text in answers}
            for key, _ in answers:
                landed.setdefault(key, []).append(place)
            if len(texts) > 1:
                shown = " and ".join(f"{text!r} (as {key!r})" for key, text in answers)
                problems.append(_problem("duplicate", place, f"given twice: {shown}"))
                continue
            answer = next(iter(texts)) if texts else None
            if (answer is None or not answer.strip()) and (field.required or require_all):
                message = missing_message(place.options, empty=answer is not None, limit=None)
                problems.append(_problem("missing", place, message))
                continue
            if answer is None:
                continue
            text = answer
            if field.id is None:
                message = "the service gave this field no id, so its value cannot be sent"
                problems.append(_problem("no_id", place, message))
                continue
            if place.options:
                if text not in place.options:
                    problems.append(self._not_an_option(place, text))
                    continue
                stack.extend(reversed(place.children.get(text, ())))
            elif (field.validation_type or "").upper() == "EMAIL" and not _EMAIL.fullmatch(text):
                problems.append(_problem("invalid", place, f"{text!r} is not an email address"))
                continue
            applied.append((place, text))

        for key, _text, named in keys:
            went = landed.get(key, [])
            if not went:
                problems.append(self._inapplicable(named[0], values))
            elif len({id(place.field) for place in went}) > 1 and not isinstance(key, int):
                ids = ", ".join(str(place.field.id) for place in went)
                message = f"{key!r} names {len(went)} fields that apply (ids {ids}); key it by id"
                problems.append(_problem("ambiguous", went[0], message))
        problems.extend(unknown)
        if problems:
            raise IdentityValidationError(problems)
        return applied

    # -- Problems -------------------------------------------------------------------------

    def _unknown(self, key: object, key_id: int | None) -> IdentityProblem:
        if key_id is not None:
            message = f"no identity field has the id {key}"
            return IdentityProblem(
                kind="unknown_field", path=str(key), field=str(key), message=message
            )
        if not isinstance(key, str):
            message = f"a key must be a field id, name or label, not {type(key).__name__}"
            return IdentityProblem(
                kind="unknown_field", path=repr(key), field=repr(key), message=message
            )
        names = {fold(name): name for name in self._keys.by_name}
        suggestion = closest(key, names, fold)
        message = did_you_mean(f"unknown identity field {key!r}", suggestion)
        return IdentityProblem(
            kind="unknown_field", path=key, field=key, message=message, suggestion=suggestion
        )

    def _not_an_option(self, place: _Place, text: str) -> IdentityProblem:
        suggestion = closest(text, {fold(option): option for option in place.options}, fold)
        message = did_you_mean(f"{text!r} is not an option", suggestion)
        message += f" (options: {list_options(place.options, None)})"
        return _problem("not_an_option", place, message, suggestion)

    def _inapplicable(self, place: _Place, values: IdentityValues) -> IdentityProblem:
        needed = " and ".join(f"{anc.name}={option}" for anc, option in place.conditions)
        ancestor, option = place.conditions[-1] if place.conditions else (place, "")
        chosen = [
            text
            for key, text in values.items()
            if text is not None and any(p is ancestor for p in self._keys.lookup(key))
        ]
        state = f"{ancestor.name} is {chosen[0]!r}" if chosen else f"{ancestor.name} has no value"
        return _problem(
            "inapplicable",
            place,
            f"applies only when {needed} ({state})",
            f"{ancestor.name}={option}",
        )

    # -- Display --------------------------------------------------------------------------

    def tree(self) -> str:
        """Render the fields as an indented text tree: id, label, flags, options, values.

        Each field shows its name (its label when it has none; then the label after it, as
        ``TermSet.tree`` shows a term's), its id and the service's flags (its validation
        type, ``required``). Each option is a radio button ``( )``, with its nested fields
        indented beneath it. The values the fields hold (a party's, read with
        :meth:`IdentityFields.of_collaborator
        <contractsdk.resources.identity_fields.IdentityFields.of_collaborator>`) are
        shown: a chosen option ``(x)``, a text value after ``=``.

        Returns:
            Lines joined by newlines; ``(none)`` for a set without fields.
        """

        def describe(place: _Place) -> tuple[str, Sequence[str], str | None]:
            field = place.field
            line = f"{place.name} (id {'-' if field.id is None else field.id})"
            if field.label and field.label != place.name:
                line += f": {field.label}"
            flags = [
                flag for flag in (field.validation_type, field.required and "required") if flag
            ]
            if flags:
                line += f" [{', '.join(str(flag) for flag in flags)}]"
            value = field.value or None  # the service sends "" for a field not filled in
            if value is not None and value not in place.options:
                line += f" = {value!r}" + (" (not an option)" if place.options else "")
            return line, place.options, value

        return render_tree(self._top, describe) or "(none)"


def _problem(
    kind: IdentityProblemKind, place: _Place, message: str, suggestion: str | None = None
) -> IdentityProblem:
    return IdentityProblem(
        kind=kind, path=place.path, field=place.name, message=message, suggestion=suggestion
    )


def _check_mapping(values: object) -> None:
    """Refuse identity values that are not a mapping (pairs in a list were an AttributeError)."""
    if not isinstance(values, Mapping):
        raise ConfigurationError(
            "values must be a mapping {field id, label or name: value}, not "
            f"{type(values).__name__}"
        )


def identity_fields_by_id(
    values: IdentityValues,
    *,
    date_format: str | None = None,
    datetime_format: str | None = None,
) -> list[tuple[int, str]]:
    """Return unchecked values keyed by field id as ``(id, text)`` pairs, in the order given.

    For calls made without the fields at hand (no template id): keys must be ids, as int or
    digit string; ``None`` values are left out.

    Raises:
        ConfigurationError: A key is not an id, or a value has no string form (each is
            listed).
    """
    _check_mapping(values)
    pairs: list[tuple[int, str]] = []
    wrong: list[str] = []
    for key, raw in values.items():
        field_id = id_or_none(key)
        if field_id is None:
            wrong.append(
                f"{key!r}: a field must be given by its id here (a label needs the fields: "
                "template_id= where the call takes one, or IdentityFieldSet.validate first)"
            )
            continue
        if raw is None:
            continue
        try:
            pairs.append((field_id, to_wire_value(raw, date_format, datetime_format)))
        except UnsendableValueError as exc:
            wrong.append(f"{key!r}: {exc}")
    if wrong:
        raise ConfigurationError("identity values cannot be sent: " + "; ".join(wrong))
    return pairs


def check_roles(
    roles: Role | str | Iterable[Role | str], *, allowed: Iterable[Role] = tuple(Role)
) -> tuple[Role, ...]:
    """Return roles as :class:`Role` members, without repeats, in the order given.

    Args:
        roles: One role or several, as members or wire strings (``"party"``).
        allowed: The roles the endpoint's DTO lists.

    Raises:
        ConfigurationError: No role, or one that is not a role the endpoint takes.
    """
    given = [roles] if isinstance(roles, str) else list(roles)
    allowed = tuple(allowed)
    wire = {role.value: role for role in allowed}
    result: list[Role] = []
    for role in given:
        value: object = role.value if isinstance(role, Role) else role  # anything, at run time
        member = wire.get(value) if isinstance(value, str) else None
        if member is None:
            names = ", ".join(role.value for role in allowed)
            raise ConfigurationError(f"{role!r} is not a role here; the roles are: {names}")
        if member not in result:
            result.append(member)
    if not result:
        raise ConfigurationError("give at least one role")
    return tuple(result)


def check_collaborator_roles(
    roles: Role | str | Iterable[Role | str], *, allowed: Iterable[Role] = tuple(Role)
) -> tuple[Role, ...]:
    """Return a collaborator's roles as :func:`check_roles` does, or refuse the pair.

    A collaborator holds at most two roles, and then one is ``collaborator``
    (service-api.md §5, COLLABROLES): a party and a signatory are two collaborators.

    Raises:
        ConfigurationError: As :func:`check_roles`, or the roles break that rule.
    """
    checked = check_roles(roles, allowed=allowed)
    if len(checked) > 2 or (len(checked) == 2 and Role.COLLABORATOR not in checked):
        raise ConfigurationError(
            "a collaborator has at most two roles, and then one is 'collaborator'; got "
            + ", ".join(role.value for role in checked)
        )
    return checked


def check_side(side: Side | str, *, party: bool = False) -> Side:
    """Return a side as a :class:`Side` member.

    Args:
        side: The side.
        party: A party's side (a collaborator's, a company's): ``first`` or ``second``
            only. ``both`` names the fields of both sides, not where a party stands: the
            service refused it with a 400 after the checks had passed.

    Raises:
        ConfigurationError: Not ``both``, ``first`` or ``second`` (a party: not ``first``
            or ``second``).
    """
    try:
        checked = Side(side)
    except ValueError:
        sides = "first, second" if party else "both, first, second"
        raise ConfigurationError(f"{side!r} is not a side; the sides are: {sides}") from None
    if party and checked is Side.BOTH:
        raise ConfigurationError("a party is on one side: first or second, not both")
    return checked


def check_party_side(side: Side | str) -> Side:
    """:func:`check_side` for a party: ``first`` or ``second``."""
    return check_side(side, party=True)
