"""Metrics read E-LDA's sparse output without making it dense, and score it as its dense twin."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from topicbench.core.elda.generators import keyword_candidates, topic_matrix_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings
from topicbench.core.metrics.labels import main_topics
from topicbench.core.elda.generators import constant_plus_sparse_candidates
from topicbench.core.metrics.scoring import score
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.topic_word import ConstantPlusSparse

#: Every metric that reads a matrix of the output, with some that read its topics only.
MATRIX_METRICS = (
    "umass", "npmi", "topic_diversity", "log_likelihood_own", "log_likelihood_randk", "log_likelihood_elda",
    "heldout_log_likelihood", "perplexity", "classification", "clustering",
)


def labelled_corpus(seed: int = 0):
    rng = np.random.default_rng(seed)
    documents, labels = [], []
    for d in range(150):
        theme = d % 3
        documents.append([f"w{theme * 20 + int(w)}" for w in rng.integers(0, 30, size=int(rng.integers(3, 15)))])
        labels.append(f"class{theme}")
    return corpus_from_token_lists(documents, labels=labels, name="labelled")


def dense_twin(output):
    return replace(output, topic_word_matrix=output.topic_word_matrix.toarray(),
                   topic_document_matrix=output.topic_document_matrix.toarray())


@pytest.mark.parametrize("generator", ["raw_umass", "exp_umass", "cooccurrence"])
def test_sparse_and_dense_outputs_score_the_same_to_1e12(generator, monkeypatch):
    corpus = labelled_corpus()
    output = fast_greedy(corpus, keyword_candidates(corpus, generator), 2.0).to_output(top_n=5)
    dense = dense_twin(output)
    theta = output.topic_document_matrix.toarray()[:, :40]
    settings = MetricSettings(top_n=(5,))

    def context():
        return MetricContext(MetricInputs(corpus=corpus, heldout_corpus=corpus.subset(range(40)), settings=settings))

    expected = score(dense, context(), MATRIX_METRICS, seed=3, heldout_theta=theta)

    def refuse(*args, **kwargs):
        raise AssertionError("a metric made the constant-plus-sparse matrix dense")

    monkeypatch.setattr(ConstantPlusSparse, "toarray", refuse)
    monkeypatch.setattr(ConstantPlusSparse, "__array__", refuse)
    got = score(output, context(), MATRIX_METRICS, seed=3, heldout_theta=theta)
    assert got.skipped == expected.skipped == {}
    assert set(got.values) == set(expected.values)
    for key, value in expected.values.items():
        assert got.values[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_candidates_of_a_constant_plus_sparse_log_phi_are_those_of_its_dense_twin():
    rng = np.random.default_rng(5)
    n_rows, n_columns = 9, 13
    mask = rng.random((n_rows, n_columns)) < 0.4
    mask[0] = True  # every column stored: its minimum is a stored value
    mask[1] = False  # none stored: a constant row
    constants = rng.normal(size=n_rows) - 3.0
    dense = np.repeat(constants[:, None], n_columns, axis=1)
    dense[mask] = constants.repeat(n_columns).reshape(n_rows, n_columns)[mask] + rng.random(int(mask.sum())) + 0.1
    dense[2, np.flatnonzero(mask[2])[:1]] = constants[2] - 1.0  # a stored entry below the constant
    dense[3, np.flatnonzero(mask[3])[:1]] = constants[3]  # a stored entry equal to the constant
    rows, columns = np.nonzero(mask)
    stored = sp.csr_matrix((dense[rows, columns], (rows, columns)), shape=dense.shape)
    stored.sort_indices()
    log_phi = ConstantPlusSparse(constants, stored.indptr.astype(np.int64), stored.indices, stored.data, n_columns)
    np.testing.assert_array_equal(log_phi.toarray(), dense)
    expected = topic_matrix_candidates(dense, n_words=n_columns)
    got = constant_plus_sparse_candidates(log_phi)
    for part in ("row_constants", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(got, part), getattr(expected, part), err_msg=part)
        assert getattr(got, part).dtype == getattr(expected, part).dtype, part
    assert got.labels == expected.labels and got.n_words == expected.n_words


def test_main_topics_of_a_sparse_theta_break_ties_as_the_dense_argmax():
    theta = np.array([
        [0.5, 0.0, 0.25, 0.2],
        [0.5, 0.6, 0.25, 0.2],
        [0.0, 0.4, 0.5, 0.6],
    ])
    np.testing.assert_array_equal(main_topics(sp.csc_matrix(theta)), np.argmax(theta, axis=0))
    np.testing.assert_array_equal(main_topics(sp.csr_matrix(theta)), [0, 1, 2, 2])
