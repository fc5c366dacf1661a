"""A bounded, seeded fuzz of the emulator: hostile requests get a 4xx, never a 5xx.

Each seed sends a few hundred random requests over loopback: random methods, paths built
from the real routes with real, random and malformed ids, random headers (credentials,
``Content-Type``, ``Content-Encoding``, ``Idempotency-Key``) and random bodies (plausible
JSON with wrong types, lone surrogates, NaN, huge numbers, deep nesting, undecodable bytes,
bodies over the size limit). A fifth of them are written as raw bytes on a socket, so that
request lines and header values can hold bytes no HTTP client would send.

Asserted for every request: an answer arrives (no dropped connection, no hang), its status
is below 500 (faults are off), an error body sent by the application is JSON, and a
rejected request (4xx) leaves the emulator's data, limits and fault rules unchanged.
Afterwards every stored user, team and contract still renders.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from typing import Any

import aiohttp
import attrs
import pytest

from contractsdk.sandbox import EMULATOR_KEY, SandboxServer

from ._fuzzer import _Fuzzer
from ._helpers import raw_request

#: Each seed runs once, in one of the two ways hrefs are made (from the base URL, or from
#: each request's Host): a seed run both ways sends the same requests twice, and covers
#: the same lines of the emulator but the few that build an href.
SEEDS = ((1, False), (2, True), (3, False))
REQUESTS_PER_SEED = 300
RAW_SHARE = 0.2
# A guard against a hang, never a timing assertion: loopback answers in milliseconds.
ANSWER_TIMEOUT = 10.0

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND")


def _snapshot(server: SandboxServer) -> Any:
    """Everything a request could change that a rejected request must not."""
    state = server.state
    return (
        [attrs.astuple(u) for u in state.users.values()],
        [attrs.astuple(t) for t in state.teams.values()],
        [attrs.astuple(c) for c in state.contracts.values()],
        {team: list(contracts) for team, contracts in state.team_contracts.items()},
        [attrs.astuple(c) for c in state.collaborators.values()],
        {contract: list(parties) for contract, parties in state.contract_collaborators.items()},
        dict(state.signatures),
        server.limits,
        server.faults,
    )


def _add_parties(server: SandboxServer) -> None:
    """Two contracts with a party on each side, so the party routes meet live data."""
    state = server.state
    user = server.users[0]
    for ctype in server.seed.catalog.types[:2]:
        contract = state.add_contract(user.personal_team_id, ctype.template_ids[0], user.id, {})
        for side, party in (("first", user), ("second", server.users[1])):
            state.add_collaborator(
                contract,
                user_id=party.id,
                inviter_id=user.id,
                roles=["party"],
                side=side,
                values={},
            )


def _restore_settings(server: SandboxServer) -> None:
    """Undo an accepted admin change to limits or faults, so the fuzz keeps them off."""
    server.set_faults([])
    server.set_limits(read_rate=None, write_rate=None, burst=None, rate_headers=True)


def _raw_bytes(
    fuzzer: _Fuzzer, method: str, path: str, headers: dict[str, str], body: bytes
) -> bytes:
    rng = fuzzer.rng
    target = path.encode("utf-8", "surrogatepass")
    if rng.random() < 0.3:
        target += rng.choice((b"\xff", b"\xed\xa0\x80", b"%ED%A0%80", b"\xc3", b"/\x80"))
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"Connection: close"]
    host = rng.choice((b"127.0.0.1", b"\xff", b"exa mple", b"[::1", b"\xed\xa0\x80"))
    lines.append(b"Host: " + host)
    for name, value in headers.items():
        raw = value.encode()
        if rng.random() < 0.3:
            raw += rng.choice((b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x7f"))
        lines.append(name.encode() + b": " + raw)
    if len(body) > 65536:
        body = body[:65536]  # see raw_request: a large unread body ends in a reset
    lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _compress_some(fuzzer: _Fuzzer, body: bytes | None, headers: dict[str, str]) -> bytes | None:
    if body is not None and fuzzer.rng.random() < 0.05:
        # aiohttp inflates request bodies; valid gzip of the body, or garbage.
        headers["Content-Encoding"] = "gzip"
        body = gzip.compress(body) if fuzzer.rng.random() < 0.5 else b"\x1f\x8b\x08garbage"
    return body


@pytest.mark.parametrize(
    ("seed", "hrefs_from_host"),
    SEEDS,
    ids=[f"{seed}-{'hrefs-from-host' if host else 'base-url'}" for seed, host in SEEDS],
)
async def test_random_bad_requests_never_get_a_5xx(
    server: SandboxServer, session: aiohttp.ClientSession, seed: int, hrefs_from_host: bool
) -> None:
    """Random hostile requests: an answer below 500 each, and no change when rejected."""
    if hrefs_from_host:
        # As an app embedded without a base_url: hrefs come from each request's Host.
        server.app[EMULATOR_KEY].base_url = None
    assert server.faults == ()  # every 5xx below is a bug, none is injected
    _add_parties(server)
    fuzzer = _Fuzzer(server, random.Random(seed))
    fuzzer.learn()
    rng = fuzzer.rng
    failures: list[str] = []
    before = _snapshot(server)
    previous = "nothing"
    for index in range(REQUESTS_PER_SEED):
        route_method, template = rng.choices(fuzzer.routes, fuzzer.weights)[0]
        method = route_method if rng.random() < 0.75 else rng.choice(_METHODS)
        path, ids = fuzzer.path(template)
        headers = fuzzer.headers(template)
        data = fuzzer.body_bytes(template, ids)
        if template.endswith("/signature") and rng.random() < 0.6:
            data = fuzzer.signature_body(headers)
        raw = rng.random() < RAW_SHARE
        if raw:
            request = _raw_bytes(fuzzer, method, path, headers, data or b"")
            shown = repr(request[:300])
            status, body = await raw_request(server.url, request, ANSWER_TIMEOUT)
        else:
            data = _compress_some(fuzzer, data, headers)
            shown = f"{method} {path} {headers} {data[:300] if data else data!r}"
            try:
                async with session.request(
                    method,
                    server.url + path,
                    # BytesIO: aiohttp warns about large raw bytes bodies.
                    data=None if data is None else io.BytesIO(data),
                    headers=headers,
                    skip_auto_headers=("Content-Type",),
                    timeout=aiohttp.ClientTimeout(total=ANSWER_TIMEOUT),
                ) as response:
                    status, body = response.status, await response.read()
            except aiohttp.ClientError as exc:
                failures.append(f"#{index} dropped: {exc!r}: {shown} (after {previous})")
                before = _snapshot(server)
                continue
        after = _snapshot(server)
        if status >= 500:
            failures.append(f"#{index} {status}: {shown} -> {body[:300]!r}")
        elif 400 <= status < 500 and after != before:
            failures.append(f"#{index} {status} changed the state: {shown} -> {body[:200]!r}")
        # Raw requests may be refused by aiohttp's parser (bad bytes in the request line),
        # below the application, with its own text/plain 400.
        if not raw and status >= 400 and method != "HEAD":
            try:
                json.loads(body)
            except ValueError:
                failures.append(f"#{index} {status} without a JSON body: {shown} -> {body[:200]!r}")
        if 200 <= status < 300 and template.startswith("/__sandbox/"):
            _restore_settings(server)
            after = _snapshot(server)
        fuzzer.learn()
        before = after
        previous = f"{status} to {shown[:200]}"
    assert not failures, f"{len(failures)} of {REQUESTS_PER_SEED}:\n" + "\n".join(failures[:60])
    await _everything_still_renders(server, session)


async def _everything_still_renders(server: SandboxServer, session: aiohttp.ClientSession) -> None:
    """No accepted request left data behind that a GET cannot answer."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    state = server.state
    paths = ["/v1/users"]
    paths += [f"/v1/users/{u}" for u in state.users] + [f"/v1/users/{u}/teams" for u in state.users]
    paths += [f"/v1/teams/{t}" for t in state.teams] + [
        f"/v1/teams/{t}/contracts" for t in state.teams
    ]
    for contract in state.contracts:
        paths += [
            f"/v1/contracts/{contract}{tail}" for tail in ("", "/pdf", "/html", "/collaborators")
        ]
    paths += [f"/v1/collaborators/{c}" for c in state.collaborators]
    for path in paths:
        async with session.get(server.url + path, headers=headers) as response:
            assert response.status == 200, (path, await response.read())
