"""Search spaces and objectives: what a grid walks, what a range is, and each bad space a one-line error."""

from __future__ import annotations

import pytest

from topicbench.core.metrics.registry import METRICS
from topicbench.core.search_space import (
    SearchSpace, parse_objective, point_complexity, point_label, point_model,
)
from topicbench.core.validation import InputError


def direction(metric: str) -> bool:
    return METRICS.get(metric).higher_is_better


def test_a_grid_walks_every_point_k_first_simplest_first():
    space = SearchSpace.from_dict("gibbs", {"alpha": [0.1, 1.0], "num_topics": [10, 20]})
    assert space.names == ("num_topics", "alpha")
    assert space.grid() == [{"num_topics": 10, "alpha": 0.1}, {"num_topics": 10, "alpha": 1.0},
                            {"num_topics": 20, "alpha": 0.1}, {"num_topics": 20, "alpha": 1.0}]
    assert sorted(space.grid(), key=point_complexity)[0] == {"num_topics": 10, "alpha": 0.1}


def test_a_stepped_range_is_a_grid_of_its_steps():
    assert SearchSpace.from_dict("m", {"num_topics": {"low": 20, "high": 60, "step": 20}}).grid() == [
        {"num_topics": 20}, {"num_topics": 40}, {"num_topics": 60}]
    kappas = SearchSpace.from_dict("m", {"kappa": {"low": 1.0, "high": 2.0, "step": 0.5}}).grid()
    assert kappas == [{"kappa": 1.0}, {"kappa": 1.5}, {"kappa": 2.0}]


def test_a_sampler_checks_each_ranges_ends_and_each_listed_value():
    space = SearchSpace.from_dict("m", {"num_topics": {"low": 5, "high": 50}, "alpha": [0.1, 1.0]})
    assert space.checked_points("tpe") == [{"num_topics": 5, "alpha": 0.1}, {"num_topics": 50, "alpha": 0.1},
                                           {"num_topics": 5, "alpha": 0.1}, {"num_topics": 5, "alpha": 1.0}]


def test_a_point_overrides_the_configured_model():
    assert point_model(20, {"alpha": 0.1, "iterations": 50}, {"num_topics": 40, "alpha": 1.0}) == (
        40, {"alpha": 1.0, "iterations": 50})
    assert point_model(None, {}, {"kappa": 2}) == (None, {"kappa": 2})
    assert point_label("gibbs", {"num_topics": 40, "alpha": 0.5}) == "gibbs[num_topics=40,alpha=0.5]"
    assert point_label("elda", {}) == "elda"


@pytest.mark.parametrize("space, message", [
    ({}, "the space is empty"),
    (None, "the space is empty"),
    ({"num_topics": []}, "the list of values is empty"),
    ({"num_topics": [1, 10]}, "K must be at least 2, got 1"),
    ({"num_topics": [0]}, "K must be at least 2, got 0"),
    ({"num_topics": {"low": 1, "high": 10}}, "K must be at least 2, got 1"),
    ({"num_topics": [2.5]}, "K is a whole number"),
    ({"num_topics": [10, 10]}, "a value repeats"),
    ({"num_topics": {"low": 30, "high": 10}}, "low must be below high"),
    ({"num_topics": {"low": 10, "high": 30, "step": 0}}, "step: must be above 0"),
    ({"alpha": {"low": 0, "high": 1, "log": True}}, "a log range needs low > 0"),
    ({"alpha": {"low": 0.1, "high": 1, "base": 2}}, "a range is {low, high}"),
    ({"alpha": "0.1"}, "give a list of values or a range"),
    ({"alpha": {"low": "a", "high": 1}}, "low: a number"),
])
def test_a_bad_space_is_one_line_naming_the_field(space, message):
    with pytest.raises(InputError, match="search.spaces.gibbs") as error:
        SearchSpace.from_dict("gibbs", space, where="search.spaces")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_grid_over_a_range_needs_a_step_and_stays_bounded():
    with pytest.raises(InputError, match="a grid needs a list or a range with a step"):
        SearchSpace.from_dict("m", {"alpha": {"low": 0.1, "high": 1.0}}).grid()
    with pytest.raises(InputError, match="a grid takes at most"):
        SearchSpace.from_dict("m", {"num_topics": {"low": 2, "high": 10**6, "step": 1}}).grid()


@pytest.mark.parametrize("name, key, higher", [
    ("npmi@10", "npmi@10", True), ("perplexity", "perplexity", False), ("stability", "stability", True),
    ("umass@5", "umass@5", True), ("classification_macro_f1", "classification_macro_f1", True),
])
def test_objectives_name_a_score_and_carry_its_direction(name, key, higher):
    metrics = ("npmi", "umass", "perplexity", "classification")
    objective = parse_objective(name, metrics, (5, 10), direction, "objectives[0]")
    assert (objective.key, objective.higher_is_better) == (key, higher)
    assert objective.direction == ("maximize" if higher else "minimize")


@pytest.mark.parametrize("name, message", [
    ("npmi", "give one, e.g. npmi@5 or npmi@10"),
    ("npmi@20", "N must be one of the config's top_n [5, 10]"),
    ("cv@10", "which is not in the config's metrics"),
    ("coherence", "no metric returns 'coherence'"),
    ("perplexity@10", "is not scored per N"),
    ("classification", "returns classification_accuracy, classification_macro_f1"),
    ("", "an objective is a score name"),
])
def test_an_objective_no_metric_returns_is_refused(name, message):
    with pytest.raises(InputError) as error:
        parse_objective(name, ("npmi", "perplexity", "classification"), (5, 10), direction, "objectives[0]")
    assert message in str(error.value)


@pytest.mark.parametrize("data, size", [
    ({"num_topics": [10, 20, 40]}, 3),
    ({"num_topics": {"low": 2, "high": 9, "step": 3}}, 3),  # 2, 5, 8: what a grid walks and a sampler picks from
    ({"num_topics": {"low": 2, "high": 6}}, 5),  # a sampler's integers
    ({"num_topics": [10, 20], "alpha": [0.1, 1.0, "auto"]}, 6),
    ({"num_topics": [10, 20], "alpha": {"low": 0.01, "high": 1.0, "log": True}}, None),  # endless: floats
])
def test_a_space_knows_how_many_points_it_holds(data, size):
    """What a study stops at once it has asked every point (a sampler asked for more trials than that)."""
    assert SearchSpace.from_dict("m", data).size() == size
