"""Sphinx configuration: MyST Markdown pages, the furo theme, the CLI reference from the argument parser
(sphinx-argparse) and the API reference from the docstrings (autodoc). ``./run docs`` builds it into
docs/_build/html; ``./run test`` builds it with warnings as errors."""

from __future__ import annotations

import importlib.metadata

project = "hotspare"
author = "the hotspare developers"
release = importlib.metadata.version("hotspare")
version = release
copyright = "2026, the hotspare developers"  # noqa: A001 -- Sphinx's name for it

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinxarg.ext"]
# napoleon: the Dask clusters carry dask-jobqueue's numpy-style parameter sections.
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_fragments"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"hotspare {release}"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
# Links within the repository (the README's paths to tests and examples) are not pages of this site.
suppress_warnings = ["myst.xref_missing"]
