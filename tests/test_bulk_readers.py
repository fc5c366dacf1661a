"""Readers of a bulk job's input: CSV, JSONL, iterables and async iterables."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from contractsdk import ConfigurationError
from contractsdk.bulk import CsvSource, IterableSource, JsonlSource, RowSource, SourceRow
from contractsdk.bulk._readers import input_format, open_source


async def read_all(source: RowSource, size: int = 256) -> list[SourceRow]:
    rows: list[SourceRow] = []
    async for chunk in source.chunks(size):
        rows.extend(chunk)
    return rows


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


async def test_csv_reads_rows_with_numbers_and_lines(tmp_path: Path) -> None:
    """Rows are numbered from 1 and carry the line where they start."""
    path = write(tmp_path, "a.csv", ' name , rent\nFlat 1,month\n"Flat\n2",week\n')
    source = CsvSource(path)
    await source.open()
    assert source.columns == ("name", "rent")
    rows = await read_all(source)
    assert [(r.number, r.line, r.data) for r in rows] == [
        (1, 2, {"name": "Flat 1", "rent": "month"}),
        (2, 3, {"name": "Flat\n2", "rent": "week"}),
    ]


async def test_csv_with_a_bom_is_read(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark does not become part of the first column's name."""
    path = write(tmp_path, "bom.csv", "\ufeffcontract_name,x\nA,1\n".encode())
    source = CsvSource(path)
    rows = await read_all(source)
    assert source.columns == ("contract_name", "x")
    assert rows[0].data == {"contract_name": "A", "x": "1"}


async def test_csv_malformed_lines_are_reported_and_the_others_read(tmp_path: Path) -> None:
    """A line with the wrong number of fields or bad quoting is a problem row; others pass."""
    text = 'a,b\n1,2\n3,4,5\n6,"x"y\n7,8\n\n9\n10,11\n'
    rows = await read_all(CsvSource(write(tmp_path, "bad.csv", text)))
    good = [r.data for r in rows if r.data is not None]
    assert good == [{"a": "1", "b": "2"}, {"a": "7", "b": "8"}, {"a": "10", "b": "11"}]
    problems = [(r.line, r.problem) for r in rows if r.problem]
    assert problems[0] == (3, "line 3: expected 2 fields (as in the header), found 3")
    assert problems[1][0] == 4 and "malformed CSV" in (problems[1][1] or "")
    assert problems[2] == (7, "line 7: expected 2 fields (as in the header), found 1")
    assert [r.number for r in rows] == [1, 2, 3, 4, 5, 6]  # the blank line is skipped


async def test_csv_unclosed_quote_at_the_end_is_a_problem(tmp_path: Path) -> None:
    """An unterminated quoted field is reported with the line where its row starts."""
    rows = await read_all(CsvSource(write(tmp_path, "q.csv", 'a,b\n1,2\n"3,4\n5,6\n')))
    assert rows[0].data == {"a": "1", "b": "2"}
    assert rows[1].data is None and rows[1].line == 3
    assert "malformed CSV" in (rows[1].problem or "")


async def test_csv_bad_utf8_in_a_utf8_file_spoils_only_its_line(tmp_path: Path) -> None:
    """In a file that is UTF-8 elsewhere, bytes that are not make their own row a problem."""
    content = "a,b\n1,£2\n".encode() + b"\xa33,3\n4,5\n"
    rows = await read_all(CsvSource(write(tmp_path, "mixed.csv", content)))
    assert [r.problem for r in rows] == [
        None,
        "line 3: the byte 0xA3 ('£' in Windows-1252) is not UTF-8, unlike the rest of the "
        "file: retype this line's special characters (they were saved in another encoding)",
        None,
    ]
    assert rows[0].data == {"a": "1", "b": "£2"}


async def test_a_file_in_another_encoding_is_refused_once_with_how_to_save_it(
    tmp_path: Path,
) -> None:
    """A CSV saved by Excel in Windows-1252 ('£' on every row) is one error, not N bad rows.

    Each row was invalid, "line 2 - line 2: not valid UTF-8" in the summary, with no word
    of what to do. Now opening it says where, what it is, and how to save it as UTF-8.
    """
    text = "reference,contract_name,rent\n" + "".join(f"A{i},Flat {i},£9{i}0\n" for i in range(30))
    path = write(tmp_path, "excel.csv", text.encode("cp1252"))
    with pytest.raises(ConfigurationError) as caught:
        await CsvSource(path).open()
    message = str(caught.value)
    assert message == (
        f"{path} is not UTF-8 text: line 2 has the byte 0xA3 ('£' in Windows-1252), as do "
        "29 other lines, so it was saved in another encoding. Save it as UTF-8 (in Excel: "
        'File > Save As, type "CSV UTF-8 (Comma delimited)")'
    )
    # A header that is not UTF-8 is refused the same way, even in a file UTF-8 elsewhere;
    # a JSONL file is told to be UTF-8, without Excel's words.
    header = write(tmp_path, "h.csv", "référence,b\n".encode("cp1252") + "1,£\n".encode())
    with pytest.raises(ConfigurationError, match=r"line 1 has the byte 0xE9 \('é'"):
        await CsvSource(header).open()
    jsonl = write(tmp_path, "r.jsonl", '{"rent": "£1"}\n'.encode("cp1252"))
    with pytest.raises(ConfigurationError, match=r"another encoding\. Save it as UTF-8$"):
        await JsonlSource(jsonl).open()
    # JSONL has no header: its first line, in a file UTF-8 elsewhere, is a row of its own.
    mixed = '{"rent": "£1"}\n'.encode("cp1252") + '{"rent": "£2"}\n'.encode()
    rows = await read_all(JsonlSource(write(tmp_path, "m.jsonl", mixed)))
    assert (rows[0].problem or "").startswith("line 1: the byte 0xA3 ('£' in Windows-1252)")
    assert rows[1].data == {"rent": "£2"}


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("a,b\n1,2\n".encode("utf-16"), "it starts with the bytes FF FE"),  # Excel's
        ("a,b\n1,2\n".encode("utf-16-be"), "it has NUL bytes"),
        (b"\xfe\xff" + "a,b\n".encode("utf-16-be"), "it starts with the bytes FE FF"),
    ],
    ids=["little-endian", "no-bom", "big-endian"],
)
async def test_a_utf16_file_is_refused_as_utf16(tmp_path: Path, content: bytes, why: str) -> None:
    """Excel's "Unicode Text" (UTF-16) is named as such, not "the header is not UTF-8"."""
    path = write(tmp_path, "u.csv", content)
    with pytest.raises(ConfigurationError) as caught:
        await CsvSource(path).open()
    assert str(caught.value) == (
        f'{path} looks like UTF-16 text ({why}, as Excel\'s "Unicode Text" does), not UTF-8. '
        'Save it as UTF-8 (in Excel: File > Save As, type "CSV UTF-8 (Comma delimited)")'
    )


async def test_a_workbook_is_refused_as_no_text(tmp_path: Path) -> None:
    """An .xlsx renamed .csv (a zip file) is said to be one, not read as lines of bytes."""
    path = write(tmp_path, "book.csv", b"PK\x03\x04\x14\x00\x06\x00" + bytes(range(256)))
    with pytest.raises(ConfigurationError, match=r"is a zip file \(an Excel workbook\?\)"):
        await CsvSource(path).open()


async def test_utf8_with_a_bom_and_other_line_ends_is_read(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" (a BOM, CRLF, '£') reads as it is; the rows are counted."""
    text = "\ufeffreference,contract_name\r\nA1,Flat £1\r\nA2,Café\r\n"
    source = CsvSource(write(tmp_path, "excel-utf8.csv", text.encode()))
    await source.open()
    assert await source.count() == 2
    rows = await read_all(source)
    assert [r.data for r in rows] == [
        {"reference": "A1", "contract_name": "Flat £1"},
        {"reference": "A2", "contract_name": "Café"},
    ]
    old_mac = CsvSource(write(tmp_path, "cr.csv", "a\r1\r2\xa3".encode()))
    await old_mac.open()  # no line feed at all: still counted, and not one long line
    assert await old_mac.count() == 2
    assert [r.data for r in await read_all(old_mac)] == [{"a": "1"}, {"a": "2£"}]


async def test_empty_files_are_refused(tmp_path: Path) -> None:
    """An empty (or blank) file is refused with a clear message."""
    for name, content in [("e.csv", ""), ("b.csv", "\n  \n"), ("e.jsonl", "")]:
        with pytest.raises(ConfigurationError, match="is empty"):
            await open_source(write(tmp_path, name, content)).open()


async def test_csv_with_only_a_header_has_no_rows(tmp_path: Path) -> None:
    """A header and nothing else reads as zero rows."""
    source = CsvSource(write(tmp_path, "h.csv", "a,b\n"))
    assert await read_all(source) == []


async def test_csv_header_problems_are_refused(tmp_path: Path) -> None:
    """A header with a blank or repeated name cannot be mapped: refused up front."""
    with pytest.raises(ConfigurationError, match="column 2 of the header has no name"):
        await CsvSource(write(tmp_path, "blank.csv", "a,,c\n1,2,3\n")).open()
    with pytest.raises(ConfigurationError, match="names 'a' more than once"):
        await CsvSource(write(tmp_path, "dup.csv", "a,b,a\n1,2,3\n")).open()


async def test_unreadable_files_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing file, a directory or a file without read permission: a one-line error."""
    with pytest.raises(ConfigurationError, match=r"cannot read .*missing\.csv"):
        await CsvSource(tmp_path / "missing.csv").open()
    with pytest.raises(ConfigurationError, match="is a directory"):
        await CsvSource(tmp_path).open()
    locked = write(tmp_path, "locked.csv", "a\n1\n")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(locked))

    monkeypatch.setattr("contractsdk.bulk._readers.open", refuse, raising=False)
    with pytest.raises(ConfigurationError, match=r"cannot read .*locked\.csv: Permission denied"):
        await CsvSource(locked).open()


async def test_jsonl_rows_and_bad_lines(tmp_path: Path) -> None:
    """Each JSONL line is an object; a line that is not JSON or not an object is a problem."""
    text = '\ufeff{"a": 1}\n\nnot json\n[1, 2]\n{"a": "x"}\n'
    rows = await read_all(JsonlSource(write(tmp_path, "r.jsonl", text)))
    assert [r.data for r in rows] == [{"a": 1}, None, None, {"a": "x"}]
    assert [r.line for r in rows] == [1, 3, 4, 5]
    assert (rows[1].problem or "").startswith("line 3: not JSON")
    assert rows[2].problem == "line 4: expected a JSON object of column values, found list"


async def test_iterables_and_async_iterables_are_read_lazily() -> None:
    """Sync and async iterables are read in chunks; a non-mapping item is a problem row."""
    taken: list[int] = []

    def numbers() -> Any:
        for index in range(5):
            taken.append(index)
            yield {"n": index} if index != 3 else "oops"

    source = IterableSource(numbers())
    chunks = source.chunks(2)
    first = await chunks.__anext__()
    assert [r.data for r in first] == [{"n": 0}, {"n": 1}]
    assert taken == [0, 1]  # nothing read ahead of the chunk
    rest = [row async for chunk in chunks for row in chunk]
    assert rest[1].problem == "row 4: expected a mapping of column values, found str"

    async def agen() -> AsyncIterator[dict[str, int]]:
        for index in range(3):
            yield {"n": index}

    rows = await read_all(IterableSource(agen()), size=2)
    assert [r.number for r in rows] == [1, 2, 3]
    assert all(r.line is None for r in rows)


async def test_open_source_picks_the_reader() -> None:
    """Paths are read by suffix (or format=); a mapping or an unknown suffix is refused."""
    assert isinstance(open_source("x.csv"), CsvSource)
    assert isinstance(open_source(Path("x.ndjson")), JsonlSource)
    assert isinstance(open_source("x.txt", format="csv"), CsvSource)
    assert isinstance(open_source([{"a": 1}]), IterableSource)
    with pytest.raises(ConfigurationError, match="cannot tell the format"):
        open_source("x.txt")
    with pytest.raises(ConfigurationError, match="not a dict"):
        open_source({"a": 1})  # type: ignore[dict-item]  # the mistake under test


async def test_count_estimates_the_rows(tmp_path: Path) -> None:
    """A file's rows are counted cheaply (lines minus the header), for an ETA."""
    path = write(tmp_path, "c.csv", "a\n" + "".join(f"{i}\n" for i in range(10)))
    assert await CsvSource(path).count() == 10
    assert await JsonlSource(write(tmp_path, "c.jsonl", '{"a":1}\n{"a":2}')).count() == 2
    assert await IterableSource([]).count() is None


async def test_the_file_is_closed_after_reading(tmp_path: Path) -> None:
    """Reading does not hold the file open once the rows are read."""
    path = write(tmp_path, "t.csv", "a\n1\n2\n")
    source = CsvSource(path)
    assert len(await read_all(source)) == 2
    assert source._file is None


async def test_csv_open_quote_does_not_swallow_the_rows_after_it(tmp_path: Path) -> None:
    """A quote left open spoils its own line only: the lines after it are rows again."""
    text = 'a,b\n"1,2\n3,4\n5,"6\n7,8\n'
    rows = await read_all(CsvSource(write(tmp_path, "q.csv", text)))
    assert [(r.number, r.line) for r in rows] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert [r.data for r in rows] == [None, {"a": "3", "b": "4"}, None, {"a": "7", "b": "8"}]
    assert all("malformed CSV" in (r.problem or "") for r in rows if r.data is None)


async def test_csv_quote_closed_lines_later_names_the_lines_it_joined(tmp_path: Path) -> None:
    """A record a stray quote joins over lines, and then of the wrong width, names its lines.

    Line 3 was in line 2's record: reported only as "line 2: expected 3 fields … found 2",
    it was neither created nor named. A quote left open to the end of the file spoils its
    own line only: the lines after it are rows (as the docs say).
    """
    text = 'reference,contract_name,notes\nA1,"Flat A,x\nA2,Flat B,x"\nA3,Flat C,y\n'
    rows = await read_all(CsvSource(write(tmp_path, "j.csv", text)))
    assert [(r.line, r.problem) for r in rows] == [
        (
            2,
            "line 2: expected 3 fields (as in the header), found 2; lines 2 to 3 are one "
            "record, joined by a quoted field (is a quote left open?)",
        ),
        (4, None),
    ]
    open_to_the_end = 'reference,contract_name\nA1,"Flat A\nA2,Flat B\n'
    rows = await read_all(CsvSource(write(tmp_path, "o.csv", open_to_the_end)))
    assert [(r.line, r.problem) for r in rows] == [
        (2, "line 2: malformed CSV (unexpected end of data)"),
        (3, None),
    ]
    assert rows[1].data == {"reference": "A2", "contract_name": "Flat B"}


async def test_csv_quoted_line_breaks_still_make_one_row(tmp_path: Path) -> None:
    """A quoted field spanning lines is one row; the line numbers after it stay right."""
    rows = await read_all(CsvSource(write(tmp_path, "m.csv", 'a,b\n"x\ny",1\n2,3\n')))
    assert [r.data for r in rows] == [{"a": "x\ny", "b": "1"}, {"a": "2", "b": "3"}]
    assert [r.line for r in rows] == [2, 4]


async def test_jsonl_escapes_that_are_no_character_spoil_only_their_line(tmp_path: Path) -> None:
    r"""A lone surrogate (``\ud800``) is no text: its line is a problem naming the column.

    It used to reach the journal, which cannot encode it: the run crashed there, and so did
    every run after it. A valid pair (an emoji) is one character and is read as usual.
    """
    lines = [
        r'{"contract_name": "Flat \ud800 1", "ref": "A"}',
        r'{"contract_name": "Flat 2", "\udc00ref": "B"}',
        r'{"contract_name": "Flat 3", "extra": {"notes": ["ok", "x\udfff"]}}',
        r'{"contract_name": "Flat \ud83d\ude00 4"}',
    ]
    rows = await read_all(JsonlSource(write(tmp_path, "s.jsonl", "\n".join(lines) + "\n")))
    assert [r.problem for r in rows] == [
        "line 1: the value of 'contract_name' has the escape \\ud800, a lone surrogate "
        "(half of a UTF-16 pair) that is not a character",
        "line 2: the column name '\\udc00ref' has the escape \\udc00, a lone surrogate "
        "(half of a UTF-16 pair) that is not a character",
        "line 3: the value of 'extra'['notes'][1] has the escape \\udfff, a lone surrogate "
        "(half of a UTF-16 pair) that is not a character",
        None,
    ]
    assert rows[3].data == {"contract_name": "Flat \U0001f600 4"}
    for row in rows[:3]:  # what is kept of the line can be stored
        row.raw.encode("utf-8")
        (row.problem or "").encode("utf-8")


async def test_jsonl_numbers_too_long_and_nesting_too_deep_are_said_so(tmp_path: Path) -> None:
    """A number past Python's digit limit names its line and key, not a Python setting.

    A line nested too deeply to read is a problem of its line too (it raised RecursionError
    out of the reader).
    """
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        lines = [
            '{"contract_name": "Flat 1", "rent": ' + "9" * 4301 + "}",
            '{"contract_name": "Flat 2", "rent": -' + "9" * 4300 + "}",
            '{"contract_name": "Flat 3", "a": ' + "[" * 5000 + "]" * 5000 + "}",
            '{"contract_name": "Flat 4", "a": ' + '{"b": ' * 900 + "1" + "}" * 900 + "}",
        ]
        rows = await read_all(JsonlSource(write(tmp_path, "n.jsonl", "\n".join(lines) + "\n")))
    finally:
        sys.set_int_max_str_digits(limit)
    assert rows[0].problem == (
        "line 1: the value of 'rent' is a number of 4301 digits, too long to read (at most 4300)"
    )
    assert rows[1].data is not None and rows[1].data["rent"] == -int("9" * 4300)
    assert rows[2].problem == "line 3: its JSON is nested too deeply to read"
    assert rows[3].problem is None  # deep, but within what can be read
    assert all("sys." not in (r.problem or "") for r in rows)


async def test_iterable_rows_with_a_lone_surrogate_are_problems() -> None:
    """Rows given as mappings get the same check: such a string cannot be stored."""
    rows = await read_all(
        IterableSource([{"contract_name": "Flat \ud800"}, {"contract_name": "Ok"}])
    )
    assert rows[0].problem == (
        "row 1: the value of 'contract_name' has the escape \\ud800, a lone surrogate "
        "(half of a UTF-16 pair) that is not a character"
    )
    assert rows[1].data == {"contract_name": "Ok"}


async def test_csv_cannot_carry_a_lone_surrogate(tmp_path: Path) -> None:
    """A surrogate encoded in the bytes of a CSV is not UTF-8: its line is the problem."""
    content = b"contract_name,x\nFlat \xed\xa0\x80 1,1\nFlat \xc3\xa9 2,2\n"
    rows = await read_all(CsvSource(write(tmp_path, "s.csv", content)))
    assert (rows[0].problem or "").startswith(
        "line 2: the bytes 0xED 0xA0 0x80 are not UTF-8, unlike the rest of the file"
    )
    assert rows[1].data == {"contract_name": "Flat é 2", "x": "2"}
    rows[0].raw.encode("utf-8")  # what is kept of the line can be stored


def test_input_format_reads_the_name() -> None:
    """The format a file name says, or None when it says none (the CLI then asks for one)."""
    assert input_format("a.CSV") == "csv"
    assert [input_format(f"a.{end}") for end in ("jsonl", "ndjson", "json")] == ["jsonl"] * 3
    assert input_format("a.txt") is None and input_format("a") is None
