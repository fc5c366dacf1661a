"""``client.contract_types``: the kinds of contract a team can create."""

from __future__ import annotations

import builtins

from contractsdk.models import ContractType
from contractsdk.resources._base import Id, Resource, path_id

__all__ = ["ContractTypes"]


class ContractTypes(Resource):
    """Read contract types (reference/service-api.md §7, Contract types)."""

    async def list(self, team_id: int | None = None, /) -> builtins.list[ContractType]:
        """Return the contract types a team can create, or the public ones.

        Args:
            team_id: The team's id; without it, the service's public contract types.
        """
        if team_id is None:
            return await self._client._get_list("/contract-types", ContractType)
        path = f"/teams/{path_id(team_id, 'team_id')}/contract-types"
        return await self._client._get_list(path, ContractType)

    async def get(self, contract_type_id: Id, /, *, team_id: int | None = None) -> ContractType:
        """Return one contract type.

        Args:
            contract_type_id: The contract type's id.
            team_id: Read it as seen by this team.
        """
        type_part = f"/contract-types/{path_id(contract_type_id, 'contract_type_id')}"
        if team_id is None:
            return await self._client._get(type_part, ContractType)
        team_part = f"/teams/{path_id(team_id, 'team_id')}"
        return await self._client._get(team_part + type_part, ContractType)
