"""Tests of contractsdk.validation's term tree: the TermSet as a sequence, an index and text."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from contractsdk.validation import TermSet
from tests._termkit import (
    BREAK_START_PATH,
    terms_fixture,  # noqa: F401  # the fixture `terms`
    text,
)

# -- The tree -------------------------------------------------------------------------------


def test_tree_shows_labels_options_and_nesting(terms: TermSet) -> None:
    """tree() renders names, ids, labels, radio options and indented nested terms."""
    lines = terms.tree().splitlines()
    assert lines[:10] == [
        "contract_name (id 1): Name",
        "contract_rentFrequency (id 2): How frequently will the rent be paid?",
        "  ( ) month",
        "      contract_breakClause (id 3): Label of contract_breakClause",
        "        ( ) breakClauseYes",
        "            contract_breakClauseStart (id 4): Label of contract_breakClauseStart",
        "              ( ) 3 months",
        "              ( ) 6 months",
        "        ( ) breakClauseNo",
        "  ( ) week",
    ]
    assert "contract_agreementDate (id 12): Agreement Date" in lines


def test_tree_marks_given_values(terms: TermSet) -> None:
    """With values, tree() marks chosen options and shows text values, even wrong ones."""
    rendered = terms.tree(
        {"contract_name": "Lease", 2: "month", "contract_pets": "cat", "contract_room": 3}
    )
    assert "contract_name (id 1): Name = 'Lease'" in rendered
    assert "  (x) month\n" in rendered
    assert "  ( ) week" in rendered
    assert "contract_pets (id 10): Label of contract_pets = 'cat' (not an option)" in rendered
    assert "contract_room (id 9): Bedsit room = '3'" in rendered


def test_tree_shows_unsendable_values_without_raising(terms: TermSet) -> None:
    """tree() is for display: a value validate would refuse is shown, not raised."""
    rendered = terms.tree({"contract_name": True, "contract_nothing": "x"})
    assert rendered.splitlines()[0] == "contract_name (id 1): Name = 'True'"


# -- The TermSet as a sequence and an index --------------------------------------------------


def test_termset_is_a_sequence_of_top_level_terms(terms: TermSet) -> None:
    """len, indexing, slicing and iteration see the top-level terms in template order."""
    assert len(terms) == 5
    assert terms[0].name == "contract_name"
    assert [term.id for term in terms[1:3]] == [2, 5]
    assert [term.id for term in terms] == [1, 2, 5, 10, 12]
    assert terms.template_id == 149
    assert repr(terms) == "TermSet(5 terms, 12 in all, template_id=149)"


def test_walk_visits_every_place_depth_first(terms: TermSet) -> None:
    """walk() yields (path, term) for the whole tree in template order."""
    walked = [(path, term.id) for path, term in terms.walk()]
    assert walked[:4] == [
        ("contract_name", 1),
        ("contract_rentFrequency", 2),
        ("contract_rentFrequency=month › contract_breakClause", 3),
        (BREAK_START_PATH, 4),
    ]
    assert [term_id for _, term_id in walked] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]


@pytest.mark.parametrize("key", ["contract_breakClauseStart", 4, "4"])
def test_find_looks_through_the_whole_tree(terms: TermSet, key: str | int) -> None:
    """find() takes a name, an id or a digit-string id, at any depth."""
    found = terms.find(key)
    assert found is not None
    assert found.id == 4


def test_find_and_contains_for_unknown_terms(terms: TermSet) -> None:
    """Unknown names and ids are not found; `in` checks names, ids and Terms anywhere."""
    assert terms.find("contract_nothing") is None
    assert terms.find(404) is None
    assert terms.paths("contract_nothing") == ()
    # mypy's strict equality sees a Sequence[Term] and flags names and ids; at run time
    # __contains__ takes them, which is the point of this test.
    assert "contract_petsDetails" in terms  # type: ignore[comparison-overlap]
    assert 11 in terms  # type: ignore[comparison-overlap]
    assert terms.find(11) in terms
    assert "contract_nothing" not in terms  # type: ignore[comparison-overlap]
    assert True not in terms  # type: ignore[comparison-overlap]
    assert text(11, "contract_other") not in terms


def test_termset_pickles(terms: TermSet) -> None:
    """A TermSet survives pickling (a process pool can receive it) and validates the same."""
    values = {"contract_rentFrequency": "month", "contract_breakClause": "breakClauseNo"}
    copy = pickle.loads(pickle.dumps(terms))
    assert copy.build_fields(values) == terms.build_fields(values)
    assert copy.paths("contract_room") == terms.paths("contract_room")


def test_modules_import_in_either_order() -> None:
    """contractsdk.validation and contractsdk.models import first without a cycle."""
    # One fresh interpreter tries both orders, forgetting contractsdk between the two.
    code = """
import importlib, sys
for first in ("contractsdk.validation", "contractsdk.models"):
    for name in [n for n in sys.modules if n.split(".")[0] == "contractsdk"]:
        del sys.modules[name]
    importlib.import_module(first)
    from contractsdk.validation import TermSet
    print(first, TermSet)
"""
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("TermSet") == 2, done.stdout


def test_names_lists_each_name_once(terms: TermSet) -> None:
    """The names property holds every distinct name in template order, once even if nested twice."""
    assert terms.names.count("contract_room") == 1
    assert terms.names[:3] == ("contract_name", "contract_rentFrequency", "contract_breakClause")
