"""``client.users``: the people who own teams and create contracts."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from contractsdk._config import check_idempotency_key
from contractsdk._converter import structure_list
from contractsdk._exceptions import ConfigurationError, ResponseValidationError
from contractsdk._http import Response
from contractsdk.models import Link, User
from contractsdk.models._base import id_from_href
from contractsdk.resources._base import Id, Resource, path_id

__all__ = ["Users", "created_href"]


def created_href(response: Response) -> str | None:
    """Return the URL a create call names: a Link ``href``, a HAL ``_links.self``, or ``Location``.

    The spec answers creates with a bare ``Link``; the docs show HAL ``_links`` (endpoints.md
    §1 #1, M13); both are read, then the ``Location`` header.
    """
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = None
    href: object = None
    if isinstance(body, Mapping):
        href = body.get("href")
        if href is None:
            links = body.get("_links")
            self_link = links.get("self") if isinstance(links, Mapping) else None
            href = self_link.get("href") if isinstance(self_link, Mapping) else None
    if not isinstance(href, str):
        href = response.headers.get("location")
    return href if isinstance(href, str) else None


def _text(value: object, name: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{name} must be a non-blank string, got {value!r}")
    return value


class Users(Resource):
    """Create, list and read users (reference/endpoints.md §1, Users)."""

    async def create(
        self,
        *,
        email: str,
        first_name: str,
        last_name: str,
        avatar: str | None = None,
        idempotency_key: str | None = None,
    ) -> User:
        """Create a user and return it, without a second request.

        The answer is a Link (the spec) or ``{"_links", "user_id", "email"}`` (the docs);
        either way the id comes from it, and the rest of the returned user is what was
        sent (``created`` and ``full_name`` are None: call :meth:`get` for them).

        Args:
            email: The user's email address (unique on the service).
            first_name: First name.
            last_name: Last name.
            avatar: A profile picture URL.
            idempotency_key: Your own key, to make a retried create safe across restarts.

        Raises:
            ConfigurationError: A name or the email is blank, or the email has no ``@``
                (nothing is sent).
            ConflictError: A user with this email exists (as the emulator answers; the
                service says only "an error").
            ResponseValidationError: The answer names no user id.
        """
        body: dict[str, Any] = {
            "email": _text(email, "email"),
            "first_name": _text(first_name, "first_name"),
            "last_name": _text(last_name, "last_name"),
        }
        if "@" not in email:
            raise ConfigurationError(f"email must be an email address, got {email!r}")
        if _text(avatar, "avatar", optional=True) is not None:
            body["avatar"] = avatar
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        response = await self._client._send_json(
            "POST", "/users", body, idempotency_key=idempotency_key
        )
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = None
        answer = answer if isinstance(answer, Mapping) else {}
        href = created_href(response)
        user_id = answer.get("user_id")
        if type(user_id) is not int:
            user_id = id_from_href(href)
        if user_id is None:
            raise ResponseValidationError(
                "the create-user answer names no user: no user_id, Link href or Location "
                "ending in an id",
                model="User",
                errors=["$.user_id: missing"],
                method="POST",
                url=self._client._prefix + "/users",
            )
        email_sent = answer.get("email")
        return User(
            id=user_id,
            email=email_sent if isinstance(email_sent, str) else email,
            first_name=first_name,
            last_name=last_name,
            avatar=avatar,
            links=() if href is None else (Link._make("self", href),),
            raw=dict(answer),
        )

    async def list(self) -> builtins.list[User]:
        """Return every user the credential can see.

        The spec types the answer as an untyped list; each item is read as a :class:`User`
        (a ``user_id`` key standing in for a missing ``id``). An empty answer (204) is [].

        Raises:
            ResponseValidationError: The answer is not a list of user objects.
        """
        response = await self._client._send_json("GET", "/users")
        if not response.content.strip():
            return []
        data = self._client._decode(response)
        if isinstance(data, builtins.list):
            data = [
                {**item, "id": item["user_id"]}
                if isinstance(item, Mapping) and "id" not in item and "user_id" in item
                else item
                for item in data
            ]
        return structure_list(data, User, method="GET", url=self._client._prefix + "/users")

    async def get(self, user_id: Id, /) -> User:
        """Return one user.

        Args:
            user_id: The user's id.

        Raises:
            NotFoundError: No such user.
        """
        return await self._client._get(f"/users/{path_id(user_id, 'user_id')}", User)
