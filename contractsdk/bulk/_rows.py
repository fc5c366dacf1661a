"""From an input record to a row the journal can hold: columns, targets, keys, job id.

Everything here is pure (no I/O, no event loop), so the rules that decide what a row *is*
— its values, its key, the job it belongs to — are tested on their own.

* Columns map to term names: by default a column is the term of the same name;
  ``columns={"Name": "contract_name"}`` maps one, ``columns={"notes": None}`` ignores one.
* Target columns (``team_column``, ``contract_type_column``, ``template_column``) hold
  numeric ids per row and are never terms.
* The row key is ``ref:<value>`` of the key column when there is one, else
  ``sha:<hash>`` of the row's normalised content (its term values and targets), so the
  same row gets the same key on every run, wherever it sits in the file.
* The job id hashes what makes two runs the same job: the environment, the target, the
  creator, the column mapping, the key column and the match term; not the input file, so
  a file can be fixed and run again with its journal.
* The idempotency key of a row is derived from the job id, the journal's salt and the
  row key.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from contractsdk._exceptions import ConfigurationError, TermValidationError
from contractsdk.validation import TermSet

__all__ = [
    "ColumnMap",
    "MappedRow",
    "UnknownColumnsError",
    "content_digest",
    "idempotency_key",
    "job_id",
    "job_identity",
    "map_row",
    "parse_target_id",
    "row_key",
    "suggest_term",
]

_HASH_CHARS = 32


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _clean(value: Any) -> Any:
    """Return a cell's value, or None for a missing or blank one."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    return value


def _check_mapping(
    instance: ColumnMap, attribute: attrs.Attribute[Any], value: Mapping[object, object]
) -> None:
    for column, term in value.items():
        if not isinstance(column, str) or not column.strip():
            raise ConfigurationError(f"a column name must be a non-blank string, got {column!r}")
        if term is not None and (not isinstance(term, str) or not term.strip()):
            raise ConfigurationError(
                f"column {column!r} must map to a term name (or None to ignore it), got {term!r}"
            )
    targets = [str(term) for term in value.values() if term is not None]
    repeated = sorted({term for term in targets if targets.count(term) > 1})
    if repeated:
        raise ConfigurationError(
            f"several columns map to the same term: {', '.join(map(repr, repeated))}"
        )


@attrs.frozen(kw_only=True)
class ColumnMap:
    """How the input's columns become term values, a row key and per-row targets.

    Attributes:
        terms: ``{column: term name}`` for columns whose name is not their term's name;
            ``{column: None}`` ignores a column. Any other column is the term of its name.
        key_column: The column holding each row's own reference (its key); None keys rows
            by a hash of their content. It is also sent as a term when it names one.
        team_column: The column holding the team id of each row (None: the job's team).
        contract_type_column: The column holding the contract type id of each row (the
            newest template version of that type is used).
        template_column: The column holding the template version id of each row.
        party_columns: The columns the job's parties read (no term's).
    """

    terms: Mapping[str, str | None] = attrs.field(factory=dict, validator=_check_mapping)
    key_column: str | None = None
    team_column: str | None = None
    contract_type_column: str | None = None
    template_column: str | None = None
    party_columns: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        targets = [
            column
            for column in (self.team_column, self.contract_type_column, self.template_column)
            if column is not None
        ]
        specials = [*targets, *([self.key_column] if self.key_column else [])]
        if len(set(specials)) != len(specials):
            raise ConfigurationError(
                "the key, team, contract type and template columns must be different columns"
            )
        for column in targets:
            if self.terms.get(column) is not None:
                raise ConfigurationError(
                    f"column {column!r} holds a target id; it cannot also map to a term"
                )

    @property
    def target_columns(self) -> tuple[str, ...]:
        """The columns that hold per-row targets."""
        return tuple(
            column
            for column in (self.team_column, self.contract_type_column, self.template_column)
            if column is not None
        )

    def term_of(self, column: str, terms: TermSet | None = None) -> str | None:
        """Return the term a column gives a value to, or None if it gives none."""
        if column in self.target_columns or column in self.party_columns:
            return None
        if column in self.terms:
            return self.terms[column]
        if column == self.key_column and terms is not None and terms.find(column) is None:
            return None  # a pure reference column
        return column

    def identity(self) -> dict[str, Any]:
        """Return what of the mapping belongs to the job's identity."""
        return {
            "columns": dict(sorted(self.terms.items())),
            "key_column": self.key_column,
            "team_column": self.team_column,
            "contract_type_column": self.contract_type_column,
            "template_column": self.template_column,
        }

    def check_header(
        self,
        header: Sequence[str],
        terms: TermSet | None,
        *,
        match_term: str,
        where: str,
    ) -> None:
        """Refuse a header that cannot work, before any row is read.

        Args:
            header: The column names.
            terms: The job's terms when every row uses one template (else None: the
                columns are then checked row by row).
            match_term: The term that names each contract.
            where: The input, for messages.

        Raises:
            ConfigurationError: The header is one column holding the expected ones between
                semicolons or tabs (a file not separated by commas); a mapped, key or
                target column is missing; a column is not a term (each named, with the
                closest term); two columns give one term; no column gives the match term.
        """
        present = set(header)
        wanted = [
            *self.terms,
            *self.target_columns,
            *sorted(self.party_columns),
            *([self.key_column] if self.key_column else []),
        ]
        names = [t.name for _path, t in terms.walk() if t.name] if terms is not None else []
        _refuse_other_separator(header, {*wanted, match_term, *names}, where)
        missing = [column for column in wanted if column and column not in present]
        if missing:
            raise ConfigurationError(
                f"{where} has no column {', '.join(map(repr, missing))} (its columns: "
                f"{', '.join(header)})"
            )
        given: dict[str, str] = {}
        for column in header:
            term = self.term_of(column, terms)
            if term is None:
                continue
            if term in given:
                raise ConfigurationError(
                    f"{where}: columns {given[term]!r} and {column!r} both give term {term!r}"
                )
            given[term] = column
        if terms is not None:
            unknown = _unknown_terms(terms, list(given))
            # A column mapped to a term by name: the mapping is what is wrong, not the column.
            mapped = [term for term in unknown if self.terms.get(given[term]) == term]
            if mapped:
                problems = "; ".join(
                    f"{given[term]!r} is mapped to {term!r}, which is not a term"
                    + (f" (did you mean {hint!r}?)" if (hint := suggest_term(term, names)) else "")
                    for term in mapped
                )
                raise ConfigurationError(
                    f"{where}: {problems} of template {terms.template_id}; map each column "
                    "to one of the template's terms"
                )
            if unknown:
                raise UnknownColumnsError(
                    where=where,
                    template_id=terms.template_id,
                    suggestions={given[term]: suggest_term(given[term], names) for term in unknown},
                )
        if match_term not in given:
            raise ConfigurationError(
                f"{where}: no column gives {match_term!r}, the name that identifies each "
                "contract (bulk creation needs it to find a contract again after an "
                "unknown outcome); add the column, or map a column to it"
            )


#: What a CSV may be separated by instead of commas: Excel saves its "CSV" types with the
#: list separator of the computer's region, ';' in much of Europe; "Text" types use tabs.
_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _flag(separator: str) -> str:
    """A separator as ``--delimiter`` takes it on a shell's command line."""
    return "tab" if separator == "\t" else f"'{separator}'"


def _refuse_other_separator(header: Sequence[str], expected: set[str], where: str) -> None:
    """Refuse a header of one column that holds expected columns between other separators.

    Read with commas, such a file is one column, and was refused as missing the columns
    it has, or as having one column that is no term.
    """
    if len(header) != 1:
        return
    for separator, name in _SEPARATORS.items():
        columns = [part.strip() for part in header[0].split(separator)]
        if len(columns) > 1 and expected.intersection(columns):
            listed = ", ".join(map(repr, columns[:3])) + (", …" if len(columns) > 3 else "")
            raise ConfigurationError(
                f"{where} looks separated by {name} ({separator!r}), not commas: its header "
                f"is one column that holds {len(columns)} columns ({listed}). Save it "
                "comma-separated (Excel uses the list separator of the computer's region "
                "settings; LibreOffice and Google Sheets can save with commas), or read it "
                f"so: `contractsdk bulk create --delimiter {_flag(separator)}`, or "
                f"CsvSource(path, delimiter={separator!r}) from Python"
            )


class UnknownColumnsError(ConfigurationError):
    """Columns of the input are not terms of the template (nothing was read or sent).

    The message names the columns, and a term only when one is close; a command line or
    a UI can say how to map or ignore a column from the attributes, in its own words.

    Attributes:
        where: The input.
        template_id: The template whose terms were looked in.
        suggestions: ``{column: the closest term, or None}`` for each such column.
    """

    def __init__(
        self, *, where: str, template_id: int | None, suggestions: Mapping[str, str | None]
    ) -> None:
        self.where = where
        self.template_id = template_id
        self.suggestions = dict(suggestions)
        listed = "; ".join(
            f"{column!r}" + (f" (did you mean {hint!r}?)" if hint else "")
            for column, hint in self.suggestions.items()
        )
        count = len(self.suggestions)
        are = "column is not a term" if count == 1 else "columns are not terms"
        super().__init__(
            f"{where}: {count} {are} of template {template_id}: {listed}. "
            "Map each such column to a term, or ignore it"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild_unknown_columns, (self.where, self.template_id, self.suggestions)


def _rebuild_unknown_columns(
    where: str, template_id: int | None, suggestions: Mapping[str, str | None]
) -> UnknownColumnsError:
    return UnknownColumnsError(where=where, template_id=template_id, suggestions=suggestions)


#: How close a column's name must be to a term's (difflib's ratio, on names without case,
#: punctuation or the ``contract_`` prefix) to be suggested: a misspelling, not a neighbour
#: ("rentAmout" suggests contract_rentAmount; "reference" suggests nothing).
SUGGESTION_CUTOFF = 0.85


def _plain(name: str) -> str:
    return "".join(char for char in name.casefold() if char.isalnum())


def _closeness(column: str, term: str) -> float:
    """How alike two names are, with and without the ``contract`` prefix (the better)."""
    best = 0.0
    for left, right in ((column, term), (column.removeprefix("contract"), term[8:])):
        if term.startswith("contract") or left is column:
            best = max(best, difflib.SequenceMatcher(None, left, right).ratio())
    return best


def suggest_term(column: str, terms: Sequence[str]) -> str | None:
    """Return the term a column most likely means, or None when none is close enough."""
    plain = _plain(column)
    scored = [(_closeness(plain, _plain(term)), term) for term in terms]
    best = max(scored, default=(0.0, ""), key=lambda pair: pair[0])
    return best[1] if best[0] >= SUGGESTION_CUTOFF else None


def _unknown_terms(terms: TermSet, names: Sequence[str]) -> list[str]:
    """Return each name that is not a term."""
    try:
        terms.validate(dict.fromkeys(names))
    except TermValidationError as exc:
        return [problem.term for problem in exc.problems if problem.kind == "unknown_term"]
    return []


def parse_target_id(value: Any, column: str) -> tuple[int | None, str | None]:
    """Read a per-row target id; return ``(id, None)`` or ``(None, problem)``."""
    cleaned = _clean(value)
    if cleaned is None:
        return None, f"no value in the {column!r} column"
    if isinstance(cleaned, int) and not isinstance(cleaned, bool) and cleaned >= 0:
        return cleaned, None
    if isinstance(cleaned, str) and cleaned.isascii() and cleaned.isdigit():
        return int(cleaned), None
    return None, f"the {column!r} column must hold a numeric id, not {cleaned!r}"


@attrs.frozen(kw_only=True)
class MappedRow:
    """A record's term values, key value and problems, after the column mapping.

    Attributes:
        values: ``{term: value}`` without blanks.
        key_value: The key column's value, if there is a key column.
        problems: What is wrong with the record before validation.
    """

    values: dict[str, Any]
    key_value: str | None
    problems: tuple[str, ...] = ()


def map_row(data: Mapping[str, Any], columns: ColumnMap, terms: TermSet | None) -> MappedRow:
    """Apply the column mapping to one record."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    source: dict[str, str] = {}
    for column, raw in data.items():
        column_name = str(column)
        term = columns.term_of(column_name, terms)
        if term is None:
            continue
        value = _clean(raw)
        if value is None:
            continue
        if isinstance(value, bool | list | dict):
            problems.append(f"{column_name}: expected a text or number value, got {value!r}")
            continue
        if term in values:
            problems.append(f"columns {source[term]!r} and {column_name!r} both give {term!r}")
            continue
        values[term] = value
        source[term] = column_name
    key_value = None
    if columns.key_column is not None:
        raw_key = _clean(data.get(columns.key_column))
        if raw_key is None:
            problems.append(f"no value in the key column {columns.key_column!r}")
        else:
            key_value = str(raw_key)
    return MappedRow(values=values, key_value=key_value, problems=tuple(problems))


def content_digest(values: Mapping[str, Any], targets: Sequence[int | None] = ()) -> str:
    """Hash a row's normalised content: its term values (as text) and targets."""
    content = [sorted((str(term), str(value)) for term, value in values.items()), list(targets)]
    return _sha(json.dumps(content, ensure_ascii=False, separators=(",", ":")))[:_HASH_CHARS]


def row_key(key_value: str | None, digest: str) -> str:
    """Return a row's stable key: its reference when given, else its content hash."""
    return f"ref:{key_value}" if key_value is not None else f"sha:{digest}"


def job_identity(
    *,
    base_url: str,
    team_id: int | None,
    contract_type_id: int | None,
    template_id: int | None,
    created_by: int,
    columns: ColumnMap,
    match_term: str,
) -> dict[str, Any]:
    """Return what makes two runs the same job (the job id is its hash)."""
    return {
        "base_url": base_url,
        "team_id": team_id,
        "contract_type_id": contract_type_id,
        "template_id": template_id if template_id is not None else "latest",
        "created_by": created_by,
        "match_term": match_term,
        **columns.identity(),
    }


def job_id(identity: Mapping[str, Any]) -> str:
    """Return the job id of an identity: 16 hex digits."""
    return _sha(json.dumps(identity, sort_keys=True, separators=(",", ":")))[:16]


def idempotency_key(job: str, key: str, salt: str | None = None) -> str:
    """Return the Idempotency-Key of a row: the same for the same journal and row, every run.

    Args:
        job: The job id.
        key: The row's key.
        salt: The journal's own salt (None for a journal made before it had one: its keys
            stay those of the job and row alone).
    """
    hashed = _sha(key if salt is None else f"{salt}:{key}")
    return f"contractsdk-bulk-{job}-{hashed[:_HASH_CHARS]}"
