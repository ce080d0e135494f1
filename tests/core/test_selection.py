"""Choosing a setting: the one-standard-error rule on hand-made tables, and the Pareto front."""

from __future__ import annotations

import doctest
import logging
import math

import numpy as np
import pytest

from topicbench.core import selection as selection_module
from topicbench.core.selection import one_standard_error_choice, pareto_front
from topicbench.core.validation import InputError

#: Coherence-like scores (higher is better) of K = 10 ... 200 over three seeds.
TABLE = [
    (10, [0.30, 0.32, 0.34]),   # mean 0.32
    (20, [0.40, 0.42, 0.44]),   # mean 0.42
    (50, [0.51, 0.54, 0.57]),   # mean 0.54
    (100, [0.52, 0.55, 0.58]),  # mean 0.55 (the best), sd 0.03, se 0.03 / sqrt(3) ≈ 0.01732
    (200, [0.50, 0.52, 0.54]),  # mean 0.52
]


def test_the_rule_picks_the_simplest_point_within_one_se_of_the_best():
    choice = one_standard_error_choice(TABLE, higher_is_better=True)
    # threshold 0.55 - 0.01732 = 0.53268: K = 50 (0.54) is in, K = 20 (0.42) is not -> 50, not the argmax 100
    assert choice.best == 100 and choice.choice == 50
    assert choice.threshold == pytest.approx(0.55 - 0.03 / math.sqrt(3), abs=1e-12)
    assert choice.rule_applied and not choice.on_edge and choice.messages == ()
    best = choice.summary(100)
    assert (best.mean, best.sd, best.se, best.n, best.n_excluded) == pytest.approx((0.55, 0.03, 0.03 / math.sqrt(3), 3, 0))
    assert [s.point for s in choice.points] == [10, 20, 50, 100, 200]


def test_lower_is_better_mirrors_the_rule():
    perplexity = [(k, [-x for x in scores]) for k, scores in TABLE]
    choice = one_standard_error_choice(perplexity, higher_is_better=False)
    assert (choice.best, choice.choice) == (100, 50)
    assert choice.threshold == pytest.approx(-0.55 + 0.03 / math.sqrt(3), abs=1e-12)


def test_a_choice_on_the_smallest_k_warns_to_widen_the_space(caplog):
    table = [(10, [0.50, 0.52, 0.54]), (20, [0.51, 0.53, 0.55]), (50, [0.49, 0.50, 0.51])]
    # best K = 20 (0.53, se 0.01155): K = 10 (0.52) is within one se -> the smallest K searched
    with caplog.at_level(logging.WARNING, logger="topicbench.core.selection"):
        choice = one_standard_error_choice(table, higher_is_better=True)
    assert (choice.choice, choice.best) == (10, 20)
    assert choice.choice_edges == ("smallest K",) and choice.best_edges == () and choice.on_edge
    assert any("smallest K" in m and "widen the space below" in m for m in choice.messages)
    assert any("widen the space below" in record.getMessage() for record in caplog.records)


def test_a_best_and_choice_on_the_largest_k_warn_once():
    table = [(10, [0.30, 0.31]), (20, [0.40, 0.41]), (50, [0.60, 0.61])]
    choice = one_standard_error_choice(table, higher_is_better=True)
    assert choice.choice == choice.best == 50
    assert choice.choice_edges == choice.best_edges == ("largest K",)
    assert len(choice.messages) == 1 and "widen the space above" in choice.messages[0]


def test_one_seed_falls_back_to_the_best_mean():
    table = [(10, [0.50]), (20, [0.60]), (50, [0.60]), (100, [0.55])]
    choice = one_standard_error_choice(table, higher_is_better=True)
    # no se at the best point: threshold = best mean 0.60; the tie 20 / 50 goes to the simpler 20
    assert not choice.rule_applied and choice.best == choice.choice == 20 and choice.threshold == 0.60
    assert all(math.isnan(s.sd) and math.isnan(s.se) for s in choice.points)
    assert any("falls back to the best mean" in m for m in choice.messages)


def test_nan_scores_are_left_out_and_counted():
    table = [(10, [0.40, np.nan, 0.44]), (20, [0.5, np.nan, 0.7]), (50, [np.nan, np.nan, np.nan]), (100, [0.45, 0.47, 0.49])]
    choice = one_standard_error_choice(table, higher_is_better=True)
    k20 = choice.summary(20)
    # K = 20: mean 0.6 over two seeds, sd = sqrt(0.02) ≈ 0.14142, se = 0.1 -> threshold 0.5
    assert (k20.mean, k20.n, k20.n_excluded) == pytest.approx((0.6, 2, 1))
    assert k20.se == pytest.approx(0.1, abs=1e-12)
    assert choice.best == 20 and choice.threshold == pytest.approx(0.5, abs=1e-12)
    assert choice.choice == 20  # K = 10: 0.42 < 0.5
    assert math.isnan(choice.summary(50).mean) and choice.summary(50).n == 0
    assert any("no finite score" in m and "[50]" in m for m in choice.messages)
    assert any("5 NaN score(s)" in m for m in choice.messages)
    with pytest.raises(InputError, match="no point has a finite score"):
        one_standard_error_choice([(10, [np.nan]), (20, [np.nan])], higher_is_better=True)


def test_a_single_point_is_its_own_choice():
    choice = one_standard_error_choice({50: [0.5, 0.6]}, higher_is_better=True)
    assert choice.choice == choice.best == 50 and choice.choice_edges == ()
    assert choice.messages == ("only one point was searched: nothing was compared; search several settings",)


def test_settings_with_a_complexity_order_and_edges_per_dimension():
    points = [
        ({"K": 100, "alpha": 0.1, "generator": "a"}, [0.60, 0.62]),
        ({"K": 50, "alpha": 1.0, "generator": "a"}, [0.595, 0.615]),
        ({"K": 50, "alpha": 0.1, "generator": "b"}, [0.50, 0.52]),
        ({"K": 20, "alpha": 0.1, "generator": "a"}, [0.40, 0.42]),
    ]
    # simpler: fewer topics, then larger alpha (smoother); best {100, 0.1} 0.61, se 0.01 -> threshold 0.60
    choice = one_standard_error_choice(points, higher_is_better=True, complexity=lambda p: (p["K"], -p["alpha"]))
    assert [s.point["K"] for s in choice.points] == [20, 50, 50, 100]
    assert choice.choice == {"K": 50, "alpha": 1.0, "generator": "a"}
    assert choice.choice_edges == ("largest alpha",)  # K = 50 is inside; the text dimension is not numeric
    assert choice.best_edges == ("largest K", "smallest alpha")
    tuples = one_standard_error_choice([((20, 0.1), [1.0, 1.0]), ((50, 0.1), [2.0, 2.0])], higher_is_better=True,
                                       dimension_names=["K", "alpha"])
    assert tuples.choice_edges == ("largest K",)  # alpha has one value: no edge


def test_bad_tables_name_the_problem():
    with pytest.raises(InputError, match="no points"):
        one_standard_error_choice([], higher_is_better=True)
    with pytest.raises(InputError, match="listed twice"):
        one_standard_error_choice([(10, [1.0]), (10, [2.0])], higher_is_better=True)
    with pytest.raises(InputError, match="infinite score"):
        one_standard_error_choice([(10, [np.inf])], higher_is_better=False)
    with pytest.raises(InputError, match=r"\(point, per-seed scores\) pair"):
        one_standard_error_choice([10, 20], higher_is_better=True)
    with pytest.raises(InputError, match="has no scores"):
        one_standard_error_choice([(10, [])], higher_is_better=True)


def test_pareto_front_by_hand():
    # objectives: coherence (higher is better), perplexity (lower is better)
    values = np.array([
        [0.50, 900.0],   # 0: on the front (best perplexity)
        [0.60, 1000.0],  # 1: on the front
        [0.55, 1100.0],  # 2: dominated by 1
        [0.70, 1200.0],  # 3: on the front (best coherence)
        [0.60, 1000.0],  # 4: equal to 1, so neither dominates: on the front
        [0.40, 950.0],   # 5: dominated by 0
        [np.nan, 100.0], # 6: NaN: left off
    ])
    assert pareto_front(values, [True, False]).tolist() == [0, 1, 3, 4]
    assert pareto_front(values[:, :1], [True]).tolist() == [3]
    with pytest.raises(InputError, match="one direction per objective"):
        pareto_front(values, [True])
    with pytest.raises(InputError, match="infinite"):
        pareto_front([[np.inf, 1.0]], [True, True])


def test_docstring_examples():
    assert doctest.testmod(selection_module).failed == 0
