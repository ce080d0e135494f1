"""Corpus readers (OCTIS folder, one document a line, the built-in Lee corpus) and writers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path

import numpy as np

from .config import OCTIS_PARTITIONS
from .corpus import Corpus
from .preprocess import PreprocessConfig, preprocess
from .validation import InputError

logger = logging.getLogger(__name__)

BUILTIN_CORPUS = "lee"


def load_corpus(source=None, config: PreprocessConfig | None = None, *, name: str | None = None) -> Corpus:
    """Read and preprocess a corpus.

    ``source`` is ``None`` or ``"lee"`` (gensim's bundled Lee news corpus, 300 documents), an
    OCTIS folder (``corpus.tsv`` and optional ``vocabulary.txt``), or a text file with one
    document a line.
    """
    config = config or PreprocessConfig()
    if source is None or str(source) == BUILTIN_CORPUS:
        return read_builtin_corpus(config)
    path = Path(source)
    try:
        is_folder = stat.S_ISDIR(path.stat().st_mode)
    except FileNotFoundError:
        raise InputError(f"corpus not found: {path} (give an OCTIS folder, a text file or 'lee')") from None
    except OSError as error:
        raise InputError(f"cannot read the corpus {path}: {error.strerror or error}") from None
    if is_folder:
        return read_octis_folder(path, config, name=name)
    return read_text_file(path, config, name=name)


def read_builtin_corpus(config: PreprocessConfig | None = None) -> Corpus:
    """gensim's bundled Lee background corpus (300 news articles), one document a line."""
    from gensim.test.utils import datapath

    return read_text_file(datapath("lee_background.cor"), config, name=BUILTIN_CORPUS)


def read_text_file(path, config: PreprocessConfig | None = None, *, name: str | None = None) -> Corpus:
    """A plain text file with one document a line. Blank lines are empty documents (dropped)."""
    path = Path(path)
    lines = _read_lines(path)
    if not lines:
        raise InputError(f"corpus file {path} is empty: it has no documents")
    return preprocess(
        lines, config, name=name or path.stem, source=str(path.resolve())
    )


def read_octis_folder(folder, config: PreprocessConfig | None = None, *, name: str | None = None) -> Corpus:
    """An OCTIS folder: ``corpus.tsv`` (``text<TAB>partition[<TAB>label]``), optional
    ``vocabulary.txt`` (one word a line) that fixes the vocabulary and its order."""
    folder = Path(folder)
    corpus_file = folder / "corpus.tsv"
    if not corpus_file.exists():  # anything else that is there (a pipe, a folder) is refused when read
        raise InputError(f"{folder} is not an OCTIS corpus folder: {corpus_file.name} is missing")
    texts, partitions, labels = [], [], []
    lines = _read_lines(corpus_file)
    if not lines:
        raise InputError(f"{corpus_file} is empty: it has no documents")
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if not 2 <= len(fields) <= 3:
            raise InputError(
                f"{corpus_file} line {number}: expected 'text<TAB>partition[<TAB>label]', "
                f"got {len(fields)} field{'s' if len(fields) != 1 else ''}"
            )
        if fields[1] not in OCTIS_PARTITIONS:
            raise InputError(
                f"{corpus_file} line {number}: partition must be one of {', '.join(OCTIS_PARTITIONS)}, "
                f"got {fields[1]!r}"
            )
        texts.append(fields[0])
        partitions.append(fields[1])
        labels.append(fields[2] if len(fields) == 3 else None)
    has_labels = [label is not None for label in labels]
    if any(has_labels) and not all(has_labels):
        first = has_labels.index(False) + 1
        raise InputError(f"{corpus_file} line {first}: has no label while other lines do")
    vocabulary = None
    vocabulary_file = folder / "vocabulary.txt"
    if vocabulary_file.exists():
        vocabulary = [w.strip() for w in _read_lines(vocabulary_file) if w.strip()]
        if not vocabulary:
            raise InputError(f"{vocabulary_file} is empty")
    return preprocess(
        texts,
        config,
        vocabulary=vocabulary,
        partitions=partitions,
        labels=labels if all(has_labels) else None,
        name=name or folder.name,
        source=str(folder.resolve()),
    )


def check_regular_file(path, what: str) -> Path:
    """``path`` if it is a regular file (symbolic links followed); otherwise an
    :class:`InputError` naming what it is. A pipe, a device (``/dev/zero``) or a socket is
    refused before it is opened: reading one blocks forever or never ends."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except OSError as error:  # a loop of symbolic links, a permission, a name too long
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{what} {path} is a folder; give a file")
    if not stat.S_ISREG(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise InputError(f"{what} {path} is not a regular file (it is {kind}); give a file")
    return path


def read_text(path, what: str) -> str:
    """A regular file's UTF-8 text, without a leading byte-order mark; a file that is not UTF-8
    or holds NUL bytes (a binary file) is an :class:`InputError` naming the line."""
    path = check_regular_file(path, what)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(f"{path} line {line}: holds a NUL byte (byte {nul}); is it a binary file? give UTF-8 text")
    try:
        # "utf-8-sig": a byte-order mark (Windows editors write one) is not part of the first word
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{path} line {line} is not UTF-8 text (byte {error.start}): {error.reason}") from None


def _read_lines(path: Path) -> list[str]:
    lines = read_text(path, "corpus file").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def write_json(data: dict, path) -> Path:
    """Write a JSON document (UTF-8, indented), creating parent folders; atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def replaced_atomically(path):
    """Yield a temporary path beside ``path`` to write; when the block ends normally it replaces
    ``path`` in one step (``os.replace``), otherwise it is removed.

    A reader never sees a half-written file, and a write that fails (a full disk, Ctrl-C) leaves
    the previous file, or none, instead of a truncated or empty one. The temporary name keeps
    ``path``'s suffix (``np.save`` and plotting libraries go by it) and is created by the writer,
    so it gets the usual permissions.
    """
    import uuid

    path = Path(path)
    temporary = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:12]}.part{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_atomically(path, text: str) -> Path:
    """``path`` holding ``text`` (UTF-8), written through :func:`replaced_atomically`."""
    path = Path(path)
    with replaced_atomically(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


def file_name_for(text: str, *, max_length: int = 80) -> str:
    """The one rule for user text (an experiment, a corpus, a label) that becomes a file or
    folder name: one name inside the folder it is written to, never a path out of it.

    Letters, digits, ``_``, ``.`` and ``-`` are kept; anything else (``/``, spaces, control
    characters) becomes ``_``, and so does a leading dot or dash (``..``, hidden files, options). When that
    changed the text, or it is longer than ``max_length``, 8 hex digits of the text's SHA-256
    are appended, so that two names that differ only there (``a/b``, ``a_b``) keep two files.

    >>> file_name_for("congress"), file_name_for("a/b"), file_name_for("../../x")
    ('congress', 'a_b-c14cddc0', '_._.._x-9cdf6a50')
    """
    import hashlib
    import re

    safe = re.sub(r"[^\w.-]|^[.-]", "_", text)
    if safe != text or len(safe) > max_length or not safe:
        safe = f"{safe[:max_length] or '_'}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return safe


def can_write_in(folder) -> bool:
    """Whether a file can be created in ``folder``: tried (and removed), since ``os.access`` says
    yes to root where nobody can write (/proc, a read-only mount) and knows nothing of quotas."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def write_octis_folder(corpus: Corpus, folder) -> Path:
    """Write ``corpus`` as an OCTIS folder that :func:`read_octis_folder` reads back unchanged
    (with ``PreprocessConfig(preprocessed=True)``): ``corpus.tsv`` and ``vocabulary.txt``.

    Documents without a partition are written as ``train``. Lines are built a chunk of
    documents at a time, so a corpus of 10^6 documents writes in seconds.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    words = np.asarray(corpus.vocabulary, dtype=object)
    offsets = corpus.doc_offsets
    with open(folder / "corpus.tsv", "w", encoding="utf-8") as out:
        for first in range(0, corpus.n_documents, _WRITE_CHUNK):
            last = min(first + _WRITE_CHUNK, corpus.n_documents)
            tokens = words[corpus.token_ids[offsets[first]:offsets[last]]]
            starts = offsets[first:last + 1] - offsets[first]
            out.writelines(
                f"{' '.join(tokens[starts[i]:starts[i + 1]])}\t{_partition(corpus, first + i)}"
                f"{_label(corpus, first + i)}\n"
                for i in range(last - first)
            )
    (folder / "vocabulary.txt").write_text("".join(f"{word}\n" for word in corpus.vocabulary), encoding="utf-8")
    return folder


#: Documents per chunk of :func:`write_octis_folder`.
_WRITE_CHUNK = 100_000


def _partition(corpus: Corpus, d: int) -> str:
    return corpus.partitions[d] if corpus.partitions is not None else "train"


def _label(corpus: Corpus, d: int) -> str:
    return f"\t{corpus.labels[d]}" if corpus.labels is not None else ""
