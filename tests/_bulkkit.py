"""Shared helpers of the bulk tests: terms, rows, a fake service with faults, clients."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator
from typing import Any

from contractsdk import ContractClient, ReadError, Request, Response
from contractsdk._converter import structure_list
from contractsdk.models import Term
from contractsdk.testing import MockTransport, json_response
from contractsdk.validation import TermSet
from tests._fakeservice import SMALL_TERMS, FakeService
from tests.conftest import API_KEY

TEAM = FakeService.PERSONAL_TEAM
USER = FakeService.USER_ID
TEMPLATE = 149


def small_termset() -> TermSet:
    """The hand-written 3-level tree as a TermSet (contract_name, rent frequency …)."""
    return TermSet(structure_list(SMALL_TERMS, Term), template_id=TEMPLATE)


def rows(count: int, *, start: int = 0, prefix: str = "Flat") -> Iterator[dict[str, str]]:
    """Valid rows with unique names."""
    for index in range(start, start + count):
        if index % 3 == 0:
            yield {"contract_name": f"{prefix} {index}", "contract_rentFrequency": "week"}
        else:
            yield {
                "contract_name": f"{prefix} {index}",
                "contract_rentFrequency": "month",
                "contract_breakClause": "breakClauseNo",
            }


class FaultyService:
    """The fake service behind a handler that can lose answers and fail creates.

    Args:
        lost: Probability that a create is processed and its answer lost (ReadError).
        reset: Probability that a create fails before processing (ReadError too: the
            client cannot tell the two apart).
        status_503: Probability of a 503 without processing.
        seed: The RNG seed.
        delay: Seconds each create takes (lets a test see requests in flight).
        honour_keys: Replay the first answer for a repeated Idempotency-Key (as the
            emulator does; the real service documents no such thing).
    """

    def __init__(
        self,
        *,
        lost: float = 0.0,
        reset: float = 0.0,
        status_503: float = 0.0,
        seed: int = 0,
        delay: float = 0.0,
        honour_keys: bool = False,
    ) -> None:
        self.service = FakeService(terms=SMALL_TERMS)
        self.lost = lost
        self.reset = reset
        self.status_503 = status_503
        self.rng = random.Random(seed)
        self.delay = delay
        self.honour_keys = honour_keys
        self.answers: dict[str, Response] = {}
        self.posts: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate: asyncio.Event | None = None
        self.before_create: Callable[[Request], Response | None] | None = None

    @property
    def contracts(self) -> dict[int, dict[str, Any]]:
        return self.service.contracts

    def names(self) -> list[str]:
        return [contract["name"] for contract in self.service.contracts.values()]

    async def __call__(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.endswith("/contracts"):
            return self.service(request)
        self.posts.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.before_create is not None:
                answer = self.before_create(request)
                if answer is not None:
                    return answer
            draw = self.rng.random()
            if draw < self.status_503:
                return json_response(503, {"status": 503, "message": "busy"})
            draw -= self.status_503
            if draw < self.reset:
                raise ReadError("connection reset", method="POST", url=request.path)
            draw -= self.reset
            key = request.headers.get("idempotency-key")
            if self.honour_keys and key in self.answers:
                return self.answers[key]
            response = self.service(request)
            if self.honour_keys and key is not None:
                self.answers[key] = response
            if draw < self.lost:
                raise ReadError("answer lost", method="POST", url=request.path)
            return response
        finally:
            self.in_flight -= 1


def client_for(handler: Any, **options: Any) -> ContractClient:
    """A client over ``handler`` with no limiter and no retries, unless ``options`` say.

    Without the client's own retries every failure reaches the job, which is what most
    tests look at; the tests of the interplay pass ``retries=``.
    """
    options.setdefault("rate_limits", None)
    options.setdefault("retries", None)
    return ContractClient(
        api_key=API_KEY, environment="sandbox", transport=MockTransport(handler), **options
    )
