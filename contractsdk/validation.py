"""The term tree of a template version and the exclusive-option validator.

A template version's terms form a tree (reference/service-api.md §8): a term with
``options`` is a single choice, and each option may carry nested terms that apply only while
that option is the chosen one. Users give values as a *flat* mapping
``{term name or id: value}``; :class:`TermSet` checks them against the tree, reports every
problem at once (:class:`~contractsdk.TermValidationError`), and builds the *nested*
``fields`` payload the service expects (§7).

Invariants of a :class:`TermSet`:

* It is immutable. Every index (name → places, id → places, each place's parent chain and
  path) is built once in ``__init__``; ``validate`` and ``build_fields`` only read them, so
  one TermSet may be shared by any number of tasks and threads.
* A *place* is one position of a term in the tree. A name (or id) may have several places,
  e.g. the same question under two options; a flat value is given to every place of its
  name that applies under the chosen options.
* ``validate`` costs O(number of values + number of applicable terms); the work that only a
  wrong value needs (suggestions, explanations) runs only when something is wrong.

Everything here is pure: no I/O, no clock, no event loop.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any, Literal, overload

import attrs

from ._exceptions import TermValidationError
from ._values import UnsendableValueError, iter_fields, to_wire_value
from .models._models import Term

__all__ = [
    "ProblemKind",
    "TermProblem",
    "TermSet",
    "TermValue",
    "TermValues",
    "unchecked_fields",
    "values_from_fields",
]

TermValue = str | int | float | Decimal | date | None
"""A value a term accepts before it is sent as a string (``datetime`` is a ``date``).

``None`` means "no value": the key is treated as absent.
"""

# Keys are typed Any because Mapping is invariant in its key type: a ``dict[str, str]`` would
# not be accepted as a ``Mapping[str | int, ...]``. Keys are checked at run time instead
# (term names, ids as int, or ids as digit strings).
TermValues = Mapping[Any, TermValue]
"""A flat mapping ``{term name | term id | digit-string id: value}``."""

ProblemKind = Literal[
    "unknown_term",
    "not_an_option",
    "exclusive_options",
    "inapplicable",
    "missing",
    "bad_value",
    "duplicate",
]
"""The kinds of :class:`TermProblem` (``docs/terms-and-validation.md`` shows each)."""

# Separates the steps of a path: ``contract_rentFrequency=month › contract_breakClause``.
PATH_SEPARATOR = " › "
# How a term the service sent without a name is shown in paths and trees (it has no key).
NAMELESS = "(no name)"
# Every real term name carries this prefix (service-api.md §8 "Facts"); users often drop it.
_NAME_PREFIX = "contract_"
# How many option values a message lists before it abbreviates.
_MAX_LISTED_OPTIONS = 10
# How many "did you mean" answers for unknown names a TermSet remembers.
_MAX_REMEMBERED_SUGGESTIONS = 1024


@attrs.frozen(kw_only=True)
class TermProblem:
    """One problem with contract values.

    Attributes:
        kind: What is wrong: ``unknown_term``, ``not_an_option``, ``exclusive_options``,
            ``inapplicable``, ``missing``, ``bad_value`` or ``duplicate``.
        path: Where, root to term, e.g. ``contract_rentFrequency=month › contract_breakClause``
            (for an unknown term, the key as given).
        term: The term name (or the key as given, for an unknown term).
        message: A sentence saying what is wrong (and, when there is one, what would be right).
        suggestion: A close term name or option value, or the choice that would make a term
            apply (``contract_breakClause=breakClauseYes``), when there is one.
    """

    kind: ProblemKind
    path: str
    term: str
    message: str
    suggestion: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _Place:
    """One position of a term in the tree, with everything validation needs precomputed."""

    __slots__ = (
        "children",
        "conditions",
        "id",
        "index",
        "lower_options",
        "name",
        "option_set",
        "option_values",
        "parent",
        "path",
        "pushed",
        "term",
    )

    def __init__(self, term: Term, parent: _Place | None, via: str | None, index: int) -> None:
        self.term = term
        # Every field of the service's answer is optional (endpoints.md §3 M6). A term
        # without a name is shown as NAMELESS and indexed neither by name nor by id, so no
        # value ever reaches it; a term without an id is sent by name alone.
        self.name = NAMELESS if term.name is None else term.name
        self.id = term.id
        self.parent = parent
        self.index = index
        # (ancestor place, option that ancestor must have) from the root down: the term
        # applies only when every one holds (service-api.md §8: nested terms apply only
        # under their parent's chosen option).
        self.conditions: tuple[tuple[_Place, str], ...] = (
            () if parent is None or via is None else (*parent.conditions, (parent, via))
        )
        self.path = PATH_SEPARATOR.join(
            [f"{anc.name}={option}" for anc, option in self.conditions] + [self.name]
        )
        # An option without a value cannot be chosen: it has no place in the tree.
        self.option_values = tuple(
            option.value for option in term.options if option.value is not None
        )
        self.option_set = frozenset(self.option_values)
        self.lower_options: dict[str, str] = {}
        for value in self.option_values:
            self.lower_options.setdefault(value.strip().casefold(), value)
        # Filled in by TermSet.__init__ once the nested places exist: option → nested places,
        # and (None for a text term) the same reversed, ready to push on the walk's stack.
        self.children: dict[str, tuple[_Place, ...]] = {}
        self.pushed: dict[str, tuple[_Place, ...]] | None = None

    def __repr__(self) -> str:
        return f"<place {self.path}>"


class TermSet(Sequence["Term"]):
    """The terms of one template version, as a tree, with the exclusive-option validator.

    As a sequence it holds the top-level terms in template order; :meth:`walk` visits the
    whole tree.

    Args:
        terms: The template version's top-level terms, as ``GET /v1/templates/{id}/terms``
            returns them (service-api.md §8).
        template_id: The template version's id, for messages and for callers to keep with it.
    """

    def __init__(self, terms: Iterable[Term], *, template_id: int | None = None) -> None:
        self._terms = tuple(terms)
        self.template_id = template_id
        self._places: list[_Place] = []  # every place, depth-first in template order
        self._by_name: dict[str, list[_Place]] = {}
        self._by_id: dict[int, list[_Place]] = {}
        self._nameless = False  # whether the service sent a term without a name
        self._nameless_ids: set[int] = set()  # and their ids, for a clear message
        self._top = self._index(self._terms, None, None)
        self._top_reversed = tuple(reversed(self._top))
        self._names = tuple(self._by_name)
        # For "did you mean": names compared without case, underscores or the prefix.
        self._loose_names: dict[str, str] = {}
        self._folded_names: dict[str, str] = {}
        for name in self._names:
            self._loose_names.setdefault(_loose(name), name)
            self._folded_names.setdefault(name.casefold(), name)
        # A misspelt column in a bulk file repeats on every row; difflib is slow enough
        # (~0.3 ms over 90 names) to be worth remembering. Bounded; the only mutable state,
        # and a lost race only recomputes.
        self._suggestions: dict[str, str | None] = {}

    def _index(
        self, terms: Iterable[Term], parent: _Place | None, via: str | None
    ) -> tuple[_Place, ...]:
        # Depth-first, template order: a term, then each option's nested terms in turn.
        # Iterative would avoid deep recursion, but real templates nest 3 levels (§8).
        places = []
        for term in terms:
            place = _Place(term, parent, via, len(self._places))
            self._places.append(place)
            if term.name is None:
                self._nameless = True
                if term.id is not None:
                    self._nameless_ids.add(term.id)
            else:
                self._by_name.setdefault(term.name, []).append(place)
                if term.id is not None:
                    self._by_id.setdefault(term.id, []).append(place)
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

    # -- Sequence ---------------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int) -> Term: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Term]: ...
    def __getitem__(self, index: int | slice) -> Term | Sequence[Term]:
        return self._terms[index]

    def __len__(self) -> int:
        return len(self._terms)

    def __iter__(self) -> Iterator[Term]:
        return iter(self._terms)

    def __contains__(self, item: object) -> bool:
        """Whether a term name (str), id (int) or :class:`Term` occurs anywhere in the tree."""
        if isinstance(item, str):
            return item in self._by_name
        if isinstance(item, int) and not isinstance(item, bool):
            return item in self._by_id
        if isinstance(item, Term):
            places = self._places if item.id is None else self._by_id.get(item.id, ())
            return any(place.term == item for place in places)
        return False

    def __repr__(self) -> str:
        return (
            f"TermSet({len(self._terms)} terms, {len(self._places)} in all, "
            f"template_id={self.template_id!r})"
        )

    # -- The tree ---------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """Every distinct term name in the tree, in template order."""
        return self._names

    def find(self, name_or_id: str | int) -> Term | None:
        """Return a term anywhere in the tree by name, id, or id as a digit string.

        Args:
            name_or_id: A term name (``"contract_breakClause"``), an id (``3860``) or an id
                as a digit string (``"3860"``).

        Returns:
            The term's first occurrence in template order, or None if there is none.
        """
        places = self._lookup(name_or_id)
        return places[0].term if places else None

    def paths(self, name_or_id: str | int) -> tuple[str, ...]:
        """Return every place where a term occurs, as paths.

        Args:
            name_or_id: A term name, an id, or an id as a digit string.

        Returns:
            The paths in template order (empty if the term is unknown), e.g.
            ``("contract_rentFrequency=month › contract_breakClause",)``. A name occurs more
            than once when it is nested under several options.
        """
        return tuple(place.path for place in self._lookup(name_or_id))

    def walk(self) -> Iterator[tuple[str, Term]]:
        """Visit every term of the tree, depth-first in template order.

        Returns:
            An iterator of ``(path, term)``; the path names each ancestor with the option
            the term sits under, e.g.
            ``contract_rentFrequency=month › contract_breakClause=breakClauseYes ›
            contract_breakClauseStart``.
        """
        return ((place.path, place.term) for place in self._places)

    def _lookup(self, key: object) -> Sequence[_Place]:
        if isinstance(key, str):
            places = self._by_name.get(key)
            if places is None and key.isascii() and key.isdigit():
                places = self._by_id.get(int(key))
            return places or ()
        if isinstance(key, int) and not isinstance(key, bool):
            return self._by_id.get(key, ())
        return ()

    # -- Validation -------------------------------------------------------------------------

    def validate(
        self,
        values: TermValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
    ) -> dict[str, str]:
        """Check flat values against the terms and return them normalised.

        The rule (service-api.md §8): a term with options takes exactly one of its option
        values; the nested terms of an option apply only while that option is chosen; values
        under two options of one term are refused. Every problem is reported at once.

        Args:
            values: ``{term name | term id | id as digit string: value}``. Values may be
                ``str``, ``int``, ``float``, ``Decimal``, ``date`` or ``datetime``; each is
                sent as a string. ``None`` means "no value" (the key is ignored, apart from
                checking that it names a term).
            require_all: Also report every applicable term (top-level, and nested under the
                chosen options) that has no value, or only whitespace, as ``missing``.
            date_format: ``strftime`` format for ``date`` values; None means ISO 8601
                (``2024-01-31``). The service stores strings verbatim; its own example sends
                ``dd/mm/yyyy`` (``"%d/%m/%Y"``).
            datetime_format: ``strftime`` format for ``datetime`` values; None means ISO 8601
                (``datetime.isoformat()``).

        Returns:
            ``{term name: value as string}`` for the terms that apply, in template order.

        Raises:
            TermValidationError: If anything is wrong; ``.problems`` lists every problem.
        """
        result, _applied = self._check(values, require_all, date_format, datetime_format)
        return result

    def build_fields(
        self,
        values: TermValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
    ) -> list[dict[str, Any]]:
        """Validate flat values and build the nested ``fields`` payload of a contract.

        The payload is the ``fields`` of ``POST /v1/teams/{teamId}/contracts`` and
        ``PATCH /v1/contracts/{id}`` (service-api.md §7): template order, each entry
        ``{"id": int, "name": str, "value": str}``, plus ``"nested_fields"`` with the answers
        to the chosen option's nested terms when there are any. Terms without a value are
        left out.

        Args:
            values: As for :meth:`validate`.
            require_all: As for :meth:`validate`.
            date_format: As for :meth:`validate`.
            datetime_format: As for :meth:`validate`.

        Returns:
            The list of field entries, ready to be sent as JSON.

        Raises:
            TermValidationError: If anything is wrong; nothing is built.
        """
        _result, applied = self._check(values, require_all, date_format, datetime_format)
        top: list[dict[str, Any]] = []
        entries: dict[_Place, dict[str, Any]] = {}
        # ``applied`` is depth-first, so a parent's entry exists before its children's.
        for place, value in applied:
            entry: dict[str, Any] = (
                {"name": place.name, "value": value}
                if place.id is None  # the service sent the term without an id (§3 M6)
                else {"id": place.id, "name": place.name, "value": value}
            )
            entries[place] = entry
            if place.parent is None:
                top.append(entry)
            else:
                # §7: a nested answer goes inside its parent's nested_fields.
                entries[place.parent].setdefault("nested_fields", []).append(entry)
        return top

    def _check(
        self,
        values: TermValues,
        require_all: bool,
        date_format: str | None,
        datetime_format: str | None,
    ) -> tuple[dict[str, str], list[tuple[_Place, str]]]:
        # This runs once per row of a bulk job: plain dicts and locals, no per-value objects.
        problems: list[tuple[int, TermProblem]] = []  # (sort key, problem)
        unplaced = len(self._places)  # sort key base: unknown keys go last, in given order
        given: dict[str, str] = {}  # term name → value as the string to send
        # Names given only by id: their value belongs only to the places with those ids (a
        # name nested under two options may have another id in each).
        by_id_only: dict[str, set[int]] = {}
        # Names whose value was refused (no follow-on noise), or that no value can reach.
        unusable: set[str] = {NAMELESS} if self._nameless else set()
        by_name, by_id = self._by_name, self._by_id

        # 1. Resolve keys and convert values: O(number of values).
        for key, raw in values.items():
            term_id: int | None = None
            if isinstance(key, str):
                places = by_name.get(key)
                if places is None and key.isascii() and key.isdigit():
                    term_id = int(key)
                    places = by_id.get(term_id)
            elif isinstance(key, int) and not isinstance(key, bool):
                term_id = key
                places = by_id.get(key)
            else:
                places = None
            if places is None:
                problems.append((unplaced + len(problems), self._unknown(key)))
                continue
            if raw is None:
                continue  # None means "no value" (documented): the key is only checked
            place = places[0]
            name = place.name
            if type(raw) is str:
                text = raw
            else:
                try:
                    text = to_wire_value(raw, date_format, datetime_format)
                except UnsendableValueError as refused:
                    problems.append((place.index, _problem("bad_value", place, str(refused))))
                    unusable.add(name)
                    continue
            first = given.get(name)
            if first is None:
                given[name] = text
                if term_id is not None:
                    by_id_only[name] = {term_id}
                continue
            if first != text:
                # One term given twice with different values: refuse rather than guess which
                # key wins; the first value is kept for the rest of the checks.
                problems.append((place.index, self._duplicate(place, values, first, text, key)))
            if term_id is None:
                by_id_only.pop(name, None)
            elif name in by_id_only:
                by_id_only[name].add(term_id)

        # 2. Walk the applicable tree top-down: O(number of applicable terms).
        result: dict[str, str] = {}
        applied: list[tuple[_Place, str]] = []
        rejected: dict[str, _Place] = {}  # applicable, but the value is not an option
        stack = list(self._top_reversed)
        pop, push = stack.pop, stack.extend
        while stack:
            place = pop()
            name = place.name
            value = given.get(name)
            if value is None or (
                by_id_only and name in by_id_only and place.id not in by_id_only[name]
            ):
                if require_all and name not in unusable:
                    problems.append((place.index, self._missing(place)))
                continue
            if place.pushed is not None:
                nested = place.pushed.get(value)
                if nested is None:
                    rejected.setdefault(name, place)
                    problems.append((place.index, self._not_an_option(place, value)))
                    continue
                push(nested)  # only the chosen option's nested terms apply (§8)
            elif require_all and not value.strip():
                problems.append((place.index, self._missing(place, empty=True)))
            result[name] = value
            applied.append((place, value))

        # 3. Values the walk did not reach: inapplicable, or under exclusive options. Only a
        #    wrong input gets here, so this part may be slower.
        if len(result) < len(given):
            leftovers = [name for name in given if name not in result and name not in rejected]
            if leftovers:
                resolved = dict(rejected)
                for place, _value in applied:
                    resolved.setdefault(place.name, place)
                problems.extend(
                    self._explain_leftovers(leftovers, given, by_id_only, result, resolved)
                )

        if problems:
            problems.sort(key=lambda item: item[0])
            raise TermValidationError([problem for _, problem in problems])
        return result, applied

    def _explain_leftovers(
        self,
        leftovers: list[str],
        given: Mapping[str, str],
        by_id_only: Mapping[str, set[int]],
        result: Mapping[str, str],
        resolved: dict[str, _Place],
    ) -> list[tuple[int, TermProblem]]:
        problems: list[tuple[int, TermProblem]] = []
        # For each leftover: its most nearly applicable place and where its chain breaks.
        breaks: dict[str, tuple[_Place, int]] = {}
        for name in leftovers:
            best: tuple[_Place, int] | None = None
            for place in self._by_name[name]:
                if not place.conditions or not _fits(place, by_id_only):
                    continue
                depth = _break_depth(place, result)
                if best is None or depth > best[1]:
                    best = (place, depth)
            if best is None:
                # Only a malformed tree (one id under two names) gets here; never drop a
                # value silently.
                place = self._by_name[name][0]
                message = "does not apply with the options chosen"
                problems.append((place.index, _problem("inapplicable", place, message)))
                continue
            breaks[name] = best
            resolved[name] = best[0]

        # Exclusive options: for each choice term, which of its options have values given
        # for terms under them (at any depth). Two or more is the exclusive-option rule
        # broken (service-api.md §8 "Exclusive"); one problem per such term says so.
        under: dict[_Place, dict[str, list[str]]] = {}
        for name, place in resolved.items():
            for ancestor, option in place.conditions:
                under.setdefault(ancestor, {}).setdefault(option, []).append(name)
        exclusive: set[_Place] = set()
        for ancestor, by_option in under.items():
            if len(by_option) > 1:
                exclusive.add(ancestor)
                problems.append(
                    (ancestor.index, self._exclusive(ancestor, by_option, result, given))
                )

        for name in leftovers:
            if name not in breaks:
                continue
            place, depth = breaks[name]
            value = given[name]
            # An option value that is wrong is worth saying even where the term is
            # inapplicable: the user has to fix both.
            if place.option_set and value not in place.option_set:
                problems.append((place.index, self._not_an_option(place, value)))
            if place.conditions[depth][0] in exclusive:
                continue  # the exclusive_options problem already explains this value
            problems.append(
                (place.index, self._inapplicable(place, depth, by_id_only, result, given))
            )
        return problems

    # -- Problems ---------------------------------------------------------------------------

    def _unknown(self, key: object) -> TermProblem:
        as_id = (
            key
            if isinstance(key, int) and not isinstance(key, bool)
            else int(key)
            if isinstance(key, str) and key.isascii() and key.isdigit()
            else None
        )
        if as_id is not None and as_id in self._nameless_ids:
            return TermProblem(
                kind="unknown_term",
                path=str(key),
                term=str(key),
                message=(
                    f"the service sent the term with the id {as_id} without a name, "
                    "so it cannot be given a value"
                ),
            )
        if isinstance(key, int) and not isinstance(key, bool):
            return TermProblem(
                kind="unknown_term",
                path=str(key),
                term=str(key),
                message=f"no term of this template has the id {key}",
            )
        if isinstance(key, str):
            if key.isascii() and key.isdigit():
                message = f"no term of this template has the id {key}"
                return TermProblem(kind="unknown_term", path=key, term=key, message=message)
            suggestion = self._suggest_name(key)
            message = f"unknown term {key!r}"
            if suggestion is not None:
                message += f"; did you mean {suggestion!r}?"
            return TermProblem(
                kind="unknown_term", path=key, term=key, message=message, suggestion=suggestion
            )
        return TermProblem(
            kind="unknown_term",
            path=repr(key),
            term=repr(key),
            message=(f"a key must be a term name (str) or id (int), not {type(key).__name__}"),
        )

    def _suggest_name(self, key: str) -> str | None:
        if key in self._suggestions:
            return self._suggestions[key]
        suggestion = self._find_close_name(key)
        if len(self._suggestions) < _MAX_REMEMBERED_SUGGESTIONS:
            self._suggestions[key] = suggestion
        return suggestion

    def _find_close_name(self, key: str) -> str | None:
        # Cheap exact-ish matches first: case, underscores, a missing "contract_" prefix.
        hit = self._folded_names.get(key.casefold()) or self._loose_names.get(_loose(key))
        if hit is not None:
            return hit
        candidates = [key.casefold()]
        if not key.startswith(_NAME_PREFIX):
            candidates.append((_NAME_PREFIX + key).casefold())
        for candidate in candidates:
            close = difflib.get_close_matches(candidate, self._folded_names, n=1, cutoff=0.75)
            if close:
                return self._folded_names[close[0]]
        return None

    def _not_an_option(self, place: _Place, value: str) -> TermProblem:
        suggestion = place.lower_options.get(value.strip().casefold())
        if suggestion is None and value.strip():
            close = difflib.get_close_matches(
                value.strip().casefold(), place.lower_options, n=1, cutoff=0.6
            )
            suggestion = place.lower_options[close[0]] if close else None
        message = f"{value!r} is not an option"
        if suggestion is not None:
            message += f"; did you mean {suggestion!r}?"
        message += f" (options: {_list_options(place.option_values)})"
        return _problem("not_an_option", place, message, suggestion)

    def _missing(self, place: _Place, *, empty: bool = False) -> TermProblem:
        message = "the value is empty" if empty else "no value given"
        if place.option_values:
            message += f"; choose one of: {_list_options(place.option_values)}"
        return _problem("missing", place, message)

    def _inapplicable(
        self,
        best: _Place,
        depth: int,
        by_id_only: Mapping[str, set[int]],
        result: Mapping[str, str],
        given: Mapping[str, str],
    ) -> TermProblem:
        # Say which choices would make the term apply, from the first one that does not hold
        # (those above it hold already), and what the user chose instead. A name under
        # several options lists each way, nearest first.
        ways = [(best, depth)] + [
            (place, _break_depth(place, result))
            for place in self._by_name[best.name]
            if place is not best and place.conditions and _fits(place, by_id_only)
        ]
        clauses = []
        for place, at in ways:
            needed = " and ".join(f"{anc.name}={option}" for anc, option in place.conditions[at:])
            clauses.append(f"{needed} ({_state(place.conditions[at][0], given)})")
        ancestor, option = best.conditions[depth]
        return _problem(
            "inapplicable",
            best,
            "applies only when " + ", or when ".join(clauses),
            f"{ancestor.name}={option}",
        )

    def _duplicate(
        self, place: _Place, values: TermValues, first: str, text: str, key: object
    ) -> TermProblem:
        first_key = next(
            (
                k
                for k, v in values.items()
                if v is not None and place.name in {p.name for p in self._lookup(k)}
            ),
            None,
        )
        message = (
            f"given twice with different values: {first!r} (as {first_key!r}) "
            f"and {text!r} (as {key!r})"
        )
        return _problem("duplicate", place, message)

    def _exclusive(
        self,
        place: _Place,
        by_option: Mapping[str, list[str]],
        result: Mapping[str, str],
        given: Mapping[str, str],
    ) -> TermProblem:
        options = sorted(by_option, key=place.option_values.index)
        listed = "; ".join(f"{option} ({', '.join(by_option[option])})" for option in options)
        chosen = result.get(place.name)
        if chosen is not None:
            others = ", ".join(option for option in options if option != chosen)
            tail = f"{place.name} is {chosen!r}, so the terms under {others} do not apply"
        else:
            tail = f"{_state(place, given)}; choose one option and give only its terms"
        message = (
            f"its options are exclusive, but values were given under {len(options)} of them: "
            f"{listed}; {tail}"
        )
        return _problem("exclusive_options", place, message)

    # -- Display ----------------------------------------------------------------------------

    def tree(
        self,
        values: TermValues | None = None,
        *,
        date_format: str | None = None,
        datetime_format: str | None = None,
    ) -> str:
        """Render the terms as an indented text tree (for ``terms show`` and the demo).

        Each term shows its name, id and label; each option is a radio button ``( )`` under
        it (options are exclusive), and an option's nested terms are indented beneath it.
        With ``values``, chosen options are marked ``(x)`` and text values shown after
        ``=``; nothing is validated, so a tree can show values that are still wrong.

        Args:
            values: Optional flat values, as for :meth:`validate`.
            date_format: As for :meth:`validate`.
            datetime_format: As for :meth:`validate`.

        Returns:
            The tree as lines of text joined by newlines (no trailing newline).
        """
        shown: dict[str, str] = {}
        for key, raw in (values or {}).items():
            places = self._lookup(key)
            if not places or raw is None:
                continue
            try:
                shown.setdefault(places[0].name, to_wire_value(raw, date_format, datetime_format))
            except UnsendableValueError:
                shown.setdefault(places[0].name, repr(raw))
        lines: list[str] = []
        self._render(self._top, shown, 0, lines)
        return "\n".join(lines)

    def _render(
        self, places: Sequence[_Place], shown: Mapping[str, str], indent: int, lines: list[str]
    ) -> None:
        pad = " " * indent
        for place in places:
            term = place.term
            line = f"{pad}{place.name} (id {term.id})"
            if term.label:
                line += f": {term.label}"
            value = shown.get(place.name)
            if value is not None and (not place.option_set or value not in place.option_set):
                line += f" = {value!r}"
                if place.option_set:
                    line += " (not an option)"
            lines.append(line)
            for option in place.option_values:
                mark = "(x)" if value == option else "( )"
                lines.append(f"{pad}  {mark} {option}")
                self._render(place.children[option], shown, indent + 6, lines)


def unchecked_fields(
    values: TermValues, *, date_format: str | None = None, datetime_format: str | None = None
) -> list[dict[str, Any]]:
    """Return values as flat ``{name | id, value}`` fields, converted but not checked.

    For changing a contract whose template is not known (the contract JSON does not name
    it, service-api.md §7): names are not looked up, and nested terms are not placed under
    their parent. ``None`` values are left out.

    Raises:
        TermValidationError: A value has no unambiguous string form (every one is listed).
    """
    fields: list[dict[str, Any]] = []
    problems: list[TermProblem] = []
    for key, value in values.items():
        if value is None:
            continue
        try:
            text = to_wire_value(value, date_format, datetime_format)
        except UnsendableValueError as exc:
            problems.append(
                TermProblem(kind="bad_value", path=str(key), term=str(key), message=str(exc))
            )
            continue
        is_id = isinstance(key, int) and not isinstance(key, bool)
        fields.append({"id": key, "value": text} if is_id else {"name": str(key), "value": text})
    if problems:
        raise TermValidationError(problems)
    return fields


def values_from_fields(fields: Iterable[Mapping[str, Any]]) -> dict[str | int, Any]:
    """Turn a nested ``fields`` payload back into a flat mapping.

    The inverse of :meth:`TermSet.build_fields` (service-api.md §7). Both ``nested_fields``
    and ``nestedFields`` are read, since the service's own documents use both (§8).

    Args:
        fields: Field entries ``{"id"?, "name"?, "value", "nested_fields"?}``, nested.

    Returns:
        ``{name: value}`` in depth-first order; an entry without a name is keyed by its id.
        Entries without a value are skipped (their nested entries are still read).
    """
    flat: dict[str | int, Any] = {}
    for entry in iter_fields(fields):
        key = entry.get("name") or entry.get("id")
        if key is not None and entry.get("value") is not None:
            flat[key] = entry["value"]
    return flat


def _problem(
    kind: ProblemKind, place: _Place, message: str, suggestion: str | None = None
) -> TermProblem:
    return TermProblem(
        kind=kind, path=place.path, term=place.name, message=message, suggestion=suggestion
    )


def _fits(place: _Place, by_id_only: Mapping[str, set[int]]) -> bool:
    """Whether a value given for ``place``'s name may go to this place (see ``by_id_only``)."""
    ids = by_id_only.get(place.name)
    return ids is None or place.id in ids


def _state(place: _Place, given: Mapping[str, str]) -> str:
    """Describe what was given for a choice term, for an ``inapplicable`` message."""
    value = given.get(place.name)
    if value is None:
        return f"{place.name} has no value"
    if value not in place.option_set:
        return f"{place.name} is {value!r}, which is not an option"
    return f"{place.name} is {value!r}"


def _break_depth(place: _Place, result: Mapping[str, str]) -> int:
    """Return the index of the first condition of ``place`` that the chosen options break."""
    for depth, (ancestor, option) in enumerate(place.conditions):
        if result.get(ancestor.name) != option:
            return depth
    # Every condition holds only for an applicable place, which never gets here; point at the
    # nearest ancestor so the caller still has something true to say.
    return max(len(place.conditions) - 1, 0)


def _loose(name: str) -> str:
    """Fold a name for loose comparison: no case, underscores, spaces or ``contract`` prefix."""
    folded = "".join(char for char in name.casefold() if char.isalnum())
    return folded.removeprefix("contract")


def _list_options(options: Sequence[str]) -> str:
    listed = ", ".join(options[:_MAX_LISTED_OPTIONS])
    if len(options) > _MAX_LISTED_OPTIONS:
        listed += f" and {len(options) - _MAX_LISTED_OPTIONS} more"
    return listed
