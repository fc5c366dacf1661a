"""Payload building: checked values as the service's nested ``fields``, and back.

Users give values as a *flat* mapping ``{term name or id: value}``; the service takes the
answers to nested terms inside their parent's ``nested_fields`` (reference/service-api.md
§7, §8) and stores them flat again. :class:`CheckedValues` holds both forms, built in one
pass over the checked values, so creating a contract never nests and then flattens.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs

from contractsdk._exceptions import TermValidationError
from contractsdk._values import UnsendableValueError, iter_fields, to_wire_value
from contractsdk.models._models import ContractField
from contractsdk.validation._rules import TermProblem, check_mapping

if TYPE_CHECKING:
    from contractsdk.validation._tree import TermPlace

__all__ = [
    "CheckedValues",
    "TermValue",
    "TermValues",
    "build_checked",
    "build_fields",
    "unchecked_fields",
    "values_from_fields",
]

TermValue = str | int | float | Decimal | date | None
"""A value a term accepts before it is sent as a string (``datetime`` is a ``date``).

``None`` means "no value": the key is treated as absent.
"""

# Keys are typed Any because Mapping is invariant in its key type: a ``dict[str, str]`` would
# not be accepted as a ``Mapping[str | int, ...]``. Keys are checked at run time instead
# (term names, ids as int, or ids as digit strings).
TermValues = Mapping[Any, TermValue]
"""A flat mapping ``{term name | term id | digit-string id: value}``."""


@attrs.frozen
class CheckedValues:
    """Values checked against a template's terms, in the forms the service uses.

    Made by :meth:`~contractsdk.TermSet.check`; every value in it applies under the chosen
    options and is the string that is sent.

    Attributes:
        by_name: ``{term name: value}`` for the terms that apply, in template order (what
            :meth:`~contractsdk.TermSet.validate` returns).
        fields: The nested ``fields`` payload of a contract (what
            :meth:`~contractsdk.TermSet.build_fields` returns), ready to be sent as JSON.
        flat: The same entries flat, parents before their nested terms, as a contract
            stores them (:attr:`Contract.fields <contractsdk.models.Contract.fields>`).
    """

    by_name: dict[str, str]
    fields: list[dict[str, Any]]
    flat: tuple[ContractField, ...]

    @property
    def by_id(self) -> dict[int, str]:
        """``{term id: value}`` for the terms that apply and have an id, in template order."""
        return {field.id: field.value for field in self.flat if field.id is not None}


def build_fields(applied: Sequence[tuple[TermPlace, str]]) -> list[dict[str, Any]]:
    """Nest checked ``(place, value)`` pairs, depth-first, into a ``fields`` payload."""
    return _build(applied, None)


def build_checked(
    by_name: dict[str, str], applied: Sequence[tuple[TermPlace, str]]
) -> CheckedValues:
    """Return checked values in both forms, built in one pass."""
    flat: list[ContractField] = []
    fields = _build(applied, flat)
    return CheckedValues(by_name, fields, tuple(flat))


def _build(
    applied: Sequence[tuple[TermPlace, str]], flat: list[ContractField] | None
) -> list[dict[str, Any]]:
    top: list[dict[str, Any]] = []
    entries: dict[TermPlace, dict[str, Any]] = {}
    make = ContractField._make
    # ``applied`` is depth-first, so a parent's entry exists before its children's, and the
    # flat order is the order the service stores (parents first).
    for place, value in applied:
        entry: dict[str, Any] = (
            {"name": place.name, "value": value}
            if place.id is None  # the service sent the term without an id (§3 M6)
            else {"id": place.id, "name": place.name, "value": value}
        )
        entries[place] = entry
        if flat is not None:
            flat.append(make(place.id, place.name, value))
        if place.conditions:
            # §7: a nested answer goes inside its parent's nested_fields.
            entries[place.conditions[-1][0]].setdefault("nested_fields", []).append(entry)
        else:
            top.append(entry)
    return top


def unchecked_fields(
    values: TermValues, *, date_format: str | None = None, datetime_format: str | None = None
) -> list[dict[str, Any]]:
    """Return values as flat ``{name | id, value}`` fields, converted but not checked.

    For changing a contract whose template is not known (the contract JSON does not name
    it, service-api.md §7): names are not looked up, and nested terms are not placed under
    their parent. ``None`` values are left out.

    Raises:
        ConfigurationError: ``values`` is not a mapping.
        TermValidationError: A value has no unambiguous string form (every one is listed).
    """
    check_mapping(values)
    fields: list[dict[str, Any]] = []
    problems: list[TermProblem] = []
    for key, value in values.items():
        if value is None:
            continue
        try:
            text = to_wire_value(value, date_format, datetime_format)
        except UnsendableValueError as exc:
            problems.append(
                TermProblem(kind="bad_value", path=str(key), term=str(key), message=str(exc))
            )
            continue
        # An int key is sent as the id it is; a string, digits or not, as a name.
        is_id = isinstance(key, int) and not isinstance(key, bool)
        fields.append({"id": key, "value": text} if is_id else {"name": str(key), "value": text})
    if problems:
        raise TermValidationError(problems)
    return fields


def values_from_fields(fields: Iterable[Mapping[str, Any]]) -> dict[str | int, Any]:
    """Turn a nested ``fields`` payload back into a flat mapping.

    The inverse of :meth:`TermSet.build_fields` (service-api.md §7). Both ``nested_fields``
    and ``nestedFields`` are read, since the service's own documents use both (§8).

    Args:
        fields: Field entries ``{"id"?, "name"?, "value", "nested_fields"?}``, nested.

    Returns:
        ``{name: value}`` in depth-first order; an entry without a name is keyed by its id.
        Entries without a value are skipped (their nested entries are still read).
    """
    flat: dict[str | int, Any] = {}
    for entry in iter_fields(fields):
        key = entry.get("name") or entry.get("id")
        if key is not None and entry.get("value") is not None:
            flat[key] = entry["value"]
    return flat
