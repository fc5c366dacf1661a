"""``client.identity_fields``: what a party of some roles and side tells about itself."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from contractsdk._converter import structure_list
from contractsdk._ids import parse_id
from contractsdk._once import FetchedOnce
from contractsdk.identity import IdentityFieldSet, check_roles, check_side
from contractsdk.models import IdentityField, Role, Side
from contractsdk.resources._base import Id, Resource

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["IdentityFields"]

_Key = tuple[int, frozenset[Role], Side]


class IdentityFields(Resource):
    """Read identity fields (reference/endpoints.md §1 #23).

    Like a template's terms, a template version's identity fields do not change once it
    is published, so each (template, roles, side) is fetched once per client and kept (the
    1,024 most recently used); concurrent first calls share one request.
    """

    def __init__(self, client: ContractClient) -> None:
        super().__init__(client)
        # A template has a few (roles, side) pairs a party takes, ~11 KiB each: 1,024 cover
        # the templates of the client's 256 term sets at four pairs each, in ~11 MiB at most.
        self._sets: FetchedOnce[_Key, IdentityFieldSet] = FetchedOnce(limit=1024)

    async def list(
        self,
        template_id: Id,
        /,
        *,
        roles: Role | str | Iterable[Role | str],
        side: Side | str,
        refresh: bool = False,
    ) -> IdentityFieldSet:
        """Return the identity fields a party of these roles and side fills in, as a tree.

        Sent as ``GET /v1/templates/{id}/fields?roles=party&roles=signatory&side=first``:
        ``roles`` repeated, in the order given.

        Args:
            template_id: The template version's id.
            roles: One role or several (:class:`Role` or its wire value).
            side: The party's side.
            refresh: Fetch again even if the client has them.

        Raises:
            ConfigurationError: An unknown role or side, or a bad id (nothing is sent).
        """
        template = parse_id(template_id, "template_id")
        checked_roles, checked_side = check_roles(roles), check_side(side)
        key = (template, frozenset(checked_roles), checked_side)
        return await self._sets.get(
            key, lambda: self._fetch(template, checked_roles, checked_side), refresh=refresh
        )

    async def _fetch(
        self, template_id: Id, roles: tuple[Role, ...], side: Side
    ) -> IdentityFieldSet:
        query = urllib.parse.urlencode(
            [("roles", role.value) for role in roles] + [("side", side.value)]
        )
        fields = await self._client._get_list(
            f"/templates/{template_id}/fields?{query}", IdentityField
        )
        return IdentityFieldSet(fields, template_id=template_id, roles=roles, side=side)

    async def of_collaborator(
        self,
        template_id: Id,
        collaborator_id: Id,
        /,
        *,
        roles: Role | str | Iterable[Role | str],
        side: Side | str,
    ) -> IdentityFieldSet:
        """Return the identity fields with one collaborator's current values filled in.

        ``GET /v1/templates/{id}/updatefields`` (reference/endpoints.md §1 #24), a GET that
        carries a JSON body ``{"collaborator_id", "roles", "side"}``, as the official Java
        SDK sends it. Not cached: the values change as the collaborator fills them in.

        Args:
            template_id: The template version's id.
            collaborator_id: The collaborator whose values to read.
            roles: Their roles (:class:`Role` or wire values).
            side: Their side.

        Raises:
            ConfigurationError: An unknown role or side, or a bad id (nothing is sent).
        """
        template = parse_id(template_id, "template_id")
        checked_roles, checked_side = check_roles(roles), check_side(side)
        body = {
            "collaborator_id": parse_id(collaborator_id, "collaborator_id"),
            "roles": [role.value for role in checked_roles],
            "side": checked_side.value,
        }
        response = await self._client._send_json("GET", f"/templates/{template}/updatefields", body)
        fields = structure_list(
            self._client._decode(response),
            IdentityField,
            method="GET",
            url=f"{self._client._prefix}/templates/{template}/updatefields",
        )
        return IdentityFieldSet(
            fields, template_id=template, roles=checked_roles, side=checked_side
        )
