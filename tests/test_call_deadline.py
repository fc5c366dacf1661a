"""A service's client: ``Retries(timeout=)`` bounds an attempt under way; one left open says so."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from contractsdk import ConnectTimeoutError, ContractClient, ReadTimeoutError, Retries
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._bulkkit import team_and_template

pytestmark = pytest.mark.e2e


async def test_an_answer_slower_than_the_calls_timeout_ends_it(server: SandboxServer) -> None:
    """A 30 s answer to a call given 0.5 s: a timeout, not the answer 30 s later.

    Only waits and the starts of attempts were bounded: the call returned after 3 s, as
    if it had no timeout. A read says it changed nothing; a write that may have been
    processed says so.
    """
    user = server.users[0]
    server.set_faults([FaultRule("GET /v1/users/*", latency=30.0)])
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        bounded = client.with_options(retries=Retries(timeout=0.5))
        with pytest.raises(ReadTimeoutError) as caught:  # the test's guard: never 30 s
            await asyncio.wait_for(bounded.users.get(user.id), 10)
        assert caught.value.outcome_unknown is False
        assert "may have been processed" not in str(caught.value)

        server.set_faults([FaultRule("POST /v1/teams/*/contracts", latency=30.0)])
        team_id, template_id, _ = team_and_template(server)
        late = bounded.contracts.create(
            team_id, template_id=template_id, created_by=user.id, values={"contract_name": "Late"}
        )
        with pytest.raises(ReadTimeoutError) as caught:
            await asyncio.wait_for(late, 10)
        assert caught.value.outcome_unknown is True

        server.set_faults([])
        assert (await bounded.users.get(user.id)).id == user.id  # a fast answer: as before


async def test_nothing_is_sent_once_the_deadline_has_passed(server: SandboxServer) -> None:
    """An attempt whose call has no time left is not sent, and says so."""
    async with ContractClient(api_key=server.api_key, base_url=server.url) as client:
        request = client._build(
            "GET", "/users/1", None, accept="application/json", idempotency_key=None
        )
        with pytest.raises(ConnectTimeoutError, match="ran out before the request was sent"):
            client._bounded(request, client._clock() - 0.001)
        assert client._bounded(request, client._clock() + 3600.0) is request
        cut = client._bounded(request, client._clock() + 0.25)
        assert cut.timeout is not None and 0 < cut.timeout <= 0.25


async def test_a_client_left_open_says_which_and_how_to_close_it(server: SandboxServer) -> None:
    """A client dropped without aclose() names itself (aiohttp only said "session")."""
    client = ContractClient(api_key=server.api_key, base_url=server.url)
    await client.users.get(server.users[0].id)  # its connections are open now
    session = client._transport._session  # type: ignore[attr-defined]
    del client
    with pytest.warns(ResourceWarning, match=r"unclosed <ContractClient .*await client\.aclose"):
        gc.collect()
    await session.close()  # what the client should have done

    closed = ContractClient(api_key=server.api_key, base_url=server.url)
    await closed.users.get(server.users[0].id)
    await closed.aclose()
    never_used = ContractClient(api_key=server.api_key, base_url=server.url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del closed, never_used  # closed, or nothing opened: nothing to say
        gc.collect()
