"""``client.templates``: the versions of a contract type's template."""

from __future__ import annotations

import builtins
import re
import unicodedata
from typing import TYPE_CHECKING

from contractsdk._exceptions import ConfigurationError, NotFoundError
from contractsdk._ids import parse_id
from contractsdk._once import FetchedOnce
from contractsdk.models import Template
from contractsdk.resources._base import Id, Resource, path_id

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["Templates", "newest_first"]

_NUMBER = re.compile(r"\d+")


def _number_key(digits: str) -> tuple[int, str]:
    """Order runs of digits as the numbers they are, without ``int()``.

    A service may send a version of thousands of digits, and ``int()`` refuses more than
    4,300 (``sys.get_int_max_str_digits``): without leading zeros, a longer run is the
    larger number, and runs of one length compare as text.
    """
    if not digits.isascii():  # "٣" is a digit too, as int() reads it
        digits = "".join(str(unicodedata.decimal(char)) for char in digits)
    digits = digits.lstrip("0")
    return len(digits), digits


def newest_first(templates: builtins.list[Template]) -> builtins.list[Template]:
    """Order template versions newest first.

    The service documents neither the format of ``version`` nor the order of the list
    (reference/service-api.md §7, Templates), so versions are compared by their numbers
    (``"2"`` > ``"1.10"`` > ``"1.9"``, ``"v7"`` as 7) and then by id (one without an id,
    which the spec allows, after those with one).
    """

    def key(template: Template) -> tuple[tuple[tuple[int, str], ...], bool, int]:
        numbers = tuple(_number_key(n) for n in _NUMBER.findall(template.version))
        return numbers, template.id is not None, template.id or 0

    return sorted(templates, key=key, reverse=True)


class Templates(Resource):
    """Read template versions (reference/service-api.md §7, Templates)."""

    def __init__(self, client: ContractClient) -> None:
        super().__init__(client)
        # The newest-version lookups under way that create_contract shares, by (team,
        # contract type). Unlike terms, a newest version is not kept: a version published
        # later must be the one a later call finds, so with limit=0 each lookup is dropped
        # as it ends (FetchedOnce keeps a fetch under way, never a value past its limit).
        self._lookups: FetchedOnce[tuple[int, int], Template] = FetchedOnce(limit=0)
        # Template versions found to be of a contract type, by (team, type, version): a
        # version never changes its type, so each is asked once and kept.
        self._of_type: FetchedOnce[tuple[int, int, int], Template] = FetchedOnce()

    def _path(self, team_id: Id, contract_type_id: Id) -> str:
        return (
            f"/teams/{path_id(team_id, 'team_id')}"
            f"/contract-types/{path_id(contract_type_id, 'contract_type_id')}/templates"
        )

    async def list(self, team_id: Id, contract_type_id: Id, /) -> builtins.list[Template]:
        """Return the template versions of a contract type, newest first.

        Args:
            team_id: The team's id.
            contract_type_id: The contract type's id.
        """
        path = self._path(team_id, contract_type_id)
        return newest_first(await self._client._get_list(path, Template))

    async def latest(self, team_id: Id, contract_type_id: Id, /) -> Template:
        """Return the newest template version of a contract type.

        Raises:
            NotFoundError: The contract type has no template versions.
        """
        versions = await self.list(team_id, contract_type_id)
        if not versions:
            raise NotFoundError(
                f"contract type {contract_type_id} has no template versions in team {team_id}"
            )
        return versions[0]

    async def _latest_shared(self, team_id: Id, contract_type_id: Id) -> Template:
        """:meth:`latest`, one request for every concurrent caller of the same pair.

        A caller that joins a lookup under way gets its answer, and a caller cancelled while
        waiting does not cancel it for the others; an error reaches every caller. Nothing is
        kept: the next call after it ends asks again.
        """
        key = (parse_id(team_id, "team_id"), parse_id(contract_type_id, "contract_type_id"))
        return await self._lookups.get(key, lambda: self.latest(*key))

    async def _check_of_type(self, team_id: Id, contract_type_id: Id, template_id: Id) -> None:
        """Refuse a template version that is not one of the contract type's.

        One read per (team, contract type, version) for the client's life, shared by
        concurrent callers: a version never changes its type.

        Raises:
            ConfigurationError: The service does not know the version under that type.
        """
        key = (
            parse_id(team_id, "team_id"),
            parse_id(contract_type_id, "contract_type_id"),
            parse_id(template_id, "template_id"),
        )
        try:
            await self._of_type.get(key, lambda: self.get(*key))
        except NotFoundError as exc:
            team, kind, version = key
            raise ConfigurationError(
                f"template version {version} is not one of contract type {kind} in team "
                f"{team} (the service: {exc.message}); give a template_id of that type, or "
                "none for its newest"
            ) from exc

    async def get(self, team_id: Id, contract_type_id: Id, template_id: Id, /) -> Template:
        """Return one template version."""
        path = f"{self._path(team_id, contract_type_id)}/{path_id(template_id, 'template_id')}"
        return await self._client._get(path, Template)
