"""topicbench as it was at a git revision, importable beside this checkout's (for "before" figures).

Shared by the benchmark scripts that compare a revision with this checkout
(``bench_reference.py --before``, ``bench_flow_memory.py``): the revision's sources are written to a
temporary folder (the checkout never changes) and a package folder put on ``PYTHONPATH`` imports
``topicbench`` from them.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "baselines", "tasks", "flows")


def package_folder(checkout: Path, into: Path) -> Path:
    """A folder that imports ``topicbench`` from ``checkout`` when put on PYTHONPATH."""
    package = into / "topicbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_bytes((checkout / "topicbench" / "__init__.py").read_bytes())
    for name in PACKAGES:
        (package / name).symlink_to(checkout / name)
    return into


@contextlib.contextmanager
def revision_pythonpath(revision: str, repository: Path = REPOSITORY):
    """For the block, a PYTHONPATH folder whose ``topicbench`` is ``repository`` at ``revision``."""
    with tempfile.TemporaryDirectory(prefix="topicbench-revision-") as folder:
        source = Path(folder) / "source"
        extract_revision(repository, revision, source, ["topicbench", *PACKAGES])
        yield package_folder(source, Path(folder) / "pkg")


def extract_revision(repository: Path, revision: str, into: Path, paths) -> None:
    """Write the files under ``paths`` at ``revision`` of a git repository (bare or not) into ``into``.

    File by file (``ls-tree`` and ``cat-file``), not ``git archive``: a partial mirror may lack
    blobs of other folders, which would make an archive of the whole tree fail.
    """
    listing = _git(repository, "ls-tree", "-r", "-z", revision, "--", *paths).decode()
    blobs = [(line.split("\t", 1)[1], line.split()[2]) for line in listing.split("\0") if " blob " in line]
    if not blobs:
        raise SystemExit(f"{repository} holds nothing under {', '.join(paths)} at {revision}")
    contents = _git(repository, "cat-file", "--batch", stdin="\n".join(sha for _, sha in blobs) + "\n")
    position = 0
    for path, sha in blobs:
        header_end = contents.index(b"\n", position)
        header = contents[position:header_end].split()
        if len(header) != 3 or header[1] != b"blob":
            raise SystemExit(f"{repository}: blob {sha} of {path} is missing ({b' '.join(header).decode()})")
        size = int(header[2])
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(contents[header_end + 1 : header_end + 1 + size])
        position = header_end + 1 + size + 1


def _git(repository: Path, *arguments, stdin: str | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repository), *arguments], input=stdin and stdin.encode(),
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(arguments[:2])} in {repository} failed: {done.stderr.decode().strip()}")
    return done.stdout
