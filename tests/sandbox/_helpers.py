"""Small raw-HTTP helpers shared by the sandbox tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import attrs
import pytest
from aiohttp import web
from multidict import CIMultiDictProxy

from contractsdk.sandbox import SandboxServer
from contractsdk.sandbox._app import EMULATOR_KEY

SPRING_KEYS = {"timestamp", "status", "error", "message", "path"}


@attrs.frozen
class Reply:
    """A finished response: status, headers and the whole body."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def spring(self, status: int) -> str:
        """Assert a Spring-style error body with ``status``; return its message."""
        assert self.status == status, (self.status, self.body[:500])
        data = self.json()
        assert set(data) == SPRING_KEYS, data
        assert data["status"] == status
        assert isinstance(data["message"], str)
        return str(data["message"])


class Api:
    """Raw HTTP calls against a sandbox, with its first API key unless told otherwise."""

    def __init__(
        self, server: SandboxServer, session: aiohttp.ClientSession, token: str | None = None
    ) -> None:
        self.server = server
        self.session = session
        self.token = token if token is not None else server.api_key

    def with_token(self, token: str) -> Api:
        return Api(self.server, self.session, token)

    async def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
        auth: bool = True,
    ) -> Reply:
        sent = dict(headers or {})
        if auth and "Authorization" not in sent:
            sent["Authorization"] = f"Bearer {self.token}"
        url = path if path.startswith("http") else self.server.url + path
        async with self.session.request(
            method, url, json=json_body, data=data, headers=sent
        ) as response:
            return Reply(response.status, response.headers, await response.read())

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.call("GET", path, **kwargs)

    async def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return await self.call("POST", path, json_body=body, **kwargs)

    async def patch(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return await self.call("PATCH", path, json_body=body, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> Reply:
        return await self.call("DELETE", path, **kwargs)

    async def admin(self, method: str, path: str, body: Any = None) -> Reply:
        return await self.call(
            method,
            path,
            json_body=body,
            headers={"Authorization": f"Bearer {self.server.admin_token}"},
        )

    async def create_contract(
        self, team_id: int, user_id: int, template_id: int, fields: Any = None, **extra: Any
    ) -> Reply:
        body: dict[str, Any] = {"created_by_user_id": user_id, "template_id": template_id}
        if fields is not None:
            body["fields"] = fields
        body.update(extra)
        return await self.post(f"/v1/teams/{team_id}/contracts", body)


def ast_template_id(server: SandboxServer, newest: bool = True) -> int:
    """The id of the newest (or oldest) Assured Shorthold Tenancy template."""
    ids = server.seed.catalog.types[0].template_ids
    return ids[0] if newest else ids[-1]


def nda_template_id(server: SandboxServer) -> int:
    """The id of the newest NDA template."""
    return server.seed.catalog.types[1].template_ids[0]


def shared_team(server: SandboxServer, name: str) -> int:
    """The id of a seeded shared team by name."""
    return next(t.id for t in server.teams if t.name == name)


def use_clock(
    server: SandboxServer, clock: Callable[[], float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make the emulator's tokens age and its rate-limit buckets refill by the test's clock.

    The emulator's ``Authenticator`` and ``RateLimiter`` take a clock but ``SandboxServer``
    passes none; ``app[EMULATOR_KEY]`` is the documented way in. Call it before the first
    request: a bucket made on the real clock would not refill on another one.
    """
    emulator = server.app[EMULATOR_KEY]
    monkeypatch.setattr(emulator.auth, "_clock", clock)
    monkeypatch.setattr(emulator.limiter, "_clock", clock)


def contract_id(reply: Reply) -> int:
    """The contract id from a create reply's Location header."""
    return int(reply.headers["Location"].rsplit("/", 1)[1])


async def raw_request(url: str, request: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send bytes on a fresh connection to ``http://host:port``; return status and body.

    For requests no HTTP client would send (header bytes that are not UTF-8, for instance).
    Send ``Connection: close``: the answer is read until the server closes.
    """
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    answer = b""
    try:
        writer.write(request)
        await writer.drain()
        for _ in range(10_000):  # bounded: the answers here are far below 10,000 reads
            chunk = await asyncio.wait_for(reader.read(65536), timeout)
            if not chunk:
                break
            answer += chunk
    except ConnectionResetError:
        # aiohttp closes after answering a request it cannot parse; bytes of ours it
        # never read make the kernel reset the connection. The answer must be in by then.
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionResetError):
            await writer.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", head)
    assert match is not None, f"no HTTP answer (connection dropped?) to {request[:200]!r}"
    return int(match.group(1)), body


@contextlib.asynccontextmanager
async def served(app: web.Application) -> AsyncIterator[str]:
    """Serve an emulator app on 127.0.0.1 (a free port) and give its ``http://host:port``."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
