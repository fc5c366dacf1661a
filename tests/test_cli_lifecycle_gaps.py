"""What the lifecycle audit found the CLI could not do: identity fields, copies, companies, HTML.

Each command runs in-process against the emulator (the ``server`` fixture); a bad input
runs as ``contractsdk`` does (:func:`refused`), for its exit code, its one line and the
emulator's count of requests, which must not move.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contractsdk import ContractClient, TermValidationError
from contractsdk.cli import main
from contractsdk.models import Role, Side
from contractsdk.sandbox import SandboxServer
from tests._clikit import cli

USER = 7917  # Ada Lovelace, seed 0
GRACE = 7918  # Grace Hopper, a member of Acme Legal: a party from outside Ada's own team
PERSONAL_TEAM = 494  # Ada's
TENANCY_TEMPLATE = 198

FIELDS = ["parties", "identity-fields", str(TENANCY_TEMPLATE)]
#: The second side's fields hold a choice with a field nested under one option.
SECOND_PARTY = ["--role", "party", "--side", "second"]
GUARANTOR = [
    "--value=First Name=Grace",
    "--value=Last Name=Hopper",
    "--value=Email=grace@example.com",
    "--value=Are you a Tenant or Guarantor?=guarantor",
    "--value=Please specify the name of the Tenant=Alan Turing",
]


async def refused(server: SandboxServer, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run a command as ``contractsdk`` does; it must exit 2 having sent nothing.

    ``main`` runs its own event loop, so it runs on a thread while the emulator serves here.

    Returns:
        What it printed on stderr.
    """
    before = server.counters()["requests"]
    connection = ["--base-url", server.url, "--api-key", server.api_key]
    code = await asyncio.to_thread(main, [*argv, *connection])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert server.counters()["requests"] == before, "a request was sent"
    assert server.api_key not in err
    return err


async def new_contract(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], *values: str
) -> dict[str, Any]:
    """Create a tenancy in Ada's team with these NAME=VALUE values; return it as JSON."""
    argv = ["--json", "contracts", "create", str(PERSONAL_TEAM)]
    argv += ["--template", str(TENANCY_TEMPLATE), "--created-by", str(USER)]
    assert await cli(server, *argv, *(f"--value={value}" for value in values)) == 0
    contract: dict[str, Any] = json.loads(capsys.readouterr().out)
    return contract


def field_ids(fields: list[dict[str, Any]]) -> Iterator[int]:
    """The ids of identity fields given as JSON, depth-first (nested ones after their field)."""
    for field in fields:
        yield field["id"]
        for option in field["options"]:
            yield from field_ids(option["nested_fields"])


# -- parties identity-fields -----------------------------------------------------------


async def test_identity_fields_show_the_emulator_s_ids_labels_options_and_flags(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each field's label and id as the emulator has them, its flags, its options; --json too."""
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        fields = await client.identity_fields.list(
            TENANCY_TEMPLATE, roles=[Role.PARTY], side=Side.SECOND
        )
    assert await cli(server, *FIELDS, *SECOND_PARTY) == 0
    lines = capsys.readouterr().out.splitlines()

    walked = [field for _path, field in fields.walk()]
    shown = [line.strip() for line in lines if "(id " in line]
    assert [re.sub(r" \[.*", "", line) for line in shown] == [
        f"{field.label} (id {field.id})" for field in walked
    ]
    email = fields.find("Email")
    assert email is not None and f"Email (id {email.id}) [EMAIL]" in lines
    choice = fields.find("Are you a Tenant or Guarantor?")
    nested = fields.find("Please specify the name of the Tenant")
    assert choice is not None and nested is not None
    at = lines.index(f"{choice.label} (id {choice.id})")
    assert lines[at + 1 : at + 5] == [
        "  ( ) tenant",
        "  ( ) guarantor",
        f"      {nested.label} (id {nested.id}) [required]",  # under its option
        "  ( ) other",
    ]

    assert await cli(server, "--json", *FIELDS, *SECOND_PARTY) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert list(field_ids(as_json)) == [field.id for field in walked]
    assert as_json[0]["label"] == walked[0].label and "raw" not in as_json[0]


async def test_identity_fields_of_both_sides_say_which_side_each_is_for(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--side both: each side's fields apart (the service's answer does not say the side)."""
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        first = await client.identity_fields.list(
            TENANCY_TEMPLATE, roles=[Role.PARTY], side=Side.FIRST
        )
        second = await client.identity_fields.list(
            TENANCY_TEMPLATE, roles=[Role.PARTY], side=Side.SECOND
        )
    both = ["--role", "party", "--side", "both"]
    assert await cli(server, *FIELDS, *both) == 0
    out = capsys.readouterr().out
    mine, theirs = out.split("second side:\n")
    assert mine.startswith("first side:\n")
    assert all(f"(id {field.id})" in mine for _path, field in first.walk())
    assert all(f"(id {field.id})" in theirs for _path, field in second.walk())
    assert await cli(server, "--json", *FIELDS, *both) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert list(as_json) == ["first", "second"]
    assert list(field_ids(as_json["second"])) == [field.id for _path, field in second.walk()]


async def test_identity_fields_of_a_party_show_its_values_by_the_ids_parties_fields_takes(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--party shows a party's values (its roles and side read from it); an id shown works.

    The id printed for a field is the one `parties fields --value ID=VALUE` changes.
    """
    contract = str((await new_contract(server, capsys, "contract_name=Parties"))["id"])
    add = ["--json", "parties", "add", contract, "--user", str(GRACE), "--inviter", str(USER)]
    add += [*SECOND_PARTY, "--template", str(TENANCY_TEMPLATE), *GUARANTOR]
    assert await cli(server, *add) == 0
    party = str(json.loads(capsys.readouterr().out)[0]["id"])

    assert await cli(server, *FIELDS, "--party", party) == 0
    out = capsys.readouterr().out
    assert re.search(r"^First Name \(id \d+\) = 'Grace'$", out, re.MULTILINE)
    assert re.search(r"^Email \(id \d+\) \[EMAIL\] = 'grace@example.com'$", out, re.MULTILINE)
    assert "  (x) guarantor\n" in out and "  ( ) tenant\n" in out
    found = re.search(r"\n {6}Please specify the name of the Tenant \(id (\d+)\) .*'Alan", out)
    assert found, out
    tenant_name = found[1]

    change = ["parties", "fields", party, "--value", f"{tenant_name}=Ada Lovelace"]
    assert await cli(server, *change) == 0
    capsys.readouterr()
    assert await cli(server, "--json", *FIELDS, "--party", party, *SECOND_PARTY) == 0
    out, err = capsys.readouterr()
    assert err == ""  # the party's own side: no note
    (choice,) = [f for f in json.loads(out) if f["options"]]
    assert choice["value"] == "guarantor"
    (guarantor,) = [o for o in choice["options"] if o["name"] == "guarantor"]
    assert [(f["id"], f["value"]) for f in guarantor["nested_fields"]] == [
        (int(tenant_name), "Ada Lovelace")
    ]
    # --side of the other side: said, as every field would look empty.
    assert await cli(server, *FIELDS, "--party", party, "--role", "party", "--side", "first") == 0
    note = capsys.readouterr().err
    assert note == (
        f"note: party {party} is on the second side; these are the first side's fields, "
        "which do not hold its values\n"
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--side", "first"], "error: give --role and --side (the fields depend on both), or "),
        (["--role", "party"], "error: give --role and --side"),
        (["--role", "owner", "--side", "first"], "Invalid value for '--role': 'owner' is not"),
        (["--role", "party", "--side", "left"], "Invalid value for '--side': 'left' is not"),
        (["--party", "../admin"], "Invalid value for '--party': expected a numeric id"),
    ],
)
async def test_identity_fields_refuse_a_bad_input_before_sending(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """No roles or side (and no party), an unknown role or side, a bad id: exit 2, unsent."""
    assert said in await refused(server, capsys, *FIELDS, *argv)


# -- contracts create --source-contract ------------------------------------------------


async def test_a_copy_holds_its_source_s_values_and_the_values_given(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--source-contract makes a copy: shown (and stored) with the source's values, and ours."""
    source = await new_contract(
        server,
        capsys,
        "contract_name=Flat 1",
        "contract_rentFrequency=month",
        "contract_breakClause=breakClauseYes",
        "contract_breakClauseStart=6 months",
    )
    argv = ["--json", "contracts", "create", str(PERSONAL_TEAM), "--template"]
    argv += [str(TENANCY_TEMPLATE), "--created-by", str(USER), "--source-contract"]
    assert await cli(server, *argv, str(source["id"]), "--value", "contract_name=Flat 1 copy") == 0
    copy = json.loads(capsys.readouterr().out)
    assert copy["id"] != source["id"]
    expected = {
        "contract_name": "Flat 1 copy",
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }
    assert {f["name"]: f["value"] for f in copy["fields"]} == expected
    assert await cli(server, "--json", "contracts", "get", str(copy["id"])) == 0
    stored = json.loads(capsys.readouterr().out)
    assert {f["name"]: f["value"] for f in stored["fields"]} == expected

    assert await cli(server, "contracts", "create", *argv[3:], str(source["id"])) == 0
    table = capsys.readouterr().out  # the table, too, shows what the copy took
    assert re.search(r"^name +Flat 1$", table, re.MULTILINE)
    assert re.search(r"^contract_breakClauseStart +6 months$", table, re.MULTILINE)


async def test_a_copy_is_checked_with_its_source_s_values(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A nested term alone goes under the source's options; --require-all counts the source's.

    Both were refused, the check seeing only the values given (the lifecycle audit).
    """
    source = await new_contract(
        server,
        capsys,
        "contract_name=Flat 2",
        "contract_rentFrequency=month",
        "contract_breakClause=breakClauseYes",
        "contract_breakClauseStart=6 months",
    )
    argv = ["--json", "contracts", "create", str(PERSONAL_TEAM), "--template"]
    argv += [str(TENANCY_TEMPLATE), "--created-by", str(USER), "--source-contract"]
    argv += [str(source["id"]), "--value", "contract_breakClauseStart=3 months"]
    assert await cli(server, *argv) == 0
    copy = {f["name"]: f["value"] for f in json.loads(capsys.readouterr().out)["fields"]}
    assert copy["contract_breakClauseStart"] == "3 months"
    assert copy["contract_breakClause"] == "breakClauseYes"
    # --require-all: what the source answers is not missing; what neither answers is.
    with pytest.raises(TermValidationError) as caught:
        await cli(server, *argv, "--require-all")
    missing = {p.term for p in caught.value.problems if p.kind == "missing"}
    assert missing and not missing & set(copy)


async def test_a_copy_refuses_a_source_that_is_no_id(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source that is no id: exit 2, nothing sent."""
    create = ["contracts", "create", str(PERSONAL_TEAM), "--template", str(TENANCY_TEMPLATE)]
    said = "Invalid value for '--source-contract': expected a numeric"
    argv = ["--created-by", str(USER), "--source-contract", "12x"]
    assert said in await refused(server, capsys, *create, *argv)


# -- parties add-company ---------------------------------------------------------------


async def test_a_company_added_is_a_party_of_the_contract(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`parties add-company` adds the company, its details sent, and `parties list` shows it."""
    contract = str((await new_contract(server, capsys, "contract_name=Let"))["id"])
    add = ["--json", "parties", "add-company", contract, "--name", "Acme Lettings Ltd"]
    add += ["--company-number", "01234567", "--role", "party", "--side", "first"]
    add += ["--created-by", str(USER), "--registered-office", "address_line_1=3 Mill Lane"]
    add += ["--registered-office", "postal_code=BA1 1AA", "--address", "locality=Bath"]
    assert await cli(server, *add) == 0
    (company,) = json.loads(capsys.readouterr().out)
    assert company["name"] == "Acme Lettings Ltd" and company["user_id"] is None
    assert (company["roles"], company["side"]) == (["party"], "first")

    assert await cli(server, "--json", "parties", "list", contract) == 0
    assert [p["id"] for p in json.loads(capsys.readouterr().out)] == [company["id"]]
    assert await cli(server, "parties", "list", contract) == 0
    (row,) = capsys.readouterr().out.splitlines()[1:]
    # ID, USER, NAME, EMAIL, ROLES, SIDE, FIELDS FILLED, SIGNED: no user, no identity values.
    assert re.split(r"\s{2,}", row) == [
        str(company["id"]),
        "-",
        "Acme Lettings Ltd",
        "-",
        "party",
        "first",
        "0",
        "no",
    ]

    held = server.state.collaborators[company["id"]].company
    assert held is not None and held.number == "01234567"
    assert held.registered_office_address == {
        "address_line_1": "3 Mill Lane",
        "postal_code": "BA1 1AA",
    }
    assert held.address == {"locality": "Bath"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--registered-office", "street=3 Mill Lane"],
            "error: --registered-office 'street': the keys are address_line_1, address_line_2, "
            "locality, postal_code, country (did you mean 'street' → address_line_1?)\n",
        ),
        (
            ["--address", "postcode=BA1 1AA"],
            "error: --address 'postcode': the keys are address_line_1, address_line_2, "
            "locality, postal_code, country (did you mean 'postcode' → postal_code?)\n",
        ),
        (
            ["--address", "planet=Earth"],
            "error: --address 'planet': the keys are address_line_1, address_line_2, "
            "locality, postal_code, country\n",
        ),
        (["--address", "Bath"], "error: --address takes KEY=VALUE, got 'Bath'\n"),
        (["--name", "  "], "error: --name is blank: a company needs a name\n"),
        (["--role", "party_with_signatory"], "Invalid value for '--role': 'party_with_signatory'"),
        (["--side", "both"], "Invalid value for '--side': 'both' is not one of 'first', 'second'"),
        (["--created-by", "Ada"], "Invalid value for '--created-by': expected a numeric id"),
    ],
)
async def test_add_company_refuses_a_bad_input_before_sending(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """An unknown address key, a blank name, a role or side a company cannot have: exit 2."""
    given = {"--name": "Acme Ltd", "--role": "party", "--side": "first", "--created-by": str(USER)}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        given[flag] = value
    options = [item for pair in given.items() for item in pair]
    err = await refused(server, capsys, "parties", "add-company", "3332111581032244", *options)
    assert said in err


async def test_add_company_refuses_a_second_role(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--role twice (as `parties add` takes it): refused; the last one won, silently."""
    argv = ["parties", "add-company", "3332111581032244", "--name", "Acme Ltd"]
    argv += ["--role", "party", "--role", "witness", "--side", "first", "--created-by", str(USER)]
    err = await refused(server, capsys, *argv)
    assert err == "error: --role given 2 times (party, witness): a company takes one role\n"


# -- contracts html --------------------------------------------------------------------


async def test_contracts_html_writes_the_page_to_a_file_or_stdout(
    server: SandboxServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`contracts html` writes the contract's page: to contract-<id>.html, -o FILE, or -o -."""
    contract = str((await new_contract(server, capsys, "contract_name=Rose Cottage"))["id"])
    monkeypatch.chdir(tmp_path)
    assert await cli(server, "contracts", "html", contract) == 0
    page = (tmp_path / f"contract-{contract}.html").read_text(encoding="utf-8")
    assert "<title>Rose Cottage</title>" in page
    assert capsys.readouterr().out == (
        f"wrote {len(page.encode()):,} bytes to contract-{contract}.html\n"
    )

    target = tmp_path / "lease.html"
    assert await cli(server, "--json", "contracts", "html", contract, "-o", str(target)) == 0
    assert target.read_text(encoding="utf-8") == page
    assert json.loads(capsys.readouterr().out) == {
        "contract_id": int(contract),
        "file": str(target),
        "bytes": len(page.encode()),
    }
    assert await cli(server, "contracts", "html", contract, "-o", "-") == 0
    assert capsys.readouterr().out == page


async def test_contracts_html_shows_no_key_the_page_echoes(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A contract named with the command's own key: the page has [redacted] in its place."""
    contract = str((await new_contract(server, capsys, f"contract_name={server.api_key}"))["id"])
    target = tmp_path / "page.html"
    assert await cli(server, "contracts", "html", contract, "-o", str(target)) == 0
    assert await cli(server, "contracts", "html", contract, "-o", "-") == 0
    for page in (target.read_text(encoding="utf-8"), capsys.readouterr().out):
        assert server.api_key not in page
        assert "<title>[redacted]</title>" in page


async def test_contracts_pdf_shows_no_key_the_document_echoes(
    server: SandboxServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The PDF too: a contract named with the command's key has [redacted] in its place."""
    contract = str((await new_contract(server, capsys, f"contract_name={server.api_key}"))["id"])
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        assert server.api_key.encode() in await client.contracts.download_pdf(int(contract))
    target = tmp_path / "contract.pdf"
    assert await cli(server, "contracts", "pdf", contract, "-o", str(target)) == 0
    pdf = target.read_bytes()
    assert pdf.startswith(b"%PDF-") and server.api_key.encode() not in pdf
    assert b"*" * len(server.api_key) in pdf
    # Masked byte for byte: the cross-reference table and the stream lengths still hold.
    at = int(pdf.rsplit(b"startxref", 1)[1].split()[0])
    assert pdf[at:].startswith(b"xref")
    streams = re.findall(rb"/Length (\d+)\s*>>\s*stream\r?\n(.*?)\r?\nendstream", pdf, re.S)
    assert streams
    for length, body in streams:
        assert int(length) == len(body)


async def test_contracts_html_refuses_a_bad_id_before_sending(
    server: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contract id that is not one: exit 2, one usage line, nothing sent."""
    err = await refused(server, capsys, "contracts", "html", "../admin", "-o", "-")
    assert "Invalid value for 'CONTRACT_ID': expected a numeric id, got '../admin'" in err


# -- help ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["parties", "identity-fields"],
        ["parties", "add-company"],
        ["contracts", "html"],
        ["contracts", "create"],
    ],
)
def test_the_new_commands_and_options_have_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each new command, and each of its arguments and options, has a text in its help."""
    import click

    from contractsdk.cli._app import cli as root

    assert main([*argv, "--help"]) == 0
    assert "Also the connection options of contractsdk -h" in capsys.readouterr().out
    command: click.Command = root
    for name in argv:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    assert command.help
    for param in command.params:
        if not getattr(param, "hidden", False):
            assert param.help, (argv, param.name)
