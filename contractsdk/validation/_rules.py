"""The rules of a term tree: the exclusive-option validator and its problems' messages.

The rule (reference/service-api.md §8): a term with options takes exactly one of its option
values; the nested terms of an option apply only while that option is chosen; values under
two options of one term are refused. :func:`check` applies it to flat values and reports
every problem at once (:class:`~contractsdk.TermValidationError`). The message helpers at
the end (:func:`closest`, :func:`did_you_mean`, :func:`list_options`,
:func:`missing_message`) serve identity fields too.

``check`` costs O(number of values + number of applicable terms); the work that only a wrong
value needs (suggestions, explanations) runs only when something is wrong. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from contractsdk._exceptions import ConfigurationError, TermValidationError
from contractsdk._values import UnsendableValueError, to_wire_value
from contractsdk.validation._tree import NAMELESS, TermPlace, TermTree, fold, loose

if TYPE_CHECKING:
    from contractsdk.models._models import ContractField

__all__ = [
    "ProblemKind",
    "TermProblem",
    "check",
    "check_mapping",
    "closest",
    "did_you_mean",
    "list_options",
    "missing_message",
]

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


# Every real term name carries this prefix (service-api.md §8 "Facts"); users often drop it.
_NAME_PREFIX = "contract_"
# How many option values a message lists before it abbreviates.
_MAX_LISTED_OPTIONS = 10
# How many "did you mean" answers for unknown names a tree remembers.
_MAX_REMEMBERED_SUGGESTIONS = 1024


def check(
    tree: TermTree,
    values: Mapping[Any, object],
    require_all: bool,
    date_format: str | None,
    datetime_format: str | None,
    stored: Sequence[ContractField] = (),
) -> tuple[dict[str, str], list[tuple[TermPlace, str]]]:
    """Check flat values against a term tree (see :meth:`TermSet.validate` for the rules).

    ``stored``: the values a contract holds already, for an update. A term the values leave
    out keeps its stored value, where that still applies under the options chosen (the
    emulator drops the answers under an option that changes, as the service is inferred
    to, service-api.md §7): the values are checked with
    them, and a nested term may be given without its ancestors. Stored values that no
    longer apply are left out, never reported.

    Returns:
        ``{term name: value}`` for the terms that apply, in template order, and the same as
        ``(place, value)`` depth-first, parents before their nested terms.

    Raises:
        ConfigurationError: ``values`` is not a mapping.
        TermValidationError: Anything is wrong; every problem is listed, in tree order.
    """
    if type(values) is not dict:  # a dict, almost always: nothing more to check
        check_mapping(values)
    # This runs once per row of a bulk job: plain dicts and locals, no per-value objects.
    problems: list[tuple[int, TermProblem]] = []  # (sort key, problem)
    unplaced = len(tree.places)  # sort key base: unknown keys go last, in given order
    given: dict[str, str] = {}  # term name → value as the string to send
    # Names given only by id: their value belongs only to the places with those ids (a
    # name nested under two options may have another id in each).
    by_id_only: dict[str, set[int]] = {}
    # Names whose value was refused (no follow-on noise), or that no value can reach.
    unusable: set[str] = {NAMELESS} if tree.nameless else set()
    resolve = tree.keys.resolve

    # 1. Resolve keys and convert values: O(number of values).
    for key, raw in values.items():
        places, term_id = resolve(key)
        if places is None:
            problems.append((unplaced + len(problems), _unknown(tree, key, term_id)))
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
            problems.append((place.index, _duplicate(tree, place, values, first, text, key)))
        if term_id is None:
            by_id_only.pop(name, None)
        elif name in by_id_only:
            by_id_only[name].add(term_id)

    # 2. Walk the applicable tree top-down: O(number of applicable terms).
    result: dict[str, str] = {}
    applied: list[tuple[TermPlace, str]] = []
    rejected: dict[str, TermPlace] = {}  # applicable, but the value is not an option
    kept = _stored_values(stored) if stored else None
    stack = list(tree.top_reversed)
    pop, push = stack.pop, stack.extend
    while stack:
        place = pop()
        name = place.name
        value = given.get(name)
        if value is None or (
            by_id_only and name in by_id_only and place.id not in by_id_only[name]
        ):
            value = None if kept is None else _stored_value(tree, kept, place)
            if place.pushed is not None and value is not None and value not in place.pushed:
                value = None  # a stored option the template no longer has: no choice made
            if value is None:
                if require_all and name not in unusable:
                    problems.append((place.index, _missing(place)))
                continue
        if place.pushed is not None:
            nested = place.pushed.get(value)
            if nested is None:
                rejected.setdefault(name, place)
                problems.append((place.index, _not_an_option(tree, place, value)))
                continue
            push(nested)  # only the chosen option's nested terms apply (§8)
        elif require_all and not value.strip():
            problems.append((place.index, _missing(place, empty=True)))
        result[name] = value
        applied.append((place, value))

    # 3. Values the walk did not reach: inapplicable, or under exclusive options. Only a
    #    wrong input gets here, so this part may be slower.
    if len(result) < len(given) or kept:
        leftovers = [name for name in given if name not in result and name not in rejected]
        if leftovers:
            resolved = dict(rejected)
            for place, _value in applied:
                if place.name in given:  # not a stored value: the caller did not give it
                    resolved.setdefault(place.name, place)
            # With stored values, what an ancestor holds may be stored, not given.
            chosen = {**_first_values(kept), **result, **given} if kept else given
            problems.extend(
                _explain_leftovers(tree, leftovers, chosen, by_id_only, result, resolved)
            )

    if problems:
        problems.sort(key=lambda item: item[0])
        raise TermValidationError([problem for _, problem in problems])
    return result, applied


def _stored_values(stored: Sequence[ContractField]) -> dict[str, list[tuple[int | None, str]]]:
    """``{name: [(id, value), ...]}`` of the values a contract holds."""
    kept: dict[str, list[tuple[int | None, str]]] = {}
    for field in stored:
        if field.name is not None and field.value:
            kept.setdefault(field.name, []).append((field.id, field.value))
    return kept


def _stored_value(
    tree: TermTree, kept: Mapping[str, list[tuple[int | None, str]]], place: TermPlace
) -> str | None:
    """The stored value of ``place``, found by its name.

    The id tells apart a name that stands at several places of the tree. Elsewhere it is
    not needed, and not relied on: the service's documentation does not say that a stored
    field's id is its term's (a term sent without one has none).
    """
    found = kept.get(place.name)
    if not found:
        return None
    for stored_id, value in found:
        if stored_id is not None and stored_id == place.id:
            return value
    if len(tree.keys.by_name[place.name]) == 1:
        return found[0][1]
    return None  # a name at several places, and no id to say which: no guess


def _first_values(kept: Mapping[str, list[tuple[int | None, str]]]) -> dict[str, str]:
    """A stored value per name, to say what an ancestor holds in a message."""
    return {name: found[0][1] for name, found in kept.items()}


def check_mapping(values: object, what: str = "values") -> None:
    """Refuse values that are not a mapping (pairs in a list would each be a key).

    Raises:
        ConfigurationError: ``values`` is not a :class:`~collections.abc.Mapping`.
    """
    if not isinstance(values, Mapping):
        raise ConfigurationError(
            f"{what} must be a mapping {{term name or id: value}}, not {type(values).__name__}"
        )


def _explain_leftovers(
    tree: TermTree,
    leftovers: list[str],
    given: Mapping[str, str],
    by_id_only: Mapping[str, set[int]],
    result: Mapping[str, str],
    resolved: dict[str, TermPlace],
) -> list[tuple[int, TermProblem]]:
    problems: list[tuple[int, TermProblem]] = []
    # For each leftover: its most nearly applicable place and where its chain breaks.
    breaks: dict[str, tuple[TermPlace, int]] = {}
    for name in leftovers:
        best: tuple[TermPlace, int] | None = None
        for place in tree.keys.by_name[name]:
            if not place.conditions or not _fits(place, by_id_only):
                continue
            depth = _break_depth(place, result)
            if best is None or depth > best[1]:
                best = (place, depth)
        if best is None:
            # Only a malformed tree (one id under two names) gets here; never drop a
            # value silently.
            place = tree.keys.by_name[name][0]
            message = "does not apply with the options chosen"
            problems.append((place.index, _problem("inapplicable", place, message)))
            continue
        breaks[name] = best
        resolved[name] = best[0]

    # Exclusive options: for each choice term, which of its options have values given
    # for terms under them (at any depth). Two or more is the exclusive-option rule
    # broken (service-api.md §8 "Exclusive"); one problem per such term says so.
    under: dict[TermPlace, dict[str, list[str]]] = {}
    for name, place in resolved.items():
        for ancestor, option in place.conditions:
            under.setdefault(ancestor, {}).setdefault(option, []).append(name)
    exclusive: set[TermPlace] = set()
    for ancestor, by_option in under.items():
        if len(by_option) > 1:
            exclusive.add(ancestor)
            problems.append((ancestor.index, _exclusive(tree, ancestor, by_option, result, given)))

    for name in leftovers:
        if name not in breaks:
            continue
        place, depth = breaks[name]
        value = given[name]
        # An option value that is wrong is worth saying even where the term is
        # inapplicable: the user has to fix both.
        if place.option_set and value not in place.option_set:
            problems.append((place.index, _not_an_option(tree, place, value)))
        if place.conditions[depth][0] in exclusive:
            continue  # the exclusive_options problem already explains this value
        problems.append((place.index, _inapplicable(tree, place, depth, by_id_only, result, given)))
    return problems


# -- Problems ---------------------------------------------------------------------------


def _unknown(tree: TermTree, key: object, key_id: int | None) -> TermProblem:
    """Say why a key names no term; ``key_id`` is the id it gives, if it is one."""
    shown = str(key) if isinstance(key, str | int) else repr(key)
    if key_id is not None:
        message = (
            f"the service sent the term with the id {key_id} without a name, "
            "so it cannot be given a value"
            if key_id in tree.nameless_ids
            else f"no term of this template has the id {key}"
        )
        return TermProblem(kind="unknown_term", path=shown, term=shown, message=message)
    if isinstance(key, str):
        labelled = tree.label_names.get(fold(key))
        if labelled is not None:
            message = f"unknown term {key!r}: that is the label of {labelled}; give its name"
            return TermProblem(
                kind="unknown_term", path=key, term=key, message=message, suggestion=labelled
            )
        suggestion = _suggest_name(tree, key)
        message = did_you_mean(f"unknown term {key!r}", suggestion)
        return TermProblem(
            kind="unknown_term", path=key, term=key, message=message, suggestion=suggestion
        )
    return TermProblem(
        kind="unknown_term",
        path=shown,
        term=shown,
        message=f"a key must be a term name (str) or id (int), not {type(key).__name__}",
    )


def _suggest_name(tree: TermTree, key: str) -> str | None:
    if key in tree.suggestions:
        return tree.suggestions[key]
    suggestion = _find_close_name(tree, key)
    if len(tree.suggestions) < _MAX_REMEMBERED_SUGGESTIONS:
        tree.suggestions[key] = suggestion
    return suggestion


def _find_close_name(tree: TermTree, key: str) -> str | None:
    # Cheap exact-ish matches first: case, underscores, a missing "contract_" prefix.
    hit = tree.folded_names.get(key.casefold()) or tree.loose_names.get(loose(key))
    if hit is not None:
        return hit
    candidates = [key.casefold()]
    if not key.startswith(_NAME_PREFIX):
        candidates.append((_NAME_PREFIX + key).casefold())
    for candidate in candidates:
        close = difflib.get_close_matches(candidate, tree.folded_names, n=1, cutoff=0.75)
        if close:
            return tree.folded_names[close[0]]
    return None


def _not_an_option(tree: TermTree, place: TermPlace, value: str) -> TermProblem:
    suggestion = closest(value, place.lower_options, _strip_fold)
    message = did_you_mean(f"{value!r} is not an option", suggestion)
    message += f" (options: {list_options(place.option_values)})"
    return _problem("not_an_option", place, message, suggestion)


def _missing(place: TermPlace, *, empty: bool = False) -> TermProblem:
    return _problem("missing", place, missing_message(place.option_values, empty=empty))


def _inapplicable(
    tree: TermTree,
    best: TermPlace,
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
        for place in tree.keys.by_name[best.name]
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
    tree: TermTree,
    place: TermPlace,
    values: Mapping[Any, object],
    first: str,
    text: str,
    key: object,
) -> TermProblem:
    first_key = next(
        (
            k
            for k, v in values.items()
            if v is not None and place.name in {p.name for p in tree.keys.lookup(k)}
        ),
        None,
    )
    message = (
        f"given twice with different values: {first!r} (as {first_key!r}) and {text!r} (as {key!r})"
    )
    return _problem("duplicate", place, message)


def _exclusive(
    tree: TermTree,
    place: TermPlace,
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


def _problem(
    kind: ProblemKind, place: TermPlace, message: str, suggestion: str | None = None
) -> TermProblem:
    return TermProblem(
        kind=kind, path=place.path, term=place.name, message=message, suggestion=suggestion
    )


def _fits(place: TermPlace, by_id_only: Mapping[str, set[int]]) -> bool:
    """Whether a value given for ``place``'s name may go to this place (see ``by_id_only``)."""
    ids = by_id_only.get(place.name)
    return ids is None or place.id in ids


def _state(place: TermPlace, given: Mapping[str, str]) -> str:
    """Describe what was given for a choice term, for an ``inapplicable`` message."""
    value = given.get(place.name)
    if value is None:
        return f"{place.name} has no value"
    if value not in place.option_set:
        return f"{place.name} is {value!r}, which is not an option"
    return f"{place.name} is {value!r}"


def _break_depth(place: TermPlace, result: Mapping[str, str]) -> int:
    """Return the index of the first condition of ``place`` that the chosen options break."""
    for depth, (ancestor, option) in enumerate(place.conditions):
        if result.get(ancestor.name) != option:
            return depth
    # Every condition holds only for an applicable place, which never gets here; point at the
    # nearest ancestor so the caller still has something true to say.
    return max(len(place.conditions) - 1, 0)


def _strip_fold(text: str) -> str:
    return text.strip().casefold()


# -- Messages shared with identity fields -----------------------------------------------------


def closest(text: str, choices: Mapping[str, str], fold: Callable[[str], str]) -> str | None:
    """Return the choice a mistyped text most likely meant, or None.

    Args:
        text: What was given.
        choices: ``{folded choice: choice}``, folded by ``fold``.
        fold: How texts are folded before they are compared.

    Returns:
        The choice whose folded form equals the text's, else the closest by
        :func:`difflib.get_close_matches` (cutoff 0.6), else None.
    """
    folded = fold(text)
    hit = choices.get(folded)
    if hit is None and folded:
        close = difflib.get_close_matches(folded, choices, n=1, cutoff=0.6)
        hit = choices[close[0]] if close else None
    return hit


def did_you_mean(message: str, suggestion: str | None) -> str:
    """Return the message with ``; did you mean …?`` when there is a suggestion."""
    return message if suggestion is None else f"{message}; did you mean {suggestion!r}?"


def list_options(options: Sequence[str], limit: int | None = _MAX_LISTED_OPTIONS) -> str:
    """List option values for a message, the first ``limit`` of them (None: all)."""
    if limit is None or len(options) <= limit:
        return ", ".join(options)
    return f"{', '.join(options[:limit])} and {len(options) - limit} more"


def missing_message(
    options: Sequence[str], *, empty: bool = False, limit: int | None = _MAX_LISTED_OPTIONS
) -> str:
    """Say that a value is missing (or empty) and, for a choice, what to choose from."""
    message = "the value is empty" if empty else "no value given"
    if options:
        message += f"; choose one of: {list_options(options, limit)}"
    return message
