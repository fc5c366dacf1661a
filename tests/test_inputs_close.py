"""aclose() while a call waits for a shared fetch: a typed error, unless it was cancelled.

A create waiting for its template's terms (fetched once, shared by every caller) used to
get a bare CancelledError from aclose(), though nobody cancelled its task.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from contractsdk import ConfigurationError, ContractClient, Request, Response
from contractsdk.testing import MockTransport, json_response
from tests.conftest import API_KEY

TERMS = [{"id": 1, "name": "contract_name"}]


class HeldTerms:
    """Answers the terms GET only when released; says when it has been asked."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: Request) -> Response:
        if request.path.endswith("/terms"):
            self.asked.set()
            await self.release.wait()
            return json_response(200, TERMS)
        return json_response(201, {"href": "/v1/contracts/5"})


def create(client: ContractClient) -> asyncio.Task[object]:
    return asyncio.ensure_future(
        client.contracts.create(1, template_id=2, created_by=3, values={"contract_name": "x"})
    )


async def test_a_create_waiting_for_terms_gets_a_typed_error_on_aclose() -> None:
    terms = HeldTerms()
    transport = MockTransport(terms)
    client = ContractClient(api_key=API_KEY, transport=transport, rate_limits=None)
    waiting = create(client)
    await terms.asked.wait()
    await client.aclose()
    with pytest.raises(ConfigurationError, match="this client is closed"):
        await waiting
    assert [request.method for request in transport.requests] == ["GET"]  # nothing created


async def test_a_create_whose_own_task_is_cancelled_is_still_cancelled() -> None:
    """Closing as well does not turn the caller's own cancellation into an error."""
    terms = HeldTerms()
    client = ContractClient(api_key=API_KEY, transport=MockTransport(terms), rate_limits=None)
    waiting = create(client)
    await terms.asked.wait()
    waiting.cancel()
    if sys.version_info >= (3, 11):  # before, a task does not count its cancellations
        await client.aclose()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await client.aclose()


async def test_identity_fields_waiters_get_the_typed_error_too() -> None:
    asked, release = asyncio.Event(), asyncio.Event()

    async def handler(request: Request) -> Response:
        asked.set()
        await release.wait()
        return json_response(200, [])

    client = ContractClient(api_key=API_KEY, transport=MockTransport(handler), rate_limits=None)
    waiting = asyncio.ensure_future(client.identity_fields.list(2, roles="party", side="first"))
    await asked.wait()
    await client.aclose()
    with pytest.raises(ConfigurationError, match="this client is closed"):
        await waiting
