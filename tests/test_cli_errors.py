"""The command line's errors name what the user gave: an option, or the variable it came from.

The Python API's messages name its parameters (``base_url 'http://…' uses plain http``,
``redis must be … or a redis.asyncio.Redis``): a CLI user typed ``--base-url`` or set
``CONTRACTSDK_BASE_URL``, and can give no Redis object. ``cli/_errors.py`` rewords them as
they leave a command, and adds no secret.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from contractsdk import AuthenticationError, ConfigurationError
from contractsdk.cli import main
from contractsdk.cli._app import Invocation, parse
from contractsdk.cli._errors import reword
from contractsdk.sandbox import SandboxServer
from tests._clikit import AST, cli

ROOT = Path(__file__).resolve().parents[1]

#: What only a Python caller types: a parameter's name, ``name=``, a Python object.
PYTHON_WORDS = re.compile(
    r"\b(base_url|api_key=|credentials=|api_version=|client_id|client_secret|redis\.asyncio"
    r"|idempotency_key|first_name|match_term|created_by|RateLimits|None)\b"
)

PLAIN_HTTP = (
    "'http://example.com' uses plain http to a remote host; use https (plain http is allowed "
    "only for loopback hosts such as 127.0.0.1)"
)
UNKNOWN_PROD = "unknown environment 'prod' ({}): use 'sandbox' or 'production', or give --base-url"
NOT_REDIS = "{} must be a redis://, rediss:// or unix:// URL"
NEEDS_REDIS = pytest.mark.skipif(
    importlib.util.find_spec("redis") is None, reason="the [redis] extra is not installed"
)

#: A command that needs only the settings: it fails on them before anything is sent.
COMMAND = ["teams", "list", "7"]
#: A contract for Acme Legal (team 500) from the tenancy template, by Ada (seed 0).
CONTRACTS_CREATE = ["contracts", "create", "500", "--template", "198", "--created-by", "7917"]
CONTRACTS_CREATE += ["--value", "contract_name=x"]


def error_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the command line; return its one error line (exit 2), without ``error: ``."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and not out, (code, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.removeprefix("error: ").rstrip("\n")


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (["--api-key", "k", "--base-url", "http://example.com"], {}, f"--base-url {PLAIN_HTTP}"),
        (
            ["--api-key", "k"],
            {"CONTRACTSDK_BASE_URL": "http://example.com"},
            f"CONTRACTSDK_BASE_URL {PLAIN_HTTP}",
        ),
        (
            ["--api-key", "k", "--base-url", "ftp://x"],
            {},
            "--base-url must be an absolute http(s) URL, got 'ftp://x'",
        ),
        (
            ["--api-key", "k", "--base-url", "https://svc.example.com/v1"],
            {},
            "--base-url ends in the API version 'v1': give the service's root, "
            "'https://svc.example.com' (contractsdk adds /v1 itself)",
        ),
        (
            ["--api-key", "k", "--base-url", "https://user:pw@svc.example.com"],
            {},
            "--base-url must not hold credentials (nor any '@'); give the credential with "
            "--api-key, or --client-id and --client-secret",
        ),
        (["--api-key", "k", "--environment", "prod"], {}, UNKNOWN_PROD.format("--environment")),
        (
            ["--api-key", "k"],
            {"CONTRACTSDK_ENVIRONMENT": "prod"},
            UNKNOWN_PROD.format("CONTRACTSDK_ENVIRONMENT"),
        ),
        (
            ["--api-key", "k", "--client-id", "cid", "--client-secret", "secret"],
            {},
            "give either --api-key or --client-id and --client-secret, not both",
        ),
        (["--client-id", " ", "--client-secret", "secret"], {}, "--client-id is empty"),
        (
            [],
            {"CONTRACTSDK_CLIENT_ID": " ", "CONTRACTSDK_CLIENT_SECRET": "secret"},
            "CONTRACTSDK_CLIENT_ID is empty",
        ),
        (
            ["--client-id", "cid", "--client-secret", "sec\nret"],
            {},
            "--client-secret contains a line break",
        ),
        (["--api-key", "k\x01ey"], {}, "--api-key holds a control character"),
        (["--api-key", ""], {"CONTRACTSDK_API_KEY": "k"}, "--api-key is empty"),
        # A URL is all the command line takes: no redis.asyncio.Redis is offered.
        pytest.param(
            ["--api-key", "k", "--redis", "http://cache:6379"],
            {},
            NOT_REDIS.format("--redis"),
            marks=NEEDS_REDIS,
        ),
        pytest.param(
            ["--api-key", "k"],
            {"CONTRACTSDK_REDIS_URL": "http://cache:6379"},
            NOT_REDIS.format("CONTRACTSDK_REDIS_URL"),
            marks=NEEDS_REDIS,
        ),
        pytest.param(
            ["--api-key", "k", "--redis", "redis://:pw@cache:port/0"],
            {},
            "redis URL not understood (--redis): check its host, port, database number and options",
            marks=NEEDS_REDIS,
        ),
    ],
)
def test_a_wrong_setting_is_named_as_given(
    argv: list[str],
    env: dict[str, str],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The option the user typed, or the CONTRACTSDK_* variable read, not a Python name."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    error = error_of(capsys, [*argv, *COMMAND])
    assert error.startswith(said), error
    assert not PYTHON_WORDS.search(error), error


#: A secret given on the command line; each case below puts it where the message quotes.
SECRET = "5ecret-0451-kept-out"


@pytest.mark.parametrize(
    "argv",
    [
        ["--api-key", SECRET, "--base-url", f"http://example.com/{SECRET}"],
        ["--client-id", "cid", "--client-secret", SECRET, "--base-url", f"ftp://x/{SECRET}"],
        ["--api-key", "k", "--redis", f"http://:{SECRET}@cache:6379"],
        ["--api-key", "k", "--redis", f"redis://:{SECRET}@cache:port/0"],
    ],
)
def test_a_reworded_error_shows_no_secret_given_on_the_command_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The option is named; the secret in the value it quotes is not (or it quotes none)."""
    pytest.importorskip("redis")
    error = error_of(capsys, [*argv, *COMMAND])
    assert error.startswith(("--base-url", "--redis", "redis URL not understood (--redis)"))
    assert SECRET not in error


async def test_a_refused_key_names_where_it_came_from(
    server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 401's hint names --api-key, or CONTRACTSDK_API_KEY; the error keeps its class."""
    given = parse([*COMMAND, "--base-url", server.url, "--api-key", "wrong-key-0451"])
    assert isinstance(given, Invocation)
    with pytest.raises(AuthenticationError) as caught:
        await given.run()
    assert "check that the key given (--api-key) is one it issued" in str(caught.value)
    assert "wrong-key-0451" not in str(caught.value)

    monkeypatch.setenv("CONTRACTSDK_API_KEY", "wrong-key-0451")
    from_env = parse([*COMMAND, "--base-url", server.url])
    assert isinstance(from_env, Invocation)
    with pytest.raises(AuthenticationError) as caught:
        await from_env.run()
    assert "check that the key given (CONTRACTSDK_API_KEY) is one it issued" in str(caught.value)


async def test_a_refused_client_secret_names_where_it_came_from(
    server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token endpoint's 401 says to check --client-id and --client-secret, or the variables.

    It said only "the token endpoint answered 401: access_denied: Unauthorized".
    """
    wrong = "wrong-secret-0451"
    oauth = ["--client-id", server.client_id, "--client-secret", wrong]
    given = parse([*COMMAND, "--base-url", server.url, *oauth])
    assert isinstance(given, Invocation)
    with pytest.raises(AuthenticationError) as caught:
        await given.run()
    said = str(caught.value)
    assert said.startswith("the token endpoint answered 401: access_denied"), said
    assert "check the client id and secret given (--client-id and --client-secret)" in said
    assert wrong not in said and not PYTHON_WORDS.search(said), said

    monkeypatch.setenv("CONTRACTSDK_CLIENT_ID", server.client_id)
    monkeypatch.setenv("CONTRACTSDK_CLIENT_SECRET", wrong)
    from_env = parse([*COMMAND, "--base-url", server.url])
    assert isinstance(from_env, Invocation)
    with pytest.raises(AuthenticationError) as caught:
        await from_env.run()
    said = str(caught.value)
    assert "check the client id and secret given (CONTRACTSDK_CLIENT_ID and " in said
    assert "CONTRACTSDK_CLIENT_SECRET): they must be a pair this service issued" in said
    assert wrong not in said and not PYTHON_WORDS.search(said), said


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            [
                "users",
                "create",
                "--email",
                "a@example.com",
                "--first-name",
                " ",
                "--last-name",
                "L",
            ],
            "--first-name must be a non-blank string, got ' '",
        ),
        (
            ["users", "create", "--email", "nope", "--first-name", "F", "--last-name", "L"],
            "--email must be an email address, got 'nope'",
        ),
        (
            [*CONTRACTS_CREATE, "--idempotency-key", ""],
            "--idempotency-key is empty; give a key, or leave the option out for a new one per call",
        ),
        (
            [*CONTRACTS_CREATE, "--idempotency-key", "a b"],
            "--idempotency-key must be visible ASCII characters",
        ),
    ],
)
async def test_a_commands_own_option_is_named(
    server: SandboxServer, argv: list[str], said: str
) -> None:
    """The options of users create and contracts create, checked before anything is sent."""
    with pytest.raises(ConfigurationError) as caught:
        await cli(server, *argv)
    assert str(caught.value).startswith(said), caught.value
    assert not PYTHON_WORDS.search(str(caught.value)), caught.value


async def test_bulk_create_names_its_options(server: SandboxServer, tmp_path: Path) -> None:
    """--created-by of no user, an empty --match-term: named as options, not as the spec's."""
    rows = tmp_path / "rows.csv"
    rows.write_text("reference,contract_name\nr1,One\n", encoding="utf-8")
    create = ["bulk", "create", str(rows), "--team", "500", "--contract-type", AST, "-q"]
    with pytest.raises(ConfigurationError) as caught:
        await cli(server, *create, "--no-journal", "--created-by", "99999")
    assert str(caught.value).startswith(
        "user 99999, who is to create the contracts (--created-by), does not exist"
    )
    with pytest.raises(ConfigurationError, match=r"^--match-term must be a term name$"):
        await cli(server, *create, "--no-journal", "--created-by", "7917", "--match-term", "")


@pytest.mark.parametrize("option", ["--write-rate", "--round-delay"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_run_refuses_a_rate_or_delay_that_is_no_number(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused as options: click's float range let nan and inf reach RateLimits, named."""
    argv = ["bulk", "create", "rows.csv", "--team", "1", "--template", "2", "--created-by", "3"]
    assert main([*argv, "--api-key", "k", option, value]) == 2
    err = capsys.readouterr().err
    assert f"Invalid value for '{option}': {value} is not a finite number" in err
    assert "RateLimits" not in err


def test_reword_leaves_the_quoted_values_and_other_messages_alone() -> None:
    """Only the SDK's own words change: a value the message quotes stays as it was."""
    options = argparse.Namespace(environment="base_url", client_id="cid", client_secret="s")
    assert reword(
        "unknown environment 'base_url': use 'sandbox' or 'production', or give base_url= for "
        "anything else",
        options,
    ) == (
        "unknown environment 'base_url' (--environment): use 'sandbox' or 'production', or "
        "give --base-url for anything else"
    )
    assert reword("no journal at base_url.db", options) == "no journal at base_url.db"
    hint = (
        "check that the client id and secret ({}, {}) and the token's audience are this service's"
    )
    assert reword(hint.format("CONTRACTSDK_CLIENT_ID", "CONTRACTSDK_CLIENT_SECRET"), options) == (
        hint.format("--client-id", "--client-secret")
    )


def test_the_repositorys_example_is_what_bulk_example_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/tenancies.csv (the tests' and docs' input) is that file, with LF line ends."""
    written = tmp_path / "tenancies.csv"
    assert main(["bulk", "example", str(written)]) == 0
    capsys.readouterr()
    example = (ROOT / "examples" / "tenancies.csv").read_bytes()
    assert b"\r" not in example
    assert example == written.read_bytes()
