"""Pure rules of a bulk row: column mapping, row keys, job ids, idempotency keys."""

from __future__ import annotations

import pytest

from contractsdk import ConfigurationError
from contractsdk.bulk._rows import (
    ColumnMap,
    UnknownColumnsError,
    content_digest,
    idempotency_key,
    job_id,
    job_identity,
    map_row,
    parse_target_id,
    row_key,
)
from tests._bulkkit import small_termset


def identity(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "base_url": "https://sandbox.legislate.tech/v1",
        "team_id": 70,
        "contract_type_id": 3,
        "template_id": None,
        "created_by": 7,
        "columns": ColumnMap(terms={"Name": "contract_name"}),
        "match_term": "contract_name",
    }
    base.update(changes)
    return job_identity(**base)  # type: ignore[arg-type]  # the test varies each field


def test_columns_map_to_terms_by_name_or_mapping() -> None:
    """Unmapped columns are their term; mapped ones rename; None ignores; blanks are absent."""
    columns = ColumnMap(terms={"Name": "contract_name", "notes": None})
    mapped = map_row(
        {"Name": " Flat 1 ", "notes": "call first", "contract_rentFrequency": "", "x": 3},
        columns,
        None,
    )
    assert mapped.values == {"contract_name": "Flat 1", "x": 3}
    assert mapped.problems == ()


def test_key_column_is_a_reference_unless_it_names_a_term() -> None:
    """A key column that is not a term is only the key; one that is a term is also sent."""
    terms = small_termset()
    by_ref = map_row({"ref": "R-1", "contract_name": "A"}, ColumnMap(key_column="ref"), terms)
    assert (by_ref.key_value, by_ref.values) == ("R-1", {"contract_name": "A"})
    by_name = map_row({"contract_name": "A"}, ColumnMap(key_column="contract_name"), terms)
    assert (by_name.key_value, by_name.values) == ("A", {"contract_name": "A"})
    missing = map_row({"ref": " ", "contract_name": "A"}, ColumnMap(key_column="ref"), terms)
    assert missing.problems == ("no value in the key column 'ref'",)


def test_bad_cell_values_are_row_problems() -> None:
    """A nested value (JSON list or object) or two columns for one term make the row invalid."""
    mapped = map_row(
        {"contract_name": "A", "Name": "B", "contract_rentFrequency": ["month"]},
        ColumnMap(terms={"Name": "contract_name"}),
        None,
    )
    assert len(mapped.problems) == 2
    assert "both give 'contract_name'" in mapped.problems[0]
    assert "expected a text or number value" in mapped.problems[1]


def test_column_map_refuses_contradictions() -> None:
    """Two columns for one term, a target column mapped to a term, reused special columns."""
    with pytest.raises(ConfigurationError, match="same term"):
        ColumnMap(terms={"a": "contract_name", "b": "contract_name"})
    with pytest.raises(ConfigurationError, match="holds a target id"):
        ColumnMap(terms={"team": "contract_name"}, team_column="team")
    with pytest.raises(ConfigurationError, match="must be different columns"):
        ColumnMap(key_column="t", team_column="t")


def test_header_with_an_unknown_column_is_refused_with_a_suggestion() -> None:
    """A column that is no term (and not mapped) is refused before any row, with the closest."""
    terms = small_termset()
    with pytest.raises(UnknownColumnsError) as caught:
        ColumnMap().check_header(
            ["contract_nmae", "rentFrequency", "notes"],
            terms,
            match_term="contract_name",
            where="t.csv",
        )
    message = str(caught.value)
    assert "3 columns are not terms of template 149" in message
    assert "'contract_nmae' (did you mean 'contract_name'?)" in message
    assert "'rentFrequency' (did you mean 'contract_rentFrequency'?)" in message
    assert "columns={" not in message and "--column" not in message  # the caller's words
    assert caught.value.suggestions["notes"] is None


def test_a_column_mapped_to_no_term_names_the_mapping() -> None:
    """--column Address=contract_nosuch: the term is what is wrong, and the hint is for it.

    It was reported as the column not being a term, with a hint to map the column to the
    term of its own name.
    """
    terms = small_termset()
    with pytest.raises(ConfigurationError) as caught:
        ColumnMap(terms={"Name": "contract_nmae"}).check_header(
            ["Name"], terms, match_term="contract_name", where="t.csv"
        )
    assert not isinstance(caught.value, UnknownColumnsError)
    assert str(caught.value) == (
        "t.csv: 'Name' is mapped to 'contract_nmae', which is not a term (did you mean "
        "'contract_name'?) of template 149; map each column to one of the template's terms"
    )


def test_header_checks_mapped_key_and_match_columns() -> None:
    """Mapped and key columns must exist, and some column must give the match term."""
    terms = small_termset()
    with pytest.raises(ConfigurationError, match="has no column 'Ref'"):
        ColumnMap(key_column="Ref").check_header(
            ["contract_name"], terms, match_term="contract_name", where="t.csv"
        )
    with pytest.raises(ConfigurationError, match="no column gives 'contract_name'"):
        ColumnMap().check_header(
            ["contract_rentFrequency"], terms, match_term="contract_name", where="t.csv"
        )
    ColumnMap(terms={"Name": "contract_name", "notes": None}, key_column="ref").check_header(
        ["ref", "Name", "notes"], terms, match_term="contract_name", where="t.csv"
    )


@pytest.mark.parametrize(("separator", "name"), [(";", "semicolons"), ("\t", "tabs")])
def test_a_header_separated_by_semicolons_or_tabs_is_named_so(separator: str, name: str) -> None:
    """A CSV saved with ';' (Excel in much of Europe) reads as one column: said so, with what to do.

    It was refused as missing its own columns ("has no column 'reference' (its columns:
    reference;contract_name;…)"), or as one column that is no term, with no hint.
    """
    terms = small_termset()
    flag = "tab" if separator == "\t" else f"'{separator}'"
    header = [separator.join(["reference", "contract_name", "contract_rentFrequency", "x"])]
    expected = (
        f"t.csv looks separated by {name} ({separator!r}), not commas: its header is one "
        "column that holds 4 columns ('reference', 'contract_name', 'contract_rentFrequency', "
        "…). Save it comma-separated (Excel uses the list separator of the computer's region "
        "settings; LibreOffice and Google Sheets can save with commas), or read it so: "
        f"`contractsdk bulk create --delimiter {flag}`, or CsvSource(path, "
        f"delimiter={separator!r}) from Python"
    )
    for columns, template_terms in [
        (ColumnMap(key_column="reference"), terms),  # was: has no column 'reference'
        (ColumnMap(), terms),  # was: 1 column is not a term
        (ColumnMap(), None),  # a template per row; was: no column gives 'contract_name'
    ]:
        with pytest.raises(ConfigurationError) as caught:
            columns.check_header(header, template_terms, match_term="contract_name", where="t.csv")
        assert str(caught.value) == expected
    # One column with a ';' in its name, and none of the expected ones: no such guess.
    with pytest.raises(ConfigurationError, match="has no column 'reference'"):
        ColumnMap(key_column="reference").check_header(
            ["a;b"], terms, match_term="contract_name", where="t.csv"
        )


def test_target_ids_are_parsed_per_row() -> None:
    """A per-row target is a non-negative integer id."""
    assert parse_target_id(" 42 ", "team") == (42, None)
    assert parse_target_id(7, "team") == (7, None)
    assert parse_target_id("", "team") == (None, "no value in the 'team' column")
    assert parse_target_id("x1", "team")[1] == "the 'team' column must hold a numeric id, not 'x1'"


def test_content_digest_ignores_order_and_types_of_equal_text() -> None:
    """The digest depends on the (term, text) pairs and targets only."""
    one = content_digest({"a": "1", "b": 2}, [70])
    assert one == content_digest({"b": "2", "a": 1}, [70])
    assert one != content_digest({"a": "1", "b": "3"}, [70])
    assert one != content_digest({"a": "1", "b": 2}, [71])
    assert len(one) == 32


def test_row_key_prefers_the_reference() -> None:
    """A row's key is its reference, else its content hash."""
    assert row_key("R-1", "abc") == "ref:R-1"
    assert row_key(None, "abc") == "sha:abc"


def test_job_id_is_stable_and_depends_on_the_identity() -> None:
    """Same target and mapping: same job id; another team, creator or mapping: another."""
    first = job_id(identity())
    assert first == job_id(identity())
    assert len(first) == 16
    assert first != job_id(identity(team_id=71))
    assert first != job_id(identity(created_by=8))
    assert first != job_id(identity(base_url="https://api.legislate.tech/v1"))
    assert first != job_id(identity(columns=ColumnMap()))
    assert identity()["template_id"] == "latest"


def test_idempotency_key_is_stable_per_job_and_row() -> None:
    """The key is the same across runs for one job and row, and differs between them."""
    key = idempotency_key("0123456789abcdef", "ref:R-1")
    assert key == idempotency_key("0123456789abcdef", "ref:R-1")
    assert key != idempotency_key("0123456789abcdef", "ref:R-2")
    assert key != idempotency_key("fedcba9876543210", "ref:R-1")
    assert key.startswith("contractsdk-bulk-0123456789abcdef-")
    assert len(key) <= 255
    # Each journal's salt makes its keys its own; without one (an older journal) the key
    # is the job's and the row's alone, as it was sent.
    salted = idempotency_key("0123456789abcdef", "ref:R-1", "5a17")
    assert salted == idempotency_key("0123456789abcdef", "ref:R-1", "5a17")
    assert salted not in (key, idempotency_key("0123456789abcdef", "ref:R-1", "5a18"))
    assert salted.startswith("contractsdk-bulk-0123456789abcdef-") and len(salted) == len(key)
