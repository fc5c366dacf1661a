"""The send sequence every request of a ``ContractClient`` goes through.

One fixed order (DESIGN.md, Architecture)::

    _send_json ─ build the Request (JSON body, Idempotency-Key on POST)
      retry          _retry.Retrier, outermost: each attempt runs everything below again
        _attempt     raises the mapped error for a non-2xx answer
          auth       token (single flight); a 401 invalidates it and replays once
            limiter  acquire before, record after, every exchange
              hooks + logging, then the transport

:class:`Sender` holds it; ``ContractClient`` (``_client.py``) is a ``Sender`` that sets the
state below up and adds the public API. This is every request's path: it does as little
per call as it can (issue 8: CPU per request).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import attrs

from contractsdk._auth import Auth, redacted_token_response, token_secrets
from contractsdk._config import check_header
from contractsdk._converter import NO_CONTENT, structure, structure_list
from contractsdk._exceptions import (
    ConfigurationError,
    ConnectTimeoutError,
    ResponseValidationError,
    client_closed,
    error_from_response,
)
from contractsdk._http import Call, Headers, Request, Response
from contractsdk._logging import Instrumentation, logger
from contractsdk._ratelimit import Grant, RateLimiter
from contractsdk._redact import Secrets
from contractsdk._retry import Retrier
from contractsdk._transport import AsyncTransport, HeadersSender

__all__ = ["Sender"]

T = TypeVar("T")

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
        check_header(name, value)  # a token for a name, no control character in the value
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


class Sender:
    """Sends requests: the send sequence, and the typed helpers the resources call.

    Its state is set up by ``ContractClient.__init__`` (and copied by ``with_options``).
    """

    _base: str
    _prefix: str
    _timeout: float | None
    _user_agent: str
    _common_headers: dict[tuple[str, bool], Headers]
    _extra_headers: dict[str, str]
    _clock: Any
    _wall_clock: Any
    _transport: AsyncTransport
    _send_headers: HeadersSender | None  # the transport's way to add the credential, if any
    _instrumentation: Instrumentation
    _limiter: RateLimiter | None
    _limiter_timeout: float | None
    _retrier: Retrier | None
    _auth: Auth
    _refused: str  # what a 401 tells the user to check
    _secrets: Secrets
    _token_seen: str | None
    _bearer: str  # the Authorization value for _token_seen
    _closed: bool
    _root: Sender
    _backoffs: set[asyncio.Future[None]]  # the root's retries waiting: aclose() ends them

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
            # Made once per logical call (secrets.token_hex(16), inlined), reused by every
            # attempt; a caller's key (checked non-empty where it entered) wins.
            key = os.urandom(16).hex() if idempotency_key is None else idempotency_key
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
            raise client_closed()
        request = self._build(method, path, body, accept=accept, idempotency_key=idempotency_key)
        retrier = self._retrier
        # A keyword argument costs an attrs __init__ half as much again: only when it is not
        # the default.
        if trust_key and retrier is not None and retrier.config.trust_idempotency_keys:
            call = Call(request, trust_key=True)
        else:
            call = Call(request)
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
            raise client_closed()
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
        retrier = self._retrier
        if retrier is None:
            call = Call(request)
            call.attempts = 1
            return await self._attempt(call)
        call = Call(request, trust_key=retrier.config.trust_idempotency_keys)
        return await retrier.call(call, self._attempt, on_retry=self._instrumentation.on_retry)

    async def _attempt(self, call: Call) -> Response:
        auth = self._auth
        token = auth.ready_token() or await auth.token()  # a coroutine only when one is due
        if token is not self._token_seen:  # a new access token: scrubbed from what is shown
            self._new_token(token)
        response = await self._exchange(call, token)
        status = response.status_code
        if status == 401 and await auth.invalidate(token):
            token = await auth.token()
            if token is not self._token_seen:  # as above: the replay's answer may echo it
                self._new_token(token)
            response = await self._exchange(call, token)
            status = response.status_code
        if not 200 <= status < 300:  # Response.is_success, without a property call
            error = error_from_response(response, now=self._wall_clock())
            if status == 401:  # the credential itself: say what to check
                error.args = (f"{error.message}; {self._refused}",)
            raise error
        return response

    def _new_token(self, token: str) -> None:
        """Send ``token`` from now on, and scrub it from whatever is shown."""
        self._token_seen = token
        self._bearer = f"Bearer {token}"
        self._secrets.add_token(token)

    async def _exchange(self, call: Call, token: str) -> Response:
        """One HTTP exchange: limiter, hooks and logs around the transport, credential attached."""
        instrumentation = self._instrumentation
        limiter = self._limiter
        request = call.request
        grant = None
        if limiter is not None:  # the usual case first: a slot free now, nothing awaited
            grant = limiter.try_acquire(request.method) or await self._acquire(limiter, call)
        try:
            if call.deadline is not None:
                request = self._bounded(request, call.deadline)
            hooks = instrumentation.on_request(request)
            if hooks is not None:
                await hooks
            # Hooks and errors see the request without its credential: the transport sends
            # it with the credential added to its headers, or is handed a copy that has it.
            bearer = self._bearer if token is self._token_seen else f"Bearer {token}"
            send = self._send_headers
            started = self._clock()
            if send is not None:
                pairs = request.headers._pairs_with("Authorization", bearer)
                response = await send(request, pairs)
            else:
                sent = request.with_header("Authorization", bearer)
                response = await self._transport.handle_async_request(sent)
                response = response.for_request(request)
        except BaseException:
            if grant is not None:  # no answer to learn from (a probe's: don't wait for it)
                assert limiter is not None
                limiter.abandon(grant)
            raise
        if grant is not None:
            assert limiter is not None
            status, headers = response.status_code, response.headers
            hints = limiter.note(grant, status, headers)
            if hints is not None:  # something to learn (a 429, rate headers, a learnt limit)
                await limiter.learn(grant, status, hints)
        hooks = instrumentation.on_response(response, self._clock() - started)
        if hooks is not None:
            await hooks
        return response

    def _bounded(self, request: Request, deadline: float) -> Request:
        """The request, its timeout cut to what is left of the call's deadline.

        ``Retries(timeout=)`` bounds the whole call: a wait, or an attempt, never starts
        past it, and an attempt under way ends with it (a 3 s answer to a call given 1 s
        came back after 3 s). With nothing left, nothing is sent.

        Raises:
            ConnectTimeoutError: The deadline has passed: the request was not sent.
        """
        left = deadline - self._clock()
        if left <= 0:
            raise ConnectTimeoutError(
                "the call's timeout (Retries.timeout) ran out before the request was sent",
                method=request.method,
                url=request.path,
            )
        if request.timeout is None or left < request.timeout:
            return attrs.evolve(request, timeout=left)
        return request

    async def _acquire(self, limiter: RateLimiter, call: Call) -> Grant:
        timeout = self._limiter_timeout
        if call.deadline is not None:  # never queue past the call's own deadline
            left = max(0.0, call.deadline - self._clock())
            timeout = left if timeout is None else min(timeout, left)
        grant = await limiter.acquire(call.request.method, timeout=timeout)
        if self._root._closed:  # closed while this call waited its turn: nothing is sent
            limiter.abandon(grant)
            raise client_closed()
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
        The answer's tokens are registered for scrubbing first: its headers or fields may
        echo them, and a hook or an error may see them before the token is used.
        """
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
        for secret in token_secrets(response):
            self._secrets.add_token(secret)
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
            pass
        # Raised here, not in the except clause, where the JSONDecodeError would stay as
        # its __context__: its doc is the whole body, which may echo a credential.
        raise ResponseValidationError(
            "the service's answer is not JSON",
            errors=["$: not JSON"],
            method=request.method if request else "",
            url=request.path if request else "",
        )

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
