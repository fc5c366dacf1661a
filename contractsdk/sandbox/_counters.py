"""Request counters, read by tests and benchmarks through ``GET /__sandbox/counters``.

Counted: every ``/v1`` and ``/oauth/token`` request (admin requests are not), by status
actually sent, by route template; injected faults by kind; 429s; idempotent replays;
contracts created. Counting is a few dictionary increments per request.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class Counters:
    """Mutable request counters."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Set every counter back to zero."""
        self.requests = 0
        self.by_status: Counter[int] = Counter()
        self.by_route: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.rate_limited = 0
        self.idempotent_replays = 0
        self.contracts_created = 0

    def record(self, route: str, status: int | None) -> None:
        """Count one finished request.

        Args:
            route: ``"METHOD /route/{template}"``.
            status: The status sent, or None when the connection was dropped.
        """
        self.requests += 1
        self.by_route[route] += 1
        if status is not None:
            self.by_status[status] += 1
            if status == 429:
                self.rate_limited += 1

    def snapshot(self, contracts_per_team: dict[int, int]) -> dict[str, Any]:
        """Return the counters as JSON.

        Args:
            contracts_per_team: Live contracts per team, from the store.

        Returns:
            The counters; dictionary keys are strings, as JSON requires.
        """
        return {
            "requests": self.requests,
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
            "by_route": dict(sorted(self.by_route.items())),
            "rate_limited": self.rate_limited,
            "faults": dict(sorted(self.faults.items())),
            "idempotent_replays": self.idempotent_replays,
            "contracts_created": self.contracts_created,
            "contracts_per_team": {str(k): v for k, v in sorted(contracts_per_team.items())},
        }
