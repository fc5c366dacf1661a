"""Parties of a contract: identity fields, collaborators, signatures and company parties.

Endpoints #23–#33 of endpoints.md §1. What the sources show is followed (paths, verbs,
camelCase create body, string ids in ``PATCH …/fields``, at most two roles); what they
leave unsaid is the emulator's documented assumption (docs/sandbox.md, "Parties and
signing"), chiefly:

- a collaborator who has signed can be neither changed nor removed (409), and a completed
  contract takes no new collaborators and no changes to them (409);
- signing needs a signing role (every role but a bare ``collaborator``; 403) and every
  required identity field filled (400, listing them); signing twice is 409;
- an uploaded signature becomes the user's saved signature, used by ``user-signature``;
- when every collaborator with a signing role (company parties aside: they sign through
  their signatory) has signed, the contract's ``completedDate`` is set.

Every check runs before anything changes, so a refused request changes nothing.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ._identity import (
    COMPANY_ROLES,
    PREFILLED,
    QUERY_SIDES,
    SIDES,
    SIGNING_ROLES,
    IdentityForm,
)
from ._identity_check import ValueChecker, check_roles, check_side
from ._routes import Handler, RouteGroup
from ._store import Collaborator, Company, Contract, SandboxState, User
from ._upload import parse_signature
from ._wire import (
    ApiError,
    decode_json,
    find,
    hal_self,
    is_int,
    json_response,
    json_type,
    read_body,
    read_object,
    utc_now,
)

_MAX_PROBLEMS = 20
_ADDRESS_KEYS = ("address_line_1", "address_line_2", "country", "locality", "postal_code")


def _check(problems: list[str], what: str) -> None:
    """Raise a 400 naming every problem (capped) when there are any."""
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        more = len(problems) - len(shown)
        message = "; ".join(shown) + (f"; and {more} more problems" if more > 0 else "")
        raise ApiError(400, f"{what}: {message}")


def collaborator_name(state: SandboxState, collaborator: Collaborator) -> str:
    """The name shown for a collaborator: company name, else identity names, else the user's.

    Args:
        state: The store.
        collaborator: The collaborator.

    Returns:
        The name.
    """
    if collaborator.company is not None:
        return collaborator.company.name
    user = state.users.get(collaborator.user_id or 0)
    form = state.catalog.identity[state.contracts[collaborator.contract_id].template_id]
    by_key = {form.by_id[fid].key: v for fid, v in collaborator.values.items()}
    first = by_key.get("firstName") or (user.first_name if user else "")
    last = by_key.get("lastName") or (user.last_name if user else "")
    return f"{first} {last}".strip()


def signs(collaborator: Collaborator) -> bool:
    """Tell whether a collaborator must sign for the contract to complete (assumed rule).

    Args:
        collaborator: The collaborator.

    Returns:
        True for a person with a signing role; company parties sign through a signatory.
    """
    return collaborator.company is None and bool(SIGNING_ROLES.intersection(collaborator.roles))


class PartyRoutes(RouteGroup):
    """The handlers of the identity-field, collaborator, signature and company endpoints.

    Args:
        emulator: The emulator whose data the handlers serve.
    """

    def routes(self) -> list[tuple[str, str, Handler]]:
        """Every route of the group, as (method, path, handler)."""
        return [
            ("GET", "/v1/templates/{templateId}/fields", self.identity_fields),
            ("GET", "/v1/templates/{templateId}/updatefields", self.identity_fields_of),
            ("POST", "/v1/contracts/{contractId}/collaborators", self.create_collaborator),
            ("GET", "/v1/contracts/{contractId}/collaborators", self.list_collaborators),
            ("POST", "/v1/contracts/{contractId}/company", self.create_company),
            ("GET", "/v1/collaborators/{collaboratorId}", self.get_collaborator),
            ("DELETE", "/v1/collaborators/{collaboratorId}", self.delete_collaborator),
            ("PATCH", "/v1/collaborators/{collaboratorId}/roles", self.update_roles),
            ("PATCH", "/v1/collaborators/{collaboratorId}/fields", self.update_fields),
            ("PATCH", "/v1/collaborators/{collaboratorId}/signature", self.sign),
            ("PATCH", "/v1/collaborators/{collaboratorId}/user-signature", self.sign_saved),
        ]

    # --- lookups ---------------------------------------------------------------------------

    def _form(self, raw: str) -> IdentityForm:
        return find(self._catalog.identity, raw, "templateId", "Template")

    def _contract(self, raw: str) -> Contract:
        return find(self._state.contracts, raw, "contractId", "Contract")

    def _collaborator(self, raw: str) -> Collaborator:
        return find(self._state.collaborators, raw, "collaboratorId", "Collaborator")

    def _user(self, user_id: int, what: str) -> User:
        user = self._state.users.get(user_id)
        if user is None:
            raise ApiError(404, f"User with id {user_id} not found ({what})")
        return user

    def _open(self, contract: Contract) -> None:
        if contract.completed is not None:
            raise ApiError(409, f"Contract {contract.id} is completed: its parties cannot change")

    def _unsigned(self, collaborator: Collaborator, action: str) -> None:
        self._open(self._state.contracts[collaborator.contract_id])
        if collaborator.signed is not None:
            raise ApiError(409, f"Collaborator {collaborator.id} has signed and cannot be {action}")

    def _form_of(self, collaborator: Collaborator) -> IdentityForm:
        return self._catalog.identity[self._state.contracts[collaborator.contract_id].template_id]

    # --- JSON shapes -----------------------------------------------------------------------

    def _json(self, base: str, collaborator: Collaborator) -> dict[str, Any]:
        """ContractCollaboratorResponseDTO, plus the assumed ``signed`` key."""
        state = self._state
        form = self._form_of(collaborator)
        visible = form.visible_ids(collaborator.roles, collaborator.side)
        fields = [
            {"id": f.id, "name": f.key, "value": collaborator.values[f.id]}
            for f in form.by_id.values()
            if f.id in visible and collaborator.values.get(f.id)
        ]
        email: str | None = None
        if collaborator.company is None:
            email_field = next(
                (f.id for f in form.by_id.values() if f.key == "email" and f.id in visible), None
            )
            user = state.users.get(collaborator.user_id or 0)
            email = collaborator.values.get(email_field or 0) or (user.email if user else None)
        return {
            "id": collaborator.id,
            "user_id": collaborator.user_id,
            "contract_id": collaborator.contract_id,
            "collaborator_name": collaborator_name(state, collaborator),
            "email": email,
            "roles": list(collaborator.roles),
            "side": collaborator.side,
            "fields": fields,
            "signed": collaborator.signed is not None,
            "_links": hal_self(f"{base}/v1/collaborators/{collaborator.id}"),
        }

    def _answer(self, request: web.Request, collaborator: Collaborator) -> web.Response:
        return json_response(self._json(self._origin(request), collaborator))

    # --- identity fields (#23, #24) --------------------------------------------------------

    async def identity_fields(self, request: web.Request) -> web.Response:
        """``GET /v1/templates/{id}/fields?roles=…&roles=…&side=…``: the identity fields.

        ``roles`` is repeated (Spring also splits ``roles=a,b``); ``side`` defaults to
        ``both`` (assumed).
        """
        form = self._form(request.match_info["templateId"])
        problems: list[str] = []
        raw_roles = [r for value in request.query.getall("roles", []) for r in value.split(",")]
        roles = check_roles(raw_roles, "roles", problems) if raw_roles else None
        if not raw_roles:
            problems.append("roles is required (repeat it: roles=party&roles=collaborator)")
        side = check_side(request.query.get("side", "both"), "side", QUERY_SIDES, problems)
        _check(problems, "Invalid identity field query")
        assert roles is not None
        assert side is not None
        return json_response(form.render(roles, side))

    async def identity_fields_of(self, request: web.Request) -> web.Response:
        """``GET /v1/templates/{id}/updatefields`` with a JSON body: fields with values.

        The body is ObtainIdentityFieldsDTO ``{collaborator_id, roles, side}``; the spec
        sends it with ``Content-Type: */*``, so any type is read as JSON.
        """
        form = self._form(request.match_info["templateId"])
        raw = await read_body(request)
        try:
            body = decode_json(raw) if raw.strip() else None
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, f"JSON parse error: {str(exc)[:200]}") from None
        if not isinstance(body, dict):
            raise ApiError(
                400,
                f"Required request body {{collaborator_id, roles, side}}, got {json_type(body)}",
            )
        problems: list[str] = []
        collaborator_id = body.get("collaborator_id")
        if not is_int(collaborator_id):
            problems.append(f"collaborator_id must be an integer, got {json_type(collaborator_id)}")
        roles = check_roles(body.get("roles"), "roles", problems)
        side = check_side(body.get("side"), "side", QUERY_SIDES, problems)
        _check(problems, "Invalid identity field request")
        assert is_int(collaborator_id)
        assert roles is not None
        assert side is not None
        collaborator = self._state.collaborators.get(collaborator_id)
        if collaborator is None:
            raise ApiError(404, f"Collaborator with id {collaborator_id} not found")
        if self._form_of(collaborator) is not form:
            raise ApiError(
                400,
                f"Collaborator {collaborator_id} is on a contract of another template, "
                f"not {form.template_id}",
            )
        return json_response(form.render(roles, side, collaborator.values))

    # --- collaborators (#25–#30) -----------------------------------------------------------

    async def create_collaborator(self, request: web.Request) -> web.Response:
        """``POST /v1/contracts/{id}/collaborators``: add a party; 201 with a Link."""
        contract = self._contract(request.match_info["contractId"])
        body = await read_object(request)
        problems: list[str] = []
        ids: dict[str, int | None] = {}
        for key, required in (("userId", True), ("inviterId", True), ("signatoryId", False)):
            value = body.get(key)
            if value is None:
                if required:
                    problems.append(f"{key} is required")
                ids[key] = None
            elif not is_int(value):
                problems.append(f"{key} must be an integer, got {json_type(value)}")
                ids[key] = None
            else:
                ids[key] = value
        raw_roles, raw_side = _given(body, "role", problems), _given(body, "side", problems)
        roles = None if raw_roles is None else check_roles(raw_roles, "role", problems)
        side = None if raw_side is None else check_side(raw_side, "side", SIDES, problems)
        email = body.get("email")
        if email is not None and not isinstance(email, str):
            problems.append(f"email must be a string, got {json_type(email)}")
        if "identityFields" not in body:
            hint = (
                ' (the wire name is camelCase "identityFields")'
                if "identity_fields" in body
                else ""
            )
            problems.append("identityFields is required" + hint)
        signatory_id = ids["signatoryId"]
        if (
            signatory_id is not None
            and signatory_id not in self._state.contract_collaborators[contract.id]
        ):
            problems.append(
                f"signatoryId {signatory_id} is not a collaborator of contract {contract.id}"
            )
        form = self._catalog.identity[contract.template_id]
        user_id, inviter_id = ids["userId"], ids["inviterId"]
        user = self._state.users.get(user_id) if user_id is not None else None
        values: dict[int, str] = {}
        if roles is not None and side is not None and "identityFields" in body:
            visible = form.visible_ids(roles, side)
            checker = ValueChecker(form, visible, _prefill(form, visible, user))
            checker.apply_tree(body["identityFields"])
            problems.extend(checker.problems)
            values = checker.values
        _check(problems, "Invalid collaborator")
        assert user_id is not None
        assert inviter_id is not None
        assert roles is not None
        assert side is not None
        user = self._user(user_id, "userId")
        self._user(inviter_id, "inviterId")
        team = self._state.teams[contract.team_id]
        if not team.has_user(inviter_id):
            # Only the contract's team invites (§4: owners and members manage contracts).
            raise ApiError(403, f"Inviter {inviter_id} is not an owner or member of team {team.id}")
        self._open(contract)
        if any(
            c.user_id == user.id for c in self._state.contract_collaborators[contract.id].values()
        ):
            raise ApiError(
                409, f"User {user.id} is already a collaborator of contract {contract.id}"
            )
        collaborator = self._state.add_collaborator(
            contract,
            user_id=user.id,
            inviter_id=inviter_id,
            roles=roles,
            side=side,
            values=values,
            signatory_id=signatory_id,
        )
        href = f"{self._origin(request)}/v1/collaborators/{collaborator.id}"
        return json_response({"rel": "self", "href": href}, status=201, headers={"Location": href})

    async def list_collaborators(self, request: web.Request) -> web.Response:
        """``GET /v1/contracts/{id}/collaborators``: the contract's collaborators, oldest first."""
        contract = self._contract(request.match_info["contractId"])
        base = self._origin(request)
        return json_response(
            [self._json(base, c) for c in self._state.contract_collaborators[contract.id].values()]
        )

    async def get_collaborator(self, request: web.Request) -> web.Response:
        """``GET /v1/collaborators/{id}``: one collaborator."""
        return self._answer(request, self._collaborator(request.match_info["collaboratorId"]))

    async def delete_collaborator(self, request: web.Request) -> web.Response:
        """``DELETE /v1/collaborators/{id}``: remove; 204 with no body (signed: 409)."""
        collaborator = self._collaborator(request.match_info["collaboratorId"])
        self._unsigned(collaborator, "removed")
        contract_collaborators = self._state.contract_collaborators[collaborator.contract_id]
        relying = [
            c.id for c in contract_collaborators.values() if c.signatory_id == collaborator.id
        ]
        if relying:
            raise ApiError(
                409,
                f"Collaborator {collaborator.id} is the signatory of collaborator(s) "
                + ", ".join(map(str, relying)),
            )
        self._state.delete_collaborator(collaborator)
        _maybe_complete(self._state, self._state.contracts[collaborator.contract_id])
        return web.Response(status=204)

    async def update_roles(self, request: web.Request) -> web.Response:
        """``PATCH /v1/collaborators/{id}/roles`` ``{roles}``: replace the roles."""
        collaborator = self._collaborator(request.match_info["collaboratorId"])
        body = await read_object(request)
        problems: list[str] = []
        raw_roles = _given(body, "roles", problems)
        roles = None if raw_roles is None else check_roles(raw_roles, "roles", problems)
        if roles is not None:
            # UpdateFieldsCollaboratorDTO's role enum lacks party_with_signatory, as does
            # CompanyFieldsDTO's (endpoints.md §2, enum notes): Jackson would refuse it.
            problems.extend(
                f'roles: "{r}" is not a role this update takes; expected one of '
                + ", ".join(COMPANY_ROLES)
                for r in roles
                if r not in COMPANY_ROLES
            )
        _check(problems, "Invalid roles")
        assert roles is not None
        self._unsigned(collaborator, "changed")
        form = self._form_of(collaborator)
        visible = form.visible_ids(roles, collaborator.side)
        user = self._state.users.get(collaborator.user_id or 0)
        # Fields the new roles fill in start from the user's details, as at creation.
        collaborator.values = {**_prefill(form, visible, user), **collaborator.values}
        collaborator.roles = roles
        _maybe_complete(self._state, self._state.contracts[collaborator.contract_id])
        return self._answer(request, collaborator)

    async def update_fields(self, request: web.Request) -> web.Response:
        """``PATCH /v1/collaborators/{id}/fields`` ``{fields: [{id: "…", value}]}``: merge."""
        collaborator = self._collaborator(request.match_info["collaboratorId"])
        body = await read_object(request)
        if "fields" not in body:
            raise ApiError(400, "Invalid identity fields: fields is required")
        form = self._form_of(collaborator)
        checker = ValueChecker(
            form, form.visible_ids(collaborator.roles, collaborator.side), collaborator.values
        )
        checker.apply_flat(body["fields"])
        _check(checker.problems, "Invalid identity fields")
        self._unsigned(collaborator, "changed")
        collaborator.values = checker.values
        return self._answer(request, collaborator)

    # --- signatures (#31, #32) ---------------------------------------------------------------

    def _may_sign(self, collaborator: Collaborator) -> None:
        if collaborator.company is not None:
            raise ApiError(
                403, f"Collaborator {collaborator.id} is a company party; its signatory signs"
            )
        if collaborator.signed is not None:
            raise ApiError(409, f"Collaborator {collaborator.id} has already signed")
        if not SIGNING_ROLES.intersection(collaborator.roles):
            raise ApiError(
                403,
                f"Collaborator {collaborator.id} has no signing role (roles "
                f"{', '.join(collaborator.roles)}); a bare collaborator does not sign",
            )
        missing = self._form_of(collaborator).missing(
            collaborator.roles, collaborator.side, collaborator.values
        )
        if missing:
            raise ApiError(
                400,
                f"Collaborator {collaborator.id} cannot sign: required identity fields are "
                "empty: " + ", ".join(missing),
            )

    def _signed(self, request: web.Request, collaborator: Collaborator) -> web.Response:
        collaborator.signed = utc_now()
        _maybe_complete(self._state, self._state.contracts[collaborator.contract_id])
        return self._answer(request, collaborator)

    async def sign(self, request: web.Request) -> web.Response:
        """``PATCH /v1/collaborators/{id}/signature``: upload a PNG/JPEG image and sign."""
        collaborator = self._collaborator(request.match_info["collaboratorId"])
        image = parse_signature(request.headers.get("Content-Type"), await read_body(request))
        self._may_sign(collaborator)
        assert collaborator.user_id is not None
        # The upload also becomes the user's saved signature (assumed).
        self._state.signatures[collaborator.user_id] = image
        return self._signed(request, collaborator)

    async def sign_saved(self, request: web.Request) -> web.Response:
        """``PATCH /v1/collaborators/{id}/user-signature``: sign with the saved signature."""
        collaborator = self._collaborator(request.match_info["collaboratorId"])
        self._may_sign(collaborator)
        if collaborator.user_id not in self._state.signatures:
            raise ApiError(
                409,
                f"User {collaborator.user_id} has no saved signature; upload one with "
                "PATCH /v1/collaborators/{id}/signature",
            )
        return self._signed(request, collaborator)

    # --- company parties (#33) ---------------------------------------------------------------

    async def create_company(self, request: web.Request) -> web.Response:
        """``POST /v1/contracts/{id}/company``: add a company party; 201."""
        contract = self._contract(request.match_info["contractId"])
        body = await read_object(request)
        problems: list[str] = []
        name = _text(body, "company_name", problems, required=True)
        number = _text(body, "company_number", problems)
        address = _address(body, "address", problems)
        office = _address(body, "registered_office_address", problems)
        raw_side = _given(body, "side", problems)
        side = None if raw_side is None else check_side(raw_side, "side", SIDES, problems)
        role = body.get("role", "party")
        if not isinstance(role, str) or role not in COMPANY_ROLES:
            shown = repr(role[:40]) if isinstance(role, str) else json_type(role)
            problems.append(
                f"role: {shown} is not a company role; expected one of " + ", ".join(COMPANY_ROLES)
            )
        ints: dict[str, int | None] = {}
        for key in ("created_by", "signatory_related_company", "contract_configuration_id", "id"):
            value = body.get(key)
            if value is not None and not is_int(value):
                problems.append(f"{key} must be an integer, got {json_type(value)}")
                value = None
            ints[key] = value
        signatory = ints["signatory_related_company"]
        collaborators = self._state.contract_collaborators[contract.id]
        if signatory is not None and (
            signatory not in collaborators or collaborators[signatory].company is not None
        ):
            problems.append(
                f"signatory_related_company {signatory} is not a person collaborator of "
                f"contract {contract.id}"
            )
        _check(problems, "Invalid company")
        assert name is not None
        assert side is not None
        assert isinstance(role, str)
        created_by = ints["created_by"]
        if created_by is not None:
            self._user(created_by, "created_by")
            team = self._state.teams[contract.team_id]
            if not team.has_user(created_by):
                raise ApiError(
                    403, f"User {created_by} is not an owner or member of team {team.id}"
                )
        self._open(contract)
        collaborator = self._state.add_collaborator(
            contract,
            user_id=None,
            inviter_id=created_by,
            roles=[role],
            side=side,
            values={},
            signatory_id=signatory,
            company=Company(name, number, address, office, created_by),
        )
        href = f"{self._origin(request)}/v1/collaborators/{collaborator.id}"
        return json_response(
            {
                "company_name": name,
                "contract_collaborator_id": collaborator.id,
                "contract_id": contract.id,
            },
            status=201,
            headers={"Location": href},
        )


def _prefill(form: IdentityForm, visible: set[int], user: User | None) -> dict[int, str]:
    """The user's names and email for the name/email fields (GETUSER: they pre-fill)."""
    if user is None:
        return {}
    out = {}
    for field_id in visible:
        attribute = PREFILLED.get(form.by_id[field_id].key)
        if attribute is not None:
            out[field_id] = str(getattr(user, attribute))
    return out


def _maybe_complete(state: SandboxState, contract: Contract) -> None:
    """Set ``completedDate`` once every collaborator with a signing role has signed."""
    if contract.completed is not None:
        return
    signers = [c for c in state.contract_collaborators[contract.id].values() if signs(c)]
    if signers and all(c.signed is not None for c in signers):
        contract.completed = max(c.signed for c in signers if c.signed is not None)


def _given(body: dict[str, Any], key: str, problems: list[str]) -> object | None:
    """A required member, or None (with a problem) when absent or null."""
    value = body.get(key)
    if value is None:
        problems.append(f"{key} is required")
    return value


def _text(
    body: dict[str, Any],
    key: str,
    problems: list[str],
    *,
    required: bool = False,
    where: str = "",
) -> str | None:
    value = body.get(key)
    name = where + key
    if value is None:
        if required:
            problems.append(f"{name} is required")
        return None
    if not isinstance(value, str):
        problems.append(f"{name} must be a string, got {json_type(value)}")
        return None
    if required and not value.strip():
        problems.append(f"{name} must not be blank")
        return None
    if len(value) > 255:
        problems.append(f"{name} must be at most 255 characters, got {len(value)}")
        return None
    return value


def _address(body: dict[str, Any], key: str, problems: list[str]) -> dict[str, str] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"{key} must be an object, got {json_type(value)}")
        return None
    out: dict[str, str] = {}
    for name in _ADDRESS_KEYS:
        text = _text(value, name, problems, where=f"{key}.")
        if text is not None:
            out[name] = text
    return out
