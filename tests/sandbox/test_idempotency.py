"""Idempotency-Key on POST: replay, conflicts, in-flight duplicates, scope and bounds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from contractsdk.sandbox import EMULATOR_KEY, SandboxServer
from contractsdk.sandbox._idempotency import IdempotencyStore

from ._helpers import Api, ast_template_id


def _create_body(server: SandboxServer, name: str = "Flat") -> dict[str, Any]:
    return {
        "created_by_user_id": server.users[0].id,
        "template_id": ast_template_id(server),
        "fields": [{"name": "contract_name", "value": name}],
    }


def _path(server: SandboxServer) -> str:
    return f"/v1/teams/{server.users[0].personal_team_id}/contracts"


async def test_same_key_replays_the_first_result(api: Api, server: SandboxServer) -> None:
    """The same key returns the same status, Link and Location, and creates one contract."""
    key = {"Idempotency-Key": "create-flat-1"}
    first = await api.post(_path(server), _create_body(server), headers=key)
    second = await api.post(_path(server), _create_body(server), headers=key)
    assert first.status == second.status == 201
    assert first.body == second.body
    assert first.headers["Location"] == second.headers["Location"]
    assert "Idempotent-Replayed" not in first.headers
    assert second.headers["Idempotent-Replayed"] == "true"
    assert len(server.state.contracts) == 1
    counters = server.counters()
    assert counters["idempotent_replays"] == 1
    assert counters["contracts_created"] == 1


async def test_replay_tolerates_reordered_json(api: Api, server: SandboxServer) -> None:
    """The same JSON with keys in another order counts as the same request."""
    key = {"Idempotency-Key": "reordered", "Content-Type": "application/json"}
    body = _create_body(server)
    reordered = dict(reversed(list(body.items())))
    await api.call("POST", _path(server), data=json.dumps(body), headers=key)
    reply = await api.call("POST", _path(server), data=json.dumps(reordered), headers=key)
    assert reply.status == 201
    assert len(server.state.contracts) == 1


async def test_same_key_with_another_body_is_422(api: Api, server: SandboxServer) -> None:
    """Reusing a key for a different request gives 422 and creates nothing more."""
    key = {"Idempotency-Key": "k-422"}
    await api.post(_path(server), _create_body(server, "A"), headers=key)
    (await api.post(_path(server), _create_body(server, "B"), headers=key)).spring(422)
    other_path = f"/v1/users/{server.users[0].id}/teams"
    (await api.post(other_path, {"name": "T"}, headers=key)).spring(422)
    assert len(server.state.contracts) == 1


async def test_errors_are_replayed_too(api: Api, server: SandboxServer) -> None:
    """A processed 4xx is stored and replayed like a success (as Stripe does)."""
    key = {"Idempotency-Key": "bad-fields"}
    body = _create_body(server)
    body["fields"] = [{"name": "contract_nope", "value": "x"}]
    first = await api.post(_path(server), body, headers=key)
    first.spring(400)
    second = await api.post(_path(server), body, headers=key)
    assert (second.status, second.body) == (first.status, first.body)


async def test_keys_are_scoped_per_credential(api: Api, server: SandboxServer) -> None:
    """The same key sent with another API key is a different request."""
    key = {"Idempotency-Key": "shared-key"}
    await api.post(_path(server), _create_body(server), headers=key)
    other = api.with_token(server.api_keys[1])
    assert (await other.post(_path(server), _create_body(server), headers=key)).status == 201
    assert len(server.state.contracts) == 2


async def test_key_length_is_checked(api: Api, server: SandboxServer) -> None:
    """A key over 255 characters (or blank) gives 400."""
    long_key = {"Idempotency-Key": "k" * 256}
    (await api.post(_path(server), _create_body(server), headers=long_key)).spring(400)
    (await api.post(_path(server), _create_body(server), headers={"Idempotency-Key": " "})).spring(
        400
    )
    assert server.state.contracts == {}


async def test_key_on_get_is_ignored(api: Api, server: SandboxServer) -> None:
    """Only POST is idempotency-keyed; a GET with a key is served normally."""
    key = {"Idempotency-Key": "reads"}
    for _ in range(2):
        reply = await api.get("/v1/users", headers=key)
        assert reply.status == 200
        assert "Idempotent-Replayed" not in reply.headers


async def test_duplicate_while_in_flight_is_409(
    api: Api, server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """A second request with a key whose first request is still uploading gets 409."""
    body = json.dumps(_create_body(server)).encode()
    gate = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield body[:10]
        await gate.wait()
        yield body[10:]

    headers = {"Idempotency-Key": "in-flight", "Content-Type": "application/json"}
    first = asyncio.create_task(api.call("POST", _path(server), data=slow_body(), headers=headers))
    store = server.app[EMULATOR_KEY].idempotency
    for _ in range(500):  # until the server has seen the first request (bounded: ~5 s)
        if len(store):
            break
        await asyncio.sleep(0.01)
    second = await api.call("POST", _path(server), data=body, headers=headers)
    second.spring(409)
    gate.set()
    assert (await asyncio.wait_for(first, 10)).status == 201
    assert len(server.state.contracts) == 1


async def test_reset_forgets_keys(api: Api, server: SandboxServer) -> None:
    """After an admin reset the same key creates again."""
    key = {"Idempotency-Key": "after-reset"}
    await api.post(_path(server), _create_body(server), headers=key)
    server.reset()
    reply = await api.post(_path(server), _create_body(server), headers=key)
    assert "Idempotent-Replayed" not in reply.headers
    assert len(server.state.contracts) == 1


def test_store_is_bounded_and_expires() -> None:
    """Oldest keys are evicted beyond capacity, and records expire after the TTL."""
    now = [0.0]
    store = IdempotencyStore(ttl=10.0, capacity=3, clock=lambda: now[0])
    for key in "abcd":
        record = store.begin("p", key)
        store.finish(record, 201, b"{}", {})
    assert len(store) == 3
    assert store.get("p", "a") is None
    assert store.get("p", "d") is not None
    now[0] = 11.0
    assert store.get("p", "d") is None
