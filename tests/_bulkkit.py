"""Shared helpers of the bulk tests: terms, rows, a fake service with faults, clients, jobs.

For the end-to-end tests: the emulator's team, the journal's counts, and the command run
in a process of its own (to be killed or interrupted) or resumed in this one.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from contractsdk import AiohttpTransport, ContractClient, ReadError, Request, Response, Retries
from contractsdk._converter import structure_list
from contractsdk.bulk import BulkJob, BulkParty, JournalError, RowOutcome
from contractsdk.bulk._journal import Journal
from contractsdk.models import Term
from contractsdk.sandbox import FaultRule, SandboxServer
from contractsdk.testing import MockTransport, json_response
from contractsdk.validation import TermSet
from tests._bulkprocess import Command
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


#: Every in-process job test gives up after this long (2 shared cores: generous).
JOB_LIMIT = 60.0


def job_for(client: Any, source: Any, **options: Any) -> BulkJob:
    options.setdefault("team_id", TEAM)
    options.setdefault("template_id", TEMPLATE)
    options.setdefault("created_by", USER)
    options.setdefault("round_delay", 0.0)
    return BulkJob(client, source, **options)


async def collect(job: BulkJob) -> list[RowOutcome]:
    async def run() -> list[RowOutcome]:
        return [outcome async for outcome in job.run()]

    return await asyncio.wait_for(run(), JOB_LIMIT)


def by_state(outcomes: list[RowOutcome]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    return counts


def posted_names(service: FaultyService) -> list[str]:
    names = []
    for request in service.posts:
        fields = request.json()["fields"]
        names.append(next(f["value"] for f in fields if f["name"] == "contract_name"))
    return names


# -- end to end: the emulator, the journal, the command -------------------------------

#: Seconds any one job or wait may take in the end-to-end tests (2 shared cores: generous).
LIMIT = 120.0
#: Requests in flight in the end-to-end jobs (the command's --concurrency).
CONCURRENCY = 6


def team_and_template(server: SandboxServer) -> tuple[int, int, int]:
    """Ada's shared team, the newest tenancy template, and Ada."""
    user = server.users[0]
    team = next(t for t in server.teams if t.name == "Acme Legal")
    ast = next(c for c in server.seed.catalog.types if c.name.startswith("Assured"))
    return team.id, ast.template_ids[0], user.id


def keyed_job(
    client: ContractClient,
    server: SandboxServer,
    source: Any,
    journal: Path,
    *,
    key_column: str | None = "ref",
    **options: Any,
) -> BulkJob:
    """A job of ``source`` into the emulator's shared team, keyed by ``ref``, journalled."""
    team_id, template_id, user_id = team_and_template(server)
    return BulkJob(
        client,
        source,
        team_id=team_id,
        template_id=template_id,
        created_by=user_id,
        key_column=key_column,
        journal=journal,
        **options,
    )


def command_emulator(faults: Sequence[FaultRule] = ()) -> SandboxServer:
    """An emulator for :func:`start_command`, with limits far above what a test sends.

    It names them in its answers' headers, so that the command (whose client learns the
    limits of a URL it does not know) paces at them from its first answer instead of
    starting slowly.
    """
    return SandboxServer(port=0, read_rate=10_000, write_rate=10_000, faults=faults)


def emulator_client(server: SandboxServer, **options: Any) -> ContractClient:
    """A client of the emulator, with no rate limiter unless ``options`` give one.

    The emulator's URL is not a known environment: by default a client would start slowly
    to learn limits that the emulators here do not have.
    """
    options.setdefault("rate_limits", None)
    return ContractClient(api_key=server.api_key, base_url=server.url, **options)


def journal_counts(path: Path) -> dict[str, int]:
    """The journal's rows by state, read beside a writer that may be running."""
    journal = Journal.connect(path, readonly=True)
    try:
        return journal.counts()
    finally:
        journal.close()


def journal_query(path: Path, sql: str) -> int:
    """One number from the journal (a ``SELECT count(*) ...``)."""
    journal = Journal.connect(path, readonly=True)
    try:
        found: int = journal.db.execute(sql).fetchone()[0]
        return found
    finally:
        journal.close()


def created_in(path: Path) -> int:
    """How many rows the journal holds as created; 0 while it does not exist yet."""
    if not path.exists():
        return 0
    try:
        return journal_counts(path)["created"]
    except (JournalError, sqlite3.Error):  # the file is being created beside us
        return 0


def faults_seen(server: SandboxServer, name: str) -> int:
    """How many faults of a kind (``lost``, ``latency`` ...) the emulator has applied."""
    faults = server.counters()["faults"]
    assert isinstance(faults, dict)
    return int(faults.get(name, 0))


async def listed_names(server: SandboxServer, team_id: int) -> list[str]:
    """The names of the team's contracts, as the service lists them."""
    async with emulator_client(server) as client:
        return [contract.name or "" for contract in await client.contracts.list(team_id)]


async def check_accounted(
    server: SandboxServer, team_id: int, journal: Path, rows: int
) -> dict[str, int]:
    """Every row in exactly one final state; the service holds exactly the created ones."""
    counts = journal_counts(journal)
    assert sum(counts.values()) == rows
    assert counts["pending"] == counts["sending"] == 0
    names = await listed_names(server, team_id)
    assert len(names) == len(set(names)), "a contract was created twice"
    assert len(names) == counts["created"]
    assert len(server.state.team_contracts[team_id]) == counts["created"]
    return counts


def weekly_rows_csv(path: Path, count: int, prefix: str) -> Path:
    """Write ``count`` rows keyed ``ref`` (``{prefix[0]}N``), named ``{prefix} N``, weekly."""
    lines = ["ref,contract_name,contract_rentFrequency"]
    lines += [f"{prefix[0]}{n},{prefix} {n},week" for n in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def start_command(server: SandboxServer, source: Path, journal: Path, *more: str) -> Command:
    """``contractsdk bulk create SOURCE`` against the emulator, in its own process."""
    argv, env = command_line(server, source, journal, *more)
    return Command(argv, env, journal.with_name(journal.name + ".out"))


def command_line(
    server: SandboxServer, source: Path, journal: Path, *more: str
) -> tuple[list[str], dict[str, str]]:
    """The arguments and variables of :func:`start_command`'s ``contractsdk bulk create``."""
    team_id, template_id, user_id = team_and_template(server)
    argv = [
        "bulk",
        "create",
        str(source),
        "--team",
        str(team_id),
        "--template",
        str(template_id),
        "--created-by",
        str(user_id),
        "--key-column",
        "ref",
        "--journal",
        str(journal),
        "--concurrency",
        str(CONCURRENCY),
        *more,
    ]
    env = {"CONTRACTSDK_BASE_URL": server.url, "CONTRACTSDK_API_KEY": server.api_key}
    return argv, env


async def wait_until(condition: Callable[[], bool], command: Command) -> None:
    """Poll ``condition`` (cheap, synchronous) until it holds, while the command runs.

    The emulator answers in this event loop, so between two polls it can only have done
    what a few milliseconds allow: a job stopped right after the condition holds is
    stopped close to that point, however loaded the machine.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while not condition():
        if command.returncode is not None:
            _code, output = await command.finish(LIMIT)
            raise AssertionError(f"the job ended before it could be stopped:\n{output}")
        if loop.time() > deadline:
            raise AssertionError("the job made no progress in time")
        await asyncio.sleep(0.005)


async def resume(
    server: SandboxServer,
    source: Path,
    journal: Path,
    *,
    parties: Sequence[BulkParty] = (),
) -> BulkJob:
    """Run again, in this process, the job :func:`start_command` started (same journal).

    What is tested is the resume, not the process it runs in: no pause between rounds or
    retries, no rate limiter (the emulator has no limit).
    """
    team_id, template_id, user_id = team_and_template(server)
    quick = Retries(wait_initial=0.0, wait_max=0.0)
    async with emulator_client(server, retries=quick) as client:
        job = BulkJob(
            client,
            source,
            team_id=team_id,
            template_id=template_id,
            created_by=user_id,
            key_column="ref",
            journal=journal,
            concurrency=CONCURRENCY,
            parties=parties,
            round_delay=0.0,
        )

        async def consume() -> list[RowOutcome]:
            return [outcome async for outcome in job.run()]

        await asyncio.wait_for(consume(), LIMIT)
    return job


class WithoutIdempotencyKeys:
    """A transport that drops the Idempotency-Key header, as a service ignoring it would."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport()

    async def handle_async_request(self, request: Request) -> Response:
        stripped = attrs.evolve(request, headers=request.headers.without("Idempotency-Key"))
        return await self.inner.handle_async_request(stripped)

    async def aclose(self) -> None:
        await self.inner.aclose()


class SentThenCut:
    """Sends each POST on its own, and answers at once as if the connection broke.

    The request goes on to the service (without its Idempotency-Key, as to a service that
    ignores it) while the job records an unknown outcome; after ``count`` such POSTs the
    job is stopped: a run cut short with its last requests still being processed. Only
    POSTs whose path ends with ``path_end`` are cut (every POST by default).
    """

    def __init__(self, count: int, path_end: str = "") -> None:
        self.inner = WithoutIdempotencyKeys()
        self.count = count
        self.path_end = path_end
        self.detached: list[asyncio.Task[Response]] = []
        self.job: BulkJob | None = None

    async def handle_async_request(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.endswith(self.path_end):
            return await self.inner.handle_async_request(request)
        self.detached.append(asyncio.create_task(self.inner.handle_async_request(request)))
        if len(self.detached) == self.count and self.job is not None:
            self.job.stop()
        raise ReadError("the connection broke after sending (test)")

    async def aclose(self) -> None:
        """Leave the detached requests running: :meth:`finish` ends them."""

    async def finish(self) -> None:
        """Wait for the detached requests, then close the connections."""
        await asyncio.gather(*self.detached, return_exceptions=True)
        await self.inner.aclose()


class ProcessedLate:
    """Answers the first ``count`` POSTs (ending with ``path_end``) 504 at once.

    Each goes on to the service ``lag`` seconds later (without its Idempotency-Key), as
    behind a gateway that gave up waiting for a busy service: the 5xx said nothing was
    made, and the contract is made after it. Later requests pass through.
    """

    def __init__(self, count: int, lag: float, path_end: str = "") -> None:
        self.inner = WithoutIdempotencyKeys()
        self.count = count
        self.lag = lag
        self.path_end = path_end
        self.detached: list[asyncio.Task[Response]] = []

    async def handle_async_request(self, request: Request) -> Response:
        if (
            request.method != "POST"
            or not request.path.endswith(self.path_end)
            or len(self.detached) >= self.count
        ):
            return await self.inner.handle_async_request(request)

        async def later() -> Response:
            await asyncio.sleep(self.lag)
            return await self.inner.handle_async_request(request)

        self.detached.append(asyncio.create_task(later()))
        return json_response(504, {"status": 504, "message": "gateway timeout"})

    async def aclose(self) -> None:
        await asyncio.gather(*self.detached, return_exceptions=True)
        await self.inner.aclose()
