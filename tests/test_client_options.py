"""Per-call options (with_options), proxies from the environment, and a second event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from contractsdk import ConfigurationError, ContractClient, Request, Response, Retries, ServerError
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

USER = {"id": 7, "email": "ada@example.com"}


def recorder() -> tuple[MockTransport, list[Request]]:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return json_response(200, USER)

    return MockTransport(handler), seen


async def test_with_options_changes_only_its_own_calls() -> None:
    """Timeout, headers and retries apply to the derived client's calls, not the parent's."""
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport, timeout=10) as client:
        slow = client.with_options(timeout=300, headers={"X-Trace": "abc"})
        await slow.users.get(7)
        await client.users.get(7)
        assert slow.users._client is slow
    assert [request.timeout for request in seen] == [300, 10]
    assert seen[0].headers.get("X-Trace") == "abc"
    assert "X-Trace" not in seen[1].headers
    assert seen[0].headers["Authorization"] == f"Bearer {API_KEY}"


async def test_with_options_shares_the_pool_caches_and_stats() -> None:
    """One transport, one limiter, one token, one set of counters for the family."""
    transport, _ = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        derived = client.with_options(timeout=5)
        assert derived._transport is client._transport
        assert derived._limiter is client._limiter
        assert derived._auth is client._auth
        assert derived._term_sets is client._term_sets
        assert derived.identity_fields._sets is client.identity_fields._sets
        await derived.users.get(7)
        assert client.stats.requests == 1


async def test_retries_per_call_keep_the_budget() -> None:
    """A derived client's own retry policy draws on the parent's retry budget."""
    calls = 0

    def flaky(request: Request) -> Response:
        nonlocal calls
        calls += 1
        return json_response(503 if calls < 3 else 200, USER)

    async def no_sleep(_: float) -> None:
        return None

    async with ContractClient(
        api_key=API_KEY, transport=MockTransport(flaky), sleep=no_sleep
    ) as client:
        patient = client.with_options(retries=Retries(attempts=5))
        await patient.users.get(7)
        assert calls == 3
        assert patient._retrier is not None and client._retrier is not None
        assert patient._retrier.budget is client._retrier.budget
        once = client.with_options(retries=None)
        calls = 0
        with pytest.raises(ServerError, match="503"):
            await once.users.get(7)
        assert calls == 1


async def test_retries_leave_a_bare_429s_wait_to_the_limiter_when_there_is_one() -> None:
    """A limiter's pause is a bare 429's only wait; without one, it backs off as any failure."""
    transport = MockTransport(lambda request: json_response(200, USER))
    async with ContractClient(api_key=API_KEY, transport=transport) as limited:
        assert limited._retrier is not None and limited._retrier.paced
        derived = limited.with_options(retries=Retries(attempts=5))
        assert derived._retrier is not None and derived._retrier.paced
    async with ContractClient(api_key=API_KEY, transport=transport, rate_limits=None) as bare:
        assert bare._retrier is not None and not bare._retrier.paced


async def test_closing_the_derived_client_keeps_the_parent_open() -> None:
    """aclose() on a derived client closes nothing shared; the parent's closes both."""
    transport, _ = recorder()
    client = ContractClient(api_key=API_KEY, transport=transport)
    derived = client.with_options(timeout=5)
    await derived.aclose()
    with pytest.raises(ConfigurationError, match="closed"):
        await derived.users.get(7)
    await client.users.get(7)  # still open
    other = client.with_options(timeout=6)
    await client.aclose()
    with pytest.raises(ConfigurationError, match="closed"):
        await other.users.get(7)
    with pytest.raises(ConfigurationError, match="closed"):
        client.with_options(timeout=1)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"timeout": 0}, "timeout"),
        ({"headers": {"Authorization": "Bearer other"}}, "Authorization"),
        ({"headers": {"Idempotency-Key": "k"}}, "Idempotency-Key"),
        ({"headers": {"X-Bad": "a\r\nInjected: yes"}}, "cannot be sent"),
        ({"headers": {"Bad Name": "x"}}, "cannot be sent"),
    ],
)
async def test_bad_options_are_refused(options: dict[str, object], match: str) -> None:
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        with pytest.raises(ConfigurationError, match=match):
            client.with_options(**options)  # type: ignore[arg-type]
    assert seen == []


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """A forward HTTP proxy that answers every request itself, recording its request line."""
    lines: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines.append(head.split(b"\r\n", 1)[0].decode())
            body = json.dumps(USER).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", lines
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("trust_env", [True, False])
async def test_proxies_come_from_the_environment_only_when_asked(
    trust_env: bool,
    proxy: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With trust_env=True a request goes through HTTP_PROXY; by default it never does."""
    url, lines = proxy
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)
    async with SandboxServer() as server:
        ada, base = server.users[0].id, server.url
        async with ContractClient(
            api_key=server.api_key, base_url=base, trust_env=trust_env
        ) as client:
            user = await client.users.get(ada)
    if trust_env:
        assert user.id == 7  # the proxy's answer, not the emulator's
        assert lines == [f"GET {base}/v1/users/{ada} HTTP/1.1"]
    else:
        assert user.id == ada
        assert lines == []


def test_a_client_used_on_a_second_event_loop_says_so() -> None:
    """Two asyncio.run() calls with one client: a clear error, not 'Event loop is closed'."""

    async def main() -> None:
        async with SandboxServer() as server:
            client = ContractClient(api_key=server.api_key, base_url=server.url)
            await client.users.get(server.users[0].id)

            def second_loop() -> None:
                async def again() -> None:
                    await client.users.get(server.users[0].id)

                asyncio.run(again())

            with pytest.raises(ConfigurationError, match="another event loop"):
                await asyncio.to_thread(second_loop)
            await client.aclose()

    asyncio.run(main())
