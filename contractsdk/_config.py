"""Environments and the checks that run before any request is sent.

A credential is bound to its environment (reference/service-api.md §1: "each environment has
its own API key; keys are not interchangeable"), so the client refuses a sandbox credential
for production, or the reverse, at construction time rather than with a 401 later.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Mapping
from typing import ClassVar, Final

import attrs

from ._credentials import ApiKey, ClientCredentials
from ._exceptions import ConfigurationError
from ._ratelimit._limits import DOCUMENTED_LIMITS

__all__ = ["Environment", "check_base_url", "environment_from_env", "ENV_VARS"]

#: The environment variables the client reads when it is not given the setting.
ENV_VARS: Final = {
    "environment": "CONTRACTSDK_ENVIRONMENT",
    "api_key": "CONTRACTSDK_API_KEY",
    "client_id": "CONTRACTSDK_CLIENT_ID",
    "client_secret": "CONTRACTSDK_CLIENT_SECRET",
    "base_url": "CONTRACTSDK_BASE_URL",
    "redis": "CONTRACTSDK_REDIS_URL",
}


@attrs.frozen(kw_only=True)
class Environment:
    """Where the service runs: base URL, token endpoint host, audience and default limits.

    Use :attr:`SANDBOX` or :attr:`PRODUCTION` (or their names, ``"sandbox"`` and
    ``"production"``); a client given only a ``base_url`` gets a ``"custom"`` environment.

    Attributes:
        name: ``"sandbox"``, ``"production"`` or ``"custom"``.
        base_url: The API's origin, without the version prefix.
        auth_url: The origin of the OAuth token endpoint (``{auth_url}/oauth/token``).
        audience: The ``audience`` sent in client-credentials token requests.
        read_rate: The documented read limit, requests per second (None if unknown).
        write_rate: The documented write limit, requests per second (None if unknown).
        requires_approved_version: Whether API versions must be on the approved list.
    """

    SANDBOX: ClassVar[Environment]
    PRODUCTION: ClassVar[Environment]

    name: str
    base_url: str
    # [INFERRED] service-api.md §2: no token endpoint is documented; the service's own host
    # is the least surprising default, and ClientCredentials(auth_url=...) overrides it.
    auth_url: str
    audience: str
    read_rate: float | None = None
    write_rate: float | None = None
    requires_approved_version: bool = False

    @classmethod
    def from_name(cls, name: str) -> Environment:
        """Return the named environment.

        Raises:
            ConfigurationError: The name is not ``"sandbox"`` or ``"production"``.
        """
        known = {"sandbox": cls.SANDBOX, "production": cls.PRODUCTION}
        try:
            return known[name.strip().lower()]
        except KeyError:
            raise ConfigurationError(
                f"unknown environment {name!r}: use 'sandbox' or 'production', "
                "or give base_url= for anything else"
            ) from None

    @classmethod
    def custom(cls, base_url: str) -> Environment:
        """Return an environment for an explicit base URL (an emulator, a proxy, a test server)."""
        base = base_url.rstrip("/")
        return cls(name="custom", base_url=base, auth_url=base, audience=base)

    def with_base_url(self, base_url: str) -> Environment:
        """Return this environment served from another base URL (its rules are kept)."""
        base = base_url.rstrip("/")
        return attrs.evolve(self, base_url=base, auth_url=base, audience=base)


# service-api.md §1 (base URLs); the limits (§3) are the one table in _ratelimit/_limits.py.
Environment.SANDBOX = Environment(
    name="sandbox",
    base_url="https://sandbox.legislate.tech",
    auth_url="https://sandbox.legislate.tech",
    audience="https://sandbox.legislate.tech",
    read_rate=DOCUMENTED_LIMITS["sandbox"][0],
    write_rate=DOCUMENTED_LIMITS["sandbox"][1],
)
Environment.PRODUCTION = Environment(
    name="production",
    base_url="https://api.legislate.tech",
    auth_url="https://api.legislate.tech",
    audience="https://api.legislate.tech",
    read_rate=DOCUMENTED_LIMITS["production"][0],
    write_rate=DOCUMENTED_LIMITS["production"][1],
    requires_approved_version=True,
)


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(url: str, *, what: str = "base_url") -> str:
    """Return the URL without a trailing slash, or refuse it.

    Plain ``http://`` is allowed only for loopback hosts: a bearer credential must never
    cross a network in clear text.

    Raises:
        ConfigurationError: Not an absolute http(s) URL, or http to a non-loopback host.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigurationError(f"{what} must be an absolute http(s) URL, got {url!r}")
    if parts.username or parts.password:
        raise ConfigurationError(f"{what} must not hold credentials; pass api_key= instead")
    if parts.query or parts.fragment:
        raise ConfigurationError(f"{what} must not have a query or fragment, got {url!r}")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigurationError(
            f"{what} {url!r} uses plain http to a remote host; use https "
            "(plain http is allowed only for loopback hosts such as 127.0.0.1)"
        )
    return url.rstrip("/")


def environment_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the ``CONTRACTSDK_*`` settings that are set, keyed by setting name."""
    source = os.environ if environ is None else environ
    return {key: source[var] for key, var in ENV_VARS.items() if source.get(var)}


def pick_credential(
    credentials: ApiKey | ClientCredentials | None,
    api_key: str | ApiKey | None,
    env: Mapping[str, str],
) -> ApiKey | ClientCredentials:
    """The credential a client is made with: the one given, else the environment's."""
    if credentials is not None and api_key is not None:
        raise ConfigurationError("give either api_key= or credentials=, not both")
    if isinstance(api_key, str):
        return ApiKey(api_key)
    if api_key is not None:
        return api_key
    if credentials is not None:
        if not isinstance(credentials, ApiKey | ClientCredentials):
            raise ConfigurationError("credentials must be an ApiKey or ClientCredentials")
        return credentials
    if "api_key" in env:
        return ApiKey(env["api_key"])
    if "client_id" in env and "client_secret" in env:
        return ClientCredentials(client_id=env["client_id"], client_secret=env["client_secret"])
    raise ConfigurationError(
        "no credentials: pass api_key= or credentials=ClientCredentials(...), or set "
        "CONTRACTSDK_API_KEY (or CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET)"
    )


def pick_environment(
    environment: str | Environment | None, base_url: str | None, env: Mapping[str, str]
) -> Environment:
    """The environment a client talks to: the one given (or named), at ``base_url`` if set."""
    if environment is None and "environment" in env:
        environment = env["environment"]
    if base_url is None and "base_url" in env:
        base_url = env["base_url"]
    if isinstance(environment, str):
        environment = Environment.from_name(environment)
    if base_url is not None:
        base = check_base_url(base_url)
        return environment.with_base_url(base) if environment else Environment.custom(base)
    return environment or Environment.SANDBOX
