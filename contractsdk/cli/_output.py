"""How the CLI shows things: rich tables for people, JSON for scripts.

Rich decides about colour: none when the stream is not a terminal, none with ``NO_COLOR``
set. On a terminal, tables fit its width and wrap their cells; into a pipe or a file they
take the width they need, so ``grep`` sees whole lines.

What a command prints of the service's answers goes through here, and is scrubbed of the
credentials its client holds (``_redact``): a successful answer may echo the key or the
token in a value (a name, a field) as well as an error may.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, TextIO

import attrs
import click
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from contractsdk._exceptions import ConfigurationError
from contractsdk._redact import scrub
from contractsdk.cli import is_utf8

__all__ = [
    "console",
    "dump_json",
    "print_pairs",
    "print_table",
    "say",
    "to_jsonable",
    "write_file",
]

#: The width of output that is not a terminal: no wrapping.
PIPE_WIDTH = 1000


def console(*, stderr: bool = False, record: bool = False) -> Console:
    """Return a console on stdout (or stderr), made now so it follows ``sys.stdout``.

    Args:
        stderr: Write on stderr (progress, notes) rather than stdout.
        record: Keep what is printed, for ``save_svg`` / ``export_text``.
    """
    stream = sys.stderr if stderr else sys.stdout
    out = Console(file=stream, highlight=False, soft_wrap=False, record=record)
    if not out.is_terminal:
        out.width = PIPE_WIDTH
    return out


def to_jsonable(value: Any) -> Any:
    """Turn models (attrs classes), tuples, enums and datetimes into JSON-ready values.

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


async def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, or raise a ConfigurationError that says why not.

    An error the user can mend (no such folder, no permission, a full disk) is one line,
    not a traceback.
    """
    try:
        await asyncio.to_thread(path.write_bytes, data)
    except OSError as exc:
        raise ConfigurationError(f"cannot write {path}: {exc.strerror or exc}") from None


def dump_json(value: Any, stream: TextIO | None = None) -> None:
    """Print ``value`` as indented JSON (never coloured: it is for programs).

    Every credential the running client holds is replaced by ``[redacted]``, as written
    (the scrubber knows a secret's JSON-escaped forms): the JSON stays valid.
    """
    out = stream or sys.stdout
    # On a stream that is not UTF-8, "é" as \u00e9: still the same JSON, nothing replaced.
    text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=not is_utf8(out))
    out.write(scrub(text) + "\n")


def say(text: str, *, err: bool = False) -> None:
    """Print a line of text (on stderr with ``err``), the client's credentials replaced."""
    click.echo(scrub(text), err=err)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, bool):
        return "yes" if value else "no"
    return scrub(str(value)).replace("\n", " ")


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    indent: int = 0,
    out: Console | None = None,
) -> None:
    """Print rows under bold headers, columns aligned; "(none)" when there are no rows.

    Args:
        headers: Column titles (shown in capitals).
        rows: One sequence of cell values per row (None shows as ``-``).
        indent: Spaces before the table (the demo's steps).
        out: The console to print on (default: a new one on stdout).
    """
    target = out or console()
    cells = [[_cell(value) for value in row] for row in rows]
    pad = " " * indent
    if not cells:
        target.print(f"{pad}(none)", markup=False)
        return
    table = Table(box=None, pad_edge=False, header_style="bold cyan", show_edge=False)
    for header in headers:
        table.add_column(header.upper(), overflow="fold")
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))  # data, never markup
    _emit(target, Padding(table, (0, 0, 0, indent)) if indent else table)


def print_pairs(rows: Sequence[tuple[str, object]], *, out: Console | None = None) -> None:
    """Print ``label  value`` lines, the labels bold and the values aligned."""
    table = Table(box=None, pad_edge=False, show_header=False, show_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for label, value in rows:
        table.add_row(label, Text(_cell(value)))
    _emit(out or console(), table)


def _emit(target: Console, renderable: RenderableType) -> None:
    """Print a table; into a pipe or file, without the padding rich adds at line ends."""
    if target.is_terminal:
        target.print(renderable)
        return
    with target.capture() as captured:
        target.print(renderable)
    text = "".join(line.rstrip() + "\n" for line in captured.get().splitlines())
    target.file.write(text)
