"""Where a bulk job's rows come from: CSV, JSONL, or any (async) iterable of mappings.

Every source is read as a stream of :class:`SourceRow`, in chunks, so a file of any size
costs the memory of one chunk. Files are read in a worker thread (``asyncio.to_thread``),
a chunk at a time, so a slow disk never stalls the event loop.

A line that cannot be read (a CSV line with the wrong number of fields or bad quoting, a
JSONL line that is not a JSON object, bytes that are not UTF-8) becomes a ``SourceRow``
with a ``problem`` and its line number; the rows around it are read as usual (a CSV
quote left open does not swallow the lines after it: they are read again as rows). Only what
makes the whole input unusable is raised: a file that cannot be opened, an empty file, a
CSV header with a blank or repeated column name.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
from collections import Counter
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import Any, Literal, TextIO

import attrs

from contractsdk._exceptions import ConfigurationError

__all__ = [
    "CHUNK_ROWS",
    "CsvSource",
    "InputFormat",
    "IterableSource",
    "JsonlSource",
    "RowSource",
    "SourceRow",
    "open_source",
]

#: Rows read per step (one thread hop for files); the memory of a job's input side.
CHUNK_ROWS = 256

InputFormat = Literal["csv", "jsonl"]

_SUFFIXES: dict[str, InputFormat] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}


@attrs.frozen(kw_only=True)
class SourceRow:
    """One record of the input, or the problem that kept it from being read.

    Attributes:
        number: The 1-based position of the record among the data records (a CSV header
            is not counted; blank lines are skipped and not counted).
        line: The line of the file where the record starts, or None for an iterable.
        data: ``{column: value}``, or None when the record could not be read.
        problem: Why the record could not be read (None when it was read).
        raw: For an unreadable record, what could be read of it (to tell it apart from
            others on a later run).
    """

    number: int
    line: int | None
    data: Mapping[str, Any] | None
    problem: str | None = None
    raw: str = ""


def _take(rows: Iterator[SourceRow], count: int) -> list[SourceRow]:
    chunk: list[SourceRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= count:
            break
    return chunk


def _has_surrogates(text: str) -> bool:
    # Undecodable bytes arrive as lone surrogates (the "surrogateescape" error handler).
    return any("\udc80" <= char <= "\udcff" for char in text)


def _open_text(path: Path) -> TextIO:
    """Open a UTF-8 text file; a byte-order mark is skipped, bad bytes are kept as escapes."""
    try:
        if path.is_dir():
            raise ConfigurationError(f"cannot read {path}: it is a directory")
        return open(path, encoding="utf-8-sig", errors="surrogateescape", newline="")
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None


class RowSource:
    """A stream of :class:`SourceRow` in chunks; subclasses say where they come from.

    Attributes:
        columns: The column names when the source declares them up front (a CSV header),
            else None (JSONL and iterables: each record has its own keys).
        path: The file read, if the source is a file.
    """

    columns: tuple[str, ...] | None = None
    path: Path | None = None

    def chunks(self, size: int = CHUNK_ROWS) -> AsyncGenerator[list[SourceRow], None]:
        """Return the rows in lists of at most ``size`` records (an async generator)."""
        raise NotImplementedError

    async def open(self) -> None:
        """Check that the input can be read and read what comes before the rows.

        Raises:
            ConfigurationError: The input cannot be read or is empty.
        """

    async def count(self) -> int | None:
        """Return about how many records there are, or None when it cannot be known cheaply."""
        return None

    async def aclose(self) -> None:
        """Release what :meth:`open` took (a file), if the rows were not read to the end."""

    def describe(self) -> str:
        """Return a short description of the source for messages and the journal."""
        return type(self).__name__


class _FileSource(RowSource):
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self.path = self._path
        self._file: TextIO | None = None

    def describe(self) -> str:
        return str(self._path)

    async def open(self) -> None:
        if self._file is None:
            self._file = await asyncio.to_thread(self._open)

    async def aclose(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            await asyncio.to_thread(handle.close)

    def _open(self) -> TextIO:
        handle = _open_text(self._path)
        try:
            first = handle.read(4096)
            if not first.strip():
                raise ConfigurationError(f"{self._path} is empty: there are no rows to create")
            handle.seek(0)
            self._start(handle)
        except BaseException:
            handle.close()
            raise
        return handle

    def _start(self, handle: TextIO) -> None:
        """Read what comes before the rows (a CSV header)."""

    def _rows(self, handle: TextIO) -> Iterator[SourceRow]:
        raise NotImplementedError

    async def chunks(self, size: int = CHUNK_ROWS) -> AsyncGenerator[list[SourceRow], None]:
        await self.open()
        handle = self._file
        assert handle is not None
        rows = self._rows(handle)
        try:
            while chunk := await asyncio.to_thread(_take, rows, size):
                yield chunk
        finally:
            self._file = None
            await asyncio.to_thread(handle.close)

    async def count(self) -> int | None:
        """Count the lines (the records, give or take multi-line CSV fields), in a thread."""
        return await asyncio.to_thread(self._count)

    def _count(self) -> int | None:
        try:
            with open(self._path, "rb") as handle:
                lines = 0
                last = b"\n"
                while block := handle.read(1 << 20):
                    lines += block.count(b"\n")
                    last = block[-1:]
        except OSError:
            return None
        lines += last != b"\n"
        return max(0, lines - self._header_lines())

    def _header_lines(self) -> int:
        return 0


class _Lines:
    """The lines of a file for ``csv.reader``, numbered, with lines that can be read again.

    When a record fails to parse after taking several lines (a quote left open swallows
    every line up to the end of the file), only its first line is the bad row: the others
    are given back and read again as rows of their own.
    """

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle
        self._again: list[tuple[int, str]] = []  # (line number, text), next first at the end
        self.taken: list[tuple[int, str]] = []  # the lines of the record being read
        self.number = 0  # the number of the last line given out

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if self._again:
            self.number, text = self._again.pop()
        else:
            text = self._handle.readline()
            if not text:
                raise StopIteration
            self.number += 1
        self.taken.append((self.number, text))
        return text

    def start_record(self) -> int:
        """Forget the lines of the last record; return the number of the next line."""
        self.taken = []
        return self._again[-1][0] if self._again else self.number + 1

    def give_back_all_but_first(self) -> None:
        """Read the lines of the failed record again, except its first."""
        rest = self.taken[1:]
        self._again.extend(reversed(rest))
        if rest:
            self.number = rest[0][0] - 1


class CsvSource(_FileSource):
    """Rows of a CSV file with a header line (RFC 4180; UTF-8, with or without a BOM).

    A line with more or fewer fields than the header, or with bad quoting, becomes a row
    with a problem naming its line; blank lines are skipped.

    Args:
        path: The file.
        delimiter: The field separator.
    """

    def __init__(self, path: str | os.PathLike[str], *, delimiter: str = ",") -> None:
        super().__init__(path)
        self._delimiter = delimiter
        self._reader: Any = None
        self._lines: _Lines | None = None

    def _header_lines(self) -> int:
        return 1

    def _start(self, handle: TextIO) -> None:
        self._lines = _Lines(handle)
        reader = csv.reader(self._lines, delimiter=self._delimiter, strict=True)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise ConfigurationError(f"{self._path}, line 1 (the header): {exc}") from None
        if not header or not any(name.strip() for name in header):
            raise ConfigurationError(f"{self._path} has no header line naming its columns")
        names = tuple(name.strip() for name in header)
        if _has_surrogates("".join(names)):
            raise ConfigurationError(f"{self._path}: the header line is not valid UTF-8")
        blank = [index + 1 for index, name in enumerate(names) if not name]
        if blank:
            raise ConfigurationError(
                f"{self._path}: column {', '.join(map(str, blank))} of the header has no name"
            )
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        if repeated:
            raise ConfigurationError(
                f"{self._path}: the header names {', '.join(map(repr, repeated))} more than once"
            )
        self.columns = names
        self._reader = reader

    def _rows(self, handle: TextIO) -> Iterator[SourceRow]:
        reader = self._reader
        lines = self._lines
        columns = self.columns
        assert reader is not None
        assert lines is not None
        assert columns is not None
        width = len(columns)
        number = 0
        while True:
            start = lines.start_record()
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                lines.give_back_all_but_first()
                number += 1
                yield SourceRow(
                    number=number,
                    line=start,
                    data=None,
                    problem=f"line {start}: malformed CSV ({exc})",
                    raw=f"line {start}",
                )
                continue
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line
            number += 1
            if len(fields) != width:
                yield SourceRow(
                    number=number,
                    line=start,
                    data=None,
                    problem=(
                        f"line {start}: expected {width} fields (as in the header), "
                        f"found {len(fields)}"
                    ),
                    raw=json.dumps(fields, ensure_ascii=False),
                )
                continue
            if _has_surrogates("".join(fields)):
                yield SourceRow(
                    number=number,
                    line=start,
                    data=None,
                    problem=f"line {start}: not valid UTF-8",
                    raw=json.dumps(fields, ensure_ascii=True),
                )
                continue
            yield SourceRow(number=number, line=start, data=dict(zip(columns, fields, strict=True)))


class JsonlSource(_FileSource):
    """Rows of a JSON Lines file: one JSON object per line (UTF-8, BOM accepted).

    A line that is not a JSON object becomes a row with a problem naming its line; blank
    lines are skipped.

    Args:
        path: The file.
    """

    def _rows(self, handle: TextIO) -> Iterator[SourceRow]:
        number = 0
        for index, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            number += 1
            problem = None
            data: Any = None
            if _has_surrogates(text):
                problem = f"line {index}: not valid UTF-8"
            else:
                try:
                    data = json.loads(text)
                except ValueError as exc:
                    problem = f"line {index}: not JSON ({exc.args[0] if exc.args else exc})"
                else:
                    if not isinstance(data, dict):
                        problem = (
                            f"line {index}: expected a JSON object of column values, "
                            f"found {type(data).__name__}"
                        )
            if problem is not None:
                raw = text.strip()[:1000].encode("utf-8", "backslashreplace").decode()
                yield SourceRow(number=number, line=index, data=None, problem=problem, raw=raw)
            else:
                yield SourceRow(number=number, line=index, data=data)


class IterableSource(RowSource):
    """Rows from an iterable or async iterable of mappings (consumed once, lazily).

    An item that is not a mapping becomes a row with a problem.

    Args:
        rows: ``Iterable[Mapping]`` or ``AsyncIterable[Mapping]``.
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]]):
        self._items = rows
        self._read = False

    def describe(self) -> str:
        return f"an iterable ({type(self._items).__name__})"

    @staticmethod
    def _row(number: int, item: object) -> SourceRow:
        if isinstance(item, Mapping):
            return SourceRow(number=number, line=None, data=item)
        return SourceRow(
            number=number,
            line=None,
            data=None,
            problem=f"row {number}: expected a mapping of column values, found "
            f"{type(item).__name__}",
            raw=repr(item)[:1000],
        )

    async def chunks(self, size: int = CHUNK_ROWS) -> AsyncGenerator[list[SourceRow], None]:
        if self._read and not isinstance(self._items, Sequence):
            raise ConfigurationError(
                "these rows were already read (an iterator or generator is read once); "
                "make a new BulkJob with fresh rows"
            )
        self._read = True
        chunk: list[SourceRow] = []
        number = 0
        items = self._items
        if isinstance(items, AsyncIterable):
            async for item in items:
                number += 1
                chunk.append(self._row(number, item))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        else:
            for item in items:
                number += 1
                chunk.append(self._row(number, item))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
                    await asyncio.sleep(0)  # a long sync iterable must not starve the loop
        if chunk:
            yield chunk


def open_source(
    rows: str
    | os.PathLike[str]
    | Iterable[Mapping[str, Any]]
    | AsyncIterable[Mapping[str, Any]]
    | RowSource,
    *,
    format: InputFormat | None = None,  # the natural name of the option
) -> RowSource:
    """Return the source of a job's rows.

    Args:
        rows: A path (``.csv``, ``.jsonl``/``.ndjson``; give ``format`` for other names),
            an iterable or async iterable of mappings, or a :class:`RowSource`.
        format: ``"csv"`` or ``"jsonl"``, for a path whose suffix does not say.

    Raises:
        ConfigurationError: The format of a path cannot be told, or ``rows`` is a single
            mapping or a string of data rather than rows.
    """
    if isinstance(rows, RowSource):
        return rows
    if isinstance(rows, str | os.PathLike):
        path = Path(rows)
        kind = format or _SUFFIXES.get(path.suffix.lower())
        if kind is None:
            raise ConfigurationError(
                f"cannot tell the format of {path} from its name; use a .csv or .jsonl file "
                "or say format='csv' / 'jsonl'"
            )
        return CsvSource(path) if kind == "csv" else JsonlSource(path)
    candidate: object = rows
    if isinstance(candidate, Mapping | bytes | bytearray):
        raise ConfigurationError(
            "rows must be a path or an iterable of mappings (one per row), not a "
            f"{type(candidate).__name__}"
        )
    if isinstance(candidate, AsyncIterable | Iterable):
        return IterableSource(candidate)
    raise ConfigurationError(f"rows must be a path or an iterable of mappings, not {rows!r}")
