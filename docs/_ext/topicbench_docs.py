"""Sphinx extension of topicbench's manual: tables generated from the code, so they cannot drift.

``{topicbench-metrics}`` (a directive, in MyST: a fenced block) renders every metric of
:data:`topicbench.core.metrics.registry.METRICS` with its direction, needs, the keys it reports,
its valid range and baseline, its aggregation and its description, read from the registry at
build time.

A page named like one the HTML builder writes itself (``search``, ``genindex``, ``py-modindex``)
ends the build with an error naming it: the builder would overwrite it silently.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode


def _row(cells) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
        row += entry
    return row


def _literals(names) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for i, name in enumerate(names):
        if i:
            paragraph += nodes.Text(", ")
        paragraph += nodes.literal(text=name)
    return paragraph


def metric_rows():
    """(name, direction, needs, reports, valid range, aggregate, description) of every registered metric."""
    from topicbench.core.metrics.ranges import describe
    from topicbench.core.metrics.registry import METRICS

    for name in sorted(METRICS.names()):
        spec = METRICS.get(name)
        if spec.outputs:
            reports = spec.outputs
        elif "top_words" in spec.needs:
            reports = (f"{name}@N",)  # one key per N of the top-N grid
        elif name == "inverted_rbo":
            reports = (f"{name}@N",)  # N = settings.rbo_top_n
        else:
            reports = (name,)
        yield (name, "higher" if spec.higher_is_better else "lower", spec.needs, reports,
               describe(spec.valid_range), spec.aggregate, spec.description)


class MetricsTable(SphinxDirective):
    """The registry's metrics as a table."""

    has_content = False

    def run(self):
        header = ("metric", "better", "needs", "reports", "valid range", "aggregate", "what")
        table = nodes.table(classes=["topicbench-metrics"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for width in (14, 6, 16, 18, 14, 16, 30):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        head += _row(header)
        group += head
        body = nodes.tbody()
        for name, better, needs, reports, valid, aggregate, description in metric_rows():
            body += _row((_literals([name]), better, _literals(needs), _literals(reports), valid, aggregate,
                          description))
        group += body
        return [table]


# napoleon reads the first line of a data or attribute docstring as "type: description"; this
# project's ``#:`` comments are prose ("Score of the null topic ...: beta = log(1e-100)"), so they
# are kept as written: saved before napoleon runs (priority 500) and put back after it.
_PROSE_KINDS = {"data", "attribute", "property"}
_saved: dict[str, list[str]] = {}


def _save_prose(app, what, name, obj, options, lines):
    if what in _PROSE_KINDS:
        _saved[name] = list(lines)


def _restore_prose(app, what, name, obj, options, lines):
    if what in _PROSE_KINDS and name in _saved:
        lines[:] = _saved.pop(name)


# The docstrings write sizes and sets as in the paper, |V| or |{d : m_d = k}|; reStructuredText
# would read them as substitutions. Bars that do not open a line (a line block) and sit outside
# ``literals`` are escaped.
_BARS = re.compile(r"(?<![\\\w`])\|(?=\S)([^|`\n]*?\S)\|(?![\w`])")
_LITERAL = re.compile(r"(``.+?``)")


def _escape_bars(line: str) -> str:
    if line.lstrip().startswith("| "):
        return line
    parts = _LITERAL.split(line)
    return "".join(part if i % 2 else _BARS.sub(r"\\|\1\\|", part) for i, part in enumerate(parts))


# napoleon turns a numpy "name : type" of an Attributes section into ``:vartype name: type``, which
# the Python domain reads as class names to link; these types are prose ("ndarray (k, 2)"), so they
# are shown as written, in italics, as napoleon shows parameter types.
_VARTYPE = re.compile(r"^(\s*:vartype [^:]+: )(.+)$")
# "a, b : int" becomes ":ivar a, b:", whose first word the Python domain would read as a type.
_SEVERAL = re.compile(r"^(\s*:(?:ivar|vartype) )([^:]+)(:)")


def _tidy_docstring(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        line = lines[i] = _SEVERAL.sub(lambda m: m.group(1) + m.group(2).replace(", ", ",") + m.group(3), line)
        match = _VARTYPE.match(line)
        if match:
            lines[i] = f"{match.group(1)}*{match.group(2).strip().strip('*')}*"
        else:
            lines[i] = _escape_bars(line)


def _documented(domain, name: str, role: str | None = None) -> list[str]:
    """Documented objects whose full name is ``name`` or ends with ``.name`` (of a type the role
    may link to, when a role is given)."""
    types = set(domain.objtypes_for_role(role) or ()) if role else None
    return [full for full, entry in domain.objects.items()
            if (full == name or full.endswith("." + name)) and (types is None or entry.objtype in types)]


def _exists(full_name: str) -> bool:
    """Whether ``full_name`` (module.Class.attribute, module.function, ...) exists in the code: by
    import and attribute lookup, or for an instance attribute, an assignment ``self.name`` in its
    class's source or an entry of the class's *Attributes* section."""
    parts = full_name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        for i, part in enumerate(parts[cut:]):
            if hasattr(obj, part):
                obj = getattr(obj, part)
                continue
            if i != len(parts) - cut - 1 or not inspect.isclass(obj):
                return False
            annotations = getattr(obj, "__annotations__", {})
            try:
                source = inspect.getsource(obj)
            except (OSError, TypeError):
                source = ""
            return (part in annotations or f"self.{part} " in source or f"self.{part}:" in source
                    or re.search(rf"^\s*{re.escape(part)}\b.*:", obj.__doc__ or "", re.M) is not None)
        return True
    return False


def _resolve_reference(app, env, node, contnode):
    """Resolve a Python reference Sphinx's own lookup missed, or leave it to fail the build.

    1. The docstrings name objects of other modules as they import them (:class:`InputError`,
       :func:`candidates_folder`, :mod:`report_plots`): a name that ends exactly one documented
       object's full name (after a dot), of a type the role links to, resolves to it.
    2. An attribute described in its class's *Attributes* section, or a module constant without a
       docstring, has no entry of its own: when the name exists in the code (checked by import, in
       the reference's module and class), the reference links to the nearest documented parent,
       its class or module.

    A name that does not exist, or that several documented objects share, stays unresolved.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    role = node.get("reftype")
    domain = env.get_domain("py")
    matches = _documented(domain, target, role)
    if len(matches) != 1:
        module, klass = node.get("py:module"), node.get("py:class")
        candidates = [target]
        if module:
            candidates += [f"{module}.{klass}.{target}"] if klass else []
            candidates += [f"{module}.{target}"]
        if "." in target:
            owner, attribute = target.rsplit(".", 1)
            candidates += [f"{full}.{attribute}" for full in _documented(domain, owner)]
        existing = [name for name in dict.fromkeys(candidates) if _exists(name)]
        if len(existing) != 1:
            return None
        parent = existing[0]
        while parent and parent not in domain.objects:
            parent = parent.rpartition(".")[0]
        if not parent:
            return None
        matches = [parent]
    entry = domain.objects[matches[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, matches[0])


def pages_the_builder_writes(app) -> set[str]:
    """The pages Sphinx's HTML builder writes itself: its search page, the general index, each
    domain's index (``py-modindex``) and ``html_additional_pages``."""
    names = {"search", "genindex", "genindex-all", *app.config.html_additional_pages}
    return names | {f"{domain.name}-{index.name}" for domain in app.env.domains.values() for index in domain.indices}


def _refuse_pages_the_builder_overwrites(app, env, docnames):
    """A page named like one of :func:`pages_the_builder_writes` is written over by it without a
    warning (``search.md`` became Sphinx's search page, and the manual lost "Choosing K"): refuse."""
    taken = sorted(pages_the_builder_writes(app) & set(env.found_docs))
    if taken:
        from sphinx.errors import ExtensionError

        raise ExtensionError(
            "; ".join(f"{Path(env.doc2path(name, False))}: Sphinx writes its own {name}.html over this page"
                      for name in taken) + ": rename the page and every link to it")


def setup(app):
    app.add_directive("topicbench-metrics", MetricsTable)
    app.connect("env-before-read-docs", _refuse_pages_the_builder_overwrites)
    app.connect("autodoc-process-docstring", _save_prose, priority=400)
    app.connect("autodoc-process-docstring", _restore_prose, priority=600)
    app.connect("autodoc-process-docstring", _tidy_docstring, priority=700)
    app.connect("missing-reference", _resolve_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
