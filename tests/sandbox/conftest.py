"""Fixtures for the sandbox emulator's tests: a running server and a raw HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from contractsdk.sandbox import SandboxServer

from ._helpers import Api


@pytest.fixture
async def server() -> AsyncIterator[SandboxServer]:
    """A sandbox on a free loopback port, without rate limits (tests that need them set them)."""
    async with SandboxServer(read_rate=None, write_rate=None) as running:
        yield running


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain aiohttp session (the SDK is deliberately not used here)."""
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
def api(server: SandboxServer, session: aiohttp.ClientSession) -> Api:
    """Raw HTTP calls to ``server`` authenticated with its first API key."""
    return Api(server, session)
