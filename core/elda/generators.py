"""Candidate topics: keyword generators (the E-LDA paper's keyword generators) and user-given topic matrices.

A candidate matrix ``L`` (topics x vocabulary) is stored as a per-row constant plus the entries
that beat it. For keyword topics the stored entries are the words that co-occur with the keyword
in some document, so the dense |V| x |V| matrix is never built.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np

from topicbench.core.elda.kernels import cooccurrence as _cooccurrence
from topicbench.core.elda.kernels.column_sort import columns_of_rows, sort_columns_by_value
from topicbench.core.elda.kernels.records import Columns, Rows
from topicbench.core.constants import GENERATOR_EPSILON, GENERATORS, LABEL_JOINER
from topicbench.core.corpus import Corpus, segment_ids
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.core.validation import InputError, check_labels, check_topic_matrix, check_vocabulary_matches

logger = logging.getLogger(__name__)

#: The kernels' code of each keyword generator, in the order of :data:`.config.GENERATORS`.
_GENERATOR_CODES = dict(
    zip(GENERATORS, (_cooccurrence.RAW_UMASS, _cooccurrence.EXP_UMASS, _cooccurrence.COOCCURRENCE), strict=True)
)


def check_generator(generator) -> str:
    """Check a keyword generator's name against :data:`GENERATORS`."""
    if generator not in GENERATORS:
        raise InputError(f"unknown generator {generator!r}; available: {', '.join(GENERATORS)}")
    return generator


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate topics ``L[t, v]`` (log-scores), each with a label.

    Parameters
    ----------
    row_constants : ndarray, shape (n_topics,)
        ``L[t, v]`` for every word v not stored in row t.
    indptr, indices, values : ndarrays
        CSR rows of the stored entries (word ids sorted); ``values > row_constants[row]``.
    n_words : int
        Vocabulary size.
    labels : tuple of str
        One label per topic (the keyword, or joined keywords for collapsed rows).
    keywords : tuple of tuple of int or None
        Keyword word ids of each topic (keyword generators only).
    generator : str
        ``raw_umass``, ``exp_umass``, ``cooccurrence`` or ``topic_matrix``.
    """

    row_constants: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_words: int
    labels: tuple
    keywords: tuple | None = None
    generator: str = "topic_matrix"
    settings: dict = field(default_factory=dict)

    @property
    def n_topics(self) -> int:
        return len(self.row_constants)

    @property
    def n_stored(self) -> int:
        return int(self.indptr[-1])

    @property
    def nbytes(self) -> int:
        """Memory held by the row and column stores."""
        rows = self.row_constants.nbytes + self.indptr.nbytes + self.indices.nbytes + self.values.nbytes
        held = {id(a): a for name in ("column_entries", "columns") for a in self.__dict__.get(name, ())}
        return rows + sum(a.nbytes for a in held.values())

    @cached_property
    def rows(self) -> Rows:
        """The row store as the kernels read it (a :class:`._kernels.records.Rows`, sharing the arrays)."""
        return Rows(self.row_constants, self.constants_descending, self.indptr, self.indices, self.values)

    @cached_property
    def column_entries(self) -> Columns:
        """(indptr, topics, values): each word's stored entries, in no particular order (topic ids
        ascending until :attr:`columns` sorts them in place), as a :class:`._kernels.records.Columns`.
        What a pass that reads whole columns needs (FastInitialize's first round), without the cost
        of sorting them."""
        if "columns" in self.__dict__:
            return self.__dict__["columns"]
        return Columns(*columns_of_rows(self.indptr, self.indices, self.values, self.n_words))

    @cached_property
    def columns(self) -> Columns:
        """(indptr, topics, values): each word's entries sorted by value, high to low (ties: lower
        topic id first). Sorts :attr:`column_entries` in place, so both share arrays."""
        columns = self.column_entries
        sort_columns_by_value(columns)
        return columns

    @property
    def has_sorted_columns(self) -> bool:
        """Whether :attr:`columns` is built (else reading it sorts every column)."""
        return "columns" in self.__dict__

    @cached_property
    def constants_descending(self) -> np.ndarray:
        """Topic ids by row constant, high to low (ties: lower id first)."""
        return np.argsort(-self.row_constants, kind="stable").astype(np.int64)

    @cached_property
    def scores(self) -> ConstantPlusSparse:
        """``L`` as a :class:`~topicbench.core.topic_word.ConstantPlusSparse` (sharing the arrays)."""
        return ConstantPlusSparse(self.row_constants, self.indptr, self.indices, self.values, self.n_words)

    def row(self, topic: int) -> np.ndarray:
        """Dense row ``L[topic, :]``."""
        return self.scores.row(topic)

    def to_dense(self) -> np.ndarray:
        """Dense ``L`` (topics x words); for small problems and tests only."""
        return self.scores.toarray()

    def top_words(self, topic: int, n: int, vocabulary) -> list[str]:
        """The n words with the highest score in a topic (ties: lower word id first)."""
        return self.topics_top_words([topic], n, vocabulary)[0]

    def topics_top_words(self, topics, n: int, vocabulary) -> list[list[str]]:
        """:meth:`top_words` of each of ``topics``, all at once (one sort of their stored entries)."""
        return [[vocabulary[w] for w in top] for top in self.scores.take(topics).top_columns(n)]

    def distributions(self, topics=None) -> ConstantPlusSparse:
        """Topic-word distributions of the selected topics, in the constant-plus-sparse form of ``L``.

        L is a log-probability for ``raw_umass`` and topic matrices and a log-softmax for
        ``exp_umass``, so rows are softmax(L). ``cooccurrence`` scores are counts (C + eps), not
        logs: their distribution is the normalised row, p(v | w*) = (C[w*, v] + eps) / sum, which is
        the keyword's raw-UMass distribution (a softmax of counts would put all mass on one word).
        """
        scores = self.scores if topics is None else self.scores.take(topics)
        return scores.normalised_rows() if self.generator == "cooccurrence" else scores.softmax_rows()


def document_cooccurrence(corpus: Corpus):
    """C = B^T B: the number of documents containing both words (scipy CSR, int32, symmetric)."""
    import scipy.sparse as sp  # imported here for its import cost: the generators read the arrays

    indptr, indices, counts = cooccurrence_arrays(corpus)
    return sp.csr_matrix((counts, indices, indptr), shape=(corpus.n_words, corpus.n_words))


def cooccurrence_arrays(corpus: Corpus) -> tuple:
    """C = B^T B as CSR arrays (indptr int64, word ids int32 ascending, counts int32)."""
    doc_indptr, doc_words, _ = corpus.document_words
    doc_words = doc_words.astype(np.int64)
    # B's columns: the documents of each word, ascending (a stable sort of the (document, word) slots)
    word_docs = segment_ids(doc_indptr)[np.argsort(doc_words, kind="stable")]
    word_indptr = np.zeros(corpus.n_words + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_words, minlength=corpus.n_words), out=word_indptr[1:])
    return _cooccurrence.cooccurrence_matrix(
        doc_indptr, doc_words, word_indptr, word_docs, corpus.n_words, numba.get_num_threads()
    )


def keyword_candidates(
    corpus: Corpus, generator: str = "raw_umass", *, epsilon: float = GENERATOR_EPSILON,
    collapse: bool = True,
) -> Candidates:
    """One candidate topic per keyword of the vocabulary (the E-LDA paper's keyword generators).

    ``raw_umass``:    L[w*, v] = log(C[w*,v] + eps) - log sum_v' (C[w*,v'] + eps)
    ``exp_umass``:    L[w*, v] = (C[w*,v] + eps) - logsumexp_v' (C[w*,v'] + eps)
    ``cooccurrence``: L[w*, v] = C[w*,v] + eps

    Identical rows collapse into one topic labelled with the keywords joined by ``---``.
    """
    check_generator(generator)
    if corpus.n_documents == 0 or corpus.n_tokens == 0:
        raise InputError(f"corpus {corpus.name!r} has no tokens to build keyword topics from")
    cooc = cooccurrence_arrays(corpus)
    code = _GENERATOR_CODES[generator]
    log_norm, constants = _cooccurrence.keyword_row_normalisers(cooc[0], cooc[2], corpus.n_words, code, epsilon)
    # Rows of L are identical exactly when the keywords' co-occurrence rows are (the E-LDA paper's keyword generators).
    groups = _identical_rows(cooc) if collapse else [[w] for w in range(corpus.n_words)]
    kept_words = np.array([group[0] for group in groups], dtype=np.int64)
    topic_of_word = np.full(corpus.n_words, -1, dtype=np.int64)
    topic_of_word[kept_words] = np.arange(len(kept_words))
    indptr, indices, values = _cooccurrence.keyword_rows(*cooc, kept_words, log_norm, code, epsilon)
    candidates = Candidates(
        row_constants=constants[kept_words],
        indptr=indptr,
        indices=indices,
        values=values,
        n_words=corpus.n_words,
        labels=tuple(LABEL_JOINER.join(corpus.vocabulary[w] for w in group) for group in groups),
        keywords=tuple(tuple(group) for group in groups),
        generator=generator,
        settings={
            "generator": generator,
            "epsilon": epsilon,
            "collapse_identical": collapse,
            "collapsed_rows": int(corpus.n_words - len(groups)),
        },
    )
    # C is symmetric, so the column store comes straight from C's rows (no transpose); its sort by
    # value waits for a reader that needs it (exact greedy sorts only the heads it reads).
    candidates.__dict__["column_entries"] = Columns(
        *_cooccurrence.keyword_column_entries(*cooc, topic_of_word, log_norm, code, epsilon)
    )
    logger.info(
        "%s: %d keyword topics (%d identical rows collapsed), %d stored entries",
        generator, len(groups), corpus.n_words - len(groups), candidates.n_stored,
    )
    return candidates


def _identical_rows(cooc: tuple) -> list[list[int]]:
    """Groups of words whose co-occurrence rows (CSR arrays) are identical, in vocabulary order."""
    hashes = _cooccurrence.integer_row_hashes(*cooc)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    representative = first[inverse]
    groups = {}
    for w in range(len(hashes)):
        r = int(representative[w])
        if r != w and not _csr_rows_equal(cooc, r, w):  # a hash collision: keep it apart
            r = w
        groups.setdefault(r, []).append(w)
    return [groups[r] for r in sorted(groups)]


def _csr_rows_equal(cooc: tuple, a: int, b: int) -> bool:
    indptr, indices, counts = cooc
    span_a = slice(indptr[a], indptr[a + 1])
    span_b = slice(indptr[b], indptr[b + 1])
    return np.array_equal(indices[span_a], indices[span_b]) and np.array_equal(counts[span_a], counts[span_b])


def topic_matrix_candidates(
    log_phi, labels=None, *, vocabulary=None, n_words: int | None = None, topic_vocabulary=None,
) -> Candidates:
    """Any topic matrix of log-scores (e.g. log phi of a fitted LDA) as candidates.

    ``vocabulary`` is the corpus vocabulary; ``topic_vocabulary``, when given, is the word order
    of the matrix's columns and must be the same. Each row's minimum becomes its constant; only
    entries above it are stored.
    """
    if topic_vocabulary is not None:
        if vocabulary is None:
            raise InputError("topic_vocabulary needs the corpus vocabulary to compare with")
        check_vocabulary_matches(topic_vocabulary, vocabulary)
    n_words = n_words if n_words is not None else (len(vocabulary) if vocabulary is not None else None)
    if n_words is None:
        n_words = np.shape(log_phi)[1] if np.ndim(log_phi) == 2 else 0
    matrix = check_topic_matrix(log_phi, n_words)
    labels = check_labels(labels if labels is not None else [f"topic_{t}" for t in range(len(matrix))], len(matrix))
    constants = matrix.min(axis=1)
    stored = matrix > constants[:, None]
    rows, columns = np.nonzero(stored)  # row by row, columns ascending: CSR order
    indptr = np.zeros(len(matrix) + 1, dtype=np.int64)
    np.cumsum(stored.sum(axis=1), out=indptr[1:])
    return Candidates(
        row_constants=constants.astype(np.float64),
        indptr=indptr,
        indices=columns.astype(np.int32),
        values=matrix[rows, columns].astype(np.float64),
        n_words=n_words,
        labels=tuple(labels),
        keywords=None,
        generator="topic_matrix",
        settings={"generator": "topic_matrix"},
    )


def constant_plus_sparse_candidates(log_phi: ConstantPlusSparse, labels=None) -> Candidates:
    """The candidates :func:`topic_matrix_candidates` makes of ``log_phi.toarray()`` (each row's
    minimum as its constant, the entries above it stored), without the dense matrix: a row
    whose constant is its minimum keeps its stored entries above it; any other row (a stored
    entry below the constant, or no column left at the constant) is made dense on its own."""
    n_topics, n_words = log_phi.shape
    labels = check_labels(labels if labels is not None else [f"topic_{t}" for t in range(n_topics)], n_topics)
    rows_of_stored = segment_ids(log_phi.indptr)
    below = np.zeros(n_topics, dtype=bool)
    below[rows_of_stored[log_phi.values < log_phi.row_constants[rows_of_stored]]] = True
    odd = np.flatnonzero(below | (log_phi.unstored_counts() == 0))
    constants = log_phi.row_constants.astype(np.float64).copy()
    keep = log_phi.values > constants[rows_of_stored]
    keep[np.isin(rows_of_stored, odd)] = False
    rows, columns, values = [rows_of_stored[keep]], [log_phi.indices[keep].astype(np.int64)], [log_phi.values[keep]]
    for t in odd:  # rare: made dense one row at a time
        row = log_phi.row(t)
        constants[t] = row.min()
        (stored,) = np.nonzero(row > constants[t])
        rows.append(np.full(len(stored), t, dtype=np.int64))
        columns.append(stored)
        values.append(row[stored])
    rows, columns, values = np.concatenate(rows), np.concatenate(columns), np.concatenate(values)
    order = np.lexsort((columns, rows))
    indptr = np.zeros(n_topics + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_topics), out=indptr[1:])
    return Candidates(
        row_constants=constants, indptr=indptr, indices=columns[order].astype(np.int32),
        values=values[order].astype(np.float64), n_words=n_words, labels=tuple(labels), keywords=None,
        generator="topic_matrix", settings={"generator": "topic_matrix"},
    )
