"""Posterior quality (spec §4, Experiment Set 1): Σ log φ of assignments, RandK, matched E-LDA."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_helpers import BETA
from topicbench.core.io import load_corpus
from topicbench.core.metrics.posterior import (
    assignment_log_likelihood,
    log_topic_word,
    matched_budget_elda,
    mean_distinct_topics,
    posterior_quality,
    randk_log_likelihood,
)
from topicbench.core.validation import InputError

#: φ over (a, b, c) for two topics, for the tiny corpus d0 = a a b, d1 = b c c, d2 = c
PHI = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
OWN = np.array([0, 0, 0, 1, 1, 1, 1])


def test_assignment_log_likelihood_by_hand(tiny_corpus):
    expected = 2 * math.log(0.5) + math.log(0.3) + math.log(0.2) + 3 * math.log(0.7)
    assert assignment_log_likelihood(tiny_corpus, np.log(PHI), OWN) == pytest.approx(expected, abs=1e-12)
    # a token without a topic scores the null topic beta = log 1e-100
    partial = OWN.copy()
    partial[6] = -1
    assert assignment_log_likelihood(tiny_corpus, np.log(PHI), partial) == pytest.approx(
        expected - math.log(0.7) + BETA, abs=1e-9
    )


def test_randk_by_hand(tiny_corpus):
    # with K = 2 every offset is 1: topics swap. a a -> 1, b -> 1, b -> 0, c c -> 0, c -> 0
    shifted = 2 * math.log(0.1) + math.log(0.2) + math.log(0.3) + 3 * math.log(0.2)
    draws = randk_log_likelihood(tiny_corpus, np.log(PHI), OWN, np.random.default_rng(0), draws=5)
    assert draws.offsets.tolist() == [1] * 5
    assert draws.mean == pytest.approx(shifted, abs=1e-12)


def test_randk_offsets_are_nonzero_and_seeded(tiny_corpus):
    phi = np.full((7, 3), 1 / 3)
    z = np.array([0, 1, 2, 3, 4, 5, 6])
    first = randk_log_likelihood(tiny_corpus, np.log(phi), z, np.random.default_rng(42))
    again = randk_log_likelihood(tiny_corpus, np.log(phi), z, np.random.default_rng(42))
    assert len(first.offsets) == 30
    assert np.all((first.offsets >= 1) & (first.offsets <= 6))
    np.testing.assert_array_equal(first.offsets, again.offsets)
    np.testing.assert_array_equal(first.log_likelihoods, again.log_likelihoods)


def test_matched_budget_elda_by_hand(tiny_corpus):
    # own: d0 uses {0}, d1 {1}, d2 {1}: kappa = 1, budget 3; each document's best single topic is
    # exactly its own one, so E-LDA's F equals the own assignment's value here
    assert mean_distinct_topics(tiny_corpus, OWN) == 1.0
    solution = matched_budget_elda(tiny_corpus, np.log(PHI), OWN)
    assert solution.budget == 3
    own = assignment_log_likelihood(tiny_corpus, np.log(PHI), OWN)
    assert solution.log_posterior == pytest.approx(own, abs=1e-12)
    # a mixed own assignment: d1 uses both topics -> kappa = 4/3, budget 4
    mixed = np.array([0, 0, 0, 0, 1, 1, 1])
    assert mean_distinct_topics(tiny_corpus, mixed) == pytest.approx(4 / 3)
    assert matched_budget_elda(tiny_corpus, np.log(PHI), mixed).budget == 4


@pytest.fixture(scope="module")
def lee_lda():
    """A small Gibbs LDA (tomotopy, fixed alpha) on the built-in corpus: corpus, log φ, own z."""
    import tomotopy

    corpus = load_corpus()
    model = tomotopy.LDAModel(k=10, alpha=0.1, eta=0.01, seed=7)
    model.optim_interval = 0  # keep alpha fixed
    for text in corpus.texts():
        model.add_doc(text)
    model.train(200, workers=1)
    columns = np.array([corpus.word_index[word] for word in model.used_vocabs])
    phi = np.zeros((model.k, corpus.n_words))
    for k in range(model.k):
        phi[k, columns] = model.get_topic_word_dist(k)
    token_topics = np.concatenate([np.asarray(doc.topics, dtype=np.int64) for doc in model.docs])
    words = np.concatenate([columns[np.asarray(doc.words)] for doc in model.docs])
    np.testing.assert_array_equal(words, corpus.token_ids)  # tomotopy kept every token, in order
    return corpus, log_topic_word(phi), token_topics


def test_experiment_set1_ordering_randk_below_own_below_elda(lee_lda):
    corpus, log_phi, own = lee_lda
    result = posterior_quality(corpus, log_phi, own, np.random.default_rng(0))
    assert result.randk < result.own < result.elda
    assert result.own - result.randk > 0.5 * abs(result.own)  # RandK is far below
    assert result.budget == round(result.kappa * corpus.n_documents)
    assert len(result.randk_draws.log_likelihoods) == 30
    again = posterior_quality(corpus, log_phi, own, np.random.default_rng(0))
    assert again.as_dict() == result.as_dict()


def test_posterior_errors(tiny_corpus):
    with pytest.raises(InputError, match="7 tokens"):
        assignment_log_likelihood(tiny_corpus, np.log(PHI), OWN[:5])
    with pytest.raises(InputError, match=r"must lie in \[-1, 1\]"):
        assignment_log_likelihood(tiny_corpus, np.log(PHI), OWN + 1)
    with pytest.raises(InputError, match="no token_topics"):
        assignment_log_likelihood(tiny_corpus, np.log(PHI), None)
    with pytest.raises(InputError, match="columns but the corpus vocabulary has 3 words"):
        assignment_log_likelihood(tiny_corpus, np.log(PHI[:, :2]), OWN)
    with pytest.raises(InputError, match="at least two topics"):
        randk_log_likelihood(tiny_corpus, np.log(PHI[:1]), np.zeros(7, dtype=int), np.random.default_rng(0))
    with pytest.raises(InputError, match="numpy.random.Generator"):
        randk_log_likelihood(tiny_corpus, np.log(PHI), OWN, 0)
    with pytest.raises(InputError, match="negative, NaN or infinite"):
        log_topic_word(-PHI)
