"""Pieces shared by every model: links and the raw wire dict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from contractsdk._ids import id_or_none

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

    @classmethod
    def _make(cls, rel: str, href: str) -> Link:
        """Make a link of checked values, without ``__init__`` (see :func:`slot_setters`)."""
        set_rel, set_href = _LINK_SLOTS
        link = object.__new__(cls)
        set_rel(link, rel)
        set_href(link, href)
        return link


def slot_setters(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """Return the setters of a frozen attrs class's slots, in field order.

    A model read from every answer is made by its ``_make``, which sets the slots through
    these: half the cost of ``__init__``, whose ``object.__setattr__`` looks each name up
    first. ``_make`` takes every field, and runs no default, converter or validator.
    """
    return tuple(cls.__dict__[field.name].__set__ for field in attrs.fields(cls))


_LINK_SLOTS = slot_setters(Link)


def raw_field() -> Any:
    """An attrs field holding the wire dict the model was read from (kept for debugging)."""
    return attrs.field(factory=dict, repr=False, eq=False, hash=False)


def self_href(links: tuple[Link, ...]) -> str | None:
    """Return the ``self`` link's URL, if there is one."""
    for link in links:  # a loop, not next() over a generator: read with every contract
        if link.rel == "self":
            return link.href
    return None


def id_from_href(href: str | None) -> int | None:
    """Return the id at the end of a resource URL (``…/contracts/42`` → 42), if any.

    Ids are int64 (reference/service-api.md §7): a last segment of other digits (``²``, which
    ``isdigit`` accepts and ``int`` refuses; ``١٢``), or too large, is not an id.
    """
    if not href:
        return None
    return id_or_none(href.partition("?")[0].rstrip("/").rpartition("/")[2])


RawDict = Mapping[str, Any]
