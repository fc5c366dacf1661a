"""Tolerance of the real service's answers: every response field is optional in the spec.

reference/endpoints.md §3: a missing ``id`` or ``name``, a ``null`` field value, a team
``created`` in a format the SDK does not know (M5), a 204 without a body (M12) give a usable
model with None where the value is unknown, never an error; unknown keys stay in ``raw``. A
wrong type (an object where a name is, letters where an id is) is still an error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest

from contractsdk import (
    ConfigurationError,
    ContractClient,
    Request,
    Response,
    ResponseValidationError,
    TermValidationError,
)
from contractsdk._http import Headers
from contractsdk.bulk._targets import TargetError, Targets, resolve_contract_type, resolve_team
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

HOST = "https://sandbox.legislate.tech"
Routes = dict[tuple[str, str], Callable[[], Response]]


def answer(body: Any, status: int = 200) -> Callable[[], Response]:
    return lambda: json_response(status, body)


def no_content() -> Response:
    return Response(status_code=204, headers=Headers({}), content=b"")


@pytest.fixture
def routes() -> Routes:
    return {}


@pytest.fixture
async def client(routes: Routes) -> AsyncIterator[ContractClient]:
    def handle(request: Request) -> Response:
        found = routes.get((request.method, request.path))
        if found is None:
            return json_response(404, {"status": 404, "error": "Not Found", "path": request.path})
        return found()

    async with ContractClient(
        rate_limits=None,
        api_key=API_KEY,
        environment="sandbox",
        transport=MockTransport(handle),
        retries=None,
    ) as c:
        yield c


# -- missing ids and names --------------------------------------------------------------------


async def test_user_without_id(client: ContractClient, routes: Routes) -> None:
    """A user sent without an id reads with id None, the rest of it intact."""
    routes["GET", "/v1/users/7"] = answer({"email": "ada@example.com", "first_name": "Ada"})
    user = await client.users.get(7)
    assert user.id is None and user.email == "ada@example.com" and user.first_name == "Ada"


async def test_team_without_id_or_name(client: ContractClient, routes: Routes) -> None:
    """Teams sent without an id or a name read with None there."""
    routes["GET", "/v1/users/7/teams"] = answer([{"name": "Acme"}, {"id": 71}])
    first, second = await client.teams.list(7)
    assert (first.id, first.name) == (None, "Acme")
    assert (second.id, second.name) == (71, None)


async def test_contract_type_and_template_without_id_or_name(
    client: ContractClient, routes: Routes
) -> None:
    """Contract types and template versions without ids or names read, with None there."""
    routes["GET", "/v1/teams/70/contract-types"] = answer([{"about_url": "https://x/nda"}])
    routes["GET", "/v1/teams/70/contract-types/5/templates"] = answer(
        [{"version": "7"}, {"id": 150, "version": "7"}, {"id": 151, "version": None}]
    )
    (kind,) = await client.contract_types.list(70)
    assert (kind.id, kind.name, kind.about_url) == (None, None, "https://x/nda")
    versions = await client.templates.list(70, 5)  # a None id must not break the ordering
    assert [(v.id, v.version) for v in versions] == [(150, "7"), (None, "7"), (151, "")]


async def test_term_and_option_without_id_name_or_value(
    client: ContractClient, routes: Routes
) -> None:
    """Terms without an id or a name, and options without a value, read with None there."""
    routes["GET", "/v1/terms/9"] = answer({"label": "Rent", "options": [{"nested_fields": []}]})
    term = await client.terms.get(9)
    assert (term.id, term.name, term.label) == (None, None, "Rent")
    assert term.options[0].value is None and term.option("x") is None


# -- values and dates -------------------------------------------------------------------------


async def test_null_field_value_reads_as_empty(client: ContractClient, routes: Routes) -> None:
    """A null FieldDTO value reads as "" (as a missing one does); raw still shows the null."""
    routes["GET", "/v1/contracts/5"] = answer(
        {"fields": [{"id": 1, "name": "contract_name", "value": None}, {"id": 2, "name": "b"}]}
    )
    contract = await client.contracts.get(5)
    assert [field.value for field in contract.fields] == ["", ""]
    assert contract.values == {"contract_name": "", "b": ""}
    assert contract.raw["fields"][0]["value"] is None and "value" not in contract.raw["fields"][1]


async def test_team_created_in_unknown_format(client: ContractClient, routes: Routes) -> None:
    """A team ``created`` that is not a date format we know reads as None; raw keeps it."""
    routes["GET", "/v1/teams/70"] = answer({"id": 70, "name": "Acme", "created": "16/06/2022"})
    team = await client.teams.get(70)
    assert (team.id, team.name, team.created) == (70, "Acme", None)
    assert team.raw["created"] == "16/06/2022"


async def test_other_dates_in_unknown_formats(client: ContractClient, routes: Routes) -> None:
    """Contract and user dates in unknown formats read as None; the readable ones still read."""
    routes["GET", "/v1/contracts/5"] = answer(
        {
            "contract_name": "Lease",
            "created_date": "yesterday",
            "purchased_date": "2022-13-45",
            "completedDate": "2022-07-01T00:00:00Z",
        }
    )
    routes["GET", "/v1/users/7"] = answer({"id": 7, "created": "June 16th"})
    contract = await client.contracts.get(5)
    assert (contract.created_date, contract.purchased_date) == (None, None)
    assert contract.completed_date is not None and contract.completed_date.month == 7
    assert contract.raw["created_date"] == "yesterday"
    user = await client.users.get(7)
    assert user.created is None and user.raw["created"] == "June 16th"


# -- 204 without a body -----------------------------------------------------------------------


async def test_204_on_get_gives_an_empty_model(client: ContractClient, routes: Routes) -> None:
    """A 204 without a body on a GET of one object gives a model of Nones with raw {}."""
    routes["GET", "/v1/teams/70"] = no_content
    routes["GET", "/v1/users/7"] = no_content
    team = await client.teams.get(70)
    assert (team.id, team.name, team.created, team.links, dict(team.raw)) == (
        None,
        None,
        None,
        (),
        {},
    )
    user = await client.users.get(7)
    assert user.id is None and user.email is None and dict(user.raw) == {}


async def test_204_on_contract_get_keeps_the_asked_id(
    client: ContractClient, routes: Routes
) -> None:
    """A 204 on a contract GET gives a contract of Nones whose id is the one asked for (M8)."""
    routes["GET", "/v1/contracts/5"] = no_content
    contract = await client.contracts.get(5)
    assert (contract.id, contract.name, contract.fields) == (5, None, ())


async def test_204_on_a_list_gives_an_empty_list(client: ContractClient, routes: Routes) -> None:
    """A 204 without a body on a list endpoint gives [], and on terms an empty TermSet."""
    routes["GET", "/v1/users/7/teams"] = no_content
    routes["GET", "/v1/templates/150/terms"] = no_content
    assert await client.teams.list(7) == []
    assert len(await client.terms.list(150)) == 0


async def test_204_with_a_body_is_read(client: ContractClient, routes: Routes) -> None:
    """A 204 that does carry JSON (as the service's guides show) is read as usual."""
    routes["GET", "/v1/teams/70"] = answer({"id": 70, "name": "Acme"}, 204)
    assert (await client.teams.get(70)).name == "Acme"


async def test_200_without_json_is_still_an_error(client: ContractClient, routes: Routes) -> None:
    """A 200 whose body is empty or not JSON is still a ResponseValidationError."""
    routes["GET", "/v1/teams/70"] = lambda: Response(
        status_code=200, headers=Headers({}), content=b""
    )
    with pytest.raises(ResponseValidationError, match="not JSON"):
        await client.teams.get(70)


# -- unknown keys -----------------------------------------------------------------------------

_WITH_EXTRA = [
    ("/v1/users/7", {"id": 7, "shoe_size": 9}, "users", (7,)),
    ("/v1/teams/70", {"id": 70, "shoe_size": 9}, "teams", (70,)),
    ("/v1/contract-types/5", {"id": 5, "shoe_size": 9}, "contract_types", (5,)),
    ("/v1/teams/70/contract-types/5/templates/150", {"id": 150, "shoe_size": 9}, "templates",
     (70, 5, 150)),
    ("/v1/terms/9", {"id": 9, "shoe_size": 9}, "terms", (9,)),
    ("/v1/contracts/5", {"contract_name": "x", "shoe_size": 9}, "contracts", (5,)),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "resource", "args"), _WITH_EXTRA)
async def test_unknown_keys_stay_in_raw(
    client: ContractClient,
    routes: Routes,
    path: str,
    body: dict[str, Any],
    resource: str,
    args: tuple[int, ...],
) -> None:
    """Every model read from an answer keeps the keys it does not know in raw."""
    routes["GET", path] = answer(body)
    model = await getattr(client, resource).get(*args)
    assert model.raw["shoe_size"] == 9


async def test_unknown_keys_of_options_and_fields_stay_in_raw(
    client: ContractClient, routes: Routes
) -> None:
    """Options keep theirs in raw; a contract field's are in its contract's raw."""
    routes["GET", "/v1/terms/9"] = answer({"id": 9, "options": [{"value": "a", "hint": "h"}]})
    routes["GET", "/v1/contracts/5"] = answer({"fields": [{"id": 1, "value": "v", "hint": "h"}]})
    assert (await client.terms.get(9)).options[0].raw["hint"] == "h"
    assert (await client.contracts.get(5)).raw["fields"][0]["hint"] == "h"


# -- wrong types are still errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"id": "abc", "name": "x"}, "$.id"),
        ({"id": True}, "$.id"),
        ({"id": 1, "name": {"a": 1}}, "$.name"),
        ({"id": 1, "created": {"day": 16}}, "$.created"),
        ({"id": 1, "created": True}, "$.created"),
    ],
)
async def test_wrong_types_are_still_errors(
    client: ContractClient, routes: Routes, body: dict[str, Any], where: str
) -> None:
    """Tolerance is for missing, null and unknown, not for a value of the wrong type."""
    routes["GET", "/v1/teams/70"] = answer(body)
    with pytest.raises(ResponseValidationError) as caught:
        await client.teams.get(70)
    assert any(where in line for line in caught.value.errors), caught.value.errors


async def test_wrong_field_value_type_is_still_an_error(
    client: ContractClient, routes: Routes
) -> None:
    """A field value that is an object, not a string, is still an error."""
    routes["GET", "/v1/contracts/5"] = answer({"fields": [{"id": 1, "value": {"a": 1}}]})
    with pytest.raises(ResponseValidationError, match=r"\$\.fields\[0\]\.value"):
        await client.contracts.get(5)


# -- the SDK's own consumers of these fields --------------------------------------------------

_TERMS = [
    {"id": 1, "name": "contract_name", "label": "Name"},
    {"id": 2, "label": "No name"},  # a term sent without a name
    {"name": "contract_note", "label": "No id"},  # and one without an id
    {
        "id": 4,
        "name": "contract_rentFrequency",
        "options": [
            {"value": "month", "nested_fields": [{"id": 5, "name": "contract_day"}]},
            {"nested_fields": [{"id": 6, "name": "contract_hidden"}]},  # an option without a value
        ],
    },
]


async def test_termset_with_nameless_and_idless_terms(
    client: ContractClient, routes: Routes
) -> None:
    """A TermSet builds from terms without names or ids and options without values."""
    routes["GET", "/v1/templates/150/terms"] = answer(_TERMS)
    terms = await client.terms.list(150)
    assert terms.names == (
        "contract_name",
        "contract_note",
        "contract_rentFrequency",
        "contract_day",
    )
    # A nameless term is not reachable by its id, nor a valueless option's nested terms.
    assert 2 not in terms  # type: ignore[comparison-overlap]  # TermSet takes ids and names
    assert "contract_hidden" not in terms  # type: ignore[comparison-overlap]  # as above
    assert terms[2] in terms  # a term without an id is still found
    tree = terms.tree()
    assert "(no name) (id 2): No name" in tree and "contract_note (id None)" in tree
    assert [path for path, _ in terms.walk()][1] == "(no name)"


async def test_termset_sends_idless_terms_by_name(client: ContractClient, routes: Routes) -> None:
    """A term without an id is sent by name alone; require_all skips the nameless one."""
    routes["GET", "/v1/templates/150/terms"] = answer(_TERMS)
    terms = await client.terms.list(150)
    fields = terms.build_fields(
        {
            "contract_name": "Lease",
            "contract_note": "n",
            "contract_rentFrequency": "month",
            "contract_day": "1",
        },
        require_all=True,
    )
    assert fields == [
        {"id": 1, "name": "contract_name", "value": "Lease"},
        {"name": "contract_note", "value": "n"},
        {
            "id": 4,
            "name": "contract_rentFrequency",
            "value": "month",
            "nested_fields": [{"id": 5, "name": "contract_day", "value": "1"}],
        },
    ]


async def test_termset_refuses_nameless_terms_and_valueless_options(
    client: ContractClient, routes: Routes
) -> None:
    """A nameless term's id cannot take a value, and an option without a value is no option."""
    routes["GET", "/v1/templates/150/terms"] = answer(_TERMS)
    terms = await client.terms.list(150)
    with pytest.raises(TermValidationError) as caught:
        terms.validate({2: "x", "contract_rentFrequency": "None"})
    messages = [problem.message for problem in caught.value.problems]
    assert any("the id 2 without a name" in m for m in messages), messages
    assert any("'None' is not an option" in m and "(options: month)" in m for m in messages)


_TEAMS_NO_PERSONAL = [{"id": 71, "created": "junk"}, {"name": "Acme"}, {"id": 72}]


async def test_personal_team_tolerates_missing_names_and_ids(
    client: ContractClient, routes: Routes
) -> None:
    """The personal team is found among teams without names, ids or readable dates."""
    routes["GET", "/v1/users/7/teams"] = answer(_TEAMS_NO_PERSONAL)
    assert (await client.personal_team(7)).id == 71  # no dates: the lowest id, id-less last


async def test_create_contract_without_ids_says_what_to_pass(
    client: ContractClient, routes: Routes
) -> None:
    """create_contract says to pass team_id= or template_id= when the service sent no id."""
    routes["GET", "/v1/users/7/teams"] = answer([{"name": "Personal Team"}])
    routes["GET", "/v1/teams/70/contract-types/5/templates"] = answer([{"version": "3"}])
    with pytest.raises(ConfigurationError, match="pass team_id="):
        await client.create_contract(user_id=7, contract_type_id=5, values={})
    with pytest.raises(ConfigurationError, match="pass template_id="):
        await client.create_contract(user_id=7, contract_type_id=5, values={}, team_id=70)


async def test_bulk_targets_by_name_tolerate_missing_names_and_ids(
    client: ContractClient, routes: Routes
) -> None:
    """Bulk's team and type lookups skip nameless entries and refuse id-less matches."""
    routes["GET", "/v1/users/7/teams"] = answer(
        [{"id": 70}, {"name": "Acme"}, {"id": 71, "name": "B"}]
    )
    routes["GET", "/v1/teams/70/contract-types"] = answer([{"id": 5}, {"name": "NDA"}])
    assert await resolve_team(client, "b", user_id=7) == 71
    with pytest.raises(ConfigurationError, match="without an id"):
        await resolve_team(client, "Acme", user_id=7)
    with pytest.raises(ConfigurationError, match=r"no team named 'C' \(teams: 'Acme', 'B'\)"):
        await resolve_team(client, "C", user_id=7)
    with pytest.raises(ConfigurationError, match="without an id"):
        await resolve_contract_type(client, "nda", team_id=70)


class _Journal:
    def pinned_template(self, team_id: int, contract_type_id: int) -> int | None:
        return None

    def pin_template(self, team_id: int, contract_type_id: int, template_id: int) -> int:
        return template_id

    async def call(self, operation: Callable[[_Journal], Any]) -> Any:
        return operation(self)


async def test_bulk_template_without_id(client: ContractClient, routes: Routes) -> None:
    """Bulk refuses a newest template version without an id: per row, or for the whole job."""
    routes["GET", "/v1/teams/70/contract-types/5/templates"] = answer([{"version": "3"}])

    async def on_new_team(team_id: int) -> None:
        return None

    targets = Targets(client, cast(Any, _Journal()), on_new_team)
    with pytest.raises(TargetError, match="without an id"):
        await targets.template(70, 5, fixed=False)
    with pytest.raises(ConfigurationError, match="without an id"):
        await Targets(client, cast(Any, _Journal()), on_new_team).template(70, 5, fixed=True)
