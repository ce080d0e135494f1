r"""Choosing a setting (K, or K and α, …) from per-seed scores: the one-standard-error rule and the
Pareto front of several objectives.

One-standard-error rule (Breiman, Friedman, Olshen & Stone 1984, ch. 3; Hastie, Tibshirani &
Friedman 2009, *The Elements of Statistical Learning*, 2nd ed., §7.10): for each point p of the
search space with finite per-seed scores x_{p,1..n_p},

    mean_p = (1/n_p) Σ_s x_{p,s},   sd_p = √(Σ_s (x_{p,s} − mean_p)² / (n_p − 1)),   se_p = sd_p / √n_p,

b = the point with the best mean, and the choice is the simplest point whose mean is within one
standard error of the best's: mean_p ≥ mean_b − se_b when higher is better (mean_p ≤ mean_b + se_b
when lower is). A point's seeds differ only by chance, so a simpler point that close to the best
is not shown to be worse. se is the standard error of the report's Student-t intervals
(:func:`topicbench.core.metrics.stats.seed_interval`). NaN scores (failed runs) are left out and
counted; a point with one finite score has no se, and neither has a deterministic point (its seeds
all gave the same fit: no seed variance, so an se of 0 would be no measure of noise); when the best
point has none the rule falls back to the best mean (the choice is then the simplest point tied
with it), which the result says. Ties in the best mean go to the simplest of the tied points.

A choice (or a best point) on the edge of the space, the smallest or largest value searched of a
numeric dimension, is flagged: a simpler setting (or a better one) may lie outside it, so widen the
space on that side.

>>> choice = one_standard_error_choice([(20, [0.50, 0.52]), (50, [0.55, 0.58]), (100, [0.56, 0.58])],
...                                    higher_is_better=True)
>>> choice.choice, choice.best
(50, 100)

References
----------
Breiman, Friedman, Olshen & Stone (1984), Classification and Regression Trees, Wadsworth, ch. 3.
Hastie, Tibshirani & Friedman (2009), The Elements of Statistical Learning, 2nd ed., Springer, §7.10.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .metrics.stats import ALPHA, DETERMINISTIC, is_deterministic, welch_p_value
from .validation import InputError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PointSummary:
    """One point's per-seed scores summarised.

    Attributes
    ----------
    point : object
        As given: a number (K), a tuple or a mapping of settings.
    mean, sd, se : float
        Over the finite scores; sd (ddof = 1) and se = sd / √n are NaN for fewer than two, mean for
        none; se is NaN for a deterministic point too.
    n : int
        Finite scores.
    n_excluded : int
        NaN scores left out.
    deterministic : bool
        Two or more finite scores, all the same: the seeds gave one fit (no seed variance).
    scores : tuple of float
        The finite scores (what :func:`beyond_noise` tests).
    """

    point: object
    mean: float
    sd: float
    se: float
    n: int
    n_excluded: int
    deterministic: bool = False
    scores: tuple = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class OneStandardErrorChoice:
    """What :func:`one_standard_error_choice` picked, and why.

    Attributes
    ----------
    choice, best : object
        The simplest point within one se of the best mean, and the point with the best mean.
    threshold : float
        mean_best − se_best (higher is better) or mean_best + se_best (lower is better); the best
        mean itself where se_best is undefined.
    higher_is_better : bool
    rule_applied : bool
        False when the best point's se is undefined (one finite score, or a deterministic point):
        the choice then falls back to the best mean.
    points : tuple of PointSummary
        Every point, simplest first.
    choice_edges, best_edges : tuple of str
        The numeric dimensions on whose smallest or largest searched value the choice (the best)
        sits, e.g. ``("smallest K",)``.
    messages : tuple of str
        What a report should say: the fallback, the edges (and how to widen the space), excluded
        NaN scores, a single point.
    """

    choice: object
    best: object
    threshold: float
    higher_is_better: bool
    rule_applied: bool
    points: tuple
    choice_edges: tuple
    best_edges: tuple
    messages: tuple

    @property
    def on_edge(self) -> bool:
        return bool(self.choice_edges or self.best_edges)

    def summary(self, point) -> PointSummary:
        """The summary of one point (as given)."""
        return next(s for s in self.points if s.point == point)


def one_standard_error_choice(points, *, higher_is_better: bool, complexity: Callable | None = None,
                              dimension_names=None, log_messages: bool = True) -> OneStandardErrorChoice:
    """Pick the simplest point whose mean score is within one standard error of the best mean.

    Parameters
    ----------
    points : sequence of (point, scores) pairs, or a mapping point -> scores
        Each point of the search space (a number such as K = 50, a tuple such as (K, α), or a
        mapping such as ``{"K": 50, "alpha": 0.1}``) with its objective's per-seed scores (NaN
        for a failed seed).
    higher_is_better : bool
        The objective's direction (e.g. True for coherence, False for perplexity).
    complexity : callable, optional
        ``complexity(point)`` -> a sort key, smaller is simpler (e.g. ``lambda p: (p["K"], -p["alpha"])``).
        Default: the points are given simplest first.
    dimension_names : sequence of str, optional
        Names of a tuple point's dimensions, for the edge messages (default "K" for a number,
        "dimension 0", "dimension 1", … for a tuple; a mapping's keys).
    log_messages : bool
        Log the result's messages as warnings (off where the caller shows them itself).

    Returns
    -------
    OneStandardErrorChoice
    """
    pairs = _check_points(points)
    if complexity is not None:
        pairs = sorted(pairs, key=lambda pair: complexity(pair[0]))  # stable: ties keep the given order
    summaries = tuple(_summarise(point, scores) for point, scores in pairs)
    scored = [s for s in summaries if s.n > 0]
    if not scored:
        raise InputError("no point has a finite score: every seed of every point failed (NaN)")
    sign = 1.0 if higher_is_better else -1.0
    best = max(scored, key=lambda s: sign * s.mean)  # max keeps the first (simplest) of tied means
    rule_applied = not math.isnan(best.se)
    threshold = best.mean - sign * best.se if rule_applied else best.mean
    choice = next(s for s in scored if sign * s.mean >= sign * threshold)
    names = _dimension_names(summaries[0].point, dimension_names)
    choice_edges = _edges(choice.point, [s.point for s in summaries], names)
    best_edges = _edges(best.point, [s.point for s in summaries], names)
    messages = _messages(summaries, choice, best, rule_applied, choice_edges, best_edges)
    for message in messages if log_messages else ():
        logger.warning(message)
    return OneStandardErrorChoice(
        choice=choice.point, best=best.point, threshold=float(threshold), higher_is_better=bool(higher_is_better),
        rule_applied=rule_applied, points=summaries, choice_edges=choice_edges, best_edges=best_edges,
        messages=messages,
    )


def summarise_scores(point, scores) -> PointSummary:
    """One point's per-seed ``scores`` (NaN for a failed seed) as a :class:`PointSummary`.

    >>> summary = summarise_scores("K=10", [0.1, 0.3, float("nan")])
    >>> round(summary.mean, 3), round(summary.se, 3), summary.n, summary.n_excluded
    (0.2, 0.1, 2, 1)
    """
    return _summarise(point, np.asarray(scores, dtype=np.float64).ravel())


def beyond_noise(better: PointSummary, worse: PointSummary, *, higher_is_better: bool) -> bool | None:
    """Whether ``better``'s mean beats ``worse``'s beyond the seeds' noise: better in the
    objective's direction, by Welch's t-test over their seeds at α = 0.05, the report's test
    (:func:`topicbench.core.metrics.stats.welch_p_value`; against a deterministic side, the
    one-sample t of the other's seeds). None where it cannot be tested: fewer than two finite
    scores on a side, or both deterministic (no seed variance: never a claim on zero).

    >>> a, b = summarise_scores("a", [0.50, 0.52, 0.51]), summarise_scores("b", [0.40, 0.42, 0.41])
    >>> beyond_noise(a, b, higher_is_better=True), beyond_noise(b, a, higher_is_better=True)
    (True, False)
    """
    p = welch_p_value(better.scores, worse.scores)
    if p is None:
        return None
    sign = 1.0 if higher_is_better else -1.0
    return bool(sign * (better.mean - worse.mean) > 0 and p < ALPHA)


def pareto_front(values, higher_is_better) -> np.ndarray:
    """Indices of the non-dominated points of several objectives (ascending).

    Point i is dominated when some point j is at least as good on every objective and better on
    one. Equal points do not dominate each other (both stay on the front). A point with a NaN
    objective is left off the front and dominates nothing.

    Parameters
    ----------
    values : array, shape (n_points, n_objectives)
        Each point's objective values (e.g. mean over seeds).
    higher_is_better : sequence of bool, length n_objectives

    Returns
    -------
    ndarray of int64

    >>> pareto_front([[1.0, 5.0], [2.0, 4.0], [1.0, 4.0]], [True, True]).tolist()
    [0, 1]
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or 0 in values.shape:
        raise InputError(f"values must be a non-empty 2-d array (points x objectives), got shape {values.shape}")
    directions = [bool(h) for h in np.atleast_1d(higher_is_better)] if not isinstance(higher_is_better, bool) else []
    if len(directions) != values.shape[1]:
        raise InputError(f"give one direction per objective: {values.shape[1]} objectives, "
                         f"higher_is_better = {higher_is_better!r}")
    if np.isinf(values).any():
        raise InputError("values hold infinite entries: record a failed point as NaN to leave it out")
    oriented = values * np.where(directions, 1.0, -1.0)  # larger is better on every objective now
    valid = ~np.isnan(oriented).any(axis=1)
    kept = oriented[valid]
    at_least = (kept[:, None, :] >= kept[None, :, :]).all(axis=2)  # [j, i]: j at least as good as i
    better = (kept[:, None, :] > kept[None, :, :]).any(axis=2)
    dominated = (at_least & better).any(axis=0)
    return np.flatnonzero(valid)[~dominated].astype(np.int64)


# ------------------------------------------------------------------------------------------------
# Inside
# ------------------------------------------------------------------------------------------------


def _check_points(points) -> list[tuple[object, np.ndarray]]:
    pairs = list(points.items()) if isinstance(points, Mapping) else list(points)
    if not pairs:
        raise InputError("no points to choose from: give (point, per-seed scores) pairs")
    checked = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InputError(f"each point must be a (point, per-seed scores) pair, got {pair!r}")
        point, scores = pair
        try:
            scores = np.asarray(scores, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InputError(f"point {point!r}: scores must be numbers (NaN for a failed seed)") from None
        if scores.size == 0:
            raise InputError(f"point {point!r} has no scores: give one per seed (NaN for a failed seed)")
        if np.isinf(scores).any():
            raise InputError(f"point {point!r} has an infinite score: record a failed seed as NaN to leave it out")
        if any(point == other for other, _ in checked):
            raise InputError(f"point {point!r} is listed twice: give each point once with all its seeds")
        checked.append((point, scores))
    return checked


def _summarise(point, scores: np.ndarray) -> PointSummary:
    finite = scores[~np.isnan(scores)]
    n = len(finite)
    mean = float(finite.mean()) if n else float("nan")
    sd = float(np.std(finite, ddof=1)) if n > 1 else float("nan")
    fixed = is_deterministic(finite)
    return PointSummary(point=point, mean=mean, sd=sd, se=sd / math.sqrt(n) if n > 1 and not fixed else float("nan"),
                        n=n, n_excluded=len(scores) - n, deterministic=fixed, scores=tuple(float(v) for v in finite))


def _coordinates(point) -> list:
    if isinstance(point, Mapping):
        return list(point.values())
    if isinstance(point, tuple):
        return list(point)
    return [point]


def _dimension_names(point, names) -> list[str]:
    count = len(_coordinates(point))
    if names is not None:
        names = [str(name) for name in names]
        if len(names) != count:
            raise InputError(f"{len(names)} dimension names for points of {count} dimensions")
        return names
    if isinstance(point, Mapping):
        return [str(key) for key in point]
    return [f"dimension {i}" for i in range(count)] if isinstance(point, tuple) else ["K"]


def _edges(point, all_points, names) -> tuple[str, ...]:
    """The numeric dimensions (more than one value searched) on whose extreme value ``point`` sits."""
    found = []
    columns = list(zip(*(_coordinates(p) for p in all_points)))
    for name, value, column in zip(names, _coordinates(point), columns):
        numeric = all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in column)
        if not numeric or len(set(column)) < 2:
            continue
        if value == min(column):
            found.append(f"smallest {name}")
        elif value == max(column):
            found.append(f"largest {name}")
    return tuple(found)


def _messages(summaries, choice, best, rule_applied, choice_edges, best_edges) -> tuple:
    messages = []
    if len(summaries) == 1:
        messages.append("only one point was searched: nothing was compared; search several settings")
    if not rule_applied and best.deterministic:
        messages.append(f"the best point {best.point!r} is {DETERMINISTIC} (its {best.n} seeds gave the same fit): it "
                        "has no standard error, so the one-standard-error rule falls back to the best mean")
    elif not rule_applied:
        messages.append(f"the best point {best.point!r} has {best.n} finite score: its standard error is undefined, "
                        "so the one-standard-error rule falls back to the best mean; run more seeds")
    for role, point, edges in (("choice", choice.point, choice_edges), ("best point", best.point, best_edges)):
        if role == "best point" and best is choice:
            continue  # said once, for the choice
        what = "the choice (also the best point)" if role == "choice" and best is choice else f"the {role}"
        for edge in edges:
            side = "below" if edge.startswith("smallest") else "above"
            messages.append(f"{what} {point!r} sits at the {edge} searched: what lies beyond is unknown; "
                            f"widen the space {side} it")
    unscored = [s.point for s in summaries if s.n == 0]
    if unscored:
        messages.append(f"{len(unscored)} point(s) had no finite score and were left out: {unscored!r}")
    excluded = sum(s.n_excluded for s in summaries)
    if excluded:
        messages.append(f"{excluded} NaN score(s) (failed seeds) were left out of the means")
    return tuple(messages)
