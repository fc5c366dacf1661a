"""``contractsdk parties …`` and ``contractsdk sign``: who is on a contract, and signing.

A party is a collaborator: a user on a contract with roles, a side and identity values
(docs/parties.md), or a company (``parties add-company``). ``parties add --template ID``
checks the values against the identity fields of those roles and side before anything is
sent (the contract's answer does not name its template, so the CLI cannot find it alone);
without ``--template`` the values go unchecked and must be keyed by field id.
``parties identity-fields`` shows those fields, and so their ids.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import attrs
import click

from contractsdk._exceptions import ConfigurationError, PermissionDeniedError
from contractsdk._ids import parse_id
from contractsdk.cli._app import argument, cli, numeric_id, require, runs
from contractsdk.cli._output import dump_json, print_table, say
from contractsdk.cli._resources import make_client, parse_pairs
from contractsdk.models import Address, Collaborator, Role, Side
from contractsdk.validation._rules import closest

__all__ = [
    "parties_add",
    "parties_add_company",
    "parties_fields",
    "parties_identity_fields",
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
#: The sides whose identity fields can be read: ``both`` too (the fields of either side).
FIELD_SIDES = [side.value for side in Side]
#: A company's role: ``CompanyFieldsDTO`` lists the same roles as the role-update form
#: (``companies.create`` refuses ``party_with_signatory``).
COMPANY_ROLES = UPDATABLE_ROLES
#: The keys of ``--registered-office`` and ``--address`` (an :class:`Address`'s fields).
ADDRESS_KEYS = [field.name for field in attrs.fields(Address)]
#: Those keys, and the words people use for them, for a did-you-mean.
ADDRESS_SPELLINGS = {key: key for key in ADDRESS_KEYS} | {
    "street": "address_line_1",
    "line1": "address_line_1",
    "line2": "address_line_2",
    "city": "locality",
    "town": "locality",
    "zip": "postal_code",
}


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


def _address(items: Sequence[str], flag: str) -> dict[str, str] | None:
    """Read repeated ``KEY=VALUE`` address flags; None when none was given.

    Raises:
        ConfigurationError: An item without ``=``, or a key that is not an address's.
    """
    address = parse_pairs(items, flag, "KEY=VALUE")
    unknown = [key for key in address if key not in ADDRESS_KEYS]
    if unknown:
        named = ", ".join(repr(key) for key in unknown)
        meant = [
            f"{key!r} → {hit}"
            for key in unknown
            if (hit := closest(key, ADDRESS_SPELLINGS, str.casefold)) is not None
        ]
        hint = f" (did you mean {', '.join(meant)}?)" if meant else ""
        raise ConfigurationError(f"{flag} {named}: the keys are {', '.join(ADDRESS_KEYS)}{hint}")
    return address or None


# -- the command tree ------------------------------------------------------------------
#
# A command's parameters are listed, in --help and its usage line, in the order of its
# decorators, top to bottom.


@cli.group()
def parties() -> None:
    """List, add and remove a contract's parties; show and change their identity fields."""


CONTRACT = argument("contract_id", type=numeric_id, help="The contract's id.")
COLLABORATOR = argument(
    "collaborator_id", type=numeric_id, help="The party's collaborator id (parties list)."
)


class _Roles(click.Choice[str]):
    """The service's roles; a contract's own words for its parties get a hint.

    A landlord and a tenant are not roles: each is a ``party``, and the side says which.
    """

    #: What a user types for a party, and the side that party is on.
    SIDES_OF: ClassVar[Mapping[str, str]] = {
        "landlord": "first",
        "owner": "first",
        "tenant": "second",
        "guarantor": "second",
    }

    def __init__(self, choices: Sequence[str]) -> None:
        super().__init__(choices, case_sensitive=False)  # "Party" is meant as "party"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        word = str(value).strip().casefold()
        side = self.SIDES_OF.get(word)
        if side is not None:
            self.fail(
                f"{value!r} is not a role: a {word} is a party, on the {side} side "
                f"(--role party --side {side})",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def _role(choices: list[str]) -> Callable[[F], F]:
    return click.option(
        "--role",
        multiple=True,
        required=True,
        type=_Roles(choices),
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


@runs(parties, "identity-fields")
@argument("template_id", type=numeric_id, help="The contract's template version id.")
@click.option(
    "--role",
    multiple=True,
    type=_Roles(ROLES),
    help="A role whose fields to show; repeatable (with --party: default its roles).",
)
@click.option(
    "--side",
    type=click.Choice(FIELD_SIDES),
    help="The side whose fields to show (both: each side's, apart; with --party: default "
    "its side).",
)
@click.option(
    "--party",
    type=numeric_id,
    metavar="COLLABORATOR_ID",
    help="Show this party's values in the fields (a party of a contract of TEMPLATE_ID).",
)
async def parties_identity_fields(args: argparse.Namespace) -> None:
    """Show the identity fields a party fills in, with each field's id.

    Each field's label and id, the service's flags (its validation type, required) and its
    options, the fields nested under an option indented beneath it. The ids are what
    `parties fields --value ID=VALUE` takes. With --party, each field shows that party's
    value (a chosen option marked (x)); its roles and side are read from the party unless
    --role and --side are given.
    """
    require(
        args.party is not None or bool(args.role and args.side),
        "give --role and --side (the fields depend on both), or --party COLLABORATOR_ID "
        "to show a party's fields",
    )
    async with make_client(args) as client:
        if args.party is None and args.side == Side.BOTH.value:
            # The service's answer for both sides does not say which side a field is
            # for: each side's fields are read, and shown, apart.
            sides = {
                side: await client.identity_fields.list(
                    args.template_id, roles=list(args.role), side=side
                )
                for side in SIDES
            }
            if args.json:
                return dump_json({side: list(shown) for side, shown in sides.items()})
            return say(
                "\n\n".join(f"{side} side:\n{shown.tree()}" for side, shown in sides.items())
            )
        if args.party is None:
            fields = await client.identity_fields.list(
                args.template_id, roles=list(args.role), side=args.side
            )
        else:
            party = await client.collaborators.get(args.party)
            roles = list(args.role) or list(party.roles)
            side: str | None = args.side or party.side
            if not roles or side is None:
                raise ConfigurationError(
                    f"the service did not say party {args.party}'s roles and side; "
                    "give --role and --side"
                )
            if args.side is not None and party.side is not None and args.side != party.side:
                # Its values are in its own side's fields: these would all look empty.
                say(
                    f"note: party {args.party} is on the {party.side} side; these are the "
                    f"{args.side} side's fields, which do not hold its values",
                    err=True,
                )
            fields = await client.identity_fields.of_collaborator(
                args.template_id, args.party, roles=roles, side=side
            )
    if args.json:
        return dump_json(list(fields))
    say(fields.tree())


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


@runs(parties, "add-company")
@CONTRACT
@click.option("--name", required=True, help="The company's name.")
@click.option("--company-number", metavar="NUMBER", help="Its registration number.")
@click.option(
    "--role",
    required=True,
    multiple=True,  # taken to refuse a second: click keeps only the last of a plain option
    type=_Roles(COMPANY_ROLES),
    help="Its role (one; a company cannot be party_with_signatory).",
)
@click.option(
    "--side",
    type=click.Choice(SIDES),
    required=True,
    help="Its side: first (the creator's, e.g. the landlord) or second.",
)
@click.option(
    "--created-by",
    type=numeric_id,
    required=True,
    metavar="USER_ID",
    help="The user adding it (an owner or member of the contract's team).",
)
@click.option(
    "--registered-office",
    multiple=True,
    metavar="KEY=VALUE",
    help=f"A part of its registered office's address; repeatable. Keys: {', '.join(ADDRESS_KEYS)}.",
)
@click.option(
    "--address",
    multiple=True,
    metavar="KEY=VALUE",
    help="A part of another address (e.g. where it trades); repeatable; the same keys.",
)
@click.option(
    "--idempotency-key",
    help="Your own Idempotency-Key (a create repeated is made once where keys are honoured).",
)
async def parties_add_company(args: argparse.Namespace) -> None:
    """Add a company to a contract as a party.

    It is listed among the parties under its name, without a user or identity values.
    """
    require(bool(args.name.strip()), "--name is blank: a company needs a name")
    require(
        len(args.role) == 1,
        f"--role given {len(args.role)} times ({', '.join(args.role)}): a company takes one role",
    )
    office = _address(args.registered_office, "--registered-office")
    address = _address(args.address, "--address")
    async with make_client(args) as client:
        created = await client.companies.create(
            args.contract_id,
            company_name=args.name,
            company_number=args.company_number,
            role=args.role[0],
            side=args.side,
            created_by=args.created_by,
            registered_office_address=office,
            address=address,
            idempotency_key=args.idempotency_key,
        )
        party = created.contract_collaborator_id
        shown = (
            await client.collaborators.get(party)
            if party is not None  # the spec's answer names it; if not, what the answer says
            else Collaborator(name=created.company_name, contract_id=created.contract_id)
        )
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
        "a field must be given by its id (`contractsdk parties identity-fields "
        "TEMPLATE_ID --party COLLABORATOR_ID` shows each field's id)",
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
    if args.image is not None and args.saved:
        raise ConfigurationError("give --image FILE or --saved, not both")
    if args.image is None and not args.saved:
        raise ConfigurationError("give one of --image FILE or --saved")
    async with make_client(args) as client:
        if args.saved:
            signed = await client.collaborators.sign_with_saved_signature(args.collaborator_id)
        else:
            signed = await client.collaborators.sign(args.collaborator_id, signature=args.image)
    _show(args, [signed])
