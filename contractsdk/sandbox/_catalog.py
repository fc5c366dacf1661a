"""The read-only catalog of the emulator: contract types, template versions and their terms.

The catalog is built once per seed and never changes afterwards, so it is shared by every
reset of the store and its rendered JSON is cached (no per-request copies of term trees).

Term model (service-api.md §8): a term has an ``id``, a ``label`` (the question), a
``name`` (``contract_`` + camelCase) and, when it is a single choice, ``options``; an
option has only a ``value`` and, optionally, ``nested_fields`` — further terms that apply
only when that option is chosen. Options have no id and no label.

Invariants:
- Term ids are unique across all templates; term names are unique within a template.
- ``Template.by_id`` / ``by_name`` index every term of the template at any depth.
- ``Term.parent_id`` / ``parent_option`` say where a nested term lives; both are None for
  a top-level term.
- ``ContractType.template_ids`` is ordered newest version first (§7 Templates).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ._identity import IdentityForm
from ._wire import dumps, links_array

# --- seed-time description of a term tree (no ids yet) -------------------------------


@attrs.frozen
class TermDef:
    """A term as written in the seed data, before ids are allocated.

    Args:
        name: The machine name, ``contract_`` + camelCase.
        label: The question shown to the user.
        options: The choices; empty for a free-text term.
    """

    name: str
    label: str
    options: tuple[OptionDef, ...] = ()


@attrs.frozen
class OptionDef:
    """An option of a :class:`TermDef`.

    Args:
        value: The option's value (both what is shown and what is stored).
        nested: The terms that apply only when this option is chosen.
    """

    value: str
    nested: tuple[TermDef, ...] = ()


def text(name: str, label: str) -> TermDef:
    """Describe a free-text term (dates, amounts and uploads look the same on the wire).

    Args:
        name: The machine name.
        label: The question.

    Returns:
        The term description.
    """
    return TermDef(name, label)


def opt(value: str, *nested: TermDef) -> OptionDef:
    """Describe an option, with the terms nested under it.

    Args:
        value: The option value.
        *nested: Terms that apply when the option is chosen.

    Returns:
        The option description.
    """
    return OptionDef(value, nested)


def choice(name: str, label: str, *options: str | OptionDef) -> TermDef:
    """Describe a single-choice term.

    Args:
        name: The machine name.
        label: The question.
        *options: Option values, or :func:`opt` descriptions for options with nested terms.

    Returns:
        The term description.
    """
    return TermDef(
        name, label, tuple(o if isinstance(o, OptionDef) else OptionDef(o) for o in options)
    )


def yes_no(name: str, label: str, *yes: TermDef) -> TermDef:
    """Describe a yes/no term whose values follow the service's ``<stem>Yes``/``<stem>No``.

    Args:
        name: The machine name, e.g. ``contract_pets`` (values ``petsYes``/``petsNo``).
        label: The question.
        *yes: Terms that apply when the answer is yes.

    Returns:
        The term description.
    """
    stem = name.removeprefix("contract_")
    return TermDef(name, label, (OptionDef(f"{stem}Yes", yes), OptionDef(f"{stem}No")))


# --- the materialised catalog ----------------------------------------------------------


@attrs.frozen(eq=False)
class Option:
    """An option of a term.

    Args:
        value: The option value.
        nested: The nested terms.
    """

    value: str
    nested: tuple[Term, ...]


@attrs.frozen(eq=False)
class Term:
    """A term of one template version.

    Args:
        id: The term id, unique across templates.
        name: The machine name.
        label: The question.
        options: The options; empty for a free-text term.
        template_id: The template the term belongs to.
        parent_id: The id of the term under whose option this term is nested, or None.
        parent_option: The option value of the parent that this term hangs under, or None.
    """

    id: int
    name: str
    label: str
    options: tuple[Option, ...]
    template_id: int
    parent_id: int | None
    parent_option: str | None

    @property
    def option_values(self) -> tuple[str, ...]:
        """The values this term accepts; empty for a free-text term."""
        return tuple(o.value for o in self.options)

    def descendants(self) -> Iterator[Term]:
        """Iterate over every term nested below this one, at any depth.

        Yields:
            The nested terms, depth first.
        """
        for option in self.options:
            for child in option.nested:
                yield child
                yield from child.descendants()

    def to_json(self, base: str) -> dict[str, Any]:
        """Render the term as the service does (service-api.md §8 wire shape).

        Keys are ordered ``id, label, name, options, links`` as in the real capture;
        ``options`` is omitted for free-text terms and ``nested_fields`` for options
        with no nested terms.

        Args:
            base: The server's base URL (``http://127.0.0.1:PORT``).

        Returns:
            The JSON object.
        """
        out: dict[str, Any] = {"id": self.id, "label": self.label, "name": self.name}
        if self.options:
            rendered = []
            for option in self.options:
                entry: dict[str, Any] = {"value": option.value}
                if option.nested:
                    entry["nested_fields"] = [t.to_json(base) for t in option.nested]
                rendered.append(entry)
            out["options"] = rendered
        out["links"] = links_array(f"{base}/v1/terms/{self.id}")
        return out


@attrs.define(eq=False)
class Template:
    """One template version of a contract type.

    Args:
        id: The template id (small, like the real 149).
        version: The version string (``"1"``, ``"2"`` …).
        contract_type_id: The contract type it is a version of.
        terms: The top-level terms, in display order.
    """

    id: int
    version: str
    contract_type_id: int
    terms: tuple[Term, ...]
    by_id: dict[int, Term] = attrs.field(init=False)
    by_name: dict[str, Term] = attrs.field(init=False)
    order: dict[int, int] = attrs.field(init=False)
    _rendered: dict[str, bytes] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        every = list(self.walk())
        self.by_id = {t.id: t for t in every}
        self.by_name = {t.name: t for t in every}
        self.order = {t.id: i for i, t in enumerate(every)}

    def walk(self) -> Iterator[Term]:
        """Iterate over every term of the template, depth first in display order.

        Yields:
            Each term, parents before their nested terms.
        """
        for term in self.terms:
            yield term
            yield from term.descendants()

    def terms_json(self, base: str) -> bytes:
        """Return the encoded ``GET /v1/templates/{id}/terms`` body, cached per base URL.

        Args:
            base: The server's base URL.

        Returns:
            The JSON array, encoded.
        """
        cached = self._rendered.get(base)
        if cached is None:
            cached = dumps([t.to_json(base) for t in self.terms])
            # A handful of base URLs at most (one per host name a client uses).
            if len(self._rendered) < 16:
                self._rendered[base] = cached
        return cached


@attrs.frozen(eq=False)
class ContractType:
    """A contract type.

    Args:
        id: The 16-digit id, like the real ``6690589634461711``.
        name: The display name.
        slug: A short machine name used in ``about_url``.
        about_html: A short HTML description.
        template_ids: Its template versions, newest first.
        team_ids: None for a public type (available in every team); otherwise the only
            teams that can create it (§7: a team's list is "the types that can be created
            in that team").
    """

    id: int
    name: str
    slug: str
    about_html: str
    template_ids: tuple[int, ...]
    team_ids: frozenset[int] | None

    def available_in(self, team_id: int) -> bool:
        """Tell whether contracts of this type can be created in a team.

        Args:
            team_id: The team.

        Returns:
            True for public types and for private types granted to the team.
        """
        return self.team_ids is None or team_id in self.team_ids

    def to_json(self, href: str) -> dict[str, Any]:
        """Render the type with the array-style ``links`` (service-api.md §5, §7).

        Args:
            href: The absolute self URL.

        Returns:
            ``{id, name, about_html, about_url, links}``.
        """
        return {
            "id": self.id,
            "name": self.name,
            "about_html": self.about_html,
            "about_url": f"https://example.com/contract-types/{self.slug}",
            "links": links_array(href),
        }


@attrs.define(eq=False)
class Catalog:
    """Every contract type, template and term of one seed.

    Args:
        types: The contract types, in listing order.
        templates: The templates by id.
        identity: The identity form of every template, by template id (``_identity.py``).
    """

    types: tuple[ContractType, ...]
    templates: dict[int, Template]
    identity: dict[int, IdentityForm] = attrs.field(factory=dict)
    types_by_id: dict[int, ContractType] = attrs.field(init=False)
    terms: dict[int, Term] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.types_by_id = {t.id: t for t in self.types}
        self.terms = {}
        for template in self.templates.values():
            self.terms.update(template.by_id)

    def types_for_team(self, team_id: int) -> list[ContractType]:
        """List the types that can be created in a team.

        Args:
            team_id: The team.

        Returns:
            Public types plus the team's private ones, in listing order.
        """
        return [t for t in self.types if t.available_in(team_id)]


class TermIds:
    """Allocates term ids sequentially so that they are unique across templates.

    Args:
        start: The first id to hand out.
    """

    def __init__(self, start: int) -> None:
        self._next = start

    def build(self, template_id: int, defs: tuple[TermDef, ...]) -> tuple[Term, ...]:
        """Turn a seed-time term tree into :class:`Term` objects with fresh ids.

        Args:
            template_id: The template the terms belong to.
            defs: The top-level term descriptions.

        Returns:
            The top-level terms.

        Raises:
            ValueError: when a term name repeats within the template (seed data bug).
        """
        names: set[str] = set()
        return tuple(self._term(template_id, d, None, None, names) for d in defs)

    def _term(
        self,
        template_id: int,
        definition: TermDef,
        parent_id: int | None,
        parent_option: str | None,
        names: set[str],
    ) -> Term:
        if definition.name in names:
            raise ValueError(f"duplicate term name {definition.name} in template {template_id}")
        names.add(definition.name)
        term_id = self._next
        self._next += 1
        options = tuple(
            Option(
                o.value,
                tuple(self._term(template_id, n, term_id, o.value, names) for n in o.nested),
            )
            for o in definition.options
        )
        return Term(
            term_id,
            definition.name,
            definition.label,
            options,
            template_id,
            parent_id,
            parent_option,
        )
