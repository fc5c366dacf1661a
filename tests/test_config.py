"""Environments, base URLs, API versions and the CONTRACTSDK_* variables."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable

import attrs
import pytest

from contractsdk import ApiKey, ClientCredentials, ConfigurationError, ContractClient, Environment
from contractsdk._auth import StaticAuth, TokenAuth
from contractsdk._config import misspelt_env_vars
from contractsdk.testing import MockTransport
from tests._fakeservice import FakeService
from tests._hostilekit import chain_shown
from tests.conftest import API_KEY


def test_sandbox_is_the_default() -> None:
    """With only a key, the client talks to the sandbox, version v1."""
    client = ContractClient(api_key=API_KEY)
    assert client.environment is Environment.SANDBOX
    assert client._base == "https://sandbox.legislate.tech/v1"


def test_production_environment() -> None:
    """environment='production' uses the production host and its documented limits."""
    client = ContractClient(api_key=API_KEY, environment="production")
    assert client._base == "https://api.legislate.tech/v1"
    assert client.environment.write_rate == 100


def test_unknown_environment_is_refused() -> None:
    """A misspelt environment name is refused with the valid names."""
    with pytest.raises(ConfigurationError, match="'sandbox' or 'production'"):
        ContractClient(api_key=API_KEY, environment="prod")


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080", "http://localhost:1234/", "http://[::1]:80", "https://example.com"],
)
def test_accepted_base_urls(url: str) -> None:
    """Https anywhere and plain http to loopback hosts are accepted."""
    client = ContractClient(api_key=API_KEY, base_url=url)
    assert client.environment.name == "custom"
    assert client._base == url.rstrip("/") + "/v1"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://example.com", "plain http to a remote host"),
        ("http://10.0.0.5:8080", "plain http to a remote host"),
        ("ftp://127.0.0.1", "absolute http"),
        ("127.0.0.1:8080", "absolute http"),
        ("https://user:pw@example.com", "must not hold credentials"),
        ("https://example.com/?x=1", "query"),
    ],
)
def test_refused_base_urls(url: str, message: str) -> None:
    """Plain http to a remote host, relative URLs and URLs with credentials are refused."""
    with pytest.raises(ConfigurationError, match=message):
        ContractClient(api_key=API_KEY, base_url=url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://[::1", "base_url is not a valid URL"),
        ("https://example.com:99999", "'https://example.com'"),
        ("https://user:pa/ss-word-1@example.com", "must not hold credentials"),
        ("https://user:pa?ss-word-1@example.com/x", "must not hold credentials"),
        ("htp://user:ss-word-1@example.com", "must not hold credentials"),
        ("https://example.com/?api_key=ss-word-1", "'https://example.com/?***'"),
        ("https://example.com/#ss-word-1", "'https://example.com/#***'"),
        ("http://example.com/x?token=ss-word-1", "'http://example.com/x?***'"),
    ],
)
def test_a_refused_url_is_quoted_without_what_may_be_a_secret(url: str, shown: str) -> None:
    """A URL that cannot be read is a ConfigurationError; none quotes a password or query.

    ``http://[::1`` raised urllib's ValueError, and a port out of range was accepted (each
    request then failed). urllib's words quote the "port", which is part of the password
    when that holds a ``/`` or ``?``; the messages quoted the URL whole, user info and
    query included.
    """
    with pytest.raises(ConfigurationError) as caught:
        ContractClient(api_key=API_KEY, base_url=url)
    message = str(caught.value)
    assert shown in message
    assert not any(part in message for part in ("ss-word", "'pa'", "user"))


def _password() -> str:
    """A password of this test's own (the scrubber is one for the process: see test_secrets)."""
    return f"PW-{secrets.token_hex(8)}"


#: URLs with a password where a parser would not look for one: each was quoted in its
#: error, or accepted with the key to be sent to the host before the "@".
HIDDEN_PASSWORDS: dict[str, Callable[[str], str]] = {
    "in the port": lambda pw: f"https://deploy@api.example.com:{pw}/",
    "before a path's @": lambda pw: f"https://svc:8443/{pw}@api.example.com",
    "an @ in the path": lambda pw: f"https://api.example.com/{pw}@x",
    "an encoded @": lambda pw: f"https://svc:8443%40{pw}@api.example.com",
    "a backslash": lambda pw: f"https://api.example.com\\@{pw}",
    "no @, in the port": lambda pw: f"https://svc:{pw}/",
    "an unclosed [": lambda pw: f"https://[::1/{pw}",
}


@pytest.mark.parametrize("what", ["base_url", "auth_url"])
@pytest.mark.parametrize("case", sorted(HIDDEN_PASSWORDS))
def test_a_url_with_a_password_anywhere_is_refused_without_it(case: str, what: str) -> None:
    """Any "@" is refused, and a URL that cannot be read is not quoted beyond its host.

    ``https://svc:8443/PW@api.example.com`` was accepted (host ``svc``: the key would have
    gone there); a password in the port's place was quoted whole, in the message or in
    the ValueError left as its ``__context__``.
    """
    password = _password()
    url = HIDDEN_PASSWORDS[case](password)
    if what == "base_url":
        options: dict[str, object] = {"api_key": API_KEY, "base_url": url}
    else:
        options = {"credentials": ClientCredentials(client_id="c", client_secret="s", auth_url=url)}
    with pytest.raises(ConfigurationError, match=what) as caught:
        ContractClient(**options)  # type: ignore[arg-type]  # each value as its option takes
    for where, text in chain_shown(caught.value):
        assert password not in text, f"the password shows in the error's {where}"


#: Environments made whole, never given as ``base_url=``: each skipped its check.
WHOLE_ENVIRONMENTS: dict[str, Callable[[str], Environment]] = {
    "custom": lambda pw: Environment.custom(f"https://svc:{pw}@proxy.example.com"),
    "custom, no @": lambda pw: Environment.custom(f"https://svc:{pw}/"),
    "with_base_url": lambda pw: Environment.SANDBOX.with_base_url(f"https://u:{pw}@p.example"),
    "evolved base_url": lambda pw: attrs.evolve(
        Environment.SANDBOX, base_url=f"https://svc:{pw}@proxy.example.com"
    ),
    "evolved auth_url": lambda pw: attrs.evolve(
        Environment.PRODUCTION, auth_url=f"https://svc:{pw}@login.example.com"
    ),
    "made": lambda pw: Environment(
        name="custom",
        base_url="https://api.example.com",
        auth_url=f"https://svc:{pw}@login.example.com",
        audience="https://api.example.com",
    ),
}


@pytest.mark.parametrize("case", sorted(WHOLE_ENVIRONMENTS))
def test_an_environment_is_checked_however_it_is_made(case: str) -> None:
    """Every Environment's URLs are checked as base_url= is: no password reaches a client.

    Passed as ``environment=``, its password reached the client's repr, the 401 hint,
    hooks, DEBUG lines and the bulk journal.
    """
    password = _password()
    with pytest.raises(ConfigurationError, match=r"must not hold credentials|valid URL") as caught:
        WHOLE_ENVIRONMENTS[case](password)
    for where, text in chain_shown(caught.value):
        assert password not in text, f"the password shows in the error's {where}"


@pytest.mark.parametrize(
    "make",
    [
        lambda: Environment.custom("http://api.example.com"),
        lambda: attrs.evolve(Environment.SANDBOX, auth_url="http://login.example.com"),
        lambda: Environment.custom("https://api.example.com/?key=1"),
        lambda: Environment.custom("ftp://api.example.com"),
    ],
    ids=["custom http", "evolved http auth_url", "a query", "not http"],
)
def test_an_environment_made_whole_takes_only_what_base_url_takes(
    make: Callable[[], Environment],
) -> None:
    """Plain http to a remote host, a query or another scheme: refused as base_url= is."""
    with pytest.raises(ConfigurationError):
        make()


def test_built_in_and_custom_environments_still_work() -> None:
    """The named environments, and a loopback one made whole, serve a client as before."""
    custom = Environment.custom("http://127.0.0.1:9/")
    assert custom.base_url == custom.auth_url == custom.audience == "http://127.0.0.1:9"
    assert ContractClient(api_key=API_KEY, environment=custom)._base == "http://127.0.0.1:9/v1"
    moved = Environment.PRODUCTION.with_base_url("https://proxy.example.com/")
    assert moved.base_url == "https://proxy.example.com" and moved.requires_approved_version
    for environment in (Environment.SANDBOX, Environment.PRODUCTION):
        assert attrs.evolve(environment) == environment


def test_remote_http_auth_url_is_refused() -> None:
    """A token endpoint over plain http to a remote host is refused too."""
    credentials = ClientCredentials(client_id="c", client_secret="s", auth_url="http://evil.test")
    with pytest.raises(ConfigurationError, match="auth_url"):
        ContractClient(credentials=credentials)


def test_base_url_keeps_environment_rules() -> None:
    """A production client served from another URL still checks production's versions."""
    with pytest.raises(ConfigurationError, match="not approved"):
        ContractClient(
            api_key=API_KEY,
            environment="production",
            base_url="https://proxy.test",
            api_version="v2",
        )


def test_unapproved_version_refused_in_production() -> None:
    """Production refuses a version that is not on its approved list."""
    with pytest.raises(ConfigurationError, match="'v2' is not approved for production"):
        ContractClient(api_key=API_KEY, environment="production", api_version="v2")


def test_approved_versions_can_be_extended() -> None:
    """A version added to approved_versions is accepted in production."""
    client = ContractClient(
        api_key=API_KEY, environment="production", api_version="v2", approved_versions={"v1", "v2"}
    )
    assert client._base.endswith("/v2")


def test_sandbox_may_try_other_versions() -> None:
    """The sandbox does not restrict versions."""
    assert ContractClient(api_key=API_KEY, api_version="v2")._base.endswith("/v2")


@pytest.mark.parametrize("version", ["1", "v1/../admin", "V1", ""])
def test_malformed_versions_refused(version: str) -> None:
    """An API version that is not 'v<number>' is refused."""
    with pytest.raises(ConfigurationError, match="api_version"):
        ContractClient(api_key=API_KEY, api_version=version)


def test_custom_base_url_accepts_bound_keys() -> None:
    """A key bound to an environment may be used against an explicit custom base URL."""
    ContractClient(api_key=ApiKey(API_KEY, environment="production"), base_url="http://127.0.0.1:1")


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("https://api.example.com/contracts/v2", "https://api.example.com/contracts"),
    ],
)
def test_a_base_url_ending_in_the_version_is_refused(url: str, root: str) -> None:
    """Every path already starts with /v1: such a base met only 404s for /v1/v1/..."""
    with pytest.raises(ConfigurationError, match=f"give the service's root, '{root}'"):
        ContractClient(api_key=API_KEY, base_url=url)


def test_a_base_url_with_a_path_of_its_own_is_kept() -> None:
    """A base under a path prefix (a gateway's) is the service's root: it is used as is."""
    client = ContractClient(api_key=API_KEY, base_url="https://gw.example.com/v1beta/contracts/")
    assert client.environment.base_url == "https://gw.example.com/v1beta/contracts"


def test_no_credentials_is_a_clear_error() -> None:
    """Without any credential the error names the arguments and variables to set."""
    with pytest.raises(ConfigurationError, match="CONTRACTSDK_API_KEY"):
        ContractClient()


async def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no arguments the client reads its settings from CONTRACTSDK_* variables."""
    monkeypatch.setenv("CONTRACTSDK_API_KEY", API_KEY)
    monkeypatch.setenv("CONTRACTSDK_ENVIRONMENT", "production")
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", "http://127.0.0.1:9")
    service = FakeService()
    transport = MockTransport(service)
    async with ContractClient(transport=transport) as client:
        assert client.environment.name == "production"
        assert isinstance(client._auth, StaticAuth)
        await client.users.get(7)
    assert transport.requests[0].url == "http://127.0.0.1:9/v1/users/7"
    assert transport.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"


def test_client_credentials_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET select OAuth."""
    monkeypatch.setenv("CONTRACTSDK_CLIENT_ID", "cid")
    monkeypatch.setenv("CONTRACTSDK_CLIENT_SECRET", "secret")
    assert isinstance(ContractClient()._auth, TokenAuth)


def test_both_credentials_in_environment_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """An API key and a client id in the environment: which was meant is not guessed."""
    monkeypatch.setenv("CONTRACTSDK_API_KEY", API_KEY)
    monkeypatch.setenv("CONTRACTSDK_CLIENT_ID", "cid")
    monkeypatch.setenv("CONTRACTSDK_CLIENT_SECRET", "client-secret-value")
    with pytest.raises(
        ConfigurationError, match="CONTRACTSDK_API_KEY and CONTRACTSDK_CLIENT_ID"
    ) as caught:
        ContractClient()
    assert API_KEY not in str(caught.value)
    assert "client-secret-value" not in str(caught.value)
    # An argument settles it.
    assert isinstance(ContractClient(api_key=API_KEY)._auth, StaticAuth)


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ("CONTRACTSDK_CLIENT_ID", "CONTRACTSDK_CLIENT_SECRET"),
        ("CONTRACTSDK_CLIENT_SECRET", "CONTRACTSDK_CLIENT_ID"),
    ],
)
def test_half_a_client_credential_names_the_other_half(
    monkeypatch: pytest.MonkeyPatch, given: str, missing: str
) -> None:
    """Only one of the OAuth pair set: the error says which one is missing."""
    monkeypatch.setenv(given, "half-of-a-pair")
    with pytest.raises(ConfigurationError, match=f"{given} is set but {missing} is not") as caught:
        ContractClient()
    assert "half-of-a-pair" not in str(caught.value)


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """An explicit argument is used even when its variable is set."""
    monkeypatch.setenv("CONTRACTSDK_ENVIRONMENT", "production")
    client = ContractClient(api_key=API_KEY, environment="sandbox")
    assert client.environment.name == "sandbox"


def test_a_misspelt_setting_is_named_with_the_closest(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """CONTRACTSDK_APIKEY or _BASEURL set: warned of once (name, not value), and in the error.

    The client read neither, fell back to the sandbox's host, and said only "no
    credentials" or "could not connect to the service".
    """
    secret = f"key-{os.urandom(8).hex()}"
    for name in [n for n in os.environ if n.startswith("CONTRACTSDK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CONTRACTSDK_APIKEY", secret)
    monkeypatch.setenv("CONTRACTSDK_BASEURL", "http://127.0.0.1:9")
    monkeypatch.setenv("CONTRACTSDK_USER_ID", "7")  # the sandbox's, read by examples
    monkeypatch.setenv("CONTRACTSDK_TEST_LOOP", "uvloop")  # the test suite's
    monkeypatch.setattr("contractsdk._config._WARNED", set())
    assert misspelt_env_vars() == [
        "CONTRACTSDK_APIKEY is set, but no setting of contractsdk has that name (did you "
        "mean CONTRACTSDK_API_KEY?)",
        "CONTRACTSDK_BASEURL is set, but no setting of contractsdk has that name (did you "
        "mean CONTRACTSDK_BASE_URL?)",
    ]
    with caplog.at_level(logging.WARNING, logger="contractsdk"):
        for _ in range(2):
            with pytest.raises(ConfigurationError, match="did you mean CONTRACTSDK_API_KEY") as e:
                ContractClient()
            assert secret not in str(e.value)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and all(secret not in line for line in warned)  # once each
    assert "CONTRACTSDK_BASE_URL?" in warned[1]
