"""Jensen-Shannon stability at export within seconds: dense rows that are mostly one value compacted
at no loss, dense many-word runs read on a sample of their words with the error stated."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.metrics.stability import compacted, seed_stability
from topicbench.core.metrics.stability_sampled import word_sample
from topicbench.core.metrics.topic_similarity import topic_similarity
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.tasks.results.stability import model_stability


def _gibbs(rng, topics=30, words=3000, beta=0.01):
    counts = np.zeros((topics, words))
    for row in counts:
        drawn = rng.choice(words, size=int(rng.integers(20, 150)), replace=False)
        row[drawn] = rng.geometric(0.2, size=len(drawn))
    counts += beta
    return counts / counts.sum(axis=1, keepdims=True)


def _softmax_seeds(rng, topics=40, words=6000, seeds=3):
    base = rng.normal(0, 2, size=(topics, words))
    runs = []
    for _ in range(seeds):
        logits = base + rng.normal(0, 0.5, size=base.shape)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        runs.append((weights / weights.sum(axis=1, keepdims=True))[rng.permutation(topics)])
    return runs


def test_rows_mostly_one_value_are_compacted_and_give_the_same_similarities():
    rng = np.random.default_rng(0)
    a, b = _gibbs(rng), _gibbs(rng)
    a[3] = 1 / a.shape[1]  # a row that is one value throughout
    compact = compacted(a)
    assert isinstance(compact, ConstantPlusSparse) and compact.n_stored < a.size / 10
    assert np.allclose(compact.toarray(), a, rtol=0, atol=0)
    exact = topic_similarity(a, b, "jensen_shannon")
    assert np.abs(topic_similarity(compact, compacted(b), "jensen_shannon") - exact).max() < 1e-12
    softmax = _softmax_seeds(rng, topics=5, words=200, seeds=1)[0]
    assert compacted(softmax) is softmax  # no two entries alike: left dense


def test_dense_many_word_runs_are_read_on_a_sample_within_their_stated_error():
    rng = np.random.default_rng(1)
    runs = _softmax_seeds(rng)
    assert word_sample(runs, np.random.default_rng(0), budget=1e12) is None  # within budget: every word read
    assert word_sample([_gibbs(rng) for _ in range(3)], np.random.default_rng(0), budget=1e3) is None  # compacts
    sample = word_sample(runs, np.random.default_rng(0), budget=40 * 40 * 3 * 6000 / 4)
    assert sample is not None and sample.size == 2000 and len(sample.census) == 1000
    again = word_sample(runs, np.random.default_rng(0), budget=40 * 40 * 3 * 6000 / 4)
    assert all(np.array_equal(x, y) for x, y in zip(sample.groups, again.groups))  # the same seed, the same words

    vocabulary = [tuple(map(str, range(6000)))] * 3
    exact = seed_stability(runs, "jensen_shannon").mean_similarity
    import topicbench.core.metrics.stability_sampled as sampled

    budget = sampled.WORD_BUDGET
    sampled.WORD_BUDGET = 40 * 40 * 3 * 6000 / 4
    try:
        row = model_stability(runs, vocabulary, [0, 1, 2], measures=("jensen_shannon",))
        same = model_stability(runs, vocabulary, [0, 1, 2], measures=("jensen_shannon",))
    finally:
        sampled.WORD_BUDGET = budget
    assert row["sampled_words"] == 2000 and 0 < row["jensen_shannon_error"] < 0.02
    assert abs(row["jensen_shannon_mean"] - exact) <= row["jensen_shannon_error"]
    assert row == pytest.approx(same, nan_ok=True)
    whole = model_stability(runs, vocabulary, [0, 1, 2], measures=("jensen_shannon",))
    assert np.isnan(whole["sampled_words"]) and whole["jensen_shannon_error"] == 0.0
    assert whole["jensen_shannon_mean"] == pytest.approx(exact, abs=1e-12)
