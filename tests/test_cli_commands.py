"""The click CLI: help, version, the missing extra, colour rules, -v, parties, users, sign."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contractsdk import BadRequestError, ContractClient, PermissionDeniedError
from contractsdk.cli import INSTALL_HINT, main
from contractsdk.cli._demo import _person_values
from contractsdk.models import Role, Side
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import signature_png
from tests._clikit import cli
from tests._sandboxprocess import child_env

USER = 7917
TENANCY_TEMPLATE = 198


def test_bare_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    """A bare `contractsdk` prints the help (connection options once) and exits 0."""
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "Usage: contractsdk" in out and "bulk" in out and "parties" in out
    assert out.count("--base-url URL") == 1  # listed once (--environment's help names it)
    assert "-h, --help" in out  # the same help as `contractsdk -h`


def test_shell_completion_as_the_help_says_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval "$(_CONTRACTSDK_COMPLETE=bash_source contractsdk)"` gets a script, not help.

    A bare `contractsdk` prints the help; with the variable set, click answers instead:
    the script, then the completions it asks for.
    """
    monkeypatch.setenv("_CONTRACTSDK_COMPLETE", "bash_source")
    assert main([]) == 0
    script = capsys.readouterr().out
    assert "complete -o nosort -F _contractsdk_completion contractsdk" in script
    assert "Usage:" not in script
    monkeypatch.setenv("_CONTRACTSDK_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "contractsdk bu")
    monkeypatch.setenv("COMP_CWORD", "1")
    assert main([]) == 0
    assert capsys.readouterr().out.split() == ["plain,bulk"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the package's version."""
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("contractsdk 0.")


@pytest.mark.parametrize(
    "argv",
    [
        ["users", "get"],
        ["contracts", "create"],
        ["bulk", "create"],
        ["parties", "add"],
        ["sign"],
        ["bulk", "example"],
    ],
)
def test_every_argument_and_option_has_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command's help lists its arguments with a text; the connection options, by name.

    They are listed with their help once, on the group: a command's help names them in
    one line under its own options.
    """
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--base-url URL" not in out  # not listed as an option of the command…
    assert "Also the connection options of contractsdk -h: --environment" in out  # …named
    import click

    from contractsdk.cli._app import cli as root

    command: click.Command = root
    ctx = click.Context(root)
    for name in argv:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    for param in command.params:
        if not getattr(param, "hidden", False):
            assert param.help, (argv, param.name)
    del ctx


def test_sandbox_help_names_itself(capsys: pytest.CaptureFixture[str]) -> None:
    """`contractsdk sandbox --help` calls itself `contractsdk sandbox`."""
    assert main(["sandbox", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: contractsdk sandbox")
    assert "python -m" not in out


def test_demo_refuses_json(capsys: pytest.CaptureFixture[str]) -> None:
    """`demo --json` is a usage error (exit 2), not ignored, and says why either way round.

    After the command it was "No such option: --json", though --json is a global option.
    """
    for argv in (["demo", "--json"], ["--json", "demo"], ["bulk", "example", "--json"]):
        assert main(argv) == 2
        assert "this command has no JSON output; leave out --json" in capsys.readouterr().err


@pytest.fixture(scope="module")
def fresh_interpreter() -> subprocess.CompletedProcess[str]:
    """One new Python for both tests below: what importing the SDK loads, then the command.

    It imports the SDK and prints the click and rich modules loaded (JSON), then runs the
    command as if the extra were not installed (click and rich made unimportable).
    """
    code = (
        "import json, sys, contractsdk, contractsdk.bulk, contractsdk.sandbox\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich'))\n"
        "print(json.dumps(loaded), flush=True)\n"
        "sys.modules['click'] = None; sys.modules['rich'] = None\n"
        "import importlib.util as u; real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n in ('click', 'rich') else real(n, *a)\n"
        "from contractsdk.cli import main; raise SystemExit(main(['users', 'list']))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
        timeout=60,
    )


def test_the_sdk_does_not_import_click_or_rich(
    fresh_interpreter: subprocess.CompletedProcess[str],
) -> None:
    """`import contractsdk` (and its bulk and sandbox) loads neither click nor rich."""
    assert json.loads(fresh_interpreter.stdout.splitlines()[0]) == [], fresh_interpreter.stderr


def test_without_the_extra_one_line(fresh_interpreter: subprocess.CompletedProcess[str]) -> None:
    """Without click and rich, the command says in one line to install contractsdk[cli]."""
    assert fresh_interpreter.returncode == 1
    assert fresh_interpreter.stderr == INSTALL_HINT + "\n"


async def test_colour_only_on_a_terminal_and_never_with_no_color(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tables carry ANSI colour when forced to a terminal, none in a pipe or with NO_COLOR."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert await cli(server, "users", "get", str(USER)) == 0
    assert "\x1b[" not in capsys.readouterr().out  # captured: not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert await cli(server, "users", "get", str(USER)) == 0
    assert "\x1b[1;36m" in capsys.readouterr().out  # bold cyan headers
    monkeypatch.setenv("NO_COLOR", "1")
    assert await cli(server, "users", "get", str(USER)) == 0
    out = capsys.readouterr().out
    assert "36m" not in out and "\x1b[1m" in out  # no colour; bold is not a colour


async def test_verbose_shows_each_answer_without_a_secret(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """-v prints method, path, status and time of each answer on stderr; never the key."""
    assert await cli(server, "-v", "users", "get", str(USER)) == 0
    err = capsys.readouterr().err
    assert f"200 GET /v1/users/{USER} in" in err and " ms" in err
    assert server.api_key not in err
    assert await cli(server, "users", "get", str(USER)) == 0
    assert capsys.readouterr().err == ""


async def test_contracts_create_shows_what_it_knows(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`contracts create` shows the id, name and values, no `created -` placeholder."""
    argv = ["contracts", "create", "494", "--template", str(TENANCY_TEMPLATE)]
    argv += ["--created-by", str(USER), "--value", "contract_name=Flat 9"]
    assert await cli(server, *argv) == 0
    out = capsys.readouterr().out
    labels = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert labels[:2] == ["id", "name"] and "created" not in labels
    assert "Flat 9" in out


async def test_contracts_update_of_a_nested_term_alone(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`contracts update --template` changes a nested term given alone (the lifecycle audit).

    It was refused with "contract_rentFrequency has no value" although the contract held it.
    """
    argv = ["--json", "contracts", "create", "494", "--template", str(TENANCY_TEMPLATE)]
    argv += ["--created-by", str(USER), "--value", "contract_name=Flat 10"]
    argv += ["--value", "contract_rentFrequency=month"]
    argv += ["--value", "contract_breakClause=breakClauseYes"]
    assert await cli(server, *argv, "--value", "contract_breakClauseStart=6 months") == 0
    contract = str(json.loads(capsys.readouterr().out)["id"])
    update = ["--json", "contracts", "update", contract, "--template", str(TENANCY_TEMPLATE)]
    assert await cli(server, *update, "--value", "contract_breakClauseStart=3 months") == 0
    values = {f["name"]: f["value"] for f in json.loads(capsys.readouterr().out)["fields"]}
    assert values["contract_breakClauseStart"] == "3 months"
    assert values["contract_breakClause"] == "breakClauseYes"
    # Without --template the value goes flat and the service refuses it: the error says
    # what --template would do.
    with pytest.raises(BadRequestError, match="with --template ID the values are checked"):
        await cli(server, "contracts", "update", contract, "--value", "contract_breakClause=x")


async def test_users_create_and_list(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`users create` then `users list` shows the new user."""
    argv = ["users", "create", "--email", "new.person@example.com"]
    assert await cli(server, *argv, "--first-name", "New", "--last-name", "Person", "--json") == 0
    created = json.loads(capsys.readouterr().out)
    assert created["email"] == "new.person@example.com" and created["id"]
    assert await cli(server, "users", "list") == 0
    assert "new.person@example.com" in capsys.readouterr().out


async def test_parties_lifecycle_and_signing(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Add a party (checked against the identity fields), list, change roles, sign, remove."""
    argv = ["--json", "contracts", "create", "494", "--template", str(TENANCY_TEMPLATE)]
    assert await cli(server, *argv, "--created-by", str(USER), "--value", "contract_name=P") == 0
    contract = str(json.loads(capsys.readouterr().out)["id"])

    # A value that breaks the identity fields: exit 3 through main's mapping, nothing sent.
    from contractsdk._exceptions import IdentityValidationError

    add = ["parties", "add", contract, "--user", str(USER), "--role", "party", "--side", "first"]
    add += ["--template", str(TENANCY_TEMPLATE)]
    with pytest.raises(IdentityValidationError):
        await cli(server, *add, "--value", "No such field=x")
    assert await cli(server, "--json", "parties", "list", contract) == 0
    assert json.loads(capsys.readouterr().out) == []

    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        fields = await client.identity_fields.list(
            TENANCY_TEMPLATE, roles=[Role.PARTY], side=Side.FIRST
        )
        ada = await client.users.get(USER)
    answers = [f"--value={key}={value}" for key, value in _person_values(fields, ada).items()]
    assert await cli(server, *add, *answers, "--json") == 0
    party = json.loads(capsys.readouterr().out)[0]
    assert party["side"] == "first" and "party" in party["roles"]
    assert await cli(server, "parties", "list", contract) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:2] == ["ID", "USER"] and str(USER) in table

    collaborator = str(party["id"])
    roles = ["--role", "party", "--role", "collaborator"]
    assert await cli(server, "parties", "roles", collaborator, *roles) == 0
    assert "party, collaborator" in capsys.readouterr().out

    field_id = next(iter(_person_values(fields, ada)))
    change = ["parties", "fields", collaborator, "--value", f"{field_id}=Changed"]
    assert await cli(server, *change, "--json") == 0
    values = {f["id"]: f["value"] for f in json.loads(capsys.readouterr().out)[0]["fields"]}
    assert values.get(field_id) == "Changed"

    assert await cli(server, "parties", "remove", collaborator) == 0
    assert f"removed collaborator {collaborator}" in capsys.readouterr().out

    assert await cli(server, *add, *answers, "--json") == 0
    again = json.loads(capsys.readouterr().out)[0]["id"]
    image = tmp_path / "sig.png"
    image.write_bytes(signature_png())
    assert await cli(server, "sign", str(again), "--image", str(image), "--json") == 0
    assert json.loads(capsys.readouterr().out)[0]["signed"] is True


def test_sign_needs_one_source(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`sign` takes --image or --saved, exactly one; a file not an image is named (exit 2)."""
    assert main(["sign", "5", "--api-key", "k"]) == 2
    assert "error: give one of --image FILE or --saved\n" in capsys.readouterr().err
    text = tmp_path / "sig.txt"
    text.write_text("not an image")
    assert main(["sign", "5", "--image", str(text), "--saved", "--api-key", "k"]) == 2
    assert "error: give --image FILE or --saved, not both\n" in capsys.readouterr().err
    assert main(["sign", "5", "--image", str(text), "--api-key", "k"]) == 2
    said = capsys.readouterr().err
    assert f"a signature must be a PNG or JPEG image: {str(text)!r} is not one" in said


def test_bulk_example_writes_the_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`bulk example PATH` writes the example CSV, and refuses to overwrite without --force."""
    target = tmp_path / "t.csv"
    assert main(["bulk", "example", str(target)]) == 0
    assert target.read_text().startswith("reference,")
    assert main(["bulk", "example", str(target)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["bulk", "example", str(target), "--force"]) == 0


async def test_a_party_from_outside_the_team_without_inviter_says_to_name_one(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`parties add` of an outsider: the 403 says the inviter is --user unless --inviter."""
    argv = ["--json", "contracts", "create", "494", "--template", str(TENANCY_TEMPLATE)]
    assert await cli(server, *argv, "--created-by", str(USER), "--value", "contract_name=O") == 0
    contract = str(json.loads(capsys.readouterr().out)["id"])
    add = ["parties", "add", contract, "--user", str(USER + 1), "--role", "party"]
    add += ["--side", "second", "--value", "5012=tenant"]
    with pytest.raises(PermissionDeniedError, match="unless --inviter names a member"):
        await cli(server, *add)
    assert await cli(server, *add, "--inviter", str(USER)) == 0
