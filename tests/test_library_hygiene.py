"""Library code logs instead of printing, and `core` imports none of the other packages."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python_files(folder):
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", _python_files("core"), ids=lambda p: p.name)
def test_core_does_not_print(path):
    tree = ast.parse(path.read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
    assert not calls, f"{path.name} calls print() at line {calls[0].lineno}: use logging"


@pytest.mark.parametrize("path", _python_files("core"), ids=lambda p: p.name)
def test_core_imports_no_other_topicbench_package(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            assert not node.module.startswith(("topicbench.baselines", "topicbench.tasks", "topicbench.flows")), (
                f"{path.name} imports {node.module}: core must not depend on the other packages"
            )
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] not in ("prefect", "mlflow"), f"{path.name} imports {alias.name}"
