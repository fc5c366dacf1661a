"""Shared helpers of the validation tests: a small hand-written template and its problems.

The ``terms`` fixture is ``terms_fixture`` here: test modules import it by that name, as one
imported as ``terms`` would be shadowed by their tests' argument of that name (ruff's F811).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from contractsdk import TermValidationError
from contractsdk.models import Term, TermOption
from contractsdk.validation import TermProblem, TermSet

# -- A small hand-written template ----------------------------------------------------------
#
# contract_name                              text
# contract_rentFrequency                     month | week
#   month → contract_breakClause             breakClauseYes | breakClauseNo
#             breakClauseYes → contract_breakClauseStart   3 months | 6 months
# contract_letType                           hmo | sole | bedsit
#   hmo    → contract_room (id 6), contract_houseRules  rulesYes | rulesNo
#   sole   → contract_soleRules              text
#   bedsit → contract_room (id 9)            the same name under a second option
# contract_pets                              petsYes | petsNo
#   petsYes → contract_petsDetails           text
# contract_agreementDate                     text


def text(term_id: int, name: str, label: str = "") -> Term:
    return Term(id=term_id, name=name, label=label or f"Label of {name}")


def choice(term_id: int, name: str, *options: TermOption, label: str = "") -> Term:
    return Term(id=term_id, name=name, label=label or f"Label of {name}", options=options)


def option(value: str, *nested: Term) -> TermOption:
    return TermOption(value=value, nested_terms=nested)


def small_terms() -> list[Term]:
    return [
        text(1, "contract_name", "Name"),
        choice(
            2,
            "contract_rentFrequency",
            option(
                "month",
                choice(
                    3,
                    "contract_breakClause",
                    option(
                        "breakClauseYes",
                        choice(
                            4,
                            "contract_breakClauseStart",
                            option("3 months"),
                            option("6 months"),
                        ),
                    ),
                    option("breakClauseNo"),
                ),
            ),
            option("week"),
            label="How frequently will the rent be paid?",
        ),
        choice(
            5,
            "contract_letType",
            option(
                "hmo",
                text(6, "contract_room", "Room"),
                choice(7, "contract_houseRules", option("rulesYes"), option("rulesNo")),
            ),
            option("sole", text(8, "contract_soleRules")),
            option("bedsit", text(9, "contract_room", "Bedsit room")),
        ),
        choice(
            10,
            "contract_pets",
            option("petsYes", text(11, "contract_petsDetails")),
            option("petsNo"),
        ),
        text(12, "contract_agreementDate", "Agreement Date"),
    ]


@pytest.fixture(name="terms")
def terms_fixture() -> TermSet:
    """The small template as a TermSet (template 149)."""
    return TermSet(small_terms(), template_id=149)


def problems_of(terms: TermSet, values: Mapping[Any, Any], **kwargs: Any) -> list[TermProblem]:
    with pytest.raises(TermValidationError) as caught:
        terms.validate(values, **kwargs)
    return list(caught.value.problems)


def only_problem(terms: TermSet, values: Mapping[Any, Any], **kwargs: Any) -> TermProblem:
    problems = problems_of(terms, values, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


BREAK_START_PATH = (
    "contract_rentFrequency=month › contract_breakClause=breakClauseYes › contract_breakClauseStart"
)
