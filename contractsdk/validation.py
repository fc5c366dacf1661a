"""The term tree of a template version and the exclusive-option validator.

(Interface skeleton: the implementation lands in the validation work.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import attrs

from .models._models import Term

__all__ = ["TermProblem", "TermSet", "TermValue"]

TermValue = Any

ProblemKind = Literal[
    "unknown_term", "not_an_option", "exclusive_options", "inapplicable", "missing", "bad_value"
]


@attrs.frozen(kw_only=True)
class TermProblem:
    """One problem with contract values.

    Attributes:
        kind: What is wrong.
        path: Where, e.g. ``contract_rentFrequency=month › contract_breakClause``.
        term: The term name (or the key as given, for an unknown term).
        message: A sentence saying what is wrong.
        suggestion: A close term name or option value, when there is one.
    """

    kind: ProblemKind
    path: str
    term: str
    message: str
    suggestion: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class TermSet(Sequence[Term]):
    """The terms of one template version, as a tree."""

    def __init__(self, terms: Iterable[Term], *, template_id: int | None = None) -> None:
        self._terms = tuple(terms)
        self.template_id = template_id

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

    def validate(
        self, values: Mapping[str | int, TermValue], *, require_all: bool = False
    ) -> dict[str, str]:
        """Check values against the terms (skeleton)."""
        raise NotImplementedError

    def build_fields(
        self, values: Mapping[str | int, TermValue], *, require_all: bool = False
    ) -> list[dict[str, Any]]:
        """Build the nested ``fields`` payload (skeleton)."""
        raise NotImplementedError
