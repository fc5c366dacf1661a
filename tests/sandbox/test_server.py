"""SandboxServer's lifecycle and configuration."""

from __future__ import annotations

import aiohttp
import pytest

from contractsdk.sandbox import FaultRule, SandboxConfig, SandboxServer

from ._helpers import Api


async def test_url_needs_a_running_server() -> None:
    """The URL exists only while running; credentials are available before start."""
    server = SandboxServer()
    assert server.api_key.startswith("sandbox-key-")
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    await server.start()
    try:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.token_url == server.url + "/oauth/token"
        with pytest.raises(RuntimeError, match="already running"):
            await server.start()
    finally:
        await server.close()
    await server.close()  # a second close is harmless
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url


async def test_busy_port_raises_oserror() -> None:
    """Starting on a port that is taken raises OSError and leaves nothing running."""
    async with SandboxServer() as first:
        port = int(first.url.rsplit(":", 1)[1])
        second = SandboxServer(port=port)
        with pytest.raises(OSError):  # noqa: PT011  # the errno varies by platform
            await second.start()
        with pytest.raises(RuntimeError):
            _ = second.url


async def test_full_config_and_access_log(session: aiohttp.ClientSession) -> None:
    """A SandboxConfig can be passed whole; access_log=True still serves normally."""
    config = SandboxConfig(
        seed=4, read_rate=None, faults=[FaultRule("GET /v1/users", status_500=1.0)]
    )
    async with SandboxServer(config=config, access_log=True) as server:
        assert server.config is config
        assert server.seed.seed == 4
        assert server.faults == config.faults
        (await Api(server, session).get("/v1/users")).spring(500)


@pytest.mark.parametrize(
    "kwargs",
    [{"token_ttl": 0.0}, {"read_rate": -1.0}, {"burst": 0.0}, {"max_body_size": 10}],
)
def test_invalid_config_is_refused(kwargs: dict[str, float]) -> None:
    """Invalid settings raise ValueError at construction."""
    with pytest.raises(ValueError, match="must"):
        SandboxConfig(**kwargs)  # type: ignore[arg-type]


async def test_servers_with_one_seed_share_ids_but_not_state(
    session: aiohttp.ClientSession,
) -> None:
    """Two servers with the same seed have the same ids and independent stores."""
    async with SandboxServer(read_rate=None) as a, SandboxServer(read_rate=None) as b:
        assert [u.id for u in a.users] == [u.id for u in b.users]
        user = a.users[0]
        await Api(a, session).post(f"/v1/users/{user.id}/teams", {"name": "Only in a"})
        assert len(a.state.teams) == len(b.state.teams) + 1
