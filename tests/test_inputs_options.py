"""Bad client settings are refused at construction (or by with_options), before any I/O.

Each was accepted before: some failed untyped (TypeError, ValueError from aiohttp) at every
call, others silently meant something else (a NaN timeout was no timeout at all, aiohttp
reads a pool of 0 connections as no limit).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from contractsdk import ApiKey, ConfigurationError, ContractClient, Request, Response
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

NAN = float("nan")


def recorder() -> tuple[MockTransport, list[Request]]:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return json_response(200, {"id": 7})

    return MockTransport(handler), seen


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"timeout": NAN}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"connect_timeout": -1}, "connect_timeout"),
        ({"connect_timeout": NAN}, "connect_timeout"),
        ({"connect_timeout": 0}, "connect_timeout"),
        ({"max_connections": 0}, "max_connections"),
        ({"max_connections": -5}, "max_connections"),
        ({"max_connections": 2.5}, "max_connections"),
        ({"limiter_timeout": -1}, "limiter_timeout"),
        ({"limiter_timeout": NAN}, "limiter_timeout"),
        ({"limiter_timeout": "1"}, "limiter_timeout"),
        ({"user_agent": "a\r\nb"}, "user_agent"),
        ({"user_agent": "a\x00b"}, "user_agent"),
        ({"user_agent": ""}, "user_agent"),
        ({"user_agent": 5}, "user_agent"),
        ({"retries": "x"}, "retries"),
        ({"rate_limits": "x"}, "rate_limits"),
        ({"api_version": 1}, "api_version"),
        ({"approved_versions": "v10", "environment": "production"}, "approved_versions"),
        ({"approved_versions": None}, "approved_versions"),
        ({"environment": 5}, "environment"),
        ({"base_url": 5}, "base_url"),
    ],
)
def test_bad_settings_are_refused_at_construction(options: dict[str, Any], match: str) -> None:
    transport, _ = recorder()
    options = {"api_key": API_KEY, "transport": transport, **options}
    with pytest.raises(ConfigurationError, match=match):
        ContractClient(**options)


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": None, "connect_timeout": None, "limiter_timeout": None},
        {"timeout": 0.5, "connect_timeout": 1, "limiter_timeout": 0, "max_connections": 1},
        {"user_agent": "my-app/1.0 (contact\there)"},
    ],
)
async def test_good_settings_are_kept(options: dict[str, Any]) -> None:
    """limiter_timeout=0 is meaningful (only a slot free at once); a tab is a header char."""
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport, **options) as client:
        await client.users.get(7)
    assert seen[0].timeout == options.get("timeout", 60.0)
    assert client._limiter_timeout == options.get("limiter_timeout")
    if "user_agent" in options:
        assert seen[0].headers["User-Agent"] == options["user_agent"]


@pytest.mark.parametrize("key", ["sekret\x00-987654", "sekret\x1b-987654", "sekret\x7f-987654"])
@pytest.mark.parametrize("as_object", [False, True], ids=["str", "ApiKey"])
def test_an_api_key_with_a_control_character_is_refused_unshown(key: str, as_object: bool) -> None:
    """It could never be sent (aiohttp refuses it, untyped, at every call); never shown.

    An ``ApiKey`` refuses it when it is made; a str, when the client is.
    """
    transport, _ = recorder()
    with pytest.raises(ConfigurationError, match="API key holds a control character") as caught:
        ContractClient(api_key=ApiKey(key) if as_object else key, transport=transport)
    shown = str(caught.value) + repr(caught.value)
    assert "sekret" not in shown and "987654" not in shown


def test_api_key_of_another_type_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="api_key must be a str or an ApiKey"):
        ContractClient(api_key=12345)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"timeout": NAN}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"limiter_timeout": -1}, "limiter_timeout"),
        ({"limiter_timeout": NAN}, "limiter_timeout"),
        ({"retries": "x"}, "retries"),
        ({"headers": {"X-A": "a\x00b"}}, "X-A"),
        ({"headers": {"X-A": "a\x1bb"}}, "X-A"),
        ({"headers": {"X-A": "a\x7fb"}}, "X-A"),
        ({"headers": {"X-\x00": "v"}}, re.escape("'X-\\x00'")),
        ({"headers": {"X(A)": "v"}}, "token"),
        ({"headers": {"X-A": 5}}, "strings"),
        ({"headers": [("X-A", "v")]}, "mapping"),
    ],
)
async def test_bad_options_are_refused_by_with_options(options: dict[str, Any], match: str) -> None:
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        with pytest.raises(ConfigurationError, match=match):
            client.with_options(**options)
    assert seen == []


async def test_with_options_takes_what_the_constructor_takes() -> None:
    """One check per option: limiter_timeout=0 and a header value with a tab pass both."""
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport, limiter_timeout=0) as client:
        derived = client.with_options(limiter_timeout=0, headers={"X-Note": "a\tb"}, timeout=2)
        await derived.users.get(7)
    assert derived._limiter_timeout == 0
    assert seen[0].headers["X-Note"] == "a\tb" and seen[0].timeout == 2


async def test_set_rate_limits_refuses_another_type() -> None:
    transport, _ = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        with pytest.raises(ConfigurationError, match="RateLimits"):
            client.set_rate_limits("fast")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"event_hooks": [print]}, r"event_hooks must be a mapping"),
        ({"event_hooks": {"request": print}}, r"event_hooks\['request'\] must be a list"),
        ({"event_hooks": {"response": [1]}}, r"event_hooks\['response'\] must be a list"),
        ({"transport": 5}, "transport must have async handle_async_request"),
    ],
)
def test_hooks_and_transports_of_the_wrong_shape_are_refused(
    options: dict[str, Any], match: str
) -> None:
    """A TypeError at the first call (or none until then) was what these gave."""
    with pytest.raises(ConfigurationError, match=match):
        ContractClient(api_key=API_KEY, **options)


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.teams.create(7, name="Acme", idempotency_key="a\r\nX: 1"),
        lambda c: c.users.create(email="a@b.io", first_name="A", last_name="B", idempotency_key=""),
        lambda c: c.companies.create(
            9, company_name="Co", role="party", side="first", created_by=7, idempotency_key=123
        ),
    ],
    ids=["teams", "users", "companies"],
)
async def test_every_create_checks_its_idempotency_key(call: Any) -> None:
    """Every create that takes a key refuses one that cannot be sent, sending nothing."""
    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        with pytest.raises(ConfigurationError, match="idempotency_key"):
            await call(client)
    assert seen == []


async def test_values_given_as_a_list_are_refused_not_read_as_none() -> None:
    """values=[] was taken for no values (``values or {}``); a tree of a list crashed."""
    from contractsdk.validation import TermSet

    transport, seen = recorder()
    async with ContractClient(api_key=API_KEY, transport=transport) as client:
        with pytest.raises(ConfigurationError, match="values must be a mapping"):
            await client.collaborators.create(
                5,
                user_id=7,
                inviter_id=7,
                roles="party",
                side="first",
                values=[],  # type: ignore[arg-type]
            )
    assert seen == []
    with pytest.raises(ConfigurationError, match="values must be a mapping"):
        TermSet([], template_id=1).tree([("contract_name", "a")])  # type: ignore[arg-type]
