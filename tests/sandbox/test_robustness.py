"""Malformed input gives 4xx Spring bodies, never a 500 or a crash; the catch-all gives 500."""

from __future__ import annotations

import gzip
import io
import json
import logging
from typing import cast

import aiohttp
import pytest
from aiohttp import web

from contractsdk.sandbox import EMULATOR_KEY, SandboxConfig, SandboxServer, create_app
from contractsdk.sandbox._wire import ApiError, read_body

from ._helpers import Api, ast_template_id, raw_request, served


def _contracts_path(server: SandboxServer) -> str:
    return f"/v1/teams/{server.users[0].personal_team_id}/contracts"


@pytest.mark.parametrize(
    ("data", "content_type", "status"),
    [
        pytest.param(b"{not json", "application/json", 400, id="bad-json"),
        pytest.param(b"", "application/json", 400, id="empty"),
        pytest.param(b"{}", None, 415, id="octet-stream"),
        pytest.param(b"[1, 2]", "application/json", 400, id="array"),
        pytest.param(b'"text"', "application/json", 400, id="string"),
        pytest.param(b"\xff\xfe{}", "application/json", 400, id="bad-utf8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "application/json", 400, id="deep"),
        pytest.param(
            b'{"template_id": ' + b"9" * 5000 + b"}", "application/json", 400, id="bigint"
        ),
        pytest.param(b"a=1", "application/x-www-form-urlencoded", 415, id="form"),
        pytest.param(b"{}", "text/plain", 415, id="text-plain"),
    ],
)
async def test_malformed_bodies(
    api: Api, server: SandboxServer, data: bytes, content_type: str | None, status: int
) -> None:
    """Undecodable, non-object or non-JSON bodies give 400/415."""
    headers = {"Content-Type": content_type} if content_type else {}
    reply = await api.call("POST", _contracts_path(server), data=data, headers=headers)
    reply.spring(status)
    assert server.state.contracts == {}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param({}, "created_by_user_id is required", id="missing-user"),
        pytest.param({"created_by_user_id": "1", "template_id": 1}, "must be an integer", id="str"),
        pytest.param(
            {"created_by_user_id": True, "template_id": 1}, "must be an integer", id="bool"
        ),
        pytest.param(
            {"created_by_user_id": 1.5, "template_id": 1}, "must be an integer", id="float"
        ),
        pytest.param({"created_by_user_id": [1], "template_id": 1}, "got array", id="array"),
        pytest.param({"created_by_user_id": 2**63, "template_id": 1}, "64-bit", id="overflow"),
        pytest.param({"created_by_user_id": 1, "template_id": None}, "template_id", id="null"),
    ],
)
async def test_wrong_types_in_the_create_body(
    api: Api, server: SandboxServer, body: dict[str, object], fragment: str
) -> None:
    """Missing keys, string/bool/float/array ids and int64 overflow give 400."""
    assert fragment in (await api.post(_contracts_path(server), body)).spring(400)


async def test_wrong_types_elsewhere(api: Api, server: SandboxServer) -> None:
    """Teams, users and PATCH bodies with wrong types give 400."""
    user = server.users[0]
    (await api.post(f"/v1/users/{user.id}/teams", {"name": 5})).spring(400)
    (await api.post(f"/v1/users/{user.id}/teams", {"name": ["a"]})).spring(400)
    (await api.post("/v1/users", {"email": {}, "first_name": "a", "last_name": "b"})).spring(400)
    created = await api.create_contract(user.personal_team_id, user.id, ast_template_id(server))
    href = created.headers["Location"]
    (await api.patch(href, {"fields": "contract_pets=petsYes"})).spring(400)
    (await api.patch(href, {"fields": [None]})).spring(400)
    (await api.patch(href, [{"name": "contract_pets"}])).spring(400)


async def test_huge_body_is_413(api: Api, server: SandboxServer) -> None:
    """A body over 1 MiB gives 413 (with or without an Idempotency-Key)."""
    big = b'{"x": "' + b"a" * (2 * 1024 * 1024) + b'"}'
    for headers in ({}, {"Idempotency-Key": "big"}):
        reply = await api.call(
            "POST",
            _contracts_path(server),
            data=io.BytesIO(big),
            headers={"Content-Type": "application/json", **headers},
        )
        reply.spring(413)
    reply = await api.call(
        "POST", "/oauth/token", data=io.BytesIO(big), headers={"Content-Type": "application/json"}
    )
    reply.spring(413)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/users/abc", 400),
        ("/v1/users/1.5", 400),
        ("/v1/users/99999999999999999999", 400),
        ("/v1/users/9223372036854775808", 400),
        ("/v1/users/9223372036854775807", 404),
        ("/v1/users/-5", 404),
        ("/v1/teams/%00/contracts", 400),
        ("/v1/contracts/0x10", 400),
        ("/v1/terms/ ", 400),
        ("/v1/nothing", 404),
        ("/v1/users/1/teams/2/extra", 404),
        ("/nothing", 404),
        ("/", 404),
    ],
)
async def test_bad_ids_and_unknown_paths(api: Api, path: str, status: int) -> None:
    """Non-numeric or int64-overflowing ids give 400; unknown paths 404, all as JSON."""
    (await api.get(path)).spring(status)


async def test_wrong_method_is_405(api: Api, server: SandboxServer) -> None:
    """A known path with an unsupported method gives 405 with an Allow header."""
    reply = await api.call("PUT", f"/v1/users/{server.users[0].id}")
    reply.spring(405)
    assert "GET" in reply.headers["Allow"]


async def test_unicode_values_round_trip(api: Api, server: SandboxServer) -> None:
    """Non-ASCII values are stored and returned unchanged (and the PDF still renders)."""
    user = server.users[0]
    fields = [{"name": "contract_name", "value": "Ünïcödé 住宅 🏠"}]
    created = await api.create_contract(
        user.personal_team_id, user.id, ast_template_id(server), fields
    )
    href = created.headers["Location"]
    assert (await api.get(href)).json()["contract_name"] == "Ünïcödé 住宅 🏠"
    pdf = await api.get(f"{href}/pdf")
    assert pdf.status == 200
    assert pdf.body.startswith(b"%PDF-")


async def test_unexpected_exceptions_become_a_spring_500(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler bug is answered with a Spring 500 body and logged, not a crash."""
    app = create_app(SandboxConfig(read_rate=None))

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("bug")

    app.router.add_get("/v1/broken", broken)
    async with served(app) as base:
        url = f"{base}/v1/broken"
        api_key = app[EMULATOR_KEY].seed.api_keys[0]
        with caplog.at_level(logging.ERROR, logger="contractsdk.sandbox"):
            async with session.get(url, headers={"Authorization": f"Bearer {api_key}"}) as r:
                assert r.status == 500
                body = await r.json()
        assert body["message"] == "Internal Server Error"
        assert "unexpected error" in caplog.text
        assert body["path"] == "/v1/broken"


async def test_embedded_app_builds_hrefs_from_the_request(session: aiohttp.ClientSession) -> None:
    """Without a base_url, create_app's hrefs use the request's own host."""
    app = create_app()
    async with served(app) as url:
        emulator = app[EMULATOR_KEY]
        user = emulator.seed.users[0]
        headers = {"Authorization": f"Bearer {emulator.seed.api_keys[0]}", "Host": "example.test"}
        async with session.get(f"{url}/v1/users/{user.id}", headers=headers) as r:
            data = await r.json()
        assert data["_links"]["self"]["href"] == f"http://example.test/v1/users/{user.id}"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"name": "\\ud800"}', id="escape"),
        pytest.param(b'{"name": "ok\\udfff"}', id="low-escape"),
        pytest.param(b'{"name": "\xed\xa0\x80"}', id="cesu-8-bytes"),
        pytest.param(b'{"name": "ok", "\\ud800": 1}', id="in-a-key"),
    ],
)
async def test_a_lone_surrogate_team_name_is_a_400_and_changes_nothing(
    api: Api, server: SandboxServer, data: bytes
) -> None:
    """Issue 9: a team name with a lone surrogate was stored, answered 500, then poisoned reads."""
    user = server.users[0]
    teams_before = dict(server.state.teams)
    headers = {"Content-Type": "application/json"}
    (await api.call("POST", f"/v1/users/{user.id}/teams", data=data, headers=headers)).spring(400)
    team_id = user.personal_team_id
    (await api.call("PATCH", f"/v1/teams/{team_id}", data=data, headers=headers)).spring(400)
    assert server.state.teams == teams_before
    assert server.state.teams[team_id].name == "Personal Team"
    assert (await api.get(f"/v1/users/{user.id}/teams")).status == 200
    assert (await api.get(f"/v1/teams/{team_id}")).status == 200


async def test_lone_surrogates_are_refused_in_every_body(api: Api, server: SandboxServer) -> None:
    """User fields, contract field values and token parameters with a lone surrogate give 4xx."""
    user = server.users[0]
    headers = {"Content-Type": "application/json"}
    bad_user = b'{"email": "a@b.co", "first_name": "\\udc00", "last_name": "x"}'
    (await api.call("POST", "/v1/users", data=bad_user, headers=headers)).spring(400)
    bad_contract = (
        b'{"created_by_user_id": %d, "template_id": %d, '
        b'"fields": [{"name": "contract_name", "value": "\\ud83d"}]}'
        % (user.id, ast_template_id(server))
    )
    path = _contracts_path(server)
    (await api.call("POST", path, data=bad_contract, headers=headers)).spring(400)
    assert server.state.contracts == {}
    assert len(server.state.users) == len(server.users)
    token = await api.call(
        "POST",
        "/oauth/token",
        data=b'{"grant_type": "client_credentials", "client_id": "\\ud800", "client_secret": "x"}',
        headers=headers,
        auth=False,
    )
    assert token.status == 400
    assert token.json()["error"] == "invalid_request"


async def test_a_surrogate_pair_escape_is_one_character(api: Api, server: SandboxServer) -> None:
    """A valid surrogate pair escape decodes to its character and is stored."""
    user = server.users[0]
    data = b'{"name": "Home \\ud83c\\udfe0"}'
    reply = await api.call(
        "POST",
        f"/v1/users/{user.id}/teams",
        data=data,
        headers={"Content-Type": "application/json"},
    )
    assert reply.status == 201
    assert reply.json()["name"] == "Home 🏠"


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999"])
async def test_non_finite_numbers_are_not_json(
    api: Api, server: SandboxServer, literal: bytes
) -> None:
    """NaN, Infinity and numbers beyond a double are a JSON parse error (400), anywhere."""
    for data in (b'{"name": ' + literal + b"}", b'{"name": "x", "z": [' + literal + b"]}"):
        reply = await api.call(
            "POST",
            f"/v1/users/{server.users[0].id}/teams",
            data=data,
            headers={"Content-Type": "application/json"},
        )
        assert "JSON parse error" in reply.spring(400)
    faults = await api.call(
        "PUT",
        "/__sandbox/faults",
        data=b'[{"route": "*", "latency": ' + literal + b"}]",
        headers={
            "Authorization": f"Bearer {server.admin_token}",
            "Content-Type": "application/json",
        },
    )
    faults.spring(400)
    assert server.faults == ()


def _raw(method: str, path: str, headers: dict[str, bytes], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1".encode(), b"Host: 127.0.0.1", b"Connection: close"]
    lines += [name.encode() + b": " + value for name, value in headers.items()]
    lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def test_header_bytes_that_are_not_utf8_get_a_4xx(server: SandboxServer) -> None:
    """Non-UTF-8 bytes in Authorization, Content-Type or Idempotency-Key: a 4xx, never a 500."""
    key = f"Bearer {server.api_key}".encode()
    admin = f"Bearer {server.admin_token}".encode()
    json_type = b"application/json"
    team_path = f"/v1/users/{server.users[0].id}/teams"
    cases = [
        # The admin token check encoded the header as strict UTF-8.
        ("GET", "/__sandbox/info", {"Authorization": admin + b"\xff"}, 401),
        ("GET", "/__sandbox/info", {"Authorization": b"Bearer \xed\xa0\x80"}, 401),
        # Content-Type is echoed in the 415 message.
        ("POST", team_path, {"Authorization": key, "Content-Type": b"application/\xff"}, 415),
        # A key that is not text is refused rather than remembered.
        (
            "POST",
            team_path,
            {"Authorization": key, "Content-Type": json_type, "Idempotency-Key": b"k\xff"},
            400,
        ),
    ]
    for method, path, headers, status in cases:
        answer_status, body = await raw_request(
            server.url, _raw(method, path, headers, b'{"name": "t"}')
        )
        assert answer_status == status, (headers, body)
        assert json.loads(body)["status"] == status
    assert len(server.state.teams) == len(server.teams)
    assert len(server.app[EMULATOR_KEY].idempotency) == 0


async def test_malformed_basic_credentials_are_invalid_request(server: SandboxServer) -> None:
    """Basic credentials that are not ASCII base64 give 400 invalid_request, not a 500."""
    for credentials in (b"Basic \xc3\xa9\xc3\xa9", b"Basic !!!", b"Basic /w=="):
        status, body = await raw_request(
            server.url,
            _raw(
                "POST",
                "/oauth/token",
                {"Authorization": credentials, "Content-Type": b"application/json"},
                b'{"grant_type": "client_credentials"}',
            ),
        )
        assert (status, json.loads(body)["error"]) == (400, "invalid_request"), body


async def test_a_compressed_body_is_415_and_the_connection_ends_openly(
    api: Api, server: SandboxServer
) -> None:
    """A Content-Encoding body gets 415 with Connection: close, and the next request works.

    aiohttp inflated it: garbage with an Idempotency-Key gave a 500, and garbage no handler
    read closed a keep-alive connection after the answer, so the next request failed.
    """
    user = server.users[0]
    for body in (gzip.compress(b'{"name": "zipped"}'), b"\x1f\x8b\x08garbage"):
        for path, key in ((f"/v1/users/{user.id}/teams", "zip"), ("/v1/nothing", None)):
            headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
            if key is not None:
                headers["Idempotency-Key"] = key
            reply = await api.call("POST", path, data=body, headers=headers)
            assert "Content-Encoding 'gzip'" in reply.spring(415)
            assert reply.headers["Connection"] == "close"
            assert (await api.get(f"/v1/users/{user.id}")).status == 200
    assert len(server.state.teams) == len(server.teams)


async def test_read_body_turns_a_broken_payload_into_a_400() -> None:
    """A body aiohttp cannot decode (RequestPayloadError) is the client's 400, not a 500."""

    class Broken:
        async def read(self) -> bytes:
            raise web.RequestPayloadError("bad chunk")

    with pytest.raises(ApiError) as caught:
        await read_body(cast(web.Request, Broken()))
    assert caught.value.status == 400


async def test_an_embedded_app_refuses_a_host_it_cannot_write(
    session: aiohttp.ClientSession,
) -> None:
    """Without a base_url, a Host that is not host[:port] gives 400 before anything changes.

    Hrefs are built from Host: non-UTF-8 bytes there made POST /v1/users create the user
    and then answer 500 while writing its Location.
    """
    app = create_app(SandboxConfig(read_rate=None, write_rate=None))
    async with served(app) as url:
        emulator = app[EMULATOR_KEY]
        users_before = dict(emulator.state.users)
        body = b'{"email": "new@example.com", "first_name": "N", "last_name": "U"}'
        for bad_host in (b"\xff", b"ex\xed\xa0\x80.test", b"exa mple", b"a/b", b"[::1"):
            request = (
                b"POST /v1/users HTTP/1.1\r\nHost: " + bad_host + b"\r\nConnection: close\r\n"
                b"Authorization: Bearer " + emulator.seed.api_keys[0].encode() + b"\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            ) + body
            status, answer = await raw_request(url, request)
            assert status == 400, (bad_host, answer)
            assert json.loads(answer)["message"] == "Invalid Host header"
        assert emulator.state.users == users_before
        headers = {"Authorization": f"Bearer {emulator.seed.api_keys[0]}"}
        for good_host in ("example.test", "example.test:8080", "[::1]:80", "127.0.0.1"):
            async with session.get(
                f"{url}/v1/users", headers={**headers, "Host": good_host}
            ) as response:
                assert response.status == 200, good_host
