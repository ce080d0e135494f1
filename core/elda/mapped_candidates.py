"""Candidates written once as files that every Dask worker on this machine memory-maps
(:class:`MappedCandidates`), where they go (:func:`candidates_folder`), and the clean-up of the
files a killed run left behind (:func:`remove_leftover_candidates`).

The workers share one copy of the candidates in RAM however many there are, and nothing is sent
to them. Candidates' files are named after the process that wrote them, so that a later run
removes those of a run that was killed (SIGKILL skips every clean-up). Used by
:class:`.dask_shards.DaskShards`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np

from topicbench.core.elda.kernels.records import Columns
from topicbench.core.elda.generators import Candidates

#: Where candidates' files go when shared memory holds them easily (see :func:`candidates_folder`).
SHARED_MEMORY = Path("/dev/shm")
#: Shared memory is used only while the files take at most this share of its free space and of
#: the machine's available memory (tmpfs pages stay in RAM until the files are removed).
SHARED_MEMORY_SHARE = 0.25

#: Candidates' folders are named CANDIDATES_PREFIX + "SCOPE-PID-START-RANDOM": the process that
#: wrote them (its pid and start time, in clock ticks since boot) in SCOPE, this boot of this
#: machine and this pid namespace, where a pid names one process (:func:`_process_scope`).
CANDIDATES_PREFIX = "topicbench-candidates-"
_OWNED_NAME = re.compile(r"(?P<scope>[0-9a-f]{16})-(?P<pid>\d+)-(?P<start>\d+)-[^-]+")


#: The arrays a worker reads; ``columns`` and ``constants_descending`` are computed once here.
_MAPPED_ARRAYS = (
    "row_constants", "indptr", "indices", "values", "col_indptr", "col_topics", "col_values", "constants_descending",
)


class MappedCandidates:
    """A small, picklable handle to candidates written as ``.npy`` files on this machine.

    Workers open the files with copy-on-write memory maps, so every worker process reads the same
    physical pages (one copy in RAM however many workers) and the kernels see ordinary arrays.
    """

    def __init__(self, candidates: Candidates, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        col_indptr, col_topics, col_values = candidates.columns
        arrays = {
            "row_constants": candidates.row_constants, "indptr": candidates.indptr,
            "indices": candidates.indices, "values": candidates.values, "col_indptr": col_indptr,
            "col_topics": col_topics, "col_values": col_values,
            "constants_descending": candidates.constants_descending,
        }
        for name in _MAPPED_ARRAYS:
            np.save(directory / f"{name}.npy", np.ascontiguousarray(arrays[name]))
        self.directory = str(directory)
        self.fields = {
            "n_words": candidates.n_words, "labels": candidates.labels, "keywords": candidates.keywords,
            "generator": candidates.generator, "settings": candidates.settings,
        }

    def load(self) -> Candidates:
        """The candidates over memory-mapped arrays, opened once per worker process.

        Cached by directory in the process, not on the handle: Dask may hand a task a fresh copy
        of the handle (a replica fetched from another worker), and the maps should outlive it.
        """
        loaded = _MAPPED_CANDIDATES.get(self.directory)
        if loaded is None:
            arrays = {
                name: np.asarray(np.load(Path(self.directory) / f"{name}.npy", mmap_mode="c"))
                for name in _MAPPED_ARRAYS
            }
            loaded = Candidates(
                row_constants=arrays["row_constants"], indptr=arrays["indptr"], indices=arrays["indices"],
                values=arrays["values"], **self.fields,
            )
            # Fill the cached properties so no worker recomputes (or copies) the column store.
            loaded.__dict__["columns"] = Columns(arrays["col_indptr"], arrays["col_topics"], arrays["col_values"])
            loaded.__dict__["constants_descending"] = arrays["constants_descending"]
            _MAPPED_CANDIDATES[self.directory] = loaded
        return loaded


def candidates_folder(nbytes: int, shared_memory: Path | None = None) -> Path | None:
    """Where to write ``nbytes`` of candidates for the workers to map: ``shared_memory`` (a tmpfs)
    when it exists and the files take at most :data:`SHARED_MEMORY_SHARE` of its free space and of
    the available memory; else None (the temporary folder).

    Writing to a tmpfs is a memory copy: reuters' 250 MiB took 0.18 s there against 0.9-1.0 s in
    /tmp on this machine's disk, on the first run's critical path. The workers map the same pages
    either way (one copy in RAM)."""
    import psutil

    shared_memory = SHARED_MEMORY if shared_memory is None else Path(shared_memory)
    try:
        if not (shared_memory.is_dir() and os.access(shared_memory, os.W_OK | os.X_OK)):
            return None
        room = min(shutil.disk_usage(shared_memory).free, psutil.virtual_memory().available)
    except OSError:
        return None
    return shared_memory if nbytes <= SHARED_MEMORY_SHARE * room else None


def _process_scope() -> str | None:
    """Where a pid names one process: this boot of this machine (the kernel's boot id) and this pid
    namespace, hashed; None where /proc does not tell (then no folder is taken for a leftover)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return hashlib.sha256(f"{boot} {namespace}".encode()).hexdigest()[:16]


def _start_ticks(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (/proc/PID/stat's 22nd field: unlike
    a start time since the epoch, unaffected by changes of the clock)."""
    fields = Path(f"/proc/{pid}/stat").read_bytes()
    return int(fields[fields.rindex(b")") + 1:].split()[19])  # after "pid (name)": field 3 onwards


def _owner_gone(pid: int, start: int) -> bool:
    """Whether the process that was ``pid`` with start time ``start`` is provably gone: no such
    pid, or the pid taken by a later process. Anything unreadable counts as alive."""
    try:
        return _start_ticks(pid) != start
    except FileNotFoundError:
        return True
    except (OSError, ValueError, IndexError):
        return False


def new_candidates_directory(folder: Path | None) -> Path:
    """A new, empty folder in ``folder`` (default: the temporary folder) for candidates' files,
    named after this process (see :data:`CANDIDATES_PREFIX`)."""
    scope = _process_scope()
    owner = f"{scope}-{os.getpid()}-{_start_ticks(os.getpid())}-" if scope else ""
    return Path(tempfile.mkdtemp(prefix=CANDIDATES_PREFIX + owner, dir=folder))


def remove_leftover_candidates(folders) -> list:
    """Remove the candidates' folders in ``folders`` whose run is provably over; return them.

    A run killed with SIGKILL leaves its folder (hundreds of MiB of RAM in /dev/shm). Removed are
    only folders of this user written in this scope (:func:`_process_scope`) by a process that is
    gone; a live run's folder, another user's or machine's, and one without an owner in its name
    are kept. Removing files that a dying run's workers still map is safe: the pages live on
    until the last map closes.
    """
    scope = _process_scope()
    removed = []
    for folder in folders if scope else ():
        try:
            paths = sorted(Path(folder).glob(CANDIDATES_PREFIX + "*"))
        except OSError:
            continue
        for path in paths:
            owner = _OWNED_NAME.fullmatch(path.name[len(CANDIDATES_PREFIX):])
            if owner is None or owner["scope"] != scope:
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and _owner_gone(int(owner["pid"]), int(owner["start"])):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


#: Memory-mapped candidates open in this worker process, by directory.
_MAPPED_CANDIDATES: dict = {}


def unmap(directory: str) -> None:
    """Forget this process's maps of the candidates in ``directory`` (the files are being removed)."""
    _MAPPED_CANDIDATES.pop(directory, None)
