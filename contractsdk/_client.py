"""``ContractClient``: configuration, lifecycle, the resources and the whole flow.

Every request goes through one fixed sequence, :class:`~contractsdk._send.Sender`'s
(``_send.py``); the client sets its state up and adds the public API.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
import urllib.parse
import warnings
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn, TypeVar

from contractsdk._auth import Auth, StaticAuth, TokenAuth
from contractsdk._config import (
    ENV_VARS,
    Environment,
    check_api_version,
    check_base_url,
    check_connect_timeout,
    check_idempotency_key,
    check_limiter_timeout,
    check_max_connections,
    check_timeout,
    check_user_agent,
    environment_from_env,
    pick_credential,
    pick_environment,
)
from contractsdk._credentials import ApiKey, ClientCredentials
from contractsdk._exceptions import (
    ConfigurationError,
    IdentityValidationError,
    TermValidationError,
    client_closed,
)
from contractsdk._http import NOT_GIVEN, Headers, NotGiven
from contractsdk._ids import parse_id
from contractsdk._logging import ClientStats, EventHook, Instrumentation, logger
from contractsdk._once import FetchedOnce
from contractsdk._ratelimit import (
    DEFAULT_MAX_PAUSE,
    RateLimiter,
    RateLimiterState,
    RateLimits,
)
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redact import Secrets
from contractsdk._redis import SharedRedis, namespace
from contractsdk._retry import Retrier, Retries, RetryBudget
from contractsdk._send import Sender, _checked_headers
from contractsdk._transport import AiohttpTransport, AsyncTransport, headers_sender
from contractsdk.models import Contract, ContractWithParties, Party, Team
from contractsdk.resources import (
    Collaborators,
    Companies,
    Contracts,
    ContractTypes,
    IdentityFields,
    Teams,
    Templates,
    Terms,
    Users,
)
from contractsdk.resources._base import Id
from contractsdk.validation import TermSet, TermValues

__all__ = ["ContractClient"]

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster

T = TypeVar("T")

_USER_AGENT = "contractsdk/0.1.0"
PERSONAL_TEAM = "Personal Team"  # service-api.md §4: every user owns one, by this name


def _refusal_hint(credential: ApiKey | ClientCredentials, environment: Environment) -> str:
    """What a 401 tells the user to check: the credential, for which service (no secret)."""
    name = "" if environment.name == "custom" else f"{environment.name} "
    where = f"the {name}service at {environment.base_url}"
    if isinstance(credential, ApiKey):
        return (
            f"{where} refused the API key: check that the key given (api_key= or "
            f"{ENV_VARS['api_key']}) is one it issued and has not been revoked"
        )
    return (
        f"{where} refused the access token: check that the client id and secret "
        f"({ENV_VARS['client_id']}, {ENV_VARS['client_secret']}) and the token's "
        "audience are this service's"
    )


def _check_option(value: object, kind: type, name: str) -> None:
    """Refuse an option that is neither None nor a ``kind`` (it would fail untyped later)."""
    if value is not None and not isinstance(value, kind):
        raise ConfigurationError(
            f"{name} must be a {kind.__name__} or None, got {type(value).__name__}"
        )


def _personal_team_of(user_id: Id, teams: Sequence[Team]) -> Team:
    """Return the user's personal team among their teams (see ``personal_team``).

    Raises:
        ConfigurationError: The user has no team at all (pass a team id instead).
    """
    for team in teams:
        if team.name is not None and team.name.strip().casefold() == PERSONAL_TEAM.casefold():
            return team
    if not teams:
        raise ConfigurationError(f"user {user_id} has no team; pass team_id=")
    # Any field may be missing (endpoints.md §3 M6): undated, then id-less teams last.
    return min(
        teams,
        key=lambda team: (team.created is None, team.created, team.id is None, team.id or 0),
    )


class ContractClient(Sender):
    """The async client of the Contract Service API.

    Use it as an async context manager, one client per process (it pools connections)::

        async with ContractClient(api_key="…", environment="sandbox") as client:
            contract = await client.create_contract(
                user_id=user_id, contract_type_id=type_id, values={"contract_name": "…"}
            )

    With no arguments it reads ``CONTRACTSDK_ENVIRONMENT``, ``CONTRACTSDK_API_KEY`` (or
    ``CONTRACTSDK_CLIENT_ID`` and ``CONTRACTSDK_CLIENT_SECRET``) and ``CONTRACTSDK_BASE_URL``.

    Args:
        api_key: A static API key (a string, or an :class:`ApiKey` that says its environment).
        credentials: An :class:`ApiKey` or OAuth :class:`ClientCredentials`.
        environment: ``"sandbox"`` (the default), ``"production"`` or an :class:`Environment`.
        base_url: Serve the API from here instead (an emulator, a proxy). Plain ``http`` is
            allowed only for loopback hosts.
        api_version: The API version path segment.
        approved_versions: The versions production may use.
        timeout: Seconds each attempt may take, from asking for a connection to the last
            byte of the answer (None: no limit).
        connect_timeout: Seconds to wait for a connection.
        max_connections: The connection pool's size (at least 1).
        trust_env: Take proxies from ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` (and
            credentials for them from ``~/.netrc``), as aiohttp's ``trust_env`` does. Off
            unless asked: a proxy sees every request.
        rate_limits: The read and write rates to pace requests at. By default the
            environment's documented limits (sandbox 25/s, production 100/s each), or, for a
            custom ``base_url``, unknown limits learnt from the server's 429s and headers.
            ``None`` turns the limiter off.
        retries: How failed attempts are retried (:class:`Retries`); ``None`` turns
            retries off.
        limiter_timeout: Fail fast with :class:`RateLimiterTimeoutError` instead of
            waiting longer than this in the rate limiter (None: wait as needed; 0: only
            when a slot is free at once).
        event_hooks: ``{"request" | "response" | "retry" | "throttle": [callables]}``; a
            hook may be sync or async. Hooks observe: one that raises is logged (WARNING,
            logger ``contractsdk``, with its traceback) and the call goes on.
        transport: Send requests through this instead of aiohttp (e.g.
            :class:`contractsdk.testing.MockTransport`).
        redis: Share the rate limits (buckets, pauses, learnt rates) and the OAuth token
            with every process and host that uses the same environment and credential,
            through this Redis: a ``redis://`` URL, or a ``redis.asyncio.Redis`` (or
            ``RedisCluster``) you own.
            By default ``CONTRACTSDK_REDIS_URL``, if set; ``None`` shares nothing. Needs
            ``pip install 'contractsdk[redis]'``. When Redis is away each process works
            alone at its share of the rate, and rejoins when it is back.
        user_agent: The User-Agent header.

    Raises:
        ConfigurationError: A setting is wrong or a credential belongs to another
            environment; nothing is sent.
    """

    def __init__(
        self,
        *,
        api_key: str | ApiKey | None = None,
        credentials: ApiKey | ClientCredentials | None = None,
        environment: str | Environment | None = None,
        base_url: str | None = None,
        api_version: str = "v1",
        approved_versions: Collection[str] = frozenset({"v1"}),
        timeout: float | None = 60.0,
        connect_timeout: float | None = 10.0,
        max_connections: int = 100,
        trust_env: bool = False,
        rate_limits: RateLimits | NotGiven | None = NOT_GIVEN,
        retries: Retries | NotGiven | None = NOT_GIVEN,
        limiter_timeout: float | None = None,
        event_hooks: Mapping[str, Sequence[EventHook]] | None = None,
        transport: AsyncTransport | None = None,
        redis: str | Redis | RedisCluster | NotGiven | None = NOT_GIVEN,
        user_agent: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        env = environment_from_env()
        credential = pick_credential(credentials, api_key, env)
        # What this client holds, never shown: errors, hooks and the CLI scrub it.
        self._secrets = Secrets(
            credential.key if isinstance(credential, ApiKey) else credential.client_secret
        )
        self._token_seen: str | None = None
        self._bearer = ""
        self.environment = pick_environment(environment, base_url, env)
        bound = credential.bound_environment
        if (
            bound is not None
            and self.environment.name != "custom"
            and bound != self.environment.name
        ):
            raise ConfigurationError(
                f"the credential belongs to the {bound} environment but the client is "
                f"configured for {self.environment.name}; each environment has its own keys"
            )
        check_api_version(api_version)
        # A str is a Collection too, and "v1" in "v10" is true.
        if isinstance(approved_versions, str) or not isinstance(approved_versions, Collection):
            raise ConfigurationError(
                f"approved_versions must be a collection of versions such as {{'v1'}}, "
                f"got {approved_versions!r}"
            )
        if self.environment.requires_approved_version and api_version not in approved_versions:
            raise ConfigurationError(
                f"API version {api_version!r} is not approved for {self.environment.name} "
                f"(approved: {', '.join(sorted(approved_versions))})"
            )
        # Checked here, once: aiohttp would refuse them untyped at each call, or read a
        # NaN or 0 as no limit at all.
        self._timeout = check_timeout(timeout)
        self._limiter_timeout = check_limiter_timeout(limiter_timeout)
        connect_timeout = check_connect_timeout(connect_timeout)
        max_connections = check_max_connections(max_connections)
        self._user_agent = check_user_agent(user_agent) or _USER_AGENT
        self.api_version = api_version
        self._base = f"{self.environment.base_url}/{api_version}"
        self._prefix = urllib.parse.urlsplit(self._base).path  # errors name the path: /v1/…
        # By Accept and whether a JSON body goes: what every such request sends.
        self._common_headers: dict[tuple[str, bool], Headers] = {}
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        if transport is not None and not (
            callable(getattr(transport, "handle_async_request", None))
            and callable(getattr(transport, "aclose", None))
        ):
            raise ConfigurationError(
                "transport must have async handle_async_request(request) and aclose() "
                f"(an AsyncTransport), got {type(transport).__name__}"
            )
        self._transport: AsyncTransport = transport or AiohttpTransport(
            connect_timeout=connect_timeout, max_connections=max_connections, trust_env=trust_env
        )
        self._send_headers = headers_sender(self._transport)
        self._instrumentation = Instrumentation(event_hooks)
        if isinstance(rate_limits, NotGiven):
            rate_limits = RateLimits(
                read=self.environment.read_rate, write=self.environment.write_rate
            )
        if isinstance(retries, NotGiven):
            retries = Retries()
        _check_option(rate_limits, RateLimits, "rate_limits")
        _check_option(retries, Retries, "retries")
        if isinstance(redis, NotGiven):
            redis = env.get("redis")
        self._shared = (
            None
            if redis is None
            else SharedRedis(
                redis,
                prefix=namespace(self.environment.base_url, credential.identity),
                clock=clock,
            )
        )
        shared = self._shared
        self._limiter = (
            None
            if rate_limits is None
            else RateLimiter(
                rate_limits,
                store=None
                if shared is None
                else lambda initial: RedisStore(shared, initial, clock=clock),
                max_pause=DEFAULT_MAX_PAUSE if retries is None else retries.retry_after_max,
                clock=clock,
                wall_clock=wall_clock,
                sleep=sleep,
            )
        )
        # One budget per client, shared by the clients with_options() derives from it.
        self._budget = (
            None if retries is None or retries.budget is None else RetryBudget(retries.budget)
        )
        self._retrier = self._make_retrier(retries)
        self._auth: Auth
        if isinstance(credential, ApiKey):
            self._auth = StaticAuth(credential)
        else:
            if credential.auth_url is not None:
                check_base_url(credential.auth_url, what="auth_url")
            self._auth = TokenAuth(
                credential,
                self.environment,
                self._send_token_request,
                shared=self._shared,
                clock=clock,
                wall_clock=wall_clock,
                sleep=sleep,
            )
        self._refused = _refusal_hint(credential, self.environment)
        self._term_sets: FetchedOnce[int, TermSet] = FetchedOnce()
        self._closed = False
        self._root = self  # the client that owns the connections (see with_options)
        self._backoffs: set[asyncio.Future[None]] = set()  # retries waiting: aclose() ends them
        self._extra_headers: dict[str, str] = {}

        self._attach_resources()

    def _attach_resources(self) -> None:
        """Make the ``client.<area>`` objects, bound to this client."""
        self.users = Users(self)
        """Users: create, list, get."""
        self.teams = Teams(self)
        """Teams: list, create, get, rename."""
        self.contract_types = ContractTypes(self)
        """Contract types: list, get."""
        self.templates = Templates(self)
        """Template versions: list (newest first), latest, get."""
        self.terms = Terms(self)
        """Terms of a template version: list (a :class:`~contractsdk.TermSet`), get."""
        self.contracts = Contracts(self)
        """Contracts: create, list, get, update, delete, download_pdf, download_html."""
        self.identity_fields = IdentityFields(self)
        """Identity fields of a party: list (an :class:`~contractsdk.IdentityFieldSet`)."""
        self.collaborators = Collaborators(self)
        """Collaborators: create, list, get, delete, update_roles, update_fields, sign,
        sign_with_saved_signature."""
        self.companies = Companies(self)
        """Company parties: create."""

    def __repr__(self) -> str:
        return f"<ContractClient environment={self.environment.name!r} base_url={self._base!r}>"

    def __del__(self) -> None:
        # Named, unlike aiohttp's "Unclosed client session": which object was left open,
        # and how to close it. Only a root client owns connections. Logged (a
        # ResourceWarning alone is hidden unless -W or -X dev shows it), and warned.
        try:
            if self._closed or self._root is not self:
                return
            unclosed = getattr(self._transport, "unclosed", None)
            if unclosed is None or not unclosed():
                return
        except AttributeError:  # an __init__ that raised: nothing was opened
            return
        said = (
            f"unclosed {self!r}: use `async with ContractClient(...)`, or `await "
            "client.aclose()` when done"
        )
        with contextlib.suppress(Exception):  # at interpreter exit, logging may be gone
            logger.warning("%s", said)
        warnings.warn(said, ResourceWarning, source=self, stacklevel=1)

    def __reduce__(self) -> NoReturn:
        # Pickled, a client's bytes held its credential; and its connections, tasks and
        # locks mean nothing in another process. copy.deepcopy() asks this too.
        raise TypeError(
            "a ContractClient cannot be pickled: it holds its credential and connections; "
            "make a client in each process from its settings"
        )

    def __copy__(self) -> ContractClient:
        """A shallow copy sharing everything (for :meth:`with_options`), not through pickling."""
        derived = object.__new__(type(self))
        derived.__dict__.update(self.__dict__)
        return derived

    def _make_retrier(self, retries: Retries | None) -> Retrier | None:
        if retries is None or retries.attempts == 1:
            return None
        budget = self._budget
        if budget is None and retries.budget is not None:
            budget = RetryBudget(retries.budget)
        paced = self._limiter is not None
        return Retrier(retries, budget=budget, clock=self._clock, sleep=self._backoff, paced=paced)

    async def _backoff(self, seconds: float) -> None:
        """Wait before a retry; ``aclose()`` ends the wait at once, and the call with it.

        A call waiting out a 60 s ``Retry-After`` no longer outlives the client by a
        minute: it raises the closed client's error, the retry not sent.
        """
        root = self._root
        if root._closed:
            raise client_closed()
        sleeper = asyncio.ensure_future(self._sleep(seconds))
        root._backoffs.add(sleeper)
        try:
            await asyncio.wait((sleeper,))  # the caller's own cancellation raises here
        finally:
            root._backoffs.discard(sleeper)
            sleeper.cancel()
        if root._closed:
            raise client_closed()
        if not sleeper.cancelled():
            sleeper.result()  # an error of an injected sleep surfaces

    def with_options(
        self,
        *,
        timeout: float | NotGiven | None = NOT_GIVEN,
        retries: Retries | NotGiven | None = NOT_GIVEN,
        limiter_timeout: float | NotGiven | None = NOT_GIVEN,
        headers: Mapping[str, str] | None = None,
    ) -> ContractClient:
        """Return a client for some calls with other options, sharing everything else.

        The new client shares this one's connections, rate limiter, token, caches, hooks
        and statistics, so it costs nothing to make per call, as with openai's and
        stripe's clients::

            slow = client.with_options(timeout=300, retries=Retries(attempts=5))
            pdf = await slow.contracts.download_pdf(contract_id)

        Closing it does nothing; closing this client closes both.

        Args:
            timeout: Seconds each attempt may take (None: no limit).
            retries: The retry policy (None: no retries). The retry budget stays shared.
            limiter_timeout: The longest wait in the rate limiter (None: as needed).
            headers: Headers to add to every request (not ``Authorization``, which the
                client owns; not ``Idempotency-Key``, which each create makes).

        Raises:
            ConfigurationError: A bad option, or this client is closed.
        """
        root = self._root
        if root._closed:
            raise client_closed()
        derived = copy.copy(self)
        if not isinstance(timeout, NotGiven):
            derived._timeout = check_timeout(timeout)
        if not isinstance(retries, NotGiven):
            _check_option(retries, Retries, "retries")
            derived._retrier = self._make_retrier(retries)
        if not isinstance(limiter_timeout, NotGiven):
            derived._limiter_timeout = check_limiter_timeout(limiter_timeout)
        if headers is not None and not isinstance(headers, Mapping):
            raise ConfigurationError(
                f"headers must be a mapping {{name: value}}, not {type(headers).__name__}"
            )
        if headers:
            derived._extra_headers = {**self._extra_headers, **_checked_headers(headers)}
            derived._common_headers = {}
        derived._closed = False  # its own flag; the root's closes both (see _send_json)
        identity_sets = self.identity_fields._sets
        derived._attach_resources()
        derived.identity_fields._sets = identity_sets  # one cache for the family
        return derived

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> ContractClient:
        if self._closed:
            raise client_closed()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close connections and stop token refreshes. The client cannot be used again.

        For a client made by :meth:`with_options`, nothing is closed: the connections
        belong to the client it was made from.
        """
        if self._closed:
            return
        self._closed = True
        if self._root is not self:
            return
        # A call waiting for any of these gets the error any call to a closed client gets,
        # now (not when its turn would have come), and sends nothing.
        self._term_sets.cancel(error=client_closed)
        self.identity_fields._sets.cancel(error=client_closed)
        self.templates._of_type.cancel(error=client_closed)
        if self._limiter is not None:
            self._limiter.close(client_closed)
        for sleeper in self._backoffs:
            sleeper.cancel()
        await self._auth.aclose()
        if self._limiter is not None:
            await self._limiter.aclose()
        if self._shared is not None:
            await self._shared.aclose()
        await self._transport.aclose()

    @property
    def rate_limits(self) -> RateLimiterState | None:
        """The limiter's current state (rates, tokens, pauses, 429s seen), or None if off."""
        return None if self._limiter is None else self._limiter.state

    def set_rate_limits(self, limits: RateLimits) -> None:
        """Change the limiter's rates at run time (waiting requests follow the new rates).

        Raises:
            ConfigurationError: The limiter is off (the client was made with
                ``rate_limits=None``).
        """
        if self._limiter is None:
            raise ConfigurationError("this client's rate limiter is off (rate_limits=None)")
        if not isinstance(limits, RateLimits):
            raise ConfigurationError(f"limits must be a RateLimits, got {type(limits).__name__}")
        self._limiter.set_limits(limits)

    @property
    def stats(self) -> ClientStats:
        """Counters of what this client has done (requests, retries, 429s, waits)."""
        return self._instrumentation.snapshot()

    async def _term_set(self, template_id: Id, *, refresh: bool = False) -> TermSet:
        """Return a template version's terms, fetched once per template (single flight)."""
        key = parse_id(template_id, "template_id")
        kept = None if refresh else self._term_sets.ready(key)
        if kept is not None:  # the usual case, every create after the first: nothing to await
            return kept
        return await self._term_sets.get(key, lambda: self._fetch_terms(key), refresh=refresh)

    async def _fetch_terms(self, template_id: int) -> TermSet:
        from contractsdk.models import Term

        terms = await self._get_list(f"/templates/{template_id}/terms", Term)
        return TermSet(terms, template_id=template_id)

    # -- the whole flow ----------------------------------------------------------------

    async def personal_team(self, user_id: Id, /) -> Team:
        """Return the user's personal team.

        Every user owns a team called "Personal Team", which can be renamed
        (service-api.md §4); when no team has that name, the user's oldest team is taken.

        Raises:
            ConfigurationError: The user has no team at all (pass a team id instead).
        """
        return _personal_team_of(user_id, await self.teams.list(user_id))

    async def _default_team(self, user_id: Id) -> int:
        """The team a create without ``team_id`` goes to: the user's personal team's id.

        Concurrent calls for one user share one read of the user's teams; none is kept.

        Raises:
            ConfigurationError: The user has no team, or the team came without an id.
        """
        team_id = _personal_team_of(user_id, await self.teams._list_shared(user_id)).id
        if team_id is None:  # every field of an answer is optional (endpoints.md §3 M6)
            raise ConfigurationError(
                f"the service sent user {user_id}'s personal team without an id; pass team_id="
            )
        return team_id

    async def _default_template(self, team_id: int, contract_type_id: Id) -> int:
        """The template version a create without ``template_id`` uses: the newest's id.

        Concurrent calls for one team and contract type share one read of the versions;
        none is kept, so a version published later is the one a later call finds.

        Raises:
            NotFoundError: The contract type has no template versions.
            ConfigurationError: The newest version came without an id.
        """
        template_id = (await self.templates._latest_shared(team_id, contract_type_id)).id
        if template_id is None:
            raise ConfigurationError(
                f"the service sent the newest template version of contract type "
                f"{contract_type_id} without an id; pass template_id="
            )
        return template_id

    async def _targets(
        self, user_id: Id, contract_type_id: Id, team_id: int | None, template_id: int | None
    ) -> tuple[int, int]:
        """The team and template version a create uses: those given, or found.

        A template version given is checked to be one of the contract type's: the contract
        would otherwise be made of another type than the one asked for.
        """
        if team_id is None:
            team_id = await self._default_team(user_id)
        if template_id is None:
            template_id = await self._default_template(team_id, contract_type_id)
        else:
            await self.templates._check_of_type(team_id, contract_type_id, template_id)
        return team_id, parse_id(template_id, "template_id")

    async def create_contract(
        self,
        *,
        user_id: Id,
        contract_type_id: Id,
        values: TermValues,
        team_id: int | None = None,
        template_id: int | None = None,
        require_all: bool = False,
        source_contract: int | None = None,
        idempotency_key: str | None = None,
    ) -> Contract:
        """Create a contract in one call: team, template version, terms, validation, create.

        Without ``team_id`` and ``template_id``, each call finds them with two reads before
        the create: the user's teams (``GET /users/{id}/teams``) and the contract type's
        template versions. Calls under way at the same time for the same user, team and
        contract type share those reads, but nothing is kept for later calls: where
        contracts are created often, find them once (:meth:`personal_team`,
        :meth:`Templates.latest`) and pass them, which leaves one request per contract.
        A ``template_id`` given is checked to be one of the contract type's versions,
        once per team, type and version for the client's life (one read).

        ``template_id`` also pins the version. Without it each call takes the newest, so a
        call repeated with the same ``idempotency_key`` after a new version is published
        sends another body, which a service that honours keys refuses for that key (the
        emulator with a 422); pass ``template_id`` to repeat the same request.

        Args:
            user_id: Who creates it.
            contract_type_id: The kind of contract.
            values: ``{term name or id: value}`` (see :meth:`TermSet.validate`).
            team_id: The team to hold it; the user's personal team if not given.
            template_id: The template version; the newest if not given.
            require_all: Also refuse values that leave an applicable term unanswered.
            source_contract: Make it a copy of this contract.
            idempotency_key: Your own ``Idempotency-Key`` (1 to 255 visible ASCII
                characters), which makes repeating the call safe where the service
                honours keys (see :meth:`Contracts.create`).

        Raises:
            TermValidationError: The values break the template's terms (nothing was sent).
            ConfigurationError: A bad ``idempotency_key`` (nothing was sent), a
                ``template_id`` that is not one of the contract type's versions, or the
                team or template version to use came without an id.
        """
        if idempotency_key is not None:  # before the team and template are looked up
            check_idempotency_key(idempotency_key)
        team_id, template_id = await self._targets(user_id, contract_type_id, team_id, template_id)
        return await self.contracts.create(
            team_id,
            template_id=template_id,
            created_by=user_id,
            values=values,
            require_all=require_all,
            source_contract=source_contract,
            idempotency_key=idempotency_key,
        )

    async def create_contract_with_parties(
        self,
        *,
        user_id: Id,
        contract_type_id: Id,
        values: TermValues,
        parties: Sequence[Party],
        team_id: int | None = None,
        template_id: int | None = None,
        require_all: bool = False,
        require_all_identity: bool = False,
        idempotency_key: str | None = None,
    ) -> ContractWithParties:
        """Create a contract and add its parties in one call, everything checked first.

        Before anything is created: the team and template version are found (as for
        :meth:`create_contract`), the values are checked against the terms, and every
        party's roles, side and identity values are checked against its identity fields
        (fetched once per template, roles and side, and kept). Then the contract is created
        and the parties are added in order, each as ``inviter_id`` (default: ``user_id``)
        invites it.

        If adding a party fails after the contract exists, nothing is rolled back (the
        contract may be wanted, and a delete could fail too): :class:`PartiesIncompleteError`
        names the contract, the collaborators added, the party whose add may have been
        processed (``unknown``: look for it with :meth:`Collaborators.list` before adding
        it again) and the parties not added, with the failure as its cause. With
        ``idempotency_key``, each party's request carries a key derived from it, so
        repeating the call is safe where the service honours keys.

        Args:
            user_id: Who creates the contract (and, by default, invites the parties).
            contract_type_id: The kind of contract.
            values: ``{term name or id: value}``.
            parties: The parties, each a :class:`~contractsdk.Party`.
            team_id: The team to hold it; the user's personal team if not given.
            template_id: The template version; the newest if not given.
            require_all: Also refuse values that leave an applicable term unanswered.
            require_all_identity: Also require a value for every applicable identity field.
            idempotency_key: Your own ``Idempotency-Key`` (1 to 255 visible ASCII
                characters, ``-party-<index>`` included), which makes repeating the call
                safe where the service honours keys.

        Returns:
            The contract and its collaborators, one per party in the order given.

        Raises:
            TermValidationError: The contract values break the terms (nothing was created);
                its ``identity_problems`` lists the parties' problems found with them.
            IdentityValidationError: Parties' values break their identity fields; every
                problem of every party is listed, each naming its party (nothing was
                created).
            ConfigurationError: A party's id, roles or side, or ``idempotency_key``, is wrong,
                or ``template_id`` is not one of the contract type's versions (nothing was
                created).
            PartiesIncompleteError: The contract was created but a party could not be added.
        """
        if idempotency_key is not None:
            # Each party's request carries the key with "-party-<index>" (Collaborators._add_all),
            # which must fit too.
            parties = tuple(parties)
            suffix = f"-party-{len(parties) - 1}" if parties else ""
            check_idempotency_key(idempotency_key, suffix=suffix)
        team_id, template = await self._targets(user_id, contract_type_id, team_id, template_id)
        terms_broken: TermValidationError | None = None
        try:
            (await self._term_set(template)).build_fields(values, require_all=require_all)
        except TermValidationError as error:
            terms_broken = error  # the parties are checked too: one error says it all
        inviter = parse_id(user_id, "user_id")
        try:
            prepared = await self.collaborators._prepare_all(
                parties, template_id=template, require_all=require_all_identity, inviter_id=inviter
            )
        except Exception as error:
            if terms_broken is None:
                raise
            # The term problems with the parties' identity problems; any other failure
            # here is left for a next try: what is certain first.
            found = error.problems if isinstance(error, IdentityValidationError) else ()
            raise TermValidationError(terms_broken.problems, found) from None
        if terms_broken is not None:
            raise terms_broken
        contract = await self.contracts.create(
            team_id,
            template_id=template,
            created_by=user_id,
            values=values,
            require_all=require_all,
            idempotency_key=idempotency_key,
        )
        collaborators = await self.collaborators._add_all(
            contract, prepared, template_id=template, idempotency_key=idempotency_key
        )
        return ContractWithParties(
            contract=contract, collaborators=collaborators, template_id=template
        )
