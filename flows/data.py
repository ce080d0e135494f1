"""``topicbench data``: fetch the registry's corpora (``core/datasets.py``) into the data cache.

Each published file is downloaded into ``<dest>/.downloads/<NAME>/`` through a temporary file in
that folder, checked against its pinned SHA-256 and only then renamed; a file already there with
the right checksum is used as it is (that is how a file is provided by hand). The corpus is then
written in this project's format into a temporary folder beside ``<dest>/<NAME>`` and renamed, so
that a dataset folder is either complete or absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from topicbench.core.datasets import (
    COMPLETE_MARKER, DATA_HOME_VARIABLE, DATASETS, ELDA_PREPROCESSING, JUDGMENTS_FILE, Dataset, DatasetError, RemoteFile,
    data_home, get_dataset, is_cached,
)
from topicbench.core.elda_release import release_documents, write_octis_folder
from topicbench.core.io import OutputPathError, check_output_path
from topicbench.core.proxann_release import STUDY_INPUTS

from .console import CONSOLE

logger = logging.getLogger(__name__)

DOWNLOADS_FOLDER = ".downloads"
#: Seconds to wait for a server to answer, and then for each next piece of a file (--timeout).
DOWNLOAD_TIMEOUT_SECONDS = 60.0
#: Seconds one file's whole download may take (--deadline): a mirror that trickles a byte every
#: few seconds never trips the per-read timeout, so without it a fetch could run for days.
DOWNLOAD_DEADLINE_SECONDS = 1800.0
#: Seconds between two progress lines of a download.
PROGRESS_SECONDS = 10.0
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class DownloadLimits:
    """How long a download may wait: ``timeout`` for the server's answer and for each next piece,
    ``deadline`` for a whole file."""

    timeout: float = DOWNLOAD_TIMEOUT_SECONDS
    deadline: float = DOWNLOAD_DEADLINE_SECONDS


def sha256_of(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_url(dataset: Dataset, file: RemoteFile, base_url: str | None = None) -> str:
    return f"{(base_url or dataset.base_url).rstrip('/')}/{file.path}"


#: How each kind of dataset is given by path instead of fetched.
BY_PATH = {"human_judgments": "give the file by path: `topicbench judge calibrate --judgments FILE`",
           "proxann_release": "give a checkout of the repository by path: `topicbench judge calibrate --protocol "
                              "proxann --release DIR`"}
CORPUS_BY_PATH = "give a corpus folder by path: `source: PATH` in a config, `--data PATH` for `topicbench paper`"


def _by_hand(url: str, target: Path, dataset: Dataset) -> str:
    return (f"to provide it by hand, download {url} yourself and put it at {target}, then run "
            f"`topicbench data fetch {dataset.name}` again (or {BY_PATH.get(dataset.layout, CORPUS_BY_PATH)})")


def download_file(url: str, target: Path, sha256: str, dataset: Dataset, limits: DownloadLimits = DownloadLimits()) -> Path:
    """``url`` into ``target`` if its SHA-256 is ``sha256``: written to a temporary file in the same
    folder, checked, then renamed. A file already at ``target`` with that checksum is kept."""
    if target.is_file():
        found = sha256_of(target)
        if found == sha256:
            logger.info("%s: already downloaded, checksum verified", target.name)
            return target
        logger.warning("%s has sha256 %s, expected %s: downloading it again", target, found, sha256)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            _copy_response(url, stream, target.name, dataset, target, limits)
        actual = sha256_of(temporary)
        if actual != sha256:
            raise DatasetError(
                f"checksum mismatch for {target.name} from {url}: expected sha256 {sha256}, got {actual}; "
                + _by_hand(url, target, dataset)
            )
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def _copy_response(url: str, stream, name: str, dataset: Dataset, target: Path, limits: DownloadLimits) -> None:
    """The body at ``url`` into ``stream``, with a progress line every :data:`PROGRESS_SECONDS`; a
    short body (fewer bytes than Content-Length, a dropped connection), a server that does not
    answer or stalls for ``limits.timeout`` seconds, and a download still going at
    ``limits.deadline`` are errors naming the file and the limit."""
    started = time.monotonic()
    try:
        response = urllib.request.urlopen(url, timeout=limits.timeout)
    except urllib.error.HTTPError as error:
        raise DatasetError(f"cannot download {name}: {url} answered HTTP {error.code} {error.reason}; "
                           + _by_hand(url, target, dataset)) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        if isinstance(reason, TimeoutError) or isinstance(error, TimeoutError):
            reason = f"no answer within {limits.timeout:g} s (--timeout)"
        raise DatasetError(f"cannot download {name}: {url} is unreachable ({reason}); "
                           + _by_hand(url, target, dataset)) from None
    received, dropped = 0, None
    with response:
        expected = response.headers.get("Content-Length")
        progress = _Progress(name, int(expected) if expected and expected.isdigit() else None, started)
        try:
            # read1: whatever has arrived, so that a trickling server still meets the deadline check
            for chunk in iter(lambda: response.read1(CHUNK_BYTES), b""):
                stream.write(chunk)
                received += len(chunk)
                progress.update(received)
                if time.monotonic() - started > limits.deadline:
                    raise DatasetError(
                        f"download of {name} from {url} stopped at the deadline of {limits.deadline:g} s (--deadline) "
                        f"after {received} of {expected or 'an unknown number of'} bytes ({progress.rate(received)}); "
                        + _by_hand(url, target, dataset)
                    )
        except TimeoutError:
            dropped = f"no data for {limits.timeout:g} s (--timeout)"
        except (http.client.IncompleteRead, OSError) as error:
            dropped = f"the connection dropped ({type(error).__name__})"
    if dropped is not None or (expected is not None and received != int(expected)):
        cause = dropped or "the body ended early"
        raise DatasetError(f"partial download of {name} from {url}: {cause} after {received} of "
                           f"{expected or 'an unknown number of'} bytes; " + _by_hand(url, target, dataset))


class _Progress:
    """A download's progress on the console, a line every :data:`PROGRESS_SECONDS`."""

    def __init__(self, name: str, total: int | None, started: float):
        self.name, self.total, self.started = name, total, started
        self.next_line = started + PROGRESS_SECONDS

    def rate(self, received: int) -> str:
        return f"{received / max(time.monotonic() - self.started, 1e-9) / 1e3:.1f} kB/s"

    def update(self, received: int) -> None:
        now = time.monotonic()
        if now < self.next_line:
            return
        self.next_line = now + PROGRESS_SECONDS
        share = f" ({received / self.total:.0%})" if self.total else ""
        of = f" of {_size(self.total)}" if self.total else ""
        logger.info("%s: %s%s%s, %s, %.0f s", self.name, _size(received), of, share, self.rate(received),
                    now - self.started, extra=CONSOLE)


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{count / 1e3:.1f} kB"


def fetch_dataset(name: str, dest=None, base_url: str | None = None,
                  limits: DownloadLimits = DownloadLimits()) -> tuple[Path, bool]:
    """Download dataset ``name`` (checksums verified) and write it as an OCTIS folder
    ``<dest>/<NAME>`` (``dest`` default: the data cache). ``base_url`` replaces the published one;
    ``limits`` bounds every wait.

    Returns
    -------
    folder : Path
    fetched : bool
        False when the folder was already complete (nothing downloaded).
    """
    dataset = get_dataset(name)
    # file:// reads a local copy of the publisher's repository (a snapshot, an unpacked archive):
    # the way to fetch offline, with the same checksums
    if base_url is not None and urllib.parse.urlsplit(base_url).scheme not in ("http", "https", "file"):
        raise DatasetError(f"--url must be an http://, https:// or file:// base URL, got {base_url!r}")
    home = Path(dest).expanduser() if dest is not None else data_home()
    _check_data_folder(home, "--dest" if dest is not None else f"the data cache (${DATA_HOME_VARIABLE} or its default)")
    folder = home / dataset.name
    if is_cached(dataset.name, home):
        return folder, False
    if os.path.lexists(folder):  # a dangling link too: the rename below would not replace it
        raise DatasetError(f"{folder} exists but is not a complete {dataset.name} dataset (no {COMPLETE_MARKER}): "
                           f"remove it or give another --dest")
    home.mkdir(parents=True, exist_ok=True)
    downloads = home / DOWNLOADS_FOLDER / dataset.name
    try:
        local = {dataset.local_path(file): download_file(file_url(dataset, file, base_url),
                                                         downloads / dataset.local_path(file), file.sha256, dataset,
                                                         limits)
                 for file in dataset.files}
    finally:
        _remove_empty_tree(downloads)
        _remove_empty_folders(downloads, stop=home)
    staging = Path(tempfile.mkdtemp(prefix=f".{dataset.name}.", suffix=".tmp", dir=home))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would keep the corpus from others sharing the cache
        metadata = _write_corpus(dataset, local, staging)
        metadata["files"] = {dataset.local_path(file): {"url": file_url(dataset, file, base_url), "sha256": file.sha256}
                             for file in dataset.files}
        # the marker goes last: a folder with it is complete
        (staging / COMPLETE_MARKER).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(downloads, ignore_errors=True)
    _remove_empty_folders(downloads.parent, stop=home)
    return folder, True


def _check_data_folder(home: Path, what: str) -> None:
    """The folder datasets are written into passes the rule of every output folder
    (:func:`~topicbench.core.io.check_output_path`), as a :class:`DatasetError`."""
    try:
        check_output_path(home, what, folder=True)
    except OutputPathError as error:
        raise DatasetError(str(error)) from None


def _write_corpus(dataset: Dataset, local: dict, folder: Path) -> dict:
    """The downloaded files as ``corpus.tsv`` and ``vocabulary.txt`` in ``folder`` (a judgments
    file as it is); returns the metadata."""
    if dataset.layout == "human_judgments":
        shutil.copyfile(local[JUDGMENTS_FILE], folder / JUDGMENTS_FILE)
        judged = json.loads((folder / JUDGMENTS_FILE).read_text(encoding="utf-8"))
        documents = sum(len(by_model["topics"]) for by_dataset in judged.values() for by_model in by_dataset.values())
        metadata = {"name": dataset.description, "topics": documents, "source": dataset.source,
                    "citation": dataset.citation}
    elif dataset.layout == "proxann_release":
        documents = _copy_proxann_release(local, folder)
        metadata = {"name": dataset.description, "topics": documents, "source": dataset.source,
                    "citation": dataset.citation}
    elif dataset.layout == "octis":
        for name in ("corpus.tsv", "vocabulary.txt"):
            shutil.copyfile(local[name], folder / name)
        metadata = json.loads(Path(local["metadata.json"]).read_text(encoding="utf-8"))
        with open(folder / "corpus.tsv", encoding="utf-8") as corpus:
            documents = sum(1 for _ in corpus)
        metadata.update(documents=documents, source=dataset.source)
    else:
        by_kind = {name.rsplit("_", 1)[-1].removesuffix(".txt"): path for name, path in local.items()}
        vocabulary, texts, in_order = release_documents(by_kind["words"], by_kind["D2Windexform"], by_kind.get("docs"))
        write_octis_folder(folder, vocabulary, texts)
        documents = len(texts)
        metadata = {
            "name": dataset.description, "documents": documents, "vocabulary": len(vocabulary),
            "tokens": sum(map(len, texts)), "documents_in_original_word_order": in_order,
            "preprocessing": ELDA_PREPROCESSING, "labels": False, "source": dataset.source, "citation": dataset.citation,
        }
    if documents != dataset.documents:
        raise DatasetError(f"{dataset.name}: the converted corpus has {documents} documents, expected {dataset.documents}")
    return metadata


def _copy_proxann_release(local: dict, folder: Path) -> int:
    """ProxAnn's files into ``folder`` under their paths in the repository; returns the study's
    topics (those of its ``config_*.json`` inputs)."""
    for path, downloaded in local.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(downloaded, folder / path)
    studied = [json.loads((folder / path).read_text(encoding="utf-8")) for path in STUDY_INPUTS]
    return sum(len(by_topic) for by_model in studied for by_topic in by_model.values())


def _remove_empty_tree(folder: Path) -> None:
    """The empty folders under ``folder`` (a download that failed leaves the ones made for it)."""
    if not folder.is_dir():
        return
    for below in sorted((path for path in folder.rglob("*") if path.is_dir()), key=lambda path: len(path.parts),
                        reverse=True):
        with contextlib.suppress(OSError):  # not empty
            below.rmdir()


def _remove_empty_folders(folder: Path, stop: Path) -> None:
    """``folder`` and its parents up to (not including) ``stop``, while they are empty."""
    folder, stop = Path(folder), Path(stop)
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or absent
            if folder.exists():
                return
        folder = folder.parent


def dataset_table(home=None) -> str:
    """``topicbench data list``: each dataset's name, what it is, size, documents and whether it is cached."""
    home = Path(home) if home is not None else data_home()
    rows = [("name", "what it is", "size", "documents", "cached")]
    for dataset in DATASETS.values():
        cached = f"yes ({home / dataset.name})" if is_cached(dataset.name, home) else "no"
        count = f"{dataset.documents:,}" + ("" if dataset.is_corpus else " topics")
        rows.append((dataset.name, dataset.description, f"{dataset.size / 1e6:.1f} MB", count, cached))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    return "\n".join([f"data cache: {home} (set ${DATA_HOME_VARIABLE} to change it)", *lines])
