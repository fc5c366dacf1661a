"""The whole flow through MockTransport, and the client's own rules."""

from __future__ import annotations

import gc
import logging
import re
import warnings
from typing import Any

import pytest

from contractsdk import (
    ConfigurationError,
    Contract,
    ContractClient,
    NotFoundError,
    Request,
    Response,
    ResponseValidationError,
    TermSet,
    TermValidationError,
)
from contractsdk._logging import EVENTS
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import MockTransport, json_response
from tests._fakeservice import FakeService
from tests.conftest import API_KEY


def rent_values(name: str = "Flat 1") -> dict[str, str]:
    return {
        "contract_name": name,
        "contract_rentFrequency": "month",
        "contract_breakClause": "breakClauseYes",
        "contract_breakClauseStart": "6 months",
    }


async def test_whole_flow(client: ContractClient, service: FakeService) -> None:
    """A user goes from an API key to a created, listed, read, changed and deleted contract."""
    user = await client.users.get(service.USER_ID)
    assert user.first_name == "Ada"
    teams = await client.teams.list(user.id)
    assert {t.name for t in teams} == {"Personal Team", "Acme"}
    team = await client.teams.create(user.id, name="New team")
    assert team.created is not None and team.created.year == 2022
    assert (await client.teams.rename(team.id, name="Renamed")).name == "Renamed"
    types = await client.contract_types.list(team.id)
    assert types[0].id == service.TYPE_ID
    versions = await client.templates.list(team.id, types[0].id)
    assert [v.version for v in versions] == ["10", "7"]  # newest first, numerically
    template = await client.templates.latest(team.id, types[0].id)
    assert template.id == 150
    terms = await client.terms.list(template.id)
    assert isinstance(terms, TermSet)

    contract = await client.contracts.create(
        team.id, template_id=template.id, created_by=user.id, values=rent_values()
    )
    assert contract.id == 500
    assert contract.name == "Flat 1"
    sent = service.contracts[500]["body"]
    assert sent["created_by_user_id"] == user.id and sent["template_id"] == 150
    rent = next(f for f in sent["fields"] if f["name"] == "contract_rentFrequency")
    # The nested answers travel inside the parent's nested_fields, 3 levels deep.
    brk = rent["nested_fields"][0]
    assert (rent["value"], brk["name"], brk["value"]) == (
        "month",
        "contract_breakClause",
        "breakClauseYes",
    )
    assert brk["nested_fields"][0] == {
        "id": brk["nested_fields"][0]["id"],
        "name": "contract_breakClauseStart",
        "value": "6 months",
    }

    listed = await client.contracts.list(team.id)
    assert [c.id for c in listed] == [500]
    fetched = await client.contracts.get(500)
    assert fetched.values["contract_breakClauseStart"] == "6 months"
    updated = await client.contracts.update(
        500, values={"contract_name": "Flat 2"}, template_id=template.id
    )
    assert updated.id == 500
    assert await client.contracts.download_pdf(500) == b"%PDF-1.4 fake"
    await client.contracts.delete(500)
    with pytest.raises(NotFoundError, match="Contract 500 not found"):
        await client.contracts.get(500)


async def test_terms_are_fetched_once_per_template(
    client: ContractClient, service: FakeService
) -> None:
    """Creating many contracts from one template fetches its terms once."""
    for n in range(3):
        await client.contracts.create(
            70, template_id=149, created_by=7, values={"contract_name": f"c{n}"}
        )
    terms_calls = [r for r in service.requests if r.path.endswith("/terms")]
    assert len(terms_calls) == 1


async def test_invalid_values_send_nothing(client: ContractClient, service: FakeService) -> None:
    """Values breaking the exclusive-option rule raise before any contract request is sent."""
    values = {
        "contract_name": "x",
        "contract_rentFrequency": "week",
        "contract_breakClause": "breakClauseNo",  # only applies under "month"
        "contract_rentFrequncy": "month",  # typo: unknown term
    }
    with pytest.raises(TermValidationError) as caught:
        await client.contracts.create(70, template_id=149, created_by=7, values=values)
    kinds = {problem.kind for problem in caught.value.problems}
    assert {"inapplicable", "unknown_term"} <= kinds
    assert not [r for r in service.requests if r.method == "POST"]


async def test_create_contract_whole_flow(client: ContractClient, service: FakeService) -> None:
    """create_contract picks the personal team and the newest template by default."""
    contract = await client.create_contract(
        user_id=7, contract_type_id=service.TYPE_ID, values=rent_values("Flat 9")
    )
    stored = service.contracts[contract.id or 0]
    assert stored["team"] == service.PERSONAL_TEAM
    assert stored["body"]["template_id"] == 150


async def test_create_contract_with_explicit_team_and_template(
    client: ContractClient, service: FakeService
) -> None:
    """An explicit team and template are used as given, not looked up.

    The template is checked to be of the contract type, once: a second create sends only
    itself.
    """
    for _ in range(2):
        await client.create_contract(
            user_id=7,
            contract_type_id=service.TYPE_ID,
            values={"contract_name": "x"},
            team_id=service.OTHER_TEAM,
            template_id=149,
        )
    assert not [r for r in service.requests if r.path.endswith(("/teams", "/templates"))]
    checks = [r.path for r in service.requests if "/templates/" in r.path and "/teams/" in r.path]
    assert checks == [
        f"/v1/teams/{service.OTHER_TEAM}/contract-types/{service.TYPE_ID}/templates/149"
    ]
    assert service.contracts[500]["team"] == service.OTHER_TEAM


async def test_create_contract_refuses_a_template_of_another_type(
    client: ContractClient, service: FakeService
) -> None:
    """A template version the contract type does not have: refused, nothing created."""
    with pytest.raises(ConfigurationError, match="not one of contract type"):
        await client.create_contract(
            user_id=7,
            contract_type_id=service.TYPE_ID,
            values={"contract_name": "x"},
            team_id=service.OTHER_TEAM,
            template_id=200,
        )
    assert service.contracts == {}


async def test_contract_id_from_location_header() -> None:
    """The new contract's id comes from the Location header when the body has no Link."""
    service = FakeService()

    def handler(request: Request) -> Response:
        if request.method == "POST":
            return json_response(201, None, headers={"Location": "https://x/v1/contracts/42"})
        return service(request)

    async with ContractClient(
        rate_limits=None, api_key=API_KEY, transport=MockTransport(handler)
    ) as client:
        contract = await client.contracts.create(
            70, template_id=149, created_by=7, values={"contract_name": "x"}
        )
    assert contract.id == 42


async def test_create_answer_without_id_is_a_validation_error() -> None:
    """A create answer naming no contract raises ResponseValidationError, not a guess."""
    service = FakeService()

    def handler(request: Request) -> Response:
        if request.method == "POST":
            return json_response(201, {"rel": "self"})
        return service(request)

    async with ContractClient(
        rate_limits=None, api_key=API_KEY, transport=MockTransport(handler)
    ) as client:
        with pytest.raises(ResponseValidationError, match="names no contract"):
            await client.contracts.create(70, template_id=149, created_by=7, values={})


@pytest.mark.parametrize(
    "bad", ["../admin", "1/teams", "1?x=1", "", "-1", "\uff11\uff12", True, 1.5, None, 2**63]
)
async def test_ids_can_never_change_the_path(
    client: ContractClient, service: FakeService, bad: object
) -> None:
    """Ids that are not int64 numbers are refused before anything is sent."""
    with pytest.raises(ConfigurationError, match="id"):
        await client.users.get(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        await client.contracts.get(bad)  # type: ignore[arg-type]
    assert service.requests == []


class _HostileInt(int):
    """An int whose every text form says a path."""

    def __str__(self) -> str:
        return "../../admin"

    __repr__ = __format__ = __str__  # type: ignore[assignment]

    def __int__(self) -> int:
        return 666

    __index__ = __int__


async def test_an_int_subclass_id_is_sent_by_its_integer_value(
    client: ContractClient, service: FakeService
) -> None:
    """An int subclass's __str__, __int__ and __index__ never reach the path."""
    user = await client.users.get(_HostileInt(7))
    assert user.id == 7
    assert [request.url.rsplit("/v1", 1)[1] for request in service.requests] == ["/users/7"]


async def test_digit_string_ids_are_accepted(client: ContractClient) -> None:
    """An id given as a string of digits works like the int."""
    user = await client.users.get("7")  # type: ignore[arg-type]
    assert user.id == 7


@pytest.mark.parametrize("name", ["", "   ", "x" * 256])
async def test_bad_team_names_are_refused(
    client: ContractClient, service: FakeService, name: str
) -> None:
    """Blank names and names over 255 characters are refused before sending."""
    with pytest.raises(ConfigurationError, match="name"):
        await client.teams.create(7, name=name)
    assert service.requests == []


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda client: client.teams.create(7, name="ok\ud800"), "$.name"),
        (lambda client: client.teams.rename(70, name="\udfff"), "$.name"),
    ],
)
async def test_text_that_is_not_unicode_is_refused_before_sending(
    client: ContractClient, service: FakeService, call: Any, where: str
) -> None:
    """A lone surrogate is a clear error naming the field, and nothing is sent."""
    with pytest.raises(ConfigurationError, match=re.escape(where) + ".*lone surrogate"):
        await call(client)
    assert service.requests == []


async def test_team_name_of_255_characters_is_accepted(client: ContractClient) -> None:
    """The service's limit is inclusive."""
    team = await client.teams.create(7, name="x" * 255)
    assert team.name == "x" * 255


async def test_posts_carry_an_idempotency_key(client: ContractClient, service: FakeService) -> None:
    """Every POST carries an Idempotency-Key, and a caller's own key is sent unchanged."""
    await client.teams.create(7, name="a")
    await client.contracts.create(
        70, template_id=149, created_by=7, values={"contract_name": "x"}, idempotency_key="row-1"
    )
    posts = [r for r in service.requests if r.method == "POST"]
    assert len(posts[0].headers["Idempotency-Key"]) == 32  # 128 random bits
    assert posts[1].headers["Idempotency-Key"] == "row-1"


async def test_requests_carry_the_bearer_key(
    client: ContractClient, transport: MockTransport
) -> None:
    """The API key is sent as a bearer token, with JSON accept and a user agent."""
    await client.users.get(7)
    sent = transport.requests[0]
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["Accept"] == "application/json"
    assert sent.url == "https://sandbox.legislate.tech/v1/users/7"
    assert "contractsdk" in sent.headers["User-Agent"]


async def test_closed_client_refuses_calls(transport: MockTransport) -> None:
    """A closed client raises instead of reopening connections."""
    client = ContractClient(rate_limits=None, api_key=API_KEY, transport=transport)
    async with client:
        pass
    assert transport.closed
    with pytest.raises(ConfigurationError, match="closed"):
        await client.users.get(7)


async def test_personal_team_falls_back_to_oldest(service: FakeService) -> None:
    """When no team is called "Personal Team", the oldest team is the personal one."""
    service.teams[service.PERSONAL_TEAM]["name"] = "Renamed"
    async with ContractClient(
        rate_limits=None, api_key=API_KEY, transport=MockTransport(service)
    ) as client:
        team = await client.personal_team(7)
    assert team.id == service.OTHER_TEAM  # created 2022-06-12, before the renamed one


async def test_stats_count_requests_and_statuses(client: ContractClient) -> None:
    """client.stats counts requests and responses by status."""
    await client.users.get(7)
    with pytest.raises(NotFoundError):
        await client.users.get(8)
    stats = client.stats
    assert stats.requests == 2
    assert stats.responses == {200: 1, 404: 1}


async def test_event_hooks_see_requests_without_credentials(transport: MockTransport) -> None:
    """Request and response hooks run, sync or async, and never see the Authorization header."""
    seen: list[object] = []

    async def on_response(response: object) -> None:
        seen.append(response)

    async with ContractClient(
        api_key=API_KEY,
        transport=transport,
        event_hooks={"request": [seen.append], "response": [on_response]},
    ) as client:
        await client.users.get(7)
    request, response = seen
    assert "Authorization" not in request.headers  # type: ignore[attr-defined]
    assert response.status_code == 200  # type: ignore[attr-defined]


def test_unknown_event_hook_is_refused() -> None:
    """A misspelt event name is a configuration error."""
    with pytest.raises(ConfigurationError, match="unknown event hook"):
        ContractClient(rate_limits=None, api_key=API_KEY, event_hooks={"requests": []})


async def test_contract_model_reads_listed_contracts(
    client: ContractClient, service: FakeService
) -> None:
    """Listed contracts get their id from the self link (the JSON has no id key)."""
    await client.contracts.create(70, template_id=149, created_by=7, values={"contract_name": "a"})
    (contract,) = await client.contracts.list(70)
    assert isinstance(contract, Contract)
    assert contract.id == 500 and contract.name == "a"
    assert "id" not in contract.raw


async def test_update_without_template_sends_flat_fields(
    client: ContractClient, service: FakeService
) -> None:
    """Without template_id, update sends each value as a flat {name, value} field."""
    await client.contracts.create(70, template_id=149, created_by=7, values={"contract_name": "a"})
    await client.contracts.update(500, values={"contract_name": "b", 3775: 12})
    assert service.contracts[500]["patch"] == {
        "fields": [{"name": "contract_name", "value": "b"}, {"id": 3775, "value": "12"}]
    }


async def test_update_refuses_values_without_a_string_form(
    client: ContractClient, service: FakeService
) -> None:
    """A bool or NaN value is refused before the PATCH is sent."""
    with pytest.raises(TermValidationError) as caught:
        await client.contracts.update(500, values={"contract_a": True, "contract_b": float("nan")})
    assert [p.term for p in caught.value.problems] == ["contract_a", "contract_b"]
    assert not [r for r in service.requests if r.method == "PATCH"]


async def test_require_all_without_a_template_is_refused(
    client: ContractClient, service: FakeService
) -> None:
    """require_all needs the terms to check against: without template_id, nothing is sent.

    (It used to be ignored, and the update went through with terms left unanswered.)
    """
    with pytest.raises(ConfigurationError, match="require_all needs template_id"):
        await client.contracts.update(500, values={"contract_name": "b"}, require_all=True)
    with pytest.raises(ConfigurationError, match="require_all needs template_id"):
        await client.collaborators.create(
            500, user_id=7, inviter_id=7, roles="party", side="second", require_all=True
        )
    assert service.requests == []


def throttled_once(
    service: FakeService, *, method: str | None = None, event_hooks: Any = None
) -> ContractClient:
    """A client of ``service`` whose first request (of ``method``, if given) is a bare 429."""
    from contractsdk import Retries

    answers = [json_response(429, {"status": 429}, headers={"Retry-After": "0"})]

    def handler(request: Request) -> Response:
        if answers and method in (None, request.method):
            return answers.pop()
        return service(request)

    return ContractClient(
        api_key=API_KEY,
        transport=MockTransport(handler),
        rate_limits=None,
        retries=Retries(wait_initial=0.001),
        event_hooks=event_hooks,
    )


async def test_retry_and_throttle_hooks() -> None:
    """A 429 fires the throttle hook, its retry the retry hook, and the stats count both."""
    from contractsdk import RetryEvent

    throttled: list[Response] = []
    retried: list[RetryEvent] = []
    async with throttled_once(
        FakeService(), event_hooks={"throttle": [throttled.append], "retry": [retried.append]}
    ) as client:
        assert (await client.users.get(7)).id == 7
        stats = client.stats
    assert [r.status_code for r in throttled] == [429]
    assert [(e.attempt, e.method, e.path) for e in retried] == [(1, "GET", "/v1/users/7")]
    assert (stats.requests, stats.retries, stats.throttled) == (2, 1, 1)


async def test_a_retry_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    """A service logging at INFO sees each retry (it was DEBUG only), without the key."""
    with caplog.at_level(logging.INFO, logger="contractsdk"):
        async with throttled_once(FakeService()) as client:
            await client.users.get(7)
    retried = [r for r in caplog.records if r.getMessage().startswith("retrying:")]
    assert [r.levelno for r in retried] == [logging.INFO]
    assert "GET /v1/users/7" in retried[0].getMessage()
    assert API_KEY not in caplog.text


async def test_a_hook_that_raises_never_fails_the_call(caplog: pytest.LogCaptureFixture) -> None:
    """Hooks observe: one that raises is logged, and a contract made is still returned.

    A response hook raising (a metrics backend down) turned a 201 into a ``RuntimeError``
    without the contract's id, for the caller's retry to create it twice; a throttle hook
    raising failed a call its retry would have passed.
    """
    service = FakeService()

    def broken(payload: object) -> None:
        raise RuntimeError("metrics backend down")

    async def broken_async(payload: object) -> None:
        raise RuntimeError("tracing backend down")

    seen: list[object] = []
    hooks = {event: [broken, broken_async, seen.append] for event in EVENTS}
    with caplog.at_level(logging.WARNING, logger="contractsdk"):
        async with throttled_once(service, method="POST", event_hooks=hooks) as client:
            contract = await client.contracts.create(
                70, template_id=149, created_by=7, values={"contract_name": "a"}
            )
    assert contract.id is not None and list(service.contracts) == [contract.id]
    assert [type(p).__name__ for p in seen].count("RetryEvent") == 1  # the later hooks ran
    warned = [r for r in caplog.records if "event hook" in r.getMessage()]
    events = {r.getMessage().split()[1] for r in warned}
    assert events == set(EVENTS)
    assert all(r.exc_info is not None for r in warned)
    assert API_KEY not in caplog.text


async def test_sandbox_command_delegates(capsys: pytest.CaptureFixture[str]) -> None:
    """`contractsdk sandbox --help` is the emulator's own help."""
    from contractsdk.cli import main

    assert main(["sandbox", "--help"]) == 0
    assert "--write-rate" in capsys.readouterr().out
    assert main(["sandbox", "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert "contractsdk sandbox" in err and "python -m" not in err


async def test_a_client_left_open_says_which_and_how_to_close_it(
    server: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A client dropped without aclose() names itself (aiohttp only said "session").

    Logged, as a ResourceWarning alone is hidden unless ``-W`` or ``-X dev`` shows it.
    """
    client = ContractClient(api_key=server.api_key, base_url=server.url)
    await client.users.get(server.users[0].id)  # its connections are open now
    session = client._transport._session  # type: ignore[attr-defined]
    del client
    with (
        caplog.at_level(logging.WARNING, logger="contractsdk"),
        pytest.warns(ResourceWarning, match=r"unclosed <ContractClient .*await client\.aclose"),
    ):
        gc.collect()
    unclosed = [r for r in caplog.records if r.getMessage().startswith("unclosed <ContractClient")]
    assert [r.levelname for r in unclosed] == ["WARNING"]
    await session.close()  # what the client should have done

    closed = ContractClient(api_key=server.api_key, base_url=server.url)
    await closed.users.get(server.users[0].id)
    await closed.aclose()
    never_used = ContractClient(api_key=server.api_key, base_url=server.url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del closed, never_used  # closed, or nothing opened: nothing to say
        gc.collect()
