"""The hand-built PDF and HTML renderings."""

from __future__ import annotations

from contractsdk.sandbox._pdf import render_html, render_pdf

from .test_contracts import _check_pdf


def test_long_documents_get_several_pages() -> None:
    """Hundreds of lines are split over pages; the cross-reference table stays exact."""
    pdf = render_pdf("Long", [f"line {i}: " + "word " * 30 for i in range(300)])
    _check_pdf(pdf)
    assert pdf.count(b"/Type /Page ") > 3
    assert b"/Count " in pdf


def test_special_characters_are_escaped() -> None:
    """Parentheses and backslashes are escaped; other scripts become '?' (WinAnsi font)."""
    pdf = render_pdf("A (b) \\ c", ["住宅 ok"])
    _check_pdf(pdf)
    assert b"(A \\(b\\) \\\\ c)" in pdf
    assert b"(?? ok)" in pdf


def test_empty_document_has_one_page() -> None:
    """A document without lines is still a valid one-page PDF."""
    pdf = render_pdf("Empty", [])
    _check_pdf(pdf)
    assert b"/Count 1" in pdf


def test_html_escapes_everything() -> None:
    """Title, facts and fields are HTML-escaped."""
    page = render_html("<t>", [("a&b", "<c>")], [("contract_x", '"q"')])
    assert "<title>&lt;t&gt;</title>" in page
    assert "<dt>a&amp;b</dt><dd>&lt;c&gt;</dd>" in page
    assert "<td>&quot;q&quot;</td>" in page
