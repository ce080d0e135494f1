"""Model plugins for the tests: the manual's example (docs/own-model.md) installed with pip, or made by hand.

``install_example_plugin`` builds and installs ``examples/nmf_plugin`` (a copy, so the build
writes nothing into the repository) into a target folder, offline, with the project's own
interpreter: the folder then holds ``topicbench_nmf.py`` and its ``*.dist-info`` with the
``topicbench.models`` entry point. ``write_plugin`` writes a distribution's metadata and modules
by hand, for the error cases that no one would publish.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PLUGIN = ROOT / "examples" / "nmf_plugin"
EXAMPLE_MODEL = "sklearn_nmf"


def install_example_plugin(folder: Path) -> Path:
    """Install the example plugin into ``folder/site`` (pip, no index, no build isolation, no
    dependencies: topicbench and scikit-learn are this environment's); return that folder."""
    source = folder / "nmf_plugin"
    shutil.copytree(EXAMPLE_PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = folder / "site"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
               "--disable-pip-version-check", "--quiet", "--target", str(site), str(source)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, f"pip could not install the example plugin:\n{finished.stdout}\n{finished.stderr}"
    return site


def write_plugin(site: Path, distribution: str, entry_points: dict, modules: dict | None = None) -> None:
    """A distribution ``distribution`` 0.1.0 in ``site``: its ``*.dist-info`` (METADATA and
    ``entry_points.txt`` with ``entry_points`` in the ``topicbench.models`` group) and the
    ``modules`` (file name -> source)."""
    info = site / f"{distribution.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[topicbench.models]\n{lines}")
    for file_name, source in (modules or {}).items():
        (site / file_name).write_text(source)
