"""The emulator's own term validator, as pure functions (no server, no event loop)."""

from __future__ import annotations

from typing import Any

from contractsdk.sandbox._catalog import Template, TermIds, choice, opt, text, yes_no
from contractsdk.sandbox._fields import apply_fields, flatten

TEMPLATE = Template(
    1,
    "1",
    10,
    TermIds(100).build(
        1,
        (
            text("contract_name", "Name"),
            choice(
                "contract_level1",
                "Level 1",
                opt(
                    "a",
                    choice(
                        "contract_level2",
                        "Level 2",
                        opt("x", yes_no("contract_level3", "Level 3")),
                        "y",
                    ),
                ),
                opt("b", text("contract_underB", "Under b")),
            ),
        ),
    ),
)


def _ok(fields: Any, answers: dict[int, str] | None = None) -> dict[str, str]:
    answers = dict(answers or {})
    assert apply_fields(TEMPLATE, answers, fields) == []
    return {TEMPLATE.by_id[k].name: v for k, v in answers.items()}


def _problems(fields: Any) -> list[str]:
    answers: dict[int, str] = {}
    return apply_fields(TEMPLATE, answers, fields)


def test_three_levels_of_nesting_are_accepted() -> None:
    """Answers nested under chosen options three term levels deep are stored flat."""
    fields = [
        {
            "name": "contract_level1",
            "value": "a",
            "nested_fields": [
                {
                    "name": "contract_level2",
                    "value": "x",
                    "nested_fields": [{"name": "contract_level3", "value": "level3Yes"}],
                }
            ],
        }
    ]
    assert _ok(fields) == {
        "contract_level1": "a",
        "contract_level2": "x",
        "contract_level3": "level3Yes",
    }


def test_exclusive_option_names_the_term_and_both_options() -> None:
    """Nested answers under two options of one term are one exclusive-option problem."""
    fields = [
        {
            "name": "contract_level1",
            "value": "a",
            "nested_fields": [
                {"name": "contract_level2", "value": "y"},
                {"name": "contract_underB", "value": "text"},
            ],
        }
    ]
    (problem,) = _problems(fields)
    assert "exclusive-option" in problem
    assert '"contract_level1"' in problem
    assert '"a" and "b"' in problem


def test_nested_answers_need_the_parent_value() -> None:
    """Nested answers without a chosen parent option are refused, naming the parent."""
    fields = [{"name": "contract_level1", "nested_fields": [{"name": "contract_underB"}]}]
    (problem,) = _problems(fields)
    assert 'only when "contract_level1" is "b"' in problem
    assert "has no value" in problem


def test_changing_an_option_drops_every_level_below() -> None:
    """Re-answering level 1 with another option drops levels 2 and 3."""
    before = {100 + 1: "a", 100 + 2: "x", 100 + 3: "level3Yes"}
    assert _ok([{"name": "contract_level1", "value": "b"}], before) == {"contract_level1": "b"}


def test_same_value_keeps_the_nested_answers() -> None:
    """Re-sending the chosen option unchanged keeps what is nested below it."""
    before = {101: "a", 102: "x"}
    assert _ok([{"id": 101, "value": "a"}], before) == {
        "contract_level1": "a",
        "contract_level2": "x",
    }


def test_id_and_name_must_agree() -> None:
    """A field whose id and name point to different terms is refused."""
    (problem,) = _problems([{"id": 101, "name": "contract_name", "value": "x"}])
    assert 'term id 101 is "contract_level1", not "contract_name"' in problem


def test_flatten_follows_the_template_order() -> None:
    """Flatten lists answers in display order and skips empty values."""
    answers = {103: "level3Yes", 100: "Name", 101: "a", 102: "x"}
    assert [f["name"] for f in flatten(TEMPLATE, answers)] == [
        "contract_name",
        "contract_level1",
        "contract_level2",
        "contract_level3",
    ]
    assert flatten(TEMPLATE, {100: ""}) == []
