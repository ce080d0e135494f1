"""What every run records to be repeatable: package versions, the git commit, thread counts."""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

PACKAGES = (
    "topicbench", "numpy", "scipy", "numba", "gensim", "scikit-learn", "tomotopy", "torch",
    "sentence-transformers", "bertopic", "prefect", "dask", "distributed", "mlflow",
)


@lru_cache(maxsize=1)
def package_versions() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The repository's HEAD commit (with '+dirty' if tracked files changed), or 'unknown'."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def settings_key(*parts) -> str:
    """A stable hash of JSON-serialisable parts (fingerprints and settings, never arrays)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]
