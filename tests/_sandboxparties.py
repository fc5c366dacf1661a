"""Shared helpers of the end-to-end party tests: templates by type, a signature, counters."""

from __future__ import annotations

from typing import Any

from contractsdk import ContractClient
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import signature_png

NDA = "Non-Disclosure Agreement"

SIGNATURE = signature_png()


async def template_of(client: ContractClient, team_id: int, kind_name: str) -> int:
    """The newest template version of a contract type available in a team."""
    kinds = await client.contract_types.list(team_id)
    kind = next(k for k in kinds if k.name == kind_name)
    template = await client.templates.latest(team_id, kind.id)
    assert template.id is not None
    return template.id


def counters(server: SandboxServer) -> dict[str, Any]:
    return server.counters()


def route_count(server: SandboxServer, route: str) -> int:
    by_route = counters(server)["by_route"]
    assert isinstance(by_route, dict)
    count = by_route.get(route, 0)
    assert isinstance(count, int)
    return count
