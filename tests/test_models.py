"""The models: the fast constructors the converter uses agree with ``__init__``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import attrs
import pytest

from contractsdk import Contract, ContractField, Link

_FIELD = ContractField(id=1, name="contract_name", value="Lease")
_LINK = Link(rel="self", href="https://x/v1/contracts/9")


@pytest.mark.parametrize(
    ("cls", "values"),
    [
        (Link, {"rel": "self", "href": "https://x/v1/contracts/9"}),
        (ContractField, {"id": 1, "name": "contract_name", "value": "Lease"}),
        (
            Contract,
            {
                "id": 9,
                "name": "Lease",
                "created_date": datetime(2024, 1, 31, tzinfo=timezone.utc),
                "purchased_date": None,
                "completed_date": None,
                "fields": (_FIELD,),
                "links": (_LINK,),
                "raw": {"contract_name": "Lease"},
            },
        ),
    ],
)
def test_make_sets_every_field_as_init_does(cls: Any, values: dict[str, Any]) -> None:
    """``_make`` takes every field and sets each one as ``__init__`` would."""
    assert [field.name for field in attrs.fields(cls)] == list(values)
    made = cls._make(**values)
    assert type(made) is cls
    assert attrs.asdict(made, recurse=False) == attrs.asdict(cls(**values), recurse=False)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.id = 2
