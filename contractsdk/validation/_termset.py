"""TermSet: the terms of one template version, with the validator and the payload builder.

The public face of this package: the tree (:mod:`._tree`), the rules (:mod:`._rules`), the
payload (:mod:`._payload`) and the text rendering (:mod:`._render`) each live in a module of
their own; a TermSet holds one immutable :class:`~._tree.TermTree` and lends it to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import attrs

from contractsdk._values import UnsendableValueError, to_wire_value
from contractsdk.models._models import ContractField, Term
from contractsdk.validation import _payload, _rules
from contractsdk.validation._payload import CheckedValues, TermValues
from contractsdk.validation._render import render_tree
from contractsdk.validation._tree import TermPlace, TermTree

__all__ = ["TermSet"]


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
        self._tree = TermTree(self._terms)

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
            return item in self._tree.keys.by_name
        if isinstance(item, int) and not isinstance(item, bool):
            return item in self._tree.keys.by_id
        if isinstance(item, Term):
            places = (
                self._tree.places if item.id is None else self._tree.keys.by_id.get(item.id, ())
            )
            return any(place.term == item for place in places)
        return False

    def __repr__(self) -> str:
        return (
            f"TermSet({len(self._terms)} terms, {len(self._tree.places)} in all, "
            f"template_id={self.template_id!r})"
        )

    # -- The tree ---------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """Every distinct term name in the tree, in template order."""
        return self._tree.names

    def find(self, name_or_id: str | int) -> Term | None:
        """Return a term anywhere in the tree by name, id, or id as a digit string.

        Args:
            name_or_id: A term name (``"contract_breakClause"``), an id (``3860``) or an id
                as a digit string (``"3860"``).

        Returns:
            The term's first occurrence in template order, or None if there is none.
        """
        places = self._tree.keys.lookup(name_or_id)
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
        return tuple(place.path for place in self._tree.keys.lookup(name_or_id))

    def walk(self) -> Iterator[tuple[str, Term]]:
        """Visit every term of the tree, depth-first in template order.

        Returns:
            An iterator of ``(path, term)``; the path names each ancestor with the option
            the term sits under, e.g.
            ``contract_rentFrequency=month › contract_breakClause=breakClauseYes ›
            contract_breakClauseStart``.
        """
        return ((place.path, place.term) for place in self._tree.places)

    # -- Validation -------------------------------------------------------------------------

    def validate(
        self,
        values: TermValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
        stored: Sequence[ContractField] = (),
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
            stored: For an update, the values the contract holds (:attr:`Contract.fields
                <contractsdk.models.Contract.fields>`). A term that ``values`` leave out
                (or give as None) keeps its stored value while it still applies under the
                options chosen (the emulator drops the answers under an option that
                changes), so a nested term may be changed alone, and ``require_all``
                counts what is stored. A stored value is found by its term's name; its id
                only tells apart a name that stands at several places.

        Returns:
            ``{term name: value as string}`` for the terms that apply, in template order
            (with ``stored``: what the contract holds after the update).

        Raises:
            TermValidationError: If anything is wrong; ``.problems`` lists every problem.
        """
        return _rules.check(self._tree, values, require_all, date_format, datetime_format, stored)[
            0
        ]

    def check(
        self,
        values: TermValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
        stored: Sequence[ContractField] = (),
    ) -> CheckedValues:
        """Validate flat values and return them in every form the service uses.

        One check and one pass make both the nested ``fields`` payload to send and the flat
        fields a contract stores, so a caller that needs both never nests and flattens.

        Args:
            values: As for :meth:`validate`.
            require_all: As for :meth:`validate`.
            date_format: As for :meth:`validate`.
            datetime_format: As for :meth:`validate`.
            stored: As for :meth:`validate`: ``.fields`` is then what to send (as
                :meth:`build_fields` with ``stored``), and ``.by_name`` and ``.flat`` what
                the contract holds afterwards.

        Returns:
            The checked values: ``.by_name`` (as :meth:`validate` returns), ``.fields`` (as
            :meth:`build_fields` returns), ``.flat`` and ``.by_id``.

        Raises:
            TermValidationError: If anything is wrong; ``.problems`` lists every problem.
        """
        by_name, applied = _rules.check(
            self._tree, values, require_all, date_format, datetime_format, stored
        )
        checked = _payload.build_checked(by_name, applied)
        if stored:
            sent = _payload.build_fields(self._given_and_ancestors(applied, values))
            checked = attrs.evolve(checked, fields=sent)
        return checked

    def build_fields(
        self,
        values: TermValues,
        *,
        require_all: bool = False,
        date_format: str | None = None,
        datetime_format: str | None = None,
        stored: Sequence[ContractField] = (),
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
            stored: As for :meth:`validate`. The payload then holds the values given and,
                for a nested one, the ancestors it goes under, at their stored options: the
                fields of ``PATCH /v1/contracts/{id}``, which merges them into what is
                stored.

        Returns:
            The list of field entries, ready to be sent as JSON.

        Raises:
            TermValidationError: If anything is wrong; nothing is built.
        """
        applied = _rules.check(
            self._tree, values, require_all, date_format, datetime_format, stored
        )[1]
        if stored:
            applied = self._given_and_ancestors(applied, values)
        return _payload.build_fields(applied)

    def _given_names(self, values: TermValues) -> set[str]:
        lookup = self._tree.keys.lookup
        return {
            places[0].name
            for key, raw in values.items()
            if raw is not None and (places := lookup(key))
        }

    def _needs_stored(self, values: TermValues) -> bool:
        """Whether ``values`` give a nested term without every ancestor it goes under.

        Only then (or to count what is stored for ``require_all``) does an update's check
        need the values the contract holds.
        """
        _rules.check_mapping(values)
        names = self._given_names(values)
        by_name = self._tree.keys.by_name
        return any(
            ancestor.name not in names
            for name in names
            for place in by_name[name]
            for ancestor, _option in place.conditions
        )

    def _given_and_ancestors(
        self, applied: list[tuple[TermPlace, str]], values: TermValues
    ) -> list[tuple[TermPlace, str]]:
        """The checked pairs of the places ``values`` give, and of their ancestors.

        A name given by id gives only the places with that id (as the check takes it);
        the others of that name keep what is stored, and are not sent again.
        """
        resolve = self._tree.keys.resolve
        by_name: set[str] = set()  # given by name: every place of it
        by_id: set[int] = set()  # given by id: the places with that id
        for key, raw in values.items():
            places, term_id = resolve(key)
            if raw is None or not places:
                continue
            if term_id is None:
                by_name.add(places[0].name)
            else:
                by_id.add(term_id)
        sent: set[TermPlace] = set()
        for place, _value in applied:
            if place.name in by_name or place.id in by_id:
                sent.add(place)
                sent.update(ancestor for ancestor, _option in place.conditions)
        return [(place, value) for place, value in applied if place in sent]

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
        if values is not None:
            _rules.check_mapping(values)
        shown: dict[str, str] = {}
        for key, raw in (values or {}).items():
            places = self._tree.keys.lookup(key)
            if not places or raw is None:
                continue
            try:
                shown.setdefault(places[0].name, to_wire_value(raw, date_format, datetime_format))
            except UnsendableValueError:
                shown.setdefault(places[0].name, repr(raw))

        def describe(place: TermPlace) -> tuple[str, Sequence[str], str | None]:
            term = place.term
            line = f"{place.name} (id {term.id})"
            if term.label:
                line += f": {term.label}"
            value = shown.get(place.name)
            if value is not None and (not place.option_set or value not in place.option_set):
                line += f" = {value!r}"
                if place.option_set:
                    line += " (not an option)"
            return line, place.option_values, value

        return render_tree(self._tree.top, describe)
