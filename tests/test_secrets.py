"""No credential a client holds is ever shown, whatever a hostile server echoes.

A server that echoes the API key, the client secret or the access token in every part of
its answers (the message, the body, a field of a 200) meets each kind of error the client
can raise, with each kind of credential, with DEBUG logging and every event hook on. Each
error's ``str``, ``repr``, pickle, traceback and attributes (``headers`` excepted: they are
the server's, kept as sent), each error chained to it (as cause or context), every log
line, every hook payload and the CLI's output are searched for the secrets.
"""

from __future__ import annotations

import contextlib
import copy
import html
import http.server
import json
import logging
import pickle
import secrets
import threading
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from contractsdk import (
    ApiKey,
    ClientCredentials,
    ConfigurationError,
    ContractClient,
    ContractSDKError,
    Request,
    Response,
)
from contractsdk._redact import REDACTED, scrub
from contractsdk.cli import main
from contractsdk.testing import MockTransport, json_response
from tests._hostilekit import chain_shown

API_KEY = "key-8f3a1c-echoed-by-a-hostile-server"
CLIENT_SECRET = "secret-77d2e0-echoed-by-a-hostile-server"
ACCESS_TOKEN = "token-51b9aa-echoed-by-a-hostile-server"
SECRETS = (API_KEY, CLIENT_SECRET, ACCESS_TOKEN)

#: Each case: what the API answers (status, body); a body's "{secret}" is the credential
#: the request carried. Every kind of error the client raises from an answer.
CASES: dict[str, tuple[int, str]] = {
    "400 json": (400, '{"message": "bad key {secret}", "error": "{secret}"}'),
    "401 json": (401, '{"message": "invalid token {secret}", "error": "Unauthorized"}'),
    "403 text": (403, "forbidden for {secret}"),
    "404 html": (404, "<html><title>no {secret}</title></html>"),
    "409 json": (409, '{"message": "{secret} conflicts"}'),
    "422 json": (422, '{"detail": "{secret}"}'),
    "429 json": (429, '{"message": "slow down {secret}"}'),
    "500 json": (500, '{"message": "crash {secret}", "trace": "Authorization: Bearer {secret}"}'),
    "200 bad model": (200, '{"id": "{secret}", "email": ["{secret}"]}'),
    "200 not json": (200, "not json {secret}"),
}


def _echo(status: int, template: str, secret: str) -> Response:
    body = template.replace("{secret}", secret).encode()
    kind = "application/json" if body[:1] in b"{[" else "text/html"
    headers = {"Content-Type": kind, "X-Echo": secret}  # headers are kept as sent
    return Response(status_code=status, headers=headers, content=body)


def _bearer(request: Request) -> str:
    return request.headers.get("Authorization", "").removeprefix("Bearer ")


def _credentials(kind: str) -> dict[str, Any]:
    if kind == "api key":
        return {"api_key": API_KEY}
    return {"credentials": ClientCredentials(client_id="id-1", client_secret=CLIENT_SECRET)}


def _assert_nothing_shows(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a credential shows in {where}: {text[:300]!r}"


def _outputs(error: BaseException) -> Iterator[tuple[str, str]]:
    yield "str", str(error)
    yield "repr", repr(error)
    yield "pickle", repr(pickle.dumps(error))
    yield "traceback", "".join(traceback.format_exception(error))
    yield from chain_shown(error)  # attributes, and every error chained, shown or not


@pytest.mark.parametrize("kind", ["api key", "client credentials"])
@pytest.mark.parametrize("case", sorted(CASES))
async def test_no_error_log_or_hook_shows_a_credential(
    kind: str, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    status, template = CASES[case]
    seen: list[str] = []

    def handler(request: Request) -> Response:
        if request.path == "/oauth/token":
            return json_response(200, {"access_token": ACCESS_TOKEN, "expires_in": 3600})
        return _echo(status, template, _bearer(request))

    def hook(payload: object) -> None:
        seen.append(repr(payload))
        if isinstance(payload, Response):
            seen.append(payload.text)

    hooks = {event: [hook] for event in ("request", "response", "retry", "throttle")}
    caplog.set_level(logging.DEBUG, logger="contractsdk")
    async with ContractClient(
        **_credentials(kind),
        base_url="http://127.0.0.1:9",
        transport=MockTransport(handler),
        event_hooks=hooks,
        rate_limits=None,
        sleep=_no_sleep,
    ) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
    for where, text in _outputs(caught.value):
        _assert_nothing_shows(f"the error's {where}", text)
    _assert_nothing_shows("the log", caplog.text)
    for text in seen:
        _assert_nothing_shows("a hook's payload", text)
    assert seen, "the hooks ran"


async def _no_sleep(_: float) -> None:
    return None


async def test_the_error_keeps_what_is_not_secret() -> None:
    """Scrubbing replaces the credential only: the rest of the message is as sent."""

    def handler(request: Request) -> Response:
        return _echo(401, '{"message": "invalid token {secret} for user 7"}', _bearer(request))

    async with ContractClient(
        api_key=API_KEY, base_url="http://127.0.0.1:9", transport=MockTransport(handler)
    ) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
    error: Any = caught.value
    assert error.service_message == f"invalid token {REDACTED} for user 7"
    assert error.headers["X-Echo"] == API_KEY  # the server's headers, as sent


def test_a_json_escaped_secret_is_scrubbed_too() -> None:
    """A secret with characters JSON escapes is found in a JSON body as sent."""
    secret = 'sec"ret/with\\quotes-123'
    client = ContractClient(api_key=secret, base_url="http://127.0.0.1:9")
    assert scrub(json.dumps({"echo": secret})) == json.dumps({"echo": REDACTED})
    del client


def _fresh(kind: str) -> str:
    """A credential of this test's own: no other test's client has it registered.

    The scrubber is one for the process, so a credential another test registered would be
    scrubbed here too, and hide a leak.
    """
    return f"{kind}-{secrets.token_hex(12)}"


#: A server's encodings of what it echoes: JSON with "/" escaped (Jackson, PHP), an HTML
#: page, a URL's query (each character but letters, digits and "_.-~" percent-encoded).
ENCODED_ECHOES: dict[str, tuple[str, Callable[[str], str]]] = {
    "json with \\/": (
        "application/json",
        lambda key: '{"message": "bad key", "echo": "ECHO"}'.replace(
            "ECHO", json.dumps(key)[1:-1].replace("/", "\\/")
        ),
    ),
    "html": ("text/html", lambda key: f"<html><p>bad key {html.escape(key)}</p></html>"),
    "percent-encoded": (
        "text/plain",
        lambda key: f"bad request: /v1/users/7?api_key={urllib.parse.quote(key, safe='')}",
    ),
}


@pytest.mark.parametrize("case", sorted(ENCODED_ECHOES))
async def test_an_encoded_echo_of_the_key_is_scrubbed(case: str) -> None:
    r"""A key echoed as JSON with \/, as HTML escapes it, or percent-encoded shows nowhere."""
    key = f'key/with+slash=and&amp-<{secrets.token_hex(8)}>"quoted"'
    content_type, make = ENCODED_ECHOES[case]

    def handler(request: Request) -> Response:
        body = make(_bearer(request)).encode()
        return Response(status_code=400, headers={"Content-Type": content_type}, content=body)

    async with ContractClient(
        api_key=key,
        base_url="http://127.0.0.1:9",
        transport=MockTransport(handler),
        rate_limits=None,
        retries=None,
    ) as client:
        with pytest.raises(ContractSDKError) as caught:
            await client.users.get(7)
        echoed = make(key)
        forms = {key, json.dumps(key)[1:-1], html.escape(key), urllib.parse.quote(key, safe="")}
        forms.add(json.dumps(key)[1:-1].replace("/", "\\/"))
        for where, text in _outputs(caught.value):
            for form in forms:
                assert form not in text, f"the key shows ({case}) in the error's {where}"
        assert REDACTED in caught.value.body  # type: ignore[attr-defined]
        assert echoed not in scrub(echoed)


def test_rich_shows_no_credential() -> None:
    """Rich's pretty printer reads attrs fields, not __repr__: the secrets are not among them."""
    pretty = pytest.importorskip("rich.pretty")
    key, secret = _fresh("key"), _fresh("secret")
    shown = [
        pretty.pretty_repr(ApiKey(key, environment="sandbox")),
        pretty.pretty_repr(ClientCredentials(client_id="id-1", client_secret=secret)),
        pretty.pretty_repr({"keys": [ApiKey(key)]}),
    ]
    for text in shown:
        assert key not in text and secret not in text, text
    assert "environment='sandbox'" in shown[0]  # the rest is still shown
    assert "client_id='id-1'" in shown[1]


def test_a_client_cannot_be_pickled() -> None:
    """Pickled, a client's bytes held its key: it refuses, and with_options() still copies it."""
    key = _fresh("key")
    client = ContractClient(api_key=key, base_url="http://127.0.0.1:9")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match="a ContractClient cannot be pickled"):
            pickle.dumps(client, protocol)
    with pytest.raises(TypeError, match="a ContractClient cannot be pickled"):
        copy.deepcopy(client)
    derived = client.with_options(timeout=5)
    assert derived._timeout == 5 and derived._root is client
    assert client._timeout == 60


class _JsonHandler(http.server.BaseHTTPRequestHandler):
    """A service answering JSON, with no access log."""

    def _answer(self, body: object, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class _EchoHandler(_JsonHandler):
    """A hostile service: every API call is refused, its message echoing the credential."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        secret = str(body.get("client_secret", ""))
        self._answer({"error": "invalid_client", "error_description": f"bad {secret}"}, 401)

    def do_GET(self) -> None:
        secret = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self._answer({"message": f"{secret} may not see this", "error": "Forbidden"}, 403)


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    # Polled often: shutdown() waits for the loop to look (every 0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize(
    "env",
    [
        {"CONTRACTSDK_API_KEY": API_KEY},
        {"CONTRACTSDK_CLIENT_ID": "id-1", "CONTRACTSDK_CLIENT_SECRET": CLIENT_SECRET},
    ],
    ids=["api key", "client credentials"],
)
def test_the_cli_never_prints_a_credential(
    env: dict[str, str],
    echo_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("CONTRACTSDK_API_KEY", "CONTRACTSDK_CLIENT_ID", "CONTRACTSDK_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CONTRACTSDK_USER_ID", "7")  # for the demo, against a real service
    for name, value in {**env, "CONTRACTSDK_BASE_URL": echo_server}.items():
        monkeypatch.setenv(name, value)
    for argv in (
        ["users", "get", "7"],
        ["users", "get", "7", "--json"],
        ["demo", "--base-url", echo_server, "--yes"],
    ):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0
        assert "error" in err
        _assert_nothing_shows(f"`contractsdk {' '.join(argv)}`", out + err)


class _SuccessEchoHandler(_JsonHandler):
    """A hostile service that answers every call, its values echoing the credential sent."""

    #: Every credential the service was sent (the API key, or each token it issued).
    sent: list[str]

    def do_POST(self) -> None:
        token = _fresh("token")  # issued to this test only
        self.sent.append(token)
        self._answer({"access_token": token, "expires_in": 3600})

    def do_GET(self) -> None:
        bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self.sent.append(bearer)
        if self.path.startswith("/v1/users/7/teams"):
            self._answer([{"id": 1, "name": f"team {bearer}"}])
        elif self.path.startswith("/v1/users/"):
            user = {"id": 7, "email": "a@b.example", "first_name": bearer, "last_name": "x"}
            self._answer(user)
        elif self.path.startswith("/v1/contracts/"):
            field = {"id": 11, "name": "note", "value": f"for {bearer}"}
            self._answer({"id": 1, "contract_name": f"deal {bearer}", "fields": [field]})
        else:
            self._answer({"message": "no such thing"}, status=404)


@pytest.mark.parametrize("kind", ["api key", "client credentials"])
def test_the_cli_never_prints_a_credential_a_successful_answer_echoes(
    kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 200 whose values echo the key or token: tables, pairs, JSON and the demo hide it."""

    class Handler(_SuccessEchoHandler):
        sent: list[str] = []  # noqa: RUF012  # this test's own

    handler = Handler
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for name in ("CONTRACTSDK_API_KEY", "CONTRACTSDK_CLIENT_ID", "CONTRACTSDK_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    if kind == "api key":
        monkeypatch.setenv("CONTRACTSDK_API_KEY", _fresh("key"))
    else:
        monkeypatch.setenv("CONTRACTSDK_CLIENT_ID", "id-1")
        monkeypatch.setenv("CONTRACTSDK_CLIENT_SECRET", _fresh("secret"))
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", url)
    printed: list[str] = []
    try:
        for argv in (
            ["users", "get", "7"],
            ["users", "get", "7", "--json"],
            ["teams", "list", "7"],
            ["contracts", "get", "1"],
            ["contracts", "get", "1", "--json"],
        ):
            assert main(argv) == 0, argv
            printed.append(capsys.readouterr().out)
        main(["demo", "--base-url", url, "--user-id", "7", "--yes"])  # stops at step 2
        printed.append(capsys.readouterr().out)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert handler.sent, "the service was asked"
    for text in printed:
        assert REDACTED in text, text
        for credential in handler.sent:
            assert credential not in text, text
    assert "1. Identify the user" in printed[-1]


REDIS_PASSWORD = "pw-3c9e1d-in-a-redis-url"

#: URLs redis-py cannot read, each with the password where its error would quote it: a
#: "/" or "#" in an unencoded password ends the host part, and what follows reads as a port.
BAD_REDIS_URLS = {
    "slash": f"redis://default:{REDIS_PASSWORD}/x@redis.internal:6379/0",
    "hash": f"redis://default:{REDIS_PASSWORD}#x@redis.internal:6379/0",
    "port": f"redis://default@redis.internal:{REDIS_PASSWORD}/0",
    # Read by redis-py, and wrongly: database 0, or an option that fails only on connecting.
    "database": f"redis://default:{REDIS_PASSWORD}@redis.internal:6379/{REDIS_PASSWORD}",
    "option": f"redis://default@redis.internal:6379/0?x{REDIS_PASSWORD}=1",
    # An option redis-py takes, with a value it refuses in its own words (quoting it).
    "value": f"rediss://default@redis.internal:6379/0?ssl_cert_reqs={REDIS_PASSWORD}",
    "protocol": f"redis://default:{REDIS_PASSWORD}@redis.internal:6379/0?protocol=4",
    # Taken by redis-py, and failing only on connecting, as Redis unreachable: a unix
    # socket named without a path (the name reads as the host), a TLS version it has not.
    "socket": f"unix://default:{REDIS_PASSWORD}@relative.sock",
    "tls version": f"rediss://default:{REDIS_PASSWORD}@redis.internal:6379/0?ssl_min_version=99",
}


@pytest.mark.parametrize("case", sorted(BAD_REDIS_URLS))
def test_a_redis_url_it_cannot_read_is_never_quoted(
    case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error says what to check, never the URL: it may hold the Redis password."""
    pytest.importorskip("redis")
    url = BAD_REDIS_URLS[case]
    with pytest.raises(ConfigurationError, match="redis URL not understood") as caught:
        ContractClient(api_key=API_KEY, base_url="http://127.0.0.1:9", redis=url)
    for where, text in _outputs(caught.value):
        assert REDIS_PASSWORD not in text, f"the Redis password shows in the error's {where}"
    monkeypatch.setenv("CONTRACTSDK_API_KEY", API_KEY)
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", "http://127.0.0.1:9")
    for argv in (["--redis", url, "users", "get", "7"], ["users", "get", "7", "--redis", url]):
        assert main(argv) != 0
        out, err = capsys.readouterr()
        assert "redis URL not understood" in err
        assert REDIS_PASSWORD not in out + err
    monkeypatch.setenv("CONTRACTSDK_REDIS_URL", url)
    assert main(["users", "get", "7"]) != 0
    out, err = capsys.readouterr()
    assert "redis URL not understood" in err
    assert REDIS_PASSWORD not in out + err


async def test_a_redis_password_shows_nowhere_when_redis_is_away(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis down (nothing listens): the warning, the client's repr and its state hide it."""
    pytest.importorskip("redis")
    caplog.set_level(logging.DEBUG, logger="contractsdk")
    async with ContractClient(
        api_key=API_KEY,
        base_url="http://127.0.0.1:9",
        transport=MockTransport(lambda request: json_response(200, {"id": 7})),
        redis=f"redis://default:{REDIS_PASSWORD}@127.0.0.1:9/0",
        sleep=_no_sleep,
    ) as client:
        # The shared limits are unreachable: its local share instead. (The answer is no
        # user: only the way there matters.)
        with contextlib.suppress(ContractSDKError):
            await client.users.get(7)
        shown = [repr(client), repr(client.rate_limits), caplog.text]
    assert "unreachable" in caplog.text
    for text in shown:
        assert REDIS_PASSWORD not in text
