"""Credentials never shown: every live client's secrets, removed from what errors show.

A server (or a proxy) may echo the API key or the access token in an error message, a
body or a field. Each client registers what it holds (its API key or client secret, and
each access token it receives) in a :class:`Secrets`; every :class:`ContractSDKError`,
the responses handed to event hooks, and the CLI's output are scrubbed of all registered
secrets when they are made. The registry holds the clients' records weakly: a client that
is gone takes its secrets with it.

Nothing here runs on a successful call's path: scrubbing happens when an error is made,
when a hook is about to see a response, and once per new token.
"""

from __future__ import annotations

import json
import weakref
from collections import deque
from collections.abc import Iterator

__all__ = ["REDACTED", "Secrets", "scrub", "scrub_bytes"]

#: What a secret is replaced by.
REDACTED = "[redacted]"
#: Shorter strings are not treated as secrets: they would match ordinary text.
MIN_SECRET = 6
#: Access tokens remembered per client: the current one and those still in flight.
RECENT_TOKENS = 8


class Secrets:
    """The credentials one client holds, registered for scrubbing while it lives.

    Args:
        *static: The API key or client secret (empty or short values are ignored).
    """

    __slots__ = ("__weakref__", "_static", "_tokens")

    def __init__(self, *static: str | None) -> None:
        self._static = tuple(value for value in static if value and len(value) >= MIN_SECRET)
        self._tokens: deque[str] = deque(maxlen=RECENT_TOKENS)
        _LIVE.add(self)
        _changed()
        weakref.finalize(self, _changed)  # a client gone takes its secrets with it

    def add_token(self, token: str) -> None:
        """Remember an access token (the latest few are kept)."""
        if len(token) >= MIN_SECRET and token not in self._tokens:
            self._tokens.append(token)
            _changed()

    def __iter__(self) -> Iterator[str]:
        yield from self._static
        yield from tuple(self._tokens)

    def __repr__(self) -> str:
        return f"<Secrets: {len(self._static) + len(self._tokens)} held>"


_LIVE: weakref.WeakSet[Secrets] = weakref.WeakSet()


#: What _forms() last returned, or None once a secret came or went.
_cached_forms: list[str] | None = None


def _changed() -> None:
    global _cached_forms
    _cached_forms = None


def _forms() -> list[str]:
    """Every registered secret, and its JSON-escaped form where that differs, longest first.

    Kept until a secret is registered or a client's are collected: an error scrubs each of
    its fields, and a hook each header, with the same list.
    """
    global _cached_forms
    forms = _cached_forms
    if forms is None:
        found: set[str] = set()
        for secrets in list(_LIVE):
            for secret in secrets:
                found.add(secret)
                found.add(json.dumps(secret)[1:-1])
        forms = _cached_forms = sorted(found, key=len, reverse=True)
    return forms


def scrub(text: str) -> str:
    """Return ``text`` with every registered secret replaced by ``[redacted]``."""
    if not text or not _LIVE:
        return text
    for secret in _forms():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def scrub_bytes(content: bytes) -> bytes:
    """Return ``content`` with every registered secret (as UTF-8) replaced."""
    if not content or not _LIVE:
        return content
    for secret in _forms():
        encoded = secret.encode("utf-8", "surrogatepass")
        if encoded in content:
            content = content.replace(encoded, REDACTED.encode())
    return content
