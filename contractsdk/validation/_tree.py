"""The term tree: its places, its indexes, and the one key lookup.

A template version's terms form a tree (reference/service-api.md §8): a term with
``options`` is a single choice, and each option may carry nested terms that apply only while
that option is the chosen one. A party's identity fields have the same shape, so the pieces
both trees need live here: :class:`Node` (a position with its path), :class:`KeyIndex`
(what a key names: a name, an id, or an id as a digit string) and :func:`fold`.

Invariants of a :class:`TermTree` (and of a :class:`KeyIndex` once filled):

* It is immutable once built: every index (name → places, id → places, each place's parent
  chain and path) is made in ``__init__``; the rules, the payload and the rendering only
  read it, so one tree may be shared by any number of tasks and threads. The one exception
  is the bounded cache of "did you mean" answers, where a lost race only recomputes.
* A *place* is one position of a term in the tree. A name (or id) may have several places,
  e.g. the same question under two options; a flat value is given to every place of its
  name that applies under the chosen options.

Everything here is pure: no I/O, no clock, no event loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from contractsdk._ids import id_or_none
from contractsdk.models._models import Term

__all__ = ["NAMELESS", "PATH_SEPARATOR", "KeyIndex", "Node", "TermPlace", "TermTree", "fold"]

# Separates the steps of a path: ``contract_rentFrequency=month › contract_breakClause``.
PATH_SEPARATOR = " › "
# How a term the service sent without a name is shown in paths and trees (it has no key).
NAMELESS = "(no name)"

_SPACES = re.compile(r"\s+")

P = TypeVar("P", bound="Node")


def fold(text: str) -> str:
    """Fold text for a forgiving comparison: no case, runs of spaces as one, no edge spaces."""
    return _SPACES.sub(" ", text).strip().casefold()


class Node:
    """One position in a tree of choices: its name, the choices above it, and its path.

    Attributes:
        name: How the position is shown in paths and messages.
        conditions: ``(ancestor, option that ancestor must have)`` from the root down: the
            position applies only when every one holds (service-api.md §8: nested terms
            apply only under their parent's chosen option).
        path: ``ancestor=option › … › name``.
        children: Option → the positions nested under it (filled in by the tree's builder).
    """

    __slots__ = ("children", "conditions", "name", "path")

    def __init__(self, name: str, parent: Node | None, via: str | None) -> None:
        self.name = name
        self.conditions: tuple[tuple[Node, str], ...] = (
            () if parent is None or via is None else (*parent.conditions, (parent, via))
        )
        self.path = PATH_SEPARATOR.join(
            [f"{anc.name}={option}" for anc, option in self.conditions] + [name]
        )
        self.children: Mapping[str, tuple[Node, ...]] = {}

    def __repr__(self) -> str:
        return f"<place {self.path}>"


class KeyIndex(Generic[P]):
    """What a key of a flat values mapping names: the one lookup for terms and fields.

    A key is a name (exactly), an id (``int``), or an id as a digit string (``"3860"``,
    when no name is spelt so); with ``fold`` given, last a name compared folded. Anything
    else names nothing.

    Args:
        fold: Also look names up folded by this function (identity fields: labels typed by
            hand); None to match names exactly (terms).
    """

    __slots__ = ("by_folded", "by_id", "by_name", "fold")

    def __init__(self, fold: Callable[[str], str] | None = None) -> None:
        self.by_name: dict[str, list[P]] = {}
        self.by_id: dict[int, list[P]] = {}
        self.by_folded: dict[str, list[P]] = {}
        self.fold = fold

    def add(self, place: P, names: Iterable[str], place_id: int | None) -> None:
        """Index a place under each of its names and its id."""
        for name in names:
            self.by_name.setdefault(name, []).append(place)
            if self.fold is not None:
                folded = self.by_folded.setdefault(self.fold(name), [])
                if place not in folded:
                    folded.append(place)
        if place_id is not None:
            self.by_id.setdefault(place_id, []).append(place)

    def resolve(self, key: object) -> tuple[list[P] | None, int | None]:
        """Return the places a key names (None if none) and the id it gives, if it is one.

        The id is returned even when no place has it, for the "no such id" message.
        """
        if isinstance(key, str):
            places = self.by_name.get(key)
            if places is not None:
                return places, None
            key_id = id_or_none(key)
            if key_id is not None:
                places = self.by_id.get(key_id)
            if places is None and self.fold is not None:
                places = self.by_folded.get(self.fold(key))
            return places, key_id
        if isinstance(key, int) and not isinstance(key, bool):
            # Looked up by value, so an int subclass finds the same places; a negative or
            # huge int is kept for the message, though it names nothing.
            return self.by_id.get(key), key
        return None, None

    def lookup(self, key: object) -> Sequence[P]:
        """Return the places a key names, in tree order (empty if none)."""
        return self.resolve(key)[0] or ()


class TermPlace(Node):
    """One position of a term in the tree, with everything validation needs precomputed."""

    __slots__ = ("id", "index", "lower_options", "option_set", "option_values", "pushed", "term")

    children: dict[str, tuple[TermPlace, ...]]  # narrower than Node's: terms only
    conditions: tuple[tuple[TermPlace, str], ...]  # the same

    def __init__(self, term: Term, parent: TermPlace | None, via: str | None, index: int) -> None:
        # Every field of the service's answer is optional (endpoints.md §3 M6). A term
        # without a name is shown as NAMELESS and indexed neither by name nor by id, so no
        # value ever reaches it; a term without an id is sent by name alone.
        super().__init__(NAMELESS if term.name is None else term.name, parent, via)
        self.term = term
        self.id = term.id
        self.index = index
        # An option without a value cannot be chosen: it has no place in the tree.
        self.option_values = tuple(
            option.value for option in term.options if option.value is not None
        )
        self.option_set = frozenset(self.option_values)
        self.lower_options: dict[str, str] = {}
        for value in self.option_values:
            self.lower_options.setdefault(value.strip().casefold(), value)
        # Option → nested places reversed, ready to push on the walk's stack; None for a
        # text term.
        self.pushed: dict[str, tuple[TermPlace, ...]] | None = None


class TermTree:
    """The places of a template version's terms and their indexes (internal to TermSet).

    Args:
        terms: The top-level terms, in template order.
    """

    def __init__(self, terms: Sequence[Term]) -> None:
        self.places: list[TermPlace] = []  # every place, depth-first in template order
        self.keys: KeyIndex[TermPlace] = KeyIndex()
        self.nameless = False  # whether the service sent a term without a name
        self.nameless_ids: set[int] = set()  # and their ids, for a clear message
        self.top = self._index(terms, None, None)
        self.top_reversed = tuple(reversed(self.top))
        self.names = tuple(self.keys.by_name)
        # For "did you mean": names compared without case, underscores or the prefix.
        self.loose_names: dict[str, str] = {}
        self.folded_names: dict[str, str] = {}
        for name in self.names:
            self.loose_names.setdefault(loose(name), name)
            self.folded_names.setdefault(name.casefold(), name)
        # A term's label given for its name (identity fields take labels, terms do not).
        self.label_names: dict[str, str] = {}
        for place in self.places:
            if place.term.label and place.term.name is not None:
                self.label_names.setdefault(fold(place.term.label), place.term.name)
        # A misspelt column in a bulk file repeats on every row; difflib is slow enough
        # (~0.3 ms over 90 names) to be worth remembering. Bounded; the only mutable state,
        # and a lost race only recomputes.
        self.suggestions: dict[str, str | None] = {}

    def _index(
        self, terms: Iterable[Term], parent: TermPlace | None, via: str | None
    ) -> tuple[TermPlace, ...]:
        # Depth-first, template order: a term, then each option's nested terms in turn.
        # Iterative would avoid deep recursion, but real templates nest 3 levels (§8).
        places = []
        for term in terms:
            place = TermPlace(term, parent, via, len(self.places))
            self.places.append(place)
            if term.name is None:
                self.nameless = True
                if term.id is not None:
                    self.nameless_ids.add(term.id)
            else:
                self.keys.add(place, (term.name,), term.id)
            place.children = {
                option.value: self._index(option.nested_terms, place, option.value)
                for option in term.options
                if option.value is not None
            }
            if term.options:  # a choice even if none of its options has a value
                place.pushed = {
                    option: tuple(reversed(nested)) for option, nested in place.children.items()
                }
            places.append(place)
        return tuple(places)


def loose(name: str) -> str:
    """Fold a name for loose comparison: no case, underscores, spaces or ``contract`` prefix."""
    folded = "".join(char for char in name.casefold() if char.isalnum())
    return folded.removeprefix("contract")
