"""``client.teams``: where contracts are created and kept."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from contractsdk._config import check_idempotency_key
from contractsdk._exceptions import ConfigurationError
from contractsdk._ids import parse_id
from contractsdk._once import FetchedOnce
from contractsdk.models import Team
from contractsdk.resources._base import Id, Resource, path_id

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = ["Teams", "check_team_name"]

#: service-api.md §7 (Teams): "A team name can be at most 255 characters".
MAX_TEAM_NAME = 255


def check_team_name(name: object) -> str:
    """Return the name if the service would accept it.

    Raises:
        ConfigurationError: Not a string, blank, or longer than 255 characters.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError("a team needs a name (a non-blank string)")
    if len(name) > MAX_TEAM_NAME:
        raise ConfigurationError(
            f"a team name can be at most {MAX_TEAM_NAME} characters, this one has {len(name)}"
        )
    return name


class Teams(Resource):
    """Create, read and rename teams (reference/service-api.md §7, Teams)."""

    def __init__(self, client: ContractClient) -> None:
        super().__init__(client)
        # The team lookups under way that create_contract shares (to find a personal
        # team), by user. Nothing is kept: with limit=0 each lookup is dropped as it ends
        # (FetchedOnce keeps a fetch under way, never a value past its limit).
        self._lookups: FetchedOnce[int, tuple[Team, ...]] = FetchedOnce(limit=0)

    async def list(self, user_id: Id, /) -> builtins.list[Team]:
        """Return the teams of a user.

        Args:
            user_id: The user's id.
        """
        return await self._client._get_list(f"/users/{path_id(user_id, 'user_id')}/teams", Team)

    async def _list_shared(self, user_id: Id) -> tuple[Team, ...]:
        """:meth:`list`, one request for every concurrent caller of the same user.

        A caller that joins a lookup under way gets its answer (a tuple: callers share it),
        and a caller cancelled while waiting does not cancel it for the others; an error
        reaches every caller. Nothing is kept: the next call after it ends asks again.
        """
        key = parse_id(user_id, "user_id")
        return await self._lookups.get(key, lambda: self._list_tuple(key))

    async def _list_tuple(self, user_id: int) -> tuple[Team, ...]:
        return tuple(await self.list(user_id))

    async def create(
        self, user_id: Id, /, *, name: str, idempotency_key: str | None = None
    ) -> Team:
        """Create a team owned by the user.

        Args:
            user_id: The owner's id.
            name: The team's name (1 to 255 characters).
            idempotency_key: Your own key, to make a retried create safe across restarts.

        Raises:
            ConfigurationError: The name is blank or too long (nothing is sent).
        """
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        body = {"name": check_team_name(name)}
        path = f"/users/{path_id(user_id, 'user_id')}/teams"
        return await self._client._post(path, Team, body, idempotency_key=idempotency_key)

    async def get(self, team_id: Id, /) -> Team:
        """Return one team.

        Args:
            team_id: The team's id.
        """
        return await self._client._get(f"/teams/{path_id(team_id, 'team_id')}", Team)

    async def rename(self, team_id: Id, /, *, name: str) -> Team:
        """Rename a team and return it.

        Args:
            team_id: The team's id.
            name: The new name (1 to 255 characters).

        Raises:
            ConfigurationError: The name is blank or too long (nothing is sent).
        """
        body = {"name": check_team_name(name)}
        return await self._client._patch(f"/teams/{path_id(team_id, 'team_id')}", Team, body)
