"""Shared helpers of the party tests: a MockTransport answering by route, a client, samples.

The fixtures ``routes`` and ``api`` are ``routes_fixture`` and ``api_fixture`` here: test
modules import them by those names, as ones imported as ``routes`` and ``api`` would be
shadowed by their tests' arguments of those names (ruff's F811).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from contractsdk import ContractClient, Request, Response
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

HOST = "https://sandbox.legislate.tech"

#: The tenant sample (shared/reference/samples/identity_fields_tenant.json), inlined so the
#: tests run without ../shared.
TENANT_FIELDS: list[dict[str, Any]] = [
    {"id": 2112, "label": "First Name", "value": ""},
    {"id": 2113, "label": "Last Name", "value": ""},
    {"id": 2114, "label": "Email", "validationType": "EMAIL", "value": ""},
    {"id": 2115, "label": "Current address", "value": ""},
    {"id": 2116, "label": "Mobile", "value": ""},
    {
        "id": 2121,
        "label": "Are you a Tenant or Guarantor?",
        "options": [
            {"name": "tenant"},
            {
                "name": "guarantor",
                "nested_fields": [
                    {
                        "id": 2122,
                        "type": "input",
                        "label": "Please specify the name of the Tenant",
                        "required": True,
                        "index": 5,
                        "parentOption": "guarantor",
                        "side": "second",
                        "identity_field_id": 6754496734560423,
                    }
                ],
            },
            {"name": "other"},
        ],
        "value": "",
    },
]

Route = Callable[[Request], Response]


class Routes:
    """A MockTransport handler answering by (method, path); records what was sent."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Request] = []

    def on(self, method: str, path: str, route: Route | Response) -> None:
        if isinstance(route, Response):
            fixed = route
            self.routes[method, path] = lambda _request: fixed
        else:
            self.routes[method, path] = route

    def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        route = self.routes.get((request.method, request.path))
        if route is None:
            return json_response(404, {"message": f"no route {request.method} {request.path}"})
        return route(request)

    def sent(self, method: str | None = None) -> list[Request]:
        return [r for r in self.requests if method is None or r.method == method]


@pytest.fixture(name="routes")
def routes_fixture() -> Routes:
    return Routes()


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture(name="api")
async def api_fixture(routes: Routes) -> AsyncIterator[ContractClient]:
    async with ContractClient(
        rate_limits=None,
        api_key=API_KEY,
        environment="sandbox",
        transport=MockTransport(routes),
        sleep=_no_sleep,
    ) as client:
        yield client


def created(kind: str, number: int) -> Response:
    href = f"{HOST}/v1/{kind}/{number}"
    return json_response(201, {"rel": "self", "href": href}, headers={"Location": href})
