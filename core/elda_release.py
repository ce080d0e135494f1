"""The E-LDA authors' data release (``preprocessed_data/<PREFIX>/``) converted to an OCTIS folder.

The release holds, per corpus, ``<PREFIX>_words.txt`` (the vocabulary on one line, in the paper's
order), ``<PREFIX>_D2Windexform.txt`` (one document a line: the ids of its tokens, sorted, as the
paper's code used them) and, for some corpora, ``<PREFIX>_docs.txt`` (the stemmed texts in their
original word order, out-of-vocabulary words included). A converted document holds exactly the
tokens of its index line; it keeps the text's word order when the text's in-vocabulary words are
the same tokens, else (and without a docs file) it lists them in vocabulary order.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .validation import InputError


def _lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def release_documents(words_file, index_file, docs_file=None) -> tuple[list[str], list[list[str]], int]:
    """The vocabulary, the documents' tokens and how many documents kept their original word order.

    Parameters
    ----------
    words_file, index_file : path
        ``<PREFIX>_words.txt`` and ``<PREFIX>_D2Windexform.txt``.
    docs_file : path, optional
        ``<PREFIX>_docs.txt``, read only for the word order.
    """
    vocabulary = Path(words_file).read_text(encoding="utf-8").split()
    if not vocabulary:
        raise InputError(f"{words_file}: the vocabulary is empty")
    texts = _lines(Path(docs_file)) if docs_file is not None else None
    index_lines = _lines(Path(index_file))
    if texts is not None and len(texts) != len(index_lines):
        raise InputError(f"{docs_file} has {len(texts)} documents but {index_file} has {len(index_lines)}")
    known = set(vocabulary)
    documents, in_order = [], 0
    for number, line in enumerate(index_lines, start=1):
        try:
            tokens = [vocabulary[int(word_id)] for word_id in line.split()]
        except (ValueError, IndexError):
            raise InputError(f"{index_file} line {number}: expected word ids below {len(vocabulary)}, got {line[:60]!r}") from None
        if texts is not None:
            ordered = [word for word in texts[number - 1].split() if word in known]
            if Counter(ordered) == Counter(tokens):
                tokens, in_order = ordered, in_order + 1
        documents.append(tokens)
    return vocabulary, documents, in_order


def write_octis_folder(folder, vocabulary, documents) -> None:
    """``corpus.tsv`` (every document in the ``train`` partition) and ``vocabulary.txt``."""
    folder = Path(folder)
    with open(folder / "corpus.tsv", "w", encoding="utf-8", newline="\n") as corpus:
        for tokens in documents:
            corpus.write(" ".join(tokens) + "\ttrain\n")
    (folder / "vocabulary.txt").write_text("".join(word + "\n" for word in vocabulary), encoding="utf-8")
