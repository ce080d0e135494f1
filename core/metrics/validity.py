"""Whether a score can be ranked: inside its metric's valid range and no worse than its baseline.

The ranges are declared with each metric (:attr:`~topicbench.core.metrics.registry.MetricSpec.valid_range`,
:mod:`~topicbench.core.metrics.ranges`). A fit logs the number of words its topics cover as
:data:`VOCABULARY_SIZE` beside its scores, so that a reader of its runs (a report, a leaderboard,
from a store or a bundle) can check the baseline of the uniform model too, and tags each score
that fails (``topicbench.invalid.<key>``). A value that fails is kept and shown with its reason,
never ranked: :func:`unranked_reason` is what every reader asks.

>>> value_problem("perplexity", 2.01e10, vocabulary_size=8070)
'worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)'
>>> unranked_reason("perplexity", [2023.0, 2.01e10], [8070, 8070])
'not ranked: a seed scored 2.01e+10, worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)'
>>> unranked_reason("fit_seconds", [-1.0]) is None  # not a score: nothing to check
True
"""

from __future__ import annotations

import math

from ..validation import InputError
from .registry import metric_for_key

#: The metric a fit logs beside its scores: the words of its vocabulary (the columns of its
#: topic-word matrix), the V of the uniform model's baseline.
VOCABULARY_SIZE = "vocabulary_size"


def value_problem(key: str, value, *, vocabulary_size: int | None = None) -> str | None:
    """Why a value of score ``key`` (``"npmi@10"``, ``"perplexity"``) cannot be ranked, or None:
    outside its metric's valid range, worse than the baseline it must beat (the uniform model
    over ``vocabulary_size`` words, where given), or not finite. A key no metric returns is an
    :class:`~topicbench.core.validation.InputError`."""
    return metric_for_key(key).range_of(key).problem(value, vocabulary_size=vocabulary_size)


def unranked_reason(key: str, values, vocabulary_sizes=()) -> str | None:
    """Why a model's seeds' values of ``key`` cannot be ranked (the first seed that fails, as
    ``"not ranked: a seed scored <value>, <why>"``), or None where every one can, or where
    ``key`` is no metric's score (fit seconds, memory: nothing to check).

    Parameters
    ----------
    key : str
    values : sequence of float
        One value a seed (NaN and None skipped: a missing value is a gap, not a bad value).
    vocabulary_sizes : sequence of float
        Each seed's :data:`VOCABULARY_SIZE` in the same order, where known (missing or NaN: the
        baseline is not checked for that seed, the range still is).
    """
    try:
        valid = metric_for_key(key).range_of(key)
    except InputError:
        return None
    sizes = list(vocabulary_sizes)
    for seed, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        size = sizes[seed] if seed < len(sizes) else None
        size = int(size) if size is not None and math.isfinite(float(size)) and float(size) >= 1 else None
        problem = valid.problem(value, vocabulary_size=size)
        if problem is not None:
            return f"not ranked: a seed scored {float(value):.3g}, {problem}"
    return None


def invalid_scores(scores: dict, vocabulary_size: int | None = None) -> dict:
    """Score key -> why its value cannot be ranked (``"<value> is <why>"``), for one fit's scores;
    keys no metric returns are left out."""
    found = {}
    for key, value in scores.items():
        if value is None or not math.isfinite(float(value)):
            continue  # said elsewhere: the fit's scores that are not finite are skipped with their reason
        try:
            problem = value_problem(key, value, vocabulary_size=vocabulary_size)
        except InputError:
            continue
        if problem is not None:
            found[key] = f"{float(value):.3g} is {problem}"
    return found
