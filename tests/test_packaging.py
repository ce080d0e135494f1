"""Every package folder of the layout is installed (a non-editable install takes only the packages
pyproject.toml lists: a new sub-package missing there works here and breaks a user's install)."""

from __future__ import annotations

import tomllib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def test_pyproject_lists_every_package_folder():
    setuptools = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: CHECKOUT / folder for name, folder in setuptools["package-dir"].items()}
    found = set()
    for name, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder)
            found.add(".".join((name, *relative.parts)) if relative.parts else name)
    assert sorted(found) == sorted(setuptools["packages"])
