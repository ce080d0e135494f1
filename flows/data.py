"""``topicbench data``: fetch the registry's corpora (``core/datasets.py``) into the data cache.

Each published file is downloaded into ``<dest>/.downloads/<NAME>/`` through a temporary file in
that folder, checked against its pinned SHA-256 and only then renamed; a file already there with
the right checksum is used as it is (that is how a file is provided by hand). The corpus is then
written in this project's format into a temporary folder beside ``<dest>/<NAME>`` and renamed, so
that a dataset folder is either complete or absent.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from topicbench.core.datasets import (
    COMPLETE_MARKER, DATA_HOME_VARIABLE, DATASETS, ELDA_PREPROCESSING, Dataset, DatasetError, RemoteFile,
    data_home, get_dataset, is_cached,
)
from topicbench.core.elda_release import release_documents, write_octis_folder

logger = logging.getLogger(__name__)

DOWNLOADS_FOLDER = ".downloads"
DOWNLOAD_TIMEOUT_SECONDS = 60
CHUNK_BYTES = 1 << 20


def sha256_of(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_url(dataset: Dataset, file: RemoteFile, base_url: str | None = None) -> str:
    return f"{(base_url or dataset.base_url).rstrip('/')}/{file.path}"


def _by_hand(url: str, target: Path, dataset: Dataset) -> str:
    return (f"to provide it by hand, download {url} yourself and put it at {target}, then run "
            f"`topicbench data fetch {dataset.name}` again (or give a corpus folder by path: "
            f"`source: PATH` in a config, `--data PATH` for `topicbench paper`)")


def download_file(url: str, target: Path, sha256: str, dataset: Dataset) -> Path:
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
            _copy_response(url, stream, target.name, dataset, target)
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


def _copy_response(url: str, stream, name: str, dataset: Dataset, target: Path) -> None:
    """The body at ``url`` into ``stream``; a short body (fewer bytes than Content-Length, a dropped
    connection) and an unreachable server are errors naming the file."""
    try:
        response = urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS)
    except urllib.error.HTTPError as error:
        raise DatasetError(f"cannot download {name}: {url} answered HTTP {error.code} {error.reason}; "
                           + _by_hand(url, target, dataset)) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        raise DatasetError(f"cannot download {name}: {url} is unreachable ({reason}); "
                           + _by_hand(url, target, dataset)) from None
    received, dropped = 0, None
    with response:
        expected = response.headers.get("Content-Length")
        try:
            for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
                stream.write(chunk)
                received += len(chunk)
        except (http.client.IncompleteRead, OSError) as error:
            dropped = error
    if dropped is not None or (expected is not None and received != int(expected)):
        cause = f"the connection dropped ({type(dropped).__name__})" if dropped is not None else "the body ended early"
        raise DatasetError(f"partial download of {name} from {url}: {cause} after {received} of "
                           f"{expected or 'an unknown number of'} bytes; " + _by_hand(url, target, dataset))


def fetch_dataset(name: str, dest=None, base_url: str | None = None) -> tuple[Path, bool]:
    """Download dataset ``name`` (checksums verified) and write it as an OCTIS folder
    ``<dest>/<NAME>`` (``dest`` default: the data cache). ``base_url`` replaces the published one.

    Returns
    -------
    folder : Path
    fetched : bool
        False when the folder was already complete (nothing downloaded).
    """
    dataset = get_dataset(name)
    if base_url is not None and urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
        raise DatasetError(f"--url must be an http:// or https:// base URL, got {base_url!r}")
    home = Path(dest).expanduser() if dest is not None else data_home()
    folder = home / dataset.name
    if is_cached(dataset.name, home):
        return folder, False
    if folder.exists():
        raise DatasetError(f"{folder} exists but is not a complete {dataset.name} dataset (no {COMPLETE_MARKER}): "
                           f"remove it or give another --dest")
    home.mkdir(parents=True, exist_ok=True)
    downloads = home / DOWNLOADS_FOLDER / dataset.name
    try:
        local = {file.name: download_file(file_url(dataset, file, base_url), downloads / file.name, file.sha256, dataset)
                 for file in dataset.files}
    finally:
        _remove_empty_folders(downloads, stop=home)
    staging = Path(tempfile.mkdtemp(prefix=f".{dataset.name}.", suffix=".tmp", dir=home))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would keep the corpus from others sharing the cache
        metadata = _write_corpus(dataset, local, staging)
        metadata["files"] = {file.name: {"url": file_url(dataset, file, base_url), "sha256": file.sha256}
                             for file in dataset.files}
        # the marker goes last: a folder with it is complete
        (staging / COMPLETE_MARKER).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(downloads, ignore_errors=True)
    _remove_empty_folders(downloads.parent, stop=home)
    return folder, True


def _write_corpus(dataset: Dataset, local: dict, folder: Path) -> dict:
    """The downloaded files as ``corpus.tsv`` and ``vocabulary.txt`` in ``folder``; returns the metadata."""
    if dataset.layout == "octis":
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
        rows.append((dataset.name, dataset.description, f"{dataset.size / 1e6:.1f} MB", f"{dataset.documents:,}", cached))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    return "\n".join([f"data cache: {home} (set ${DATA_HOME_VARIABLE} to change it)", *lines])
