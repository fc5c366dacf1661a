"""How the CLI shows things: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any, TextIO

import attrs

__all__ = ["dump_json", "print_table", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Turn models (attrs classes), tuples and datetimes into JSON-ready values.

    The ``raw`` wire dict of a model is left out: the model's own fields are the output.
    """
    if attrs.has(type(value)):
        return {
            field.name: to_jsonable(getattr(value, field.name))
            for field in attrs.fields(type(value))
            if field.name != "raw"
        }
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    return value


def dump_json(value: Any, stream: TextIO | None = None) -> None:
    """Print ``value`` as indented JSON."""
    out = stream or sys.stdout
    json.dump(to_jsonable(value), out, indent=2, ensure_ascii=False)
    out.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value).replace("\n", " ")


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    stream: TextIO | None = None,
    *,
    indent: str = "",
) -> None:
    """Print rows under headers, columns aligned; "(none)" when there are no rows."""
    out = stream or sys.stdout
    cells = [[_cell(value) for value in row] for row in rows]
    if not cells:
        out.write(f"{indent}(none)\n")
        return
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    lines = [[h.upper() for h in headers], *cells]
    for row in lines:
        text = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        out.write(indent + text.rstrip() + "\n")
