"""The example input shipped with the package (``contractsdk bulk example`` writes it)."""

from __future__ import annotations

import csv
import io
import json
from importlib import resources

__all__ = ["example_csv", "to_jsonl"]


def example_csv() -> str:
    """Return the example CSV of tenancies, as text (the package's copy, wheel or not).

    Its columns are terms of the sandbox's assured shorthold tenancy template, plus a
    ``reference`` column to use as each row's key (``key_column="reference"``).
    """
    return (
        resources.files("contractsdk.bulk")
        .joinpath("examples/tenancies.csv")
        .read_text(encoding="utf-8")
    )


def to_jsonl(text: str) -> str:
    """Return CSV text (with a header line) as JSON Lines: one object per row, same values.

    Each row is ``{column: value}`` with the CSV's text values, empty ones included, so
    that a job reads the same rows from either file.
    """
    lines = [
        json.dumps(row, ensure_ascii=False) + "\n"
        for row in csv.DictReader(io.StringIO(text, newline=""))
    ]
    return "".join(lines)
