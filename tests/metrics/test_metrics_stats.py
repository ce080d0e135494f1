"""Statistics across seeds: summaries and paired tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from topicbench.core.metrics.stats import paired_test, summarize, summarize_runs
from topicbench.core.validation import InputError


def test_summary_by_hand():
    summary = summarize([1.0, 2.0, 3.0, 4.0])
    assert summary.mean == 2.5
    assert summary.sd == pytest.approx(math.sqrt(5 / 3))  # (2.25 + 0.25 + 0.25 + 2.25) / 3
    assert (summary.n, summary.minimum, summary.maximum) == (4, 1.0, 4.0)
    assert math.isnan(summarize([7.0]).sd)


def test_paired_t_test_by_hand():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([0.5, 1.5, 2.0, 3.9])
    d = a - b  # 0.5 0.5 1.0 0.1
    t = d.mean() / (d.std(ddof=1) / math.sqrt(4))
    p = 2 * scipy_stats.t.sf(abs(t), df=3)
    result = paired_test(a, b)
    assert result.statistic == pytest.approx(t)
    assert result.p_value == pytest.approx(p)
    assert result.mean_difference == pytest.approx(0.525)


def test_wilcoxon_exact_p_value_by_hand():
    # all six differences positive and distinct: the exact two-sided p is 2 / 2^6
    a = np.arange(6, dtype=float) + np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    b = np.arange(6, dtype=float)
    assert paired_test(a, b, test="wilcoxon").p_value == pytest.approx(2 / 64)


def test_degenerate_and_invalid_inputs():
    assert paired_test([1.0, 2.0], [1.0, 2.0]).p_value == 1.0
    shifted = paired_test([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert shifted.p_value == 0.0 and shifted.statistic == math.inf
    with pytest.raises(InputError, match="same seeds"):
        paired_test([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="at least two seeds"):
        paired_test([1.0], [2.0])
    with pytest.raises(InputError, match="test must be one of"):
        paired_test([1.0, 2.0], [2.0, 3.0], test="sign")
    with pytest.raises(InputError, match="NaN or infinite"):
        summarize([1.0, float("nan")])


def test_summarize_runs():
    runs = [{"npmi@10": 0.1, "cv@10": 0.5}, {"npmi@10": 0.3, "cv@10": 0.7}]
    summary = summarize_runs(runs)
    assert summary["npmi@10"].mean == pytest.approx(0.2)
    assert summary["cv@10"].sd == pytest.approx(math.sqrt(0.02))
    with pytest.raises(InputError, match="missing from some runs"):
        summarize_runs([{"a": 1.0}, {"b": 2.0}])
