"""The spool: finished fits that could not be logged (the tracking server went away, the store's
disk filled up), kept until a later run of the same store and experiment logs them, unrefitted.

One folder per store and experiment, ``SPOOL_ROOT/<store>/<experiment>/``, and in it one entry per
run key: ``run.json`` (the :class:`~topicbench.tasks.store.fit_record.FitRecord`) and ``artifacts/``
(the fit's artifacts folder, moved there). An entry appears whole (written under a hidden name,
then renamed) and is removed once its run is logged FINISHED. The root is ``$TOPICBENCH_SPOOL``,
else ``$XDG_STATE_HOME/topicbench/spool`` (``~/.local/state/topicbench/spool``): a user's state,
not a cache, since an entry may be the only copy of a fit.

An entry that cannot be logged (its ``run.json`` unreadable or not a record this topicbench
wrote, its artifacts missing or unreadable, or the store refusing it) is moved aside to
``failed/<run key>/`` with a ``why.txt``, never deleted, so that it stops every later run only
once: :meth:`Spool.entry` says why, :meth:`Spool.set_aside` moves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import time
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

from topicbench.core.validation import InputError

from topicbench.tasks.store.artifacts import ArtifactFolder
from topicbench.tasks.store.fit_record import FitRecord
from topicbench.tasks.store.records import package_versions
from topicbench.tasks.store.checks import sqlite_path

SPOOL_VARIABLE = "TOPICBENCH_SPOOL"
RECORD_FILE, ARTIFACTS_FOLDER = "run.json", "artifacts"
#: Where entries that cannot be logged are kept for inspection, each with why in REASON_FILE.
FAILED_FOLDER, REASON_FILE = "failed", "why.txt"
#: The layout of ``run.json``: {"spool_format", "topicbench_version", "record"}.
SPOOL_FORMAT = 1
#: A record is params, tags and metrics of one fit (kilobytes); anything this large is not one.
MAX_RECORD_BYTES = 16 * 2**20
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


class UnusableEntry(InputError):
    """A spool entry that cannot be logged: the message says why."""


class SpooledFit(NamedTuple):
    """A spool entry that can be logged: the fit's record and its artifacts' folder."""

    record: FitRecord
    artifacts: Path


def this_version() -> str:
    """The topicbench version a spooled fit must have been made by to be logged by this one (its
    run's params name this process's versions)."""
    return package_versions().get("topicbench", "unknown")


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
        return {entry.name for entry in self.folder.iterdir()
                if (entry / RECORD_FILE).is_file() and not entry.name.startswith(".") and entry.name != FAILED_FOLDER}

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
            envelope = {"spool_format": SPOOL_FORMAT, "topicbench_version": this_version(), "record": asdict(record)}
            (partial / RECORD_FILE).write_text(json.dumps(envelope, indent=1), encoding="utf-8")
            entry = self.folder / run_key
            shutil.rmtree(entry, ignore_errors=True)
            partial.rename(entry)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        _KEPT_HERE[self.folder] = _KEPT_HERE.get(self.folder, 0) + 1
        return entry

    def entry(self, run_key: str) -> SpooledFit:
        """The entry of ``run_key``, checked whole before anything is logged from it; an
        :class:`UnusableEntry` saying why it cannot be logged."""
        record = _read_record(self.folder / run_key / RECORD_FILE)
        artifacts = self.artifacts(run_key)
        _check_artifacts(artifacts)
        return SpooledFit(record, artifacts)

    def artifacts(self, run_key: str) -> Path:
        return self.folder / run_key / ARTIFACTS_FOLDER

    def set_aside(self, run_key: str, reason: str) -> Path:
        """Move the entry of ``run_key`` to ``failed/`` (beside an earlier failed entry of the
        same key, never over it), with ``reason`` in its ``why.txt``; its new folder. Raises
        OSError when it cannot be moved."""
        failed = self.folder / FAILED_FOLDER
        failed.mkdir(exist_ok=True)
        target = failed / run_key
        if target.exists():
            target = failed / f"{run_key}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        (self.folder / run_key).rename(target)
        try:
            (target / REASON_FILE).write_text(reason + "\n", encoding="utf-8")
        except OSError:  # the entry is aside all the same; the warning that names it says why
            pass
        return target

    def remove(self, run_key: str) -> None:
        """Drop the entry of ``run_key`` (logged, or made obsolete by a FINISHED run), and the
        folder once it is empty."""
        shutil.rmtree(self.folder / run_key, ignore_errors=True)
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()
            except OSError:  # not empty, or gone
                break


def _read_record(path: Path) -> FitRecord:
    """The record of a ``run.json``, or an :class:`UnusableEntry` naming what is wrong with it."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise UnusableEntry(f"{RECORD_FILE} is not a regular file")
        if status.st_size > MAX_RECORD_BYTES:
            raise UnusableEntry(f"{RECORD_FILE} is {status.st_size / 2**20:.0f} MiB, too large for a fit's record")
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise UnusableEntry(f"cannot read {RECORD_FILE}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise UnusableEntry(f"{RECORD_FILE} is not UTF-8 text (byte {error.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UnusableEntry(f"{RECORD_FILE} is not JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except RecursionError:
        raise UnusableEntry(f"{RECORD_FILE} is nested too deeply to be a fit's record") from None
    if not isinstance(data, dict) or "record" not in data or data.get("spool_format") != SPOOL_FORMAT:
        raise UnusableEntry(f"{RECORD_FILE} is not a spool entry of format {SPOOL_FORMAT} (written by another "
                            "topicbench version, or not by topicbench)")
    # the run's params name this process's versions: a fit of another version would be misrecorded
    if data.get("topicbench_version") != this_version():
        raise UnusableEntry(f"the fit was made by topicbench {data.get('topicbench_version')!r}, this is "
                            f"{this_version()!r}")
    try:
        return FitRecord.from_dict(data["record"])
    except ValueError as error:
        raise UnusableEntry(f"{RECORD_FILE} is not a fit's record: {error}") from None


def _check_artifacts(folder: Path) -> None:
    """An :class:`UnusableEntry` unless ``folder`` is a folder (not a link) of folders and regular
    files that can be opened: a link, a pipe or a device among them would be logged as something
    else, or block the logging forever."""
    if folder.is_symlink() or not folder.is_dir():
        raise UnusableEntry(f"its {ARTIFACTS_FOLDER} folder is missing")
    try:
        for parent, folders, files in os.walk(folder, onerror=_raise):
            for name in folders + files:
                path = Path(parent, name)
                mode = path.lstat().st_mode
                if stat.S_ISDIR(mode):
                    continue
                if not stat.S_ISREG(mode):
                    raise UnusableEntry(f"{path.relative_to(folder.parent)} is not a regular file")
                with open(path, "rb"):
                    pass
    except OSError as error:
        where = Path(error.filename).relative_to(folder.parent) if error.filename else ARTIFACTS_FOLDER
        raise UnusableEntry(f"cannot read {where}: {error.strerror or error}") from None


def _raise(error: OSError) -> None:
    raise error
