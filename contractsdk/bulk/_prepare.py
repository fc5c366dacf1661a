"""From an input record to a :class:`PreparedRow`: pure, given the row's resolved targets.

A run prepares a row in three steps: :func:`row_targets` reads its team, contract type and
template (the job's, or its own columns); the run resolves those (reads, remembered per
target); :func:`prepare_row` maps, keys and validates the row against its terms. The row is
validated here, once; the run sends the values this returns.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from contractsdk._exceptions import TermValidationError
from contractsdk.bulk._parties import RowParty, check_parties
from contractsdk.bulk._readers import SourceRow
from contractsdk.bulk._records import PreparedRow
from contractsdk.bulk._rows import content_digest, map_row, parse_target_id, row_key
from contractsdk.bulk._spec import JobSpec
from contractsdk.identity import IdentityFieldSet
from contractsdk.validation import TermSet
from contractsdk.validation._payload import CheckedValues

__all__ = ["RowTargets", "prepare_row", "row_targets"]


@attrs.frozen(kw_only=True)
class RowTargets:
    """A row's targets as read from the job and its columns (before any is resolved).

    Attributes:
        team_id: The team, if known.
        contract_type_id: The contract type, if known.
        template_id: The template version, if known.
        per_row: The ids read from the row's target columns (part of its content hash).
        problems: Target columns that do not hold an id.
    """

    team_id: int | None
    contract_type_id: int | None
    template_id: int | None
    per_row: tuple[int | None, ...] = ()
    problems: tuple[str, ...] = ()


def row_targets(source: SourceRow, spec: JobSpec) -> RowTargets:
    """Read a row's team, contract type and template: the job's, or its own columns."""
    found = {
        "team_id": spec.team_id,
        "contract_type_id": spec.contract_type_id,
        "template_id": spec.template_id,
    }
    per_row: list[int | None] = []
    problems: list[str] = []
    data = source.data or {}
    columns = spec.columns
    for name, column in (
        ("team_id", columns.team_column),
        ("contract_type_id", columns.contract_type_column),
        ("template_id", columns.template_column),
    ):
        if column is None:
            continue
        value, problem = parse_target_id(data.get(column), column)
        if problem:
            problems.append(problem)
        per_row.append(value)
        found[name] = value
    return RowTargets(**found, per_row=tuple(per_row), problems=tuple(problems))


def prepare_row(
    source: SourceRow,
    spec: JobSpec,
    targets: RowTargets,
    terms: TermSet | None,
    *,
    problems: tuple[str, ...] = (),
    field_sets: Mapping[str, IdentityFieldSet] | None = None,
) -> PreparedRow:
    """Map, key and validate one record (pure: its targets are resolved already).

    Args:
        source: The input record.
        spec: The job.
        targets: The row's targets; ``template_id`` resolved when it could be.
        terms: The terms of the row's template, or None when they could not be read.
        problems: Why the row's targets could not be resolved, if so.
        field_sets: Each party's identity fields for the row's template (by party name);
            None when the template is not known.
    """
    if source.data is None:
        digest = content_digest({"": source.raw})
        return PreparedRow(
            number=source.number,
            line=source.line,
            key=f"bad:{digest}",
            key_label="the row",
            digest=digest,
            name=None,
            team_id=spec.team_id,
            template_id=None,
            values=None,
            reasons=(source.problem or "the row could not be read",),
        )
    reasons = [*targets.problems, *problems]
    mapped = map_row(source.data, spec.columns, terms)
    reasons.extend(mapped.problems)
    digest = content_digest(mapped.values, targets.per_row)
    label = f"key {mapped.key_value!r}" if mapped.key_value is not None else "the row"
    values: dict[str, str] | None = None
    checked: CheckedValues | None = None
    if not reasons and terms is not None:
        try:
            checked = terms.check(mapped.values, require_all=spec.require_all)
            values = checked.by_name
        except TermValidationError as exc:
            reasons.extend(str(problem) for problem in exc.problems)
    parties: dict[str, RowParty] = {}
    if spec.parties and field_sets is not None:
        # Checked whatever the terms said: a row's problems are all reported at once.
        parties, party_problems = check_parties(source.data, spec.parties, field_sets)
        reasons.extend(party_problems)
    match_term = spec.match_term
    if values is not None:
        name: str | None = values.get(match_term)
        if not name:
            reasons.append(
                f"{match_term}: no value; every row needs one, unique within the job (it "
                "names the contract, and is how it is found again after an unknown outcome)"
            )
    else:
        raw = mapped.values.get(match_term)
        name = str(raw) if raw is not None else None
    return PreparedRow(
        number=source.number,
        line=source.line,
        key=row_key(mapped.key_value, digest),
        key_label=label,
        digest=digest,
        name=name,
        team_id=targets.team_id,
        template_id=targets.template_id,
        values=values if not reasons else None,
        reasons=tuple(reasons),
        checked=checked if not reasons else None,
        parties=parties if not reasons else {},
    )
