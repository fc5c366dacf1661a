"""The one private cattrs converter: wire JSON → models.

Wire facts it follows (reference/service-api.md):

* ids are int64 (§7); a bool or a fractional number is not an id.
* links come as HAL ``_links`` objects on teams and as ``links`` arrays on types and terms
  (§5); both become ``tuple[Link, ...]``.
* ``nested_fields`` and ``nestedFields`` both name an option's nested terms (§8, CONFLICT).
* team ``created`` looks like ``2022-06-16 15:16:27.980+0000``; other dates are ISO 8601
  (§7, §12.10); both are parsed, to aware datetimes.
* the contract JSON has no ``id``: it comes from its ``self`` link (§7).
* unknown keys are tolerated and kept: every model holds its wire dict in ``raw``.

A body that cannot be read raises :class:`ResponseValidationError` naming each bad field
(``$.fields[2].value: …``), never a cattrs traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from ._exceptions import ResponseValidationError
from .models._base import Link, id_from_href
from .models._models import (
    Contract,
    ContractField,
    ContractType,
    Team,
    Template,
    Term,
    TermOption,
    User,
)

__all__ = ["parse_datetime", "structure", "structure_list"]

T = TypeVar("T")

_INT64_MAX = 2**63 - 1

# yyyy-MM-dd[T ]HH:mm[:ss[.fraction]][Z|±HH[:]MM]; Python 3.10's fromisoformat reads none of
# the Spring variants, so the parts are normalised first.
_DATETIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[T ](?P<time>\d{2}:\d{2}(?::\d{2})?)(?:\.(?P<fraction>\d+))?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2}|[+-]\d{2})?"
)


def parse_datetime(value: object) -> datetime:
    """Read a service timestamp into an aware datetime (naive values are taken as UTC).

    Accepts ISO 8601, the Spring form ``2022-06-16 15:16:27.980+0000``, and epoch
    milliseconds.

    Raises:
        ValueError: The value is not a timestamp.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a timestamp, got {value!r}")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    if not isinstance(value, str):
        raise ValueError(f"expected a timestamp, got {type(value).__name__}")
    match = _DATETIME.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"not a timestamp: {value!r}")
    clock = match["time"] or "00:00:00"
    if len(clock) == 5:
        clock += ":00"
    fraction = (match["fraction"] or "0")[:6].ljust(6, "0")
    parsed = datetime.fromisoformat(f"{match['date']}T{clock}.{fraction}")
    tz = match["tz"]
    if tz is None or tz == "Z":
        return parsed.replace(tzinfo=timezone.utc)
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "").ljust(4, "0")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return parsed.replace(tzinfo=timezone(sign * offset))


def _structure_int(value: object, _: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer id, got {value!r}")
    if isinstance(value, int):
        result = value
    elif (isinstance(value, float) and value.is_integer()) or (
        isinstance(value, str) and value.strip().lstrip("-").isdigit()
    ):
        result = int(value)
    else:
        raise ValueError(f"expected an integer, got {value!r}")
    if not -_INT64_MAX - 1 <= result <= _INT64_MAX:
        raise ValueError(f"{result} does not fit in int64")
    return result


def _structure_str(value: object, _: object) -> str:
    if isinstance(value, str):
        return value
    # Values are strings on the wire (§7), but a number is unambiguous; a dict is not.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a string, got {type(value).__name__}")


def _structure_links(value: object, _: object) -> tuple[Link, ...]:
    if value is None:
        return ()
    if isinstance(value, list):  # Spring HATEOAS array: [{"rel": "self", "href": ...}]
        links = []
        for item in value:
            if not isinstance(item, Mapping) or not isinstance(item.get("href"), str):
                raise ValueError("each link needs an href string")
            links.append(Link(rel=str(item.get("rel", "")), href=item["href"]))
        return tuple(links)
    if isinstance(value, Mapping):  # HAL: {"self": {"href": ...}} (a rel may hold a list)
        links = []
        for rel, target in value.items():
            for item in target if isinstance(target, list) else [target]:
                if not isinstance(item, Mapping) or not isinstance(item.get("href"), str):
                    raise ValueError(f"link {rel!r} needs an href string")
                links.append(Link(rel=str(rel), href=item["href"]))
        return tuple(links)
    raise ValueError(f"expected links, got {type(value).__name__}")


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=True, prefer_attrib_converters=False)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(datetime, lambda value, _: parse_datetime(value))
    converter.register_structure_hook_func(lambda t: t == tuple[Link, ...], _structure_links)

    _register(converter, User)
    _register(converter, Team)
    _register(converter, ContractType)
    _register(converter, Template)
    _register(converter, Term)
    _register(converter, TermOption, nested_terms="nested_fields")
    _register(converter, ContractField)
    _register(
        converter,
        Contract,
        name="contract_name",
        completed_date="completedDate",
        after=_contract_id,
    )
    return converter


# Wire keys that mean the same thing: the first present wins.
_ALIASES = {"nested_fields": ("nested_fields", "nestedFields"), "links": ("links", "_links")}


def _contract_id(contract: Contract) -> Contract:
    if contract.id is None:
        self_links = [link.href for link in contract.links if link.rel == "self"]
        object.__setattr__(contract, "id", id_from_href(self_links[0] if self_links else None))
    return contract


def _register(
    converter: cattrs.Converter,
    cls: type[T],
    *,
    after: Callable[[T], T] | None = None,
    **renames: str,
) -> None:
    wire_names = {"links": "links", **renames}
    overrides = {attr: override(rename=wire) for attr, wire in wire_names.items()}
    keeps_raw = "raw" in attrs.fields_dict(cls)  # type: ignore[arg-type]  # cls is an attrs class
    if keeps_raw:
        overrides["raw"] = override(omit=True)
    base = make_dict_structure_fn(
        cls,
        converter,
        _cattrs_forbid_extra_keys=False,
        **overrides,  # type: ignore[arg-type]  # cattrs types **kwargs as AttributeOverride only
    )
    aliased = [(wire, _ALIASES[wire]) for wire in wire_names.values() if wire in _ALIASES]

    def structure_model(value: Any, _: Any) -> T:
        if not isinstance(value, Mapping):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        data = value
        for wire, names in aliased:
            if wire not in data:
                present = next((name for name in names if name in data), None)
                if present is not None:
                    data = {**data, wire: data[present]}
        model = base(data, cls)
        if keeps_raw:
            # Frozen models: attach the wire dict without a second construction.
            object.__setattr__(model, "raw", value)
        return after(model) if after is not None else model

    converter.register_structure_hook(cls, structure_model)


_converter = _make_converter()


def _describe(exc: Exception) -> list[str]:
    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc, path="$")
    return [f"$: {exc}"]


def structure(data: Any, cls: type[T], *, method: str = "", url: str = "") -> T:
    """Read ``data`` (decoded JSON) into ``cls``.

    Raises:
        ResponseValidationError: The data does not fit the model; each field is named.
    """
    try:
        return _converter.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        errors = _describe(exc)
        raise ResponseValidationError(
            f"could not read the service's answer as {cls.__name__}: " + "; ".join(errors[:5]),
            model=cls.__name__,
            errors=errors,
            method=method,
            url=url,
        ) from None


def structure_list(data: Any, cls: type[T], *, method: str = "", url: str = "") -> list[T]:
    """Read a JSON array of ``cls`` (the service's lists are bare arrays, §6).

    Raises:
        ResponseValidationError: Not an array, or an item does not fit; each field is named.
    """
    if not isinstance(data, list):
        raise ResponseValidationError(
            f"could not read the service's answer as a list of {cls.__name__}: "
            f"$: expected an array, got {type(data).__name__}",
            model=cls.__name__,
            errors=[f"$: expected an array, got {type(data).__name__}"],
            method=method,
            url=url,
        )
    return _structure_items(data, cls, method, url)


def _structure_items(data: list[Any], cls: type[T], method: str, url: str) -> list[T]:
    items = []
    for index, item in enumerate(data):
        try:
            items.append(_converter.structure(item, cls))
        except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
            errors = [line.replace("$", f"$[{index}]", 1) for line in _describe(exc)]
            raise ResponseValidationError(
                f"could not read the service's answer as a list of {cls.__name__}: "
                + "; ".join(errors[:5]),
                model=cls.__name__,
                errors=errors,
                method=method,
                url=url,
            ) from None
    return items
