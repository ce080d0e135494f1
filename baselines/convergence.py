"""Whether an iterative fit's loss curve has stopped improving: the tail rule, per model family.

A curve is **still improving** when, over its last :data:`TAIL_FRACTION` of points, the
least-squares line falls (a one-sided t-test of its slope against the curve's noise there, the
residual standard deviation, at :data:`~topicbench.core.metrics.stats.ALPHA`) and the fitted fall
over the tail, relative to the loss's level, is larger than its family's threshold
(:data:`CONVERGENCE_THRESHOLDS`). Otherwise it has **converged**: flat, or moving less than the
threshold, or moving no more than its noise explains. Looking at the whole tail, not its two
ends, keeps a sampler's wander from deciding either way; the threshold keeps a slope that is
real but too small to change any score from counting as "still improving".
"""

from __future__ import annotations

import math

import numpy as np

from topicbench.core.metrics.stats import ALPHA

#: The share of a curve's points (its last ones) the rule fits a line to.
TAIL_FRACTION = 0.20
#: The fewest points a line is fitted to (a tail shorter than this takes the last this many).
MIN_TAIL_POINTS = 3

#: Per model family: the fitted fall of the loss over the tail, relative to the loss's level, above
#: which a significant fall means "still improving". ``TopicModel.convergence_family`` names the row.
CONVERGENCE_THRESHOLDS = {
    # tomotopy's collapsed Gibbs samplers (Gibbs LDA, HDP): the loss is the negative log-likelihood
    # per word (≈ 7-9), so a 0.1% fall is ≈ 0.008 nats, a perplexity ≈ 0.8% lower: still worth
    # sweeps. HDP's tail that fell 0.4% while the old end-to-end rule said "converged" is over it.
    "gibbs": 0.001,
    # gensim's variational LDA: the loss is the negative bound per word, deterministic given the
    # seed and smooth pass to pass, so the same 0.1% is a real change of the same size as Gibbs's.
    "variational": 0.001,
    # neural models (ProdLDA, ETM, CTM, FASTopic): minibatch losses per epoch keep creeping down as
    # the network fits its training set; under 0.5% over the last 20% of epochs the topics no
    # longer move in our runs, and asking for less would call nearly every neural fit unfinished.
    "neural": 0.005,
    # a model (e.g. a plugin) that names no family: the neural value, the most lenient one, so an
    # unknown loss is not called unfinished on a change the others would tolerate.
    "default": 0.005,
}


def convergence_threshold(family: str) -> float:
    """The threshold of ``family`` (a key of :data:`CONVERGENCE_THRESHOLDS`; ``""`` is
    ``"default"``); a ValueError naming the known families otherwise."""
    family = family or "default"
    if family not in CONVERGENCE_THRESHOLDS:
        raise ValueError(f"unknown convergence family {family!r}; known: {sorted(CONVERGENCE_THRESHOLDS)}")
    return CONVERGENCE_THRESHOLDS[family]


def tail_trend(losses, steps=None) -> tuple[float, float]:
    """The least-squares line through the last :data:`TAIL_FRACTION` of ``losses`` (at ``steps``,
    default 0, 1, ...): its fitted fall over the tail relative to the loss's level (positive when
    the loss falls), and the one-sided p-value that the loss falls (t-test of the slope, n - 2
    degrees of freedom; 0 or 1 where the tail lies exactly on its line). NaN, NaN where fewer than
    :data:`MIN_TAIL_POINTS` points are finite."""
    losses = np.asarray(losses, dtype=np.float64)
    steps = np.arange(losses.size, dtype=np.float64) if steps is None else np.asarray(steps, dtype=np.float64)
    if losses.size < MIN_TAIL_POINTS or not np.all(np.isfinite(losses)):
        return math.nan, math.nan
    size = max(MIN_TAIL_POINTS, int(math.ceil(TAIL_FRACTION * losses.size)))
    x, y = steps[-size:], losses[-size:]
    centred = x - x.mean()
    spread = float(np.sum(centred**2))
    slope = float(np.sum(centred * (y - y.mean())) / spread)
    residuals = y - (y.mean() + slope * centred)
    noise = math.sqrt(float(np.sum(residuals**2)) / (size - 2))
    fall = -slope * float(x[-1] - x[0]) / max(abs(float(np.mean(y))), np.finfo(float).tiny)
    standard_error = noise / math.sqrt(spread)
    if standard_error <= 1e-12 * max(abs(slope), np.finfo(float).tiny):  # on its line: no noise to weigh
        return fall, 0.0 if slope < 0 else 1.0
    # imported here: every model class imports this module, and a config's check (before any fit)
    # has no use for scipy.stats (about 1 s of CPU)
    from scipy import stats as scipy_stats

    return fall, float(scipy_stats.t.sf(-slope / standard_error, size - 2))


def convergence(losses, steps=None, family: str = "") -> dict:
    """The ``extra`` entries of a loss curve's verdict under its family's tail rule:
    ``converged`` (bool), ``convergence`` (``"converged"``, ``"still improving"``, or ``"too
    short to tell"`` under :data:`MIN_TAIL_POINTS` finite points, not converged),
    ``training_loss_tail_fall`` and ``training_loss_tail_p_value`` (:func:`tail_trend`) and
    ``convergence_threshold``."""
    threshold = convergence_threshold(family)
    fall, p_value = tail_trend(losses, steps)
    if math.isnan(fall):
        verdict = "too short to tell"
    else:
        verdict = "still improving" if p_value < ALPHA and fall > threshold else "converged"
    return {"converged": verdict == "converged", "convergence": verdict, "training_loss_tail_fall": fall,
            "training_loss_tail_p_value": p_value, "convergence_threshold": threshold}


def describe_rule(threshold: float) -> str:
    """The tail rule at ``threshold``, briefly (a table cell), naming the families it is the
    threshold of: "tail rule, fall over 0.1% (gibbs, variational)"."""
    families = [name for name, value in CONVERGENCE_THRESHOLDS.items() if value == threshold and name != "default"]
    named = f" ({', '.join(families)})" if families else ""
    return f"tail rule, fall over {threshold:.1%}{named}"


def tail_rule_in_words() -> str:
    """The tail rule and every family's threshold, in one sentence (the report states it once)."""
    thresholds = ", ".join(f"{name} {value:.1%}" for name, value in CONVERGENCE_THRESHOLDS.items())
    return (f"A loss curve is still improving when the least-squares line through its last {TAIL_FRACTION:.0%} "
            f"of points falls significantly against the curve's noise there (one-sided t-test of the slope on "
            f"the residual sd, p below {ALPHA:g}) and its fitted fall over that tail, relative to the loss, is over its "
            f"model family's threshold ({thresholds}); otherwise it has converged.")
