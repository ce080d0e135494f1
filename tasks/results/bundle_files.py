"""A result bundle's files read as untrusted input: regular files only, each within its limit.

The primitives both the bundle's check (:mod:`~topicbench.tasks.results.bundle_checks`) and its
tables' reader (:mod:`~topicbench.tasks.results.bundle_tables`) open files through: a FIFO is never
waited on, a device never read, a file past its limit never read whole.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from topicbench.core.validation import InputError

#: The limits, each overridable by the environment variable of the same name (a whole number):
#: the manifest's size; each line of ``runs.jsonl``; each table (its file, and its unpacked size),
#: also ``runs.jsonl`` whole; each archive's unpacked bytes; each archive's members.
MAX_MANIFEST_MB = 64
MAX_LINE_KB = 4096
MAX_TABLE_MB = 1024
MAX_ARCHIVE_MB = 1024
MAX_ARCHIVE_MEMBERS = 100_000
BUNDLE_LIMITS = {  # variable: (default, units a step)
    "TOPICBENCH_BUNDLE_MAX_MANIFEST_MB": (MAX_MANIFEST_MB, 1 << 20),
    "TOPICBENCH_BUNDLE_MAX_LINE_KB": (MAX_LINE_KB, 1 << 10),
    "TOPICBENCH_BUNDLE_MAX_TABLE_MB": (MAX_TABLE_MB, 1 << 20),
    "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB": (MAX_ARCHIVE_MB, 1 << 20),
    "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MEMBERS": (MAX_ARCHIVE_MEMBERS, 1),
}
_AGAIN = "export the bundle again, or copy it whole"


class BundleError(InputError):
    """A bundle that cannot be read or written: the message names the file and the problem."""


def bundle_limit(variable: str) -> int:
    """The limit :data:`BUNDLE_LIMITS` names, in bytes (members: a count), from its environment
    variable where set; an :class:`InputError` for a value that is not a whole number above 0."""
    default, unit = BUNDLE_LIMITS[variable]
    text = os.environ.get(variable, "").strip()
    if text and (not text.isdigit() or int(text) == 0):
        raise InputError(f"{variable}={text!r}: give a whole number above 0 (default {default})")
    return (int(text) if text else default) * unit


@contextlib.contextmanager
def opened_bundle_file(path: Path, limit_variable: str):
    """``path`` opened to read (binary) once it is known to be a regular file within its limit."""
    limit = bundle_limit(limit_variable)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise BundleError(f"{path} is missing; {_AGAIN}") from None
    except OSError as error:
        raise BundleError(f"{path} cannot be read ({error.strerror}); {_AGAIN}") from None
    _check_regular(path, found)
    if found.st_size > limit:
        raise BundleError(f"{path} holds {found.st_size:,} bytes, more than the {limit:,} {limit_variable} allows")
    # not blocking: a FIFO put there since the stat must not stop the reader on open
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
        _check_regular(path, os.fstat(file.fileno()))
        yield file


def _check_regular(path: Path, found: os.stat_result) -> None:
    if not stat.S_ISREG(found.st_mode):
        kinds = {stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a FIFO (named pipe)", stat.S_ISSOCK: "a socket"}
        kind = next((name for test, name in kinds.items() if test(found.st_mode)), "a device")
        raise BundleError(f"{path} is {kind}, not a regular file: a bundle holds regular files only")


def read_bundle_file(path: Path, limit_variable: str) -> bytes:
    """The bytes of ``path``, a regular file within the limit ``limit_variable`` names."""
    limit = bundle_limit(limit_variable)
    with opened_bundle_file(path, limit_variable) as file:
        data = file.read(limit + 1)
    if len(data) > limit:  # grown since the stat
        raise BundleError(f"{path} holds more than the {limit:,} bytes {limit_variable} allows")
    return data
