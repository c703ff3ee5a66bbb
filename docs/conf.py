"""Sphinx configuration of the skbandit documentation.

Build with ``make docs`` from the repository root: the site lands in
``docs/_build/html``. The build is offline (no intersphinx inventories are fetched)
and runs with warnings as errors in nitpicky mode.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import builtins
import os
import re
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "sphinxext"))

import api_reference  # noqa: E402

import skbandit  # noqa: E402

# The API reference lists every object of the public modules' ``__all__``.
api_reference.write(DOCS / "api.rst")

# The examples read this to run fewer rounds, so that the whole gallery builds in a
# few minutes; their figures are saved under docs/_build/example_figures.
os.environ.setdefault("SKBANDIT_DOCS_QUICK", "1")
os.environ.setdefault("SKBANDIT_FIGURES_DIR", str(DOCS / "_build" / "example_figures"))
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings(
    "ignore", message="Matplotlib is currently using agg", category=UserWarning
)

project = "skbandit"
author = "The skbandit developers"
copyright = "The skbandit developers"  # noqa: A001
version = release = skbandit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
    "sphinx-mathjax-offline",
    "api_coverage",
    "run_pages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_templates",
    "sphinxext",
    "Thumbs.db",
    ".DS_Store",
    "auto_examples/**/*.ipynb",
    "auto_examples/**/*.py",
    "auto_examples/**/*.zip",
    "auto_examples/**/*.json",
    "auto_examples/**/*.md5",
]
templates_path = ["_templates"]

# Warnings are errors (``-W`` in the Makefile) and every internal reference must
# resolve. Intersphinx is off, so that the build never touches the network: the
# references to other projects' objects (NumPy, scikit-learn, PyTorch, skorch, ...)
# and to Python's builtins cannot resolve and are the only ones let through.
nitpicky = True
_EXTERNAL = (
    "numpy",
    "np",
    "scipy",
    "sklearn",
    "torch",
    "skorch",
    "joblib",
    "pandas",
    "matplotlib",
    "dask",
    "collections",
    "typing",
    "numpy.typing",
    "warnings",
    "pathlib",
    "os",
)
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_EXTERNAL)})(\..*)?"),
]
nitpick_ignore = [
    (role, name)
    for name in dir(builtins)
    if not name.startswith("_")
    for role in ("py:class", "py:exc", "py:func", "py:obj")
]

default_role = "literal"
pygments_style = "sphinx"
add_module_names = False
python_use_unqualified_type_names = True

# -- autodoc / autosummary -------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
autodoc_inherit_docstrings = True


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only the methods skbandit defines, not those sklearn adds.

    scikit-learn's own methods (``get_params``, the generated ``set_*_request``)
    point at scikit-learn's user guide, which this offline build cannot resolve;
    they are documented there.
    """
    if skip or name.startswith("_"):
        return skip
    if name.startswith("set_") and name.endswith("_request"):
        return True
    if isinstance(obj, property):
        return None  # e.g. Pipeline.named_steps, which numpydoc links to
    target = getattr(obj, "__func__", obj)
    module = getattr(target, "__module__", None) or ""
    if callable(target) and not module.startswith("skbandit"):
        return True
    return None


# -- numpydoc -----
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_use_plots = False
numpydoc_attributes_as_param_list = True

# -- MyST -----
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# -- sphinx-gallery -----
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "subsection_order": [
        # the policy families first (skbandit/policies/_*), then evaluation and the
        # measured figures; sphinx-gallery stops on a folder missing here
        "../examples/linear",
        "../examples/glm",
        "../examples/neural",
        "../examples/slates",
        "../examples/evaluation",
        "../examples/measured",
    ],
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("skbandit",),
    "reference_url": {"skbandit": None},
    "backreferences_dir": "modules/generated/backreferences",
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "plot_gallery": "True",
    "download_all_examples": False,
    "show_memory": False,
    "min_reported_time": 1,
    "show_signature": False,
    "image_srcset": [],
}

# -- HTML -----
html_theme = "pydata_sphinx_theme"
html_title = f"skbandit {version}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
    "header_links_before_dropdown": 6,
    # Nothing that needs the network: no icon links, no version switcher.
    "icon_links": [],
}
# Pages without sub-pages need no left sidebar.
html_sidebars = {
    page: []
    for page in ("index", "install", "performance", "design", "glossary", "changelog")
}
html_context = {"default_mode": "light"}


_SHAPE = re.compile(r"shape \(([^)]*)\)")


def _escape_shapes(app, what, name, obj, options, lines):
    """Escape the trailing underscore of fitted attributes named in shapes.

    numpydoc types are plain text, so ``shape (n_actions_,)`` would read as a
    reStructuredText link to ``n_actions``.
    """
    for i, line in enumerate(lines):
        if "shape (" in line:
            lines[i] = _SHAPE.sub(
                lambda m: "shape (" + re.sub(r"(\w)_\b", r"\1\\_", m[1]) + ")",
                line,
            )


def _data_docs(app, what, name, obj, options, lines):
    """Document a module-level constant from its ``#:`` comment where it is defined.

    A package re-exports constants from private modules, where their ``#:`` comment
    lives; a dict also lists its keys.
    """
    if what != "data":
        return
    import importlib
    import inspect

    # Without a docstring of its own, a constant gets its type's (dict's).
    text = "\n".join(lines).strip()
    if text and text != (inspect.getdoc(type(obj)) or "").strip():
        return
    lines[:] = []
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    package, attr = name.rsplit(".", 1)
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        try:
            docs = ModuleAnalyzer.for_module(f"{package}.{info.name}").find_attr_docs()
        except Exception:  # noqa: BLE001 - a module without source
            continue
        if ("", attr) in docs:
            lines.extend(docs["", attr])
            break
    if isinstance(obj, dict):
        keys = ", ".join(f"``{key!r}``" for key in obj)
        lines.extend(["", f"Keys: {keys}."])


def _escape_attribute_summaries():
    """Apply the same escaping to the property summaries numpydoc pulls in.

    For an attribute that is a property, numpydoc shows the property's own summary
    line instead of the text under Attributes, without passing it through
    ``autodoc-process-docstring``.
    """
    from numpydoc.docscrape_sphinx import SphinxDocString

    original = SphinxDocString._process_param

    def _process_param(self, param, desc, fake_autosummary):
        display, lines = original(self, param, desc, fake_autosummary)
        lines = list(lines)
        _escape_shapes(None, None, None, None, None, lines)
        return display, lines

    SphinxDocString._process_param = _process_param


def setup(app):
    _escape_attribute_summaries()
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("autodoc-process-docstring", _data_docs, priority=100)
    # Before numpydoc (priority 500) parses the docstring.
    app.connect("autodoc-process-docstring", _escape_shapes, priority=100)
