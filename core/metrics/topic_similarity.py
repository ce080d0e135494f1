r"""Similarity of every topic of one run with every topic of another, on a stated measure; each
run's topics are prepared once for their measure, then compared pair by pair (the first step of
:mod:`topicbench.core.metrics.stability`):

- ``"jensen_shannon"``: s(p, q) = 1 − √JSD₂(p, q) on the topic-word distributions, where
  JSD₂(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2, in bits (Lin 1991), so √JSD₂
  is the Jensen-Shannon distance (a metric; Endres & Schindelin 2003) and s lies in [0, 1]:
  1 for the same distribution, 0 for disjoint supports (``scipy.spatial.distance.jensenshannon``
  with ``base=2`` gives the same distance). Computed on every word, with no restriction of the
  support, also for E-LDA's constant-plus-sparse topics and without making them dense: a pair of
  such rows is summed over the union of their stored words, the words neither stores taking the
  two constants in closed form; where the other row's constant is small next to a row's stored
  values (E-LDA's keyword topics, by a factor of about 1e5), the words that row alone stores come
  from its moments, by a series whose error is far below rounding (:mod:`._stability_kernels`).
  Cost: K_A·K_B·|V| logarithms for dense rows, K_A·K_B·(stored words per row) steps for
  constant-plus-sparse ones, with a logarithm per shared word only on the series path.
- ``"top_words"``: extrapolated rank-biased overlap of the two topics' top-N word lists (Webber,
  Moffat & Zobel 2010, Eq. 32; the RBO of :mod:`.diversity`, same N = 10 and p = 0.9), with
  X_d = |S_{:d} ∩ T_{:d}|,

      RBO_ext(S, T) = (1 − p)/p · Σ_{d=1..N} (X_d / d) · p^d + (X_N / N) · p^N,

  1 for the same list, 0 for disjoint lists; the top words are each row's N largest entries
  (ties: lower word id first, as ``np.argsort(-row, kind="stable")``).

>>> a = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
>>> topic_similarity(a, a[::-1], "jensen_shannon")
array([[0., 1.],
       [1., 0.]])

References
----------
Lin (1991), Divergence measures based on the Shannon entropy, IEEE Trans. Inf. Theory 37(1).
Endres & Schindelin (2003), A new metric for probability distributions, IEEE Trans. Inf. Theory 49(7).
Webber, Moffat & Zobel (2010), A similarity measure for indefinite rankings, ACM TOIS 28(4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import RBO_PERSISTENCE, RBO_TOP_N
from ..output import check_probabilities, is_scipy_sparse
from ..topic_word import ConstantPlusSparse
from ..validation import InputError

#: Similarities between topics of two runs.
MEASURES = ("jensen_shannon", "top_words")


def topic_similarity(topic_word_a, topic_word_b, measure: str = "jensen_shannon", *,
                     top_n: int = RBO_TOP_N, persistence: float = RBO_PERSISTENCE) -> np.ndarray:
    """Similarity of every topic of run A with every topic of run B.

    Parameters
    ----------
    topic_word_a, topic_word_b : ndarray or ConstantPlusSparse, shapes (K_A, |V|) and (K_B, |V|)
        p(word | topic), rows summing to 1, over the same vocabulary in the same order.
    measure : {"jensen_shannon", "top_words"}
    top_n : int, default 10
        N of ``"top_words"``.
    persistence : float, default 0.9
        p of ``"top_words"``.

    Returns
    -------
    ndarray of float64, shape (K_A, K_B), in [0, 1]
    """
    measure, top_n, persistence = check_settings(measure, top_n, persistence)
    a, b = check_pair(topic_word_a, topic_word_b)
    return similarity_of(prepare(a, measure, top_n, persistence), prepare(b, measure, top_n, persistence))


def ranked_words_similarity(words_a, words_b, *, top_n: int = RBO_TOP_N,
                            persistence: float = RBO_PERSISTENCE) -> np.ndarray:
    """The ``"top_words"`` similarity of topics given as ranked word lists (a run's
    ``topics.json``), not as matrices: runs of different models over one corpus compared on the
    words a reader sees, without reading their matrices.

    Parameters
    ----------
    words_a, words_b : sequences of sequences of str
        Each topic's words, best first (a word repeated in a list counts at its first place).
    top_n : int, default 10
        N; lowered to the shortest list's length where a list is shorter.
    persistence : float, default 0.9

    Returns
    -------
    ndarray of float64, shape (len(words_a), len(words_b)), in [0, 1]

    >>> ranked_words_similarity([["tax", "vote"], ["game", "team"]], [["team", "game"]], top_n=2).round(3)
    array([[0. ],
           [0.9]])
    """
    _, top_n, persistence = check_settings("top_words", top_n, persistence)
    lists = [list(dict.fromkeys(words)) for words in (*words_a, *words_b)]
    if not words_a or not words_b or min(map(len, lists)) == 0:
        raise InputError("ranked_words_similarity: every topic needs at least one word, and each side a topic")
    n = min(top_n, *map(len, lists))
    index: dict = {}
    ids = np.array([[index.setdefault(word, len(index)) for word in words[:n]] for words in lists], dtype=np.int64)
    split = len(words_a)
    return similarity_of(PreparedTopics("top_words", _rbo_rows(ids[:split], len(index), persistence)),
                         PreparedTopics("top_words", _rbo_rows(ids[split:], len(index), persistence)))


def top_word_ids(topic_word, n: int) -> np.ndarray:
    """(K, n) ids of each topic's n largest entries, largest first, ties by lower word id: what
    ``np.argsort(-row, kind="stable")[:n]`` gives, without sorting whole dense rows."""
    if isinstance(topic_word, ConstantPlusSparse):
        return np.vstack(topic_word.top_columns(n)).astype(np.int64)
    matrix = np.asarray(topic_word, dtype=np.float64)
    n_topics, n_words = matrix.shape
    if n >= n_words:
        return np.argsort(-matrix, axis=1, kind="stable")[:, :n_words].astype(np.int64)
    nth_largest = np.partition(matrix, n_words - n, axis=1)[:, n_words - n]
    rows, columns = np.nonzero(matrix >= nth_largest[:, None])  # each row's top n and its ties
    order = np.lexsort((columns, -matrix[rows, columns], rows))
    rows, columns = rows[order], columns[order]
    starts = np.searchsorted(rows, np.arange(n_topics))
    keep = np.arange(len(rows)) - starts[rows] < n
    return columns[keep].reshape(n_topics, n).astype(np.int64)


def check_settings(measure, top_n, persistence) -> tuple[str, int, float]:
    """(measure, N, p), checked: a measure of :data:`MEASURES`, a positive N, p in (0, 1)."""
    if measure not in MEASURES:
        raise InputError(f"unknown stability measure {measure!r}: choose one of {', '.join(MEASURES)}")
    if isinstance(top_n, bool) or not isinstance(top_n, (int, np.integer)) or top_n < 1:
        raise InputError(f"top_n must be a positive integer, got {top_n!r}")
    if not isinstance(persistence, (int, float, np.floating)) or not 0 < persistence < 1:
        raise InputError(f"persistence p must lie in (0, 1), got {persistence!r}")
    return measure, int(top_n), float(persistence)


def check_topic_word(matrix, name: str):
    """A topic-word matrix as float64 rows summing to 1: dense, or constant-plus-sparse (a scipy
    sparse matrix becomes one with constant 0) with sorted stored columns."""
    if is_scipy_sparse(matrix):
        rows = matrix.tocsr(copy=True)
        rows.sort_indices()
        matrix = ConstantPlusSparse(np.zeros(rows.shape[0]), rows.indptr.astype(np.int64),
                                    rows.indices.astype(np.int64), rows.data.astype(np.float64), rows.shape[1])
    if not isinstance(matrix, ConstantPlusSparse):
        matrix = np.ascontiguousarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or 0 in matrix.shape:
            raise InputError(f"{name} must be a non-empty 2-d array (topics x words), got shape {matrix.shape}")
    elif matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise InputError(f"{name} must have topics and words, got shape {matrix.shape}")
    elif not _stored_columns_sorted(matrix):
        raise InputError(
            f"{name}: each row's stored columns must be ascending and distinct (as ConstantPlusSparse requires)"
        )
    check_probabilities(matrix, 1, f"{name}: topic-word rows")
    return matrix


def _stored_columns_sorted(matrix: ConstantPlusSparse) -> bool:
    steps = np.diff(matrix.indices.astype(np.int64))
    row_starts = matrix.indptr[1:-1]
    inside = np.ones(len(steps), dtype=bool)
    inside[row_starts[(row_starts > 0) & (row_starts <= len(steps))] - 1] = False  # steps across rows
    return bool(np.all(steps[inside] > 0))


def check_pair(topic_word_a, topic_word_b):
    """Both runs' matrices checked (:func:`check_topic_word`), over vocabularies of one size."""
    a, b = check_topic_word(topic_word_a, "topic_word_a"), check_topic_word(topic_word_b, "topic_word_b")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"run A has {a.shape[1]} words and run B {b.shape[1]}: compare runs over one vocabulary")
    return a, b


@dataclass(frozen=True, eq=False)
class PreparedTopics:
    """One run's topics in the form its measure reads.

    ``"top_words"``: ``arrays`` = its ranked top words as RBO rows (see :func:`_rbo_rows`).
    ``"jensen_shannon"``: ``arrays`` = (matrix, x log2 x) for a dense run; for a constant-plus-sparse
    one a :class:`~topicbench.core.metrics.stability_kernels.SparseRows`, and ``moments`` its
    :class:`~topicbench.core.metrics.stability_kernels.RowMoments` (log2 of each value, then per
    row its smallest value, sum, sum of log2 and scaled moments; see
    :mod:`._stability_kernels`).
    """

    measure: str
    arrays: tuple
    moments: tuple | None = None
    n_columns: int = 0

    @property
    def sparse(self) -> bool:
        return self.moments is not None


def prepare(matrix, measure: str, top_n: int, persistence: float) -> PreparedTopics:
    """A checked matrix's topics in the form ``measure`` reads, computed once per run."""
    # the numba kernels imported where topics are compared: a config's check imports this module
    # for MEASURES, before any fit (numba's import is 0.3-1 s of CPU)
    from topicbench.core.metrics import stability_kernels as kernels

    if measure == "top_words":
        if top_n > matrix.shape[1]:
            raise InputError(f"top_n = {top_n} exceeds the vocabulary of {matrix.shape[1]} words: lower top_n")
        return PreparedTopics(measure, _rbo_rows(top_word_ids(matrix, top_n), matrix.shape[1], persistence))
    if not isinstance(matrix, ConstantPlusSparse):
        return PreparedTopics(measure, (matrix, kernels.x_log2_x(matrix.ravel()).reshape(matrix.shape)))
    constants = np.ascontiguousarray(matrix.row_constants, dtype=np.float64)
    values = np.ascontiguousarray(matrix.values, dtype=np.float64)
    indptr = np.ascontiguousarray(matrix.indptr, dtype=np.int64)
    arrays = kernels.SparseRows(constants, kernels.x_log2_x(constants), indptr,
                                np.ascontiguousarray(matrix.indices, dtype=np.int64), values, kernels.x_log2_x(values))
    log2_values = np.zeros_like(values)
    np.log2(values, out=log2_values, where=values > 0)
    moments = kernels.RowMoments(log2_values, *kernels.row_moments(indptr, values, kernels.SERIES_TERMS))
    return PreparedTopics(measure, arrays, moments, int(matrix.n_columns))


def similarity_of(a: PreparedTopics, b: PreparedTopics) -> np.ndarray:
    """(K_A, K_B) similarities of two prepared runs (of one measure)."""
    from topicbench.core.metrics import stability_kernels as kernels

    if a.measure == "top_words":
        weighted, _ = a.arrays
        _, indicator = b.arrays
        return np.asarray((weighted @ indicator.T).toarray(), dtype=np.float64)
    if (b.sparse and not a.sparse) or (a.sparse == b.sparse and len(b.arrays[0]) > len(a.arrays[0])):
        return similarity_of(b, a).T  # the kernels run in parallel over the rows of their first matrix
    if a.sparse and b.sparse:
        divergence = kernels.js_sparse_sparse(a.arrays, a.moments, b.arrays, b.moments, a.n_columns,
                                              kernels.SERIES_RATIO)
    elif a.sparse:
        divergence = kernels.js_sparse_dense(a.arrays, *b.arrays)
    else:
        divergence = kernels.js_dense_dense(*a.arrays, *b.arrays)
    np.sqrt(divergence, out=divergence)  # in place: the matrices are K_A x K_B
    return np.subtract(1.0, divergence, out=divergence)


def rbo_depth_weights(n: int, persistence: float) -> np.ndarray:
    """w_d, d = 1..n, with RBO_ext = Σ_d w_d X_d: (1 − p)/p · p^d / d, plus p^n / n at d = n."""
    depths = np.arange(1, n + 1)
    weights = (1 - persistence) / persistence * persistence**depths / depths
    weights[-1] += persistence**n / n
    return weights


def _rbo_rows(top_ids: np.ndarray, n_words: int, persistence: float) -> tuple:
    """Two sparse (K, |V|·N) matrices whose product ``weighted @ indicator.T`` is RBO_ext.

    RBO_ext = Σ_d w_d X_d and X_d = Σ_v [rank_S(v) ≤ d][rank_T(v) ≤ d]: column (v, d) holds
    [rank(v) ≤ d], times w_d on one side, so the product of a row of each sums w_d over the depths d
    at which both lists hold v, for every shared word v, in one sparse product for all pairs.
    """
    import scipy.sparse as sp

    n_topics, n = top_ids.shape
    weights = rbo_depth_weights(n, persistence)
    rank, depth = np.triu_indices(n)  # 0-based: word at rank r counts at depths d >= r
    columns = (top_ids[:, rank] * n + depth).ravel()
    rows = np.repeat(np.arange(n_topics), len(rank))
    shape = (n_topics, n_words * n)
    weighted = sp.csr_matrix((np.tile(weights[depth], n_topics), (rows, columns)), shape=shape)
    indicator = sp.csr_matrix((np.ones(len(columns)), (rows, columns)), shape=shape)
    return weighted, indicator
