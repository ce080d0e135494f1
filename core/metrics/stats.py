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
    from scipy import stats

    values = np.asarray(values, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = int(values.size)
    if n == 0:
        return SeedInterval(float("nan"), float("nan"), float("nan"), 0, float("nan"), level, False)
    mean = float(values.mean())
    deterministic = is_deterministic(values)
    se = float(np.std(values, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    if deterministic or n < MIN_SEEDS_FOR_INTERVAL:
        return SeedInterval(mean, float("nan"), float("nan"), n, 0.0 if deterministic else se, level, deterministic)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
    return SeedInterval(mean, mean - half, mean + half, n, se, level, False)


def welch_p_value(a, b) -> float | None:
    """Two-sided p of Welch's t-test of two models' means over their seeds (unequal variances),
    or None when it cannot be tested: fewer than 2 seeds on a side, or no seed variance on either
    side (deterministic models: compare them over topics or documents instead, never on zero)."""
    from scipy import stats

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return None
    if is_deterministic(a) or is_deterministic(b):
        return None
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
             "Holm-corrected for the comparisons with the others (p in the hover); models with "
             "fewer than 2 seeds or no seed variance (deterministic) cannot be tested this way and "
             "leave the column without a bold cell.")


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
