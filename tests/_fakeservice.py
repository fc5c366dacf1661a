"""A small in-memory stand-in for the service, as a MockTransport handler.

It answers with the wire shapes of reference/service-api.md (HAL ``_links`` on teams,
``links`` arrays on types and terms, a bare Link on contract create) and serves the real
42-term sample (``tests/data/contract_fields.json``, a copy of the service's capture in
``reference/samples/``) as a template's terms, unless given others.
It does no validation of its own: the emulator (contractsdk.sandbox) is the faithful
stand-in; this only lets client tests run without a socket.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from contractsdk import Request, Response
from contractsdk.testing import json_response

#: The real 42-term capture (reference/samples/contract_fields.json), kept with the tests.
SAMPLE = Path(__file__).resolve().parent / "data" / "contract_fields.json"
HOST = "https://sandbox.legislate.tech"

#: A hand-written tree, 3 term levels deep, for tests that want a small template.
SMALL_TERMS: list[dict[str, Any]] = [
    {
        "id": 1,
        "label": "Name",
        "name": "contract_name",
        "links": [{"rel": "self", "href": f"{HOST}/v1/terms/1"}],
    },
    {
        "id": 2,
        "label": "Rent frequency",
        "name": "contract_rentFrequency",
        "options": [
            {
                "value": "month",
                "nested_fields": [
                    {
                        "id": 3,
                        "label": "Break clause?",
                        "name": "contract_breakClause",
                        "options": [
                            {
                                "value": "breakClauseYes",
                                "nested_fields": [
                                    {
                                        "id": 4,
                                        "label": "After how long?",
                                        "name": "contract_breakClauseStart",
                                        "options": [{"value": "3 months"}, {"value": "6 months"}],
                                        "links": [{"rel": "self", "href": f"{HOST}/v1/terms/4"}],
                                    }
                                ],
                            },
                            {"value": "breakClauseNo"},
                        ],
                        "links": [{"rel": "self", "href": f"{HOST}/v1/terms/3"}],
                    }
                ],
            },
            {"value": "week"},
        ],
        "links": [{"rel": "self", "href": f"{HOST}/v1/terms/2"}],
    },
]


def load_terms() -> list[dict[str, Any]]:
    """Return the real sample's terms (a fresh copy: a test may change it)."""
    loaded: list[dict[str, Any]] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return loaded


class FakeService:
    """Routes requests to handlers; records contracts created."""

    USER_ID = 7
    PERSONAL_TEAM = 70
    OTHER_TEAM = 71
    TYPE_ID = 6690589634461711
    TEMPLATES: ClassVar = [{"id": 149, "version": "7"}, {"id": 150, "version": "10"}]

    def __init__(self, terms: list[dict[str, Any]] | None = None) -> None:
        self.terms = terms if terms is not None else load_terms()
        self.contracts: dict[int, dict[str, Any]] = {}
        self.next_contract = 500
        self.requests: list[Request] = []
        self.teams = {
            self.PERSONAL_TEAM: {
                "id": self.PERSONAL_TEAM,
                "name": "Personal Team",
                "created": "2022-06-16 15:16:27.980+0000",
            },
            self.OTHER_TEAM: {
                "id": self.OTHER_TEAM,
                "name": "Acme",
                "created": "2022-06-12 12:45:52.871+0000",
            },
        }
        self.routes: list[tuple[str, str, Callable[..., Response]]] = [
            ("GET", r"/v1/users/(\d+)", self.get_user),
            ("GET", r"/v1/users/(\d+)/teams", self.list_teams),
            ("POST", r"/v1/users/(\d+)/teams", self.create_team),
            ("GET", r"/v1/teams/(\d+)", self.get_team),
            ("PATCH", r"/v1/teams/(\d+)", self.rename_team),
            ("GET", r"/v1/teams/(\d+)/contract-types", self.list_types),
            ("GET", r"/v1/teams/(\d+)/contract-types/(\d+)/templates", self.list_templates),
            (
                "GET",
                r"/v1/teams/(\d+)/contract-types/(\d+)/templates/(\d+)",
                self.get_template,
            ),
            ("GET", r"/v1/templates/(\d+)/terms", self.list_terms),
            ("POST", r"/v1/teams/(\d+)/contracts", self.create_contract),
            ("GET", r"/v1/teams/(\d+)/contracts", self.list_contracts),
            ("GET", r"/v1/contracts/(\d+)", self.get_contract),
            ("PATCH", r"/v1/contracts/(\d+)", self.update_contract),
            ("DELETE", r"/v1/contracts/(\d+)", self.delete_contract),
            ("GET", r"/v1/contracts/(\d+)/pdf", self.pdf),
        ]

    def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        path = request.path
        for method, pattern, handler in self.routes:
            match = re.fullmatch(pattern, path)
            if match and method == request.method:
                result: Response = handler(request, *(int(g) for g in match.groups()))
                return result
        return json_response(
            404, {"status": 404, "error": "Not Found", "message": "No route", "path": path}
        )

    def team_json(self, team_id: int) -> dict[str, Any]:
        return {**self.teams[team_id], "_links": {"self": {"href": f"{HOST}/v1/teams/{team_id}"}}}

    def contract_json(self, contract_id: int) -> dict[str, Any]:
        contract = self.contracts[contract_id]
        return {
            "contract_name": contract["name"],
            "created_date": "2022-06-16T15:16:27.980Z",
            "purchased_date": None,
            "completedDate": None,
            "fields": contract["fields"],
            "_links": {"self": {"href": f"{HOST}/v1/contracts/{contract_id}"}},
        }

    def get_user(self, request: Request, user_id: int) -> Response:
        if user_id != self.USER_ID:
            return json_response(
                404,
                {
                    "status": 404,
                    "error": "Not Found",
                    "message": f"User with id {user_id} not found",
                },
            )
        return json_response(
            200,
            {
                "id": user_id,
                "email": "ada@example.com",
                "first_name": "Ada",
                "last_name": "Lovelace",
                "created": "2022-06-01T10:00:00Z",
            },
        )

    def list_teams(self, request: Request, user_id: int) -> Response:
        return json_response(200, [self.team_json(t) for t in self.teams])

    def create_team(self, request: Request, user_id: int) -> Response:
        team_id = max(self.teams) + 1
        self.teams[team_id] = {
            "id": team_id,
            "name": request.json()["name"],
            "created": "2022-06-20 09:00:00.000+0000",
        }
        return json_response(201, self.team_json(team_id))

    def get_team(self, request: Request, team_id: int) -> Response:
        return json_response(200, self.team_json(team_id))

    def rename_team(self, request: Request, team_id: int) -> Response:
        self.teams[team_id]["name"] = request.json()["name"]
        return json_response(200, self.team_json(team_id))

    def list_types(self, request: Request, team_id: int) -> Response:
        return json_response(
            200,
            [
                {
                    "id": self.TYPE_ID,
                    "name": "Assured Shorthold Tenancy",
                    "links": [{"rel": "self", "href": f"{HOST}/v1/contract-types/{self.TYPE_ID}"}],
                }
            ],
        )

    def list_templates(self, request: Request, team_id: int, type_id: int) -> Response:
        return json_response(200, self.TEMPLATES)

    def get_template(
        self, request: Request, team_id: int, type_id: int, template_id: int
    ) -> Response:
        for template in self.TEMPLATES:
            if template["id"] == int(template_id):
                return json_response(200, template)
        return json_response(404, {"message": f"Template with id {template_id} not found"})

    def list_terms(self, request: Request, template_id: int) -> Response:
        return json_response(200, self.terms)

    def create_contract(self, request: Request, team_id: int) -> Response:
        body = request.json()
        contract_id = self.next_contract
        self.next_contract += 1
        flat: list[dict[str, Any]] = []
        stack = list(reversed(body.get("fields", [])))
        while stack:
            field = stack.pop()
            flat.append({"id": field["id"], "name": field.get("name"), "value": field["value"]})
            stack.extend(reversed(field.get("nested_fields", [])))
        name = next((f["value"] for f in flat if f["name"] == "contract_name"), None)
        self.contracts[contract_id] = {"team": team_id, "name": name, "fields": flat, "body": body}
        href = f"{HOST}/v1/contracts/{contract_id}"
        return json_response(201, {"rel": "self", "href": href}, headers={"Location": href})

    def list_contracts(self, request: Request, team_id: int) -> Response:
        return json_response(
            200, [self.contract_json(c) for c, v in self.contracts.items() if v["team"] == team_id]
        )

    def get_contract(self, request: Request, contract_id: int) -> Response:
        if contract_id not in self.contracts:
            return json_response(
                404,
                {
                    "status": 404,
                    "error": "Not Found",
                    "message": f"Contract {contract_id} not found",
                },
            )
        return json_response(200, self.contract_json(contract_id))

    def update_contract(self, request: Request, contract_id: int) -> Response:
        self.contracts[contract_id]["patch"] = request.json()
        return json_response(200, self.contract_json(contract_id))

    def delete_contract(self, request: Request, contract_id: int) -> Response:
        del self.contracts[contract_id]
        return json_response(200, {"_links": {}})

    def pdf(self, request: Request, contract_id: int) -> Response:
        return Response(
            status_code=200, headers={"Content-Type": "application/pdf"}, content=b"%PDF-1.4 fake"
        )
