"""Where a bulk job's rows come from: CSV, JSONL, or any (async) iterable of mappings.

Every source is read as a stream of :class:`SourceRow`, in chunks, so a file of any size
costs the memory of one chunk. Files are read in a worker thread (``asyncio.to_thread``),
a chunk at a time, so a slow disk never stalls the event loop.

A line that cannot be read (a CSV line with the wrong number of fields or bad quoting, a
JSONL line that is not a JSON object, a JSON string escape that is no character or a JSON
number too long to read) becomes a ``SourceRow`` with a ``problem`` and its line number;
the rows around it are read as usual (a CSV quote left open does not swallow the lines
after it: they are read again as rows). Only what makes the whole input unusable is
raised: a file that cannot be opened, an empty file, a CSV header with a blank or repeated
column name, and a file that is not UTF-8 text.

Encodings: a file is read once, as bytes, when it is opened (the same pass that counts its
lines). A file that is UTF-16 (a byte-order mark FF FE or FE FF, or NUL bytes: Excel's
"Unicode Text"), a zip file (an Excel workbook), or has bytes that are not UTF-8 and no
UTF-8 character beyond ASCII (a file saved in another encoding, such as Excel's
Windows-1252 "CSV (Comma delimited)") is refused with one error saying how to save it: its
rows would all be unreadable, or mean other characters. Only in a file that is UTF-8
elsewhere are such bytes a problem of their own line.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
import re
import sys
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
from typing import Any, BinaryIO, Literal, TextIO

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
    "input_format",
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


def _lone_surrogate(text: str) -> str | None:
    r"""The first lone surrogate of a string (a JSON ``\ud800`` escape), or None.

    A surrogate is half of a UTF-16 pair, not a character: it cannot be encoded in UTF-8,
    so it cannot be stored in the journal nor sent (JSON decoding joins a valid pair into
    one character, so any surrogate left is alone).
    """
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return char
    return None


class _LongNumber:
    """A JSON integer with more digits than ``int()`` converts (``sys.get_int_max_str_digits``)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _LongNumber:
    try:
        return int(text)
    except ValueError:  # too many digits: said so, naming the key, by _row_problem
        return _LongNumber(len(text.lstrip("-")))


def _not_a_character(char: str) -> str:
    return (
        f"the escape \\u{ord(char):04x}, a lone surrogate (half of a UTF-16 pair) that is "
        "not a character"
    )


def _value_problem(value: Any, where: str) -> str | None:
    """Why a value read from the input cannot be used (``where`` names it), or None."""
    if isinstance(value, str):
        char = _lone_surrogate(value)
        if char is not None:
            return f"{where} has {_not_a_character(char)}"
    elif isinstance(value, _LongNumber):
        limit = sys.get_int_max_str_digits()
        return f"{where} is a number of {value.digits} digits, too long to read (at most {limit})"
    elif isinstance(value, Mapping):
        for key, item in value.items():
            char = _lone_surrogate(key) if isinstance(key, str) else None
            if char is not None:
                return f"{where} has a key {key!r} with {_not_a_character(char)}"
            problem = _value_problem(item, f"{where}[{key!r}]")
            if problem is not None:
                return problem
    elif isinstance(value, list | tuple):
        for position, item in enumerate(value):
            problem = _value_problem(item, f"{where}[{position}]")
            if problem is not None:
                return problem
    return None


def _row_problem(data: Mapping[Any, Any]) -> str | None:
    """Why a row's values cannot be used, naming the column (or key), or None."""
    for column, value in data.items():
        char = _lone_surrogate(column) if isinstance(column, str) else None
        if char is not None:
            return f"the column name {column!r} has {_not_a_character(char)}"
        problem = _value_problem(value, f"the value of {column!r}")
        if problem is not None:
            return problem
    return None


#: Bytes read per step when a file is scanned.
_SCAN_BLOCK = 1 << 20
#: A line longer than this is scanned in parts (a file of one huge line must not be held).
_SCAN_LINE = 1 << 22
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line ends ``readline()`` knows (newline="")
_NOT_UTF8 = re.compile("[\udc80-\udcff]+")  # undecodable bytes, as "surrogateescape" keeps them
_WIDE_UTF8 = re.compile("[^\x00-\x7f\udc80-\udcff]")  # a character of several UTF-8 bytes
_UTF8_BOM = b"\xef\xbb\xbf"


def _bytes_of(escaped: str) -> bytes:
    """The bytes that ``surrogateescape`` kept as lone surrogates."""
    return bytes(ord(char) - 0xDC00 for char in escaped)


def _describe_bytes(raw: bytes) -> str:
    """Name bytes that are not UTF-8; one byte also as the Windows-1252 character it is."""
    if len(raw) != 1:
        return (
            "the bytes "
            + " ".join(f"0x{byte:02X}" for byte in raw[:4])
            + ("…" if len(raw) > 4 else "")
        )
    try:
        char = raw.decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: no character there either
        return f"the byte 0x{raw[0]:02X}"
    return f"the byte 0x{raw[0]:02X} ({char!r} in Windows-1252)"


def _not_utf8(texts: Iterable[str]) -> bytes | None:
    """The first bytes that are not UTF-8 in texts read with "surrogateescape", or None."""
    for text in texts:
        found = _NOT_UTF8.search(text)
        if found is not None:
            return _bytes_of(found.group())
    return None


def _line_not_utf8(raw: bytes) -> str:
    """The problem of a line with bytes that are not UTF-8, in a file that is UTF-8."""
    return (
        f"{_describe_bytes(raw)} {'is' if len(raw) == 1 else 'are'} not UTF-8, unlike the "
        "rest of the file: retype this line's special characters (they were saved in "
        "another encoding)"
    )


def _line_cut(data: bytes) -> int:
    """Where to end a scanned part of a file: after its last line break.

    A carriage return at the very end stays in the next part (its line feed may follow);
    a part without a line break longer than ``_SCAN_LINE`` is cut before its last,
    perhaps incomplete, UTF-8 sequence.
    """
    end = data.rfind(b"\n") + 1
    if end:
        return end
    end = data.rfind(b"\r", 0, len(data) - 1) + 1
    if end or len(data) <= _SCAN_LINE:
        return end
    end = len(data)
    while end > len(data) - 3 and 0x80 <= data[end - 1] <= 0xBF:  # continuation bytes
        end -= 1
    return end - 1 if data[end - 1] >= 0xC0 else end  # before a sequence's lead byte


def _line_breaks(part: bytes) -> int:
    return part.count(b"\n") + part.count(b"\r") - part.count(b"\r\n")


class _NotUtf8:
    """The lines of a file with bytes that are not UTF-8, as a scan finds them."""

    def __init__(self) -> None:
        self.first: int | None = None  # the first such line
        self.raw = b""  # its first run of such bytes
        self.lines = 0  # how many lines have such bytes
        self.wide = False  # whether the file has UTF-8 characters beyond ASCII

    def look(self, part: bytes, before: int) -> None:
        """Look at a part of the file (whole lines) that starts after ``before`` lines."""
        if part.isascii():
            return
        try:
            part.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            self.wide = True
            return
        text = part.decode("utf-8", "surrogateescape")
        self.wide = self.wide or _WIDE_UTF8.search(text) is not None
        for offset, line in enumerate(_LINE_BREAK.split(text)):
            found = _NOT_UTF8.search(line)
            if found is None:
                continue
            self.lines += 1
            if self.first is None:
                self.first = before + offset + 1
                self.raw = _bytes_of(found.group())


def _scan(path: Path, handle: BinaryIO, hint: str, *, header: int) -> tuple[int, str]:
    """Read a file's bytes once: refuse one that is not UTF-8 text; count and hash it.

    Returns:
        Its line count, and the SHA-256 of its bytes (what names it to other hosts:
        :mod:`contractsdk.bulk._lease`).

    Args:
        path: The file, for messages.
        handle: The file, opened for reading bytes.
        hint: How to save the file as UTF-8.
        header: How many lines the header takes (1 for CSV, 0 for JSONL).

    Raises:
        ConfigurationError: The file is UTF-16 (or has NUL bytes), a zip file, has bytes
            that are not UTF-8 in its header, or has such bytes and no UTF-8 character
            beyond ASCII (it was saved in another encoding).
    """
    head = handle.read(_SCAN_BLOCK)
    digest = hashlib.sha256(head)
    if head.startswith(b"PK\x03\x04"):
        raise ConfigurationError(f"{path} is a zip file (an Excel workbook?), not text. {hint}")
    mark = next((bom for bom in (b"\xff\xfe", b"\xfe\xff") if head.startswith(bom)), None)
    if mark is not None or b"\x00" in head[:4096]:
        why = f"it starts with the bytes {mark.hex(' ').upper()}" if mark else "it has NUL bytes"
        raise ConfigurationError(
            f'{path} looks like UTF-16 text ({why}, as Excel\'s "Unicode Text" does), '
            f"not UTF-8. {hint}"
        )
    found = _NotUtf8()
    lines = 0  # line breaks before ``data``
    last = head[-1:]
    data = head.removeprefix(_UTF8_BOM)  # a BOM says UTF-8; it is no UTF-8 *text*
    more = bool(head)
    while True:
        cut = _line_cut(data) if more else len(data)
        part, data = data[:cut], data[cut:]
        found.look(part, lines)
        lines += _line_breaks(part)
        if not more:
            break
        block = handle.read(_SCAN_BLOCK)
        digest.update(block)
        more = bool(block)
        last = block[-1:] or last
        data += block
    if found.first is not None and (found.first <= header or not found.wide):
        others = found.lines - 1
        also = {0: "", 1: ", as does 1 other line"}.get(others, f", as do {others} other lines")
        raise ConfigurationError(
            f"{path} is not UTF-8 text: line {found.first} has {_describe_bytes(found.raw)}"
            f"{also}, so it was saved in another encoding. {hint}"
        )
    return lines + (last not in (b"", b"\n", b"\r")), digest.hexdigest()


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
        digest: The SHA-256 of the file's bytes, once :meth:`open` has read them.
    """

    columns: tuple[str, ...] | None = None
    path: Path | None = None
    digest: str | None = None

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
    #: How to make the file UTF-8, for the message that refuses one that is not.
    _save_as = "Save it as UTF-8"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self.path = self._path
        self._file: TextIO | None = None
        self._lines_seen: int | None = None  # the line count of the scan at open

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
            try:
                with open(self._path, "rb") as raw:
                    self._lines_seen, self.digest = _scan(
                        self._path, raw, self._save_as, header=self._header_lines()
                    )
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot read {self._path}: {exc.strerror or exc}"
                ) from None
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
        if self._lines_seen is not None:  # counted by the scan at open
            return max(0, self._lines_seen - self._header_lines())
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
    with a problem naming its line; blank lines are skipped. A quote left open makes its
    line such a row, and the lines after it are read again as rows; one that closes on a
    later line joins the lines between into one record (a quoted field may hold line
    breaks): if that record then has the wrong number of fields, its problem names all
    its lines, and none of them is a row.

    Args:
        path: The file.
        delimiter: The field separator.
    """

    _save_as = 'Save it as UTF-8 (in Excel: File > Save As, type "CSV UTF-8 (Comma delimited)")'

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
        bad = _not_utf8(names)
        if bad is not None:  # a header of several lines (the scan saw its first)
            raise ConfigurationError(
                f"{self._path} is not UTF-8 text: its header has {_describe_bytes(bad)}, so "
                f"it was saved in another encoding. {self._save_as}"
            )
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
                end = lines.taken[-1][0] if lines.taken else start
                # A quote that closes on a later line made one record of the lines between:
                # if they were rows, they are named here rather than lost without a word.
                joined = (
                    f"; lines {start} to {end} are one record, joined by a quoted field "
                    "(is a quote left open?)"
                    if end > start
                    else ""
                )
                yield SourceRow(
                    number=number,
                    line=start,
                    data=None,
                    problem=(
                        f"line {start}: expected {width} fields (as in the header), "
                        f"found {len(fields)}{joined}"
                    ),
                    raw=json.dumps(fields, ensure_ascii=False),
                )
                continue
            bad = _not_utf8(fields)
            if bad is not None:
                yield SourceRow(
                    number=number,
                    line=start,
                    data=None,
                    problem=f"line {start}: {_line_not_utf8(bad)}",
                    raw=json.dumps(fields, ensure_ascii=True),
                )
                continue
            yield SourceRow(number=number, line=start, data=dict(zip(columns, fields, strict=True)))


class JsonlSource(_FileSource):
    """Rows of a JSON Lines file: one JSON object per line (UTF-8, BOM accepted).

    A line that is not a JSON object, or whose values cannot be used (a string escape that
    is no character, a number too long to read), becomes a row with a problem naming its
    line and the column; blank lines are skipped.

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
            bad = _not_utf8((text,))
            if bad is not None:
                problem = f"line {index}: {_line_not_utf8(bad)}"
            else:
                try:
                    data = json.loads(text, parse_int=_parse_int)
                    found = _row_problem(data) if isinstance(data, dict) else None
                except ValueError as exc:
                    problem = f"line {index}: not JSON ({exc.args[0] if exc.args else exc})"
                except RecursionError:
                    problem = f"line {index}: its JSON is nested too deeply to read"
                else:
                    if not isinstance(data, dict):
                        problem = (
                            f"line {index}: expected a JSON object of column values, "
                            f"found {type(data).__name__}"
                        )
                    elif found is not None:
                        problem = f"line {index}: {found}"
            if problem is not None:
                raw = text.strip()[:1000].encode("utf-8", "backslashreplace").decode()
                yield SourceRow(number=number, line=index, data=None, problem=problem, raw=raw)
            else:
                yield SourceRow(number=number, line=index, data=data)


class IterableSource(RowSource):
    """Rows from an iterable or async iterable of mappings (consumed once, lazily).

    An item that is not a mapping, or with a string that is no text (a lone surrogate,
    which cannot be encoded), becomes a row with a problem.

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
            try:
                problem = _row_problem(item)
            except RecursionError:
                problem = "its values are nested too deeply to read"
            if problem is None:
                return SourceRow(number=number, line=None, data=item)
            return SourceRow(
                number=number,
                line=None,
                data=None,
                problem=f"row {number}: {problem}",
                raw=repr(item)[:1000],
            )
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


def input_format(path: str | os.PathLike[str]) -> InputFormat | None:
    """Return the format a file's name says (``.csv``, ``.jsonl``, ``.ndjson``), or None."""
    return _SUFFIXES.get(Path(path).suffix.lower())


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
        kind = format or input_format(path)
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
