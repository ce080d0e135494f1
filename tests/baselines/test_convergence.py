"""The tail rule of convergence: a line through the last 20% of a loss curve, its fall weighed
against the curve's noise there and against its model family's threshold."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.convergence import (
    CONVERGENCE_THRESHOLDS, convergence, convergence_threshold, describe_rule, tail_trend,
)
from topicbench.baselines.registry import MODELS

STEPS = np.arange(0, 1001, 10)  # a Gibbs curve: every 10 sweeps up to 1000


def test_a_flat_tail_has_converged():
    losses = 7.5 + 2.0 * np.exp(-STEPS / 50.0)  # settled long before the tail
    verdict = convergence(losses, STEPS, "gibbs")
    assert verdict["convergence"] == "converged" and verdict["converged"] is True
    assert verdict["training_loss_tail_fall"] < 1e-6 and verdict["convergence_threshold"] == 0.001


def test_a_slowly_but_steadily_falling_tail_is_still_improving():
    # falling 0.3% of the loss over the last 200 sweeps, with little noise: a real, unfinished fall
    rng = np.random.default_rng(1)
    losses = 7.5 * (1.0 - 0.015 * STEPS / 1000.0) + rng.normal(0.0, 0.001, STEPS.size)
    verdict = convergence(losses, STEPS, "gibbs")
    assert verdict["convergence"] == "still improving" and verdict["converged"] is False
    assert verdict["training_loss_tail_fall"] == pytest.approx(0.015 * 0.2 / (1 - 0.015 * 0.9), rel=0.1)
    assert verdict["training_loss_tail_p_value"] < 1e-6


def test_a_noisy_flat_tail_has_converged():
    # the noise (1% of the loss) dwarfs any slope: no fall the test can see
    rng = np.random.default_rng(2)
    losses = 7.5 + rng.normal(0.0, 0.075, STEPS.size)
    for seed in range(5):  # not one lucky draw
        noisy = 7.5 + np.random.default_rng(seed).normal(0.0, 0.075, STEPS.size)
        assert convergence(noisy, STEPS, "gibbs")["convergence"] == "converged"
    assert convergence(losses, STEPS, "gibbs")["training_loss_tail_p_value"] > 0.05


def test_an_hdp_like_curve_still_falling_at_sweep_1000_is_still_improving():
    # HDP on the man pages: negative LL per word ≈ 7.6, falling 0.00197 of it over the last 100
    # sweeps (the old rule's "relative change", under its 1%: "converged"), sampler noise ≈ 0.003
    rng = np.random.default_rng(3)
    losses = 7.6 + 0.8 * np.exp(-STEPS / 80.0) + 0.015 * (1000 - STEPS) / 100 + rng.normal(0.0, 0.003, STEPS.size)
    old_change = abs(losses[-1] - losses[-11]) / losses[-1]
    assert 0.001 < old_change < 0.01  # what the old rule called converged
    verdict = convergence(losses, STEPS, "gibbs")
    assert verdict["convergence"] == "still improving"
    assert verdict["training_loss_tail_fall"] > CONVERGENCE_THRESHOLDS["gibbs"]
    # the same fall is within the more lenient neural threshold
    assert convergence(losses, STEPS, "neural")["convergence"] == "converged"


def test_a_significant_fall_under_the_threshold_has_converged():
    losses = 100.0 - 0.0001 * np.arange(50)  # exactly on its line: significant, but 0.001% of the loss
    verdict = convergence(losses, family="variational")
    assert verdict["training_loss_tail_p_value"] < 1e-10 and verdict["convergence"] == "converged"
    # a rising tail (a bound that overshoots) is not "still improving"
    assert convergence(np.linspace(1.0, 2.0, 20), family="neural")["convergence"] == "converged"


def test_a_negative_loss_is_judged_on_its_magnitude():
    falling = -10.0 - np.linspace(0.0, 1.0, 20)  # -10 to -11: a fall of 5% of the level per tail
    assert convergence(falling, family="neural")["convergence"] == "still improving"
    assert tail_trend(falling)[0] > 0


def test_too_short_or_broken_curves_say_nothing():
    assert convergence([3.0, 2.0])["convergence"] == "too short to tell"
    assert convergence([3.0, float("nan"), 1.0, 0.5])["converged"] is False
    assert np.isnan(tail_trend([1.0])[0])


def test_every_family_has_a_threshold_and_unknown_ones_are_refused():
    families = {model.convergence_family for model in map(MODELS.get, ("gibbs_lda", "hdp", "gensim_lda", "prodlda",
                                                                       "etm", "ctm", "fastopic"))}
    assert families == {"gibbs", "variational", "neural"}
    assert convergence_threshold("") == CONVERGENCE_THRESHOLDS["default"]
    with pytest.raises(ValueError, match="unknown convergence family 'vae'; known: .*gibbs"):
        convergence([3.0, 2.0, 1.0], family="vae")
    assert describe_rule(0.001) == "tail rule, fall over 0.1% (gibbs, variational)"
