"""Sphinx configuration of topicbench's manual.

Build (warnings are errors, broken references included)::

    .venv/bin/python -m sphinx -b html -W --keep-going -n docs docs/_build/html

``tests/test_docs_build.py`` runs this build into a temporary folder, so CI builds the manual.
The pages are Markdown (MyST); the API reference (``api/reference.rst``) is generated from the
docstrings by autosummary, walking the package tree.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

# Importing the library for autodoc must start nothing: no Prefect server, no analytics.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

project = "topicbench"
author = "topicbench authors"
copyright = "the topicbench authors"
release = version = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "topicbench_docs",  # docs/_ext: the metrics table, generated from the registry
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# ---- Markdown -----------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# The pages link each other as plain Markdown files (they read well on GitHub too); MyST turns
# those links into checked references. Links to files outside docs/ (code, examples) stay links.
myst_links_external_url_schemes = ("http", "https", "mailto")

# ---- API reference ------------------------------------------------------------------------------
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False


def _deprecated_modules() -> list[str]:
    """The deprecated shims (a module whose docstring starts "Deprecated": an old path kept for one
    release, re-exporting its new module's names). They stay out of the reference, which documents
    each object once, where it lives; the Python API page lists them with their new paths."""
    import ast

    found = []
    for package in ("core", "baselines", "tasks", "flows"):
        for path in sorted((DOCS.parent / package).rglob("*.py")):
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if docstring.startswith("Deprecated"):
                parts = path.relative_to(DOCS.parent).with_suffix("").parts
                found.append(".".join(("topicbench", *parts)))
    return found


# the module template (_templates/autosummary/module.rst) leaves these out of the package tree, and
# a page an earlier build generated for one (the folder is kept between builds) is not read
autosummary_context = {"deprecated_modules": _deprecated_modules()}
exclude_patterns += [f"api/generated/{module}.rst" for module in autosummary_context["deprecated_modules"]]
# Each object is documented where it is defined: a module's __all__ may re-export others' names
# (core/metrics/stability.py re-exports topic_similarity), which would document them twice.
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
# Types are in the numpy-style docstrings; signatures stay short and unlinked.
autodoc_typehints = "none"
autodoc_class_signature = "separated"
autodoc_inherit_docstrings = False
napoleon_numpy_docstring = True
napoleon_google_docstring = False
# Parameters and returns as plain field lists: a docstring's type is prose ("array of shape
# (D, K)"), not a reference to check.
napoleon_use_param = False
napoleon_use_rtype = False
napoleon_use_ivar = True

# ---- Checks -------------------------------------------------------------------------------------
# -n (nitpicky): every reference must resolve. The build is offline (no intersphinx), so names of
# other packages cannot resolve; they are listed here. The project's own names stay checked.
nitpicky = True
_THIRD_PARTY = (
    "numpy", "np", "scipy", "pandas", "pd", "torch", "prefect", "mlflow", "dask", "distributed",
    "gensim", "sklearn", "optuna", "numba", "pyarrow", "yaml", "jsonschema", "matplotlib",
    "plotly", "sqlalchemy", "psutil", "filelock", "bertopic", "transformers",
    "sentence_transformers", "tomotopy", "hdbscan", "umap", "concurrent", "multiprocessing",
    "pathlib", "collections", "typing", "dataclasses", "enum", "logging", "threading", "argparse",
    "os", "io", "json", "abc", "datetime", "subprocess", "socket", "sqlite3", "contextlib",
    "functools", "itertools", "types", "random", "re", "signal", "tempfile", "urllib", "http",
    "importlib", "asyncio", "queue", "weakref", "uuid", "hashlib", "builtins", "shutil",
)
nitpick_ignore_regex = [
    # private names (a component starting with "_"): not in the reference, which is the public API
    (r"py:.*", r"(.*\.)?_[^.]*(\..*)?"),
    (r"py:.*", rf"({'|'.join(_THIRD_PARTY)})(\..*)?"),
    # builtins and typing words docstrings name in type positions
    (r"py:.*", r"(int|float|str|bool|bytes|dict|list|tuple|set|frozenset|object|callable|None|"
               r"Exception|ValueError|TypeError|RuntimeError|OSError|KeyError|Path|Any|Callable|"
               r"Iterable|Iterator|Sequence|Mapping|Generator)"),
]

# ---- HTML ---------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "topicbench"
html_static_path: list[str] = []
