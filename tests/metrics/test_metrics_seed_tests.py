"""Intervals over seeds and the test for "best" (core/metrics/stats.py): the Student-t interval
covers at its level for n = 3, 5 and 10 where the seeds' range does not, a deterministic model is
said so, Welch's t and Holm's correction agree with scipy and a worked example, and the best is
bold only when it beats every other model after the correction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from topicbench.core.metrics.stats import (
    ALPHA, DETERMINISTIC, MIN_SEEDS_FOR_INTERVAL, best_against_rest, holm, seed_interval, summary_interval,
    welch_p_value,
)

#: Simulated experiments per n: the coverage's standard error is √(0.95 · 0.05 / 6000) ≈ 0.0028, so
#: the ±2% band is about 7 standard errors wide (a correct interval fails it essentially never).
SIMULATIONS = 6000


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_t_interval_over_seeds_covers_the_mean_95_percent_of_the_time(n):
    rng = np.random.default_rng(48 + n)
    true_mean = 0.08
    seeds = rng.normal(true_mean, 0.01, size=(SIMULATIONS, n))
    intervals = [seed_interval(row) for row in seeds]
    covered = np.mean([interval.low <= true_mean <= interval.high for interval in intervals])
    assert abs(covered - 0.95) <= 0.02, f"n = {n}: coverage {covered:.3f}"
    assert all(interval.n == n and interval.level == 1 - ALPHA for interval in intervals[:5])
    assert intervals[0].method == f"95% Student-t interval, n = {n} seeds (df {n - 1})"


def test_the_range_of_three_seeds_covers_only_three_quarters():
    # why not the percentile bootstrap over 3 seeds: its 2.5% and 97.5% quantiles are the min and max
    seeds = np.random.default_rng(0).normal(0.0, 1.0, size=(SIMULATIONS, 3))
    covered = np.mean((seeds.min(axis=1) <= 0.0) & (0.0 <= seeds.max(axis=1)))
    assert covered == pytest.approx(1 - 2 * 0.5 ** 3, abs=0.02)  # 0.75


def test_two_standard_errors_over_few_seeds_is_not_a_5_percent_test():
    # the rule this replaced: "beyond 2 se" at df 2 to 4 (3 seeds a side, Welch's df) rejects far more often
    assert 2 * stats.t.sf(2.0, 2) == pytest.approx(0.18, abs=0.005)
    assert 2 * stats.t.sf(2.0, 4) == pytest.approx(0.116, abs=0.005)


def test_no_interval_under_three_seeds_and_a_deterministic_model_is_said_so():
    assert MIN_SEEDS_FOR_INTERVAL == 3
    two = seed_interval([0.1, 0.2])
    assert not two.has_interval and two.n == 2 and "too few seeds" in two.method
    same = seed_interval([0.3, 0.3, 0.3])
    assert same.deterministic and not same.has_interval and same.method == DETERMINISTIC
    assert math.isnan(same.se)  # never an se of 0
    # from a summary: the same interval as from the values, and an sd of 0 up to rounding is deterministic
    values = [0.31, 0.35, 0.30, 0.33]
    direct, summary = seed_interval(values), summary_interval(np.mean(values), np.std(values, ddof=1), 4)
    assert (summary.low, summary.high) == pytest.approx((direct.low, direct.high))
    assert summary_interval(0.223, 3.4e-17, 3).deterministic and not summary_interval(0.223, 0.001, 3).deterministic
    low, high = stats.t.interval(0.95, 3, loc=np.mean(values), scale=stats.sem(values))
    assert (direct.low, direct.high) == pytest.approx((low, high))


def test_welch_agrees_with_scipy_and_a_deterministic_side_rests_on_the_other_sides_variance():
    a, b = [0.0930 - 0.0051, 0.0930, 0.0930 + 0.0051], [0.0853 - 0.0012, 0.0853, 0.0853 + 0.0012]
    assert welch_p_value(a, b) == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    assert 0.05 < welch_p_value(a, b) < 0.2  # the congress-models example: bold under 2 se, not at α = 0.05
    c, d = [1.2, 1.9, 1.4, 2.2, 1.7], [0.4, 1.1, 0.9]
    assert welch_p_value(c, d) == pytest.approx(stats.ttest_ind(c, d, equal_var=False).pvalue)
    # a deterministic side: the one-sample t of the other's seeds against its value (df n - 1)
    assert welch_p_value([0.5, 0.5, 0.5], c) == pytest.approx(stats.ttest_1samp(c, 0.5).pvalue)
    assert welch_p_value(c, [0.5, 0.5]) == pytest.approx(stats.ttest_1samp(c, 0.5).pvalue)
    # nothing to test: two deterministic sides (never on zero), or a single seed
    assert welch_p_value([0.5, 0.5, 0.5], [0.4, 0.4, 0.4]) is None
    assert welch_p_value([0.5], c) is None


def test_holm_against_a_worked_example():
    # p sorted 0.01 < 0.03 < 0.04: times 3, 2, 1 -> 0.03, 0.06, 0.04, then made monotone: 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.2, None, 0.01]) == [pytest.approx(0.2), None, pytest.approx(0.02)]  # untested kept in place
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_the_best_is_clear_only_when_it_beats_every_other_after_holm():
    best, runner_up, far = [0.30, 0.31, 0.32], [0.27, 0.28, 0.29], [0.10, 0.11, 0.12]
    found = best_against_rest([runner_up, best, far], higher=True)
    raw = [stats.ttest_ind(best, other, equal_var=False).pvalue for other in (runner_up, far)]
    expected = holm(raw)
    assert found.best == 1 and found.p_against(0) == pytest.approx(expected[0])
    assert found.p_against(2) == pytest.approx(expected[1])
    assert found.clear and all(p < ALPHA for p in expected)  # 0.03 apart at sd 0.01: Welch p ≈ 0.02
    # a close runner-up: one comparison not significant after Holm leaves the column without bold
    close = best_against_rest([best, [0.29, 0.31, 0.33], far], higher=True)
    assert close.best == 0 and not close.clear and close.p_against(2) < ALPHA
    # lower is better picks the lowest mean; a single seed on a side makes the column untestable
    assert best_against_rest([far, best], higher=False).best == 0
    assert not best_against_rest([best, [0.1]], higher=True).clear
    # two deterministic models: no bold on zero variance, however far apart
    assert not best_against_rest([[0.9, 0.9, 0.9], [0.1, 0.1, 0.1]], higher=True).clear
