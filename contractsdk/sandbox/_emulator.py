"""The emulator behind one aiohttp application: its components and its admin operations.

The admin operations exist twice — as ``/__sandbox/`` endpoints and as methods of
``SandboxServer`` — and both call the methods here, so they cannot drift apart.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Literal

from aiohttp import web

from ._auth import Authenticator
from ._config import SandboxConfig
from ._counters import Counters
from ._faults import FaultInjector, FaultRule
from ._idempotency import IdempotencyStore
from ._ratelimit import RateLimiter, RateLimits
from ._seed import Seed, build_seed
from ._store import SandboxState, Team

Role = Literal["owner", "member"]


class Unchanged(enum.Enum):
    """Marks a setting that :meth:`Emulator.set_limits` must leave as it is."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED


class Emulator:
    """All the state of one emulator: data, credentials, limiter, faults, counters.

    Args:
        config: The start-up settings.
    """

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.seed: Seed = build_seed(config.seed)
        self.state = SandboxState(self.seed)
        self.auth = Authenticator(
            self.seed.api_keys,
            self.seed.client_id,
            self.seed.client_secret,
            config.token_ttl,
            config.audience,
        )
        self.limiter = RateLimiter(config.limits())
        fault_seed = config.seed if config.fault_seed is None else config.fault_seed
        self.faults = FaultInjector(config.faults, fault_seed)
        self.idempotency = IdempotencyStore(config.idempotency_ttl, config.idempotency_capacity)
        self.counters = Counters()
        self.base_url: str | None = config.base_url

    def origin(self, request: web.Request) -> str:
        """Return the origin to build absolute hrefs with (service-api.md §5: hrefs are absolute).

        Args:
            request: The request being answered.

        Returns:
            The configured base URL, else the request's own scheme and host.
        """
        return self.base_url or f"{request.scheme}://{request.host}"

    # --- admin operations ----------------------------------------------------------------

    def reset(self) -> None:
        """Go back to the seed data.

        Restores users, teams and memberships, deletes every contract, forgets
        idempotency keys, zeroes the counters, refills every rate-limit bucket and
        restarts the fault RNG. Issued OAuth tokens, the current limits and the current
        fault rules are kept.
        """
        self.state.reset()
        self.idempotency.clear()
        self.counters.reset()
        self.limiter.reset()
        self.faults.reset()

    def set_member(self, team_id: int, user_id: int, role: Role | None) -> Team:
        """Make a user an owner or member of a team, or remove them from it.

        Args:
            team_id: The team.
            user_id: The user.
            role: ``"owner"``, ``"member"``, or None to remove the user.

        Returns:
            The team after the change.

        Raises:
            LookupError: when the team or the user does not exist.
            ValueError: for an unknown role, or when the team would lose its last owner.
        """
        team = self.state.teams.get(team_id)
        if team is None:
            raise LookupError(f"Team with id {team_id} not found")
        if user_id not in self.state.users:
            raise LookupError(f"User with id {user_id} not found")
        if role not in ("owner", "member", None):
            raise ValueError(f'role must be "owner" or "member", got {role!r}')
        self.state.set_role(team, user_id, role)
        return team

    def counters_json(self) -> dict[str, Any]:
        """Return the request counters.

        Returns:
            See :meth:`Counters.snapshot`.
        """
        return self.counters.snapshot(self.state.contracts_per_team())

    def set_faults(self, rules: Iterable[FaultRule], seed: int | None = None) -> None:
        """Replace the fault rules.

        Args:
            rules: The new rules; empty switches faults off.
            seed: A new fault RNG seed; None keeps the RNG stream.
        """
        self.faults.set_rules(rules, seed)

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
            The new settings.

        Raises:
            ValueError: for a non-positive rate or a burst below 1.
        """
        old = self.limiter.limits
        limits = RateLimits(
            old.read_rate if isinstance(read_rate, Unchanged) else read_rate,
            old.write_rate if isinstance(write_rate, Unchanged) else write_rate,
            old.burst if isinstance(burst, Unchanged) else burst,
            old.rate_headers if isinstance(rate_headers, Unchanged) else rate_headers,
        )
        self.limiter.set_limits(limits)
        return limits
