"""``contractsdk demo``: the whole flow, step by step, with no credentials needed.

It starts the embedded emulator on a free loopback port, whatever the ``CONTRACTSDK_*``
variables say. Only ``--base-url`` or ``--environment`` on its own command line send it to
a real service instead, as the user given by ``--user-id``, and only once confirmed:
``--yes``, or a "y" typed at a terminal (it creates objects there, and they stay).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar

from contractsdk._client import ContractClient
from contractsdk._config import Environment
from contractsdk._exceptions import (
    ConfigurationError,
    IdentityValidationError,
    ResponseValidationError,
    TermValidationError,
)
from contractsdk._ids import parse_id
from contractsdk._redact import scrub
from contractsdk.cli._output import print_table, write_file
from contractsdk.cli._resources import make_client
from contractsdk.identity import IdentityFieldSet
from contractsdk.models import ContractType, IdentityField, Role, Side, Term, TermOption, User
from contractsdk.testing import signature_png
from contractsdk.validation import TermSet

__all__ = ["IGNORED", "LEAVES", "demo_values", "exclusive_mistake", "real_service", "run_demo"]

#: How many lines of the term tree the demo shows before pointing to `terms show`.
TREE_LINES = 32

T = TypeVar("T")


def _known(value: T | None, what: str) -> T:
    """Return what the service's answer held; it may leave any field out (the spec's rule)."""
    if value is None:
        raise ResponseValidationError(f"the service's answer has no {what}; the demo needs it")
    return value


def _step(number: int, title: str) -> None:
    print(f"\n{number}. {title}")


def _say(text: str) -> None:
    # What the service answered (a user's name, a team's) may echo the credential.
    print(f"   {scrub(text)}")


def _choice_depth(term: Term) -> int:
    """How many term levels a chain of choices goes down from ``term``."""
    nested = [t for option in term.options for t in option.nested_terms if t.is_choice]
    return 1 + max((_choice_depth(t) for t in nested), default=0) if term.is_choice else 0


def _choose_down(term: Term, values: dict[str, Any]) -> None:
    """Choose options down the deepest chain of nested choices, answering text terms."""

    def depth(option_terms: tuple[Term, ...]) -> int:
        return max((_choice_depth(t) for t in option_terms), default=0)

    option = max(term.options, key=lambda option: depth(option.nested_terms))
    if term.name is None or option.value is None:  # nothing to address it by, or to choose
        return
    values[term.name] = option.value
    for nested in option.nested_terms:
        if nested.name is None:
            continue
        if nested.is_choice:
            _choose_down(nested, values)
        else:
            values[nested.name] = f"Demo {nested.label or nested.name}"[:80]


def demo_values(terms: TermSet) -> dict[str, Any]:
    """Return values for a demo contract: a name, and the deepest chain of nested choices."""
    values: dict[str, Any] = {}
    if terms.find("contract_name") is not None:
        values["contract_name"] = f"Demo contract {time.strftime('%Y-%m-%d %H:%M:%S')}"
    deepest = max(terms, key=_choice_depth, default=None)
    if deepest is not None and deepest.is_choice:
        _choose_down(deepest, values)
    return values


def exclusive_mistake(terms: TermSet) -> dict[str, Any] | None:
    """Return values breaking the exclusive-option rule, if the template allows one.

    Answers nested terms under two different options of one term, which the service
    refuses; or, with no such term, a nested term under an option that is not chosen.
    """
    named = [term for term in terms if term.name is not None]
    for term in named:
        branches = [option for option in term.options if _named_branch(option)]
        if len(branches) >= 2:
            first, second = branches[:2]
            return {
                str(term.name): first.value,
                str(first.nested_terms[0].name): _some_value(first.nested_terms[0]),
                str(second.nested_terms[0].name): _some_value(second.nested_terms[0]),
            }
    for term in named:
        branches = [option for option in term.options if _named_branch(option)]
        others = [option for option in term.options if option not in branches]
        if branches and others:
            nested = branches[0].nested_terms[0]
            return {str(term.name): others[0].value, str(nested.name): _some_value(nested)}
    return None


def _named_branch(option: TermOption) -> bool:
    """An option whose first nested term can be given a value by name."""
    return bool(option.nested_terms) and option.nested_terms[0].name is not None


def _some_value(term: Term) -> str:
    value = term.options[0].value if term.options else None
    return "some text" if value is None else value


def _pick_type(types: list[ContractType]) -> ContractType:
    """Prefer a tenancy (its terms nest three levels deep), else the first type."""
    return next((t for t in types if "tenancy" in (t.name or "").lower()), types[0])


#: What the demo leaves on a real service, said before it asks to go ahead.
LEAVES = (
    "a team (if the user has none), a contract, a new user (demo.tenant.…@example.com), "
    "two parties and their signatures"
)

#: The variables that name a service for the other commands, and that the demo ignores.
IGNORED = ("CONTRACTSDK_BASE_URL", "CONTRACTSDK_ENVIRONMENT")


def real_service(args: argparse.Namespace) -> bool:
    """Whether the demo's own command line names a real service (--base-url, --environment).

    Only the command line counts: ``CONTRACTSDK_BASE_URL`` and ``CONTRACTSDK_ENVIRONMENT``,
    exported for the other commands, never send the demo (which creates objects) anywhere
    but the embedded emulator.
    """
    return any(getattr(args, name, None) for name in ("base_url", "environment"))


async def _confirm(args: argparse.Namespace, url: str) -> None:
    """Go ahead on a real service only with --yes, or a "y" typed at a terminal.

    Raises:
        ConfigurationError: Not confirmed (nothing was sent).
    """
    if getattr(args, "yes", False):
        return
    warning = f"the demo creates real objects on {url}: {LEAVES}; they stay there"
    if not _is_terminal():
        raise ConfigurationError(f"{warning}. Give --yes to go ahead (nothing was sent)")
    # Read in the loop's own thread: nothing else runs yet, and Ctrl-C at the prompt then
    # interrupts the read (in a worker thread, the read would hold the exit until Enter).
    answer = _ask(f"Warning: {warning}. Go ahead? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise ConfigurationError("the demo was not confirmed: nothing was sent")


def _is_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _ask(prompt: str) -> str:
    print(prompt, end="", flush=True)
    try:
        return sys.stdin.readline()
    except (OSError, ValueError):  # stdin closed under us: no answer
        return ""


def _named(args: argparse.Namespace) -> argparse.Namespace:
    """The connection as named on the command line: --environment at its own URL.

    ``--environment production`` alone is production's URL, not ``CONTRACTSDK_BASE_URL``
    (which would otherwise fill the gap, as for the other commands).
    """
    if args.base_url or not args.environment:
        return args
    url = Environment.from_name(args.environment).base_url
    return argparse.Namespace(**{**vars(args), "base_url": url})


@contextlib.asynccontextmanager
async def _service(args: argparse.Namespace) -> AsyncIterator[tuple[ContractClient, int]]:
    """Yield a client and the user id to act as: the embedded emulator unless told otherwise.

    Told otherwise means --base-url or --environment on the command line (never the
    variables alone), confirmed by --yes or at a terminal before anything is sent.
    """
    if real_service(args):
        given = args.user_id or os.environ.get("CONTRACTSDK_USER_ID")
        if not given:
            raise ConfigurationError(
                "against a real service the demo needs --user-id (or CONTRACTSDK_USER_ID)"
            )
        user_id = parse_id(given, "CONTRACTSDK_USER_ID")  # --user-id is one already
        async with make_client(_named(args)) as client:
            url = client.environment.base_url
            await _confirm(args, url)
            print(f"contractsdk demo: the whole flow against {url}")
            yield client, user_id
        return
    ignored = [name for name in IGNORED if os.environ.get(name)]
    if ignored:
        print(
            f"note: the demo ignores {' and '.join(ignored)} and runs against the embedded "
            "emulator; to run it against a real service, give --base-url or --environment "
            "on its command line",
            file=sys.stderr,
        )

    from contractsdk.sandbox import SandboxServer

    async with SandboxServer(seed=args.seed) as server:
        print("contractsdk demo: the whole flow against the embedded emulator")
        _say(f"emulator: {server.url} (seed {args.seed}; nothing leaves this machine)")
        # The emulator's key and URL, with the command line's --redis (make_client's).
        connection = argparse.Namespace(
            api_key=server.api_key, base_url=server.url, redis=getattr(args, "redis", None)
        )
        async with make_client(connection) as client:
            yield client, server.users[0].id


def _print_tree(terms: TermSet, values: dict[str, Any], template_id: int) -> None:
    lines = terms.tree(values).splitlines()
    for line in lines[:TREE_LINES]:
        _say(line)
    if len(lines) > TREE_LINES:
        _say(f"… {len(lines) - TREE_LINES} more lines: contractsdk terms show {template_id}")


def _problems(error: TermValidationError) -> Iterator[str]:
    for problem in error.problems:
        yield f"[{problem.kind}] {problem}"


async def run_demo(args: argparse.Namespace) -> int:
    """Walk the flow: from the user to a contract, its parties, signatures and signed PDF."""
    if args.pdf and not await asyncio.to_thread(os.path.isdir, os.path.dirname(args.pdf) or "."):
        # Said now, not after the whole flow ran.
        raise ConfigurationError(f"cannot write {args.pdf}: no such directory")
    async with _service(args) as (client, user_id):
        _step(1, "Identify the user")
        user = await client.users.get(user_id)
        _say(f"{user.first_name} {user.last_name} <{user.email}> (user {user.id})")

        _step(2, "Pick or create a team")
        teams = await client.teams.list(user_id)
        print_table(["id", "name", "created"], [(t.id, t.name, t.created) for t in teams], indent=3)
        if teams:
            team = await client.personal_team(user_id)
        else:
            team = await client.teams.create(user_id, name="contractsdk demo")
        team_id = _known(team.id, "team id")
        _say(f"→ using team {team_id} ({team.name})")

        _step(3, "List the contract types the team can create")
        types = await client.contract_types.list(team_id)
        print_table(["id", "name"], [(t.id, t.name) for t in types], indent=3)
        if not types:
            raise ConfigurationError(f"team {team_id} can create no contract types")
        kind = _pick_type(types)
        _say(f"→ using {kind.name}")

        _step(4, "List its template versions (newest first)")
        versions = await client.templates.list(team_id, _known(kind.id, "contract type id"))
        rows = [(v.id, v.version, "latest" if i == 0 else "") for i, v in enumerate(versions)]
        print_table(["id", "version", ""], rows, indent=3)
        template = versions[0]
        template_id = _known(template.id, "template id")

        _step(5, f"The terms of version {template.version} (options nest, choices marked)")
        terms = await client.terms.list(template_id)
        values = demo_values(terms)
        total = sum(1 for _ in terms.walk())
        _say(f"{len(terms)} top-level terms, {total} in all")
        _print_tree(terms, values, template_id)

        _step(6, "The validator catches a mistake before anything is sent")
        mistake = exclusive_mistake(terms)
        if mistake is None:
            _say("(this template has no nested options to get wrong)")
        else:
            _say(f"values: {mistake}")
            try:
                terms.validate(mistake)
            except TermValidationError as exc:
                for line in _problems(exc):
                    _say(line)
            else:  # pragma: no cover - the emulator's templates always allow a mistake
                _say("(no problem found)")

        _step(7, "Create the contract")
        for name, value in values.items():
            _say(f"{name} = {value}")
        contract = await client.contracts.create(
            team_id, template_id=template_id, created_by=user_id, values=values
        )
        _say(f"→ created contract {contract.id}")

        _step(8, "List the team's contracts")
        contracts = await client.contracts.list(team_id)
        print_table(
            ["id", "name", "created", "fields"],
            [(c.id, c.name, c.created_date, len(c.fields)) for c in contracts],
            indent=3,
        )
        contract_id = _known(contract.id, "contract id")
        await _parties_and_signing(client, args, contract_id, template_id, user)

        stats = client.stats
        print(
            f"\nDone: {stats.requests} requests, {stats.throttled} throttled, "
            f"{stats.retries} retries."
        )
    return 0


# -- parties and signing ----------------------------------------------------------------


def _person_values(fields: IdentityFieldSet, person: User) -> dict[int, str]:
    """Answers for a party's identity fields, by field id.

    The person's name and email where asked, the first option of a choice that asks
    nothing more, made-up text elsewhere.
    """
    values: dict[int, str] = {}
    for field in fields:
        if field.id is None:
            continue
        label = (field.label or field.name or "").lower()
        if field.options:
            plain = [o for o in field.options if o.name and not o.nested_fields]
            chosen = plain[0] if plain else field.options[0]
            if chosen.name:
                values[field.id] = chosen.name
        elif "first name" in label:
            values[field.id] = person.first_name or "Demo"
        elif "last name" in label:
            values[field.id] = person.last_name or "Party"
        elif "email" in label or field.validation_type == "EMAIL":
            values[field.id] = person.email or "demo.party@example.com"
        else:
            values[field.id] = f"Demo {field.label or 'answer'}"[:80]
    return values


def _email_field(fields: IdentityFieldSet) -> IdentityField | None:
    return next((f for f in fields if f.validation_type == "EMAIL"), None)


async def _parties_and_signing(
    client: ContractClient,
    args: argparse.Namespace,
    contract_id: int,
    template_id: int,
    landlord: User,
) -> None:
    """Steps 9 to 12: add a landlord and a tenant, fill in, sign, download the signed PDF."""
    _step(9, "The identity fields each party fills in (landlord: side first)")
    sides = {"landlord": Side.FIRST, "tenant": Side.SECOND}
    fields = {
        who: await client.identity_fields.list(template_id, roles=[Role.PARTY], side=side)
        for who, side in sides.items()
    }
    for line in fields["landlord"].tree().splitlines()[:TREE_LINES]:
        _say(line)
    email = _email_field(fields["tenant"])
    if email is not None and email.id is not None:
        _say("a mistake, caught before anything is sent:")
        try:
            fields["tenant"].validate({email.id: "not an email address"})
        except IdentityValidationError as exc:
            for problem in exc.problems:
                _say(f"  [{problem.kind}] {problem}")

    _step(10, "Add the parties: you as the landlord, a new user as the tenant")
    # A random part too: two demos in one second, on one service, made the same address
    # (the second one's user was refused, 409).
    stamp = f"{time.strftime('%Y%m%d%H%M%S')}.{secrets.token_hex(3)}"
    tenant = await client.users.create(
        email=f"demo.tenant.{stamp}@example.com",
        first_name="Tess",
        last_name="Tenant",
    )
    _say(f"created user {tenant.id} <{tenant.email}>")
    people = {"landlord": landlord, "tenant": tenant}
    added = {}
    for who, person in people.items():
        added[who] = await client.collaborators.create(
            contract_id,
            user_id=person.id,
            inviter_id=landlord.id,
            roles=[Role.PARTY],
            side=sides[who],
            values=_person_values(fields[who], person),
            template_id=template_id,
        )
    parties = await client.collaborators.list(contract_id)
    print_table(
        ["id", "name", "roles", "side", "fields filled"],
        [
            (c.id, c.name, ", ".join(c.roles), c.side, sum(1 for f in c.fields if f.value))
            for c in parties
        ],
        indent=3,
    )

    _step(11, "Both parties sign (a PNG signature, sent as multipart/form-data)")
    image = signature_png()
    for who, collaborator in added.items():
        signed = await client.collaborators.sign(collaborator.id, signature=image)
        _say(f"{who} signed (collaborator {signed.id})")
    contract = await client.contracts.get(contract_id)
    completed = contract.completed_date or "not yet (the service has more to do)"
    _say(f"contract {contract_id} completed: {completed}")

    _step(12, "Download the signed PDF")
    pdf = await client.contracts.download_pdf(contract_id)
    path = Path(args.pdf or f"contract-{contract_id}.pdf")
    await write_file(path, pdf)
    _say(f"wrote {path} ({len(pdf):,} bytes)")
