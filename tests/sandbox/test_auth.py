"""Bearer authentication on /v1 and the OAuth client-credentials token endpoint (§2)."""

from __future__ import annotations

import base64

import aiohttp
import pytest

from contractsdk.sandbox import SandboxServer
from tests._fakeclock import FakeClock

from ._helpers import Api, use_clock


async def test_missing_token_is_401_with_www_authenticate(api: Api, server: SandboxServer) -> None:
    """No Authorization header gives 401, WWW-Authenticate: Bearer and a Spring body."""
    reply = await api.get(f"/v1/users/{server.users[0].id}", auth=False)
    reply.spring(401)
    assert reply.headers["WWW-Authenticate"] == "Bearer"


async def test_bad_token_is_401_invalid_token(api: Api, server: SandboxServer) -> None:
    """An unknown bearer token gives 401 with error="invalid_token"."""
    reply = await api.with_token("sandbox-key-wrong").get(f"/v1/users/{server.users[0].id}")
    reply.spring(401)
    assert reply.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')


async def test_other_schemes_and_empty_tokens_are_401(api: Api, server: SandboxServer) -> None:
    """Basic credentials, an empty bearer token or the admin token do not open /v1."""
    path = f"/v1/users/{server.users[0].id}"
    for header in ("Basic dXNlcjpwYXNz", "Bearer ", f"Bearer {server.admin_token}"):
        (await api.get(path, headers={"Authorization": header})).spring(401)


async def test_unknown_paths_need_auth_first(api: Api) -> None:
    """An unauthenticated request to an unknown /v1 path gets 401, not 404 (security first)."""
    (await api.get("/v1/nothing-here", auth=False)).spring(401)


async def test_every_api_key_and_any_case_bearer_works(api: Api, server: SandboxServer) -> None:
    """Each emulator API key is accepted, with the scheme in any case."""
    path = f"/v1/users/{server.users[0].id}"
    assert len(server.api_keys) >= 2
    for key in server.api_keys:
        assert all(k.startswith("sandbox-key-") for k in server.api_keys)
        assert (await api.get(path, headers={"Authorization": f"bearer {key}"})).status == 200


async def _token(
    session: aiohttp.ClientSession, server: SandboxServer, *, form: bool = False, **overrides: str
) -> tuple[int, dict[str, object]]:
    body = {
        "grant_type": "client_credentials",
        "client_id": server.client_id,
        "client_secret": server.client_secret,
        "audience": server.url,
    }
    body.update(overrides)
    kwargs: dict[str, object] = {"data": body} if form else {"json": body}
    async with session.post(server.token_url, **kwargs) as response:
        return response.status, await response.json()


async def test_token_from_json_body_opens_the_api(
    api: Api, server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """A JSON client-credentials grant returns {access_token, token_type, expires_in}."""
    status, grant = await _token(session, server)
    assert status == 200
    assert grant["token_type"] == "Bearer"
    assert grant["expires_in"] == 3600
    token = str(grant["access_token"])
    assert token.count(".") == 2  # JWT-looking
    assert (await api.with_token(token).get(f"/v1/users/{server.users[0].id}")).status == 200


async def test_token_from_form_body(
    api: Api, server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """An application/x-www-form-urlencoded grant works too."""
    status, grant = await _token(session, server, form=True)
    assert status == 200
    token = str(grant["access_token"])
    assert (await api.with_token(token).get("/v1/users")).status == 200


async def test_token_with_basic_client_authentication(
    server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """Client id and secret may come in an HTTP Basic header (RFC 6749 §2.3.1)."""
    basic = base64.b64encode(f"{server.client_id}:{server.client_secret}".encode()).decode()
    async with session.post(
        server.token_url,
        data={"grant_type": "client_credentials"},
        headers={"Authorization": f"Basic {basic}"},
    ) as response:
        assert response.status == 200
        assert response.headers["Cache-Control"] == "no-store"


async def test_wrong_secret_is_401_access_denied(
    server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """A wrong client secret or unknown client gives 401 {"error": "access_denied"}."""
    status, body = await _token(session, server, client_secret="sandbox-secret-wrong")
    assert status == 401
    assert body["error"] == "access_denied"
    assert "error_description" in body
    status, body = await _token(session, server, client_id="someone-else")
    assert status == 401


async def test_wrong_grant_or_malformed_body_is_400(
    server: SandboxServer, session: aiohttp.ClientSession
) -> None:
    """An unsupported grant type or an undecodable body gives 400 with an OAuth error."""
    status, body = await _token(session, server, grant_type="password")
    assert (status, body["error"]) == (400, "unsupported_grant_type")
    async with session.post(
        server.token_url, data=b"{nope", headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 400
        assert (await response.json())["error"] == "invalid_request"


async def test_tokens_expire_after_the_ttl(
    session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With token_ttl=1 a token works until one second has passed, then is "expired"."""
    clock = FakeClock()
    async with SandboxServer(token_ttl=1.0, read_rate=None) as server:
        use_clock(server, clock, monkeypatch)
        api = Api(server, session)
        issued = clock.now
        _status, grant = await _token(session, server)
        assert grant["expires_in"] == 1
        holder = api.with_token(str(grant["access_token"]))
        path = f"/v1/users/{server.users[0].id}"
        assert (await holder.get(path)).status == 200
        clock.now = issued + 0.999
        assert (await holder.get(path)).status == 200
        clock.now = issued + 1.0
        reply = await holder.get(path)
        assert "expired" in reply.spring(401).lower()
        assert "invalid_token" in reply.headers["WWW-Authenticate"]


async def test_audience_is_checked_when_configured(session: aiohttp.ClientSession) -> None:
    """With an audience configured, another audience gives 403 access_denied."""
    async with SandboxServer(audience="https://sandbox.legislate.tech") as server:
        status, body = await _token(session, server, audience="https://elsewhere.example")
        assert (status, body["error"]) == (403, "access_denied")
        status, _ = await _token(session, server, audience="https://sandbox.legislate.tech")
        assert status == 200
