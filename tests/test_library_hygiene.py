"""Library hygiene: logging instead of print, imports that go one way with no cycles, short functions.

The import checks read every module of the four packages with ``ast`` (nothing is imported), so
they see imports inside functions and under ``if TYPE_CHECKING`` as well: an import moved into a
function to dodge a cycle is still a cycle here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "baselines", "tasks", "flows")

#: What each package may import of the others (besides itself): core -> baselines -> tasks -> flows.
ALLOWED = {
    "core": set(),
    "baselines": {"core"},
    "tasks": {"core", "baselines"},
    "flows": {"core", "baselines", "tasks"},
}

#: Packages whose functions must fit on a screen (numba kernels excepted): all four.
SHORT_FUNCTION_PACKAGES = ("core", "baselines", "tasks", "flows")
MAX_FUNCTION_LINES = 60


def _python_files(folder):
    return sorted((ROOT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["topicbench", *parts])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


MODULES = {_module_name(path): path for package in PACKAGES for path in _python_files(package)}


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every topicbench module ``path`` imports, anywhere in the file.

    ``from package import name`` counts as importing ``package.name`` when that is a module,
    else ``package``; relative imports are resolved against the file's own package.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path).split(".")
    package = here if _is_package(path) else here[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("topicbench.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("topicbench."):
                continue
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.append((node.lineno, child if child in MODULES else module))
    return sorted(found)


def _package_of(module: str) -> str:
    return module.split(".")[1]


def _import_graph() -> dict[str, set[str]]:
    return {
        module: {imported for _, imported in _imported_modules(path) if imported in MODULES and imported != module}
        for module, path in MODULES.items()
    }


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None (iterative depth-first search)."""
    state = {}  # module -> "open" while on the current path, "done" after
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = "open"
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = "done"
                stack.pop()
            elif state.get(following) == "open":
                return path[path.index(following):] + [following]
            elif following not in state:
                state[following] = "open"
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


# ------------------------------------------------------------------------------------------------
# The checks on the checker: a wrong resolver would pass everything.
# ------------------------------------------------------------------------------------------------


def test_the_import_reader_resolves_absolute_relative_and_function_level_imports(tmp_path, monkeypatch):
    folder = tmp_path / "core" / "metrics"
    folder.mkdir(parents=True)
    (tmp_path / "core" / "elda.py").write_text("")
    (tmp_path / "core" / "corpus.py").write_text("")
    source = folder / "posterior.py"
    source.write_text(
        "from ..corpus import Corpus\n"
        "from .. import elda\n"
        "import numpy\n"
        "def f():\n"
        "    from topicbench.flows.cli import main\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    known = {"topicbench.core.elda", "topicbench.core.corpus", "topicbench.core.metrics.posterior"}
    monkeypatch.setitem(globals(), "MODULES", {name: None for name in known})
    assert _imported_modules(source) == [
        (1, "topicbench.core.corpus"), (2, "topicbench.core.elda"), (5, "topicbench.flows.cli"),
    ]


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond is no cycle
    cycle = _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}


def test_every_package_is_read():
    for package in PACKAGES:
        assert any(_package_of(m) == package for m in MODULES), f"no module of {package} found"
    assert "topicbench.core.elda" in MODULES and "topicbench.flows.cli" in MODULES


# ------------------------------------------------------------------------------------------------
# The library
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", _python_files("core"), ids=lambda p: p.name)
def test_core_does_not_print(path):
    tree = ast.parse(path.read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
    assert not calls, f"{path.name} calls print() at line {calls[0].lineno}: use logging"


@pytest.mark.parametrize("path", _python_files("core"), ids=lambda p: p.name)
def test_core_imports_neither_prefect_nor_mlflow(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in ("prefect", "mlflow"), f"{path.name}:{node.lineno} imports {name}"


@pytest.mark.parametrize("module", sorted(MODULES), ids=lambda m: m.removeprefix("topicbench."))
def test_imports_go_one_way(module):
    """core imports nothing of the others; baselines only core; tasks core and baselines; flows any."""
    package = _package_of(module)
    for line, imported in _imported_modules(MODULES[module]):
        other = _package_of(imported)
        assert other == package or other in ALLOWED[package], (
            f"{MODULES[module].relative_to(ROOT)}:{line} imports {imported}: "
            f"{package} may import only {sorted(ALLOWED[package]) or 'itself'}"
        )


def test_the_module_import_graph_has_no_cycle():
    cycle = _find_cycle(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(m.removeprefix("topicbench.") for m in cycle)


def _is_numba_kernel(function: ast.FunctionDef) -> bool:
    """Decorated with numba.njit / numba.jit / njit / jit, with or without arguments."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit"):
            return True
    return False


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        and not _is_numba_kernel(node)
    ]


def test_the_length_check_sees_long_functions_and_spares_kernels(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = tmp_path / "long.py"
    source.write_text(f"def long():\n{body}\n\n@numba.njit(cache=True)\ndef kernel():\n{body}\n\ndef short():\n    pass\n")
    assert [entry.split()[1] for entry in _long_functions(source)] == ["long"]


@pytest.mark.parametrize("package", SHORT_FUNCTION_PACKAGES)
def test_no_function_is_longer_than_a_screen(package):
    """Numba kernels excepted: a kernel's loop nest reads best whole."""
    long = [entry for path in _python_files(package) for entry in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(long)


#: Most lines a library module may have: a module a reader can hold in mind (issue 28). The split
#: kernel modules (core/_kernels/) are far below it too, so none is excepted.
MAX_MODULE_LINES = 500


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_longer_than_it_can_be_read(package):
    long = {str(path.relative_to(ROOT)): n for path in _python_files(package)
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"
