r"""Statistics across seeds: mean, standard deviation and paired tests between two models.

For scores x_1..x_n of one model over n seeds: mean x̄ = (1/n) Σ x_s and the sample standard
deviation sd = sqrt(Σ (x_s − x̄)² / (n − 1)). Two models run on the same seeds (or corpora) are
compared on the paired differences d_s = a_s − b_s:

- ``"t"``: paired t-test, t = d̄ / (sd_d / √n), two-sided p from Student's t with n − 1 degrees
  of freedom (``scipy.stats.ttest_rel``);
- ``"wilcoxon"``: Wilcoxon signed-rank test on d_s (``scipy.stats.wilcoxon``), for scores that
  need not be normal.

>>> round(summarize([1.0, 2.0, 3.0]).sd, 6)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import InputError

#: Paired tests available.
PAIRED_TESTS = ("t", "wilcoxon")


@dataclass(frozen=True)
class SeedSummary:
    """Mean and sample standard deviation (ddof = 1; NaN for a single seed) of n scores."""

    mean: float
    sd: float
    n: int
    minimum: float
    maximum: float

    def as_dict(self) -> dict:
        return {"mean": self.mean, "sd": self.sd, "n": self.n, "min": self.minimum, "max": self.maximum}


@dataclass(frozen=True)
class PairedTest:
    """A paired test of a against b: the mean difference a − b, the statistic and its p-value."""

    test: str
    statistic: float
    p_value: float
    mean_difference: float
    n: int

    def as_dict(self) -> dict:
        return {"test": self.test, "statistic": self.statistic, "p_value": self.p_value,
                "mean_difference": self.mean_difference, "n": self.n}


def _scores(values, what: str = "scores") -> np.ndarray:
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise InputError(f"no {what}: give one value per seed")
    if not np.all(np.isfinite(values)):
        raise InputError(f"{what} hold NaN or infinite values")
    return values


def summarize(values) -> SeedSummary:
    """Mean, sample sd, count, min and max of one model's scores across seeds."""
    values = _scores(values)
    sd = float(np.std(values, ddof=1)) if values.size > 1 else float("nan")
    return SeedSummary(mean=float(values.mean()), sd=sd, n=int(values.size),
                       minimum=float(values.min()), maximum=float(values.max()))


def paired_test(a, b, *, test: str = "t") -> PairedTest:
    """Paired test of two models' scores over the same seeds (p-value two-sided)."""
    from scipy import stats

    if test not in PAIRED_TESTS:
        raise InputError(f"test must be one of {', '.join(PAIRED_TESTS)}, got {test!r}")
    a, b = _scores(a, "scores of a"), _scores(b, "scores of b")
    if a.size != b.size:
        raise InputError(f"paired scores need the same seeds: {a.size} values against {b.size}")
    if a.size < 2:
        raise InputError("a paired test needs at least two seeds")
    differences = a - b
    if not differences.any():
        statistic, p_value = 0.0, 1.0  # identical scores: no evidence of a difference
    elif test == "t":
        if np.ptp(differences) == 0:  # a constant non-zero shift: t is infinite
            statistic, p_value = float(np.sign(differences[0]) * np.inf), 0.0
        else:
            result = stats.ttest_rel(a, b)
            statistic, p_value = float(result.statistic), float(result.pvalue)
    else:
        result = stats.wilcoxon(a, b)
        statistic, p_value = float(result.statistic), float(result.pvalue)
    return PairedTest(test=test, statistic=statistic, p_value=p_value,
                      mean_difference=float(differences.mean()), n=int(a.size))


def summarize_runs(runs) -> dict:
    """Per metric, the summary across seeds of a list of score dicts (one dict per seed)."""
    runs = list(runs)
    if not runs:
        raise InputError("no runs to summarise")
    names = sorted(set().union(*(run.keys() for run in runs)))
    missing = [name for name in names if any(name not in run for run in runs)]
    if missing:
        raise InputError(f"metric {missing[0]!r} is missing from some runs: every seed needs every metric")
    return {name: summarize([run[name] for run in runs]) for name in names}


# --- Intervals over seeds and tests for "best" (one rule for the report, search and leaderboard) ---

#: Fewer seeds than this give no interval (a t-interval with df 1 spans ±12.7 sd: no information).
MIN_SEEDS_FOR_INTERVAL = 3
#: The level of every interval and test over seeds.
ALPHA = 0.05
#: What a model whose seeds all give the same fit shows where its ± would be.
DETERMINISTIC = "deterministic: one fit, no seed variance"


@dataclass(frozen=True)
class SeedInterval:
    """A Student-t interval for the mean over n seeds: mean ± t_{1−α/2, n−1} · sd / √n.

    ``low``/``high`` are NaN when there is no interval: fewer than :data:`MIN_SEEDS_FOR_INTERVAL`
    seeds, or a deterministic model (every seed gave the same value, so there is no seed variance
    to estimate: ``deterministic`` is True). ``method`` says which, for the label beside it."""

    mean: float
    low: float
    high: float
    n: int
    se: float
    level: float
    deterministic: bool

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.low) and np.isfinite(self.high))

    @property
    def method(self) -> str:
        if self.deterministic:
            return DETERMINISTIC
        if not self.has_interval:
            return f"n = {self.n}: too few seeds for an interval (needs {MIN_SEEDS_FOR_INTERVAL})"
        return f"{self.level:.0%} Student-t interval, n = {self.n} seeds (df {self.n - 1})"

    def as_dict(self) -> dict:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n, "se": self.se,
                "level": self.level, "deterministic": self.deterministic, "method": self.method}


def is_deterministic(values) -> bool:
    """True when two or more seeds all gave exactly the same value (a model that ignores its seed)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    return values.size >= 2 and float(np.ptp(values)) == 0.0


def seed_interval(values, level: float = 1 - ALPHA) -> SeedInterval:
    """The Student-t interval of the mean of one model's scores over its seeds (NaN seeds dropped).

    A percentile bootstrap over 3 seeds returns their range, which covers the mean about 75% of
    the time; the t-interval covers at its level for normal scores at any n ≥ 2 (tested by
    simulation at n = 3, 5 and 10)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = int(values.size)
    if n == 0:
        return SeedInterval(float("nan"), float("nan"), float("nan"), 0, float("nan"), level, False)
    sd = float(np.std(values, ddof=1)) if n > 1 else float("nan")
    return summary_interval(float(values.mean()), sd, n, level, deterministic=is_deterministic(values))


def summary_interval(mean: float, sd: float, n: int, level: float = 1 - ALPHA,
                     deterministic: bool | None = None) -> SeedInterval:
    """:func:`seed_interval` from a summary (mean, sample sd, n seeds) where the values are not
    kept; ``deterministic`` None: an sd of 0 up to the rounding of the mean (1e-9 of it) over
    two or more seeds, since the mean of equal floats need not equal them to the last bit.

    >>> interval = summary_interval(0.5, 0.1, 3)
    >>> round(interval.high - interval.mean, 4)  # t_{0.975, 2} = 4.3027 times 0.1 / √3
    0.2484
    """
    from scipy import stats

    if n < 1:
        return SeedInterval(float("nan"), float("nan"), float("nan"), 0, float("nan"), level, False)
    if deterministic is None:
        deterministic = n >= 2 and np.isfinite(sd) and sd <= abs(mean) * 1e-9
    se = float(sd / np.sqrt(n)) if n > 1 and np.isfinite(sd) else float("nan")
    if deterministic or n < MIN_SEEDS_FOR_INTERVAL:
        return SeedInterval(mean, float("nan"), float("nan"), n, float("nan") if deterministic else se, level,
                            bool(deterministic))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
    return SeedInterval(mean, mean - half, mean + half, n, se, level, False)


def welch_p_value(a, b) -> float | None:
    """Two-sided p of Welch's t-test of two models' means over their seeds (unequal variances),
    or None when it cannot be tested: fewer than 2 seeds on a side, or no seed variance on
    either side (two deterministic models: nothing to test on, never on zero).

    Where one side is deterministic (its seeds all gave the same fit, so its value has no seed
    noise), the test rests on the other side's seed variance alone: Welch's t with that side's
    variance zero, which is the one-sample t-test of the other's seeds against its value (df n − 1).
    """
    from scipy import stats

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return None
    fixed_a, fixed_b = is_deterministic(a), is_deterministic(b)
    if fixed_a and fixed_b:
        return None
    if fixed_a or fixed_b:
        varying, value = (b, a[0]) if fixed_a else (a, b[0])
        return float(stats.ttest_1samp(varying, value).pvalue)
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def holm(p_values) -> list[float | None]:
    """Holm's step-down adjusted p-values (family-wise error at α over the comparisons made),
    None kept in place for comparisons that were not tested."""
    indexed = [(p, i) for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    m, running = len(indexed), 0.0
    for rank, (p, i) in enumerate(sorted(indexed)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class BestTest:
    """The best model by mean against every other, Welch's t over seeds, Holm-adjusted.

    ``clear`` is True when the best beats every other model at α after Holm's correction: only
    then is it bold. ``adjusted`` maps each other model's index to its adjusted p (None: not
    testable, see :func:`welch_p_value`, and then the best is not clear)."""

    best: int | None
    adjusted: dict
    clear: bool
    rule: str

    def p_against(self, index: int) -> float | None:
        return self.adjusted.get(index)


#: The rule printed once under each section whose tables mark a best.
BEST_RULE = (f"Bold: the best mean beats every other model by Welch's t-test over seeds at α = {ALPHA:g}, "
             "Holm-corrected for the comparisons with the others (p in the hover). Against a deterministic "
             "model (one fit, no seed variance) the test rests on the other model's seed variance alone "
             "(the one-sample t of its seeds against the deterministic value); two deterministic models, or a "
             "model with fewer than 2 seeds, cannot be tested, and then the column has no bold cell.")


def best_against_rest(samples: list, higher: bool) -> BestTest:
    """Test the model with the best mean against every other (Welch, Holm over the m − 1 tests).

    ``samples``: one array of per-seed scores per model (None or empty for a model without one).
    """
    means = [float(np.nanmean(s)) if s is not None and np.isfinite(np.asarray(s, float)).any() else None
             for s in samples]
    present = [i for i, m in enumerate(means) if m is not None]
    if len(present) < 2:
        return BestTest(present[0] if present else None, {}, False, BEST_RULE)
    best = (max if higher else min)(present, key=lambda i: means[i])
    others = [i for i in present if i != best]
    raw = [welch_p_value(samples[best], samples[i]) for i in others]
    adjusted = dict(zip(others, holm(raw)))
    clear = all(p is not None and p < ALPHA for p in adjusted.values())
    return BestTest(best, adjusted, clear, BEST_RULE)


def wholly_better(a: SeedInterval, b: SeedInterval, higher: bool) -> bool:
    """True when model a is better than b beyond its seeds' noise, as the leaderboard's ranks read it.

    - Both have an interval: a's lies wholly beyond b's (the intervals do not overlap).
    - One is deterministic (one value on every seed), the other has an interval: the fixed value
      lies outside the other's interval, which is the one-sample t-test at the interval's level.
    - Two deterministic models, or a side without an interval (fewer than
      :data:`MIN_SEEDS_FOR_INTERVAL` seeds): never, as there is no seed variance to compare on.

    >>> a, b = seed_interval([3.0, 3.1, 3.2]), seed_interval([1.0, 1.1, 1.2])
    >>> wholly_better(a, b, True), wholly_better(b, a, True), wholly_better(b, a, False)
    (True, False, True)
    """

    def bounds(x: SeedInterval):
        if x.has_interval:
            return x.low, x.high
        return (x.mean, x.mean) if x.deterministic else None

    if a.deterministic and b.deterministic:
        return False
    first, second = bounds(a), bounds(b)
    if first is None or second is None:
        return False
    return first[0] > second[1] if higher else first[1] < second[0]


@dataclass(frozen=True)
class RankBounds:
    """A model's rank by mean (1 the best; tied means share the best of their ranks, ``tied``
    True) and the ranks its intervals allow: ``best`` = 1 + the models wholly better than it,
    ``worst`` = the models not wholly worse than it (:func:`wholly_better`), of ``of`` models."""

    rank: int
    best: int
    worst: int
    of: int
    tied: bool

    def as_dict(self) -> dict:
        return {"rank": self.rank, "best": self.best, "worst": self.worst, "of": self.of, "tied": self.tied}


#: How :func:`rank_bounds` derives a rank's interval, as a page states it.
RANK_BOUNDS_RULE = ("a rank's interval runs from 1 + the models whose interval lies wholly better to the number of "
                    "models whose interval does not lie wholly worse; a deterministic model's one value counts as "
                    "outside another's interval when it lies beyond it, two deterministic models or a model with "
                    "fewer than 3 seeds are never told apart; each comparison is at the intervals' level, not "
                    "simultaneous")


def rank_bounds(intervals: list, higher: bool) -> list[RankBounds]:
    """Each model's :class:`RankBounds` among ``intervals`` (:class:`SeedInterval`, one a model).

    >>> found = rank_bounds([seed_interval([3.0, 3.1, 3.2]), seed_interval([1.0, 1.5, 2.0]),
    ...                      seed_interval([1.2, 1.4, 1.6])], higher=True)
    >>> [(r.rank, r.best, r.worst) for r in found]
    [(1, 1, 1), (2, 2, 3), (3, 2, 3)]
    """
    count = len(intervals)
    found = []
    for i, model in enumerate(intervals):
        others = [other for j, other in enumerate(intervals) if j != i]
        ahead = sum((other.mean > model.mean) if higher else (other.mean < model.mean) for other in others)
        surely_ahead = sum(wholly_better(other, model, higher) for other in others)
        surely_behind = sum(wholly_better(model, other, higher) for other in others)
        found.append(RankBounds(1 + ahead, 1 + surely_ahead, count - surely_behind, count,
                                any(other.mean == model.mean for other in others)))
    return found
