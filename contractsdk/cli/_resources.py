"""The resource commands: users, teams, types, templates, terms, contracts."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from contractsdk._client import ContractClient
from contractsdk._config import ENV_VARS, Environment, _is_loopback, environment_from_env
from contractsdk._credentials import ClientCredentials
from contractsdk._exceptions import ConfigurationError
from contractsdk._redact import scrub, scrub_bytes
from contractsdk.bulk import resolve_contract_type
from contractsdk.cli._app import argument, cli, numeric_id, require, runs
from contractsdk.cli._output import (
    console,
    dump_json,
    print_pairs,
    print_table,
    say,
    write_file,
)
from contractsdk.models import Contract, Team, User

__all__ = ["make_client", "parse_pairs"]

F = TypeVar("F", bound=Callable[..., Any])


def make_client(args: argparse.Namespace, **options: Any) -> ContractClient:
    """Build a client from the connection flags, the CONTRACTSDK_* variables filling gaps.

    Args:
        args: The parsed command line.
        options: More :class:`ContractClient` options (e.g. ``retries=None``).
    """
    client_id = getattr(args, "client_id", None)
    client_secret = getattr(args, "client_secret", None)
    credentials = None
    if client_id or client_secret:
        if not (client_id and client_secret):
            raise ConfigurationError("--client-id and --client-secret go together")
        credentials = ClientCredentials(client_id=client_id, client_secret=client_secret)
    api_key = getattr(args, "api_key", None)
    if not api_key and credentials is None:
        env = environment_from_env()
        # Any credential variable set: the client says what is wrong with them (both kinds
        # set, half a pair), naming the variables.
        require(
            bool({"api_key", "client_id", "client_secret"} & env.keys()),
            "no credentials: set CONTRACTSDK_API_KEY (or give --api-key), or "
            "CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET (or --client-id and "
            "--client-secret); for the emulator, `contractsdk sandbox` prints them",
        )
    redis = getattr(args, "redis", None)
    if redis is not None:
        # Else CONTRACTSDK_REDIS_URL, if set; an empty --redis "" shares nothing, whatever
        # the variable says (a flag that names none would have no way to turn it off).
        options.setdefault("redis", redis or None)
    client = ContractClient(
        api_key=api_key,
        credentials=credentials,
        environment=getattr(args, "environment", None),
        base_url=getattr(args, "base_url", None),
        **options,
    )
    _note_base_url_from_env(args, client)
    _note_emulator_key(api_key or os.environ.get(ENV_VARS["api_key"]), client)
    return client


#: How the embedded emulator's API keys begin (`contractsdk sandbox` prints them).
EMULATOR_KEY_PREFIX = "sandbox-key-"


def _note_emulator_key(api_key: str | None, client: ContractClient) -> None:
    """Say when the emulator's API key goes anywhere but a local address.

    Its banner exports the key and the URL together; the key alone sent the requests to
    the real sandbox, where they fail to connect or are refused, and nothing said why.
    Never quotes the key.
    """
    if not api_key or not api_key.startswith(EMULATOR_KEY_PREFIX):
        return
    url = client.environment.base_url
    if _is_loopback(urllib.parse.urlsplit(url).hostname or ""):
        return
    say(
        f"note: the API key looks like one of the embedded emulator's (`contractsdk sandbox`), but "
        f"requests go to {url}; give --base-url (or export {ENV_VARS['base_url']}) as the "
        "emulator printed it",
        err=True,
    )


def _note_base_url_from_env(args: argparse.Namespace, client: ContractClient) -> None:
    """Say when CONTRACTSDK_BASE_URL, not the --environment given, decides where requests go.

    The precedence is on purpose (docs/authentication.md: a base URL serves the API from
    elsewhere, with the environment's rules), but an exported sandbox URL silently turned
    ``--environment production`` into the local emulator. Said once, on stderr, before
    anything is sent.
    """
    named = getattr(args, "environment", None)
    if not named or getattr(args, "base_url", None) or not os.environ.get(ENV_VARS["base_url"]):
        return
    url = client.environment.base_url  # checked: no user info, query or fragment in it
    if url == Environment.from_name(named).base_url:
        return
    say(
        f"note: {ENV_VARS['base_url']} ({url}) decides where requests go, not "
        f"--environment {named}; unset it or pass --base-url to choose",
        err=True,
    )


def _json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def _parse_values(args: argparse.Namespace) -> dict[str, str]:
    """Read ``--values FILE`` (a JSON object) then ``--value NAME=VALUE`` flags over it."""
    values: dict[str, Any] = {}
    if args.values_file:
        path = Path(args.values_file)
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise ConfigurationError(f"{path} is not JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigurationError(f"{path} must hold a JSON object of term names to values")
        values.update(loaded)
    values.update(parse_pairs(args.value, "--value", "NAME=VALUE"))
    return values


def parse_pairs(items: Sequence[str] | None, flag: str, shape: str) -> dict[str, str]:
    """Read repeated ``NAME=VALUE`` flags into a dict (the last one of a name wins).

    Raises:
        ConfigurationError: An item without ``=`` or without a name.
    """
    values: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(f"{flag} takes {shape}, got {item!r}")
        values[name.strip()] = value
    return values


def _contract_rows(contracts: list[Contract]) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.created_date, len(c.fields)) for c in contracts]


def _show_teams(args: argparse.Namespace, teams: list[Team] | Team) -> None:
    if _json(args):
        return dump_json(teams)
    rows = [teams] if isinstance(teams, Team) else teams
    print_table(["id", "name", "created"], [(t.id, t.name, t.created) for t in rows])


def _show_users(users: list[User]) -> None:
    print_table(
        ["id", "first name", "last name", "email", "created"],
        [(u.id, u.first_name, u.last_name, u.email, u.created) for u in users],
    )


def _show_contract(args: argparse.Namespace, contract: Contract) -> None:
    if _json(args):
        return dump_json(contract)
    known = [
        ("id", contract.id),
        ("name", contract.name),
        ("created", contract.created_date),
        ("purchased", contract.purchased_date),
        ("completed", contract.completed_date),
    ]
    print_pairs([(label, value) for label, value in known if value is not None])
    if contract.fields:
        console().print()
        print_table(["field", "value"], [(f.name or f.id, f.value) for f in contract.fields])


# -- the command tree ------------------------------------------------------------------
#
# The groups and the shared parameters come first: each command's decorators below name
# them. A command's parameters are listed, in --help and its usage line, in the order of its
# decorators, top to bottom.


@cli.group()
def users() -> None:
    """Read, list and create users."""


@cli.group()
def teams() -> None:
    """List, create and rename teams."""


@cli.group()
def types() -> None:
    """List contract types."""


@cli.group()
def templates() -> None:
    """List a contract type's template versions."""


@cli.group()
def terms() -> None:
    """Show a template version's terms."""


@cli.group()
def contracts() -> None:
    """Create, read, change, download and delete contracts."""


USER_ID = argument("user_id", type=numeric_id, help="The user's id.")
TEAM_ID = argument("team_id", type=numeric_id, help="The team's id.")
CONTRACT_ID = argument("contract_id", type=numeric_id, help="The contract's id.")
NAME = click.option("--name", required=True, help="The team's name.")


def _value_options(*, create: bool) -> Callable[[F], F]:
    """Add --value, --values, --require-all and --template, in that order.

    Args:
        create: For ``contracts create`` (--template required) rather than ``update``.
    """
    options = [
        click.option(
            "--value",
            multiple=True,
            metavar="NAME=VALUE",
            help="A term's value; repeatable.",
        ),
        click.option(
            "--values",
            "values_file",
            metavar="FILE",
            help="A JSON object of term names to values (--value flags win).",
        ),
        click.option(
            "--require-all",
            is_flag=True,
            help="Refuse a contract with unanswered terms"
            + ("." if create else " (with --template)."),
        ),
        click.option(
            "--template",
            type=numeric_id,
            required=create,
            help="The template version id"
            + ("." if create else " (to check the values against its terms)."),
        ),
    ]

    def decorate(handler: F) -> F:
        for option in reversed(options):  # decorators apply bottom-up
            handler = option(handler)
        return handler

    return decorate


# -- the commands ----------------------------------------------------------------------


@runs(users, "get")
@USER_ID
async def users_get(args: argparse.Namespace) -> None:
    """Show a user."""
    async with make_client(args) as client:
        user = await client.users.get(args.user_id)
    if _json(args):
        return dump_json(user)
    _show_users([user])


@runs(users, "list")
async def users_list(args: argparse.Namespace) -> None:
    """List the users the credential can see."""
    async with make_client(args) as client:
        users = await client.users.list()
    if _json(args):
        return dump_json(users)
    _show_users(users)


@runs(users, "create")
@click.option("--email", required=True, help="The user's email address (unique).")
@click.option("--first-name", required=True, help="First name.")
@click.option("--last-name", required=True, help="Last name.")
async def users_create(args: argparse.Namespace) -> None:
    """Create a user (to add as a party to a contract)."""
    async with make_client(args) as client:
        user = await client.users.create(
            email=args.email, first_name=args.first_name, last_name=args.last_name
        )
    if _json(args):
        return dump_json(user)
    _show_users([user])


@runs(teams, "list")
@argument("user_id", type=numeric_id, help="The user whose teams to list.")
async def teams_list(args: argparse.Namespace) -> None:
    """List a user's teams."""
    async with make_client(args) as client:
        teams = await client.teams.list(args.user_id)
    _show_teams(args, teams)


@runs(teams, "create")
@argument("user_id", type=numeric_id, help="The team's owner.")
@NAME
async def teams_create(args: argparse.Namespace) -> None:
    """Create a team owned by a user."""
    async with make_client(args) as client:
        team = await client.teams.create(args.user_id, name=args.name)
    _show_teams(args, team)


@runs(teams, "rename")
@TEAM_ID
@NAME
async def teams_rename(args: argparse.Namespace) -> None:
    """Rename a team."""
    async with make_client(args) as client:
        team = await client.teams.rename(args.team_id, name=args.name)
    _show_teams(args, team)


@runs(types, "list")
@argument(
    "team_id",
    type=numeric_id,
    required=False,
    help="The team whose contract types to list (default: the public ones).",
)
async def types_list(args: argparse.Namespace) -> None:
    """List the contract types a team can create (or the public ones)."""
    async with make_client(args) as client:
        types = await client.contract_types.list(args.team_id)
    if _json(args):
        return dump_json(types)
    print_table(["id", "name"], [(t.id, t.name) for t in types])


@runs(templates, "list")
@TEAM_ID
@argument("contract_type", help="The contract type's id, or its name (as `types list` shows it).")
async def templates_list(args: argparse.Namespace) -> None:
    """List a contract type's template versions, newest first."""
    async with make_client(args) as client:
        # As bulk create takes it: an id, or a name among the team's types.
        kind = await resolve_contract_type(client, args.contract_type, team_id=args.team_id)
        templates = await client.templates.list(args.team_id, kind)
    if _json(args):
        return dump_json(templates)
    rows = [(t.id, t.version, "latest" if i == 0 else "") for i, t in enumerate(templates)]
    print_table(["id", "version", ""], rows)


@runs(terms, "show")
@argument("template_id", type=numeric_id, help="The template version's id.")
async def terms_show(args: argparse.Namespace) -> None:
    """Show a template version's terms as a tree."""
    async with make_client(args) as client:
        terms = await client.terms.list(args.template_id)
    if _json(args):
        return dump_json(list(terms))
    say(terms.tree())


@runs(contracts, "list")
@argument("team_id", type=numeric_id, help="The team whose contracts to list.")
async def contracts_list(args: argparse.Namespace) -> None:
    """List a team's contracts."""
    async with make_client(args) as client:
        contracts = await client.contracts.list(args.team_id)
    if _json(args):
        return dump_json(contracts)
    print_table(["id", "name", "created", "fields"], _contract_rows(contracts))


@runs(contracts, "get")
@CONTRACT_ID
async def contracts_get(args: argparse.Namespace) -> None:
    """Show a contract and its values."""
    async with make_client(args) as client:
        contract = await client.contracts.get(args.contract_id)
    _show_contract(args, contract)


@runs(contracts, "create")
@argument("team_id", type=numeric_id, help="The team that holds the contract.")
@_value_options(create=True)
@click.option(
    "--created-by",
    type=numeric_id,
    required=True,
    metavar="USER_ID",
    help="The user creating it.",
)
@click.option(
    "--source-contract",
    type=numeric_id,
    metavar="CONTRACT_ID",
    help="Make it a copy of this contract (of the same --template), values and all.",
)
@click.option(
    "--idempotency-key",
    help="Your own Idempotency-Key (a create repeated is made once where keys are honoured).",
)
async def contracts_create(args: argparse.Namespace) -> None:
    """Create a contract, checking its values first.

    With --source-contract it is a copy of that contract: it takes the source's values,
    and the values given replace theirs (checked with the source's, which are read when a
    nested term comes without its ancestors, or with --require-all). The copy shown is
    read back, with the values it took.
    """
    values = _parse_values(args)
    async with make_client(args) as client:
        contract = await client.contracts.create(
            args.team_id,
            template_id=args.template,
            created_by=args.created_by,
            values=values,
            require_all=args.require_all,
            source_contract=args.source_contract,
            idempotency_key=args.idempotency_key,
        )
    _show_contract(args, contract)


@runs(contracts, "update")
@CONTRACT_ID
@_value_options(create=False)
async def contracts_update(args: argparse.Namespace) -> None:
    """Change a contract's values."""
    values = _parse_values(args)
    if not values:
        raise ConfigurationError("nothing to change: give --value NAME=VALUE or --values FILE")
    require(
        not args.require_all or args.template is not None,
        "--require-all needs --template: the terms to check the values against",
    )
    async with make_client(args) as client:
        contract = await client.contracts.update(
            args.contract_id,
            values=values,
            template_id=args.template,
            require_all=args.require_all,
        )
    _show_contract(args, contract)


@runs(contracts, "delete")
@CONTRACT_ID
async def contracts_delete(args: argparse.Namespace) -> None:
    """Delete a contract."""
    async with make_client(args) as client:
        await client.contracts.delete(args.contract_id)
    if _json(args):
        return dump_json({"deleted": args.contract_id})
    click.echo(f"deleted contract {args.contract_id}")


def _output(suffix: str) -> Callable[[F], F]:
    """``-o/--output FILE`` of a downloaded document (default ``contract-<id>.SUFFIX``)."""
    return click.option(
        "-o",
        "--output",
        metavar="FILE",
        help=f"The file to write (default contract-<id>.{suffix}; - for stdout).",
    )


@runs(contracts, "pdf")
@CONTRACT_ID
@_output("pdf")
async def contracts_pdf(args: argparse.Namespace) -> None:
    """Download a contract as PDF."""
    async with make_client(args) as client:
        pdf = await client.contracts.download_pdf(args.contract_id)
    # As the HTML page: a key the document shows as it is (not in a compressed stream)
    # reaches neither the file nor the terminal. Masked byte for byte: the PDF's offsets
    # and lengths still hold.
    await _write_document(args, scrub_bytes(pdf, keep_length=True), "pdf")


@runs(contracts, "html")
@CONTRACT_ID
@_output("html")
async def contracts_html(args: argparse.Namespace) -> None:
    """Download a contract as HTML (written in UTF-8)."""
    async with make_client(args) as client:
        page = await client.contracts.download_html(args.contract_id)
    # Text, so scrubbed as all the CLI prints is: a value that echoes the key shows as
    # [redacted], in the file too.
    await _write_document(args, scrub(page).encode("utf-8"), "html")


async def _write_document(args: argparse.Namespace, document: bytes, suffix: str) -> None:
    """Write a downloaded document to ``--output`` (default ``contract-<id>.SUFFIX``; - stdout)."""
    output = args.output or f"contract-{args.contract_id}.{suffix}"
    if output == "-":
        sys.stdout.buffer.write(document)
        return
    await write_file(Path(output), document)
    if _json(args):
        return dump_json({"contract_id": args.contract_id, "file": output, "bytes": len(document)})
    click.echo(f"wrote {len(document):,} bytes to {output}")
