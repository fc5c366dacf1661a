"""What the tables of ``bench_ratelimit`` share: a row's :class:`Setup`, the SDK's call.

Table 1 is in ``_ratelimit_limit.py``, tables 2 and 3 in ``_ratelimit_nolimit.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from benchmarks._harness import Emulator, Target
from contractsdk import ContractClient


@dataclass(frozen=True)
class Setup:
    """Everything a row needs to know."""

    url: str
    api_key: str
    target: Target
    rate: float
    burst: int
    n: int
    concurrency: int


def creator(client: ContractClient, target: Any) -> Callable[[int], Coroutine[Any, Any, None]]:
    """The SDK's create call for row ``i``, as every contractsdk row of both tables makes it."""

    async def create(i: int) -> None:
        await client.contracts.create(
            target.team_id,
            template_id=target.template_id,
            created_by=target.user_id,
            values=target.values(i),
        )

    return create


def elapsed_cpu(emulator: Emulator, before: float | None) -> float | None:
    after = emulator.cpu_seconds()
    return None if before is None or after is None else after - before
