"""Event hooks, DEBUG logs and counters: everything the client reports about its own work.

Redaction lives here and in :class:`~contractsdk.Headers`: a log line names the method,
the URL path and the status, never a header value or a body, so no key, secret or token
can reach a log through the client.
"""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from contractsdk._exceptions import ConfigurationError
from contractsdk._http import Headers, Request, Response
from contractsdk._redact import scrub, scrub_bytes

__all__ = ["ClientStats", "EVENTS", "EventHook", "Instrumentation", "logger"]

logger = logging.getLogger("contractsdk")

#: The events a hook can follow.
EVENTS: Final = ("request", "response", "retry", "throttle")

EventHook = Callable[[Any], Awaitable[None] | None]


@attrs.frozen(kw_only=True)
class ClientStats:
    """What a client has done so far (``client.stats``).

    Attributes:
        requests: HTTP requests sent (every attempt and token request counts).
        responses: Responses received, by status code.
        retries: Retries made after a failed attempt.
        throttled: Responses with status 429.
        limiter_wait: Seconds spent waiting in the client's rate limiter, summed over calls.
        token_requests: OAuth token requests made.
    """

    requests: int
    responses: Mapping[int, int]
    retries: int
    throttled: int
    limiter_wait: float
    token_requests: int


class Instrumentation:
    """Runs hooks, writes DEBUG lines and keeps the counters of one client."""

    def __init__(self, event_hooks: Mapping[str, Sequence[EventHook]] | None) -> None:
        if event_hooks is not None and not isinstance(event_hooks, Mapping):
            raise ConfigurationError(
                "event_hooks must be a mapping {event: [hook, ...]}, not "
                f"{type(event_hooks).__name__}"
            )
        hooks = dict(event_hooks or {})
        unknown = set(hooks) - set(EVENTS)
        if unknown:
            raise ConfigurationError(
                f"unknown event hook(s) {sorted(unknown)}; the events are {', '.join(EVENTS)}"
            )
        self._hooks: dict[str, tuple[EventHook, ...]] = {}
        for event in EVENTS:
            given: object = hooks.get(event, ())
            if not isinstance(given, list | tuple) or not all(map(callable, given)):
                raise ConfigurationError(
                    f"event_hooks[{event!r}] must be a list of callables, got {given!r}"
                )
            self._hooks[event] = tuple(given)
        self.requests = 0
        self.responses: Counter[int] = Counter()
        self.retries = 0
        self.throttled = 0
        self.limiter_wait = 0.0
        self.token_requests = 0

    async def emit(self, event: str, payload: object) -> None:
        """Call the hooks registered for ``event`` with ``payload``, in order.

        A hook observes; it cannot fail the call. One that raises is logged (WARNING, with
        its traceback) and the rest run: a metrics backend down raised out of a response
        hook, and a contract the service had made was reported to its caller as a
        ``RuntimeError``, without its id, for a retry to make twice. Cancellation still
        propagates.
        """
        for hook in self._hooks[event]:
            try:
                result = hook(payload)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                name = getattr(hook, "__qualname__", None) or type(hook).__name__
                logger.warning(
                    "the %s event hook %s raised; the call goes on", event, name, exc_info=True
                )

    def on_request(self, request: Request) -> Awaitable[None] | None:
        """Count and report a request about to be sent (its credential not attached).

        Returns:
            The request hooks' run, for the caller to await, or None when there are no
            hooks (the usual case: no coroutine is made per request).
        """
        self.requests += 1
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("→ %s %s", request.method, request.path)
        return self.emit("request", request) if self._hooks["request"] else None

    def on_response(self, response: Response, elapsed: float) -> Awaitable[None] | None:
        """Count and report a response.

        Returns:
            The response (and, for a 429, throttle) hooks' run, for the caller to await, or
            None when no hook follows this response.
        """
        status = response.status_code
        self.responses[status] += 1
        if logger.isEnabledFor(logging.DEBUG):
            request = response.request
            where = f"{request.method} {request.path}" if request else ""
            logger.debug("← %d %s in %.1f ms", status, where, elapsed * 1000)
        hooks = self._hooks
        if hooks["response"] or (status == 429 and hooks["throttle"]):
            return self._emit_response(response)
        if status == 429:
            self.throttled += 1
        return None

    async def _emit_response(self, response: Response) -> None:
        # Hooks see no credential a server echoed, in the body or a header.
        content = scrub_bytes(response.content)
        pairs = response.headers.pairs()
        scrubbed = [(name, scrub(value)) for name, value in pairs]
        if content is not response.content or scrubbed != pairs:
            headers = Headers(scrubbed)
            response = Response._make(response.status_code, headers, content, response.request)
        # The throttle count moves after the response hooks ran, as it always has.
        await self.emit("response", response)
        if response.status_code == 429:
            self.throttled += 1
            await self.emit("throttle", response)

    async def on_retry(self, event: object) -> None:
        """Count and report a retry about to happen."""
        self.retries += 1
        # INFO, as openai's client logs its retries: a service logging at INFO sees them.
        logger.info("retrying: %s", event)
        if self._hooks["retry"]:
            await self.emit("retry", event)

    def snapshot(self) -> ClientStats:
        """Return the counters as a frozen value."""
        return ClientStats(
            requests=self.requests,
            responses=dict(self.responses),
            retries=self.retries,
            throttled=self.throttled,
            limiter_wait=self.limiter_wait,
            token_requests=self.token_requests,
        )
