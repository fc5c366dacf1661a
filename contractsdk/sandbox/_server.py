"""``SandboxServer``: the emulator on a real loopback port, as an async context manager."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from types import TracebackType

from aiohttp import web

from ._app import EMULATOR_KEY, create_app
from ._config import SandboxConfig
from ._emulator import UNCHANGED, Emulator, Role, Unchanged
from ._faults import FaultRule
from ._ratelimit import RateLimits
from ._seed import Seed, SeedTeam, SeedUser
from ._store import SandboxState


def _unspecified(address: str) -> bool:
    """Whether a bound address is a wildcard (``0.0.0.0``, ``::``): every interface."""
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:  # not an IP address (aiohttp reports the bound one): not a wildcard
        return False


class SandboxServer:
    """Run the Contract Service emulator on a local port.

    Example::

        async with SandboxServer(port=0, read_rate=None) as server:
            headers = {"Authorization": f"Bearer {server.api_key}"}
            user = server.users[0]
            async with session.get(f"{server.url}/v1/users/{user.id}", headers=headers) as r:
                ...

    Args:
        host: The interface to listen on; a wildcard (``0.0.0.0``, ``::``, ``""``) listens
            on every interface, and :attr:`url` is then the loopback address.
        port: The port; 0 picks a free one (read it back from :attr:`url`).
        seed: Seed of the data and credentials.
        read_rate: Reads per second per principal; None means unlimited.
        write_rate: Writes per second per principal; None means unlimited.
        burst: Bucket capacity; None means one second's worth of each rate.
        rate_headers: Send ``Retry-After`` / ``X-RateLimit-*`` headers.
        token_ttl: Lifetime of OAuth access tokens, in seconds.
        faults: Fault rules, tried in order.
        audience: The only OAuth audience accepted; None accepts any.
        access_log: Log every request through aiohttp's access logger (off by default:
            the benchmarks push hundreds of requests per second through the emulator).
        config: A complete configuration; when given, it is used instead of ``seed`` …
            ``audience``.

    Raises:
        ValueError: for invalid settings.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        seed: int = 0,
        read_rate: float | None = 25.0,
        write_rate: float | None = 25.0,
        burst: float | None = None,
        rate_headers: bool = True,
        token_ttl: float = 3600.0,
        faults: Iterable[FaultRule] | None = None,
        audience: str | None = None,
        access_log: bool = False,
        config: SandboxConfig | None = None,
    ) -> None:
        if config is None:
            config = SandboxConfig(
                seed=seed,
                read_rate=read_rate,
                write_rate=write_rate,
                burst=burst,
                rate_headers=rate_headers,
                token_ttl=token_ttl,
                faults=tuple(faults or ()),
                audience=audience,
            )
        self._host = host
        self._port = port
        self._access_log = access_log
        self._app = create_app(config)
        self._emulator: Emulator = self._app[EMULATOR_KEY]
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._all_interfaces = False

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start listening.

        Raises:
            RuntimeError: when already started.
            OSError: when the address cannot be bound.
        """
        if self._runner is not None:
            raise RuntimeError("SandboxServer is already running")
        runner = web.AppRunner(
            self._app,
            access_log=logging.getLogger("aiohttp.access") if self._access_log else None,
            handle_signals=False,
            # Handlers are short; do not keep a test waiting for a slow client on exit.
            shutdown_timeout=1.0,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        # A host of both families ("", "localhost") binds one socket each, in no set order
        # (and, for port 0, each on its own port): the IPv4 one is named.
        host, port = min((address[:2] for address in runner.addresses), key=lambda a: ":" in a[0])
        self._runner = runner
        # A wildcard address is where the server listens, not one a client can reach (and
        # the SDK refuses plain http to any host but a loopback one): this machine reaches
        # it at the loopback address of the same family.
        self._all_interfaces = _unspecified(host)
        if self._all_interfaces:
            host = "::1" if ":" in host else "127.0.0.1"
        self._url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        if self._emulator.config.base_url is None and not self._all_interfaces:
            # On every interface, each client reaches it by its own name for this machine:
            # hrefs then follow each request's Host.
            self._emulator.base_url = self._url

    async def close(self) -> None:
        """Stop listening and close every connection; safe to call twice."""
        runner, self._runner = self._runner, None
        self._url = None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> SandboxServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- what a client needs -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:54321`` (paths start with ``/v1``).

        For a server on every interface, the loopback address (``http://127.0.0.1:…``, or
        ``http://[::1]:…`` for ``::``): a URL of ``0.0.0.0`` reaches nothing.

        Raises:
            RuntimeError: before :meth:`start` and after :meth:`close`.
        """
        if self._url is None:
            raise RuntimeError("SandboxServer is not running; use 'async with' or start()")
        return self._url

    @property
    def all_interfaces(self) -> bool:
        """True when the server listens on every interface (a wildcard ``host``).

        :attr:`url` is then the loopback address; other machines reach the server at this
        machine's own name or address.
        """
        return self._all_interfaces

    @property
    def token_url(self) -> str:
        """The OAuth token endpoint, ``{url}/oauth/token``."""
        return f"{self.url}/oauth/token"

    @property
    def api_keys(self) -> tuple[str, ...]:
        """The emulator-only static API keys; each is a separate rate-limit principal."""
        return self._emulator.seed.api_keys

    @property
    def api_key(self) -> str:
        """The first API key."""
        return self._emulator.seed.api_keys[0]

    @property
    def client_id(self) -> str:
        """The OAuth client id."""
        return self._emulator.seed.client_id

    @property
    def client_secret(self) -> str:
        """The OAuth client secret (emulator-only)."""
        return self._emulator.seed.client_secret

    @property
    def admin_token(self) -> str:
        """The bearer token of the ``/__sandbox/`` admin API."""
        return self._emulator.seed.admin_token

    @property
    def seed(self) -> Seed:
        """Everything derived from the seed: users, teams, catalog, credentials."""
        return self._emulator.seed

    @property
    def users(self) -> tuple[SeedUser, ...]:
        """The seeded users (ids, names, emails, personal team, teams)."""
        return self._emulator.seed.users

    @property
    def teams(self) -> tuple[SeedTeam, ...]:
        """The seeded teams (personal teams first, then shared ones)."""
        return self._emulator.seed.teams

    @property
    def state(self) -> SandboxState:
        """The live in-memory store, for tests to inspect (do not modify it)."""
        return self._emulator.state

    @property
    def app(self) -> web.Application:
        """The aiohttp application being served."""
        return self._app

    @property
    def config(self) -> SandboxConfig:
        """The start-up settings."""
        return self._emulator.config

    # --- admin operations (same as the /__sandbox/ endpoints) ---------------------------------

    def reset(self) -> None:
        """Go back to the seed data (see ``POST /__sandbox/reset``)."""
        self._emulator.reset()

    def set_member(self, team_id: int, user_id: int, role: Role = "member") -> None:
        """Make a user an owner or a member of a team.

        Args:
            team_id: The team.
            user_id: The user.
            role: ``"member"`` or ``"owner"``.

        Raises:
            LookupError: for an unknown team or user.
            ValueError: for an unknown role.
        """
        self._emulator.set_member(team_id, user_id, role)

    def remove_member(self, team_id: int, user_id: int) -> None:
        """Remove a user from a team.

        Args:
            team_id: The team.
            user_id: The user.

        Raises:
            LookupError: for an unknown team or user.
            ValueError: when the user is the team's last owner.
        """
        self._emulator.set_member(team_id, user_id, None)

    def counters(self) -> dict[str, object]:
        """Return the request counters (see ``GET /__sandbox/counters``).

        Returns:
            Requests by status and route, faults, 429s, replays, contracts per team.
        """
        return self._emulator.counters_json()

    @property
    def faults(self) -> tuple[FaultRule, ...]:
        """The current fault rules."""
        return self._emulator.faults.rules

    def set_faults(self, rules: Iterable[FaultRule], seed: int | None = None) -> None:
        """Replace the fault rules at run time.

        Args:
            rules: The new rules; empty switches faults off.
            seed: A new fault RNG seed; None keeps the RNG stream.
        """
        self._emulator.set_faults(rules, seed)

    @property
    def limits(self) -> RateLimits:
        """The current rate limits."""
        return self._emulator.limiter.limits

    def set_limits(
        self,
        *,
        read_rate: float | Unchanged | None = UNCHANGED,
        write_rate: float | Unchanged | None = UNCHANGED,
        burst: float | Unchanged | None = UNCHANGED,
        rate_headers: bool | Unchanged = UNCHANGED,
    ) -> RateLimits:
        """Change the rate limits at run time; settings not given stay as they are.

        Args:
            read_rate: Reads per second per principal, None for unlimited.
            write_rate: Writes per second per principal, None for unlimited.
            burst: Bucket capacity, None for one second's worth of the rate.
            rate_headers: Whether to send rate-limit headers.

        Returns:
            The new limits.

        Raises:
            ValueError: for a non-positive rate or a burst below 1.
        """
        return self._emulator.set_limits(
            read_rate=read_rate, write_rate=write_rate, burst=burst, rate_headers=rate_headers
        )
