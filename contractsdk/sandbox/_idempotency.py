"""Idempotency-Key support for POST, modelled on Stripe's (the service documents none).

A POST carrying ``Idempotency-Key: <k>`` is processed at most once per (principal, k):
the first result is stored and replayed for later requests with the same key and the same
request; the same key with a different request is refused with 422; a request whose key is
still being processed is refused with 409.

Invariants:
- A record is ``in_flight`` from :meth:`IdempotencyStore.begin` until :meth:`finish` or
  :meth:`discard`; only a finished record is ever replayed.
- Results are stored only when the handler ran (any status below 500); a request refused
  before reaching the handler (401, 429, injected 5xx or reset) stores nothing, and an
  unexpected 500 discards the key, so the client may retry it.
- At most ``capacity`` records are kept, evicted oldest first; records older than ``ttl``
  seconds are evicted when new keys arrive. Records are ordered by arrival, so an
  in-flight record could only be evicted if ``capacity`` newer keys arrived while it
  was being processed (then its result is simply not remembered).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

import attrs

MAX_KEY_LENGTH = 255


@attrs.define(eq=False)
class Record:
    """What is remembered about one idempotency key.

    Args:
        created: Monotonic time the key was first seen.
        fingerprint: Digest of method, path and body of the first request (empty until
            its body has arrived).
        in_flight: Whether the first request is still being processed.
        status: The stored response status.
        body: The stored response body.
        headers: The stored response headers worth replaying.
    """

    created: float
    fingerprint: str = ""
    in_flight: bool = True
    status: int = 0
    body: bytes = b""
    headers: dict[str, str] = attrs.field(factory=dict)


def fingerprint(method: str, path: str, body: bytes) -> str:
    """Digest a request so that "the same request" survives JSON re-serialisation.

    Args:
        method: The request method.
        path: The request path.
        body: The raw body.

    Returns:
        A hex digest; JSON bodies are canonicalised (sorted keys) first.
    """
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        canonical = body
    return hashlib.sha256(f"{method} {path}\n".encode() + canonical).hexdigest()


class IdempotencyStore:
    """Bounded store of idempotency records.

    Args:
        ttl: Seconds a finished record is kept (Stripe: 24 h).
        capacity: The most records kept.
        clock: The monotonic clock.
    """

    def __init__(
        self, ttl: float, capacity: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl
        self._capacity = capacity
        self._clock = clock
        self._records: OrderedDict[tuple[str, str], Record] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def get(self, principal: str, key: str) -> Record | None:
        """Look up a live record.

        Args:
            principal: The caller.
            key: The idempotency key.

        Returns:
            The record, or None when unknown or expired.
        """
        record = self._records.get((principal, key))
        expired = (
            record is not None
            and not record.in_flight
            and self._clock() - record.created >= self._ttl
        )
        if expired:
            del self._records[(principal, key)]
            return None
        return record

    def begin(self, principal: str, key: str) -> Record:
        """Start processing a new key.

        Args:
            principal: The caller.
            key: The idempotency key (checked unknown by the caller).

        Returns:
            The new in-flight record.
        """
        now = self._clock()
        self._evict(now)
        record = Record(now)
        self._records[(principal, key)] = record
        return record

    def finish(self, record: Record, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        """Store the result of a processed request.

        Args:
            record: The in-flight record.
            status: The response status.
            body: The response body.
            headers: The response headers to replay.
        """
        record.in_flight = False
        record.status, record.body, record.headers = status, body, dict(headers)

    def discard(self, principal: str, key: str) -> None:
        """Forget a key whose request did not complete.

        Args:
            principal: The caller.
            key: The idempotency key.
        """
        self._records.pop((principal, key), None)

    def clear(self) -> None:
        """Forget every key."""
        self._records.clear()

    def _evict(self, now: float) -> None:
        records = self._records
        while records:
            key, oldest = next(iter(records.items()))
            if len(records) < self._capacity and now - oldest.created < self._ttl:
                return
            del records[key]
