"""The one answer to "is this an id?".

Ids are int64 (reference/service-api.md §7) and never negative. An id given by a caller,
read from a URL, a term key or a row may be an ``int`` or a string of ASCII digits; nothing
else is an id. Every place that takes an id asks here:

* :func:`parse_id` for a value that must be an id (a method argument): it refuses anything
  else with :class:`~contractsdk.ConfigurationError`, before anything is sent;
* :func:`id_or_none` for a value that may or may not be one (the last segment of an href,
  a key that may be a name): None when it is not.

Pure functions: no I/O, no state.
"""

from __future__ import annotations

from ._exceptions import ConfigurationError

__all__ = ["INT64_MAX", "id_or_none", "parse_id"]

INT64_MAX = 2**63 - 1
"""The largest id: ids are int64 (service-api.md §7)."""

# An int64 has at most 19 digits; a longer string is refused before int() reads it (a
# hostile value of a million digits would otherwise cost int()'s quadratic time).
_MAX_DIGITS = 19


def id_or_none(value: object) -> int | None:
    """Return ``value`` as an id, or None when it is not one.

    An id is a non-negative int64 given as an ``int`` (a subclass counts by its integer
    value, read with ``int.__int__``: its own ``__int__``, ``__index__`` or ``__str__`` may
    say anything) or as a string of ASCII digits (``"٤٢"`` and ``"²"`` are not ids). A
    ``bool`` is not an id, nor is ``None``.

    Args:
        value: Anything.

    Returns:
        The id, or None.
    """
    if type(value) is int:  # the usual case first (a bool's type is bool, not int)
        number = value
    elif isinstance(value, str):
        if not (value.isascii() and value.isdigit() and len(value) <= _MAX_DIGITS):
            return None
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = int.__int__(value)
    else:
        return None
    return number if 0 <= number <= INT64_MAX else None


def parse_id(value: object, what: str) -> int:
    """Return ``value`` as an id, or refuse it.

    The rules are :func:`id_or_none`'s; this one says what is wrong.

    Args:
        value: The id as given: an ``int`` or a string of ASCII digits.
        what: What the id is, for the message (``"team_id"``).

    Returns:
        The id, a non-negative int64.

    Raises:
        ConfigurationError: The value is None (a model the service sent without its id?),
            not an integer id, or outside int64's non-negative range.
    """
    if type(value) is int and 0 <= value <= INT64_MAX:  # the usual case, without a call
        return value
    number = id_or_none(value)
    if number is not None:
        return number
    if value is None:
        raise ConfigurationError(
            f"{what} is None: no id to send (a model the service sent without its id?)"
        )
    if (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.isascii() and value.isdigit()
    ):
        shown = (
            f"an integer of {value.bit_length()} bits"  # repr refuses over 4,300 digits
            if isinstance(value, int) and value.bit_length() > 64
            else repr(value)
        )
        raise ConfigurationError(f"{what} must be a non-negative int64 id, got {shown}")
    raise ConfigurationError(f"{what} must be an integer id, got {value!r}")
