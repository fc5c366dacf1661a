"""The example input shipped with the package (``contractsdk bulk example`` writes it)."""

from __future__ import annotations

from importlib import resources

__all__ = ["example_csv"]


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
