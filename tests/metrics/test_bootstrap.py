"""The bootstrap of agreement statistics (``core/metrics/bootstrap.py``): the vectorised τ-b
against scipy's, clusters resampled whole, undefined resamples counted."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy.stats import kendalltau

from topicbench.core.metrics import bootstrap
from topicbench.core.metrics.bootstrap import (cluster_resamples, kendall_tau_b_resampled, paired_resamples,
                                               percentile_interval)
from topicbench.core.validation import InputError


def test_the_vectorised_tau_b_is_scipys_on_resamples_with_ties_and_copies():
    rng = np.random.default_rng(0)
    first, second = rng.integers(0, 4, size=15).astype(float), rng.integers(0, 3, size=15).astype(float)
    picks = paired_resamples(15, 200, rng)
    expected = [kendalltau(first[p], second[p]).statistic for p in picks]
    np.testing.assert_allclose(kendall_tau_b_resampled(first, second, picks), expected, rtol=1e-12, atol=1e-12)


def test_a_constant_resample_has_no_tau():
    taus = kendall_tau_b_resampled([1.0, 2.0, 3.0], [3.0, 1.0, 2.0], np.array([[0, 0, 0], [0, 1, 2]]))
    assert np.isnan(taus[0]) and taus[1] == pytest.approx(kendalltau([1, 2, 3], [3, 1, 2]).statistic)


def test_clusters_are_resampled_whole():
    clusters = ["a"] * 3 + ["b"] * 5 + ["c"] * 2
    for draw in cluster_resamples(clusters, 50, np.random.default_rng(1)):
        counts = np.bincount(draw, minlength=10)
        for members in (range(0, 3), range(3, 8), range(8, 10)):  # every item of a cluster as often as the others
            assert len({counts[i] for i in members}) == 1
        assert sum(counts[i] for i in (0, 3, 8)) == 3  # as many clusters as there are


def test_undefined_resamples_are_counted_and_left_out():
    interval = percentile_interval([0.1, np.nan, 0.3, 0.2, np.nan], units=4)
    assert (interval.resamples, interval.undefined) == (5, 2) and 0.1 <= interval.low < interval.high <= 0.3
    assert interval.method == "percentile bootstrap, 5 resamples of 4 topics (2 undefined, left out)"
    with pytest.raises(InputError, match="at least one item"):
        paired_resamples(0, 10, np.random.default_rng(0))


def test_docstring_examples():
    assert doctest.testmod(bootstrap, optionflags=doctest.ELLIPSIS).failed == 0
