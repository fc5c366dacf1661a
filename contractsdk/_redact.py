r"""Credentials never shown: every live client's secrets, removed from what errors show.

A server (or a proxy) may echo the API key or the access token in an error message, a
body or a field. Each client registers what it holds (its API key or client secret, and
each token it receives) in a :class:`Secrets`; every :class:`ContractSDKError`,
the responses handed to event hooks, and the CLI's output are scrubbed of all registered
secrets when they are made. The registry holds the clients' records weakly: a client that
is gone takes its secrets with it.

A secret is found as sent and as a server may have encoded it in its answer: escaped
for JSON (``\/`` too), for HTML, or percent-encoded for a URL (:func:`_encodings`).

Only whole secrets are found, so text that is shown shortened is scrubbed first and cut
after (:func:`scrub_cut`): a server that placed the key across a cut had all but its last
characters shown.

Nothing here runs on a successful call's path: scrubbing happens when an error is made,
when a hook is about to see a response, when the CLI prints, and once per token answer.
"""

from __future__ import annotations

import html
import json
import urllib.parse
import weakref
from collections import deque
from collections.abc import Iterator

__all__ = ["REDACTED", "Secrets", "scrub", "scrub_bytes", "scrub_cut"]

#: What a secret is replaced by.
REDACTED = "[redacted]"
#: Shorter strings are not treated as secrets: they would match ordinary text.
MIN_SECRET = 6
#: Tokens remembered per client: the current access token and those still in flight, with
#: the refresh and id tokens of the latest token answers.
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
        """Remember a token (an access, refresh or id token); the latest few are kept."""
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


def _encodings(secret: str) -> set[str]:
    r"""``secret`` as a server may echo it: as sent, and as JSON, HTML and URLs encode it.

    JSON both as Python writes it and with ``/`` escaped too (Jackson's and PHP's
    ``\/``); HTML with and without quotes escaped; percent-encoded as a query value
    (every reserved character) and as a path (``/`` kept).
    """
    escaped = json.dumps(secret)[1:-1]
    return {
        secret,
        escaped,
        escaped.replace("/", "\\/"),
        html.escape(secret),
        html.escape(secret, quote=False),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
    }


def _forms() -> list[str]:
    """Every registered secret, in each of its encodings (:func:`_encodings`), longest first.

    Kept until a secret is registered or a client's are collected: an error scrubs each of
    its fields, and a hook each header, with the same list.
    """
    global _cached_forms
    forms = _cached_forms
    if forms is None:
        found: set[str] = set()
        for secrets in list(_LIVE):
            for secret in secrets:
                found.update(_encodings(secret))
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


def scrub_cut(text: str, limit: int, *, cut: bool = False) -> str:
    """Return ``text`` scrubbed, then shortened to at most ``limit`` characters.

    Scrubbed first: a secret cut short is no longer the whole secret, and scrubbing finds
    only whole ones (a server may place the key across the cut, to have all but its last
    characters shown). Where the text is cut, a last few characters that begin a secret
    go too.

    Args:
        text: The text, as the server sent it.
        limit: The most characters kept.
        cut: ``text`` is itself the start of a longer text, so that it may end in the
            start of a secret even when it is not longer than ``limit``.
    """
    text = scrub(text)
    if len(text) > limit:
        text, cut = text[:limit], True
    return _without_partial(text) if cut else text


def _without_partial(text: str) -> str:
    """Return ``text`` less its end, if that end is the start of a registered secret."""
    if not text or not _LIVE:
        return text
    for secret in _forms():
        # The earliest place from which the rest of the text begins the secret: the
        # longest start of it shown.
        at = text.find(secret[0], max(0, len(text) - len(secret) + 1))
        while at != -1:
            if secret.startswith(text[at:]):
                text = text[:at]
                break
            at = text.find(secret[0], at + 1)
    return text


def scrub_bytes(content: bytes, *, keep_length: bool = False) -> bytes:
    """Return ``content`` with every registered secret (as UTF-8) replaced.

    ``keep_length``: by as many ``*`` as it has bytes, not ``[redacted]``, so that a
    file that records byte offsets (a PDF's cross-reference table, its streams'
    ``/Length``) stays whole.
    """
    if not content or not _LIVE:
        return content
    for secret in _forms():
        encoded = secret.encode("utf-8", "surrogatepass")
        if encoded in content:
            mask = b"*" * len(encoded) if keep_length else REDACTED.encode()
            content = content.replace(encoded, mask)
    return content
