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
* every response field is optional in the spec (reference/endpoints.md §3 M6): a missing or
  ``null`` field reads as None, or as ``""`` for a plain ``str`` field (whose default it is);
  a date string in a format :func:`parse_datetime` does not know reads as None (M5: team
  ``created`` is typed a bare string), the string left in ``raw``.
* a 204 with no body (M12) reads as an object with no keys, or an empty list.

Tolerance is for what is missing, ``null``, unknown or in an unknown date format, never for
a wrong type: a string that is not digits where an id is, an object where a name or date is.
A body that cannot be read raises :class:`ResponseValidationError` naming each bad field
(``$.fields[2].value: …``), never a cattrs traceback.
"""

from __future__ import annotations

import re
import reprlib
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from ._exceptions import ResponseValidationError
from ._redact import scrub, scrub_cut
from .models._base import Link, id_from_href, self_href
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

__all__ = ["NO_CONTENT", "parse_datetime", "structure", "structure_list"]

T = TypeVar("T")

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)

# yyyy-MM-dd[T ]HH:mm[:ss[.fraction]][Z|±HH[:]MM]; Python 3.10's fromisoformat reads none of
# the Spring variants, so the parts are normalised first.
_DATETIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[T ](?P<time>\d{2}:\d{2}(?::\d{2})?)(?:\.(?P<fraction>\d+))?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2}|[+-]\d{2})?"
)


#: Python 3.11's fromisoformat reads ISO 8601 and the Spring form; 3.10's reads neither.
_FROMISOFORMAT_READS_SPRING = sys.version_info >= (3, 11)


def parse_datetime(value: object) -> datetime:
    """Read a service timestamp into an aware datetime (naive values are taken as UTC).

    Accepts ISO 8601, the Spring form ``2022-06-16 15:16:27.980+0000``, and epoch
    milliseconds.

    Raises:
        ValueError: The value is not a timestamp.
    """
    if _FROMISOFORMAT_READS_SPRING and type(value) is str:  # ~1 µs instead of ~15 for the regex
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)
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
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:  # every answer is full of ids
        return value
    return _coerce_int(value)


def _coerce_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer id, got {value!r}")
    if (
        isinstance(value, int)
        or (isinstance(value, float) and value.is_integer())
        or (isinstance(value, str) and value.strip().lstrip("-").isdigit())
    ):
        result = int(value)
    else:
        raise ValueError(f"expected an integer, got {_short_repr(value)}")
    if not _INT64_MIN <= result <= _INT64_MAX:
        raise ValueError(f"{_short_repr(value)} does not fit in int64")
    return result


def _short_repr(value: object) -> str:
    """A bounded repr for a message: a hostile value may be huge, or nested 5,000 deep.

    A text is redacted before reprlib shortens it (to its start and end, which a secret
    the server echoed could straddle); a container is named, not shown, as its texts
    would be shortened before any redaction.
    """
    if isinstance(value, bool | float) or value is None:
        return repr(value)
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            return f"an integer of {value.bit_length()} bits"  # repr refuses > 4,300 digits
        return repr(value)
    if isinstance(value, str):
        return reprlib.repr(scrub(value))
    if isinstance(value, list | dict):
        return f"a JSON {'array' if isinstance(value, list) else 'object'} of {len(value)} items"
    return f"a {type(value).__name__}"


def _structure_str(value: object, _: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:  # every field is optional (§3 M6): null is "not sent", read as the default
        return ""
    # Values are strings on the wire (§7), but a number is unambiguous; a dict is not.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a string, got {type(value).__name__}")


# The hooks of ``X | None`` fields, each one call (cattrs's generic union path costs a few
# µs per field, and a wrapper around the hook of X one more call per field).


def _structure_optional_int(value: object, _: object) -> int | None:
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return None if value is None else _coerce_int(value)


def _structure_optional_str(value: object, _: object) -> str | None:
    if value is None or type(value) is str:
        return value
    return _structure_str(value, _)


def _structure_optional_datetime(value: object, _: object) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        # A string in a format we do not know (the spec types team ``created`` as a bare
        # string, endpoints.md §3 M5): unknown, not wrong; ``raw`` keeps it. Anything else
        # (an object, a bool) is a wrong type and stays an error.
        if type(value) is str:
            return None
        raise


def _structure_links(value: object, _: object) -> tuple[Link, ...]:
    if value is None:
        return ()
    if isinstance(value, list):  # Spring HATEOAS array: [{"rel": "self", "href": ...}]
        links = []
        for item in value:
            if not isinstance(item, dict | Mapping) or not isinstance(item.get("href"), str):
                raise ValueError("each link needs an href string")
            rel = item.get("rel", "")
            links.append(Link._make(rel if type(rel) is str else str(rel), item["href"]))
        return tuple(links)
    if isinstance(value, dict | Mapping):  # HAL: {"self": {"href": ...}}, a rel may hold a list
        links = []
        for rel, target in value.items():
            for item in target if isinstance(target, list) else (target,):
                if not isinstance(item, dict | Mapping) or not isinstance(item.get("href"), str):
                    raise ValueError(f"link {rel!r} needs an href string")
                links.append(Link._make(rel if type(rel) is str else str(rel), item["href"]))
        return tuple(links)
    raise ValueError(f"expected links, got {type(value).__name__}")


def _structure_datetime(value: object, _: object) -> datetime:
    return parse_datetime(value)


_MODELS = (User, Team, ContractType, Template, Term, TermOption, ContractField, Contract)


def _is_model_tuple(kind: Any) -> bool:
    args: tuple[Any, ...] = getattr(kind, "__args__", ())
    return (
        getattr(kind, "__origin__", None) is tuple
        and len(args) == 2
        and args[1] is Ellipsis
        and args[0] in _MODELS
    )


def _model_tuple_hook(kind: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    item = kind.__args__[0]
    found: list[Callable[[Any, Any], Any]] = []  # the item's hook, looked up at first use

    def structure_tuple(value: Any, _: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise ValueError(f"expected an array, got {type(value).__name__}")
        if not found:
            found.append(converter.get_structure_hook(item))
        hook = found[0]
        return tuple([hook(element, item) for element in value])

    return structure_tuple


def _is(expected: Any) -> Callable[[Any], bool]:
    def matches(kind: Any) -> bool:
        return bool(kind == expected)

    return matches


def _make_converter(*, detailed: bool) -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=detailed, prefer_attrib_converters=False)
    hooks: list[tuple[type[Any], Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
        (int, _structure_int, _structure_optional_int),
        (str, _structure_str, _structure_optional_str),
        (datetime, _structure_datetime, _structure_optional_datetime),
    ]
    for kind, hook, optional_hook in hooks:
        converter.register_structure_hook(kind, hook)
        converter.register_structure_hook_func(_is(kind | None), optional_hook)
    converter.register_structure_hook_func(lambda t: t == tuple[Link, ...], _structure_links)
    if not detailed:
        # Tuples of models without cattrs's per-item dispatch (the detailed converter keeps
        # it, for the index in its error paths).
        converter.register_structure_hook_factory(_is_model_tuple, _model_tuple_hook)

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
    fields = attrs.fields_dict(cls)  # type: ignore[arg-type]  # cls is an attrs class
    wire_names = {**({"links": "links"} if "links" in fields else {}), **renames}
    overrides = {attr: override(rename=wire) for attr, wire in wire_names.items()}
    keeps_raw = "raw" in fields
    if keeps_raw:
        overrides["raw"] = override(omit=True)
    base = make_dict_structure_fn(
        cls,
        converter,
        _cattrs_forbid_extra_keys=False,
        **overrides,  # type: ignore[arg-type]  # cattrs types **kwargs as AttributeOverride only
    )
    aliased = [(wire, _ALIASES[wire]) for wire in wire_names.values() if wire in _ALIASES]
    if not (aliased or keeps_raw or after or converter.detailed_validation):
        # Nothing to add around cattrs's own function (ContractField, read by the dozen):
        # a non-object fails inside it, and the detailed converter explains.
        converter.register_structure_hook(cls, base)
        return

    def structure_model(value: Any, _: Any) -> T:
        if type(value) is not dict and not isinstance(value, Mapping):
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


# Contracts by hand: every get, list and update reads them, and cattrs's generic function
# (with the alias and raw wrapper around it) costs about twice as much. Each does what the
# generated function of ``_register`` does, field for field; tests/test_converter.py holds
# the two equal on generated bodies. Failures need no detail: the detailed converter (made
# by ``_register``) reads a failed body again to name the field.


def _structure_contract_field(value: Any, _: Any) -> ContractField:
    # ``in`` on whatever the item is, as cattrs does (not .get): a non-object fails, or has
    # no keys. Read by the dozen per contract: the usual types are taken here, without a
    # hook call each, and _make gets its arguments by position (id, name, value).
    field_id = value["id"] if "id" in value else None  # noqa: SIM401  # see above
    if type(field_id) is not int or not _INT64_MIN <= field_id <= _INT64_MAX:
        field_id = _structure_optional_int(field_id, None)
    name = value["name"] if "name" in value else None  # noqa: SIM401
    if type(name) is not str:
        name = _structure_optional_str(name, None)
    text = value["value"] if "value" in value else ""  # noqa: SIM401
    if type(text) is not str:
        text = _structure_str(text, None)
    return ContractField._make(field_id, name, text)


def _structure_contract(value: Any, _: Any) -> Contract:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {type(value).__name__}")
    get = value.get  # the optional fields' hooks read a missing key's None as their default
    fields: tuple[ContractField, ...] = ()
    if "fields" in value:
        items = value["fields"]
        if type(items) is not list:
            raise ValueError(f"expected an array, got {type(items).__name__}")
        fields = tuple([_structure_contract_field(item, ContractField) for item in items])
    links = _structure_links(value["links"] if "links" in value else get("_links"), None)
    contract_id = _structure_optional_int(get("id"), None)
    return Contract._make(
        # The contract JSON has no id: its self link names it (§7), as _contract_id reads.
        id=id_from_href(self_href(links)) if contract_id is None else contract_id,
        name=_structure_optional_str(get("contract_name"), None),
        created_date=_structure_optional_datetime(get("created_date"), None),
        purchased_date=_structure_optional_datetime(get("purchased_date"), None),
        completed_date=_structure_optional_datetime(get("completedDate"), None),
        fields=fields,
        links=links,
        raw=value,
    )


class _NoContent:
    """What ``ContractClient._decode`` gives for a 204 without a body (endpoints.md §3 M12)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_CONTENT"


#: A 204 without a body: :func:`structure` reads it as ``{}`` (a model of Nones, ``raw``
#: ``{}``), :func:`structure_list` as ``[]``.
NO_CONTENT: Any = _NoContent()


# Two converters built alike: the fast one reads every answer; only when it fails is the
# body read again by the detailed one, whose errors name each bad field.
_converter = _make_converter(detailed=False)
_converter.register_structure_hook(ContractField, _structure_contract_field)
_converter.register_structure_hook(Contract, _structure_contract)
_detailed = _make_converter(detailed=True)


_hooks: dict[Any, Callable[[Any, Any], Any]] = {}


def _hook(cls: Any) -> Callable[[Any, Any], Any]:
    """The fast converter's function for ``cls``, found once (cattrs dispatches per call)."""
    hook = _hooks.get(cls)
    if hook is None:
        hook = _hooks[cls] = _converter.get_structure_hook(cls)
    return hook


#: The longest problem line an error keeps (the lines name the field first).
_LINE_MAX = 300


def _describe(exc: Exception) -> list[str]:
    if isinstance(exc, cattrs.BaseValidationError):
        lines = cattrs.transform_error(exc, path="$")
    else:
        lines = [f"$: {exc}"]
    # Redacted before cut (a value a server echoes may hold a secret across the cut).
    return [
        line if len(line) <= _LINE_MAX else scrub_cut(line, _LINE_MAX - 1) + "…" for line in lines
    ]


def _explain(data: Any, cls: Any) -> list[str]:
    """Return the detailed converter's description of why ``data`` is not a ``cls``."""
    try:
        _detailed.structure(data, cls)
    except Exception as exc:  # whatever hostile data made it raise: described, never raised
        return _describe(exc)
    return ["$: could not be read"]  # pragma: no cover - the converters agree on failures


def _error(cls: type[Any], errors: list[str], method: str, url: str, what: str) -> Exception:
    return ResponseValidationError(
        f"could not read the service's answer as {what}: " + "; ".join(errors[:5]),
        model=cls.__name__,
        errors=errors,
        method=method,
        url=url,
    )


def structure(data: Any, cls: type[T], *, method: str = "", url: str = "") -> T:
    """Read ``data`` (decoded JSON) into ``cls``.

    ``data`` may be :data:`NO_CONTENT` (a 204 without a body): then the model has every
    field None (or its default) and ``raw`` ``{}``.

    Raises:
        ResponseValidationError: The data does not fit the model; each field is named.
    """
    try:
        model: T = _hook(cls)(data, cls)
    except Exception:  # any failure of the fast path; the detailed one says what it was
        if data is NO_CONTENT:  # checked only here: off the path of every other answer
            return structure({}, cls, method=method, url=url)
        raise _error(cls, _explain(data, cls), method, url, cls.__name__) from None
    return model


def structure_list(data: Any, cls: type[T], *, method: str = "", url: str = "") -> list[T]:
    """Read a JSON array of ``cls`` (the service's lists are bare arrays, §6).

    :data:`NO_CONTENT` (a 204 without a body) reads as an empty list.

    Raises:
        ResponseValidationError: Not an array, or an item does not fit; each field is named.
    """
    what = f"a list of {cls.__name__}"
    if not isinstance(data, list):
        if data is NO_CONTENT:
            return []
        errors = [f"$: expected an array, got {type(data).__name__}"]
        raise _error(cls, errors, method, url, what)
    structure_one = _hook(cls)
    items = []
    for index, item in enumerate(data):
        try:
            items.append(structure_one(item, cls))
        except Exception:
            errors = [line.replace("$", f"$[{index}]", 1) for line in _explain(item, cls)]
            raise _error(cls, errors, method, url, what) from None
    return items


# -- Parties (reference/endpoints.md §2): collaborators, identity fields, companies --------
# Registered on both converters after them, so the hooks above stay as they are. Every field
# of these DTOs is optional in the spec; the identity-field DTOs mix snake_case and camelCase
# keys, so both spellings are read (the first present wins, as for ``nested_fields``).

from .models._parties import (  # noqa: E402  # registered last, after both converters exist
    Collaborator,
    CompanyCreated,
    IdentityField,
    IdentityFieldOption,
)

_ALIASES.update(
    {
        "validationType": ("validationType", "validation_type"),
        "parentOption": ("parentOption", "parent_option"),
        "identity_field_id": ("identity_field_id", "identityFieldId"),
        "value_type": ("value_type", "valueType"),
    }
)


def _structure_optional_bool(value: object, _: object) -> bool | None:
    if value is None or type(value) is bool:
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    raise ValueError(f"expected a boolean, got {_short_repr(value)}")


def _collaborator_id(collaborator: Collaborator) -> Collaborator:
    if collaborator.id is None:  # as for contracts: the self link names it
        object.__setattr__(collaborator, "id", id_from_href(self_href(collaborator.links)))
    return collaborator


for _party_converter in (_converter, _detailed):
    _party_converter.register_structure_hook_func(_is(bool | None), _structure_optional_bool)
    _register(_party_converter, IdentityFieldOption, nested_fields="nested_fields")
    _register(
        _party_converter,
        IdentityField,
        validation_type="validationType",
        parent_option="parentOption",
        identity_field_id="identity_field_id",
        value_type="value_type",
    )
    _register(_party_converter, Collaborator, name="collaborator_name", after=_collaborator_id)
    _register(_party_converter, CompanyCreated)
del _party_converter
