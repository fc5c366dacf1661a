"""Wire JSON → models: the facts of reference/service-api.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contractsdk import (
    Contract,
    ContractField,
    ContractType,
    Link,
    ResponseValidationError,
    Team,
    Template,
    Term,
    User,
)
from contractsdk._converter import (
    _make_converter,
    _structure_contract,
    _structure_contract_field,
    parse_datetime,
    structure,
    structure_list,
)
from tests._fakeservice import SAMPLE


class TestDates:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "2022-06-16 15:16:27.980+0000",
                datetime(2022, 6, 16, 15, 16, 27, 980000, timezone.utc),
            ),
            ("2022-06-16T15:16:27Z", datetime(2022, 6, 16, 15, 16, 27, tzinfo=timezone.utc)),
            (
                "2022-06-16T15:16:27.123456789+01:00",
                datetime(2022, 6, 16, 15, 16, 27, 123456, timezone(timedelta(hours=1))),
            ),
            ("2022-06-16T15:16", datetime(2022, 6, 16, 15, 16, tzinfo=timezone.utc)),
            ("2022-06-16", datetime(2022, 6, 16, tzinfo=timezone.utc)),
            (
                "2022-06-16 15:16:27-0530",
                datetime(2022, 6, 16, 15, 16, 27, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
            ),
        ],
    )
    def test_formats(self, text: str, expected: datetime) -> None:
        """Spring's team format, ISO 8601 variants and plain dates all parse, aware."""
        assert parse_datetime(text) == expected

    def test_epoch_millis(self) -> None:
        """Epoch milliseconds are read as UTC."""
        assert parse_datetime(1655392587980) == datetime(
            2022, 6, 16, 15, 16, 27, 980000, timezone.utc
        )

    @pytest.mark.parametrize("bad", ["yesterday", "2022-13-45", True, None, {}])
    def test_garbage(self, bad: object) -> None:
        """Non-timestamps raise ValueError."""
        with pytest.raises(ValueError):  # noqa: PT011  # the message varies by input
            parse_datetime(bad)


def test_team_with_hal_links_and_spring_date() -> None:
    """A team reads its HAL _links and its Spring-style created date."""
    team = structure(
        {
            "id": 123,
            "name": "New team",
            "created": "2022-06-16 15:16:27.980+0000",
            "_links": {"self": {"href": "https://sandbox.legislate.tech/v1/teams/123"}},
        },
        Team,
    )
    assert team.links == (Link(rel="self", href="https://sandbox.legislate.tech/v1/teams/123"),)
    assert team.created is not None and team.created.tzinfo is not None


def test_contract_type_with_links_array_and_big_id() -> None:
    """Contract types read the links array and keep 16-digit ids exact."""
    kind = structure(
        {
            "id": 6690589634461711,
            "name": "Section 8 Notice",
            "links": [{"rel": "self", "href": "https://x/v1/contract-types/6690589634461711"}],
        },
        ContractType,
    )
    assert kind.id == 6690589634461711 and kind.links[0].rel == "self"


def test_unknown_keys_are_kept() -> None:
    """Keys the models do not know are tolerated and reachable through raw."""
    template = structure({"id": 149, "version": "7", "status": "published"}, Template)
    assert template.raw["status"] == "published"
    assert "published" not in repr(template)  # raw is not in the repr


def test_nested_fields_spellings() -> None:
    """nested_fields and nestedFields both become an option's nested terms."""
    for key in ("nested_fields", "nestedFields"):
        term = structure(
            {
                "id": 1,
                "name": "contract_a",
                "label": "A",
                "options": [{"value": "yes", key: [{"id": 2, "name": "contract_b", "label": "B"}]}],
            },
            Term,
        )
        assert term.options[0].nested_terms[0].name == "contract_b"


def test_real_sample_three_levels_deep() -> None:
    """The real 42-term sample reads, with options nested three term levels deep."""
    terms = structure_list(json.loads(SAMPLE.read_text(encoding="utf-8")), Term)
    assert len(terms) == 42
    rent = next(t for t in terms if t.name == "contract_rentFrequency")
    month = rent.option("month")
    assert month is not None
    brk = month.nested_terms[0]
    start = brk.options[0].nested_terms[0]
    assert (brk.name, start.name) == ("contract_breakClause", "contract_breakClauseStart")
    assert [o.value for o in start.options] == ["3 months", "6 months"]
    assert start.links[0].href.endswith("/terms/3861")


def test_contract_id_from_self_link() -> None:
    """The contract JSON has no id; it comes from the self link, camelCase completedDate read."""
    contract = structure(
        {
            "contract_name": "Lease",
            "created_date": "2022-06-16T15:16:27.980Z",
            "completedDate": "2022-07-01T00:00:00Z",
            "purchased_date": None,
            "fields": [{"id": 3775, "name": "contract_name", "value": "Lease"}],
            "_links": {"self": {"href": "https://x/v1/contracts/991"}},
        },
        Contract,
    )
    assert contract.id == 991 and contract.name == "Lease"
    assert contract.completed_date is not None and contract.values == {"contract_name": "Lease"}


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"id": "abc", "name": "x"}, "$.id"),
        ({"id": True, "name": "x"}, "$.id"),
        ({"id": 1.5, "name": "x"}, "$.id"),
        ({"id": 2**64, "name": "x"}, "$.id"),
        ({"id": "", "name": "x"}, "$.id"),  # a missing id is tolerated (M6), an empty one not
        ({"id": 1, "name": {"a": 1}}, "$.name"),
        ({"id": 1, "name": "x", "created": {"day": 16}}, "$.created"),  # "yesterday" reads None
        ({"id": 1, "name": "x", "_links": {"self": {"no": "href"}}}, "$.links"),
        ([1, 2], "$"),
    ],
)
def test_unreadable_bodies_name_the_field(data: object, where: str) -> None:
    """A body that does not fit raises ResponseValidationError naming the field."""
    with pytest.raises(ResponseValidationError) as caught:
        structure(data, Team, method="GET", url="/v1/teams/1")
    error = caught.value
    assert any(where in line for line in error.errors), error.errors
    assert error.model == "Team" and error.url == "/v1/teams/1"
    assert "Traceback" not in str(error)


def test_list_errors_name_the_index() -> None:
    """In a list, the bad item's index is named."""
    with pytest.raises(ResponseValidationError, match=r"\$\[1\]\.name"):
        structure_list([{"id": 1, "name": "a"}, {"id": 2, "name": ["b"]}], Team)


def test_list_must_be_an_array() -> None:
    """A list endpoint answering an object is an error, not an empty list."""
    with pytest.raises(ResponseValidationError, match="expected an array"):
        structure_list({"items": []}, User)


def test_numeric_strings_for_ids_and_values() -> None:
    """Ids sent as digit strings, and numbers where strings are expected, are read."""
    contract = structure(
        {"fields": [{"id": "3775", "name": "contract_rent", "value": 22}]}, Contract
    )
    assert contract.fields[0].id == 3775 and contract.fields[0].value == "22"


# The contract hooks written by hand against the ones cattrs generates: any body, the same
# outcome (the same model, or a failure of both).

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "42", "-7", "2022-06-16T15:16:27.980Z", "2022-06-16 15:16:27+0000"]),
)
_links_values = st.one_of(
    _scalars,
    st.lists(
        st.dictionaries(st.sampled_from(["rel", "href"]), _scalars | st.just("https://x/v1/c/9"))
        | _scalars,
        max_size=3,
    ),
    st.dictionaries(
        st.sampled_from(["self", "edit"]),
        st.dictionaries(st.sampled_from(["href"]), st.just("https://x/v1/contracts/5") | _scalars)
        | st.lists(st.dictionaries(st.just("href"), st.just("https://x/v1/c/6/")), max_size=2),
        max_size=2,
    ),
)
_field_items = st.one_of(
    st.dictionaries(st.sampled_from(["id", "name", "value", "extra"]), _scalars, max_size=4),
    _scalars,
    st.sampled_from(["value", "name", "abc"]),
)
_contract_bodies = st.dictionaries(
    st.sampled_from(
        ["id", "contract_name", "created_date", "purchased_date", "completedDate", "other"]
    ),
    _scalars,
    max_size=6,
).flatmap(
    lambda base: st.fixed_dictionaries(
        {},
        optional={
            "fields": st.lists(_field_items, max_size=3) | _scalars,
            "links": _links_values,
            "_links": _links_values,
        },
    ).map(lambda extra: {**base, **extra})
)


# Bodies as the service sends them, with one key sometimes made anything: the generated ones
# above read successfully only one time in five, and nearly never with fields or links (2
# and 5 of 600), so a bug in reading those went unseen.
_ids = st.integers(min_value=0, max_value=2**63 - 1) | st.integers(0, 10**6).map(str)
_texts = st.sampled_from(["", "x", "Rent", "42", "ß"])
_dates = st.none() | st.sampled_from(
    ["2022-06-16T15:16:27.980Z", "2022-06-16 15:16:27+0000", "2022-06-16T15:16:27"]
)
_hrefs = st.sampled_from(["https://x/v1/contracts/5", "https://x/v1/c/9", "/v1/contracts/12/"])
_valid_links = st.lists(
    st.fixed_dictionaries({"rel": st.sampled_from(["self", "edit", "party"]), "href": _hrefs}),
    max_size=3,
) | st.dictionaries(
    st.sampled_from(["self", "edit"]), st.fixed_dictionaries({"href": _hrefs}), max_size=2
)
_valid_fields = st.lists(
    st.fixed_dictionaries(
        {"id": _ids, "name": st.none() | _texts},
        optional={"value": st.none() | _texts | st.integers(-5, 5) | st.floats(-1e3, 1e3)},
    ),
    max_size=4,
)
_valid_bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": st.none() | _ids,
        "contract_name": st.none() | _texts,
        "created_date": _dates,
        "purchased_date": _dates,
        "completedDate": _dates,
        "fields": _valid_fields,
        "links": _valid_links,
        "_links": _valid_links,
        "other": _scalars,
    },
)
_near_valid_bodies = st.tuples(
    _valid_bodies,
    st.sampled_from(["id", "contract_name", "created_date", "fields", "links", "_links"]),
    _scalars | _field_items | st.lists(_field_items, max_size=2),
    st.booleans(),
).map(lambda case: {**case[0], case[1]: case[2]} if case[3] else case[0])


def _outcome(read: Callable[[Any, Any], object], data: object, cls: type[Any]) -> object:
    try:
        model = read(data, cls)
    except Exception:
        return "failed"
    return model, getattr(model, "raw", None)


#: cattrs's generated hooks, made once (3 ms a converter, 200 examples).
_generated = _make_converter(detailed=False)


@settings(max_examples=200, deadline=None)
@given(_contract_bodies | _near_valid_bodies | _scalars | st.lists(_scalars, max_size=2))
def test_contract_hooks_by_hand_match_cattrs(body: Any) -> None:
    """The hand-written contract hook reads any body exactly as cattrs's generated one."""
    generated = _generated
    by_hand = _outcome(_structure_contract, body, Contract)
    assert by_hand == _outcome(generated.structure, body, Contract)
    items = body.get("fields") if isinstance(body, dict) else None
    for item in items if isinstance(items, list) else ():
        by_hand = _outcome(_structure_contract_field, item, ContractField)
        assert by_hand == _outcome(generated.structure, item, ContractField)
