"""The E-LDA kernels' document evaluations against each other and a dense oracle.

A document's best topics come from one of two evaluations (``dense_top_topics`` fills in every
topic's gain; ``sparse_top_topics`` scores only the topics its column scans reach plus the best
few others by row constant) and single gains from ``topic_gain``. All three must give the same
floats: FastGreedy's lazy re-evaluation and the first round's exact check compare them.
"""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.elda.kernels import column_sort
from topicbench.core.elda.kernels import first_round
from topicbench.core.elda.kernels import gains
from topicbench.core.elda.kernels.records import Columns, Documents
from topicbench.core.elda.kernels.segments import longest_document
from topicbench.core.elda.generators import topic_matrix_candidates

NULL = -230.25850929940458


def random_instance(rng, n_topics: int, n_words: int, n_docs: int):
    """Constant-plus-sparse candidates (constants drawn from few values, so that ties happen),
    documents, and best scores of every (document, word) slot: null, or some topic's score."""
    constants = rng.choice([-9.0, -7.5, -6.0, -4.0], size=n_topics)
    L = np.repeat(constants[:, None], n_words, axis=1)
    stored = rng.random((n_topics, n_words)) < rng.uniform(0.05, 0.6)
    L[stored] = constants[np.nonzero(stored)[0]] + rng.choice([0.5, 1.0, 2.5, 4.0], size=int(stored.sum()))
    candidates = topic_matrix_candidates(L, n_words=n_words)
    lengths = rng.integers(1, min(8, n_words) + 1, size=n_docs)
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    words = np.concatenate([np.sort(rng.choice(n_words, size=k, replace=False)) for k in lengths]).astype(np.int64)
    counts = rng.integers(1, 4, size=len(words)).astype(np.float64)
    best = np.full(len(words), NULL)
    for d in range(n_docs):
        for t in rng.choice(n_topics, size=int(rng.integers(0, 3)), replace=False):
            span = slice(indptr[d], indptr[d + 1])
            best[span] = np.maximum(best[span], L[t, words[span]])
    return L, candidates, (indptr, words, counts), best


def oracle_gains(L, docs, best, d):
    indptr, words, counts = docs
    span = slice(indptr[d], indptr[d + 1])
    return (counts[span] * np.maximum(0.0, L[:, words[span]] - best[span])).sum(axis=1)


def evaluate(kind, candidates, docs, best, d, size, excluded=()):
    indptr = docs[0]
    scratch = gains.evaluation_scratch(candidates.row_constants, longest_document(indptr, 0, len(indptr) - 1))
    scratch.excluded[list(excluded)] = True
    top_t = np.empty(size, dtype=np.int64)
    top_g = np.empty(size, dtype=np.float64)
    evaluation = gains.sparse_top_topics if kind == "sparse" else gains.dense_top_topics
    evaluation(d, Documents(*docs), best, candidates.rows, candidates.columns, scratch, top_t, top_g)
    return top_t, top_g


@pytest.mark.parametrize("seed", range(12))
def test_sparse_and_dense_evaluations_give_the_same_top_topics(seed):
    rng = np.random.default_rng([seed, 2025])
    n_topics = int(rng.integers(2, 40))
    L, candidates, docs, best = random_instance(rng, n_topics, int(rng.integers(3, 30)), 12)
    for d in range(12):
        excluded = rng.choice(n_topics, size=int(rng.integers(0, min(4, n_topics))), replace=False)
        for size in (1, 3, n_topics + 2):
            dense = evaluate("dense", candidates, docs, best, d, size, excluded)
            sparse = evaluate("sparse", candidates, docs, best, d, size, excluded)
            np.testing.assert_array_equal(sparse[0], dense[0])
            np.testing.assert_array_equal(sparse[1], dense[1])  # the same floats, not merely close
            # against the oracle: the gains, and the order (gain high to low, ties lowest id)
            gains = oracle_gains(L, docs, best, d)
            gains[excluded] = -np.inf
            order = np.lexsort((np.arange(n_topics), -np.round(gains, 9)))[:size]
            kept = dense[0] >= 0
            np.testing.assert_allclose(dense[1][kept], gains[dense[0][kept]], rtol=1e-12, atol=1e-9)
            np.testing.assert_array_equal(dense[0][kept], order[: int(kept.sum())])
            assert kept.sum() == min(size, n_topics - len(excluded))


@pytest.mark.parametrize("seed", range(6))
def test_one_topics_gain_is_the_full_evaluations_float(seed):
    """topic_gain (row look-ups) sums in the full evaluation's order: bit-identical gains."""
    rng = np.random.default_rng([seed, 11])
    L, candidates, docs, best = random_instance(rng, 15, 20, 10)
    indptr = docs[0]
    scratch = gains.evaluation_scratch(candidates.row_constants, longest_document(indptr, 0, len(indptr) - 1))
    for d in range(10):
        _, all_gains = evaluate("dense", candidates, docs, best, d, candidates.n_topics)
        topics, _ = evaluate("dense", candidates, docs, best, d, candidates.n_topics)
        m = gains.document_base(d, Documents(*docs), best, scratch)
        for t, expected in zip(topics, all_gains):
            got = gains.topic_gain(d, t, m, Documents(*docs), best, candidates.rows, scratch)
            assert got == expected


def test_documents_whose_every_topic_gains_nothing_take_the_lowest_ids():
    """When a document's words already score their best everywhere, every gain is 0: both
    evaluations then list the lowest topic ids not left out, as a full gains vector would."""
    L = np.array([[-1.0, -1.0], [-3.0, -3.0], [-2.0, -2.0], [-5.0, -5.0]])
    candidates = topic_matrix_candidates(L, n_words=2)
    docs = (np.array([0, 2]), np.array([0, 1]), np.array([1.0, 2.0]))
    best = np.array([-1.0, -1.0])  # topic 0 linked: nothing beats it
    for kind in ("dense", "sparse"):
        topics, gains = evaluate(kind, candidates, docs, best, 0, 3, excluded=[0])
        np.testing.assert_array_equal(topics, [1, 2, 3])
        np.testing.assert_array_equal(gains, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("seed", range(6))
def test_columns_sort_by_value_high_to_low_keeping_the_order_of_ties(seed):
    """Every column sorted as ``np.argsort(-values, kind="stable")`` sorts it: short columns (by
    insertion) and long ones (by radix), negative and positive values, many ties, 0.0 and -0.0
    (equal, so they keep their order), and empty columns."""
    rng = np.random.default_rng([seed, 11])
    lengths = rng.choice([0, 1, 2, 5, 31, 32, 33, 200, 3000], size=40)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    pool = np.concatenate([rng.normal(0, 50, size=20), [0.0, -0.0, 1e-300, -1e-300, 7.25, -7.25]])
    values = rng.choice(pool, size=int(indptr[-1])) * rng.choice([1.0, 1.0, 1 + 1e-15], size=int(indptr[-1]))
    topics = np.arange(len(values), dtype=np.int32)
    got_topics, got_values = topics.copy(), values.copy()
    column_sort.sort_columns_by_value(Columns(indptr, got_topics, got_values))
    for v in range(len(lengths)):
        span = slice(indptr[v], indptr[v + 1])
        order = np.argsort(-values[span], kind="stable")
        np.testing.assert_array_equal(got_topics[span], topics[span][order])
        np.testing.assert_array_equal(got_values[span], values[span][order])


@pytest.mark.parametrize("seed", range(4))
def test_the_column_store_of_rows_is_scipys_csc(seed):
    """Each column lists the rows holding it, row ids ascending, with their values: scipy's
    ``tocsc`` with sorted indices (empty rows and columns included)."""
    import scipy.sparse as sp

    rng = np.random.default_rng([seed, 7])
    n_rows, n_columns = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    matrix = sp.random(n_rows, n_columns, density=float(rng.uniform(0, 0.5)), format="csr", random_state=seed)
    matrix.sort_indices()
    columns = column_sort.columns_of_rows(
        matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32), matrix.data, n_columns,
    )
    expected = matrix.tocsc()
    expected.sort_indices()
    for got, want in zip(columns, (expected.indptr, expected.indices, expected.data)):
        np.testing.assert_array_equal(got, want)
    assert [a.dtype for a in columns] == [np.int64, np.int32, np.float64]


@pytest.mark.parametrize("seed", range(6))
def test_dense_first_round_rows_are_each_score_to_within_half_a_quantum(seed):
    """A dense row holds what its word adds to each topic's first-round gain, max(0, L - max(c,
    null)), as int16 multiples of the row's quantum: its largest addition is the top level, every
    entry lies within half a quantum of its score, and a topic with nothing stored adds zero."""
    rng = np.random.default_rng([seed, 31])
    L, candidates, *_ = random_instance(rng, n_topics=int(rng.integers(3, 40)), n_words=12, n_docs=1)
    words = np.sort(rng.choice(12, size=5, replace=False)).astype(np.int64)
    rows, quantum = first_round.dense_first_round_rows(candidates.column_entries, candidates.row_constants, words, NULL)
    assert rows.dtype == np.int16
    for h, v in enumerate(words):
        adds = np.where(L[:, v] > candidates.row_constants, L[:, v] - np.maximum(candidates.row_constants, NULL), 0.0)
        assert quantum[h] == pytest.approx(adds.max() / first_round.DENSE_ROW_LEVELS, rel=1e-15)
        assert rows[h].max() == (first_round.DENSE_ROW_LEVELS if adds.max() > 0 else 0)
        assert (np.abs(rows[h] * quantum[h] - adds) <= quantum[h] * (0.5 + 1e-9)).all()
        assert not rows[h][adds == 0].any()


def test_first_round_resolves_gains_closer_than_the_dense_rows_quantum(monkeypatch):
    """Dense rows are int16 multiples of a quantum, which cannot tell topics 0 and 1 apart here
    (their scores differ by 1e-9 on one word); the exact check after the approximate pass must: documents with that
    word take topic 1, the others tie and take the lower id, topic 0."""
    from topicbench.core.elda import greedy
    from topicbench.core.preprocess import corpus_from_token_lists
    from topicbench.core.elda.greedy import fast_greedy

    monkeypatch.setattr(greedy, "DENSE_ROW_FRACTION", -1.0)  # every word through a dense row
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(12)]
    L = rng.uniform(-6.0, -1.0, size=(4, 12))
    L[1] = L[0]
    L[1, 3] += 1e-9
    L[2:] -= 3.0  # clearly worse topics
    documents = [list(rng.choice(words, size=6)) for _ in range(30)]
    corpus = corpus_from_token_lists(documents, vocabulary=words)
    solution = fast_greedy(corpus, topic_matrix_candidates(L, vocabulary=corpus.vocabulary), 1)
    has_word = np.array(["w3" in doc for doc in documents])
    assert has_word.any() and not has_word.all()
    np.testing.assert_array_equal(solution.links[:, 1], np.where(has_word, 1, 0))
