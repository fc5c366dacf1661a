"""Shared fixtures: a clean environment, the fake service and a client bound to it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

# The SDK and the fakes are imported where a fixture needs them: xdist's controller loads
# this file too, runs no test, and started the workers 0.3 s later for importing them.
if TYPE_CHECKING:
    from contractsdk import ContractClient
    from contractsdk.sandbox import SandboxServer
    from contractsdk.testing import MockTransport
    from tests._fakeservice import FakeService
    from tests._redisserver import RedisClusterNodes, RedisServer

#: ``CONTRACTSDK_TEST_LOOP=uvloop`` runs the tests' event loops on uvloop (CI does, once),
#: as services behind uvicorn do; the fake clock's tests skip there (see tests/_fakeclock.py).
LOOP_VARIABLE = "CONTRACTSDK_TEST_LOOP"

#: An obviously fake key; tests look for it in logs and reprs.
API_KEY = "test-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep a developer's CONTRACTSDK_* variables out of the tests."""
    from contractsdk._config import ENV_VARS

    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def service() -> FakeService:
    from tests._fakeservice import FakeService

    return FakeService()


@pytest.fixture
def transport(service: FakeService) -> MockTransport:
    from contractsdk.testing import MockTransport

    return MockTransport(service)


@pytest.fixture
async def client(transport: MockTransport) -> AsyncIterator[ContractClient]:
    from contractsdk import ContractClient

    async with ContractClient(
        rate_limits=None, api_key=API_KEY, environment="sandbox", transport=transport
    ) as c:
        yield c


@pytest.fixture
async def server() -> AsyncIterator[SandboxServer]:
    """An emulator whose limits are far above what a test sends (the CLI's tests).

    Its rate headers let the client pace at them at once; an emulator without limits sends
    none, and the client would start slowly (20 requests/s) to learn them.
    """
    from contractsdk.sandbox import SandboxServer

    async with SandboxServer(port=0, read_rate=1000, write_rate=1000) as running:
        yield running


@pytest.fixture(scope="session")
def _redis_process() -> Iterator[RedisServer]:
    from tests._redisserver import RedisServer

    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _redis_cluster_nodes() -> Iterator[RedisClusterNodes]:
    from tests._redisserver import RedisClusterNodes

    cluster = RedisClusterNodes()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_cluster(_redis_cluster_nodes: RedisClusterNodes) -> RedisClusterNodes:
    """A Redis Cluster of three real redis-server nodes on 127.0.0.1, empty at each test."""
    _redis_cluster_nodes.flush()
    return _redis_cluster_nodes


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
    """Load the contractsdk plugin (its fixtures) where tests run.

    pyproject.toml's addopts turn its entry point off (``-p no:contractsdk``), so that
    xdist's controller, which runs none, does not import the SDK for it; the plugin is
    the same module users get through the entry point.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None and config.getoption("numprocesses", None):
        return  # xdist's controller
    if os.environ.get(LOOP_VARIABLE) == "uvloop":
        import asyncio
        import importlib

        uvloop = importlib.import_module("uvloop")  # installed by CI for that run alone
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    from contractsdk.testing import _plugin

    if not config.pluginmanager.is_registered(_plugin):
        config.pluginmanager.register(_plugin, "contractsdk-fixtures")
