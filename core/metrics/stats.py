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
