"""The resource commands: users, teams, types, templates, terms, contracts."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from contractsdk._auth import ClientCredentials
from contractsdk._client import ContractClient
from contractsdk._exceptions import ConfigurationError
from contractsdk.cli._output import dump_json, print_table
from contractsdk.models import Contract, Team

__all__ = ["add_commands", "make_client"]


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
    redis = getattr(args, "redis", None)
    if redis is not None:
        options.setdefault("redis", redis)  # else CONTRACTSDK_REDIS_URL, if set
    return ContractClient(
        api_key=getattr(args, "api_key", None),
        credentials=credentials,
        environment=getattr(args, "environment", None),
        base_url=getattr(args, "base_url", None),
        **options,
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
    for item in args.value or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(f"--value takes NAME=VALUE, got {item!r}")
        values[name.strip()] = value
    return values


def _contract_rows(contracts: list[Contract]) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.created_date, len(c.fields)) for c in contracts]


def _show_teams(args: argparse.Namespace, teams: list[Team] | Team) -> None:
    if _json(args):
        return dump_json(teams)
    rows = [teams] if isinstance(teams, Team) else teams
    print_table(["id", "name", "created"], [(t.id, t.name, t.created) for t in rows])


async def users_get(args: argparse.Namespace) -> None:
    """Show a user."""
    async with make_client(args) as client:
        user = await client.users.get(args.user_id)
    if _json(args):
        return dump_json(user)
    print_table(
        ["id", "first name", "last name", "email", "created"],
        [(user.id, user.first_name, user.last_name, user.email, user.created)],
    )


async def teams_list(args: argparse.Namespace) -> None:
    """List a user's teams."""
    async with make_client(args) as client:
        teams = await client.teams.list(args.user_id)
    _show_teams(args, teams)


async def teams_create(args: argparse.Namespace) -> None:
    """Create a team owned by a user."""
    async with make_client(args) as client:
        team = await client.teams.create(args.user_id, name=args.name)
    _show_teams(args, team)


async def teams_rename(args: argparse.Namespace) -> None:
    """Rename a team."""
    async with make_client(args) as client:
        team = await client.teams.rename(args.team_id, name=args.name)
    _show_teams(args, team)


async def types_list(args: argparse.Namespace) -> None:
    """List the contract types a team can create (or the public ones)."""
    async with make_client(args) as client:
        types = await client.contract_types.list(args.team_id)
    if _json(args):
        return dump_json(types)
    print_table(["id", "name"], [(t.id, t.name) for t in types])


async def templates_list(args: argparse.Namespace) -> None:
    """List a contract type's template versions, newest first."""
    async with make_client(args) as client:
        templates = await client.templates.list(args.team_id, args.contract_type_id)
    if _json(args):
        return dump_json(templates)
    rows = [(t.id, t.version, "latest" if i == 0 else "") for i, t in enumerate(templates)]
    print_table(["id", "version", ""], rows)


async def terms_show(args: argparse.Namespace) -> None:
    """Show a template version's terms as a tree."""
    async with make_client(args) as client:
        terms = await client.terms.list(args.template_id)
    if _json(args):
        return dump_json(list(terms))
    print(terms.tree())


async def contracts_list(args: argparse.Namespace) -> None:
    """List a team's contracts."""
    async with make_client(args) as client:
        contracts = await client.contracts.list(args.team_id)
    if _json(args):
        return dump_json(contracts)
    print_table(["id", "name", "created", "fields"], _contract_rows(contracts))


def _show_contract(args: argparse.Namespace, contract: Contract) -> None:
    if _json(args):
        return dump_json(contract)
    print_table(["id", "name", "created"], [(contract.id, contract.name, contract.created_date)])
    if contract.fields:
        print()
        print_table(["field", "value"], [(f.name or f.id, f.value) for f in contract.fields])


async def contracts_get(args: argparse.Namespace) -> None:
    """Show a contract and its values."""
    async with make_client(args) as client:
        contract = await client.contracts.get(args.contract_id)
    _show_contract(args, contract)


async def contracts_create(args: argparse.Namespace) -> None:
    """Create a contract, checking its values first."""
    values = _parse_values(args)
    async with make_client(args) as client:
        contract = await client.contracts.create(
            args.team_id,
            template_id=args.template,
            created_by=args.created_by,
            values=values,
            require_all=args.require_all,
            idempotency_key=args.idempotency_key,
        )
    _show_contract(args, contract)


async def contracts_update(args: argparse.Namespace) -> None:
    """Change a contract's values."""
    values = _parse_values(args)
    if not values:
        raise ConfigurationError("nothing to change: give --value NAME=VALUE or --values FILE")
    async with make_client(args) as client:
        contract = await client.contracts.update(
            args.contract_id,
            values=values,
            template_id=args.template,
            require_all=args.require_all,
        )
    _show_contract(args, contract)


async def contracts_delete(args: argparse.Namespace) -> None:
    """Delete a contract."""
    async with make_client(args) as client:
        await client.contracts.delete(args.contract_id)
    if _json(args):
        return dump_json({"deleted": args.contract_id})
    print(f"deleted contract {args.contract_id}")


async def contracts_pdf(args: argparse.Namespace) -> None:
    """Download a contract as PDF."""
    async with make_client(args) as client:
        pdf = await client.contracts.download_pdf(args.contract_id)
    output = args.output or f"contract-{args.contract_id}.pdf"
    if output == "-":
        sys.stdout.buffer.write(pdf)
        return
    await asyncio.to_thread(Path(output).write_bytes, pdf)
    if _json(args):
        return dump_json({"contract_id": args.contract_id, "file": output, "bytes": len(pdf)})
    print(f"wrote {len(pdf):,} bytes to {output}")


def _id(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a numeric id, got {text!r}")
    return int(text)


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """Add the resource commands to the top-level command list."""

    def group(name: str, help_text: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        parser = commands.add_parser(name, help=help_text)
        return parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(
        parent: argparse._SubParsersAction[argparse.ArgumentParser], name: str, handler: Any
    ) -> argparse.ArgumentParser:
        first_line = (handler.__doc__ or "").strip().splitlines()[0]
        parser = parent.add_parser(name, parents=[common], help=first_line)
        parser.set_defaults(handler=handler)
        return parser

    users = group("users", "read users")
    action(users, "get", users_get).add_argument("user_id", type=_id)

    teams = group("teams", "list, create and rename teams")
    action(teams, "list", teams_list).add_argument("user_id", type=_id)
    create = action(teams, "create", teams_create)
    create.add_argument("user_id", type=_id)
    create.add_argument("--name", required=True)
    rename = action(teams, "rename", teams_rename)
    rename.add_argument("team_id", type=_id)
    rename.add_argument("--name", required=True)

    types = group("types", "list contract types")
    action(types, "list", types_list).add_argument("team_id", type=_id, nargs="?")

    templates = group("templates", "list template versions")
    listing = action(templates, "list", templates_list)
    listing.add_argument("team_id", type=_id)
    listing.add_argument("contract_type_id", type=_id)

    terms = group("terms", "show a template version's terms")
    action(terms, "show", terms_show).add_argument("template_id", type=_id)

    contracts = group("contracts", "create, read, change and delete contracts")
    action(contracts, "list", contracts_list).add_argument("team_id", type=_id)
    action(contracts, "get", contracts_get).add_argument("contract_id", type=_id)
    for name, handler, target in [
        ("create", contracts_create, "team_id"),
        ("update", contracts_update, "contract_id"),
    ]:
        parser = action(contracts, name, handler)
        parser.add_argument(target, type=_id)
        parser.add_argument("--value", action="append", metavar="NAME=VALUE", help="a term value")
        parser.add_argument("--values", dest="values_file", metavar="FILE", help="JSON object")
        parser.add_argument("--require-all", action="store_true", help="refuse unanswered terms")
        parser.add_argument(
            "--template", type=_id, required=name == "create", help="template version id"
        )
        if name == "create":
            parser.add_argument("--created-by", type=_id, required=True, metavar="USER_ID")
            parser.add_argument("--idempotency-key", help="your own key for a safe repeat")
    action(contracts, "delete", contracts_delete).add_argument("contract_id", type=_id)
    pdf = action(contracts, "pdf", contracts_pdf)
    pdf.add_argument("contract_id", type=_id)
    pdf.add_argument("-o", "--output", help="file to write (- for stdout)")
