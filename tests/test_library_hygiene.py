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
        "    from topicbench.flows.cli.main import main\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    known = {"topicbench.core.elda", "topicbench.core.corpus", "topicbench.core.metrics.posterior"}
    monkeypatch.setitem(globals(), "MODULES", {name: None for name in known})
    assert _imported_modules(source) == [
        (1, "topicbench.core.corpus"), (2, "topicbench.core.elda"), (5, "topicbench.flows.cli.main"),
    ]


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond is no cycle
    cycle = _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}


def test_every_package_is_read():
    for package in PACKAGES:
        assert any(_package_of(m) == package for m in MODULES), f"no module of {package} found"
    assert "topicbench.core.elda.model" in MODULES and "topicbench.flows.cli.main" in MODULES


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


#: Most lines a library module may have: a module a reader can hold in mind (issue 28), with
#: headroom under the 500 a module was split at before (issue 45): the next feature splits a module
#: by job, not by line count. The kernel modules (core/elda/kernels/) are far below it too.
MAX_MODULE_LINES = 450


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_longer_than_it_can_be_read(package):
    long = {str(path.relative_to(ROOT)): n for path in _python_files(package)
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"


# ------------------------------------------------------------------------------------------------
# Rooms (issue 45): a package's sub-packages are rooms by concern, ordered like the packages.
# ------------------------------------------------------------------------------------------------

#: What each room of tasks/ may import of the others (besides itself): the LLM endpoint below the
#: store, the store below what runs on a worker, the read side (results) below the report and the
#: leaderboard. A module at a package's top (``tasks/__init__.py``) is in no room.
ROOM_ALLOWED = {
    "tasks.llm": set(),
    "tasks.store": {"tasks.llm"},
    "tasks.run": {"tasks.llm", "tasks.store"},
    "tasks.search": {"tasks.llm", "tasks.store", "tasks.run"},
    "tasks.results": {"tasks.llm", "tasks.store"},
    "tasks.report": {"tasks.llm", "tasks.store", "tasks.results"},
    "tasks.leaderboard": {"tasks.llm", "tasks.store", "tasks.results", "tasks.report"},
    # core: E-LDA is the subject; the metrics score any output, E-LDA's matched budget included
    "core.elda": set(),
    "core.metrics": {"core.elda"},
}


def _room_of(module: str) -> str:
    """``tasks.store`` for ``topicbench.tasks.store.claims``; the package (``tasks``) for a module at
    a package's top or in no sub-package."""
    parts = module.removeprefix("topicbench.").split(".")
    if len(parts) >= 2 and f"topicbench.{parts[0]}.{parts[1]}" in MODULES \
            and MODULES[f"topicbench.{parts[0]}.{parts[1]}"].name == "__init__.py":
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def test_the_room_reader_names_rooms_and_halls():
    assert _room_of("topicbench.tasks.store.claims") == "tasks.store"
    assert _room_of("topicbench.tasks.store") == "tasks.store"
    assert _room_of("topicbench.core.elda.kernels.gains") == "core.elda"
    assert _room_of("topicbench.core.io") == "core"
    assert set(ROOM_ALLOWED) <= {_room_of(m) for m in MODULES}, "a room named here has no module"


def test_every_module_of_tasks_lives_in_a_room():
    loose = [m for m in MODULES if _package_of(m) == "tasks" and _room_of(m) == "tasks" and m != "topicbench.tasks"]
    assert not loose, f"modules of tasks/ outside a room: {loose}"


@pytest.mark.parametrize("room", sorted(ROOM_ALLOWED))
def test_rooms_import_only_the_rooms_below_them(room):
    wrong = []
    for module, path in MODULES.items():
        if _room_of(module) != room:
            continue
        for line, imported in _imported_modules(path):
            other = _room_of(imported)
            same_package = other.split(".")[0] == room.split(".")[0]
            if same_package and other != room and other in ROOM_ALLOWED and other not in ROOM_ALLOWED[room]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not wrong, f"{room} may import only {sorted(ROOM_ALLOWED[room]) or 'itself'} of the rooms: " + "; ".join(wrong)


def test_only_the_command_line_imports_the_command_line():
    wrong = [f"{MODULES[m].relative_to(ROOT)}:{line}" for m in MODULES if _room_of(m) != "flows.cli"
             for line, imported in _imported_modules(MODULES[m]) if _room_of(imported) == "flows.cli"]
    assert not wrong, "flows/cli/ is the top floor; imported by: " + ", ".join(wrong)


def _private_imports(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every ``_private`` name or module ``path`` imports from another room."""
    here = _room_of(_module_name(path))
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        for line, imported in _imported_modules_of(node, path):
            private = any(part.startswith("_") and part != "__init__" for part in imported.split(".")[1:])
            if private and _room_of(imported.rsplit(".", 1)[0] if imported not in MODULES else imported) != here:
                found.append((line, imported))
    return found


def _imported_modules_of(node: ast.ImportFrom, path: Path) -> list[tuple[int, str]]:
    """The names one from-import takes: ``module.name`` for each (a module or an attribute)."""
    here = _module_name(path).split(".")
    package = here if _is_package(path) else here[:-1]
    module = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])) \
        if node.level else (node.module or "")
    if not module.startswith("topicbench."):
        return []
    return [(node.lineno, f"{module}.{alias.name}") for alias in node.names]


def test_the_private_import_check_sees_names_and_modules_of_other_rooms(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    (tmp_path / "tasks" / "report").mkdir(parents=True)
    source = tmp_path / "tasks" / "report" / "probe.py"
    source.write_text("from topicbench.tasks.results.store import _hidden, shown\n"
                      "from topicbench.core.metrics import _topics\n"
                      "from topicbench.tasks.report.tables import _own\n")
    found = [name for _, name in _private_imports(source)]
    assert found == ["topicbench.tasks.results.store._hidden", "topicbench.core.metrics._topics"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_rooms_private_names(package):
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path in _python_files(package) for line, name in _private_imports(path)]
    assert not wrong, "private names are a room's own (make them public, or move the code): " + "; ".join(wrong)


def test_no_library_module_has_a_test_files_name():
    shaped = [str(path.relative_to(ROOT)) for package in PACKAGES for path in _python_files(package)
              if path.stem.startswith("test_") or path.stem.endswith("_test") or path.stem == "conftest"]
    assert not shaped, f"library modules named like tests (pytest would collect them, readers look past them): {shaped}"
