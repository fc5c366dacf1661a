"""Pure conversions between Python values and the service's field payloads.

Every term value travels as a string (reference/service-api.md §7), and answers to nested
terms travel inside their parent's ``nested_fields`` (§7, §8).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

__all__ = ["UnsendableValueError", "iter_fields", "to_wire_value"]


class UnsendableValueError(Exception):
    """A value has no unambiguous string form (internal: becomes a ``bad_value`` problem)."""


def iter_fields(fields: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Yield the entries of a nested ``fields`` payload depth-first, parents first.

    Both ``nested_fields`` and ``nestedFields`` are followed: the service's own documents
    use both (§8).
    """
    stack = list(fields)
    stack.reverse()
    while stack:
        entry = stack.pop()
        yield entry
        nested = entry.get("nested_fields") or entry.get("nestedFields")
        if nested:  # most entries have none: no list made for them
            stack.extend(reversed(list(nested)))


def to_wire_value(value: object, date_format: str | None, datetime_format: str | None) -> str:
    """Return a value as the string the service stores (§7: every value is a string).

    Raises:
        UnsendableValueError: If the value has no unambiguous string form.
    """
    # bool before int (bool is an int): True is not "1", nor an option value such as
    # "mortgageYes"; guessing would send a wrong contract.
    if isinstance(value, bool):
        raise UnsendableValueError(
            f"{value!r} is a bool; give the option value or text as a string"
        )
    if isinstance(value, str):
        return str.__str__(value)  # the plain string of a str subclass (or str-valued Enum)
    if isinstance(value, int):
        return int.__repr__(value)  # digits, even for an IntEnum
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsendableValueError(f"{value!r} is not a finite number")
        return float.__repr__(value)  # the shortest string that reads back the same float
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise UnsendableValueError(f"{value!r} is not a finite number")
        return format(value, "f")  # plain notation: Decimal("1E+3") → "1000"
    # datetime before date (a datetime is a date).
    if isinstance(value, datetime):
        return value.isoformat() if datetime_format is None else value.strftime(datetime_format)
    if isinstance(value, date):
        return value.isoformat() if date_format is None else value.strftime(date_format)
    if isinstance(value, numbers.Integral):  # e.g. numpy integers from a DataFrame row
        return str(int(value))
    raise UnsendableValueError(
        f"a {type(value).__name__} cannot be sent as a term value; "
        "give a str, int, float, Decimal, date or datetime"
    )
