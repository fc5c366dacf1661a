"""The contractsdk pytest plugin (registered through the ``pytest11`` entry point).

Fixtures, both function-scoped and async. With pytest-asyncio installed they are its
fixtures, so they work in its default (strict) mode as in auto mode; without it, plain
async fixtures for another plugin that runs them (anyio's, say):

* ``sandbox_server``: a running :class:`~contractsdk.sandbox.SandboxServer` on a free
  loopback port, seeded with 0, with the real sandbox's 25/s limits turned off so tests are
  fast. Override the fixture ``sandbox_options`` (a dict of ``SandboxServer`` keyword
  arguments) to change that.
* ``sandbox_client``: a :class:`~contractsdk.ContractClient` bound to that server with its
  first API key, retries off unless you override ``sandbox_client_options``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from contractsdk._client import ContractClient
from contractsdk.sandbox import SandboxServer

__all__ = ["sandbox_client", "sandbox_client_options", "sandbox_options", "sandbox_server"]


def _async_fixture(function: Callable[..., Any]) -> Any:
    """Declare an async fixture: pytest-asyncio's if it is installed, else a plain one.

    A plain ``pytest.fixture`` over an async generator runs only in pytest-asyncio's auto
    mode; in its default strict mode the test fails with "requested an async fixture ...
    with no plugin or hook that handled it".
    """
    try:
        import pytest_asyncio
    except ImportError:
        return pytest.fixture(function)
    return pytest_asyncio.fixture(function)


@pytest.fixture
def sandbox_options() -> dict[str, Any]:
    """Keyword arguments for the ``sandbox_server`` fixture's SandboxServer."""
    return {"seed": 0, "read_rate": None, "write_rate": None}


@pytest.fixture
def sandbox_client_options() -> dict[str, Any]:
    """Keyword arguments for the ``sandbox_client`` fixture's ContractClient."""
    return {"rate_limits": None, "retries": None}


@_async_fixture
async def sandbox_server(sandbox_options: dict[str, Any]) -> AsyncIterator[SandboxServer]:
    """A running emulator of the service on 127.0.0.1 (stopped after the test)."""
    async with SandboxServer(**sandbox_options) as server:
        yield server


@_async_fixture
async def sandbox_client(
    sandbox_server: SandboxServer, sandbox_client_options: dict[str, Any]
) -> AsyncIterator[ContractClient]:
    """A ContractClient bound to ``sandbox_server`` (closed after the test)."""
    async with ContractClient(
        api_key=sandbox_server.api_key, base_url=sandbox_server.url, **sandbox_client_options
    ) as client:
        yield client
