"""Sphinx configuration for the contractsdk manual."""

from __future__ import annotations

project = "contractsdk"
author = "contractsdk maintainers"
copyright = "2026, contractsdk maintainers"  # Sphinx's own setting name

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.graphviz",
]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# The manual must build offline (CI has no network beyond package registries), so no
# intersphinx inventories are fetched; references to the standard library stay plain text.
intersphinx_mapping: dict[str, tuple[str, None]] = {}
nitpicky = False

# Diagrams (the bulk journal's states, the send path) are graphviz sources in the pages,
# rendered at build time by the `dot` binary (Debian's graphviz package; .ci/run installs
# it). SVG stays sharp at any zoom and its text can be searched and copied.
graphviz_output_format = "svg"
graphviz_dot_args = [
    "-Gfontname=DejaVu Sans,Helvetica,Arial,sans-serif",
    "-Nfontname=DejaVu Sans,Helvetica,Arial,sans-serif",
    "-Efontname=DejaVu Sans,Helvetica,Arial,sans-serif",
    "-Gbgcolor=white",  # readable in the dark theme too
]

html_theme = "furo"
html_title = "contractsdk"
