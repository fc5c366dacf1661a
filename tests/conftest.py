"""Shared fixtures: a clean environment, the fake service and a client bound to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from contractsdk import ContractClient
from contractsdk._config import ENV_VARS
from contractsdk.testing import MockTransport
from tests._fakeservice import FakeService
from tests._redisserver import RedisServer

#: An obviously fake key; tests look for it in logs and reprs.
API_KEY = "test-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep a developer's CONTRACTSDK_* variables out of the tests."""
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def transport(service: FakeService) -> MockTransport:
    return MockTransport(service)


@pytest.fixture
async def client(transport: MockTransport) -> AsyncIterator[ContractClient]:
    async with ContractClient(
        rate_limits=None, api_key=API_KEY, environment="sandbox", transport=transport
    ) as c:
        yield c


@pytest.fixture(scope="session")
def _redis_process() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server(_redis_process: RedisServer) -> Iterator[RedisServer]:
    """A real redis-server on 127.0.0.1, empty at the start of each test (and up)."""
    if _redis_process._process is None:
        _redis_process.start()
    _redis_process.flush()
    yield _redis_process
    if _redis_process._process is None:  # a test took it away: bring it back for the next
        _redis_process.start()


def pytest_configure(config: pytest.Config) -> None:
    """Load the contractsdk plugin when the package is not installed (its entry point)."""
    if not config.pluginmanager.has_plugin("contractsdk"):
        from contractsdk.testing import _plugin

        config.pluginmanager.register(_plugin, "contractsdk")
