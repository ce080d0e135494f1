"""Corpus readers (OCTIS folder, one document a line, the built-in Lee corpus) and writers, with the
one rule of every path topicbench writes (:func:`check_output_path`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path

import numpy as np

from topicbench.core.constants import OCTIS_PARTITIONS
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
    return read_text_file(builtin_corpus_path(), config, name=BUILTIN_CORPUS)


def builtin_corpus_path() -> Path:
    """Where gensim keeps the Lee corpus (``gensim.test.utils.datapath``'s folder), found without
    importing gensim (scipy and smart_open with it: about a second before a benchmark's first fit)."""
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the built-in corpus 'lee' is gensim's: install gensim")
    return Path(spec.submodule_search_locations[0]) / "test" / "test_data" / "lee_background.cor"


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
        raise InputError(f"{what} {path} is not a regular file (it is {_kind_of(mode)}); give a file")
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
    """Write a JSON document (UTF-8, indented) atomically; missing parent folders are created."""
    return write_text_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def replaced_atomically(path, what: str = "output file"):
    """Yield a temporary path beside ``path`` to write; when the block ends normally it replaces
    ``path`` in one step (``os.replace``), otherwise it is removed.

    A reader never sees a half-written file, and a write that fails (a full disk, Ctrl-C) leaves
    the previous file, or none, instead of a truncated or empty one. The temporary name keeps
    ``path``'s suffix (``np.save`` and plotting libraries go by it) and is created by the writer,
    so it gets the usual permissions.

    ``path`` is checked by :func:`check_output_path` before the write and again before the
    rename (a long write gives it time to become something else), and its missing folders are
    created: a device, pipe or socket is never replaced, and a symbolic link to a file of the
    user's stays a link (the file it points at is replaced). ``what`` names the path in an
    :class:`OutputPathError`.
    """
    import uuid

    target = check_output_path(path, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.stem}.{uuid.uuid4().hex[:12]}.part{target.suffix}")
    try:
        yield temporary
        check_output_path(target, what)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_atomically(path, text: str, what: str = "output file") -> Path:
    """``path`` holding ``text`` (UTF-8), written through :func:`replaced_atomically`."""
    path = Path(path)
    with replaced_atomically(path, what) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


#: Where no output is written: the kernel's devices and state. Replacing ``/dev/full`` with a
#: regular file is something root may do, so the rule cannot be left to the permissions.
SYSTEM_FOLDERS = (Path("/dev"), Path("/proc"), Path("/sys"))


class OutputPathError(InputError):
    """A path topicbench was asked to write and may not: under /dev, /proc or /sys; a device,
    pipe or socket; a symbolic link it does not write through; a folder where a file goes or the
    reverse; or a place where nothing can be created."""


def check_output_path(path, what: str = "output file", *, folder: bool = False) -> Path:
    """The one rule for every path topicbench writes (``--json``, ``--parquet``, ``--out``,
    ``--dest``, each file of a report): whether it may be written, decided before any work (by
    the command line) and again by the writer itself.

    Refused, each with an :class:`OutputPathError` naming the path and the fix:

    - a path under /dev, /proc or /sys, as given or once its links are resolved;
    - a device, a pipe (FIFO) or a socket: writing would replace it with a regular file, or block;
    - a symbolic link that does not exist at its other end, or whose link or target is another
      user's (a link planted in a shared folder); any other link is written through: the file
      it points at is replaced and the link stays a link, as a shell's ``>`` does;
    - a folder where a file goes, anything else where a folder goes;
    - an existing file that is not writable, and a path whose nearest existing folder takes no
      new file (tried, since ``os.access`` says yes to root on a read-only mount).

    A missing parent folder is allowed when it can be created; the writers create it.

    Parameters
    ----------
    path : str or Path
        The path to check (``~`` is expanded).
    what : str
        How the message names it: ``"--json"``, ``"--out (the report folder)"``.
    folder : bool
        Whether ``path`` is a folder to write files into, rather than a file written whole.

    Returns
    -------
    Path
        The path to write: absolute, symbolic links resolved.
    """
    given = Path(path).expanduser()
    resolved = Path(os.path.realpath(given))
    _refuse_system_folders(given, resolved, what)
    link = _status(given, what, follow=False)
    if link is not None and stat.S_ISLNK(link.st_mode):
        _check_symbolic_link(given, resolved, link, what)
    found = _status(resolved, what, follow=True)
    if found is None:
        _check_creatable_in(resolved.parent, given, what)
    else:
        _check_existing(given, resolved, found.st_mode, what, folder)
    return resolved


def make_output_folder(path, what: str = "output folder") -> Path:
    """The folder ``path``, checked by :func:`check_output_path` and created with its missing
    parents; returns it resolved."""
    folder = check_output_path(path, what, folder=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _refuse_system_folders(given: Path, resolved: Path, what: str) -> None:
    for candidate in (Path(os.path.abspath(given)), resolved):
        for system in SYSTEM_FOLDERS:
            if candidate == system or system in candidate.parents:
                shown = given if candidate == Path(os.path.abspath(given)) else f"{given} (which leads to {resolved})"
                raise OutputPathError(f"{what}: cannot write in {system}: {shown} is under {system}, which holds the "
                                      "system's devices and state, not files; choose a path outside /dev, /proc and /sys")


def _check_symbolic_link(given: Path, resolved: Path, link: os.stat_result, what: str) -> None:
    """A link is written through only when it and its target exist and are the user's: a link
    another user planted (in /tmp, say) must not send the write to a file of ours."""
    try:
        target = os.stat(given)
    except FileNotFoundError:
        raise OutputPathError(f"{what}: {given} is a symbolic link to {os.readlink(given)}, which does not exist; give "
                              "the path to write itself, or remove the link") from None
    except OSError as error:  # a loop of links
        raise OutputPathError(f"{what}: cannot follow the symbolic link {given}: {error.strerror or error}") from None
    user = os.geteuid()
    if link.st_uid != user or target.st_uid != user:
        whose = "the link" if link.st_uid != user else "its target"
        raise OutputPathError(f"{what}: {given} is a symbolic link to {resolved} and {whose} belongs to another user; "
                              "a link is written through only when both are yours: give the target's path itself")


def _status(path: Path, what: str, *, follow: bool) -> os.stat_result | None:
    """``os.stat`` (``os.lstat`` unless ``follow``) of ``path``; None where nothing is, or a file
    stands above it (told apart by :func:`_check_creatable_in`)."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:  # a name too long, a folder we may not enter
        raise OutputPathError(f"{what}: cannot write {path}: {error.strerror or error}; give another path") from None


def _check_existing(given: Path, resolved: Path, mode: int, what: str, folder: bool) -> None:
    """What is at ``resolved`` is a folder to write into (``folder``) or a writable regular file
    to replace, and its folder takes new files."""
    shown = given if resolved == Path(os.path.abspath(given)) else f"{given} (which leads to {resolved})"
    if folder and not stat.S_ISDIR(mode):
        raise OutputPathError(f"{what}: {shown} is not a folder (it is {_kind_of(mode)}); give a folder, or a path "
                              "that does not exist yet")
    if stat.S_ISDIR(mode):
        if not folder:
            raise OutputPathError(f"{what}: {shown} is a folder; give a file name (in it, or elsewhere)")
        _check_creatable_in(resolved, given, what)
        return
    if not stat.S_ISREG(mode):
        raise OutputPathError(f"{what}: {shown} is {_kind_of(mode)}, not a regular file: it is never replaced "
                              "or written into; give the path of a regular file, or of one that does not exist yet")
    if not os.access(resolved, os.W_OK):  # as root always yes: the checks above do not rely on it
        raise OutputPathError(f"{what}: {given} exists and is not writable")
    _check_creatable_in(resolved.parent, given, what)


def _check_creatable_in(folder: Path, given: Path, what: str) -> None:
    """A file (or the missing folders up to it) can be created in ``folder``, or its nearest
    existing parent."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{what}: cannot create or write {given}: {existing} is not a folder; give another path")
    if not can_write_in(existing):
        raise OutputPathError(f"{what}: cannot create or write {given}: {existing} is not a writable folder; give "
                              "another path")


def _kind_of(mode: int) -> str:
    """What a file that is not a regular one is, as the messages say it."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


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
    make_output_folder(folder, "the corpus folder")
    words = np.asarray(corpus.vocabulary, dtype=object)
    offsets = corpus.doc_offsets
    with replaced_atomically(folder / "corpus.tsv") as temporary, open(temporary, "w", encoding="utf-8") as out:
        for first in range(0, corpus.n_documents, _WRITE_CHUNK):
            last = min(first + _WRITE_CHUNK, corpus.n_documents)
            tokens = words[corpus.token_ids[offsets[first]:offsets[last]]]
            starts = offsets[first:last + 1] - offsets[first]
            out.writelines(
                f"{' '.join(tokens[starts[i]:starts[i + 1]])}\t{_partition(corpus, first + i)}"
                f"{_label(corpus, first + i)}\n"
                for i in range(last - first)
            )
    write_text_atomically(folder / "vocabulary.txt", "".join(f"{word}\n" for word in corpus.vocabulary))
    return folder


#: Documents per chunk of :func:`write_octis_folder`.
_WRITE_CHUNK = 100_000


def _partition(corpus: Corpus, d: int) -> str:
    return corpus.partitions[d] if corpus.partitions is not None else "train"


def _label(corpus: Corpus, d: int) -> str:
    return f"\t{corpus.labels[d]}" if corpus.labels is not None else ""


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, or None (another scheme, or in memory)."""
    if not uri.startswith("sqlite:///") or ":memory:" in uri:
        return None
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(path) if path else None
