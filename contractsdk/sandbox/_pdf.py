"""Small, valid PDF and HTML renderings of a contract, built by hand (no dependency).

The service returns ``application/pdf`` bytes and a ``text/html`` string for a contract
(service-api.md §7 Contracts); their content is the contract text, which the emulator
replaces with the contract's name and its answered fields.

The PDF is PDF 1.4 with one standard Type 1 font (Helvetica, WinAnsi encoding, so no font
is embedded), one content stream per A4 page and an exact cross-reference table.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

_PAGE_WIDTH, _PAGE_HEIGHT = 595, 842  # A4 in points
_MARGIN = 56
_LEADING = 14
_BODY_SIZE = 10
_TITLE_SIZE = 16
_WRAP = 95
_LINES_PER_PAGE = (_PAGE_HEIGHT - 2 * _MARGIN - 2 * _LEADING) // _LEADING


def _pdf_string(text: str) -> bytes:
    data = text.replace("\r", " ").replace("\n", " ").encode("cp1252", errors="replace")
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _page_stream(title: str | None, lines: Sequence[str]) -> bytes:
    out = [b"BT"]
    y = _PAGE_HEIGHT - _MARGIN
    if title is not None:
        out.append(b"/F1 %d Tf %d %d Td %s Tj" % (_TITLE_SIZE, _MARGIN, y, _pdf_string(title)))
        out.append(b"0 %d Td" % -(2 * _LEADING))
    else:
        out.append(b"%d %d Td" % (_MARGIN, y))
    out.append(b"/F1 %d Tf %d TL" % (_BODY_SIZE, _LEADING))
    for line in lines:
        out.append(_pdf_string(line) + b" Tj T*")
    out.append(b"ET")
    return b"\n".join(out)


def render_pdf(title: str, lines: Sequence[str]) -> bytes:
    """Render a document as a minimal valid PDF.

    Args:
        title: The heading of the first page (and the document's /Title).
        lines: Body lines; long lines are wrapped and pages added as needed.

    Returns:
        The PDF file's bytes, starting with ``%PDF-1.4`` and ending with ``%%EOF``.
    """
    wrapped = [part for line in lines for part in (textwrap.wrap(line, _WRAP) or [""])]
    pages = [
        wrapped[i : i + _LINES_PER_PAGE] for i in range(0, max(len(wrapped), 1), _LINES_PER_PAGE)
    ]
    # Objects: 1 catalog, 2 page tree, 3 font, 4 info, then a (page, content) pair per page.
    page_ids = [5 + 2 * i for i in range(len(pages))]
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % p for p in page_ids), len(pages)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Title %s /Producer (contractsdk sandbox emulator) >>" % _pdf_string(title),
    ]
    for number, page_lines in enumerate(pages):
        stream = _page_stream(title if number == 0 else None, page_lines)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
            % (_PAGE_WIDTH, _PAGE_HEIGHT, page_ids[number] + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    # The binary comment line marks the file as binary for transfer tools (PDF 1.4 §3.4.1).
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def render_html(
    title: str, facts: Sequence[tuple[str, str]], fields: Sequence[tuple[str, str]]
) -> str:
    """Render a contract as a small standalone HTML page.

    Args:
        title: The contract's name.
        facts: (label, value) pairs shown under the title (type, version, dates).
        fields: (term name, value) pairs of the answered terms.

    Returns:
        The HTML document.
    """
    esc = html.escape
    facts_html = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in fields)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title></head>'
        f"<body><h1>{esc(title)}</h1><dl>{facts_html}</dl>"
        f"<table><tbody>{rows}</tbody></table></body></html>\n"
    )
