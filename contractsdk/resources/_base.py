"""What every resource shares: the client it calls and safe path building."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from contractsdk._ids import parse_id

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["Id", "Resource", "path_id"]

#: An id as the methods take it: an ``int``, or a model's id as it is. The service may leave
#: any field out of an answer, so a model's id is ``int | None``; passing one on needs no
#: check, and ``None`` is refused with :class:`~contractsdk.ConfigurationError` before
#: anything is sent.
Id: TypeAlias = "int | None"


def path_id(value: object, name: str) -> str:
    """Return an id as it may appear in a URL path, or refuse it.

    Ids are int64 (reference/service-api.md §7), so only an int or a string of digits is
    accepted (:func:`contractsdk._ids.parse_id`): an id like ``../admin`` or ``1/teams`` can
    never change the path.

    Raises:
        ConfigurationError: The value is not a non-negative int64 id.
    """
    return str(parse_id(value, name))


class Resource:
    """Base of the ``client.<area>`` objects: thin typed methods over the client's send."""

    def __init__(self, client: ContractClient) -> None:
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} resource>"
