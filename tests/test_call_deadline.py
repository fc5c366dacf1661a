"""``Retries(timeout=)`` bounds the whole call: an attempt under way ends with it too."""

from __future__ import annotations

import asyncio

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
        roomy = client.with_options(retries=Retries(timeout=30.0))
        assert (await roomy.users.get(user.id)).id == user.id  # an answer in time: as before


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
