"""The send sequence where no other test pinned it.

A JSON body's Content-Type, replaying a POST under a trusted Idempotency-Key (and only
then), the budget's refund for a first-try success, bodies that cannot be JSON, and
uploads without retries or after the client closed.
"""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from contractsdk import (
    ClientCredentials,
    ConfigurationError,
    ContractClient,
    RateLimiterTimeoutError,
    RateLimits,
    Request,
    Response,
    Retries,
    ServerError,
)
from contractsdk._exceptions import CLIENT_CLOSED
from contractsdk._send import _encode_body
from contractsdk.testing import MockTransport, json_response, signature_png
from tests._fakeclock import FakeClock
from tests._fakeservice import FakeService
from tests.conftest import API_KEY


async def no_sleep(_: float) -> None:
    return None


def failing_first(service: FakeService, status: int = 503) -> tuple[MockTransport, list[Request]]:
    """A transport whose first POST is answered ``status``, and which records every request."""
    sent: list[Request] = []

    def handler(request: Request) -> Response:
        sent.append(request)
        if request.method == "POST" and sum(r.method == "POST" for r in sent) == 1:
            return json_response(status, {"status": status, "error": "Service Unavailable"})
        return service(request)

    return MockTransport(handler), sent


async def test_a_json_body_is_sent_with_its_content_type(
    client: ContractClient, service: FakeService
) -> None:
    """A request with a JSON body says ``Content-Type: application/json``; one without, none."""
    await client.teams.create(7, name="Lettings")
    await client.teams.get(70)
    post, get = service.requests
    assert post.headers.get("Content-Type") == "application/json"
    assert "Content-Type" not in get.headers


async def test_a_trusted_key_replays_a_post_after_a_503() -> None:
    """``trust_idempotency_keys=True``: a create answered 503 is sent again under its key."""
    service = FakeService()
    transport, sent = failing_first(service)
    retries = Retries(trust_idempotency_keys=True)
    async with ContractClient(
        api_key=API_KEY, transport=transport, rate_limits=None, retries=retries, sleep=no_sleep
    ) as client:
        team = await client.teams.create(7, name="Lettings")
    assert team.name == "Lettings"
    posts = [request for request in sent if request.method == "POST"]
    assert len(posts) == 2
    assert posts[0].headers["Idempotency-Key"] == posts[1].headers["Idempotency-Key"]


async def test_by_default_a_post_answered_503_is_not_replayed() -> None:
    """Without trusted keys, the 503 is raised at once, its outcome unknown."""
    transport, sent = failing_first(FakeService())
    async with ContractClient(
        api_key=API_KEY, transport=transport, rate_limits=None, sleep=no_sleep
    ) as client:
        with pytest.raises(ServerError) as caught:
            await client.teams.create(7, name="Lettings")
    assert caught.value.outcome_unknown
    assert caught.value.attempts == 1
    assert len(sent) == 1


async def test_a_call_that_declines_the_trust_is_not_replayed() -> None:
    """The bulk job's create (``trust_key=False``) is not replayed, even under trusted keys."""
    transport, sent = failing_first(FakeService())
    retries = Retries(trust_idempotency_keys=True)
    async with ContractClient(
        api_key=API_KEY, transport=transport, rate_limits=None, retries=retries, sleep=no_sleep
    ) as client:
        with pytest.raises(ServerError) as caught:
            await client.contracts._create(
                70,
                template_id=149,
                created_by=7,
                values={"contract_name": "a"},
                require_all=False,
                idempotency_key=None,
                trust_key=False,
            )
    assert caught.value.outcome_unknown
    assert [request.method for request in sent].count("POST") == 1


async def test_a_first_try_success_refunds_the_retry_budget(
    client: ContractClient, service: FakeService
) -> None:
    """Every call that succeeds at once gives the client's retry budget 1 back."""
    retrier = client._retrier
    assert retrier is not None and retrier.budget is not None
    retrier.budget.available = 400
    await client.users.get(7)
    await client.teams.get(70)
    assert retrier.budget.available == 402


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"value": float("nan")}, "cannot be sent as JSON"),
        ({"value": float("inf")}, "cannot be sent as JSON"),
        ({"value": object()}, "cannot be sent as JSON"),
        ({"fields": [{"value": "ok"}, {"value": "\ud800"}]}, r"\$\.fields\[1\]\.value holds"),
        ({"names": ("ok", "\udfff")}, r"\$\.names\[1\] holds"),
    ],
)
def test_a_body_that_is_not_json_is_refused(body: object, message: str) -> None:
    """NaN, infinity, an object or a lone surrogate (named by its path): ConfigurationError."""
    with pytest.raises(ConfigurationError, match=message):
        _encode_body(body)


def recorder(status: int = 200) -> tuple[MockTransport, list[Request]]:
    """A transport answering every request ``status`` (a signed collaborator on 200)."""
    sent: list[Request] = []

    def handler(request: Request) -> Response:
        sent.append(request)
        return json_response(status, {"id": 901, "signed": True} if status == 200 else {})

    return MockTransport(handler), sent


async def test_an_upload_without_retries_is_sent_once() -> None:
    """``retries=None``: a signature upload is sent once; a 503 is raised after one attempt."""
    transport, sent = recorder()
    async with ContractClient(
        api_key=API_KEY, transport=transport, rate_limits=None, retries=None
    ) as client:
        signed = await client.collaborators.sign(901, signature=signature_png())
    assert signed.signed is True
    assert [request.method for request in sent] == ["PATCH"]
    failing, sent = recorder(503)
    async with ContractClient(
        api_key=API_KEY, transport=failing, rate_limits=None, retries=None
    ) as client:
        with pytest.raises(ServerError) as caught:
            await client.collaborators.sign(901, signature=signature_png())
    assert caught.value.attempts == 1
    assert len(sent) == 1


async def test_an_upload_after_the_client_closed_sends_nothing() -> None:
    """A signature upload on a closed client (or its derived one) is refused, nothing sent."""
    transport, sent = recorder()
    client = ContractClient(api_key=API_KEY, transport=transport, rate_limits=None)
    derived = client.with_options(timeout=5)
    await client.aclose()
    for closed in (client, derived):
        with pytest.raises(ConfigurationError, match=re.escape(CLIENT_CLOSED)):
            await closed.collaborators.sign(901, signature=signature_png())
    assert sent == []


def limited_client(
    clock: FakeClock, transport: MockTransport, retries: Retries | None = None
) -> ContractClient:
    """A client told one read a second (no burst), on the fake clock."""
    return ContractClient(
        api_key=API_KEY,
        transport=transport,
        rate_limits=RateLimits(read=1, burst=1),
        retries=retries or Retries(),
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    )


async def test_a_call_never_queues_in_the_limiter_past_its_deadline() -> None:
    """``Retries(timeout=0.5)``: a read that would wait 1 s for its turn fails at once.

    With ``timeout=5`` it waits its turn.
    """
    clock = FakeClock()
    transport, sent = recorder()
    async with limited_client(clock, transport, Retries(timeout=0.5)) as client:
        await clock.run(client.users.get(7))
        with pytest.raises(RateLimiterTimeoutError):
            await clock.run(client.users.get(7))
    assert len(sent) == 1
    assert clock.now < 1000.5 + 1e-9
    async with limited_client(clock, transport, Retries(timeout=5.0)) as client:
        await clock.run(client.users.get(7))
        await clock.run(client.users.get(7))  # a wait of 1 s fits in 5
    assert len(sent) == 3


async def test_the_time_waited_in_the_limiter_is_counted() -> None:
    """A read that waited its turn adds its wait to ``stats.limiter_wait``."""
    clock = FakeClock()
    transport, sent = recorder()
    async with limited_client(clock, transport) as client:
        await clock.run(client.users.get(7))
        await clock.run(client.users.get(7))
        waited = client.stats.limiter_wait
    assert len(sent) == 2
    assert 0.5 < waited <= 1.1


async def test_a_call_waiting_in_the_limiter_when_the_client_closes_sends_nothing() -> None:
    """aclose() while a call waits its turn: it gets the closed-client error, nothing sent."""
    clock = FakeClock()
    transport, sent = recorder()
    client = limited_client(clock, transport)
    await clock.run(client.users.get(7))
    waiting = asyncio.ensure_future(client.users.get(7))
    await clock.settle()
    await client.aclose()
    await clock.advance(2.0)  # past the turn it waited for
    with pytest.raises(ConfigurationError, match=re.escape(CLIENT_CLOSED)):
        await waiting
    assert len(sent) == 1


async def test_hooks_see_no_credential_through_a_plain_transport() -> None:
    """A transport without a header hook gets a copy with the credential; hooks never do.

    The answer a plain transport returns names the request it was given, the copy that
    carries ``Authorization``: the answer hooks, errors and logs see names the request
    as it was before the credential went on.
    """
    service = FakeService()
    seen: list[Request] = []

    async def on_response(response: Response) -> None:
        assert response.request is not None
        seen.append(response.request)

    async with ContractClient(
        api_key=API_KEY,
        rate_limits=None,
        transport=MockTransport(service),
        event_hooks={"request": [seen.append], "response": [on_response]},
    ) as client:
        await client.users.get(7)
    assert len(seen) == 2
    for request in seen:
        assert "authorization" not in {name.lower() for name in request.headers}
        assert API_KEY not in repr(request.headers)


async def test_hooks_see_no_client_secret_in_a_token_request() -> None:
    """The token request's hooks see it without its body, which holds the client secret."""
    secret = "client-secret-9d2e"
    service = FakeService()

    def answer(request: Request) -> Response:
        if request.path == "/oauth/token":
            return json_response(
                200, {"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600}
            )
        return service(request)

    seen: list[Request] = []

    async def on_response(response: Response) -> None:
        assert response.request is not None
        seen.append(response.request)

    async with ContractClient(
        credentials=ClientCredentials(client_id="cid", client_secret=secret),
        rate_limits=None,
        transport=MockTransport(answer),
        event_hooks={"request": [seen.append], "response": [on_response]},
    ) as client:
        await client.users.get(7)
    token_requests = [request for request in seen if request.path == "/oauth/token"]
    assert len(token_requests) == 2  # the request hook's and the answer's
    for request in token_requests:
        assert not request.content
        assert secret not in repr(request)


@pytest.mark.parametrize(("limiter_timeout", "call_timeout"), [(10.0, 0.5), (0.5, 10.0)])
async def test_the_shorter_of_limiter_timeout_and_the_call_s_deadline_bounds_the_wait(
    limiter_timeout: float, call_timeout: float
) -> None:
    """A turn 1 s away: either bound of 0.5 s fails the call at once, whichever it is."""
    clock = FakeClock()
    transport, sent = recorder()
    async with ContractClient(
        api_key=API_KEY,
        transport=transport,
        rate_limits=RateLimits(read=1, burst=1),
        retries=Retries(timeout=call_timeout),
        limiter_timeout=limiter_timeout,
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    ) as client:
        await clock.run(client.users.get(7))
        started = clock.now
        with pytest.raises(RateLimiterTimeoutError):
            await clock.run(client.users.get(7))
    assert len(sent) == 1
    assert clock.now < started + 0.5 + 1e-9


async def test_the_debug_log_times_each_answer(caplog: pytest.LogCaptureFixture) -> None:
    """The DEBUG line of an answer says how long it took, from send to answer."""
    clock = FakeClock()
    service = FakeService()

    async def slow(request: Request) -> Response:
        await clock.sleep(0.25)
        return service(request)

    async with ContractClient(
        api_key=API_KEY,
        transport=MockTransport(slow),
        rate_limits=None,
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    ) as client:
        with caplog.at_level(logging.DEBUG, logger="contractsdk"):
            await clock.run(client.users.get(7))
    assert "← 200 GET /v1/users/7 in 250.0 ms" in caplog.messages
