"""Result bundles are untrusted input: the one check every reader makes before it reads a bundle.

:func:`check_bundle` reads a bundle's ``manifest.json``, ``runs.jsonl``, every table its manifest
lists and every run's archive once, before anything is written or rendered. Import, ``report
--bundle`` (:class:`~topicbench.tasks.results.bundle_source.BundleSource`), the leaderboard
(:func:`~topicbench.tasks.leaderboard.ranking.load_bundle`) and ``paper --bundle`` all call it, so a
malformed bundle is one :class:`BundleError` (an :class:`~topicbench.core.validation.InputError`:
one line, exit status 2) naming the file and the field, from every command alike. Refused:

- anything but a regular file where a file is read (``os.stat`` before opening, the opened
  descriptor again): a FIFO would block the reader for ever, a device never ends;
- a file, a line, a table or an archive's unpacked bytes past its limit (:data:`BUNDLE_LIMITS`);
- a manifest that is no object, a ``bundle_format`` that is no whole number of the formats read
  (``true`` is not 1), no experiment, tables or archive hashes of the wrong shape;
- a run id or table name that could leave the bundle (a path separator, ``..``);
- a ``runs.jsonl`` record with a missing or mistyped field, a status other than FINISHED, a run id
  or run key twice, an infinite metric;
- a table :func:`~topicbench.tasks.results.bundle_tables.read_tables` refuses, a column of the
  wrong type, a run or run key twice, a run still RUNNING, an infinite score;
- an archive missing, not of the manifest's SHA-256, no gzip or cut short, or holding a link, a
  device, a FIFO, a member leaving it or there twice, more members or bytes than the limits.

A bundle exported before archives had hashes (no ``archive_sha256``) is read with one warning:
its archives are still checked for their form. :func:`unpack_archive` unpacks a checked archive
with the same member checks and tarfile's ``data`` filter.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import posixpath
import re
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topicbench.core.jsonl import read_json_lines
from topicbench.core.validation import InputError

from topicbench.tasks.results.bundle_files import (  # noqa: F401 (BUNDLE_LIMITS, opened_bundle_file: read here too)
    _AGAIN, BUNDLE_LIMITS, BundleError, bundle_limit, opened_bundle_file, read_bundle_file,
)
from topicbench.tasks.results.bundle_tables import MANIFEST, TABLE_COLUMNS, TABLES_FOLDER, TableError, read_tables
from topicbench.tasks.store.claims import RUN_KEY

logger = logging.getLogger(__name__)

RUNS_FILE, ARTIFACTS_FOLDER = "runs.jsonl", "artifacts"
#: The formats this topicbench reads: format 1 has no tables (import still reads it); format 3 keeps
#: each vocabulary once (:mod:`~topicbench.tasks.results.bundle_vocabularies`).
READABLE_FORMATS = (1, 2, 3)
#: The manifest's {bundle run id: SHA-256 of ``artifacts/<run id>.tar.gz``}, written since archives are checked.
ARCHIVES_KEY = "archive_sha256"
#: Bytes an archive may hold after its last member: tar pads to 10 KiB records, nothing needs more.
MAX_TRAILING_BYTES = 1 << 20
#: A run id or table name, which name files: no separator, no ``..``, no leading dot.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
#: The statuses a run of a table may have: it ended (a bundle's tables hold no run still going).
ENDED_STATUSES = ("FINISHED", "FAILED", "KILLED")
#: Each field of a ``runs.jsonl`` record and the types it may have (None: JSON null).
RECORD_FIELDS = {"run_id": (str,), "parent_id": (str, None), "run_name": (str, None), "status": (str,),
                 "start_time": (int, None), "end_time": (int, None), "params": (dict,), "tags": (dict,),
                 "metrics": (dict,)}
#: The manifest's optional fields and the type each has where given (or null).
MANIFEST_FIELDS = {"tables": dict, ARCHIVES_KEY: dict, "report_columns": list, "run_keys": list, "runs": int,
                   "fits": int, "config": dict, "judge": dict, "datasets": dict, "preprocessing": dict,
                   "packages": dict, "scores_file": dict, "created": str, "commit": str}
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CheckedBundle:
    """A bundle as :func:`check_bundle` read it: its manifest, its ``runs.jsonl`` records, every
    table the manifest lists (name -> frame, typed) and each record's archive (run id -> path)."""

    folder: Path
    manifest: dict
    records: list
    tables: dict
    archives: dict

    def tables_named(self, names) -> dict:
        """The tables ``names``; a :class:`TableError` naming the first one the bundle lacks."""
        if not self.tables:
            raise TableError(f"{self.folder}: this bundle (format {self.manifest['bundle_format']}) has no tables; "
                             "export it again with this topicbench (`topicbench import` it, then `topicbench export`)")
        for name in names:
            if name not in self.tables:
                raise TableError(f"{self.folder}: its manifest lists no table {name!r}; export the bundle again")
        return {name: self.tables[name] for name in names}


def check_bundle(folder) -> CheckedBundle:
    """The bundle in ``folder``, every file of it checked (the module's list); a
    :class:`BundleError` (or :class:`TableError`) naming the file and the field otherwise."""
    folder = Path(folder)
    manifest = _checked_manifest(folder)
    records = _checked_records(folder, manifest)
    tables = _checked_tables(folder, manifest) if manifest.get("tables") else {}
    return CheckedBundle(folder, manifest, records, tables, _checked_archives(folder, manifest, records))


def _json_of(path: Path, data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: nesting a bundle made deep
        raise BundleError(f"{path} is not JSON ({type(error).__name__}: {str(error)[:200]})") from None


def _checked_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        manifest = _json_of(path, read_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_MANIFEST_MB"))
    except BundleError as error:
        raise BundleError(f"{folder} is not a readable result bundle: {error}") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{path}: a manifest is a JSON object, this is a {type(manifest).__name__}; {_AGAIN}")
    form = manifest.get("bundle_format")
    if type(form) is not int or form not in READABLE_FORMATS:  # type(): true is a bool, never format 1
        raise BundleError(f"{path}: bundle format {json.dumps(form)}, this topicbench reads "
                          f"{' and '.join(map(str, READABLE_FORMATS))} (field bundle_format, a whole number)")
    if not isinstance(manifest.get("experiment"), str) or not manifest["experiment"]:
        raise BundleError(f"{path}: field experiment is {json.dumps(manifest.get('experiment'))}, not an experiment's "
                          f"name; {_AGAIN}")
    for field, kind in MANIFEST_FIELDS.items():
        value = manifest.get(field)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise BundleError(f"{path}: field {field} is a {type(value).__name__}, not a {kind.__name__}; {_AGAIN}")
    for name, facts in (manifest.get("tables") or {}).items():
        _check_name(path, "tables", name)
        rows, digest = (facts.get("rows"), facts.get("sha256")) if isinstance(facts, dict) else (None, None)
        if type(rows) is not int or rows < 0 or not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise BundleError(f"{path}: field tables.{name} is not {{\"rows\": a count, \"sha256\": 64 hex digits}}")
    for name, digest in (manifest.get(ARCHIVES_KEY) or {}).items():
        _check_name(path, ARCHIVES_KEY, name)
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise BundleError(f"{path}: field {ARCHIVES_KEY}.{name} is not a SHA-256 (64 hex digits)")
    return manifest


def _check_name(path: Path, field: str, name) -> None:
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or ".." in name:
        raise BundleError(f"{path}: field {field} names {json.dumps(name)[:200]}, which is no plain file name (letters, "
                          "digits, '_', '-', '.'; no path separator, no '..'): a bundle's names stay inside it")


def _checked_records(folder: Path, manifest: dict) -> list:
    path = folder / RUNS_FILE
    try:
        data = read_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_TABLE_MB")
        text = data.decode("utf-8")
    except BundleError as error:
        raise BundleError(f"{folder} is not a readable result bundle: {error}") from None
    except UnicodeDecodeError as error:
        raise BundleError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    line_limit = bundle_limit("TOPICBENCH_BUNDLE_MAX_LINE_KB")
    numbers = []
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > line_limit:
            raise BundleError(f"{path}: line {number} is longer than the {line_limit:,} characters "
                              "TOPICBENCH_BUNDLE_MAX_LINE_KB allows")
        if line.strip():
            numbers.append(number)
    try:
        records = read_json_lines(text, str(path))
    except (ValueError, RecursionError) as error:  # a number of a million digits, arrays nested a million deep
        raise BundleError(str(error) if isinstance(error, InputError) else f"{path} is not JSON Lines ({error})") from None
    for number, record in zip(numbers, records):
        _check_record(f"{path}: line {number}", record)
    _check_unique(path, [(f"line {n}", r["run_id"]) for n, r in zip(numbers, records)], "run id")
    _check_unique(path, [(f"line {n}", r["tags"][RUN_KEY]) for n, r in zip(numbers, records) if RUN_KEY in r["tags"]],
                  f"run key (tags.{RUN_KEY})")
    if manifest.get("runs") is not None and manifest["runs"] != len(records):
        raise BundleError(f"{path} holds {len(records)} runs where {folder / MANIFEST} (field runs) says "
                          f"{manifest['runs']}; {_AGAIN}")
    return records


def _check_record(where: str, record) -> None:
    if not isinstance(record, dict):
        raise BundleError(f"{where}: a run is a JSON object, this is a {type(record).__name__}")
    for field, kinds in RECORD_FIELDS.items():
        if field not in record:
            raise BundleError(f"{where}: field {field} is missing; {_AGAIN}")
        value = record[field]
        if not any(value is None if kind is None else isinstance(value, kind) and not isinstance(value, bool)
                   for kind in kinds):
            raise BundleError(f"{where}: field {field} is {json.dumps(value)[:100]}, not of its type; {_AGAIN}")
    _check_name(Path(where), "run_id", record["run_id"])
    if record["status"] != "FINISHED":
        raise BundleError(f"{where}: field status is {record['status']!r}: a bundle holds FINISHED runs only "
                          "(`topicbench export` writes no other); export it again")
    for field in ("params", "tags"):
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in record[field].items()):
            raise BundleError(f"{where}: field {field} maps names to text, and this one has another value")
    for name, value in record["metrics"].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isinf(value):
            raise BundleError(f"{where}: field metrics.{name} is {json.dumps(value)[:100]}, not a finite number "
                              "(or NaN, not computed)")


def _check_unique(path: Path, found: list, what: str) -> None:
    seen = {}
    for where, value in found:
        if value in seen:
            raise BundleError(f"{path}: {what} {str(value)[:100]!r} is there twice ({seen[value]} and {where}): a "
                              "bundle holds each run once; export it again from the store")
        seen[value] = where


def _checked_tables(folder: Path, manifest: dict) -> dict:
    tables = read_tables(folder, manifest=manifest)  # present, its SHA-256, rows and columns the manifest's
    for name in list(tables):
        path = folder / TABLES_FOLDER / f"{name}.parquet"
        tables[name] = _typed(path, tables[name], TABLE_COLUMNS.get(name, {}))
        if "value" in tables[name] and name in ("scores", "topic_scores"):
            values = tables[name]["value"].to_numpy(dtype=float)
            if np.isinf(values).any():
                row = tables[name].iloc[int(np.flatnonzero(np.isinf(values))[0])]
                raise BundleError(f"{path}: column value holds {row['value']} (run {row['run_id']}, score "
                                  f"{row['score']}): a score is a finite number, or NaN where it was not computed")
    if "runs" in tables:
        _check_runs_table(folder / TABLES_FOLDER / "runs.parquet", tables["runs"])
    return tables


def _typed(path: Path, frame, columns: dict):
    """``frame`` with its known columns in the types readers count on (a seed a whole number)."""
    for column, kind in columns.items():
        try:
            frame[column] = frame[column].astype(kind)
        except (ValueError, TypeError, OverflowError) as error:
            raise BundleError(f"{path}: column {column} is not {kind} ({str(error)[:200]}); {_AGAIN}") from None
    return frame


def _check_runs_table(path: Path, runs) -> None:
    if runs.run_id.isna().any():
        raise BundleError(f"{path}: column run_id has an empty row; {_AGAIN}")
    _check_unique(path, [(f"row {i}", run_id) for i, run_id in enumerate(runs.run_id)], "run id")
    keyed = runs[runs.run_key.notna()]
    _check_unique(path, [(f"row {i}", key) for i, key in zip(keyed.index, keyed.run_key)], "run key")
    going = runs[~runs.status.isin(ENDED_STATUSES)]
    if len(going):
        raise BundleError(f"{path}: column status is {going.status.iloc[0]!r} for run {going.run_id.iloc[0]}: a "
                          f"bundle's runs ended ({', '.join(ENDED_STATUSES)}); export it again")


def archive_path(folder: Path, run_id: str) -> Path:
    return Path(folder) / ARTIFACTS_FOLDER / f"{run_id}.tar.gz"


def _checked_archives(folder: Path, manifest: dict, records: list) -> dict:
    hashes = manifest.get(ARCHIVES_KEY)
    ids = [record["run_id"] for record in records]
    if hashes is None:
        if records:
            logger.warning("%s has no archive hashes (field %s; exported before topicbench recorded them): its archives "
                           "are checked for their form only; `topicbench export` it again to add them",
                           folder / MANIFEST, ARCHIVES_KEY)
    elif set(hashes) != set(ids):
        odd = sorted(set(hashes) ^ set(ids))[0]
        raise BundleError(f"{folder / MANIFEST}: field {ARCHIVES_KEY} and {RUNS_FILE} name other runs ({odd!r} is in "
                          f"one of them only); {_AGAIN}")
    archives = {}
    for run_id in ids:
        path = archive_path(folder, run_id)
        digest = _scanned_archive(path)
        if hashes is not None and digest != hashes[run_id]:
            raise BundleError(f"{path}: its SHA-256 is not the manifest's (field {ARCHIVES_KEY}.{run_id}): damaged or "
                              f"altered since export; {_AGAIN}")
        archives[run_id] = path
    return archives


def _scanned_archive(path: Path) -> str:
    """The SHA-256 of the archive at ``path`` once it reads whole as a checked .tar.gz (nothing written)."""
    with opened_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB") as file:
        digest = hashlib.sha256()
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
        file.seek(0)
        with _archive_errors(path), tarfile.open(fileobj=file, mode="r:gz") as archive:
            for _ in checked_members(archive, path):
                pass
            trailing = 0
            for chunk in iter(lambda: archive.fileobj.read(1 << 16), b""):  # to the end: gzip checks its CRC there
                trailing += len(chunk)
                if trailing > MAX_TRAILING_BYTES:
                    raise BundleError(f"{path}: more than {MAX_TRAILING_BYTES:,} bytes after its last member")
    return digest.hexdigest()


@contextlib.contextmanager
def _archive_errors(path: Path):
    """Whatever tarfile, gzip or zlib raise on a damaged archive, as one :class:`BundleError`."""
    try:
        yield
    except InputError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as error:
        raise BundleError(f"{path} is not a readable .tar.gz archive ({type(error).__name__}: {str(error)[:200]}); "
                          f"{_AGAIN}") from None


def checked_members(archive: tarfile.TarFile, path: Path):
    """The members of ``archive``, each checked as it is read: a file or a folder, inside the
    archive, not seen before, within the limits of members and unpacked bytes (which stops a
    bomb at the header that crosses them, before its bytes)."""
    byte_limit = bundle_limit("TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB")
    member_limit = bundle_limit("TOPICBENCH_BUNDLE_MAX_ARCHIVE_MEMBERS")
    seen, unpacked = set(), 0
    for count, member in enumerate(archive, start=1):
        where = f"{path}: member {member.name[:200]!r}"
        if count > member_limit:
            raise BundleError(f"{path}: more than the {member_limit:,} members TOPICBENCH_BUNDLE_MAX_ARCHIVE_MEMBERS allows")
        if not (member.isfile() or member.isdir()):
            kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk() else
                    "a device" if member.isdev() and not member.isfifo() else "a FIFO" if member.isfifo() else "special")
            raise BundleError(f"{where} is {kind}: an archive of a bundle holds files and folders only")
        name = posixpath.normpath(member.name)
        if member.name.startswith(("/", "\\")) or name == ".." or name.startswith("../") or (name == "." and member.isfile()):
            raise BundleError(f"{where} is no path inside the archive (absolute, or leaving it by '..')")
        if name in seen and name != ".":
            raise BundleError(f"{where} is there twice: which copy is meant cannot be told; {_AGAIN}")
        seen.add(name)
        unpacked += member.size
        if unpacked > byte_limit:
            raise BundleError(f"{path} unpacks to more than the {byte_limit:,} bytes TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB "
                              "allows; raise it if the bundle is one you trust")
        yield member


def unpack_archive(path: Path, target: Path) -> Path:
    """The archive at ``path`` unpacked into the new folder ``target``, its members checked again
    as they are unpacked (:func:`checked_members`) and through tarfile's ``data`` filter."""
    target.mkdir(parents=True)
    with opened_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB") as file:
        with _archive_errors(path), tarfile.open(fileobj=file, mode="r:gz") as archive:
            archive.extractall(target, members=checked_members(archive, path), filter="data")
    return target

