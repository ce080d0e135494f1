"""The search's choice and recommendation rest on the report's noise: the one-standard-error rule
never uses an se of 0 (a deterministic model's seeds give one fit), "within noise" is Welch's t at
α = 0.05, and stability does not reward a model whose seeds give identical fits."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from topicbench.core.metrics.stats import DETERMINISTIC
from topicbench.core.search_space import STABILITY, Objective
from topicbench.core.selection import one_standard_error_choice
from topicbench.flows import search_choice
from topicbench.tasks.search.trial_results import identical_fits


def _study(trials: list, deterministic: bool = False, state: str = "COMPLETE"):
    """A study whose finished trials are ``trials`` as (point, {objective: per-seed values})."""
    made = [SimpleNamespace(number=i, state=SimpleNamespace(name=state), params=point,
                            user_attrs={"per_seed": per_seed, "seeds": [0, 1, 2], "run_ids": [],
                                        "fit_seconds": [1.0, 1.0, 1.0], "deterministic": deterministic})
            for i, (point, per_seed) in enumerate(trials)]
    return SimpleNamespace(finished_trials=lambda: made)


def test_the_one_standard_error_rule_never_uses_an_se_of_zero():
    # K=20's seeds gave one fit: its se is not 0 but undefined, so the rule falls back to the best mean
    choice = one_standard_error_choice([(10, [0.40, 0.50, 0.45]), (20, [0.47, 0.47, 0.47])], higher_is_better=True,
                                       log_messages=False)
    best = choice.summary(20)
    assert best.deterministic and math.isnan(best.se) and best.sd == 0.0
    assert not choice.rule_applied and choice.choice == 20 and choice.threshold == 0.47
    assert any(DETERMINISTIC in message for message in choice.messages)
    plan = SimpleNamespace(objectives=(Objective("npmi@10", True),))
    chosen = search_choice.choose(plan, "tiny", "nmf", _study([({"num_topics": 10}, {"npmi@10": [0.40, 0.50, 0.45]}),
                                                               ({"num_topics": 20}, {"npmi@10": [0.47] * 3})]))
    assert chosen.point == {"num_topics": 20} and DETERMINISTIC in chosen.rule and "se 0" not in chosen.rule


def test_stability_does_not_reward_a_deterministic_model():
    plan = SimpleNamespace(objectives=(Objective(STABILITY, True), Objective("npmi@10", True)))
    nan = [math.nan] * 3  # what the trial results hold for identical fits: not applicable
    elda = search_choice.choose(plan, "tiny", "elda", _study([({"kappa": 2.0}, {STABILITY: nan, "npmi@10": [0.1] * 3}),
                                                              ({"kappa": 1.0}, {STABILITY: nan, "npmi@10": [0.2] * 3})],
                                                             deterministic=True))
    assert "stability does not apply" in elda.rule and DETERMINISTIC in elda.rule and elda.best is None
    assert elda.point == {"kappa": 1.0}  # the simplest (smaller kappa: fewer topics)
    gibbs = search_choice.choose(plan, "tiny", "gibbs_lda", _study([
        ({"num_topics": 5}, {STABILITY: [0.80, 0.82, 0.81], "npmi@10": [0.10, 0.11, 0.12]})]))
    recommendation = search_choice.recommend(plan, [elda, gibbs])
    # the seeded model is recommended on stability; the deterministic one has none to win with
    assert recommendation.label == "gibbs_lda" and recommendation.undecided == () and recommendation.runners_up == ()
    assert not any("elda" in sentence and STABILITY in sentence for sentence in recommendation.disagreements)
    # the study marks such a trial failed (its stability is NaN); the choice reads it as finished with no
    # stability, and a model chosen on another objective still stands on it
    second = SimpleNamespace(objectives=(Objective("npmi@10", True), Objective(STABILITY, True)))
    failed = _study([({"kappa": 2.0}, {STABILITY: nan, "npmi@10": [0.1] * 3}),
                     ({"kappa": 1.0}, {STABILITY: nan, "npmi@10": [0.2] * 3})], deterministic=True, state="FAIL")
    on_npmi = search_choice.choose(second, "tiny", "elda", failed)
    assert on_npmi.point == {"kappa": 1.0} and DETERMINISTIC in on_npmi.rule
    assert search_choice.recommend(second, [on_npmi]).label == "elda"
    assert search_choice.choose(second, "tiny", "x", _study([({"kappa": 1.0}, {STABILITY: nan, "npmi@10": nan})],
                                                            deterministic=True, state="FAIL")).point is None


def test_a_deterministic_model_is_said_so_and_tested_on_the_other_models_seeds():
    plan = SimpleNamespace(objectives=(Objective("npmi@10", True),))
    nmf = search_choice.choose(plan, "tiny", "nmf", _study([({"num_topics": 5}, {"npmi@10": [0.093] * 3})]))
    close = search_choice.choose(plan, "tiny", "gibbs_lda", _study([({"num_topics": 5}, {"npmi@10": [0.08, 0.09, 0.10]})]))
    recommendation = search_choice.recommend(plan, [nmf, close])
    assert recommendation.label == "nmf"
    assert f"mean 0.093, {DETERMINISTIC} (3 seeds)" in recommendation.headline() and "se 0" not in recommendation.headline()
    # Gibbs's seeds cannot tell its mean from the deterministic 0.093 (one-sample t, p ≈ 0.66): within noise
    assert [label for label, _, _ in recommendation.runners_up] == ["gibbs_lda"]
    far = search_choice.choose(plan, "tiny", "gibbs_lda", _study([({"num_topics": 5}, {"npmi@10": [0.02, 0.021, 0.022]})]))
    assert search_choice.recommend(plan, [nmf, far]).runners_up == ()  # beyond its seeds' noise
    # two deterministic models are never told apart on zero variance
    other = search_choice.choose(plan, "tiny", "elda", _study([({"kappa": 1.0}, {"npmi@10": [0.05] * 3})]))
    both = search_choice.recommend(plan, [nmf, other])
    assert [label for label, _, _ in both.undecided] == ["elda"] and both.runners_up == ()


def test_identical_fits_are_found_exactly():
    fit = SimpleNamespace(topic_word_matrix=np.array([[0.5, 0.5], [0.1, 0.9]]))
    same = SimpleNamespace(topic_word_matrix=fit.topic_word_matrix.copy())
    other = SimpleNamespace(topic_word_matrix=np.array([[0.5, 0.5], [0.1 + 1e-12, 0.9 - 1e-12]]))
    smaller = SimpleNamespace(topic_word_matrix=np.array([[0.5, 0.5]]))
    assert identical_fits([fit, same, same]) and not identical_fits([fit, same, other])
    assert not identical_fits([fit, smaller])
