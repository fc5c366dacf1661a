"""What the command line's tests share: a command run in-process against an emulator.

The emulator is the ``server`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

from contractsdk.cli._app import Invocation, parse
from contractsdk.sandbox import SandboxServer

__all__ = ["AST", "bulk_create", "cli"]

#: The tenancy contract type of the emulator's seed.
AST = "Assured Shorthold Tenancy Agreement"


async def cli(server: SandboxServer, *argv: str) -> int:
    """Run one command in this event loop (the emulator keeps serving) and return its code."""
    invocation = parse([*argv, "--base-url", server.url, "--api-key", server.api_key])
    assert isinstance(invocation, Invocation), invocation
    return await invocation.run()


def bulk_create(server: SandboxServer, source: Path, *more: str) -> list[str]:
    """``bulk create SOURCE`` of tenancies into Acme Legal by Ada, quietly, then ``more``."""
    created_by = str(server.users[0].id)
    return [
        *("bulk", "create", str(source), "--team", "Acme Legal", "--contract-type", AST),
        *("--created-by", created_by, "-q", *more),
    ]
