"""Tests of contractsdk.validation against the real AST template (tests/data's sample)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from contractsdk.models import Term, TermOption
from contractsdk.validation import TermSet, values_from_fields
from tests._termkit import BREAK_START_PATH, only_problem, problems_of

# -- The real AST sample (reference/samples/contract_fields.json, copied to tests/data) ------

SAMPLE = Path(__file__).resolve().parent / "data" / "contract_fields.json"


def term_from_wire(wire: Mapping[str, Any]) -> Term:
    """Build a Term from the wire dict (the real converter is written elsewhere)."""
    return Term(
        id=wire["id"],
        name=wire["name"],
        label=wire.get("label", ""),
        options=tuple(
            TermOption(
                value=opt["value"],
                nested_terms=tuple(
                    term_from_wire(nested)
                    # service-api.md §8: the wire says nested_fields, one doc says nestedFields.
                    for nested in opt.get("nested_fields") or opt.get("nestedFields") or ()
                ),
            )
            for opt in wire.get("options") or ()
        ),
    )


@pytest.fixture
def ast_terms() -> TermSet:
    wire = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return TermSet([term_from_wire(item) for item in wire], template_id=149)


AST_ROW: dict[str, Any] = {
    "contract_name": "Flat 2, 10 High Street",
    "contract_address": "10 High Street, London",
    "contract_agreementDate": date(2024, 5, 1),
    "contract_mortgage": "mortgageNo",
    "contract_rentFrequency": "month",
    "contract_breakClause": "breakClauseYes",
    "contract_breakClauseStart": "6 months",
    "contract_superiorLease": "superiorLeaseNo",
    "contract_startDate": date(2024, 6, 1),
    "contract_parking": "parkingYes",
    "contract_parkingAddress": "Bay 4",
    "contract_agent": "agentNo",
    "contract_depositReturn": "10 Working Days",
    "contract_individualRent": Decimal("1450.00"),
    "contract_letType": "sole",
    "contract_valuation": "soleHouseRulesNo",
    "contract_depositAmount": 1673,
    "contract_specialTerms": "specialTermsYes",
    "contract_specialTermsNumber": "specialTermsTwo",
    "contract_specialTermsDetails1": "No smoking.",
    "contract_specialTermsDetails2": "No parties.",
}


# -- The real AST template ------------------------------------------------------------------


def test_sample_loads_into_a_termset(ast_terms: TermSet) -> None:
    """The real 42-term AST template loads, with its nested terms 3 levels deep."""
    assert len(ast_terms) == 42
    assert len(list(ast_terms.walk())) == 87
    assert ast_terms.paths("contract_breakClauseStart") == (BREAK_START_PATH,)
    assert max(path.count("›") for path, _ in ast_terms.walk()) == 2


def test_sample_row_validates_and_builds(ast_terms: TermSet) -> None:
    """A realistic AST row validates and builds a payload with a 3-level nested answer."""
    result = ast_terms.validate(AST_ROW, date_format="%d/%m/%Y")
    assert result["contract_agreementDate"] == "01/05/2024"
    assert result["contract_individualRent"] == "1450.00"
    fields = ast_terms.build_fields(AST_ROW, date_format="%d/%m/%Y")
    rent = next(field for field in fields if field["name"] == "contract_rentFrequency")
    assert rent == {
        "id": 3779,
        "name": "contract_rentFrequency",
        "value": "month",
        "nested_fields": [
            {
                "id": 3860,
                "name": "contract_breakClause",
                "value": "breakClauseYes",
                "nested_fields": [
                    {"id": 3861, "name": "contract_breakClauseStart", "value": "6 months"}
                ],
            }
        ],
    }
    assert values_from_fields(fields) == result


def test_sample_reports_a_three_level_path(ast_terms: TermSet) -> None:
    """A wrong value three levels deep is reported with its full path."""
    row = dict(AST_ROW, contract_breakClauseStart="3 Months")
    problem = only_problem(ast_terms, row)
    assert problem.kind == "not_an_option"
    assert problem.path == BREAK_START_PATH
    assert problem.suggestion == "3 months"


def test_sample_exclusive_special_terms(ast_terms: TermSet) -> None:
    """Special-term details under two counts of special terms are an exclusive problem."""
    row = dict(AST_ROW, contract_specialTermsDetails="One only.")
    problem = only_problem(ast_terms, row)
    assert problem.kind == "exclusive_options"
    assert problem.path == "contract_specialTerms=specialTermsYes › contract_specialTermsNumber"
    assert "specialTermsOne (contract_specialTermsDetails)" in problem.message
    assert (
        "specialTermsTwo (contract_specialTermsDetails1, contract_specialTermsDetails2)"
        in problem.message
    )


def test_sample_require_all_lists_the_unanswered(ast_terms: TermSet) -> None:
    """require_all on a partial AST row reports the unanswered applicable terms only."""
    problems = problems_of(ast_terms, AST_ROW, require_all=True)
    assert {p.kind for p in problems} == {"missing"}
    missing = {p.term for p in problems}
    assert "contract_endDate" in missing
    assert "contract_agentName" not in missing  # under agentYes, not chosen
    assert "contract_sickPay" not in missing  # under soleHouseRulesYes, not chosen
