"""Where the ProxAnn tests find the authors' released data (``ahoho/proxann`` at 3583fa4).

The oracle reads the fixture derived from it (``tests/data/proxann``, always present:
:func:`proxann_fixture`). The tests of the release itself, and of the fixture against it, read
the real files: ``$PROXANN_DATA`` names a folder holding their ``data/`` (a checkout, or the
folder of ``topicbench data fetch proxann``); else the pinned files are read out of a bare mirror
of the repository (``/work/.mirror/ahoho+proxann/repo``, or ``$PROXANN_MIRROR``) into a temporary
folder. Neither present: those tests skip with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from topicbench.core.proxann_release import HUMAN_RESPONSES, PROXANN_COMMIT, release_files

DEFAULT_MIRROR = "/work/.mirror/ahoho+proxann/repo"
#: The oracle's fixture and the script that derives it from the release.
FIXTURE_FOLDER = Path(__file__).resolve().parent / "data" / "proxann"


def proxann_fixture():
    """``tests/data/proxann/derive.py`` as a module (it is a script beside the data, not a
    package): ``read_fixture``, ``derive_tables``, ``csv_text``, ``fixture_text``, ..."""
    spec = importlib.util.spec_from_file_location("proxann_fixture", FIXTURE_FOLDER / "derive.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def release_folder(tmp_path_factory) -> Path:
    """A folder with ProxAnn's pinned ``data/`` files, or a skip saying why there is none."""
    given = os.environ.get("PROXANN_DATA")
    if given:
        folder = Path(given)
        if not (folder / HUMAN_RESPONSES).is_file():
            pytest.skip(f"$PROXANN_DATA={given} holds no {HUMAN_RESPONSES}")
        return folder
    mirror = Path(os.environ.get("PROXANN_MIRROR", DEFAULT_MIRROR))
    if shutil.which("git") is None or not (mirror / "HEAD").is_file():
        pytest.skip(f"ProxAnn's data absent: set $PROXANN_DATA, or mirror ahoho/proxann at {mirror}")
    folder = tmp_path_factory.mktemp("proxann")
    for path, _, _ in release_files():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_git(mirror, "show", f"{PROXANN_COMMIT}:{path}"))
    return folder


def _git(mirror: Path, *arguments) -> bytes:
    try:
        return subprocess.run(["git", f"--git-dir={mirror}", *arguments], check=True, capture_output=True,
                              timeout=120).stdout
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"cannot read ProxAnn's files from the mirror {mirror}: {error}")
