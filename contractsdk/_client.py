"""``ContractClient``: configuration, lifecycle, the send sequence and the whole flow.

Every request goes through one fixed sequence (DESIGN.md, Architecture)::

    _send_json ─ build the Request (JSON body, Idempotency-Key on POST)
      retry          _retry.Retrier, outermost: each attempt runs everything below again
        _attempt     raises the mapped error for a non-2xx answer
          auth       token (single flight); a 401 invalidates it and replays once
            limiter  acquire before, record after, every exchange
              hooks + logging, then the transport
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from contractsdk._auth import Auth, StaticAuth, TokenAuth
from contractsdk._config import Environment, check_base_url, environment_from_env
from contractsdk._converter import NO_CONTENT, structure, structure_list
from contractsdk._credentials import ApiKey, ClientCredentials
from contractsdk._exceptions import ConfigurationError, error_from_response
from contractsdk._http import NOT_GIVEN, Call, Headers, NotGiven, Request, Response
from contractsdk._ids import parse_id
from contractsdk._logging import ClientStats, EventHook, Instrumentation, logger
from contractsdk._ratelimit import (
    DEFAULT_MAX_PAUSE,
    Grant,
    RateLimiter,
    RateLimiterState,
    RateLimits,
)
from contractsdk._ratelimit._redis import RedisStore
from contractsdk._redact import Secrets
from contractsdk._redis import SharedRedis, namespace
from contractsdk._retry import Retrier, Retries, RetryBudget
from contractsdk._transport import AiohttpTransport, AsyncTransport
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
    from redis.asyncio import Redis

T = TypeVar("T")

_VERSION = re.compile(r"v\d+")
_USER_AGENT = "contractsdk/0.1.0"
PERSONAL_TEAM = "Personal Team"  # service-api.md §4: every user owns one, by this name
#: Request bodies: compact, UTF-8 as is (one encoder, not one per call as json.dumps makes).
_encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _encode_body(body: object) -> bytes:
    """Return the request body as UTF-8 JSON, or refuse it before anything is sent."""
    try:
        return _encode_json(body).encode()
    except UnicodeEncodeError:
        where = _unencodable(body, "$") or "a text value"
        raise ConfigurationError(
            f"{where} holds a lone surrogate (such as '\\ud800'), which is not a character "
            "and cannot be sent; fix the text's decoding"
        ) from None
    except (TypeError, ValueError) as exc:  # NaN or infinity, or not JSON at all
        raise ConfigurationError(f"the request cannot be sent as JSON: {exc}") from None


#: Headers with_options() refuses: the client owns them.
_OWN_HEADERS = frozenset({"authorization", "idempotency-key", "content-type", "content-length"})


def _checked_headers(headers: Mapping[Any, Any]) -> dict[str, str]:
    """Extra headers as given, or a ConfigurationError for one that cannot be sent."""
    checked = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigurationError("headers must be strings")
        if name.lower() in _OWN_HEADERS:
            raise ConfigurationError(f"the client sets {name} itself; it cannot be overridden")
        if not name or any(c in name for c in " \t\r\n:") or any(c in value for c in "\r\n"):
            raise ConfigurationError(f"header {name!r} cannot be sent (a name or a line break)")
        checked[name] = value
    return checked


def _unencodable(value: object, path: str) -> str | None:
    """The JSON path of the first text that UTF-8 cannot encode, if any."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        items: Iterable[tuple[str, object]] = (
            (f"{path}.{key}", item) for key, item in value.items()
        )
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    return next((found for at, item in items if (found := _unencodable(item, at))), None)


def _pick_credential(
    credentials: ApiKey | ClientCredentials | None,
    api_key: str | ApiKey | None,
    env: Mapping[str, str],
) -> ApiKey | ClientCredentials:
    if credentials is not None and api_key is not None:
        raise ConfigurationError("give either api_key= or credentials=, not both")
    if isinstance(api_key, str):
        return ApiKey(api_key)
    if api_key is not None:
        return api_key
    if credentials is not None:
        if not isinstance(credentials, ApiKey | ClientCredentials):
            raise ConfigurationError("credentials must be an ApiKey or ClientCredentials")
        return credentials
    if "api_key" in env:
        return ApiKey(env["api_key"])
    if "client_id" in env and "client_secret" in env:
        return ClientCredentials(client_id=env["client_id"], client_secret=env["client_secret"])
    raise ConfigurationError(
        "no credentials: pass api_key= or credentials=ClientCredentials(...), or set "
        "CONTRACTSDK_API_KEY (or CONTRACTSDK_CLIENT_ID and CONTRACTSDK_CLIENT_SECRET)"
    )


def _pick_environment(
    environment: str | Environment | None, base_url: str | None, env: Mapping[str, str]
) -> Environment:
    if environment is None and "environment" in env:
        environment = env["environment"]
    if base_url is None and "base_url" in env:
        base_url = env["base_url"]
    if isinstance(environment, str):
        environment = Environment.from_name(environment)
    if base_url is not None:
        base = check_base_url(base_url)
        return environment.with_base_url(base) if environment else Environment.custom(base)
    return environment or Environment.SANDBOX


class ContractClient:
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
        max_connections: The connection pool's size.
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
            waiting longer than this in the rate limiter (None: wait as needed).
        event_hooks: ``{"request" | "response" | "retry" | "throttle": [callables]}``; a
            hook may be sync or async.
        transport: Send requests through this instead of aiohttp (e.g.
            :class:`contractsdk.testing.MockTransport`).
        redis: Share the rate limits (buckets, pauses, learnt rates) and the OAuth token
            with every process and host that uses the same environment and credential,
            through this Redis: a ``redis://`` URL, or a ``redis.asyncio.Redis`` you own.
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
        redis: str | Redis | NotGiven | None = NOT_GIVEN,
        user_agent: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        env = environment_from_env()
        credential = _pick_credential(credentials, api_key, env)
        # What this client holds, never shown: errors, hooks and the CLI scrub it.
        self._secrets = Secrets(
            credential.key if isinstance(credential, ApiKey) else credential.client_secret
        )
        self._token_seen: str | None = None
        self.environment = _pick_environment(environment, base_url, env)
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
        if not _VERSION.fullmatch(api_version):
            raise ConfigurationError(f"api_version must look like 'v1', got {api_version!r}")
        if self.environment.requires_approved_version and api_version not in approved_versions:
            raise ConfigurationError(
                f"API version {api_version!r} is not approved for {self.environment.name} "
                f"(approved: {', '.join(sorted(approved_versions))})"
            )
        if timeout is not None and timeout <= 0:
            raise ConfigurationError("timeout must be positive (or None for no limit)")
        self.api_version = api_version
        self._base = f"{self.environment.base_url}/{api_version}"
        self._prefix = urllib.parse.urlsplit(self._base).path  # errors name the path: /v1/…
        self._timeout = timeout
        self._user_agent = user_agent or _USER_AGENT
        # By Accept and whether a JSON body goes: what every such request sends.
        self._common_headers: dict[tuple[str, bool], Headers] = {}
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._transport: AsyncTransport = transport or AiohttpTransport(
            connect_timeout=connect_timeout, max_connections=max_connections, trust_env=trust_env
        )
        self._instrumentation = Instrumentation(event_hooks)
        if isinstance(rate_limits, NotGiven):
            rate_limits = RateLimits(
                read=self.environment.read_rate, write=self.environment.write_rate
            )
        if isinstance(retries, NotGiven):
            retries = Retries()
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
        self._limiter_timeout = limiter_timeout
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
        self._term_sets: dict[int, asyncio.Future[TermSet]] = {}
        self._closed = False
        self._root = self  # the client that owns the connections (see with_options)
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

    def _make_retrier(self, retries: Retries | None) -> Retrier | None:
        if retries is None or retries.attempts == 1:
            return None
        budget = self._budget
        if budget is None and retries.budget is not None:
            budget = RetryBudget(retries.budget)
        return Retrier(retries, budget=budget, clock=self._clock, sleep=self._sleep)

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
            raise ConfigurationError("this client is closed; make a new one")
        derived = copy.copy(self)
        if not isinstance(timeout, NotGiven):
            if timeout is not None and not timeout > 0:
                raise ConfigurationError("timeout must be positive (or None for no limit)")
            derived._timeout = timeout
        if not isinstance(retries, NotGiven):
            derived._retrier = self._make_retrier(retries)
        if not isinstance(limiter_timeout, NotGiven):
            derived._limiter_timeout = limiter_timeout
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
            raise ConfigurationError("this client is closed; make a new one")
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
        for future in self._term_sets.values():
            future.cancel()
        self.identity_fields._cancel()
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
        self._limiter.set_limits(limits)

    @property
    def stats(self) -> ClientStats:
        """Counters of what this client has done (requests, retries, 429s, waits)."""
        return self._instrumentation.snapshot()

    # -- the send sequence -------------------------------------------------------------

    def _build(
        self,
        method: str,
        path: str,
        body: object | None,
        *,
        accept: str,
        idempotency_key: str | None,
    ) -> Request:
        has_body = body is not None
        headers = self._common_headers.get((accept, has_body))
        if headers is None:  # one per Accept value the resources use, with a body or not
            common = {"Accept": accept, "User-Agent": self._user_agent, **self._extra_headers}
            if has_body:
                common["Content-Type"] = "application/json"
            headers = self._common_headers[accept, has_body] = Headers(common)
        content = _encode_body(body) if has_body else None
        if method == "POST":
            # Made once per logical call, reused by every attempt; a caller's key wins.
            key = idempotency_key or os.urandom(16).hex()  # secrets.token_hex(16), inlined
            headers = headers.with_header("Idempotency-Key", key, keep=False)
        return Request._make(method, self._base + path, headers, content, self._timeout, {})

    async def _send_json(
        self,
        method: str,
        path: str,
        body: object | None = None,
        *,
        accept: str = "application/json",
        idempotency_key: str | None = None,
        trust_key: bool = True,
    ) -> Response:
        if self._closed or self._root._closed:
            raise ConfigurationError("this client is closed; make a new one")
        request = self._build(method, path, body, accept=accept, idempotency_key=idempotency_key)
        call = Call(request, trust_key=trust_key)
        retrier = self._retrier
        if retrier is None:
            call.attempts = 1
            return await self._attempt(call)
        # Retrier.call's steps, the first attempt made here: most calls succeed at once,
        # and so do without one awaited layer (issue 8: CPU per request).
        retrier.start(call)
        try:
            response = await self._attempt(call)
        except Exception as error:
            first = error  # handled outside this block: later errors do not chain to it
        else:
            retrier.succeeded_at_once()
            return response
        on_retry = self._instrumentation.on_retry
        return await retrier.retry(call, first, self._attempt, on_retry=on_retry)

    async def _send_content(
        self,
        method: str,
        path: str,
        content: bytes,
        content_type: str,
        *,
        accept: str = "application/json",
    ) -> Response:
        """Send a body of raw bytes (a multipart upload) through the whole send sequence.

        Retries, the limiter, auth, hooks and redaction apply as to JSON calls; it is apart
        from :meth:`_send_json` so that the JSON path does no extra work per call.
        """
        if self._closed or self._root._closed:
            raise ConfigurationError("this client is closed; make a new one")
        headers = Headers(
            {
                "Accept": accept,
                "User-Agent": self._user_agent,
                "Content-Type": content_type,
                **self._extra_headers,
            }
        )
        if method == "POST":
            headers = headers.with_header("Idempotency-Key", os.urandom(16).hex(), keep=False)
        request = Request._make(method, self._base + path, headers, content, self._timeout, {})
        call = Call(request)
        if self._retrier is None:
            call.attempts = 1
            return await self._attempt(call)
        return await self._retrier.call(
            call, self._attempt, on_retry=self._instrumentation.on_retry
        )

    async def _attempt(self, call: Call) -> Response:
        auth = self._auth
        token = auth.ready_token() or await auth.token()  # a coroutine only when one is due
        if token is not self._token_seen:  # a new access token: scrubbed from what is shown
            self._token_seen = token
            self._secrets.add_token(token)
        response = await self._exchange(call, token)
        if response.status_code == 401 and await self._auth.invalidate(token):
            response = await self._exchange(call, await self._auth.token())
        if not response.is_success:
            raise error_from_response(response, now=self._wall_clock())
        return response

    async def _exchange(self, call: Call, token: str) -> Response:
        """One HTTP exchange: limiter, hooks and logs around the transport, credential attached."""
        instrumentation = self._instrumentation
        limiter = self._limiter
        request = call.request
        grant = None
        if limiter is not None:  # the usual case first: a slot free now, nothing awaited
            grant = limiter.try_acquire(request.method) or await self._acquire(limiter, call)
        hooks = instrumentation.on_request(request)
        if hooks is not None:
            await hooks
        sent = request.with_header("Authorization", f"Bearer {token}")
        started = self._clock()
        response = await self._transport.handle_async_request(sent)
        if grant is not None:
            assert limiter is not None
            status, headers = response.status_code, response.headers
            hints = limiter.note(grant, status, headers)
            if hints is not None:  # something to learn (a 429, rate headers, a learnt limit)
                await limiter.learn(grant, status, hints)
        # Hooks and errors see the request without its credential.
        response = response.for_request(request)
        hooks = instrumentation.on_response(response, self._clock() - started)
        if hooks is not None:
            await hooks
        return response

    async def _acquire(self, limiter: RateLimiter, call: Call) -> Grant:
        timeout = self._limiter_timeout
        if call.deadline is not None:  # never queue past the call's own deadline
            left = max(0.0, call.deadline - self._clock())
            timeout = left if timeout is None else min(timeout, left)
        grant = await limiter.acquire(call.request.method, timeout=timeout)
        if grant.waited:
            self._instrumentation.limiter_wait += grant.waited
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "waited %.3f s for the rate limiter: %s", grant.waited, call.request.path
                )
        return grant

    async def _send_token_request(self, request: Request) -> Response:
        """Send an OAuth token request, bounded by the client's ``timeout`` when it has one.

        Hooks and logs see the request without its body (the client secret) and the answer
        with its tokens redacted; the caller (``TokenAuth``) gets the answer as it came.
        """
        # Imported here: the one user of the function (as _decode does for its error).
        from contractsdk._auth import redacted_token_response

        self._instrumentation.token_requests += 1
        bound = request.timeout
        if self._timeout is not None and (bound is None or self._timeout < bound):
            # The client's timeout, when shorter than TokenAuth's own bound (which the
            # shared token lock is sized to).
            request = attrs.evolve(request, timeout=self._timeout)
        shown = attrs.evolve(request, content=None)
        hooks = self._instrumentation.on_request(shown)
        if hooks is not None:
            await hooks
        started = self._clock()
        response = await self._transport.handle_async_request(request)
        response = response.for_request(shown)
        elapsed = self._clock() - started
        hooks = self._instrumentation.on_response(redacted_token_response(response), elapsed)
        if hooks is not None:
            await hooks
        return response

    # -- typed helpers for the resources -----------------------------------------------

    def _decode(self, response: Response) -> Any:
        # The spec declares 204 for most GETs (endpoints.md §3 M12): one without a body is
        # NO_CONTENT, which the converter reads as a model of Nones or an empty list. Any
        # other body that is not JSON, a 200's included, is an error.
        if response.status_code == 204 and not response.content.strip():
            return NO_CONTENT
        request = response.request
        try:
            return response.json()
        except ValueError:
            from contractsdk._exceptions import ResponseValidationError

            raise ResponseValidationError(
                "the service's answer is not JSON",
                errors=["$: not JSON"],
                method=request.method if request else "",
                url=request.path if request else "",
            ) from None

    async def _get(self, path: str, model: type[T]) -> T:
        response = await self._send_json("GET", path)
        return structure(self._decode(response), model, method="GET", url=self._prefix + path)

    async def _get_list(self, path: str, model: type[T]) -> list[T]:
        response = await self._send_json("GET", path)
        return structure_list(self._decode(response), model, method="GET", url=self._prefix + path)

    async def _post(
        self, path: str, model: type[T], body: object, *, idempotency_key: str | None = None
    ) -> T:
        response = await self._send_json("POST", path, body, idempotency_key=idempotency_key)
        return structure(self._decode(response), model, method="POST", url=self._prefix + path)

    async def _patch(self, path: str, model: type[T], body: object) -> T:
        response = await self._send_json("PATCH", path, body)
        return structure(self._decode(response), model, method="PATCH", url=self._prefix + path)

    async def _term_set(self, template_id: Id, *, refresh: bool = False) -> TermSet:
        """Return a template version's terms, fetched once per template (single flight)."""
        key = parse_id(template_id, "template_id")
        future = self._term_sets.get(key)
        if future is None or refresh or (future.done() and future.exception() is not None):
            future = asyncio.ensure_future(self._fetch_terms(key))
            self._term_sets[key] = future
        elif future.done():  # the usual case, every create after the first: nothing to await
            return future.result()
        try:
            return await asyncio.shield(future)
        except Exception:
            if self._term_sets.get(key) is future:
                del self._term_sets[key]  # a failed fetch is not cached
            raise

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
        teams = await self.teams.list(user_id)
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

        Args:
            user_id: Who creates it.
            contract_type_id: The kind of contract.
            values: ``{term name or id: value}`` (see :meth:`TermSet.validate`).
            team_id: The team to hold it; the user's personal team if not given.
            template_id: The template version; the newest if not given.
            require_all: Also refuse values that leave an applicable term unanswered.
            source_contract: Make it a copy of this contract.
            idempotency_key: Your own key, to make repeating the call safe.

        Raises:
            TermValidationError: The values break the template's terms (nothing was sent).
            ConfigurationError: The team or template version to use came without an id.
        """
        if team_id is None:
            team_id = (await self.personal_team(user_id)).id
            if team_id is None:  # every field of an answer is optional (endpoints.md §3 M6)
                raise ConfigurationError(
                    f"the service sent user {user_id}'s personal team without an id; pass team_id="
                )
        if template_id is None:
            template_id = (await self.templates.latest(team_id, contract_type_id)).id
            if template_id is None:
                raise ConfigurationError(
                    f"the service sent the newest template version of contract type "
                    f"{contract_type_id} without an id; pass template_id="
                )
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
        names the contract, the collaborators added and the parties not added, with the
        failure as its cause. With ``idempotency_key``, each party's request carries a key
        derived from it, so repeating the call is safe where the service honours keys.

        Args:
            user_id: Who creates the contract (and, by default, invites the parties).
            contract_type_id: The kind of contract.
            values: ``{term name or id: value}``.
            parties: The parties, each a :class:`~contractsdk.Party`.
            team_id: The team to hold it; the user's personal team if not given.
            template_id: The template version; the newest if not given.
            require_all: Also refuse values that leave an applicable term unanswered.
            require_all_identity: Also require a value for every applicable identity field.
            idempotency_key: Your own key, to make repeating the call safe.

        Returns:
            The contract and its collaborators, one per party in the order given.

        Raises:
            TermValidationError: The contract values break the terms (nothing was created).
            IdentityValidationError: Parties' values break their identity fields; every
                problem of every party is listed, each naming its party (nothing was
                created).
            ConfigurationError: A party's id, roles or side is wrong (nothing was created).
            PartiesIncompleteError: The contract was created but a party could not be added.
        """
        if team_id is None:
            team_id = (await self.personal_team(user_id)).id
            if team_id is None:
                raise ConfigurationError(f"user {user_id}'s personal team has no id; pass team_id=")
        if template_id is None:
            template_id = (await self.templates.latest(team_id, contract_type_id)).id
            if template_id is None:
                raise ConfigurationError("the newest template version has no id; pass template_id=")
        template = parse_id(template_id, "template_id")
        (await self._term_set(template)).build_fields(values, require_all=require_all)
        inviter = parse_id(user_id, "user_id")
        prepared = await self.collaborators._prepare_all(
            parties, template_id=template, require_all=require_all_identity, inviter_id=inviter
        )
        contract = await self.contracts.create(
            team_id,
            template_id=template,
            created_by=user_id,
            values=values,
            require_all=require_all,
            idempotency_key=idempotency_key,
        )
        collaborators = await self.collaborators._add_all(
            contract, prepared, idempotency_key=idempotency_key
        )
        return ContractWithParties(contract=contract, collaborators=collaborators)
