"""Sphinx configuration: the guides (Markdown) and the API reference generated from the docstrings."""

from __future__ import annotations

import mqwire

project = "mqwire"
author = "The mqwire authors"
copyright = "the mqwire authors, Apache License 2.0"
release = mqwire.__version__
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3

# Types are shown in the signatures; the descriptions say what the types cannot.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True, "undoc-members": False}
autodoc_class_signature = "separated"

# furo, with its column widened (_static/wide.css) so that code shows at full width without scrolling.
html_theme = "furo"
html_static_path = ["_static"]
html_css_files = ["wide.css"]
html_title = f"mqwire {release}"
