"""What every resource shares: the client it calls and safe path building."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from contractsdk._exceptions import ConfigurationError

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["Id", "Resource", "path_id"]

#: An id as the methods take it: an ``int``, or a model's id as it is. The service may leave
#: any field out of an answer, so a model's id is ``int | None``; passing one on needs no
#: check, and ``None`` is refused with :class:`~contractsdk.ConfigurationError` before
#: anything is sent.
Id: TypeAlias = "int | None"

_INT64_MAX = 2**63 - 1


def path_id(value: object, name: str) -> str:
    """Return an id as it may appear in a URL path, or refuse it.

    Ids are int64 (reference/service-api.md §7), so only an int or a string of digits is
    accepted: an id like ``../admin`` or ``1/teams`` can never change the path.

    Raises:
        ConfigurationError: The value is not a non-negative int64 id.
    """
    if type(value) is int:  # the usual case first (a bool's type is bool, not int)
        number = value
    elif value is None:
        raise ConfigurationError(
            f"{name} is None: no id to send (a model the service sent without its id?)"
        )
    elif isinstance(value, bool):
        raise ConfigurationError(f"{name} must be an integer id, got {value!r}")
    elif isinstance(value, int):
        # Its integer value, by int's own method: a subclass's __str__, __int__ or
        # __index__ may say anything (``../../admin``).
        number = int.__int__(value)
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    else:
        raise ConfigurationError(f"{name} must be an integer id, got {value!r}")
    if not 0 <= number <= _INT64_MAX:
        raise ConfigurationError(f"{name} must be a non-negative int64 id, got {value!r}")
    return str(number)


class Resource:
    """Base of the ``client.<area>`` objects: thin typed methods over the client's send."""

    def __init__(self, client: ContractClient) -> None:
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} resource>"
