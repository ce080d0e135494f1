"""The spool: finished fits that could not be logged (the tracking server went away, the store's
disk filled up), kept until a later run of the same store and experiment logs them, unrefitted.

One folder per store and experiment, ``SPOOL_ROOT/<store>/<experiment>/``, and in it one entry per
run key: ``run.json`` (the :class:`~topicbench.tasks.fit_record.FitRecord`) and ``artifacts/``
(the fit's artifacts folder, moved there). An entry appears whole (written under a hidden name,
then renamed) and is removed once its run is logged FINISHED. The root is ``$TOPICBENCH_SPOOL``,
else ``$XDG_STATE_HOME/topicbench/spool`` (``~/.local/state/topicbench/spool``): a user's state,
not a cache, since an entry may be the only copy of a fit.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from .artifacts import ArtifactFolder
from .fit_record import FitRecord
from .store_checks import sqlite_path

SPOOL_VARIABLE = "TOPICBENCH_SPOOL"
RECORD_FILE, ARTIFACTS_FOLDER = "run.json", "artifacts"
#: {spool folder: entries} this process put there: what an interrupted command's last line names.
_KEPT_HERE: dict = {}


def spool_root() -> Path:
    if os.environ.get(SPOOL_VARIABLE):
        return Path(os.environ[SPOOL_VARIABLE]).expanduser()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "topicbench" / "spool"


def kept_by_this_process() -> dict:
    """{spool folder: number of fits} this process spooled."""
    return dict(_KEPT_HERE)


def store_name(tracking_uri: str) -> str:
    """A folder name for a store: readable, and unique through a hash of the URI (a sqlite
    file's resolved path, so that two spellings of one database share it)."""
    database = sqlite_path(tracking_uri)
    identity = f"sqlite:///{database.resolve()}" if database is not None else tracking_uri.rstrip("/")
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", re.sub(r"//[^/@]*@", "//", identity))[-60:].strip("_")
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:10]}"


class Spool:
    """The spooled fits of one store and experiment (:attr:`folder`, created on the first entry)."""

    def __init__(self, folder):
        self.folder = Path(folder)

    @classmethod
    def of(cls, tracking_uri: str, experiment: str) -> "Spool":
        return cls(spool_root() / store_name(tracking_uri) / re.sub(r"[^A-Za-z0-9._-]+", "_", experiment))

    def keys(self) -> set:
        """Run keys with a whole entry."""
        if not self.folder.is_dir():
            return set()
        return {entry.name for entry in self.folder.iterdir() if (entry / RECORD_FILE).is_file() and not entry.name.startswith(".")}

    def put(self, run_key: str, record: FitRecord, artifacts: ArtifactFolder) -> Path:
        """Keep ``record`` and ``artifacts`` (moved when they are a folder of this host) as the
        entry of ``run_key``, replacing an older one; its folder."""
        partial = self.folder / f".{run_key}.{os.getpid()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        try:
            with artifacts.local_folder() as folder:
                if artifacts.path is not None:  # this host's temporary folder: moved, not copied
                    shutil.move(str(folder), partial / ARTIFACTS_FOLDER)
                else:
                    shutil.copytree(folder, partial / ARTIFACTS_FOLDER)
            (partial / RECORD_FILE).write_text(record.to_json(), encoding="utf-8")
            entry = self.folder / run_key
            shutil.rmtree(entry, ignore_errors=True)
            partial.rename(entry)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        _KEPT_HERE[self.folder] = _KEPT_HERE.get(self.folder, 0) + 1
        return entry

    def record(self, run_key: str) -> FitRecord:
        return FitRecord.from_json((self.folder / run_key / RECORD_FILE).read_text(encoding="utf-8"))

    def artifacts(self, run_key: str) -> Path:
        return self.folder / run_key / ARTIFACTS_FOLDER

    def remove(self, run_key: str) -> None:
        """Drop the entry of ``run_key`` (logged, or made obsolete by a FINISHED run), and the
        folder once it is empty."""
        shutil.rmtree(self.folder / run_key, ignore_errors=True)
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()
            except OSError:  # not empty, or gone
                break
