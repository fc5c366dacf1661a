"""The credentials: a static API key, and OAuth client credentials.

An :class:`ApiKey` is sent as ``Authorization: Bearer <key>`` (reference/service-api.md §2);
:class:`ClientCredentials` are exchanged for a bearer token by ``TokenAuth`` (``_auth.py``).
Each is bound to the environment it belongs to, when that is known (said, or named by the
key's JWT claims), so that a key for one environment is never sent to another. Neither
shows its secret in a repr.
"""

from __future__ import annotations

import base64
import hashlib
import json

import attrs

from ._exceptions import ConfigurationError

__all__ = ["ApiKey", "ClientCredentials"]


_KNOWN_HOSTS = {"sandbox.legislate.tech": "sandbox", "api.legislate.tech": "production"}


def _require_text(what: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{what} is empty")
    if "\r" in value or "\n" in value:
        raise ConfigurationError(f"{what} contains a line break")
    # NUL, ESC, DEL …: aiohttp refuses them untyped at every call. The message never shows
    # the value (an API key, a client secret).
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ConfigurationError(f"{what} holds a control character")


def _check_environment_name(value: str | None) -> None:
    if value is not None and value not in {"sandbox", "production"}:
        raise ConfigurationError(f"environment must be 'sandbox' or 'production', got {value!r}")


def _environment_in_jwt(token: str) -> str | None:
    """Return the environment a JWT names in its ``aud`` or ``iss`` claim, if any.

    The claims are read without verifying the signature: this is only a guard against
    using a key in the wrong environment, never a security decision.
    """
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, TypeError):
        return None
    if not isinstance(claims, dict):
        return None
    audiences = claims.get("aud", [])
    names = [*(audiences if isinstance(audiences, list) else [audiences]), claims.get("iss")]
    for name in names:
        if not isinstance(name, str):
            continue
        for host, environment in _KNOWN_HOSTS.items():
            if host in name:
                return environment
    return None


@attrs.frozen(repr=False)
class ApiKey:
    """A static API key, sent as ``Authorization: Bearer <key>``.

    Args:
        key: The key (the service's keys are JWTs).
        environment: The environment the key belongs to (``"sandbox"`` or ``"production"``),
            if you know it. When not given and the key is a JWT naming a known host in its
            ``aud`` or ``iss`` claim, that is used. A client for another environment refuses
            the key before sending anything.
    """

    # repr=False as well as __repr__: rich's pretty printer reads the attrs fields.
    key: str = attrs.field(repr=False)
    environment: str | None = attrs.field(default=None, kw_only=True)

    @key.validator
    def _check_key(self, _: object, value: str) -> None:
        _require_text("the API key", value)

    @environment.validator
    def _check_environment(self, _: object, value: str | None) -> None:
        _check_environment_name(value)

    @property
    def bound_environment(self) -> str | None:
        """The environment this key is known to belong to, if any."""
        return self.environment or _environment_in_jwt(self.key)

    @property
    def identity(self) -> str:
        """What identifies the key without revealing it: a hash of it (for Redis keys)."""
        return "key:" + hashlib.sha256(self.key.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"ApiKey(key='[redacted]', environment={self.environment!r})"


@attrs.frozen(repr=False)
class ClientCredentials:
    """OAuth 2.0 client credentials, exchanged for short-lived bearer tokens.

    Args:
        client_id: The client id.
        client_secret: The client secret (never shown in a repr, log or error).
        auth_url: The origin of the token endpoint; the token is requested from
            ``{auth_url}/oauth/token``. Defaults to the environment's.
        audience: The ``audience`` of the token request. Defaults to the environment's
            base URL.
        environment: The environment these credentials belong to, if you know it.
    """

    client_id: str = attrs.field(kw_only=True)
    # repr=False as well as __repr__: rich's pretty printer reads the attrs fields.
    client_secret: str = attrs.field(kw_only=True, repr=False)
    auth_url: str | None = attrs.field(default=None, kw_only=True)
    audience: str | None = attrs.field(default=None, kw_only=True)
    environment: str | None = attrs.field(default=None, kw_only=True)

    @client_id.validator
    @client_secret.validator
    def _check_not_empty(self, attribute: attrs.Attribute[str], value: str) -> None:
        _require_text(attribute.name, value)

    @environment.validator
    def _check_environment(self, _: object, value: str | None) -> None:
        _check_environment_name(value)

    @property
    def bound_environment(self) -> str | None:
        """The environment these credentials are known to belong to, if any."""
        return self.environment

    @property
    def identity(self) -> str:
        """What identifies the credentials without revealing the secret: the client id."""
        return f"client:{self.client_id}:{self.audience or ''}"

    def __repr__(self) -> str:
        return (
            f"ClientCredentials(client_id={self.client_id!r}, client_secret='[redacted]', "
            f"auth_url={self.auth_url!r}, audience={self.audience!r}, "
            f"environment={self.environment!r})"
        )
