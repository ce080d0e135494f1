"""The tokenised corpus every model and metric reads: vocabulary, tokens, document-term matrix."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from topicbench.core.constants import OCTIS_PARTITIONS
from .validation import InputError


def segment_ids(offsets) -> np.ndarray:
    """The segment of every element of concatenated segments, given the segments' offsets.

    ``offsets`` has one entry more than there are segments (a CSR ``indptr``, or a corpus's
    ``doc_offsets``); segment ``s`` holds elements ``offsets[s]:offsets[s + 1]``.

    >>> segment_ids([0, 2, 2, 3]).tolist()
    [0, 0, 2]
    """
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


@dataclass(frozen=True, eq=False)
class Corpus:
    """A tokenised corpus over a fixed vocabulary.

    Parameters
    ----------
    vocabulary : tuple of str
        Words, in the corpus order (word id = position).
    token_ids : ndarray of int32, shape (n_tokens,)
        Every document's tokens, concatenated in reading order.
    doc_offsets : ndarray of int64, shape (n_documents + 1,)
        Document d holds ``token_ids[doc_offsets[d]:doc_offsets[d + 1]]``.
    partitions : tuple of str or None
        OCTIS partition of each document ("train", "val" or "test").
    labels : tuple of str or None
        A class label per document, where the corpus has them.
    name, source : str
        A short name and where the corpus was read from.
    preprocessing : dict
        The preprocessing settings that produced the tokens (recorded with every result).
    dropped_documents : tuple of int
        Input line numbers (0-based) of documents dropped because no word was left.
    raw_texts : tuple of str or None
        Each document's text as read, where it differs from its tokens (a corpus tokenised here);
        None for a corpus given as tokens (``preprocessed``), whose text is its tokens joined
        (:meth:`document_text`). About the input's size in memory; read by the metrics that show
        documents to a judge (``llm_fit``, ``llm_rank``). Not part of :meth:`fingerprint`: the
        tokens are what a model reads.
    vocabulary_from : str
        How the vocabulary was made: ``"train"`` (counted from the training documents, the
        default where there is a test partition), ``"all"`` (from every document) or ``"given"``
        (a vocabulary.txt, as published). Recorded with every run as ``corpus_vocabulary_from``.
    test_only_words, test_only_tokens : int
        Distinct words, and their tokens, of the test documents that no training document has,
        dropped from the test documents (``vocabulary_from="train"``; 0 otherwise): held-out
        scores are over the training vocabulary. Recorded as ``corpus_test_only_words`` and
        ``corpus_test_only_tokens``. Like :attr:`raw_texts`, not part of :meth:`fingerprint` (the
        tokens and vocabulary they left behind are).
    partition_sizes : dict or None
        Documents per OCTIS partition of the corpus this one was split from (:meth:`split`; None
        for a corpus not split), so a run fitted on the training partition records how many
        documents were held out. Not part of :meth:`fingerprint`.
    """

    vocabulary: tuple
    token_ids: np.ndarray
    doc_offsets: np.ndarray
    partitions: tuple | None = None
    labels: tuple | None = None
    name: str = "corpus"
    source: str = ""
    preprocessing: dict = field(default_factory=dict)
    dropped_documents: tuple = ()
    raw_texts: tuple | None = None
    vocabulary_from: str = "all"
    test_only_words: int = 0
    test_only_tokens: int = 0
    partition_sizes: dict | None = None

    def __post_init__(self):
        if self.raw_texts is not None and len(self.raw_texts) != self.n_documents:
            raise InputError(f"corpus {self.name!r}: {len(self.raw_texts)} raw texts for {self.n_documents} documents")

    @property
    def n_documents(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def n_words(self) -> int:
        return len(self.vocabulary)

    @property
    def n_tokens(self) -> int:
        return int(self.doc_offsets[-1])

    @property
    def token_documents(self) -> np.ndarray:
        """The document of each token (int64, shape (n_tokens,)); computed on each call."""
        return segment_ids(self.doc_offsets)

    @cached_property
    def word_index(self) -> dict:
        """Word -> id."""
        return {word: i for i, word in enumerate(self.vocabulary)}

    @cached_property
    def document_words(self) -> tuple:
        """(indptr, words, counts): each document's distinct word ids, ascending, and their counts, as
        CSR arrays (int64, int32, int32): :attr:`doc_term` without scipy (E-LDA reads these)."""
        n_words = np.int64(max(self.n_words, 1))
        keys, counts = np.unique(self.token_documents * n_words + self.token_ids, return_counts=True)
        indptr = np.zeros(self.n_documents + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // n_words, minlength=self.n_documents), out=indptr[1:])
        return indptr, (keys % n_words).astype(np.int32), counts.astype(np.int32)

    @cached_property
    def doc_term(self):
        """Document-term count matrix (scipy CSR, D x V, int32, sorted column indices)."""
        import scipy.sparse as sp  # imported here for its import cost: E-LDA reads document_words

        indptr, words, counts = self.document_words
        index_dtype = np.int32 if len(words) < np.iinfo(np.int32).max else np.int64
        return sp.csr_matrix(
            (counts, words.astype(index_dtype), indptr.astype(index_dtype)), shape=(self.n_documents, self.n_words)
        )

    def document(self, d: int) -> np.ndarray:
        """Token ids of document d."""
        return self.token_ids[self.doc_offsets[d] : self.doc_offsets[d + 1]]

    def document_text(self, d: int) -> str:
        """Document d's text as read (:attr:`raw_texts`), or else its tokens joined by spaces."""
        if self.raw_texts is not None:
            return self.raw_texts[d]
        vocab = self.vocabulary
        return " ".join(vocab[t] for t in self.document(d))

    def texts(self) -> list[list[str]]:
        """Documents as lists of word strings (the form gensim and most baselines take)."""
        vocab = self.vocabulary
        return [[vocab[t] for t in self.document(d)] for d in range(self.n_documents)]

    def fingerprint(self) -> str:
        """A stable SHA-256 of the tokens, vocabulary, partitions, labels and preprocessing."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update("\n".join(self.vocabulary).encode("utf-8"))
        digest.update(b"\0tokens")
        digest.update(np.ascontiguousarray(self.token_ids, dtype="<i4").tobytes())
        digest.update(np.ascontiguousarray(self.doc_offsets, dtype="<i8").tobytes())
        for name, values in (("partitions", self.partitions), ("labels", self.labels)):
            digest.update(f"\0{name}".encode())
            if values is not None:
                digest.update("\n".join(values).encode("utf-8"))
        digest.update(b"\0preprocessing")
        digest.update(json.dumps(self.preprocessing, sort_keys=True, default=str).encode())
        return digest.hexdigest()

    def subset(self, documents, *, name: str | None = None) -> "Corpus":
        """The corpus restricted to the given document ids (same vocabulary)."""
        documents = np.asarray(documents, dtype=np.int64)
        lengths = np.diff(self.doc_offsets)[documents]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        tokens = (
            np.concatenate([self.document(d) for d in documents]).astype(np.int32)
            if len(documents)
            else np.zeros(0, dtype=np.int32)
        )
        pick = (lambda values: None if values is None else tuple(values[d] for d in documents))
        return Corpus(
            vocabulary=self.vocabulary,
            token_ids=tokens,
            doc_offsets=offsets,
            partitions=pick(self.partitions),
            labels=pick(self.labels),
            name=name or self.name,
            source=self.source,
            preprocessing=self.preprocessing,
            raw_texts=pick(self.raw_texts),
            vocabulary_from=self.vocabulary_from,
            test_only_words=self.test_only_words,
            test_only_tokens=self.test_only_tokens,
        )

    def split(self, partition: str) -> "Corpus":
        """The documents of one OCTIS partition ("train", "val" or "test")."""
        if partition not in OCTIS_PARTITIONS:
            raise InputError(
                f"unknown partition {partition!r}; OCTIS partitions are {', '.join(OCTIS_PARTITIONS)}"
            )
        if self.partitions is None:
            raise InputError(f"corpus {self.name!r} has no partitions")
        ids = [d for d, p in enumerate(self.partitions) if p == partition]
        return replace(self.subset(ids, name=f"{self.name}[{partition}]"),
                       partition_sizes=dict(Counter(self.partitions).most_common()))

    def summary(self) -> dict:
        """Sizes and identity, for logs and run records."""
        return {
            "name": self.name,
            "source": self.source,
            "documents": self.n_documents,
            "vocabulary": self.n_words,
            "tokens": self.n_tokens,
            "dropped_documents": len(self.dropped_documents),
            "fingerprint": self.fingerprint(),
        }
