"""Credentials of the emulator: static API keys, OAuth client-credentials tokens, admin token.

The service takes ``Authorization: Bearer <API key or JWT>`` (service-api.md §2). No token
endpoint is documented; the emulator serves Auth0's machine-to-machine shape at
``POST /oauth/token`` (§2 [INFERRED]): JSON or form body ``grant_type=client_credentials,
client_id, client_secret, audience`` → ``{access_token, token_type: "Bearer", expires_in}``.

Every credential maps to a *principal*, the unit of rate limiting: each API key is its
own principal, and every token issued to a client shares the client's principal.

Invariants:
- ``_tokens`` maps an issued access token to (principal, monotonic expiry); a token is
  accepted iff it is present and ``now < expiry``; expired tokens are dropped when seen and
  swept whenever a new token is issued, so the map stays bounded by the tokens alive.
- Secrets are compared in constant time.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence

import attrs

from ._wire import ApiError

_BEARER = "bearer "


@attrs.frozen
class TokenError(Exception):
    """An OAuth error answer (RFC 6749 §5.2, Auth0 wording).

    Args:
        status: The HTTP status.
        error: The ``error`` code.
        description: The ``error_description``.
    """

    status: int
    error: str
    description: str

    def body(self) -> dict[str, str]:
        """Return the JSON error body.

        Returns:
            ``{"error", "error_description"}``.
        """
        return {"error": self.error, "error_description": self.description}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def bearer_token(header: str | None) -> str | None:
    """Extract the token of an ``Authorization: Bearer`` header.

    Args:
        header: The header value, or None.

    Returns:
        The token, or None when the header is missing, of another scheme or empty.
    """
    if header is None or header[:7].lower() != _BEARER:
        return None
    token = header[7:].strip()
    return token or None


class Authenticator:
    """Checks bearer credentials and issues OAuth tokens.

    Args:
        api_keys: The static API keys.
        client_id: The OAuth client id.
        client_secret: The OAuth client secret.
        token_ttl: Lifetime of issued tokens, in seconds.
        audience: The only accepted ``audience``, or None to accept any.
        clock: The monotonic clock.
    """

    def __init__(
        self,
        api_keys: Sequence[str],
        client_id: str,
        client_secret: str,
        token_ttl: float,
        audience: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # The API keys act for the seeded "integration" identity; each is a principal.
        self._keys = {key: f"api-key-{i + 1}" for i, key in enumerate(api_keys)}
        self._client_id = client_id
        self._client_secret = client_secret
        self.token_ttl = token_ttl
        self._audience = audience
        self._clock = clock
        self._tokens: dict[str, tuple[str, float]] = {}

    def principal(self, authorization: str | None) -> str:
        """Authenticate a ``/v1`` request.

        Args:
            authorization: The ``Authorization`` header.

        Returns:
            The principal the credential belongs to.

        Raises:
            ApiError: 401 with ``WWW-Authenticate: Bearer`` (plus ``error="invalid_token"``
                for a bad or expired token), as Spring Security's resource server answers
                (service-api.md §9 [INFERRED]).
        """
        token = bearer_token(authorization)
        if token is None:
            raise ApiError(
                401,
                "Full authentication is required to access this resource",
                headers={"WWW-Authenticate": "Bearer"},
            )
        principal = self._keys.get(token)
        if principal is not None:
            return principal
        issued = self._tokens.get(token)
        if issued is not None:
            if self._clock() < issued[1]:
                return issued[0]
            del self._tokens[token]
            reason = "Jwt expired"
        else:
            reason = "Invalid token"
        raise ApiError(
            401,
            reason,
            headers={
                "WWW-Authenticate": f'Bearer error="invalid_token", error_description="{reason}"'
            },
        )

    def issue(self, params: Mapping[str, object], basic: str | None) -> dict[str, object]:
        """Run the client-credentials grant.

        Args:
            params: The decoded JSON or form body.
            basic: The ``Authorization`` header, for HTTP Basic client authentication
                (RFC 6749 §2.3.1), or None.

        Returns:
            ``{"access_token", "token_type": "Bearer", "expires_in"}``.

        Raises:
            TokenError: 400 ``invalid_request``/``unsupported_grant_type``, 401
                ``access_denied`` for a wrong client, 403 ``access_denied`` for a
                wrong audience.
        """
        client_id, client_secret = params.get("client_id"), params.get("client_secret")
        if basic is not None and basic[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(basic[6:].strip(), validate=True).decode()
                client_id, _, client_secret = decoded.partition(":")
            except ValueError:  # not base64 (binascii.Error), not ASCII, not UTF-8
                raise TokenError(400, "invalid_request", "Malformed Basic credentials") from None
        grant = params.get("grant_type")
        if grant is None:
            raise TokenError(400, "invalid_request", "Missing required parameter: grant_type")
        if grant != "client_credentials":
            raise TokenError(
                400, "unsupported_grant_type", f"Unsupported grant type: {str(grant)[:40]}"
            )
        if not isinstance(client_id, str) or not isinstance(client_secret, str):
            raise TokenError(401, "access_denied", "Unauthorized")
        if not (
            hmac.compare_digest(client_id.encode(), self._client_id.encode())
            and hmac.compare_digest(client_secret.encode(), self._client_secret.encode())
        ):
            raise TokenError(401, "access_denied", "Unauthorized")
        audience = params.get("audience")
        if self._audience is not None and audience != self._audience:
            raise TokenError(403, "access_denied", f"Service not found: {str(audience)[:100]}")
        now = self._clock()
        self._tokens = {t: v for t, v in self._tokens.items() if v[1] > now}
        token = self._jwt(client_id, audience if isinstance(audience, str) else None)
        self._tokens[token] = (f"client-{client_id}", now + self.token_ttl)
        # expires_in is an integer (RFC 6749 §5.1); rounding down never overstates it.
        return {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": max(1, int(self.token_ttl)),
        }

    def _jwt(self, client_id: str, audience: str | None) -> str:
        """Mint a JWT-looking opaque token (random signature: nothing can verify it)."""
        issued_at = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": "sandbox"}
        claims = {
            "iss": "https://sandbox.invalid/",
            "sub": f"{client_id}@clients",
            "aud": audience or "contract-service-sandbox",
            "iat": issued_at,
            "exp": issued_at + max(1, int(self.token_ttl)),
            "gty": "client-credentials",
            "jti": secrets.token_hex(8),
        }
        parts = (
            _b64(json.dumps(header, separators=(",", ":")).encode()),
            _b64(json.dumps(claims, separators=(",", ":")).encode()),
            _b64(secrets.token_bytes(32)),
        )
        return ".".join(parts)
