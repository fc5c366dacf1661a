"""The ``/v1`` endpoints of the service (service-api.md §7), with the real JSON shapes.

Authentication, rate limits, faults and idempotency happen before these handlers run
(``_app.py``); a handler only checks the request against the data and answers.

Access rule (service-api.md §4, kept simple): a credential acts for the seeded
"integration" identity, which may act for any user id given in a path or body. The one
membership rule enforced is the documented one: the ``created_by_user_id`` of a new
contract must be an owner or member of the team (403 otherwise).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ._catalog import ContractType, Template
from ._fields import apply_fields, flatten
from ._pdf import render_html, render_pdf
from ._routes import Handler, RouteGroup
from ._routes_parties import collaborator_name, signs
from ._store import Contract, Team, User
from ._wire import (
    ApiError,
    find,
    get_int,
    get_str,
    hal_self,
    iso_millis,
    json_response,
    link,
    links_array,
    parse_id,
    read_object,
    require_int,
    require_str,
    team_time,
)

_MAX_PROBLEMS = 20


class ApiRoutes(RouteGroup):
    """The handlers of the ``/v1`` API.

    Args:
        emulator: The emulator whose data the handlers serve.
    """

    def routes(self) -> list[tuple[str, str, Handler]]:
        """Every route of the group, as (method, path, handler)."""
        return [
            ("GET", "/v1/users", self.list_users),
            ("POST", "/v1/users", self.create_user),
            ("GET", "/v1/users/{userId}", self.get_user),
            ("GET", "/v1/users/{userId}/teams", self.list_user_teams),
            ("POST", "/v1/users/{userId}/teams", self.create_team),
            ("GET", "/v1/teams/{teamId}", self.get_team),
            ("PATCH", "/v1/teams/{teamId}", self.update_team),
            ("GET", "/v1/contract-types", self.list_types),
            ("GET", "/v1/contract-types/{typeId}", self.get_type),
            ("GET", "/v1/teams/{teamId}/contract-types", self.list_team_types),
            ("GET", "/v1/teams/{teamId}/contract-types/{typeId}", self.get_team_type),
            ("GET", "/v1/teams/{teamId}/contract-types/{typeId}/templates", self.list_templates),
            (
                "GET",
                "/v1/teams/{teamId}/contract-types/{typeId}/templates/{templateId}",
                self.get_template,
            ),
            ("GET", "/v1/templates/{templateId}/terms", self.list_terms),
            ("GET", "/v1/terms/{termId}", self.get_term),
            ("POST", "/v1/teams/{teamId}/contracts", self.create_contract),
            ("GET", "/v1/teams/{teamId}/contracts", self.list_contracts),
            ("GET", "/v1/contracts/{contractId}", self.get_contract),
            ("PATCH", "/v1/contracts/{contractId}", self.update_contract),
            ("DELETE", "/v1/contracts/{contractId}", self.delete_contract),
            ("GET", "/v1/contracts/{contractId}/pdf", self.contract_pdf),
            ("GET", "/v1/contracts/{contractId}/html", self.contract_html),
        ]

    # --- lookups ---------------------------------------------------------------------------

    def _user(self, raw: str) -> User:
        # The documented message (service-api.md §7 Users); 404 is [INFERRED].
        return find(self._state.users, raw, "userId", "User")

    def _team(self, raw: str) -> Team:
        return find(self._state.teams, raw, "teamId", "Team")

    def _contract(self, raw: str) -> Contract:
        return find(self._state.contracts, raw, "contractId", "Contract")

    def _team_type(self, request: web.Request) -> tuple[Team, ContractType]:
        team = self._team(request.match_info["teamId"])
        type_id = parse_id(request.match_info["typeId"], "contractTypeId")
        ctype = self._state.type_in_team(team.id, type_id)
        if ctype is None:
            raise ApiError(404, f"Contract type with id {type_id} not found in team {team.id}")
        return team, ctype

    # --- JSON shapes -------------------------------------------------------------------------

    @staticmethod
    def _user_json(base: str, user: User) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": user.id,
            "email": user.email,
            "first_name": user.first_name,
            "last_name": user.last_name,
            "full_name": f"{user.first_name} {user.last_name}",
        }
        if user.avatar is not None:
            out["avatar"] = user.avatar  # only set when the user has a picture (§7 Users)
        out["created"] = iso_millis(user.created)
        out["_links"] = hal_self(f"{base}/v1/users/{user.id}")
        return out

    @staticmethod
    def _team_json(base: str, team: Team) -> dict[str, Any]:
        # HAL _links on teams, and the space-separated created format (§5, §7 Teams).
        return {
            "id": team.id,
            "name": team.name,
            "created": team_time(team.created),
            "_links": hal_self(f"{base}/v1/teams/{team.id}"),
        }

    def _contract_name(self, contract: Contract, template: Template) -> str:
        # The name is the value of the contract_name term (§7 Contracts); before it is
        # set, the emulator shows the contract type's name.
        name_term = template.by_name.get("contract_name")
        name = contract.answers.get(name_term.id) if name_term is not None else None
        return name or self._catalog.types_by_id[template.contract_type_id].name

    def _contract_json(self, base: str, contract: Contract) -> dict[str, Any]:
        template = self._catalog.templates[contract.template_id]
        # The wire keys of ContractResponseDTO (§7 Contracts): no "id" (it lives in the
        # self link) and a camelCase completedDate.
        return {
            "contract_name": self._contract_name(contract, template),
            "created_date": iso_millis(contract.created),
            "purchased_date": iso_millis(contract.purchased),
            "completedDate": None if contract.completed is None else iso_millis(contract.completed),
            "fields": flatten(template, contract.answers),
            "_links": hal_self(f"{base}/v1/contracts/{contract.id}"),
        }

    # --- users -------------------------------------------------------------------------------

    async def list_users(self, request: web.Request) -> web.Response:
        """``GET /v1/users``: every user, as a plain array."""
        base = self._origin(request)
        return json_response([self._user_json(base, u) for u in self._state.users.values()])

    async def get_user(self, request: web.Request) -> web.Response:
        """``GET /v1/users/{userId}``: one user, 404 "User with id X not found"."""
        user = self._user(request.match_info["userId"])
        return json_response(self._user_json(self._origin(request), user))

    async def create_user(self, request: web.Request) -> web.Response:
        """``POST /v1/users``: create a user and their Personal Team; 201 as USERDOC shows.

        The body is ``{"_links": {"self": {"href"}}, "user_id", "email"}`` (the docs'
        example, endpoints.md M13; the spec's bare Link is not what the docs show).
        """
        body = await read_object(request)
        email = require_str(body, "email")
        local, _, domain = email.partition("@")
        if not local or "." not in domain or any(c.isspace() for c in email):
            raise ApiError(400, f'email "{email[:100]}" is not a valid email address')
        first = require_str(body, "first_name")
        last = require_str(body, "last_name")
        avatar = get_str(body, "avatar", max_length=2048)
        if self._state.user_by_email(email) is not None:
            raise ApiError(409, f"User with email {email} already exists")
        user = self._state.create_user(first, last, email, avatar)
        href = f"{self._origin(request)}/v1/users/{user.id}"
        return json_response(
            {"_links": hal_self(href), "user_id": user.id, "email": user.email},
            status=201,
            headers={"Location": href},
        )

    # --- teams -------------------------------------------------------------------------------

    async def list_user_teams(self, request: web.Request) -> web.Response:
        """``GET /v1/users/{userId}/teams``: the teams the user owns or is a member of."""
        user = self._user(request.match_info["userId"])
        base = self._origin(request)
        return json_response([self._team_json(base, t) for t in self._state.teams_of(user.id)])

    async def create_team(self, request: web.Request) -> web.Response:
        """``POST /v1/users/{userId}/teams``: create a team owned by the user; 201 (§7)."""
        user = self._user(request.match_info["userId"])
        body = await read_object(request)
        # Name required, at most 255 characters (§7 Teams, POSTTEAM).
        name = require_str(body, "name")
        team = self._state.create_team(user.id, name)
        base = self._origin(request)
        return json_response(
            self._team_json(base, team),
            status=201,
            headers={"Location": f"{base}/v1/teams/{team.id}"},
        )

    async def get_team(self, request: web.Request) -> web.Response:
        """``GET /v1/teams/{teamId}``: one team."""
        team = self._team(request.match_info["teamId"])
        return json_response(self._team_json(self._origin(request), team))

    async def update_team(self, request: web.Request) -> web.Response:
        """``PATCH /v1/teams/{teamId}``: rename a team."""
        team = self._team(request.match_info["teamId"])
        body = await read_object(request)
        team.name = require_str(body, "name")
        return json_response(self._team_json(self._origin(request), team))

    # --- contract types, templates, terms --------------------------------------------------

    async def list_types(self, request: web.Request) -> web.Response:
        """``GET /v1/contract-types``: the public contract types."""
        base = self._origin(request)
        return json_response(
            [
                t.to_json(f"{base}/v1/contract-types/{t.id}")
                for t in self._catalog.types
                if t.team_ids is None
            ]
        )

    async def get_type(self, request: web.Request) -> web.Response:
        """``GET /v1/contract-types/{typeId}``: one public contract type."""
        type_id = parse_id(request.match_info["typeId"], "contractTypeId")
        ctype = self._catalog.types_by_id.get(type_id)
        if ctype is None or ctype.team_ids is not None:
            raise ApiError(404, f"Contract type with id {type_id} not found")
        return json_response(ctype.to_json(f"{self._origin(request)}/v1/contract-types/{type_id}"))

    async def list_team_types(self, request: web.Request) -> web.Response:
        """``GET /v1/teams/{teamId}/contract-types``: the types creatable in the team."""
        team = self._team(request.match_info["teamId"])
        prefix = f"{self._origin(request)}/v1/teams/{team.id}/contract-types"
        return json_response(
            [t.to_json(f"{prefix}/{t.id}") for t in self._catalog.types_for_team(team.id)]
        )

    async def get_team_type(self, request: web.Request) -> web.Response:
        """``GET /v1/teams/{teamId}/contract-types/{typeId}``: one type of the team."""
        team, ctype = self._team_type(request)
        href = f"{self._origin(request)}/v1/teams/{team.id}/contract-types/{ctype.id}"
        return json_response(ctype.to_json(href))

    def _template_json(
        self, base: str, team: Team, ctype: ContractType, template_id: int
    ) -> dict[str, Any]:
        template = self._catalog.templates[template_id]
        href = f"{base}/v1/teams/{team.id}/contract-types/{ctype.id}/templates/{template.id}"
        return {"id": template.id, "version": template.version, "links": links_array(href)}

    async def list_templates(self, request: web.Request) -> web.Response:
        """``GET …/contract-types/{typeId}/templates``: versions, newest first (§7 Templates)."""
        team, ctype = self._team_type(request)
        base = self._origin(request)
        return json_response(
            [self._template_json(base, team, ctype, tid) for tid in ctype.template_ids]
        )

    async def get_template(self, request: web.Request) -> web.Response:
        """``GET …/contract-types/{typeId}/templates/{templateId}``: one version."""
        team, ctype = self._team_type(request)
        template_id = parse_id(request.match_info["templateId"], "templateId")
        if template_id not in ctype.template_ids:
            raise ApiError(
                404, f"Template with id {template_id} not found for contract type {ctype.id}"
            )
        return json_response(self._template_json(self._origin(request), team, ctype, template_id))

    async def list_terms(self, request: web.Request) -> web.Response:
        """``GET /v1/templates/{templateId}/terms``: the term tree (encoded once, cached)."""
        template_id = parse_id(request.match_info["templateId"], "templateId")
        template = self._state.template(template_id)
        if template is None:
            raise ApiError(404, f"Template with id {template_id} not found")
        return web.Response(
            body=template.terms_json(self._origin(request)), content_type="application/json"
        )

    async def get_term(self, request: web.Request) -> web.Response:
        """``GET /v1/terms/{termId}``: one term with its nested terms."""
        term_id = parse_id(request.match_info["termId"], "termId")
        term = self._catalog.terms.get(term_id)
        if term is None:
            raise ApiError(404, f"Term with id {term_id} not found")
        return json_response(term.to_json(self._origin(request)))

    # --- contracts ---------------------------------------------------------------------------

    async def create_contract(self, request: web.Request) -> web.Response:
        """``POST /v1/teams/{teamId}/contracts``: create; 201 with a Link and Location."""
        team = self._team(request.match_info["teamId"])
        body = await read_object(request)
        # Both ids are required in the spec (§7 CreateContract); fields/source optional.
        user_id = require_int(body, "created_by_user_id")
        template_id = require_int(body, "template_id")
        source_id = get_int(body, "source_contract")
        if user_id not in self._state.users:
            raise ApiError(404, f"User with id {user_id} not found")
        if not team.has_user(user_id):
            # Only owners and members create contracts in a team (§4).
            raise ApiError(403, f"User {user_id} is not an owner or member of team {team.id}")
        template = self._state.template(template_id)
        if template is None:
            raise ApiError(404, f"Template with id {template_id} not found")
        ctype = self._catalog.types_by_id[template.contract_type_id]
        if not ctype.available_in(team.id):
            raise ApiError(
                400,
                f'Template {template_id} belongs to contract type "{ctype.name}", '
                f"which is not available in team {team.id}",
            )
        answers: dict[int, str] = {}
        if source_id is not None:
            source = self._state.contracts.get(source_id)
            if source is None:
                raise ApiError(404, f"Contract with id {source_id} not found")
            if source.template_id != template_id:
                raise ApiError(
                    400,
                    f"source_contract {source_id} uses template {source.template_id}, "
                    f"not {template_id}",
                )
            answers = dict(source.answers)
        if body.get("fields") is not None:
            _check(apply_fields(template, answers, body["fields"]))
        contract = self._state.add_contract(team.id, template.id, user_id, answers)
        self._emulator.counters.contracts_created += 1
        href = f"{self._origin(request)}/v1/contracts/{contract.id}"
        return json_response(link(href), status=201, headers={"Location": href})

    async def list_contracts(self, request: web.Request) -> web.Response:
        """``GET /v1/teams/{teamId}/contracts``: the team's contracts, oldest first."""
        team = self._team(request.match_info["teamId"])
        base = self._origin(request)
        contracts = self._state.team_contracts[team.id].values()
        return json_response([self._contract_json(base, c) for c in contracts])

    async def get_contract(self, request: web.Request) -> web.Response:
        """``GET /v1/contracts/{contractId}``: one contract."""
        contract = self._contract(request.match_info["contractId"])
        return json_response(self._contract_json(self._origin(request), contract))

    async def update_contract(self, request: web.Request) -> web.Response:
        """``PATCH /v1/contracts/{contractId}``: merge field values, re-validated (§7)."""
        contract = self._contract(request.match_info["contractId"])
        body = await read_object(request)
        if "fields" not in body:
            raise ApiError(400, "fields is required")
        template = self._catalog.templates[contract.template_id]
        answers = dict(contract.answers)
        _check(apply_fields(template, answers, body["fields"]))
        contract.answers = answers
        return json_response(self._contract_json(self._origin(request), contract))

    async def delete_contract(self, request: web.Request) -> web.Response:
        """``DELETE /v1/contracts/{contractId}``: delete; answers an object with only _links."""
        contract = self._contract(request.match_info["contractId"])
        self._state.delete_contract(contract)
        href = f"{self._origin(request)}/v1/contracts/{contract.id}"
        return json_response({"_links": hal_self(href)})

    def _document(
        self, contract: Contract
    ) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
        template = self._catalog.templates[contract.template_id]
        ctype = self._catalog.types_by_id[template.contract_type_id]
        facts = [
            ("Contract type", ctype.name),
            ("Template version", template.version),
            ("Created", iso_millis(contract.created)),
        ]
        if contract.completed is not None:
            facts.append(("Completed", iso_millis(contract.completed)))
        # The parties and who has signed (the real document shows the signatures).
        for party in self._state.contract_collaborators[contract.id].values():
            name = collaborator_name(self._state, party)
            if party.signed is not None:
                status = f"signed {iso_millis(party.signed)}"
            else:
                status = "not signed" if signs(party) else "does not sign"
            roles = ", ".join(party.roles)
            facts.append((f"Party ({party.side} side)", f"{name} ({roles}): {status}"))
        fields = [(f["name"], f["value"]) for f in flatten(template, contract.answers)]
        return self._contract_name(contract, template), facts, fields

    async def contract_pdf(self, request: web.Request) -> web.Response:
        """``GET /v1/contracts/{contractId}/pdf``: a small valid PDF of the contract."""
        contract = self._contract(request.match_info["contractId"])
        title, facts, fields = self._document(contract)
        lines = [f"{k}: {v}" for k, v in facts] + [""] + [f"{k}: {v}" for k, v in fields]
        pdf = render_pdf(title, lines)
        return web.Response(
            body=pdf,
            content_type="application/pdf",
            headers={"Content-Disposition": f'inline; filename="contract-{contract.id}.pdf"'},
        )

    async def contract_html(self, request: web.Request) -> web.Response:
        """``GET /v1/contracts/{contractId}/html``: the contract as an HTML page."""
        contract = self._contract(request.match_info["contractId"])
        title, facts, fields = self._document(contract)
        return web.Response(
            text=render_html(title, facts, fields),
            content_type="text/html",
        )


def _check(problems: list[str]) -> None:
    """Raise a 400 naming every problem (capped) when there are any."""
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        more = len(problems) - len(shown)
        message = "; ".join(shown) + (f"; and {more} more problems" if more > 0 else "")
        raise ApiError(400, f"Invalid contract fields: {message}")
