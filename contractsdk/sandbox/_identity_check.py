"""Checks of a party's request: roles, side, and identity values against the form.

The emulator's own code, independent of the SDK's validation; the rules are in
``_identity.py``'s docstring. Every problem is collected, so that a 400 names them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ._identity import (
    EMAIL_RE,
    MAX_VALUE_LENGTH,
    ROLES,
    IdentityField,
    IdentityForm,
)
from ._wire import is_int, json_type

# --- request checks ----------------------------------------------------------------------


def check_roles(raw: object, where: str, problems: list[str]) -> list[str] | None:
    """Check a roles array: known values, no repeats, at most 2, ``collaborator`` + one.

    The pair rule is documented (COLLABROLES: at most two roles, only ``collaborator`` and
    one other; Party + Signatory is refused).

    Args:
        raw: The decoded member.
        where: Its wire name, for messages.
        problems: Where to add problems.

    Returns:
        The roles, or None when invalid.
    """
    if not isinstance(raw, list):
        problems.append(f"{where} must be an array of roles, got {json_type(raw)}")
        return None
    if not raw:
        problems.append(f"{where} must name at least one role")
        return None
    roles: list[str] = []
    ok = True
    for index, role in enumerate(raw):
        if not isinstance(role, str) or role not in ROLES:
            shown = repr(role[:40]) if isinstance(role, str) else json_type(role)
            hint = ' (the wire value is "supp_sig")' if role == "support_sig" else ""
            problems.append(
                f"{where}[{index}]: {shown} is not a role; expected one of "
                + ", ".join(ROLES)
                + hint
            )
            ok = False
        elif role in roles:
            problems.append(f'{where}[{index}]: role "{role}" is given twice')
            ok = False
        else:
            roles.append(role)
    if ok and len(roles) > 2:
        problems.append(f"{where}: at most 2 roles, got {len(roles)}")
        ok = False
    elif ok and len(roles) == 2 and "collaborator" not in roles:
        problems.append(
            f'{where}: two roles must be "collaborator" and one other, got '
            f'"{roles[0]}" and "{roles[1]}"'
        )
        ok = False
    return roles if ok else None


def check_side(
    raw: object, where: str, allowed: tuple[str, ...], problems: list[str]
) -> str | None:
    """Check a side value.

    Args:
        raw: The decoded member.
        where: Its wire name.
        allowed: The accepted values.
        problems: Where to add problems.

    Returns:
        The side, or None when invalid.
    """
    if isinstance(raw, str) and raw in allowed:
        return raw
    shown = repr(raw[:40]) if isinstance(raw, str) else json_type(raw)
    problems.append(f"{where}: {shown} is not a side; expected one of " + ", ".join(allowed))
    return None


def _check_value(field: IdentityField, value: str, where: str, problems: list[str]) -> bool:
    if len(value) > MAX_VALUE_LENGTH:
        problems.append(f'{where}: value of "{field.label}" is over {MAX_VALUE_LENGTH} characters')
        return False
    if field.options and value not in field.option_names:
        problems.append(
            f'{where}: "{value[:80]}" is not an option of "{field.label}" (id {field.id}); '
            "expected one of " + ", ".join(f'"{n}"' for n in field.option_names)
        )
        return False
    if field.validation_type == "EMAIL" and not EMAIL_RE.fullmatch(value):
        problems.append(
            f'{where}: "{value[:80]}" is not a valid email address for "{field.label}" '
            f"(id {field.id}, validationType EMAIL)"
        )
        return False
    return True


class ValueChecker:
    """Validates identity values against a form and merges them into a copy.

    Args:
        form: The template's form.
        visible: The field ids the collaborator's roles and side may fill in.
        values: The current values (copied; the original is never changed).
    """

    def __init__(self, form: IdentityForm, visible: set[int], values: dict[int, str]) -> None:
        self.form = form
        self.visible = visible
        self.values = dict(values)
        self.problems: list[str] = []
        self._given: dict[int, str] = {}

    def _lookup(self, raw_id: int, where: str) -> IdentityField | None:
        field = self.form.by_id.get(raw_id)
        if field is None:
            self.problems.append(
                f"{where}: unknown identity field id {raw_id} in template {self.form.template_id}"
            )
            return None
        if field.id not in self.visible:
            self.problems.append(
                f'{where}: identity field {raw_id} ("{field.label}", side {field.side}) is not '
                "one this collaborator's roles and side fill in"
            )
            return None
        if field.id in self._given:
            self.problems.append(f"{where}: identity field {raw_id} is given more than once")
            return None
        return field

    def _set(self, field: IdentityField, value: object, where: str) -> None:
        if value is not None and not isinstance(value, str):
            self.problems.append(f"{where}.value must be a string, got {json_type(value)}")
            return
        text = value or ""
        if text and not _check_value(field, text, where, self.problems):
            return
        self._given[field.id] = where
        if text:
            self.values[field.id] = text
        else:
            self.values.pop(field.id, None)

    def apply_tree(self, raw: object, where: str = "identityFields") -> None:
        """Apply the create body's ``identityFields``: ``[{id, value, nestedFields?}]``.

        Args:
            raw: The decoded member.
            where: Its wire name.
        """
        self._tree(raw, None, where)
        self.settle()

    def _objects(self, raw: object, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The objects of a JSON array, each with its place; a problem for anything else."""
        if not isinstance(raw, list):
            self.problems.append(f"{where} must be an array, got {json_type(raw)}")
            return
        for index, item in enumerate(raw):
            at = f"{where}[{index}]"
            if isinstance(item, dict):
                yield at, item
            else:
                self.problems.append(f"{at} must be an object, got {json_type(item)}")

    def _tree(self, raw: object, parent: IdentityField | None, where: str) -> None:
        for at, item in self._objects(raw, where):
            if "nested_fields" in item:
                # The collaborator DTO is camelCase (endpoints.md M19); Jackson would drop
                # the snake key and the nested values with it.
                self.problems.append(
                    f'{at}: unknown key "nested_fields"; the wire name is "nestedFields"'
                )
                continue
            raw_id = item.get("id")
            if not is_int(raw_id):
                self.problems.append(f"{at}.id must be an integer, got {json_type(raw_id)}")
                continue
            if "value" not in item:
                self.problems.append(f"{at}.value is required")
                continue
            field = self._lookup(raw_id, at)
            if field is None:
                continue
            if field.parent_id != (parent.id if parent is not None else None):
                if field.parent_id is None:
                    self.problems.append(
                        f'{at}: "{field.label}" (id {field.id}) is a top-level identity field; '
                        "send it in identityFields"
                    )
                else:
                    self.problems.append(
                        f'{at}: "{field.label}" (id {field.id}) is nested under field '
                        f'{field.parent_id} (option "{field.parent_option}"); send it inside '
                        "that field's nestedFields"
                    )
                continue
            self._set(field, item["value"], at)
            nested = item.get("nestedFields")
            if nested is None:
                continue
            if not field.options:
                if nested != []:
                    self.problems.append(
                        f'{at}: "{field.label}" has no options, so no nestedFields'
                    )
                continue
            self._tree(nested, field, f"{at}.nestedFields")

    def apply_flat(self, raw: object, where: str = "fields") -> None:
        """Apply the PATCH body's ``fields``: ``[{id: "<digits>", value}]`` (ids are strings).

        Args:
            raw: The decoded member.
            where: Its wire name.
        """
        if raw == []:
            self.problems.append(f"{where} must hold at least one field")
            return
        for at, item in self._objects(raw, where):
            raw_id = item.get("id")
            if not isinstance(raw_id, str):
                # IdentityFieldsCollaboratorRoleRequestDTO.id is a string (endpoints.md §2).
                self.problems.append(
                    f'{at}.id must be a string such as "2117", got {json_type(raw_id)}'
                )
                continue
            if not re.fullmatch(r"[0-9]{1,18}", raw_id):
                self.problems.append(f'{at}.id "{raw_id[:40]}" is not a field id')
                continue
            if "value" not in item:
                self.problems.append(f"{at}.value is required")
                continue
            field = self._lookup(int(raw_id), at)
            if field is not None:
                self._set(field, item["value"], at)
        self.settle()

    def settle(self) -> None:
        """Drop or refuse nested values whose option is not chosen; require required ones."""
        for field in self.form.by_id.values():
            if field.parent_id is None or field.id not in self.values:
                continue
            chosen = self.values.get(field.parent_id)
            if chosen == field.parent_option:
                continue
            if field.id in self._given:
                parent = self.form.by_id[field.parent_id]
                now = f'is "{chosen}"' if chosen else "has no value"
                self.problems.append(
                    f'{self._given[field.id]}: "{field.label}" (id {field.id}) applies only when '
                    f'"{parent.label}" is "{field.parent_option}", but it {now}'
                )
            else:
                # The option changed: the answers under the old one go.
                del self.values[field.id]
        for field in self.form.by_id.values():
            if field.parent_id is not None or field.id not in self.visible:
                continue
            chosen = self.values.get(field.id)
            for name, children in field.options:
                if name != chosen:
                    continue
                for child in children:
                    if child.required and not self.values.get(child.id):
                        self.problems.append(
                            f'"{child.label}" (id {child.id}) is required when '
                            f'"{field.label}" is "{name}"'
                        )
