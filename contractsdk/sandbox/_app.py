"""The aiohttp application: one middleware runs every request through a fixed sequence.

For ``/v1`` requests the sequence is::

    authenticate (401)  →  rate limit (429)  →  fault: latency, reset, 5xx
        →  Idempotency-Key (replay / 409 / 422)  →  handler  →  fault: lost

A request with a compressed body is refused first (415), whatever its path.
``/oauth/token`` skips authentication, rate limits and idempotency (faults apply only
when a rule names it); ``/__sandbox/`` checks the admin token and nothing else. Every
error — ours, aiohttp's (404, 405, 413) or an unexpected exception (500) — leaves as a
Spring-style JSON body, and malformed input never reaches a 500 (see ``_wire.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from ._auth import bearer_token
from ._config import SandboxConfig
from ._emulator import Emulator
from ._faults import Fault, Outcome
from ._idempotency import MAX_KEY_LENGTH, fingerprint
from ._routes_admin import AdminRoutes
from ._routes_parties import PartyRoutes
from ._routes_v1 import ApiRoutes
from ._wire import ApiError, error_response, has_lone_surrogate, is_host

EMULATOR_KEY = web.AppKey("contractsdk_sandbox_emulator", Emulator)

_LOG = logging.getLogger("contractsdk.sandbox")
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Headers of a stored idempotent response that are replayed with it.
_REPLAYED_HEADERS = ("Content-Type", "Location")


def create_app(config: SandboxConfig | None = None) -> web.Application:
    """Build the emulator as an aiohttp application, for embedding in your own server.

    Control it over HTTP (``/__sandbox/``) or through ``app[EMULATOR_KEY]``.

    Args:
        config: The settings; None uses the defaults (seed 0, 25 reads/s and 25 writes/s).

    Returns:
        The application. Hrefs use ``config.base_url`` or, if None, each request's origin.
    """
    config = config or SandboxConfig()
    emulator = Emulator(config)
    pipeline = _Pipeline(emulator)
    app = web.Application(client_max_size=config.max_body_size, middlewares=[pipeline.middleware])
    app[EMULATOR_KEY] = emulator
    ApiRoutes(emulator).register(app.router)
    PartyRoutes(emulator).register(app.router)
    AdminRoutes(emulator).register(app.router)
    return app


def _route_key(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return f"{request.method} {resource.canonical if resource is not None else '(no route)'}"


def _drop(request: web.Request) -> None:
    """Close the connection without answering; the client sees a disconnect."""
    transport = request.transport
    if transport is not None:
        transport.abort()


def _refuse_content_coding(request: web.Request) -> web.Response | None:
    """Refuse a compressed request body (415), as the service's Spring stack does not inflate.

    aiohttp would inflate gzip and deflate bodies; one that fails to inflate, and that no
    handler read, fails aiohttp's drain after the answer and closes a connection the client
    was told it could reuse. ``Connection: close`` here ends it openly instead.
    """
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if coding in ("", "identity") or not request.body_exists:
        return None
    response = error_response(
        415,
        f"Content-Encoding '{coding[:40]}' not supported; send the body uncompressed",
        request.path,
    )
    response.force_close()
    return response


class _Pipeline:
    def __init__(self, emulator: Emulator) -> None:
        self._emulator = emulator
        self._admin_token = emulator.seed.admin_token.encode()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        refused = _refuse_content_coding(request)
        if path.startswith("/__sandbox/"):
            return refused or await self._admin(request, handler)
        response: web.StreamResponse | None
        if refused is not None:
            response = refused
        elif path.startswith("/v1/"):
            response = await self._api(request, handler)
        else:
            response = await self._run(
                request, handler, self._emulator.faults.decide(request.method, path), None
            )
        self._emulator.counters.record(
            _route_key(request), None if response is None else response.status
        )
        # A dropped connection still needs a response object; aiohttp cannot write it.
        return response if response is not None else web.Response(status=500)

    async def _admin(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        token = bearer_token(request.headers.get("Authorization")) or ""
        # surrogatepass: header bytes that are not UTF-8 arrive as lone surrogates.
        if not hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self._admin_token):
            return error_response(
                401,
                "The admin API needs the admin token",
                request.path,
                headers={"WWW-Authenticate": 'Bearer realm="sandbox-admin"'},
            )
        return await self._call(request, handler)

    async def _api(self, request: web.Request, handler: Handler) -> web.StreamResponse | None:
        emulator = self._emulator
        if emulator.base_url is None and not is_host(request.host):
            # Hrefs are built from Host (Emulator.origin); one that cannot be written
            # would fail the answer after the handler has changed the data.
            return error_response(400, "Invalid Host header", request.path)
        try:
            principal = emulator.auth.principal(request.headers.get("Authorization"))
        except ApiError as exc:
            return exc.response(request.path)
        write = request.method not in _READ_METHODS
        decision = emulator.limiter.acquire(principal, write)
        if not decision.allowed:
            limits = emulator.limiter.limits
            rate = limits.write_rate if write else limits.read_rate
            return error_response(
                429,
                f"Too Many Requests: over {rate:g} {'writes' if write else 'reads'} per second",
                request.path,
                headers=decision.headers,
            )
        fault = emulator.faults.decide(request.method, request.path)
        response = await self._run(request, handler, fault, principal)
        if response is not None and decision.headers:
            response.headers.update(decision.headers)
        return response

    async def _run(
        self,
        request: web.Request,
        handler: Handler,
        fault: Fault,
        principal: str | None,
    ) -> web.StreamResponse | None:
        """Apply the fault around the handler; None means the connection was dropped."""
        faults = self._emulator.counters.faults
        if fault.delay > 0:
            faults["latency"] += 1
            # The request arrived whole before the service sat on it: a client that gives
            # up meanwhile leaves it processed (read later, its body was gone with the
            # connection, and a cancelled create never made its contract here).
            with contextlib.suppress(web.HTTPException):  # too large: the handler says so
                await request.read()
            await asyncio.sleep(fault.delay)
        outcome = fault.outcome
        if outcome is Outcome.RESET:
            faults["reset"] += 1
            _drop(request)
            return None
        if outcome.status is not None:
            faults[outcome.value] += 1
            return error_response(outcome.status, "Injected fault (sandbox)", request.path)
        key = request.headers.get("Idempotency-Key")
        if key is not None and principal is not None and request.method == "POST":
            response = await self._idempotent(request, handler, principal, key)
        else:
            response = await self._call(request, handler)
        if outcome is Outcome.LOST:
            # Processed and committed; only the answer is lost (the ambiguous case).
            faults["lost"] += 1
            _drop(request)
            return None
        return response

    async def _idempotent(
        self, request: web.Request, handler: Handler, principal: str, key: str
    ) -> web.StreamResponse:
        path = request.path
        if not key.strip() or len(key) > MAX_KEY_LENGTH or has_lone_surrogate(key):
            return error_response(
                400, f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters of UTF-8", path
            )
        store = self._emulator.idempotency
        record = store.get(principal, key)
        if record is None:
            # In flight from arrival (not from the end of the body), so that a duplicate
            # sent while the first is still uploading or being processed gets 409.
            record = store.begin(principal, key)
            try:
                record.fingerprint = fingerprint(request.method, path, await request.read())
                response = await self._call(request, handler)
            except web.HTTPException as exc:  # body over the size limit
                store.discard(principal, key)
                return self._http_error(request, exc)
            except BaseException:
                store.discard(principal, key)
                raise
            stored = response.body if isinstance(response, web.Response) else None
            if response.status >= 500 or not isinstance(stored, bytes):
                store.discard(principal, key)
            else:
                replay = {
                    h: response.headers[h] for h in _REPLAYED_HEADERS if h in response.headers
                }
                store.finish(record, response.status, stored, replay)
            return response
        if record.in_flight:
            return error_response(
                409,
                f"A request with this Idempotency-Key is still being processed: {key[:80]}",
                path,
            )
        try:
            digest = fingerprint(request.method, path, await request.read())
        except web.HTTPException as exc:
            return self._http_error(request, exc)
        if record.fingerprint != digest:
            return error_response(
                422,
                "This Idempotency-Key was used with a different request; use a new key",
                path,
            )
        self._emulator.counters.idempotent_replays += 1
        headers = dict(record.headers)
        headers["Idempotent-Replayed"] = "true"
        return web.Response(status=record.status, body=record.body, headers=headers)

    async def _call(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Run the handler and turn every exception into a Spring-style error response."""
        try:
            unmatched = request.match_info.http_exception
            if unmatched is not None:
                raise unmatched
            return await handler(request)
        except ApiError as exc:
            return exc.response(request.path)
        except web.HTTPException as exc:
            return self._http_error(request, exc)
        except Exception:
            # The catch-all the brief asks for: never a crash, never an HTML 500.
            _LOG.exception("sandbox: unexpected error on %s %s", request.method, request.path)
            return error_response(500, "Internal Server Error", request.path)

    @staticmethod
    def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
        if exc.status == 404:
            message = f"No endpoint {request.method} {request.path}"
        elif exc.status == 405:
            message = f"Request method '{request.method}' is not supported"
        elif exc.status == 413:
            message = f"Maximum upload size exceeded: {exc.text}"
        else:
            message = exc.reason
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return error_response(exc.status, message, request.path, headers=headers)
