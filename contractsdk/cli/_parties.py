"""``contractsdk parties …`` and ``contractsdk sign``: who is on a contract, and signing.

A party is a collaborator: a user on a contract with roles, a side and identity values
(docs/parties.md). ``parties add --template ID`` checks the values against the identity
fields of those roles and side before anything is sent (the contract's answer does not
name its template, so the CLI cannot find it alone); without ``--template`` the values go
unchecked and must be keyed by field id.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

import click

from contractsdk._exceptions import ConfigurationError, PermissionDeniedError
from contractsdk._ids import parse_id
from contractsdk.cli._app import argument, cli, numeric_id, require, runs
from contractsdk.cli._output import dump_json, print_table
from contractsdk.cli._resources import make_client, parse_pairs
from contractsdk.models import Collaborator, Role, Side

__all__ = [
    "parties_add",
    "parties_fields",
    "parties_list",
    "parties_remove",
    "parties_roles",
    "sign",
]

F = TypeVar("F", bound=Callable[..., Any])

ROLES = [role.value for role in Role]
#: The roles a party's roles can be changed to: the service's role-update form does not
#: take ``party_with_signatory`` (``collaborators.update_roles`` refuses it).
UPDATABLE_ROLES = [role for role in ROLES if role != Role.PARTY_WITH_SIGNATORY.value]
#: A party's side: ``both`` names the fields of either side, not where a party stands.
SIDES = [Side.FIRST.value, Side.SECOND.value]


def _show(args: argparse.Namespace, collaborators: list[Collaborator]) -> None:
    if args.json:
        return dump_json(collaborators)
    print_table(
        ["id", "user", "name", "email", "roles", "side", "fields filled", "signed"],
        [
            (
                c.id,
                c.user_id,
                c.name,
                c.email,
                ", ".join(c.roles),
                c.side,
                sum(1 for f in c.fields if f.value),
                c.signed,
            )
            for c in collaborators
        ],
    )


def _by_id(values: dict[str, str], flag: str) -> dict[Any, str]:
    """Keys that are digits become field ids; others stay labels (checked with a template).

    Raises:
        ConfigurationError: A key of digits that is no id (more than an int64 holds).
    """
    return {
        parse_id(key, f"{flag} field id") if key.isascii() and key.isdigit() else key: value
        for key, value in values.items()
    }


def _ids_only(values: dict[Any, str], why: str) -> None:
    """Refuse values keyed by a label or name where only field ids can be sent.

    Said here in the command line's words (``why``: the flag that would allow labels, or
    how to find the ids), before the SDK would say it in Python's (``template_id=``).

    Raises:
        ConfigurationError: Some keys are not field ids (each is listed).
    """
    labels = [key for key in values if not isinstance(key, int)]
    if labels:
        named = ", ".join(repr(key) for key in labels)
        raise ConfigurationError(f"--value {named}: {why}")


# -- the command tree ------------------------------------------------------------------
#
# A command's parameters are listed, in --help and its usage line, in the order of its
# decorators, top to bottom.


@cli.group()
def parties() -> None:
    """List, add and remove a contract's parties; change their roles and fields."""


CONTRACT = argument("contract_id", type=numeric_id, help="The contract's id.")
COLLABORATOR = argument(
    "collaborator_id", type=numeric_id, help="The party's collaborator id (parties list)."
)


def _role(choices: list[str]) -> Callable[[F], F]:
    return click.option(
        "--role",
        multiple=True,
        required=True,
        type=click.Choice(choices),
        help="A role; repeatable (at most two: 'collaborator' and one other).",
    )


# -- the commands ----------------------------------------------------------------------


@runs(parties, "list")
@CONTRACT
async def parties_list(args: argparse.Namespace) -> None:
    """List a contract's parties: roles, side, identity fields filled, signed."""
    async with make_client(args) as client:
        collaborators = await client.collaborators.list(args.contract_id)
    _show(args, collaborators)


@runs(parties, "add")
@CONTRACT
@click.option("--user", type=numeric_id, required=True, help="The user to add.")
@_role(ROLES)
@click.option(
    "--side",
    type=click.Choice(SIDES),
    required=True,
    help="Their side: first (the creator's, e.g. the landlord) or second.",
)
@click.option(
    "--value",
    multiple=True,
    metavar="LABEL=VALUE",
    help="An identity value, by field id, or label with --template; repeatable.",
)
@click.option("--inviter", type=numeric_id, help="The user inviting them (default: --user).")
@click.option(
    "--template",
    type=numeric_id,
    help="The contract's template version: check the values first.",
)
@click.option(
    "--require-all",
    is_flag=True,
    help="With --template: require every applicable field.",
)
async def parties_add(args: argparse.Namespace) -> None:
    """Add a user to a contract as a party, checking the identity values first.

    With --template, values may name fields by label or name and are checked against the
    identity fields of those roles and side (every problem listed, exit 3, nothing sent).
    """
    values = _by_id(parse_pairs(args.value, "--value", "LABEL=VALUE"), "--value")
    require(
        not args.require_all or args.template is not None,
        "--require-all needs --template: the identity fields to check the values against",
    )
    if args.template is None:
        _ids_only(
            values,
            "without --template a field must be given by its id; give --template ID (the "
            "contract's template version) to name fields by label",
        )
    async with make_client(args) as client:
        try:
            added = await client.collaborators.create(
                args.contract_id,
                user_id=args.user,
                inviter_id=args.inviter if args.inviter is not None else args.user,
                roles=list(args.role),
                side=args.side,
                values=values,
                template_id=args.template,
                require_all=args.require_all,
            )
        except PermissionDeniedError as exc:
            if args.inviter is None:  # the party invited itself: usual for an outsider
                exc.args = (
                    f"{exc.message}; the inviter is --user unless --inviter names a member "
                    "of the contract's team (a party from outside it, such as a tenant, "
                    "needs one)",
                )
            raise
        shown = await client.collaborators.get(added.id) if added.id is not None else added
    _show(args, [shown])


@runs(parties, "remove")
@COLLABORATOR
async def parties_remove(args: argparse.Namespace) -> None:
    """Remove a party from its contract."""
    async with make_client(args) as client:
        await client.collaborators.delete(args.collaborator_id)
    if args.json:
        return dump_json({"deleted": args.collaborator_id})
    click.echo(f"removed collaborator {args.collaborator_id}")


@runs(parties, "roles")
@COLLABORATOR
@_role(UPDATABLE_ROLES)
async def parties_roles(args: argparse.Namespace) -> None:
    """Change a party's roles (at most two, and then one is 'collaborator')."""
    async with make_client(args) as client:
        collaborator = await client.collaborators.update_roles(
            args.collaborator_id, roles=list(args.role)
        )
    _show(args, [collaborator])


@runs(parties, "fields")
@COLLABORATOR
@click.option(
    "--value",
    multiple=True,
    required=True,
    metavar="ID=VALUE",
    help="An identity field's new value; repeatable.",
)
async def parties_fields(args: argparse.Namespace) -> None:
    """Change a party's identity values, by field id."""
    values = parse_pairs(args.value, "--value", "ID=VALUE")
    if not values:
        raise ConfigurationError("nothing to change: give --value ID=VALUE")
    by_id = _by_id(values, "--value")
    _ids_only(
        by_id,
        "a field must be given by its id (each field's id is in "
        "`contractsdk parties list CONTRACT_ID --json`)",
    )
    async with make_client(args) as client:
        collaborator = await client.collaborators.update_fields(args.collaborator_id, values=by_id)
    _show(args, [collaborator])


@runs(cli, "sign")
@COLLABORATOR
@click.option(
    "--image",
    type=click.Path(dir_okay=False),
    help="A PNG or JPEG signature (at most 512 KiB).",
)
@click.option("--saved", is_flag=True, help="Sign with the user's saved signature.")
async def sign(args: argparse.Namespace) -> None:
    """Sign a contract as a party: with an image (PNG or JPEG), or the saved signature."""
    if (args.image is None) == (not args.saved):
        raise ConfigurationError("give one of --image FILE or --saved")
    async with make_client(args) as client:
        if args.saved:
            signed = await client.collaborators.sign_with_saved_signature(args.collaborator_id)
        else:
            signed = await client.collaborators.sign(args.collaborator_id, signature=args.image)
    _show(args, [signed])
