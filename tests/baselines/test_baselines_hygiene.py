"""Library code in baselines/ logs instead of printing and imports neither tasks nor flows."""

import ast
from pathlib import Path

import pytest

BASELINES = Path(__file__).resolve().parents[2] / "baselines"


@pytest.mark.parametrize("path", sorted(BASELINES.glob("*.py")), ids=lambda p: p.name)
def test_baselines_module_does_not_print_or_import_upward(path):
    tree = ast.parse(path.read_text())
    prints = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
    assert not prints, f"{path.name} calls print() at line {prints[0].lineno}: use logging"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            assert not node.module.startswith(("topicbench.tasks", "topicbench.flows")), f"{path.name} imports {node.module}"


def test_the_pinned_stack_has_no_torchvision_and_the_local_torch():
    """No dependency brought torchvision or another torch (pyproject.toml, constraints.txt)."""
    import importlib.util
    import sys

    import torch

    from topicbench.baselines.registry import MODELS

    for name in MODELS.names():
        MODELS.get(name)
    assert importlib.util.find_spec("torchvision") is None
    assert "torchvision" not in sys.modules
    assert torch.__version__.split("+")[0] == "2.13.0"
