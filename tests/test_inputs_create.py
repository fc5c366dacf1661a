"""Bad create arguments are refused before anything is sent; odd template versions order.

Idempotency keys, values that are not a mapping, and template versions too long for int().
"""

from __future__ import annotations

from typing import Any

import pytest

from contractsdk import ConfigurationError, ContractClient, Party, TermSet
from contractsdk.models import Template, Term
from contractsdk.resources.templates import newest_first
from tests._fakeservice import FakeService
from tests._partykit import (
    Routes,
    api_fixture,  # noqa: F401  # the fixture `api`
    routes_fixture,  # noqa: F401  # the fixture `routes`
)

NAME = {"contract_name": "Flat 1"}

BAD_KEYS: list[Any] = [
    123,
    b"key",
    "",
    "a\r\nX-Injected: 1",
    "a\x00b",
    "with space",
    "clé",
    "k" * 256,
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
async def test_contracts_create_refuses_a_bad_idempotency_key(
    client: ContractClient, service: FakeService, key: Any
) -> None:
    """Refused before anything is sent, whatever is wrong with the key.

    Not a str, empty (it was silently replaced by a random key), a control character, a
    space, non-ASCII, or past 255 characters.
    """
    with pytest.raises(ConfigurationError, match="idempotency_key"):
        await client.contracts.create(
            70, template_id=150, created_by=7, values=NAME, idempotency_key=key
        )
    assert service.requests == []


@pytest.mark.parametrize("key", BAD_KEYS[:4], ids=repr)
async def test_create_contract_refuses_a_bad_idempotency_key_first(
    client: ContractClient, service: FakeService, key: Any
) -> None:
    """Before the personal team and newest template are looked up."""
    with pytest.raises(ConfigurationError, match="idempotency_key"):
        await client.create_contract(
            user_id=7, contract_type_id=service.TYPE_ID, values=NAME, idempotency_key=key
        )
    assert service.requests == []


async def test_a_good_idempotency_key_is_sent_as_given(
    client: ContractClient, service: FakeService
) -> None:
    key = "row-42/" + "k" * 248  # 255 visible ASCII characters
    await client.contracts.create(
        70, template_id=150, created_by=7, values=NAME, idempotency_key=key
    )
    assert service.requests[-1].headers["Idempotency-Key"] == key


async def test_collaborators_create_refuses_a_bad_idempotency_key(
    api: ContractClient, routes: Routes
) -> None:
    with pytest.raises(ConfigurationError, match="idempotency_key"):
        await api.collaborators.create(
            500, user_id=8, inviter_id=7, roles="party", side="first", idempotency_key=""
        )
    assert routes.requests == []


async def test_with_parties_the_derived_keys_must_fit_too(
    api: ContractClient, routes: Routes
) -> None:
    """Each party's request carries the key with "-party-<index>": 255 characters in all."""
    parties = [Party(user_id=8, roles="party", side="first")] * 10
    with pytest.raises(ConfigurationError, match=r"'-party-9'.*at most 255"):
        await api.create_contract_with_parties(
            user_id=7,
            contract_type_id=3,
            team_id=70,
            template_id=149,
            values=NAME,
            parties=parties,
            idempotency_key="k" * 248,
        )
    with pytest.raises(ConfigurationError, match="idempotency_key"):
        await api.create_contract_with_parties(
            user_id=7,
            contract_type_id=3,
            values=NAME,
            parties=parties,
            idempotency_key="a key",
        )
    assert routes.requests == []


# -- values must be a mapping ------------------------------------------------------------

PAIRS = [("contract_name", "a")]


async def test_create_refuses_values_that_are_not_a_mapping(
    client: ContractClient, service: FakeService
) -> None:
    with pytest.raises(ConfigurationError, match=r"values must be a mapping.*not list"):
        await client.contracts.create(70, template_id=150, created_by=7, values=PAIRS)  # type: ignore[arg-type]
    assert [request.method for request in service.requests] == ["GET"]  # the terms only


async def test_update_refuses_values_that_are_not_a_mapping(
    client: ContractClient, service: FakeService
) -> None:
    """With or without the template: checked, or sent unchecked."""
    with pytest.raises(ConfigurationError, match="values must be a mapping"):
        await client.contracts.update(500, values=PAIRS)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="values must be a mapping"):
        await client.contracts.update(500, values=PAIRS, template_id=150)  # type: ignore[arg-type]
    assert all(request.method == "GET" for request in service.requests)


def test_termset_refuses_values_that_are_not_a_mapping() -> None:
    terms = TermSet([Term(id=1, name="contract_name")], template_id=1)
    for method in (terms.validate, terms.check, terms.build_fields):
        with pytest.raises(ConfigurationError, match=r"values must be a mapping.*not tuple"):
            method(tuple(PAIRS))  # type: ignore[arg-type]
    assert terms.validate({"contract_name": "a"}) == {"contract_name": "a"}


# -- template versions past int()'s 4,300 digits ------------------------------------------

HUGE = "9" * 5000


def test_versions_of_any_length_order_as_numbers() -> None:
    versions = [HUGE, "1" + "0" * 5000, "2", "1.10", "1.9", "v7", "010", "x", "٣"]
    templates = [Template(id=index, version=version) for index, version in enumerate(versions)]
    ordered = [template.version for template in newest_first(templates)]
    assert ordered == ["1" + "0" * 5000, HUGE, "010", "v7", "٣", "2", "1.10", "1.9", "x"]


async def test_latest_and_create_contract_take_a_huge_version(
    client: ContractClient, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    templates = [{"id": 149, "version": "7"}, {"id": 150, "version": HUGE}]
    monkeypatch.setattr(service, "TEMPLATES", templates)
    assert [t.id for t in await client.templates.list(70, service.TYPE_ID)] == [150, 149]
    assert (await client.templates.latest(70, service.TYPE_ID)).id == 150
    contract = await client.create_contract(
        user_id=7, contract_type_id=service.TYPE_ID, values=NAME
    )
    assert contract.id is not None
    assert service.contracts[contract.id]["body"]["template_id"] == 150
