"""The contractsdk command, run in-process against an emulator serving from a thread."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from contractsdk.cli import main
from contractsdk.cli._app import Invocation, parse
from contractsdk.cli._output import dump_json
from tests._redisserver import RedisServer
from tests._sandboxprocess import child_env as _env
from tests._sandboxprocess import sandbox_thread

ROOT = Path(__file__).resolve().parents[1]
USER = 7917  # Ada Lovelace, seed 0
PERSONAL_TEAM = 494
ACME = 500
NDA_TEMPLATE = 200
TENANCY_TEMPLATE = 198


@pytest.fixture(scope="module")
def emulator() -> Iterator[dict[str, str]]:
    """An emulator on a free port, its limits off; yields its URL and first key."""
    with sandbox_thread(read_rate=None, write_rate=None) as server:
        yield {"url": server.url, "key": server.api_key}


@pytest.fixture
def connected(emulator: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The CONTRACTSDK_* variables point at the emulator."""
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", emulator["url"])
    monkeypatch.setenv("CONTRACTSDK_API_KEY", emulator["key"])
    return emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_users_get_table(connected: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """`users get` prints a table with the user's name."""
    code, out, _ = run(capsys, "users", "get", str(USER))
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["ID", "FIRST", "NAME"]
    assert "Ada" in out and "Lovelace" in out


def test_json_output(connected: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints machine-readable JSON, before or after the command."""
    for argv in (["--json", "teams", "list", str(USER)], ["teams", "list", str(USER), "--json"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0
        teams = json.loads(out)
        assert {t["id"] for t in teams} >= {PERSONAL_TEAM, ACME}
        assert "raw" not in teams[0]


def test_teams_create_and_rename(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`teams create` then `teams rename` change the service."""
    code, out, _ = run(capsys, "--json", "teams", "create", str(USER), "--name", "CLI team")
    assert code == 0
    team_id = json.loads(out)["id"]
    code, out, _ = run(capsys, "teams", "rename", str(team_id), "--name", "CLI team 2")
    assert code == 0 and "CLI team 2" in out


def test_types_templates_and_terms(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`types list`, `templates list` (latest marked) and `terms show` (a tree) work."""
    code, out, _ = run(capsys, "--json", "types", "list", str(PERSONAL_TEAM))
    kinds = {k["name"]: k["id"] for k in json.loads(out)}
    tenancy = kinds["Assured Shorthold Tenancy Agreement"]
    code, out, _ = run(capsys, "templates", "list", str(PERSONAL_TEAM), str(tenancy))
    assert code == 0 and re.search(rf"{TENANCY_TEMPLATE}\s+2\s+latest", out)
    # By name, as `types list` shows it (case aside), as bulk create takes it.
    named = "assured shorthold tenancy agreement"
    assert run(capsys, "templates", "list", str(PERSONAL_TEAM), named)[:2] == (0, out)
    code, _, err = run(capsys, "templates", "list", str(PERSONAL_TEAM), "Lease")
    assert code == 2 and "has no contract type named 'Lease' (types: " in err
    code, out, _ = run(capsys, "terms", "show", str(TENANCY_TEMPLATE))
    assert code == 0
    assert "contract_rentFrequency" in out
    assert re.search(r"\n {12}contract_breakClauseStart", out)  # three levels, indented


def test_contract_lifecycle(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The `contracts` commands create, get, update, download, list and delete."""
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"contract_name": "CLI lease", "contract_rentFrequency": "month"}))
    code, out, err = run(
        capsys,
        "--json",
        "contracts",
        "create",
        str(PERSONAL_TEAM),
        "--template",
        str(TENANCY_TEMPLATE),
        "--created-by",
        str(USER),
        "--values",
        str(values),
        "--value",
        "contract_breakClause=breakClauseNo",
    )
    assert code == 0, err
    contract_id = str(json.loads(out)["id"])
    code, out, _ = run(capsys, "contracts", "get", contract_id)
    assert "CLI lease" in out and "breakClauseNo" in out
    code, out, _ = run(
        capsys,
        "contracts",
        "update",
        contract_id,
        "--value",
        "contract_name=CLI lease 2",
        "--template",
        str(TENANCY_TEMPLATE),
    )
    assert code == 0 and "CLI lease 2" in out
    pdf = tmp_path / "c.pdf"
    code, out, _ = run(capsys, "contracts", "pdf", contract_id, "-o", str(pdf))
    assert code == 0 and pdf.read_bytes().startswith(b"%PDF-")
    for where in (tmp_path / "missing" / "c.pdf", tmp_path):  # no such folder; a folder
        code, _, err = run(capsys, "contracts", "pdf", contract_id, "-o", str(where))
        assert code == 2 and err.startswith(f"error: cannot write {where}: "), err
    code, out, _ = run(capsys, "contracts", "list", str(PERSONAL_TEAM))
    assert contract_id in out
    code, out, _ = run(capsys, "contracts", "delete", contract_id)
    assert code == 0
    code, _, err = run(capsys, "contracts", "get", contract_id)
    assert code == 1 and err.startswith("error: 404")


def test_validation_error_exit_code(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Values breaking the terms exit 3 with every problem listed, and nothing is created."""
    code, _, err = run(
        capsys,
        "contracts",
        "create",
        str(PERSONAL_TEAM),
        "--template",
        str(TENANCY_TEMPLATE),
        "--created-by",
        str(USER),
        "--value",
        "contract_rentFrequency=week",
        "--value",
        "contract_breakClause=breakClauseYes",
        "--value",
        "contract_nmae=x",
    )
    assert code == 3
    assert "contract_breakClause" in err and "did you mean 'contract_name'" in err
    assert "Traceback" not in err


def test_service_error_is_one_line(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A 403 from the service is one line with the status and message, exit 1."""
    outsider = "7920"  # Katherine is not in Acme Legal
    code, _, err = run(
        capsys,
        "contracts",
        "create",
        str(ACME),
        "--template",
        str(NDA_TEMPLATE),
        "--created-by",
        outsider,
        "--value",
        "contract_name=x",
    )
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("error: 403")


def test_secrets_never_printed(
    emulator: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused key is not echoed on the terminal."""
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", emulator["url"])
    code, out, err = run(capsys, "--api-key", "wrong-secret-key-42", "users", "get", str(USER))
    assert code == 1 and err.startswith("error: 401")
    assert "wrong-secret-key-42" not in out + err


def base_url_note(url: str, environment: str) -> str:
    """The note a command prints when CONTRACTSDK_BASE_URL overrides its --environment."""
    return (
        f"note: CONTRACTSDK_BASE_URL ({url}) decides where requests go, not --environment "
        f"{environment}; unset it or pass --base-url to choose"
    )


@pytest.mark.parametrize("environment", ["production", "sandbox"])
def test_an_environment_given_beside_an_exported_base_url_is_noted(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str], environment: str
) -> None:
    """--environment does not move an exported base URL: a note says so before any request.

    With the sandbox's exports set, ``--environment production`` talked to the emulator
    without a word.
    """
    code, out, err = run(capsys, "--environment", environment, "-vv", "teams", "list", str(USER))
    assert code == 0 and "Acme Legal" in out
    lines = err.splitlines()
    assert lines[0] == base_url_note(connected["url"], environment), err
    assert err.count("note:") == 1
    assert any(line.startswith("→ GET") for line in lines[1:]), err  # sent after it


def test_the_environments_help_says_a_base_url_decides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`contractsdk --help` tells, at --environment, that a base URL still decides."""
    assert main(["--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        "--environment NAME sandbox or production (CONTRACTSDK_ENVIRONMENT; default sandbox). "
        "A base URL (--base-url, or CONTRACTSDK_BASE_URL if exported) still decides where "
        "requests go, with this environment's rules; a note says when the variable does."
    ) in shown


@pytest.mark.parametrize(
    "argv",
    [
        ["teams", "list", str(USER)],  # no --environment: nothing to override
        ["--environment", "production", "--base-url", "URL", "teams", "list", str(USER)],
    ],
)
def test_no_note_when_the_command_line_decides_or_names_no_environment(
    connected: dict[str, str], capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """--base-url given, or no --environment: the command line said where; no note."""
    code, out, err = run(capsys, *(connected["url"] if arg == "URL" else arg for arg in argv))
    assert code == 0 and "Acme Legal" in out
    assert "note:" not in err


async def test_no_note_for_an_environment_at_its_own_url_nor_from_its_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exported URL is the environment's own, or the environment is only exported: no note."""
    from contractsdk.cli._resources import make_client

    monkeypatch.setenv("CONTRACTSDK_API_KEY", "k-0123456789")
    for env, argv in (
        ({"CONTRACTSDK_BASE_URL": "https://sandbox.legislate.tech/"}, ["--environment", "sandbox"]),
        (
            {
                "CONTRACTSDK_BASE_URL": "https://api.example.com",
                "CONTRACTSDK_ENVIRONMENT": "production",
            },
            [],
        ),
    ):
        with monkeypatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            invocation = parse([*argv, "teams", "list", str(USER)])
            assert isinstance(invocation, Invocation)
            await make_client(invocation.args).aclose()  # made, nothing sent
        assert "note:" not in capsys.readouterr().err


def test_the_note_shows_no_credential(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CONTRACTSDK_BASE_URL holding user info is refused before any note could quote it."""
    monkeypatch.setenv("CONTRACTSDK_API_KEY", "k-0123456789")
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", "https://ada:pw-0451-secret@api.example.com")
    code, out, err = run(capsys, "--environment", "production", "teams", "list", str(USER))
    assert code == 2 and "note:" not in err
    assert "pw-0451-secret" not in out + err
    assert err.startswith("error: CONTRACTSDK_BASE_URL must not hold credentials"), err


def test_a_parsed_command_shows_no_credential() -> None:
    """An Invocation's repr (and rich's pretty print of it) leave its arguments out.

    They hold --api-key, --client-secret and a --redis URL's password as typed.
    """
    key, secret, password = (f"{kind}-{secrets.token_hex(8)}" for kind in ("k", "s", "pw"))
    connection = ["--api-key", key, "--client-id", "cid", "--client-secret", secret]
    invocation = parse(["users", "get", "7", *connection, "--redis", f"redis://:{password}@r"])
    assert isinstance(invocation, Invocation)
    assert invocation.args.api_key == key  # the command still gets them
    shown = [repr(invocation), str(invocation)]
    with contextlib.suppress(ImportError):
        from rich.pretty import pretty_repr

        shown.append(pretty_repr(invocation))
    for text in shown:
        assert "Invocation(" in text
        assert not any(value in text for value in (key, secret, password)), text


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONTRACTSDK_CLIENT_ID": "cid"}, "CONTRACTSDK_CLIENT_SECRET is not; OAuth client"),
        (
            {"CONTRACTSDK_API_KEY": "k-7f2", "CONTRACTSDK_CLIENT_SECRET": "s-7f2"},
            "both CONTRACTSDK_API_KEY and CONTRACTSDK_CLIENT_SECRET are set",
        ),
    ],
)
def test_credential_variables_that_do_not_make_one_are_named(
    env: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Half an OAuth pair, or a key beside it: the error names the variables, not 'none'."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = run(capsys, "users", "get", "1")
    assert code == 2 and message in err, err
    assert "no credentials" not in err and "7f2" not in out + err


#: `parties add` with what it requires, for the cases below to add to.
ADD_PARTY = ["parties", "add", "1", "--user", "2", "--role", "party", "--side", "first"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["users", "get", "1"], "no credentials: set CONTRACTSDK_API_KEY (or give --api-key)"),
        (
            ["contracts", "update", "1", "--value", "a=b", "--require-all", "--api-key", "k"],
            "--require-all needs --template",
        ),
        ([*ADD_PARTY, "--require-all", "--api-key", "k"], "--require-all needs --template"),
        (
            ["bulk", "create", "rows.csv", "--team", "1", "--created-by", "2", "--api-key", "k"],
            "give --contract-type (an id or a name) or --template",
        ),
        (
            ["parties", "add", "1", "--user", "2", "--role", "party", "--side", "both"],
            "Invalid value for '--side': 'both' is not one of 'first', 'second'.",
        ),
        (
            ["parties", "roles", "1", "--role", "party_with_signatory"],
            "Invalid value for '--role': 'party_with_signatory' is not one of",
        ),
        (["--base-url", "http://example.com", "--api-key", "k", "users", "get", "1"], "plain http"),
        (["--environment", "prod", "--api-key", "k", "users", "get", "1"], "unknown environment"),
        (["contracts", "update", "1", "--api-key", "k"], "nothing to change"),
        (
            [
                "contracts",
                "create",
                "1",
                "--template",
                "2",
                "--created-by",
                "3",
                "--value",
                "novalue",
                "--api-key",
                "k",
            ],
            "NAME=VALUE",
        ),
        (
            [
                *ADD_PARTY,
                "--value",
                "1" * 30 + "=x",  # digits name a field id; these are more than an int64
                "--api-key",
                "k",
            ],
            "--value field id must be a non-negative int64 id",
        ),
    ],
)
def test_configuration_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad configuration is one line on stderr and exit code 2, before anything is sent."""
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_bad_id_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A non-numeric id is refused by the parser (exit 2)."""
    assert main(["users", "get", "../admin"]) == 2
    assert "numeric id" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["users", "get", "1" * 30], "'USER_ID'"),
        (["users", "get", str(2**63)], "'USER_ID'"),  # one past int64's largest
        (
            ["contracts", "create", "1", "--template", "2", "--created-by", "9" * 30],
            "'--created-by'",
        ),
    ],
)
def test_id_beyond_int64_is_a_usage_error(
    argv: list[str], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An id of more than an int64 holds is refused by the parser too (exit 2), never sent."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"Invalid value for {name}: expected an id of at most {2**63 - 1}" in err
    assert err.startswith("Usage: contractsdk ") and "Traceback" not in err


def test_demo_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contractsdk demo` walks the flow against the embedded emulator and exits 0.

    Past creation: both parties added, both signed, the contract completed, its PDF written.
    (In-process: `python -m contractsdk` as a process is run by the closed-pipe test.) The
    emulator's limits are raised from the sandbox's 25/s, which would pace the flow's calls
    over half a second: its steps are what is checked here, not its pace.
    """
    import contractsdk.sandbox

    monkeypatch.setattr(
        contractsdk.sandbox,
        "SandboxServer",
        functools.partial(contractsdk.sandbox.SandboxServer, read_rate=1000, write_rate=1000),
    )
    pdf = tmp_path / "signed.pdf"
    code, out, err = run(capsys, "demo", "--pdf", str(pdf))
    assert code == 0, err
    for step in (
        "1. Identify the user",
        "5. The terms",
        "6. The validator",
        "→ created contract",
        "8. List the team's contracts",
        "10. Add the parties",
        "landlord signed",
        "tenant signed",
        f"wrote {pdf}",
    ):
        assert step in out
    assert "exclusive" in out
    assert "completed: not yet" not in out
    assert pdf.read_bytes().startswith(b"%PDF")


def test_demo_refuses_a_pdf_path_it_cannot_write_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--pdf into a folder that does not exist: one line at once, not a traceback at the end."""
    where = tmp_path / "missing" / "signed.pdf"
    code, out, err = run(capsys, "demo", "--pdf", str(where))
    assert code == 2 and err == f"error: cannot write {where}: no such directory\n"
    assert "1. Identify the user" not in out


def test_demo_on_a_terminal_that_is_not_utf8(tmp_path: Path) -> None:
    """A stdout that cannot encode "→" (cp1252, latin-1, ascii) shows "?", never a traceback.

    `contractsdk demo` stopped at its first arrow with a UnicodeEncodeError.
    """
    result = subprocess.run(
        [sys.executable, "-m", "contractsdk", "demo", "--pdf", str(tmp_path / "signed.pdf")],
        capture_output=True,
        timeout=120,
        env={**_env(), "PYTHONIOENCODING": "ascii"},
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"? created contract" in result.stdout and b"Traceback" not in result.stderr


def test_json_on_a_stream_that_is_not_utf8_keeps_every_character() -> None:
    """--json on such a stream escapes what it cannot encode (JSON escapes): the same data."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    value = {"name": "Café → Ünïcode", "rent": "£1,200"}
    dump_json(value, stream)
    stream.flush()
    assert json.loads(raw.getvalue().decode("ascii")) == value


def test_demo_shares_its_limits_through_redis(
    capsys: pytest.CaptureFixture[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    """`contractsdk demo --redis URL`: against the embedded emulator too, the flag is used."""
    pdf = str(tmp_path / "signed.pdf")  # not into the working directory
    code, _, err = run(capsys, "demo", "--redis", redis_server.url, "--pdf", pdf)
    assert code == 0, err
    keys = redis_server.keys()
    assert any(key.endswith(":bucket:write") for key in keys)


def test_closed_pipe_is_not_a_traceback(emulator: dict[str, str]) -> None:
    """`contractsdk … | head -1` ends quietly when the reader closes the pipe."""
    env = {
        **_env(),
        "CONTRACTSDK_BASE_URL": emulator["url"],
        "CONTRACTSDK_API_KEY": emulator["key"],
    }
    result = subprocess.run(
        f"{sys.executable} -m contractsdk terms show {TENANCY_TEMPLATE} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.stdout.startswith("contract_name")
    assert "Traceback" not in result.stderr


async def test_an_empty_redis_flag_shares_nothing_whatever_the_variable_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--redis "" turns sharing off where CONTRACTSDK_REDIS_URL turns it on.

    It was refused as not a Redis URL: with the variable exported, a command had no way
    to run alone.
    """
    from contractsdk.cli._resources import make_client

    monkeypatch.setenv("CONTRACTSDK_API_KEY", "k-0123456789")
    monkeypatch.setenv("CONTRACTSDK_REDIS_URL", "redis://127.0.0.1:1/0")
    shared = parse(["teams", "list", str(USER)])
    alone = parse(["--redis", "", "teams", "list", str(USER)])
    assert isinstance(shared, Invocation) and isinstance(alone, Invocation)
    with_variable, without = make_client(shared.args), make_client(alone.args)
    try:
        assert with_variable._shared is not None
        assert without._shared is None
    finally:
        await with_variable.aclose()
        await without.aclose()
