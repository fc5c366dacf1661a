"""The emulator's own check of contract values against a template's terms.

This is deliberately independent of the SDK's ``contractsdk.validation``: the emulator is
the service's stand-in, and a bug shared by both would hide itself (DESIGN.md).

Request shape (service-api.md §8 "Stored/request value shape"): a list of
``{id?, name?, value?, nested_fields?}``; an answer to a nested term goes inside its
parent's ``nested_fields`` and the parent's ``value`` is the chosen option. Rules:

- a field names a term of the template by ``id`` or ``name`` (both must agree);
- a nested term is answered inside its own parent's ``nested_fields`` (as every documented
  example does), never at the top level or under another term;
- an options term takes exactly one of its option values (§8 "Exclusive");
- nested answers apply only under the option that is chosen, and answers for nested terms
  of two different options of one term are refused (the ``exclusive-option`` rule);
- values are strings (§7: "All values are strings"); null or ``""`` clears an answer.

Applying a request to existing answers merges (PATCH, §7 [INFERRED]): a changed or
cleared option drops every answer nested below the term.
"""

from __future__ import annotations

from typing import Any

from ._catalog import Template, Term
from ._wire import is_int, json_type

_MAX_LISTED_OPTIONS = 8


def apply_fields(template: Template, answers: dict[int, str], fields: object) -> list[str]:
    """Validate request fields and merge them into a contract's answers.

    Args:
        template: The contract's template.
        answers: Term id → value; updated in place (pass a copy and keep it only when
            no problem is returned).
        fields: The decoded ``fields`` member of the request body.

    Returns:
        Every problem found, each naming its path and term; empty when all is valid.
    """
    problems: list[str] = []
    _apply_level(template, answers, fields, None, "fields", problems)
    return problems


def flatten(template: Template, answers: dict[int, str]) -> list[dict[str, Any]]:
    """Render stored answers as the contract JSON's flat ``fields`` list (§7 Contracts).

    Args:
        template: The contract's template.
        answers: The stored answers.

    Returns:
        ``[{id, name, value}]`` in the template's display order, non-empty values only.
    """
    order = template.order
    by_id = template.by_id
    return [
        {"id": tid, "name": by_id[tid].name, "value": value}
        for tid, value in sorted(answers.items(), key=lambda kv: order[kv[0]])
        if value
    ]


def _apply_level(
    template: Template,
    answers: dict[int, str],
    raw_list: object,
    parent: Term | None,
    path: str,
    problems: list[str],
) -> None:
    if not isinstance(raw_list, list):
        problems.append(f"{path} must be an array, got {json_type(raw_list)}")
        return
    resolved: list[tuple[str, dict[str, Any], Term]] = []
    seen: set[int] = set()
    for index, raw in enumerate(raw_list):
        where = f"{path}[{index}]"
        found = _resolve(template, raw, parent, where, problems)
        if found is None:
            continue
        field, term = found
        if term.id in seen:
            problems.append(f'{where}: term "{term.name}" is given more than once')
            continue
        seen.add(term.id)
        resolved.append((where, field, term))
    if parent is not None and resolved:
        owners = sorted({t.parent_option or "" for _, _, t in resolved})
        if len(owners) > 1:
            listed = " and ".join(f'"{o}"' for o in owners)
            problems.append(
                f'{path}: exclusive-option: term "{parent.name}" takes one option, '
                f"but nested answers were given for its options {listed}"
            )
            return
        chosen = answers.get(parent.id)
        if chosen != owners[0]:
            names = ", ".join(f'"{t.name}"' for _, _, t in resolved)
            now = f'is "{chosen}"' if chosen else "has no value"
            problems.append(
                f'{path}: {names} apply only when "{parent.name}" is '
                f'"{owners[0]}", but "{parent.name}" {now}'
            )
            return
    for where, raw, term in resolved:
        _apply_term(template, answers, raw, term, where, problems)


def _resolve(
    template: Template, raw: object, parent: Term | None, where: str, problems: list[str]
) -> tuple[dict[str, Any], Term] | None:
    if not isinstance(raw, dict):
        problems.append(f"{where} must be an object, got {json_type(raw)}")
        return None
    if "nestedFields" in raw:
        # Jackson would silently drop the camelCase key and with it the nested answers;
        # refusing it surfaces the bug (service-api.md §8 CONFLICT nestedFields).
        problems.append(f'{where}: unknown key "nestedFields"; the wire name is "nested_fields"')
        return None
    term_id, name = raw.get("id"), raw.get("name")
    if term_id is not None and not is_int(term_id):
        problems.append(f"{where}.id must be an integer, got {json_type(term_id)}")
        return None
    if name is not None and not isinstance(name, str):
        problems.append(f"{where}.name must be a string, got {json_type(name)}")
        return None
    if term_id is None and name is None:
        problems.append(f"{where}: a field needs an id or a name")
        return None
    term = template.by_id.get(term_id) if term_id is not None else template.by_name.get(name or "")
    if term is None:
        what = f"id {term_id}" if term_id is not None else f'"{name}"'
        problems.append(f"{where}: unknown term {what} in template {template.id}")
        return None
    if name is not None and term_id is not None and term.name != name:
        problems.append(f'{where}: term id {term_id} is "{term.name}", not "{name}"')
        return None
    expected = parent.id if parent is not None else None
    if term.parent_id != expected:
        if term.parent_id is None:
            problems.append(
                f'{where}: term "{term.name}" is a top-level term; send it in the top-level fields'
            )
        else:
            owner = template.by_id[term.parent_id]
            problems.append(
                f'{where}: term "{term.name}" is nested under "{owner.name}" '
                f'(option "{term.parent_option}"); send it inside that term\'s nested_fields'
            )
        return None
    return raw, term


def _apply_term(
    template: Template,
    answers: dict[int, str],
    raw: dict[str, Any],
    term: Term,
    where: str,
    problems: list[str],
) -> None:
    if "value" in raw:
        value = raw["value"]
        if value is not None and not isinstance(value, str):
            problems.append(
                f'{where}: value of term "{term.name}" must be a string, got {json_type(value)}'
            )
            return
        if value and term.options and value not in term.option_values:
            problems.append(
                f'{where}: "{value[:80]}" is not an option of term "{term.name}"; '
                f"expected one of {_listed(term.option_values)}"
            )
            return
        if answers.get(term.id) != (value or None) and term.options:
            # A changed or cleared option drops the answers nested under the old one.
            for nested in term.descendants():
                answers.pop(nested.id, None)
        if value:
            answers[term.id] = value
        else:
            answers.pop(term.id, None)
    nested_fields = raw.get("nested_fields")
    if nested_fields is None:
        return
    if not term.options:
        problems.append(f'{where}: term "{term.name}" has no options, so no nested_fields')
        return
    _apply_level(template, answers, nested_fields, term, f"{where}.nested_fields", problems)


def _listed(values: tuple[str, ...]) -> str:
    shown = ", ".join(f'"{v}"' for v in values[:_MAX_LISTED_OPTIONS])
    more = len(values) - _MAX_LISTED_OPTIONS
    return shown + (f" and {more} more" if more > 0 else "")
