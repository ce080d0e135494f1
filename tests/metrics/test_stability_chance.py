"""The permutation test of a stability against its chance level (core/metrics/stability_chance.py),
and deterministic models, whose seeds give one fit (core/metrics/stability.py identical_fits)."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.metrics.stability import NOT_APPLICABLE, identical_fits, seed_stability
from topicbench.core.metrics.stability_chance import PERMUTATIONS, chance_test
from topicbench.core.metrics.stats import ALPHA
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.core.validation import InputError

MEASURES = ("jensen_shannon", "top_words")


def _random_fits(rng, n_runs=3, n_topics=12, n_words=300, concentration=0.1):
    return [rng.dirichlet(np.full(n_words, concentration), size=n_topics) for _ in range(n_runs)]


def _refits(topics, rng, n_runs=3, noise=0.1):
    """The same topics found again at each seed: reordered, each probability jittered by ±noise."""
    runs = []
    for _ in range(n_runs):
        noisy = topics * rng.uniform(1 - noise, 1 + noise, size=topics.shape)
        runs.append((noisy / noisy.sum(axis=1, keepdims=True))[rng.permutation(len(topics))])
    return runs


def _keyword_topics(rng, n_topics, n_words, stored):
    """E-LDA-like constant-plus-sparse topics: ``stored`` words per row, a small constant elsewhere."""
    columns = np.concatenate([np.sort(rng.choice(n_words, size=stored, replace=False)) for _ in range(n_topics)])
    counts = rng.geometric(0.3, size=n_topics * stored).astype(float)
    norms = counts.reshape(n_topics, stored).sum(axis=1) + n_words * 1e-5
    values = (counts + 1e-5) / np.repeat(norms, stored)
    indptr = np.arange(0, n_topics * stored + 1, stored)
    return ConstantPlusSparse(1e-5 / norms, indptr, columns, values, n_words)


@pytest.mark.parametrize("measure", MEASURES)
def test_independent_random_fits_are_near_chance(measure):
    test = chance_test(_random_fits(np.random.default_rng(3)), measure, rng=np.random.default_rng(4))
    assert test.p_value > ALPHA and not test.above_chance
    assert test.pairs == 3 and test.permutations == PERMUTATIONS and test.null.shape == (PERMUTATIONS,)
    assert test.chance_sd > 0  # 12 topics x 3 pairs / 19 draws: 2 a draw, raised to the 5 that are sampled
    assert test.sampled_topics == 5 and test.chance_error > 0
    assert abs(test.observed - test.chance) < 4 * test.chance_sd  # the observed lies inside its null


@pytest.mark.parametrize("measure", MEASURES)
def test_the_same_topics_refound_in_another_order_are_significantly_above_chance(measure):
    rng = np.random.default_rng(5)
    test = chance_test(_refits(_random_fits(rng, n_runs=1)[0], rng), measure, rng=np.random.default_rng(6))
    assert test.p_value == pytest.approx(1 / (PERMUTATIONS + 1)) and test.above_chance
    assert test.observed > test.null.max()


def test_independent_fits_are_called_above_chance_no_more_often_than_alpha():
    """The test's size: independent symmetric-Dirichlet fits are exchangeable in their words, so the
    shuffled draws are the null exactly: p is uniform on its grid of 1/20 and p ≤ α comes up about
    5% of the time (here in 40 seeded replicates at most 5, a binomial(40, 0.05) tail of 0.05)."""
    p_values = np.array([chance_test(_random_fits(np.random.default_rng(100 + i), n_runs=2, n_topics=5, n_words=60),
                                     "top_words", rng=np.random.default_rng(i)).p_value for i in range(40)])
    assert np.count_nonzero(p_values <= ALPHA) <= 5
    assert 0.35 < np.median(p_values) < 0.65  # not a test that never rejects


def test_the_p_value_counts_the_draws_at_or_above_the_observed():
    runs = _random_fits(np.random.default_rng(7))
    test = chance_test(runs, "jensen_shannon", rng=np.random.default_rng(8), permutations=9)
    assert test.p_value == (1 + np.count_nonzero(test.null >= test.observed)) / 10
    same_draws = chance_test(runs, "jensen_shannon", rng=np.random.default_rng(8), permutations=9,
                             observed=test.null.max())  # tying the largest draw counts it
    assert same_draws.p_value == pytest.approx(0.2) and np.array_equal(same_draws.null, test.null)


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("shape", ["dense", "keywords", "mixed"])
def test_a_sampled_chance_level_agrees_with_the_exact_one_within_its_stated_error(measure, shape):
    rng = np.random.default_rng(11)
    if shape == "keywords":
        runs = [_keyword_topics(rng, 60, 300, 30) for _ in range(3)]
    elif shape == "mixed":  # peaked and flat topics: the sampled topics' shapes vary most
        runs = [np.vstack([rng.dirichlet(np.full(300, 0.02), size=30), rng.dirichlet(np.full(300, 2.0), size=30)])
                for _ in range(3)]
    else:
        runs = _random_fits(rng, n_topics=60, n_words=300)
    exact = chance_test(runs, measure, rng=np.random.default_rng(12), observed=0.5, permutations=30,
                        sampled_topics=60)
    sampled = chance_test(runs, measure, rng=np.random.default_rng(13), observed=0.5, sampled_topics=15)
    assert exact.sampled_topics is None and exact.chance_error == 0.0
    assert sampled.sampled_topics == 15 and sampled.chance_error > 0
    assert abs(sampled.chance - exact.chance) <= sampled.chance_error
    assert sampled.chance >= exact.chance - 2 * sampled.chance_sd / np.sqrt(sampled.permutations)  # an upper estimate


def test_runs_of_unequal_size_shuffle_the_smaller_and_count_the_larger():
    rng = np.random.default_rng(14)
    runs = [rng.dirichlet(np.full(200, 0.1), size=8), rng.dirichlet(np.full(200, 0.1), size=16)]
    test = chance_test(runs, "jensen_shannon", rng=np.random.default_rng(15), sampled_topics=4)
    whole = chance_test(runs, "jensen_shannon", rng=np.random.default_rng(15), sampled_topics=16)
    # 8 matched pairs over the larger run's 16 topics: at most half of a perfect score
    assert test.chance <= 0.5 and whole.chance <= 0.5 and abs(test.chance - whole.chance) <= test.chance_error


def test_seeds_giving_one_fit_are_not_applicable_never_perfectly_stable():
    rng = np.random.default_rng(16)
    dense = _random_fits(rng, n_runs=1)[0]
    sparse = _keyword_topics(rng, 6, 100, 10)
    for fit in (dense, sparse):
        assert identical_fits([fit, fit.copy() if isinstance(fit, np.ndarray) else fit.take(np.arange(6)), fit])
        summary = seed_stability([fit, fit, fit], "jensen_shannon")
        assert summary.deterministic and summary.n_pairs == 3 and summary.scores == ()
        assert np.isnan(summary.mean_similarity)  # not 1.0: there is one fit, not three
        with pytest.raises(InputError, match="same fit: stability is not applicable"):
            chance_test([fit, fit], "jensen_shannon", rng=np.random.default_rng(0))
    assert NOT_APPLICABLE == "not applicable: deterministic, one fit"
    assert not identical_fits([dense, dense[::-1]])  # the same topics in another order are two fits
    assert not identical_fits([sparse, sparse.toarray()]) and not seed_stability([dense, dense[::-1]]).deterministic


def test_bad_settings_are_named():
    runs = _random_fits(np.random.default_rng(17), n_runs=2)
    with pytest.raises(InputError, match="permutations must be a positive integer"):
        chance_test(runs, rng=np.random.default_rng(0), permutations=0)
    with pytest.raises(InputError, match="sampled_topics must be a positive integer"):
        chance_test(runs, rng=np.random.default_rng(0), sampled_topics=True)
    with pytest.raises(InputError, match="rng must be a numpy Generator"):
        chance_test(runs, rng=0)
    with pytest.raises(InputError, match="two or more runs"):
        chance_test(runs[:1], rng=np.random.default_rng(0), observed=0.5)
    with pytest.raises(InputError, match=r"the runs have \[200, 300\] words"):
        chance_test([runs[0], runs[1][:, :200] / runs[1][:, :200].sum(axis=1, keepdims=True)],
                    rng=np.random.default_rng(0), observed=0.5)
    with pytest.raises(InputError, match="identical_fits compares two or more runs"):
        identical_fits(runs[:1])
