"""Environments and the checks that run before any request is sent.

A credential is bound to its environment (reference/service-api.md §1: "each environment has
its own API key; keys are not interchangeable"), so the client refuses a sandbox credential
for production, or the reverse, at construction time rather than with a 401 later.
"""

from __future__ import annotations

import contextlib
import difflib
import ipaddress
import logging
import math
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import ClassVar, Final

import attrs

from ._credentials import ApiKey, ClientCredentials
from ._exceptions import ConfigurationError
from ._ratelimit._limits import DOCUMENTED_LIMITS

__all__ = [
    "ENV_VARS",
    "Environment",
    "check_api_version",
    "check_base_url",
    "check_connect_timeout",
    "check_header",
    "check_idempotency_key",
    "check_limiter_timeout",
    "check_max_connections",
    "check_timeout",
    "check_user_agent",
    "environment_from_env",
]

#: The environment variables the client reads when it is not given the setting.
ENV_VARS: Final = {
    "environment": "CONTRACTSDK_ENVIRONMENT",
    "api_key": "CONTRACTSDK_API_KEY",
    "client_id": "CONTRACTSDK_CLIENT_ID",
    "client_secret": "CONTRACTSDK_CLIENT_SECRET",
    "base_url": "CONTRACTSDK_BASE_URL",
    "redis": "CONTRACTSDK_REDIS_URL",
}


def _checked_base_url(url: str) -> str:
    return check_base_url(url)


def _checked_auth_url(url: str) -> str:
    return check_base_url(url, what="auth_url")


@attrs.frozen(kw_only=True)
class Environment:
    """Where the service runs: base URL, token endpoint host, audience and default limits.

    Use :attr:`SANDBOX` or :attr:`PRODUCTION` (or their names, ``"sandbox"`` and
    ``"production"``); a client given only a ``base_url`` gets a ``"custom"`` environment.

    However it is made (:meth:`custom`, :meth:`with_base_url`, ``attrs.evolve``, the class
    itself), its ``base_url`` and ``auth_url`` pass :func:`check_base_url`, as a client's
    ``base_url=`` does: an environment is handed to a client whole, and what its URLs hold
    shows in the client's repr, its errors, hooks and logs.

    Attributes:
        name: ``"sandbox"``, ``"production"`` or ``"custom"``.
        base_url: The API's origin, without the version prefix.
        auth_url: The origin of the OAuth token endpoint (``{auth_url}/oauth/token``).
        audience: The ``audience`` sent in client-credentials token requests.
        read_rate: The documented read limit, requests per second (None if unknown).
        write_rate: The documented write limit, requests per second (None if unknown).
        requires_approved_version: Whether API versions must be on the approved list.

    Raises:
        ConfigurationError: ``base_url`` or ``auth_url`` is not one a client may use (user
            info or any "@", a query, plain http to a remote host; see
            :func:`check_base_url`).
    """

    SANDBOX: ClassVar[Environment]
    PRODUCTION: ClassVar[Environment]

    name: str
    base_url: str = attrs.field(converter=_checked_base_url)
    # [INFERRED] service-api.md §2: no token endpoint is documented; the service's own host
    # is the least surprising default, and ClientCredentials(auth_url=...) overrides it.
    auth_url: str = attrs.field(converter=_checked_auth_url)
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
        """Return an environment for an explicit base URL (an emulator, a proxy, a test server).

        Raises:
            ConfigurationError: The URL is not one a client may use (:func:`check_base_url`).
        """
        base = check_base_url(base_url)
        return cls(name="custom", base_url=base, auth_url=base, audience=base)

    def with_base_url(self, base_url: str) -> Environment:
        """Return this environment served from another base URL (its rules are kept).

        Raises:
            ConfigurationError: The URL is not one a client may use (:func:`check_base_url`).
        """
        base = check_base_url(base_url)
        return attrs.evolve(self, base_url=base, auth_url=base, audience=base)


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_VERSION_SEGMENT: Final = re.compile(r"v[0-9]+")


def _shown(url: str) -> str:
    """A URL as a message may quote it: its query and fragment hidden.

    They are where a secret would be (``?api_key=...``). User info never gets this far:
    :func:`check_base_url` refuses any ``@`` before it quotes a URL.
    """
    for mark in "#?":
        if mark in url:
            url = url.split(mark, 1)[0] + mark + "***"
    return url


def _origin(url: str) -> str:
    """The scheme and host of a URL whose port cannot be read, quoted; else nothing.

    The rest may be a password: in ``https://svc:PW/`` it reads as the port.
    """
    with contextlib.suppress(ValueError):  # urlsplit's own: an unclosed [IPv6 address
        parts = urllib.parse.urlsplit(url)
        if parts.scheme and parts.hostname:
            origin = f"{parts.scheme}://{parts.hostname}"
            return f": {origin!r}"
    return ""


def check_base_url(url: str, *, what: str = "base_url") -> str:
    """Return the URL without a trailing slash, or refuse it.

    Plain ``http://`` is allowed only for loopback hosts: a bearer credential must never
    cross a network in clear text. A base URL never holds user info, so any ``@`` is
    refused, wherever it is.

    Raises:
        ConfigurationError: Not an absolute http(s) URL, one with an ``@``, a query or a
            fragment, or http to a non-loopback host.
    """
    if not isinstance(url, str):
        raise ConfigurationError(f"{what} must be a str, got {type(url).__name__}")
    if "@" in url:
        # User info, or an "@" where the parser and the reader disagree on what is the host
        # ("https://svc:8443/PW@api.example.com" is host svc, and the key would go there).
        # Nothing of the URL is quoted: a password may sit anywhere in it.
        raise ConfigurationError(
            f"{what} must not hold credentials (nor any '@'); pass api_key= or credentials= instead"
        )
    parts: urllib.parse.SplitResult | None
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - read for its check: a number from 0 to 65535
    except ValueError:  # an unclosed [IPv6 address, a port that is not one
        parts = None
    if parts is None:
        # Raised here, not in the except clause, where urllib's ValueError would stay as
        # its __context__: its words quote the "port", which may be part of a password.
        raise ConfigurationError(
            f"{what} is not a valid URL (its host or port cannot be read){_origin(url)}"
        )
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigurationError(f"{what} must be an absolute http(s) URL, got {_shown(url)!r}")
    if parts.query or parts.fragment:
        raise ConfigurationError(f"{what} must not have a query or fragment, got {_shown(url)!r}")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigurationError(
            f"{what} {_shown(url)!r} uses plain http to a remote host; use https "
            "(plain http is allowed only for loopback hosts such as 127.0.0.1)"
        )
    last = parts.path.rstrip("/").rpartition("/")[2]
    if what == "base_url" and _VERSION_SEGMENT.fullmatch(last):
        # Every path is /v1/..., so this base sent /v1/v1/users/7 and met only 404s.
        raise ConfigurationError(
            f"base_url ends in the API version {last!r}: give the service's root, "
            f"{url.rstrip('/')[: -len(last) - 1]!r} (the version goes in api_version=, "
            "'v1' by default)"
        )
    return url.rstrip("/")


# service-api.md §1 (base URLs); the limits (§3) are the one table in _ratelimit/_limits.py.
# Made here, below check_base_url, which every Environment's URLs pass.
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


def _seconds(value: object, what: str, *, zero: bool) -> float | None:
    """Return a number of seconds as given, or refuse it: finite and > 0 (>= 0 with ``zero``)."""
    if value is None:
        return None
    # bool is an int, but True seconds means nothing; NaN compares false to everything, so
    # "value <= 0" let it through as no limit at all.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not (value >= 0 if zero else value > 0)
    ):
        bound = ">= 0" if zero else "> 0"
        raise ConfigurationError(
            f"{what} must be a finite number of seconds {bound} (or None for no limit), "
            f"got {value!r}"
        )
    return value


def check_timeout(value: object) -> float | None:
    """Return ``timeout`` (seconds an attempt may take), or refuse it.

    Raises:
        ConfigurationError: Not None nor a finite number > 0.
    """
    return _seconds(value, "timeout", zero=False)


def check_connect_timeout(value: object) -> float | None:
    """Return ``connect_timeout`` (seconds to wait for a connection), or refuse it.

    Raises:
        ConfigurationError: Not None nor a finite number > 0.
    """
    return _seconds(value, "connect_timeout", zero=False)


def check_limiter_timeout(value: object) -> float | None:
    """Return ``limiter_timeout``, or refuse it; 0 is meaningful: only a slot free at once.

    Raises:
        ConfigurationError: Not None nor a finite number >= 0.
    """
    return _seconds(value, "limiter_timeout", zero=True)


def check_max_connections(value: object) -> int:
    """Return ``max_connections``, or refuse it (aiohttp reads 0 as no limit at all).

    Raises:
        ConfigurationError: Not an int >= 1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"max_connections must be an int >= 1, got {value!r}")
    return value


#: A header name (RFC 9110 §5.1: a token).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: What a header value cannot hold (RFC 9110 §5.5): control characters but tab, and DEL;
#: CR and LF would start another header. The characters aiohttp refuses, untyped, on send.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def check_header(name: object, value: object) -> None:
    """Refuse a request header that cannot be sent as given.

    Raises:
        ConfigurationError: The name is not an RFC 9110 token, or the value is not a str
            or holds a control character (CR and LF included).
    """
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise ConfigurationError(f"header name {name!r} cannot be sent: not an RFC 9110 token")
    if not isinstance(value, str) or _CONTROL.search(value):
        raise ConfigurationError(
            f"header {name} cannot be sent: its value must be a str without control characters"
        )


def check_user_agent(value: object) -> str | None:
    """Return ``user_agent`` (None: the SDK's own), or refuse it.

    Raises:
        ConfigurationError: Empty, not a str, or holding a control character.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or _CONTROL.search(value):
        raise ConfigurationError(
            f"user_agent must be a non-empty str without control characters (or None for "
            f"the SDK's own), got {value!r}"
        )
    return value


_VERSION = re.compile(r"v[0-9]+")


def check_api_version(value: object) -> None:
    """Refuse an ``api_version`` that is not a version path segment such as ``"v1"``.

    Raises:
        ConfigurationError: Not a str of ``v`` and digits.
    """
    if not isinstance(value, str) or not _VERSION.fullmatch(value):
        raise ConfigurationError(f"api_version must look like 'v1', got {value!r}")


#: The longest Idempotency-Key the service's emulator takes (docs/sandbox.md).
MAX_IDEMPOTENCY_KEY: Final = 255
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]+")  # visible ASCII: no space, no control


def check_idempotency_key(key: object, *, suffix: str = "") -> None:
    """Refuse an ``idempotency_key`` that cannot be sent as given.

    A key must be 1 to 255 visible ASCII characters. An empty key is refused rather than
    replaced by a random one, which would not protect a call repeated after a restart.

    Args:
        key: The caller's key (None is not checked: one is generated).
        suffix: What the SDK adds to the key for requests it derives from it (the parties'
            ``-party-<index>``); the key with it must fit too.

    Raises:
        ConfigurationError: Not a str, empty, too long or holding other characters.
    """
    if key is None:
        return
    if not isinstance(key, str):
        raise ConfigurationError(f"idempotency_key must be a str, got {type(key).__name__}")
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise ConfigurationError(
            "idempotency_key must be visible ASCII characters (letters, digits, punctuation; "
            f"no spaces, control or non-ASCII characters), got {key[:80]!r}"
            if key
            else "idempotency_key is empty; give a key, or None for a new one per call"
        )
    if len(key) + len(suffix) > MAX_IDEMPOTENCY_KEY:
        with_suffix = f" with {suffix!r} added for the requests made from it" if suffix else ""
        raise ConfigurationError(
            f"idempotency_key{with_suffix} must be at most {MAX_IDEMPOTENCY_KEY} characters, "
            f"got {len(key) + len(suffix)}"
        )


logger = logging.getLogger("contractsdk")

#: ``CONTRACTSDK_*`` names read outside the client: the user id that ``contractsdk sandbox``
#: prints and the examples read.
_OTHER_VARS: Final = frozenset({"CONTRACTSDK_USER_ID"})
#: Misspelt names already warned of in this process (once each).
_WARNED: set[str] = set()


def misspelt_env_vars(environ: Mapping[str, str] | None = None) -> list[str]:
    """Say which ``CONTRACTSDK_*`` variables are set that nothing reads, each with the closest.

    ``CONTRACTSDK_BASEURL`` set for ``CONTRACTSDK_BASE_URL`` sent the client to the
    sandbox's own host, and the error named neither. Names only: a value may be a secret.
    """
    source = os.environ if environ is None else environ
    known = sorted({*ENV_VARS.values(), *_OTHER_VARS})
    notes = []
    for name in sorted(source):
        if not name.startswith("CONTRACTSDK_") or name in known:
            continue
        if name.startswith("CONTRACTSDK_TEST_"):  # the test suite's own
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        notes.append(f"{name} is set, but no setting of contractsdk has that name{hint}")
    return notes


def environment_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the ``CONTRACTSDK_*`` settings that are set, keyed by setting name.

    Reading the process's environment, it logs a warning, once per name, for each
    ``CONTRACTSDK_*`` variable that no setting has (:func:`misspelt_env_vars`).
    """
    source = os.environ if environ is None else environ
    if environ is None:
        for note in misspelt_env_vars(source):
            if note not in _WARNED:
                _WARNED.add(note)
                logger.warning("%s", note)
    return {key: source[var] for key, var in ENV_VARS.items() if source.get(var)}


def pick_credential(
    credentials: ApiKey | ClientCredentials | None,
    api_key: str | ApiKey | None,
    env: Mapping[str, str],
) -> ApiKey | ClientCredentials:
    """The credential a client is made with: the one given, else the environment's."""
    if credentials is not None and api_key is not None:
        raise ConfigurationError("give either api_key= or credentials=, not both")
    if api_key is not None and not isinstance(api_key, str | ApiKey):
        raise ConfigurationError(
            f"api_key must be a str or an ApiKey, got {type(api_key).__name__}"
        )
    if isinstance(api_key, str):
        return ApiKey(api_key)
    if api_key is not None:
        return api_key
    if credentials is not None:
        if not isinstance(credentials, ApiKey | ClientCredentials):
            raise ConfigurationError("credentials must be an ApiKey or ClientCredentials")
        return credentials
    pair = [name for name in ("client_id", "client_secret") if name in env]
    if "api_key" in env and pair:
        # Which one was meant is a guess: a key left over in the shell, or a pair set for
        # a job, would be sent without a word.
        raise ConfigurationError(
            f"both {ENV_VARS['api_key']} and {ENV_VARS[pair[0]]} are set; "
            "unset the credential you do not mean to use"
        )
    if "api_key" in env:
        return ApiKey(env["api_key"])
    if len(pair) == 2:
        return ClientCredentials(client_id=env["client_id"], client_secret=env["client_secret"])
    if pair:
        (missing,) = {"client_id", "client_secret"} - set(pair)
        raise ConfigurationError(
            f"{ENV_VARS[pair[0]]} is set but {ENV_VARS[missing]} is not; "
            "OAuth client credentials need both"
        )
    notes = "".join(f"; {note}" for note in misspelt_env_vars())
    raise ConfigurationError(
        "no credentials: pass api_key= or credentials=ClientCredentials(...), or set "
        f"CONTRACTSDK_API_KEY (or CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET){notes}"
    )


def pick_environment(
    environment: str | Environment | None, base_url: str | None, env: Mapping[str, str]
) -> Environment:
    """The environment a client talks to: the one given (or named), at ``base_url`` if set."""
    if environment is not None and not isinstance(environment, str | Environment):
        raise ConfigurationError(
            "environment must be 'sandbox', 'production' or an Environment, "
            f"got {type(environment).__name__}"
        )
    if environment is None and "environment" in env:
        environment = env["environment"]
    if base_url is None and "base_url" in env:
        base_url = env["base_url"]
    if isinstance(environment, str):
        environment = Environment.from_name(environment)
    if base_url is not None:  # checked by either (check_base_url)
        return environment.with_base_url(base_url) if environment else Environment.custom(base_url)
    return environment or Environment.SANDBOX
