"""Bootstrap intervals for agreement statistics (a τ or ρ between two per-item scores): items
resampled in pairs, or whole clusters of items resampled where the items are not independent.

The point estimate is always the statistic on the data as given; the resamples give only its
interval (the 2.5 and 97.5 percentiles: a percentile bootstrap) and its bootstrap standard error
(their standard deviation). A resample whose statistic is undefined (a constant score: no order)
is counted, not hidden, and left out of the percentiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..validation import InputError

#: Resamples of an interval: 2,000 puts the 2.5 and 97.5 percentiles on 50 resamples each, where
#: 50 resamples in all (ProxAnn's) put them on one or two, and so move with the seed.
BOOTSTRAP_RESAMPLES = 2000
#: The fewest clusters a clustered bootstrap resamples; with fewer (one dataset and model) the
#: items are resampled as if independent, and the interval says so.
MIN_CLUSTERS = 3
LEVEL = 0.95
#: Pairs of items held at once by the vectorised τ (memory: 8 bytes each, a few times over).
_PAIRS_PER_CHUNK = 2_000_000


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval of a statistic.

    Attributes
    ----------
    low, high : float
        The ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles of the defined resamples.
    se : float
        The standard deviation of the defined resamples (the bootstrap standard error).
    resamples, undefined : int
        Resamples drawn; of them, those whose statistic was undefined (left out).
    units, unit : int, str
        What was resampled: ``units`` topics, or ``units`` (dataset, model) clusters.
    """

    low: float
    high: float
    se: float
    resamples: int
    undefined: int
    units: int
    unit: str = "topics"

    @property
    def method(self) -> str:
        """E.g. "percentile bootstrap, 2,000 resamples of 24 topics"."""
        text = f"percentile bootstrap, {self.resamples:,} resamples of {self.units} {self.unit}"
        return text + (f" ({self.undefined} undefined, left out)" if self.undefined else "")


def percentile_interval(resampled, units: int, unit: str = "topics", level: float = LEVEL) -> BootstrapInterval:
    """The percentile interval and standard deviation of the statistic's ``resampled`` values
    (NaN: undefined, counted and left out)."""
    values = np.asarray(resampled, dtype=np.float64)
    defined = values[np.isfinite(values)]
    undefined = int(len(values) - len(defined))
    if len(defined) < 2:
        return BootstrapInterval(math.nan, math.nan, math.nan, len(values), undefined, units, unit)
    low, high = np.percentile(defined, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return BootstrapInterval(float(low), float(high), float(np.std(defined, ddof=1)), len(values), undefined,
                             units, unit)


def kendall_tau_b_resampled(first, second, picks) -> np.ndarray:
    """Kendall's τ-b of ``first[p]`` against ``second[p]`` for each row ``p`` of ``picks``
    (shape (resamples, n)), as ``scipy.stats.kendalltau`` computes it, vectorised; NaN where a
    resample's scores are constant. A pair of copies of one item is tied in both scores, so it
    counts in neither τ-b's numerator nor its denominator, as in scipy.

    >>> float(kendall_tau_b_resampled([1, 2, 3], [1, 3, 2], np.array([[0, 1, 2]]))[0])
    0.333...
    """
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    picks = np.asarray(picks)
    n = picks.shape[1]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    chunk = max(1, _PAIRS_PER_CHUNK // max(1, n * n))
    taus = []
    for start in range(0, len(picks), chunk):
        x, y = first[picks[start:start + chunk]], second[picks[start:start + chunk]]
        sign_x = np.sign(x[:, :, None] - x[:, None, :])[:, upper]
        sign_y = np.sign(y[:, :, None] - y[:, None, :])[:, upper]
        untied = np.abs(sign_x).sum(axis=1) * np.abs(sign_y).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            taus.append(np.where(untied > 0, (sign_x * sign_y).sum(axis=1) / np.sqrt(untied), np.nan))
    return np.concatenate(taus) if taus else np.empty(0)


def paired_resamples(n_items: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Rows of ``n_items`` item indices drawn with replacement: both scores of an item move together."""
    if n_items < 1 or resamples < 1:
        raise InputError(f"a bootstrap needs at least one item and one resample, got {n_items} and {resamples}")
    return rng.integers(0, n_items, size=(resamples, n_items))


def cluster_resamples(clusters, resamples: int, rng: np.random.Generator) -> list:
    """Item indices of ``resamples`` cluster bootstrap draws: per draw, as many clusters as there
    are, drawn with replacement, each bringing all its items (so a draw's length varies). Items of
    one cluster (the topics of one model on one dataset) share what makes them alike, so they are
    resampled together, not as independent items."""
    labels = np.asarray([str(label) for label in clusters])
    names, members = np.unique(labels, return_inverse=True)
    if len(names) < 1 or resamples < 1:
        raise InputError(f"a clustered bootstrap needs clusters and resamples, got {len(names)} and {resamples}")
    items = [np.flatnonzero(members == index) for index in range(len(names))]
    return [np.concatenate([items[c] for c in rng.integers(0, len(names), size=len(names))])
            for _ in range(resamples)]
