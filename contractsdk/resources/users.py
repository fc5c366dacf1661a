"""``client.users``: the people who own teams and create contracts."""

from __future__ import annotations

from contractsdk.models import User
from contractsdk.resources._base import Resource, path_id

__all__ = ["Users"]


class Users(Resource):
    """Read users (reference/service-api.md §7, Users)."""

    async def get(self, user_id: int, /) -> User:
        """Return one user.

        Args:
            user_id: The user's id.

        Raises:
            NotFoundError: No such user.
        """
        return await self._client._get(f"/users/{path_id(user_id, 'user_id')}", User)
