"""Pieces shared by every model: links and the raw wire dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Link", "raw_field"]


@attrs.frozen(kw_only=True)
class Link:
    """A hypermedia link, from either of the service's two link styles.

    The service sends HAL ``_links`` objects on teams and ``links`` arrays on types and
    terms (reference/service-api.md §5); both become a tuple of :class:`Link`.

    Attributes:
        rel: The relation, e.g. ``"self"``.
        href: The absolute URL.
    """

    rel: str
    href: str


def raw_field() -> Any:
    """An attrs field holding the wire dict the model was read from (kept for debugging)."""
    return attrs.field(factory=dict, repr=False, eq=False, hash=False)


def self_href(links: tuple[Link, ...]) -> str | None:
    """Return the ``self`` link's URL, if there is one."""
    return next((link.href for link in links if link.rel == "self"), None)


def id_from_href(href: str | None) -> int | None:
    """Return the id at the end of a resource URL (``…/contracts/42`` → 42), if any."""
    if not href:
        return None
    last = href.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return int(last) if last.isdigit() else None


RawDict = Mapping[str, Any]
