"""``client.collaborators``: the parties, signatories and witnesses of a contract.

Wire facts (reference/endpoints.md §1 #25-#32, §2): the create body is camelCase
(``userId``, ``inviterId``, ``role``, ``side``, ``identityFields`` with ``nestedFields``,
``signatoryId``) and answers with a Link; the field update sends ids as *strings*; the
signature upload is ``multipart/form-data`` with no declared part name (``file`` is
assumed); a DELETE answers with an empty body.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from contractsdk._config import check_idempotency_key
from contractsdk._converter import structure, structure_list
from contractsdk._exceptions import (
    ConfigurationError,
    ContractSDKError,
    IdentityValidationError,
    ResponseValidationError,
)
from contractsdk._http import Response
from contractsdk._ids import parse_id
from contractsdk._logging import logger
from contractsdk._values import iter_fields
from contractsdk.identity import (
    IdentityProblem,
    IdentityValues,
    check_collaborator_roles,
    check_side,
    identity_fields_by_id,
)
from contractsdk.models import Collaborator, Contract, ContractField, Link, Party, Role, Side
from contractsdk.models._base import id_from_href
from contractsdk.resources._base import Id, Resource, path_id
from contractsdk.resources.users import created_href

if TYPE_CHECKING:
    from contractsdk._client import ContractClient

__all__ = [
    "MAX_SIGNATURE_BYTES",
    "Collaborators",
    "PartiesIncompleteError",
    "multipart_file",
    "signature_image",
]

#: The largest signature image sent: 512 KiB. The spec states no limit; this is the limit
#: the emulator documents (docs/sandbox.md, "Parties and signing": over 512 KiB is a 413),
#: so nothing the SDK lets through is refused there for its size. It is ample for a
#: signature and keeps a wrong file (a scan, a photo) from being uploaded.
MAX_SIGNATURE_BYTES = 512 * 1024

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
#: The roles a role update takes: ``UpdateFieldsCollaboratorDTO``'s enum has no
#: ``party_with_signatory`` (endpoints.md §2, enum notes).
_UPDATABLE_ROLES = tuple(role for role in Role if role is not Role.PARTY_WITH_SIGNATORY)


class PartiesIncompleteError(ContractSDKError):
    """A contract was created but not every party could be added to it.

    Nothing is lost: the error names the contract, the collaborators added, the party whose
    add may have been processed (its request reached the service, but no usable answer
    came back: ``unknown``) and the parties certainly not added (``pending``). The error
    that stopped the flow is the ``__cause__``.

    To finish, list the contract's collaborators (:meth:`Collaborators.list`) and add with
    :meth:`Collaborators.create` only the ``unknown`` and ``pending`` parties whose user is
    not among them; or delete the contract. An ``unknown`` party added again without that
    look is refused as a user already on the contract (409, as the emulator does) or, by a
    service that does not check, added twice.

    Attributes:
        contract: The contract that was created.
        added: The collaborators added, in the order of the parties.
        unknown: The party whose add may have been processed (the failed one, when its
            error's ``outcome_unknown`` is set or its 2xx answer could not be read), or
            empty.
        pending: The parties certainly not added, in order: the failed one first, unless
            it is ``unknown``.
        index: The failed party's position among all the parties given (0-based).
        template_id: The contract's template version (``template_id=`` of
            :meth:`Collaborators.create` checks the parties' values against it, and reads
            values keyed by label), or None if not known.
        outcome_unknown: True when a party is ``unknown``.
    """

    def __init__(
        self,
        contract: Contract,
        *,
        added: Sequence[Collaborator],
        pending: Sequence[Party],
        index: int,
        cause: BaseException,
        unknown: Sequence[Party] = (),
        template_id: int | None = None,
    ) -> None:
        self.contract = contract
        self.template_id = template_id
        self.added = tuple(added)
        self.unknown = tuple(unknown)
        self.pending = tuple(pending)
        self.index = index
        self.outcome_unknown = bool(self.unknown)
        done = ", ".join(
            f"party {n} (user {c.user_id}) as collaborator {c.id}" for n, c in enumerate(added)
        )
        # The unknown party, if any, is the failed one, and the pending ones follow it.
        first = index + len(self.unknown)
        maybe = ", ".join(
            f"party {index + n} (user {party.user_id})" for n, party in enumerate(self.unknown)
        )
        left = ", ".join(
            f"party {first + n} (user {party.user_id})" for n, party in enumerate(self.pending)
        )
        unsure = (
            f"Unknown (the request may have been processed; check collaborators.list before "
            f"adding it again): {maybe}. "
            if maybe
            else ""
        )
        super().__init__(
            f"contract {contract.id} was created, but adding party {index} failed: {cause}. "
            f"Added: {done or 'none'}. {unsure}Not added: {left or 'none'}"
        )

    def __str__(self) -> str:
        # The message says which party may have been added; the base class's trailing
        # "the request may have been processed" would only repeat it, for no party.
        return self.message


def signature_image(signature: bytes | bytearray | memoryview | str | os.PathLike[str]) -> bytes:
    """Return a signature's bytes, checked to be a PNG or JPEG of at most 512 KiB.

    Args:
        signature: The image itself, or the path of an image file.

    Raises:
        ConfigurationError: Not an image the upload takes, too large, or unreadable.
    """
    if isinstance(signature, bytes | bytearray | memoryview):
        data = bytes(signature)
    elif isinstance(signature, str | os.PathLike):
        path = Path(signature)
        try:
            size = path.stat().st_size
            if size > MAX_SIGNATURE_BYTES:  # before reading: a wrong path may be huge
                raise ConfigurationError(_too_large(size))
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the signature file {str(path)!r}: {exc}"
            ) from None
    else:
        raise ConfigurationError(
            f"signature must be image bytes or a file path, not {type(signature).__name__}"
        )
    if len(data) > MAX_SIGNATURE_BYTES:
        raise ConfigurationError(_too_large(len(data)))
    if not data.startswith((_PNG, _JPEG)):
        named = (
            f": {str(signature)!r} is not one" if isinstance(signature, str | os.PathLike) else ""
        )
        raise ConfigurationError(f"a signature must be a PNG or JPEG image{named}")
    return data


def _too_large(size: int) -> str:
    return f"a signature may be at most {MAX_SIGNATURE_BYTES} bytes (512 KiB); this one has {size}"


def multipart_file(
    name: str, filename: str, content_type: str, data: bytes, *, boundary: str | None = None
) -> tuple[bytes, str]:
    """Return a ``multipart/form-data`` body of one file part, and its Content-Type.

    Args:
        name: The form field's name.
        filename: The file name the part carries.
        content_type: The part's Content-Type.
        data: The file's bytes.
        boundary: The boundary (random when None, and never one found in the data).

    Returns:
        ``(body, "multipart/form-data; boundary=…")``.
    """
    while boundary is None or boundary.encode() in data:
        boundary = "contractsdk-" + os.urandom(16).hex()
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    )
    body = head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@attrs.frozen
class _Prepared:
    """A party checked and ready to send: its create body."""

    party: Party
    body: dict[str, Any]


def _maybe_added(error: BaseException) -> bool:
    """Whether a party whose add raised ``error`` may be on the contract all the same.

    True when the request may have been processed (a lost answer, a 5xx to the POST, a
    retry after either: ``outcome_unknown``), and when the service answered 2xx with a body
    that could not be read (every ResponseValidationError comes from a success's answer):
    then the party was added, as a collaborator whose id the SDK cannot tell.
    """
    if isinstance(error, ResponseValidationError):
        return True
    return isinstance(error, ContractSDKError) and error.outcome_unknown


class Collaborators(Resource):
    """Add, read, change, remove and sign as collaborators (endpoints.md §1 #25-#32)."""

    def __init__(self, client: ContractClient) -> None:
        super().__init__(client)

    async def create(
        self,
        contract_id: Id,
        /,
        *,
        user_id: Id,
        inviter_id: Id,
        roles: Role | str | Iterable[Role | str],
        side: Side | str,
        values: IdentityValues | None = None,
        template_id: int | None = None,
        require_all: bool = False,
        signatory_id: int | None = None,
        idempotency_key: str | None = None,
    ) -> Collaborator:
        """Add a user to a contract with roles, a side and identity values.

        With ``template_id`` the values are checked against the identity fields of those
        roles and side (fetched once and kept by the client) and may name fields by label;
        without it, they are sent unchecked and must be keyed by field id. The answer is a
        Link, so the returned collaborator holds the id and what was sent; call :meth:`get`
        for the service's view (name, email, ``signed``).

        Args:
            contract_id: The contract's id.
            user_id: The user who becomes the collaborator.
            inviter_id: The user inviting them (usually the contract's creator).
            roles: One role or several.
            side: Their side of the contract.
            values: Identity values, ``{field id | label | name: value}``.
            template_id: The contract's template version, to check the values first.
            require_all: With ``template_id``: require a value for every applicable field.
            signatory_id: The collaborator who signs for this one.
            idempotency_key: Your own key, to make a retried create safe across restarts
                (1 to 255 visible ASCII characters).

        Raises:
            ConfigurationError: A bad id, role, side or ``idempotency_key``, or (without
                ``template_id``) a key that is not an id or ``require_all``; nothing is sent.
            IdentityValidationError: The values break the identity fields; nothing is sent.
        """
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        if require_all and template_id is None:
            raise ConfigurationError(
                "require_all needs template_id: the identity fields to check the values against"
            )
        prepared = await self._prepare(
            Party(
                user_id=user_id,
                roles=roles,
                side=side,
                values={} if values is None else values,
                signatory_id=signatory_id,
                inviter_id=inviter_id,
            ),
            template_id=template_id,
            require_all=require_all,
            inviter_id=inviter_id,
        )
        return await self._send(
            path_id(contract_id, "contract_id"), prepared, idempotency_key=idempotency_key
        )

    async def _prepare(
        self,
        party: Party,
        *,
        template_id: int | None,
        require_all: bool,
        inviter_id: Id,
        index: int | None = None,
    ) -> _Prepared:
        """Check a party and build its create body, sending nothing but an identity-field GET.

        Raises:
            ConfigurationError: A bad id, role or side.
            IdentityValidationError: The values break the fields (problems carry ``index``).
        """
        who = "" if index is None else f"party {index}: "
        fields: builtins.list[dict[str, Any]] = []
        try:
            roles = check_collaborator_roles(party.roles)
            side = check_side(party.side, party=True)
            body: dict[str, Any] = {
                "userId": parse_id(party.user_id, "user_id"),
                "inviterId": parse_id(party.inviter_id or inviter_id, "inviter_id"),
                "role": [role.value for role in roles],
                "side": side.value,
            }
            if party.signatory_id is not None:
                body["signatoryId"] = parse_id(party.signatory_id, "signatory_id")
            if template_id is None:
                fields = [
                    {"id": field_id, "value": text, "nestedFields": []}
                    for field_id, text in identity_fields_by_id(party.values)
                ]
        except ConfigurationError as exc:
            raise ConfigurationError(who + exc.message) from None
        if template_id is not None:
            field_set = await self._client.identity_fields.list(template_id, roles=roles, side=side)
            try:
                fields = field_set.build(party.values, require_all=require_all)
            except IdentityValidationError as exc:
                problems = await self._other_side(exc.problems, template_id, roles, side)
                if index is not None:
                    problems = [attrs.evolve(problem, party=index) for problem in problems]
                raise IdentityValidationError(problems) from None
        body["identityFields"] = fields
        return _Prepared(party, body)

    async def _other_side(
        self,
        problems: Sequence[IdentityProblem],
        template_id: int,
        roles: Sequence[Role],
        side: Side,
    ) -> list[IdentityProblem]:
        """Say of an unknown field that the other side fills it in, where it does.

        A landlord's "Current address" (the tenant's field) was only "unknown"; the fields
        of the other side are read for it (one read, on this error path only). ``side`` is
        a party's: first or second.
        """
        if not any(problem.kind == "unknown_field" for problem in problems):
            return list(problems)
        other = Side.SECOND if side is Side.FIRST else Side.FIRST
        try:
            theirs = await self._client.identity_fields.list(template_id, roles=roles, side=other)
        except ContractSDKError:
            return list(problems)  # the problems as they were: this was only a hint
        said = []
        for problem in problems:
            found = theirs.find(problem.field) if problem.kind == "unknown_field" else None
            if found is not None:
                what = found.label or found.name or problem.field
                problem = attrs.evolve(
                    problem,
                    message=f"{problem.message}; {what!r} (id {found.id}) is a field of the "
                    f"{other.value} side, not the {side.value}",
                )
            said.append(problem)
        return said

    async def _prepare_all(
        self, parties: Sequence[Party], *, template_id: Id, require_all: bool, inviter_id: Id
    ) -> builtins.list[_Prepared]:
        """Check every party, reporting every party's problems in one error.

        Raises:
            ConfigurationError: The first party with a bad id, role or side.
            IdentityValidationError: Every problem of every party (each names its party).
        """
        prepared: builtins.list[_Prepared] = []
        problems: builtins.list[IdentityProblem] = []
        for index, party in enumerate(parties):
            if not isinstance(party, Party):
                raise ConfigurationError(f"party {index}: expected a Party, got {party!r}")
            try:
                prepared.append(
                    await self._prepare(
                        party,
                        template_id=template_id,
                        require_all=require_all,
                        inviter_id=inviter_id,
                        index=index,
                    )
                )
            except IdentityValidationError as exc:
                problems.extend(exc.problems)
        if problems:
            raise IdentityValidationError(problems)
        return prepared

    async def _add_all(
        self,
        contract: Contract,
        prepared: Sequence[_Prepared],
        *,
        template_id: int,
        idempotency_key: str | None,
    ) -> tuple[Collaborator, ...]:
        """Add checked parties to a new contract in order.

        Raises:
            PartiesIncompleteError: A party could not be added; it says what was, and
                whether the failed one may have been.
        """
        assert contract.id is not None
        contract_path = str(contract.id)
        added: builtins.list[Collaborator] = []
        for index, item in enumerate(prepared):
            key = None if idempotency_key is None else f"{idempotency_key}-party-{index}"
            try:
                added.append(await self._send(contract_path, item, idempotency_key=key))
            except asyncio.CancelledError:
                # No error can reach the caller, who may never learn the contract exists
                # (a web handler cancelled as its client went away): the log says.
                logger.warning(
                    "contract %s was created, but the call was cancelled while adding party "
                    "%d (user %s), which may have been added; %d of %d parties were added "
                    "before: finish from collaborators.list, or delete the contract",
                    contract.id,
                    index,
                    item.party.user_id,
                    len(added),
                    len(prepared),
                )
                raise
            except Exception as exc:
                unsure = 1 if _maybe_added(exc) else 0
                raise PartiesIncompleteError(
                    contract,
                    added=added,
                    unknown=[item.party] if unsure else [],
                    pending=[rest.party for rest in prepared[index + unsure :]],
                    index=index,
                    cause=exc,
                    template_id=template_id,
                ) from exc
        return tuple(added)

    async def _send(
        self, contract_path: str, prepared: _Prepared, *, idempotency_key: str | None
    ) -> Collaborator:
        path = f"/contracts/{contract_path}/collaborators"
        body = prepared.body
        response = await self._client._send_json(
            "POST", path, body, idempotency_key=idempotency_key
        )
        href = created_href(response)
        collaborator_id = id_from_href(href)
        if href is None or collaborator_id is None:
            raise ResponseValidationError(
                "the create-collaborator answer names no collaborator: no Link href or "
                "Location header ending in an id",
                model="Link",
                errors=["$.href: missing"],
                method="POST",
                url=self._client._prefix + path,
            )
        stored = tuple(
            ContractField._make(entry["id"], None, entry["value"])
            for entry in iter_fields(body["identityFields"])
        )
        return Collaborator(
            id=collaborator_id,
            contract_id=int(contract_path),
            user_id=body["userId"],
            fields=stored,
            roles=tuple(body["role"]),
            side=body["side"],
            links=(Link._make("self", href),),
            raw={"href": href, "rel": "self"},
        )

    async def list(self, contract_id: Id, /) -> builtins.list[Collaborator]:
        """Return a contract's collaborators (an empty answer is [])."""
        path = f"/contracts/{path_id(contract_id, 'contract_id')}/collaborators"
        response = await self._client._send_json("GET", path)
        if not response.content.strip():
            return []
        data = self._client._decode(response)
        return structure_list(data, Collaborator, method="GET", url=self._client._prefix + path)

    async def get(self, collaborator_id: Id, /) -> Collaborator:
        """Return one collaborator.

        Raises:
            NotFoundError: No such collaborator.
        """
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}"
        return self._read(await self._client._send_json("GET", path), path)

    async def delete(self, collaborator_id: Id, /) -> None:
        """Remove a collaborator from its contract (the answer has no body)."""
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}"
        await self._client._send_json("DELETE", path)

    async def update_roles(
        self, collaborator_id: Id, /, *, roles: Role | str | Iterable[Role | str]
    ) -> Collaborator:
        """Change a collaborator's roles and return the collaborator.

        The service takes at most two roles, and then one must be ``collaborator``
        (endpoints.md §1 #29); ``party_with_signatory`` is not among the roles it takes here.

        Raises:
            ConfigurationError: The roles break that rule (nothing is sent).
        """
        checked = check_collaborator_roles(roles, allowed=_UPDATABLE_ROLES)
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}/roles"
        body = {"roles": [role.value for role in checked]}
        return self._read(await self._client._send_json("PATCH", path, body), path)

    async def update_fields(
        self, collaborator_id: Id, /, *, values: Mapping[Any, Any]
    ) -> Collaborator:
        """Change a collaborator's identity values and return the collaborator.

        Sent flat as ``{"fields": [{"id": "2117", "value": "…"}]}``: ids are strings on
        the wire here (``IdentityFieldsCollaboratorRoleRequestDTO``). To check values
        against the fields first, use :meth:`IdentityFieldSet.validate`, whose result this
        takes as it is.

        Args:
            collaborator_id: The collaborator's id.
            values: ``{field id: value}``, ids as int or digit string.

        Raises:
            ConfigurationError: A key is not an id, a value has no string form, or there is
                nothing to change (nothing is sent).
        """
        pairs = identity_fields_by_id(values)
        if not pairs:
            raise ConfigurationError("give at least one identity value to change")
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}/fields"
        body = {"fields": [{"id": str(field_id), "value": text} for field_id, text in pairs]}
        return self._read(await self._client._send_json("PATCH", path, body), path)

    async def sign(
        self,
        collaborator_id: Id,
        /,
        *,
        signature: bytes | bytearray | memoryview | str | os.PathLike[str],
    ) -> Collaborator:
        """Sign the contract as this collaborator with a signature image.

        The image (PNG or JPEG, at most 512 KiB, checked by its first bytes) is uploaded as
        ``multipart/form-data`` with one part named ``file`` (the spec declares no name:
        assumed), through the client's usual retries, rate limits and hooks. A file path is
        read in a worker thread.

        Args:
            collaborator_id: The collaborator who signs.
            signature: The image's bytes, or its file path.

        Raises:
            ConfigurationError: Not a PNG or JPEG, too large, or unreadable (nothing is sent).
        """
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}/signature"
        if isinstance(signature, str | os.PathLike):
            data = await asyncio.to_thread(signature_image, signature)
        else:
            data = signature_image(signature)
        png = data.startswith(_PNG)
        body, content_type = multipart_file(
            "file",
            "signature.png" if png else "signature.jpg",
            "image/png" if png else "image/jpeg",
            data,
        )
        response = await self._client._send_content("PATCH", path, body, content_type)
        return self._read(response, path)

    async def sign_with_saved_signature(self, collaborator_id: Id, /) -> Collaborator:
        """Sign the contract as this collaborator with the user's saved signature."""
        path = f"/collaborators/{path_id(collaborator_id, 'collaborator_id')}/user-signature"
        return self._read(await self._client._send_json("PATCH", path), path)

    def _read(self, response: Response, path: str) -> Collaborator:
        """Read a collaborator answer; its id comes from the path when the body lacks it."""
        collaborator_id = int(path.split("/")[2])
        if not response.content.strip():  # the spec allows 204 on GET; PATCH bodies vary
            return Collaborator(id=collaborator_id)
        method = response.request.method if response.request else ""
        data = self._client._decode(response)
        collaborator = structure(data, Collaborator, method=method, url=self._client._prefix + path)
        if collaborator.id is None:
            collaborator = attrs.evolve(collaborator, id=collaborator_id)
        return collaborator
