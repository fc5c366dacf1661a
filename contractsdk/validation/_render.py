"""Text rendering of a tree of choices for the terminal (``terms show``, the demo).

Terms and identity fields are drawn the same way: one line a place, each option a radio
button ``( )`` under it (options are exclusive), ``(x)`` for the chosen one, and an option's
nested places indented beneath it. What a line says is the caller's. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from contractsdk.validation._tree import Node

__all__ = ["render_tree"]

N = TypeVar("N", bound=Node)

# How far an option's nested places are indented beneath their term.
_NESTED_INDENT = 6


def render_tree(
    top: Sequence[N], describe: Callable[[N], tuple[str, Sequence[str], str | None]]
) -> str:
    """Render a tree of places as indented text.

    Args:
        top: The top-level places, in order.
        describe: For a place: its line, its options in order, and the chosen option (or
            None).

    Returns:
        The lines joined by newlines (no trailing newline).
    """
    lines: list[str] = []

    def render(places: Sequence[N], indent: int) -> None:
        pad = " " * indent
        for place in places:
            line, options, chosen = describe(place)
            lines.append(pad + line)
            for option in options:
                mark = "(x)" if option == chosen else "( )"
                lines.append(f"{pad}  {mark} {option}")
                nested: Sequence[N] = place.children.get(option, ())  # type: ignore[assignment]
                render(nested, indent + _NESTED_INDENT)

    render(top, 0)
    return "\n".join(lines)
