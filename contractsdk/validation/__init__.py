"""The term tree of a template version and the exclusive-option validator.

A template version's terms form a tree (reference/service-api.md §8): a term with
``options`` is a single choice, and each option may carry nested terms that apply only while
that option is the chosen one. Users give values as a *flat* mapping
``{term name or id: value}``; :class:`TermSet` checks them against the tree, reports every
problem at once (:class:`~contractsdk.TermValidationError`), and builds the *nested*
``fields`` payload the service expects (§7).

Where each part lives:

* ``_tree``: the places of the tree, their indexes and the one key lookup (:class:`KeyIndex`,
  shared with identity fields);
* ``_rules``: the validator (:func:`check`) and its problems' messages;
* ``_payload``: :class:`CheckedValues`, the nested ``fields`` payload and back;
* ``_render``: the text tree for the terminal (:meth:`TermSet.tree`);
* ``_termset``: :class:`TermSet`, which ties them together.

Everything here is pure: no I/O, no clock, no event loop.
"""

from __future__ import annotations

from contractsdk.validation._payload import (
    CheckedValues,
    TermValue,
    TermValues,
    unchecked_fields,
    values_from_fields,
)
from contractsdk.validation._rules import ProblemKind, TermProblem
from contractsdk.validation._termset import TermSet
from contractsdk.validation._tree import NAMELESS, PATH_SEPARATOR

__all__ = [
    "NAMELESS",
    "PATH_SEPARATOR",
    "CheckedValues",
    "ProblemKind",
    "TermProblem",
    "TermSet",
    "TermValue",
    "TermValues",
    "unchecked_fields",
    "values_from_fields",
]
