"""Held-out per-word log-likelihood and perplexity."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from topicbench.core.metrics import heldout
from topicbench.core.metrics.heldout import heldout_log_likelihood
from topicbench.core.validation import InputError


def test_heldout_by_hand(tiny_corpus):
    # test documents d0 = a a b, d1 = b c c, d2 = c over (a, b, c)
    phi = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    theta = np.array([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0]])
    p_b_d1 = 0.5 * 0.3 + 0.5 * 0.2
    p_c_d1 = 0.5 * 0.2 + 0.5 * 0.7
    expected = 2 * math.log(0.5) + math.log(0.3) + math.log(p_b_d1) + 2 * math.log(p_c_d1) + math.log(0.7)
    fit = heldout_log_likelihood(tiny_corpus, phi, theta)
    assert fit.log_likelihood == pytest.approx(expected, abs=1e-12)
    assert fit.n_tokens == 7
    assert fit.per_word == pytest.approx(expected / 7)
    assert fit.perplexity == pytest.approx(math.exp(-expected / 7))
    assert fit.as_dict() == {"heldout_log_likelihood": fit.per_word, "perplexity": fit.perplexity}


def test_chunked_computation_equals_the_dense_one(monkeypatch):
    rng = np.random.default_rng(3)
    counts = sp.random(40, 30, density=0.3, random_state=4, data_rvs=lambda n: rng.integers(1, 5, n)).tocsr()
    phi = rng.dirichlet(np.ones(30), size=6)
    theta = rng.dirichlet(np.ones(6), size=40).T
    dense = counts.toarray()
    expected = float((dense * np.log(theta.T @ phi)).sum())
    monkeypatch.setattr(heldout, "CHUNK_CELLS", 70)  # chunks of 2 documents
    fit = heldout_log_likelihood(counts, phi, theta)
    assert fit.log_likelihood == pytest.approx(expected, rel=1e-12)
    assert fit.n_tokens == int(dense.sum())


def test_zero_probabilities_are_floored_and_counted(tiny_corpus):
    phi = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    theta = np.full((2, 3), 0.5)
    fit = heldout_log_likelihood(tiny_corpus, phi, theta)
    assert fit.floored_tokens == 3  # the three c tokens
    assert fit.log_likelihood == pytest.approx(4 * math.log(0.5) + 3 * math.log(1e-100))


def test_heldout_errors(tiny_corpus):
    phi = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    theta = np.full((2, 3), 0.5)
    with pytest.raises(InputError, match="theta covers 2 documents"):
        heldout_log_likelihood(tiny_corpus, phi, theta[:, :2])
    with pytest.raises(InputError, match="topic-word rows must sum to 1"):
        heldout_log_likelihood(tiny_corpus, phi * 2, theta)
    with pytest.raises(InputError, match="document-topic columns must sum to 1"):
        heldout_log_likelihood(tiny_corpus, phi, theta * 2)
    with pytest.raises(InputError, match="shapes do not fit"):
        heldout_log_likelihood(tiny_corpus, phi, np.full((3, 3), 1 / 3))
    with pytest.raises(InputError, match="no tokens"):
        heldout_log_likelihood(sp.csr_matrix((3, 3)), phi, theta)
